#!/usr/bin/env bash
# Data-parallel scaling on this machine (docs/scaling.md): per config, one
# process on one BLAS thread, `mpirun -np 2` with one BLAS thread per rank, and
# one process on two BLAS threads, alternated round by round; prints each run
# and the medians of tokens/s and of the allreduce's ms a step.
#
#   bash bench/mpi_scaling.sh            # ROUNDS=3, the two configs below
#
# Environment (all optional):
#   ROUNDS=3  BUILD_DIR=build  DATA=../shared/data/tatoeba-eng-fra.tsv  MAX_LEN=10
#   CONFIGS="64:128:32:200 256:256:64:100"   emb:hidden:batch:steps
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
BUILD_DIR=${BUILD_DIR:-build}
DATA=${DATA:-../shared/data/tatoeba-eng-fra.tsv}
MAX_LEN=${MAX_LEN:-10}
CONFIGS=${CONFIGS:-"64:128:32:200 256:256:64:100"}
tinyseq=$BUILD_DIR/tinyseq
[ -x "$tinyseq" ] || { echo "mpi_scaling: build $tinyseq first" >&2; exit 2; }
mpirun=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for config in $CONFIGS; do
  IFS=: read -r emb hidden batch steps <<<"$config"
  flags=(train --corpus "$DATA" --max-len "$MAX_LEN" --dev 100 --emb "$emb" --hidden "$hidden" --batch "$batch"
         --steps "$steps" --show 0 --force)
  for round in $(seq "$ROUNDS"); do
    for mode in np1 np2 threads2; do
      case $mode in
        np1) cmd=("$tinyseq" "${flags[@]}" --threads 1) ;;
        np2) cmd=("${mpirun[@]}" -np 2 "$tinyseq" "${flags[@]}" --threads 1) ;;
        threads2) cmd=("$tinyseq" "${flags[@]}" --threads 2) ;;
      esac
      log=$out/$emb-$mode-$round.log
      "${cmd[@]}" --out "$out/run-$mode" >"$log" 2>&1
      tps=$(sed -n 's/^train: tokens_per_s=\([0-9.]*\).*/\1/p' "$log")
      ar=$(sed -n 's/^allreduce: .* s in all, \([0-9.]*\) ms a step, \([0-9]*\) bytes.*/\1 \2/p' "$log")
      echo "emb $emb hidden $hidden batch $batch round $round $mode: $tps tokens/s${ar:+, allreduce ${ar% *} ms a step of ${ar#* } bytes} (load $(cut -d' ' -f1 /proc/loadavg))"
      echo "$tps" >>"$out/$emb-$mode.tps"
      [ -n "$ar" ] && echo "${ar% *}" >>"$out/$emb-$mode.ar"
    done
  done
  for mode in np1 np2 threads2; do
    printf 'median emb %s: %-9s %8.0f tokens/s' "$emb" "$mode" "$(median <"$out/$emb-$mode.tps")"
    [ -f "$out/$emb-$mode.ar" ] && printf ', allreduce %.2f ms a step' "$(median <"$out/$emb-$mode.ar")"
    echo
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
