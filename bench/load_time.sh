#!/usr/bin/env bash
# translate of one sentence, start to finish, with a given checkpoint:
# median wall time, CPU time (user + system) and peak RSS of RUNS runs
# (issue 25, item 4), and the load average while they ran (the machine may be shared: a figure taken
# under load says so).
#
#   bash bench/load_time.sh CKPT [TINYSEQ]        # TINYSEQ: default build/tinyseq
#   RUNS=5 SENTENCE="i am tired ." ARGS="--beam 1" bash bench/load_time.sh runs/x/best.ckpt
#
# A model of the Tatoeba size (emb/hidden 256, full vocabulary, 42 MB of
# float64 weights): one epoch of
#   nice tinyseq train --corpus ../shared/data/tatoeba-eng-fra.tsv --emb 256 \
#       --hidden 256 --batch 64 --epochs 1 --beam 0 --out DIR
# The first run warms the page cache and is not counted.
set -euo pipefail
ckpt=${1:?usage: load_time.sh CKPT [TINYSEQ]}
tinyseq=${2:-build/tinyseq}
runs=${RUNS:-5}
sentence=${SENTENCE:-"i am tired ."}
read -r -a args <<<"${ARGS:-}"  # more translate flags, e.g. --beam 1
[ -x /usr/bin/time ] || { echo "load_time.sh: needs /usr/bin/time (GNU time) for the peak RSS" >&2; exit 1; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

"$tinyseq" translate --model "$ckpt" "${args[@]}" "$sentence" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1 /proc/loadavg)
for _ in $(seq "$runs"); do
  s=$(date +%s%N)
  /usr/bin/time -f '%M %U %S' -o "$work/time" "$tinyseq" translate --model "$ckpt" "${args[@]}" "$sentence" >"$work/out"
  e=$(date +%s%N)
  echo $(((e - s) / 1000000)) >>"$work/ms"
  read -r kb user sys <"$work/time"
  echo "$kb" >>"$work/kb"
  awk -v u="$user" -v s="$sys" 'BEGIN {printf "%d\n", (u + s) * 1000}' >>"$work/cpu"
done
load_after=$(cut -d' ' -f1 /proc/loadavg)
echo "translate ${args[*]} '$sentence' -> $(cat "$work/out")"
echo "checkpoint $ckpt ($(du -m "$ckpt" | cut -f1) MB), $runs runs, load average $load_before -> $load_after"
echo "wall ms: median $(median <"$work/ms") (runs: $(paste -sd' ' "$work/ms"))"
echo "CPU ms (user + system, 10 ms ticks): median $(median <"$work/cpu") (runs: $(paste -sd' ' "$work/cpu"))"
echo "peak RSS MB: median $(median <"$work/kb" | awk '{printf "%.1f", $1 / 1024}') (runs, kB: $(paste -sd' ' "$work/kb"))"
