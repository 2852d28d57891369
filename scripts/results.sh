#!/usr/bin/env bash
# Reproduces the README's Results tables: the default toy training with five
# attention types (wall time, dev and held-out test exact match / BLEU, AER,
# BLEU by source length), then, with TATOEBA=1 and ../shared beside the
# project, the two presets on Tatoeba (train --preset gru-small and
# transformer-small, seeds 1 and 2, best.ckpt's dev BLEU with beam 5), and
# with TORCH_REF=1 tinyseq and ../shared/bench/torch_ref.py side by side
# (docs/results.md).
#
#   bash scripts/results.sh [OUT_DIR]        # toy only: ~5 min on 2 quiet cores
#   TATOEBA=1 bash scripts/results.sh        # + Tatoeba, 4 runs: ~+15 min
#
# Time the runs on a quiet machine. TINYSEQ=path uses that program instead
# of building build-release. Needs what scripts/setup.sh installs;
# torch_ref.py needs Debian's python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/results}
SHARED=${SHARED:-../shared}
tinyseq=${TINYSEQ:-}
if [ -z "$tinyseq" ]; then
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF >/dev/null
  cmake --build build-release -j "$(nproc)" --target tinyseq >/dev/null
  tinyseq=$PWD/build-release/tinyseq
fi
mkdir -p "$out"
echo "# scripts/results.sh at $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%Y-%m-%dT%H:%MZ)," \
  "nproc $(nproc), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# A held-out test set from another seed of the same generator.
$tinyseq corpus --toy --n 1000 --seed 99 --align "$out/test.align" --force >"$out/test.tsv"

field() { sed -n "s/.*[ :]$1=\([^ ]*\).*/\1/p" "$2" | tail -1; }
rows=() buckets=()
for attn in bahdanau general dot scaled-dot none; do
  run=$out/toy-$attn
  rm -rf "$run"
  start=$(date +%s.%N)
  $tinyseq train --attn "$attn" --out "$run" >"$run.log" 2>"$run.err" || { cat "$run.err"; exit 1; }
  wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", e - s}')
  $tinyseq eval --beam 1 --model "$run/best.ckpt" --corpus "$out/test.tsv" --align "$out/test.align" >"$run.eval"
  dev=$(grep '^epoch .*(best)$' "$run.log" | tail -1)  # the epoch best.ckpt holds
  dev_exact=$(echo "$dev" | sed -n 's/.*exact \([0-9.]*%\).*/\1/p')
  dev_bleu=$(echo "$dev" | sed -n 's/.*dev BLEU \([0-9.]*\).*/\1/p')
  decoder=$(sed -n 's/^model: [a-z-]* attention, \([a-z]*\) decoder.*/\1/p' "$run.log")
  tok_s=$(field tokens_per_s "$run.log")
  exact=$(awk -v e="$(field exact "$run.eval")" 'BEGIN {printf "%.1f%%", 100 * e}')
  aer=$(field aer "$run.eval")
  aer_diag=$(field aer_diagonal "$run.eval")
  [ -n "$aer" ] || aer="—" aer_diag="—"
  [ "$attn" != none ] || decoder="no attention"
  rows+=("| $attn ($decoder) | $wall s | $tok_s | $dev_exact | $dev_bleu | $exact | $(field bleu "$run.eval") | $aer | $aer_diag |")
  b=$(awk '/^BLEU by source length/ {on = 1; next} on && NF == 0 {on = 0} on {printf " %s |", $2}' "$run.eval")
  buckets+=("| $attn |$b")
  echo "$attn: ${wall} s, ${tok_s} tok/s; $(tail -1 "$run.eval")"
done
names=$(awk '/^BLEU by source length/ {on = 1; next} on && NF == 0 {on = 0} on {gsub(/[()]/, ""); printf " %s (%s pairs) |", $1, $3}' "$out/toy-bahdanau.eval")

echo
echo "| attention (decoder) | wall time | train tok/s | dev exact | dev BLEU | test exact | test BLEU | AER | AER diagonal |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "| attention |$names"
echo "|---|---|---|---|---|"
printf '%s\n' "${buckets[@]}"

[ "${TATOEBA:-0}" = 1 ] || [ "${TORCH_REF:-0}" = 1 ] || exit 0
data=$SHARED/data/tatoeba-eng-fra.tsv
[ -r "$data" ] || { echo "TATOEBA=1: $data is missing"; exit 1; }
if [ "${TATOEBA:-0}" = 1 ]; then
  echo
  echo "== Tatoeba English-French, the presets, 10 epochs each, seeds 1 and 2"
  trows=()
  for preset in gru-small transformer-small; do
    scores=() times=()
    for seed in 1 2; do
      run=$out/tatoeba-$preset-$seed
      rm -rf "$run"
      start=$(date +%s.%N)
      $tinyseq train --preset "$preset" --corpus "$data" --seed "$seed" --out "$run" >"$run.log" 2>"$run.err" ||
        { cat "$run.err"; exit 1; }
      wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", e - s}')
      $tinyseq eval --model "$run/best.ckpt" --corpus "$run/dev-pairs.tsv" --show 0 >"$run.eval"
      scores+=("$(field bleu "$run.eval")") times+=("$wall s")
      echo "$preset seed $seed: ${wall} s; $(tail -1 "$run.eval")"
    done
    model=$(sed -n 's/^model: \(.*\), [0-9]* parameters.*/\1/p' "$run.log")
    trows+=("| \`--preset $preset\` | $model | ${scores[0]} | ${scores[1]} | ${times[0]}, ${times[1]} |")
  done
  echo
  echo "| preset | model | dev BLEU, seed 1 | dev BLEU, seed 2 | wall time |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${trows[@]}"
fi

[ "${TORCH_REF:-0}" = 1 ] || exit 0
ref=$SHARED/bench/torch_ref.py
[ -r "$ref" ] || { echo "TORCH_REF=1: $ref is missing"; exit 1; }
echo
echo "== Tatoeba, torch_ref.py's configuration, 2 epochs each"
run=$out/tatoeba
rm -rf "$run"
$tinyseq train --dtype float64 --corpus "$data" --max-len 10 --emb 256 --hidden 256 --batch 32 --lr 0.001 --clip 5 \
  --attn bahdanau --epochs 2 --patience 1000 --lr-decay 1 --label-smoothing 0 --beam 1 --threads 2 --out "$run" >"$run.log" 2>"$run.err"
grep -E '^(data:|epoch |dev:|train:)' "$run.log"
/usr/bin/python3 "$ref" --data "$data" --max-len 10 --emb 256 --hidden 256 --batch 32 --attn bahdanau \
  --dtype float64 --threads 2 --epochs 2 --greedy-eval 500 >"$out/torch_ref.log" 2>&1
grep -viE '^\s*$' "$out/torch_ref.log" | tail -8
