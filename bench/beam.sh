#!/usr/bin/env bash
# Beam search against greedy (issue 25 item 5, target: beam 5 <= 2x greedy):
# `tinyseq eval --beam 5` and `--beam 1` of the first PAIRS dev pairs of a
# Tatoeba model, alternated in each round, medians of ROUNDS; each ratio
# is taken from the same rounds. With BASE set to another tinyseq binary (an
# older build) its two figures run in the same rounds too. See
# docs/performance.md ("Beam search of a batch").
#
#   bash bench/beam.sh                       # trains a 1-epoch 256/256 model first
#   MODEL=run/best.ckpt DEV=run/dev-pairs.tsv bash bench/beam.sh
#   BASE=/path/to/old/tinyseq bash bench/beam.sh
#   COMMAND=translate bash bench/beam.sh     # translate the pairs' sources instead (no loss pass)
#
# Environment (all optional):
#   PAIRS=500  ROUNDS=3  WIDTH=5  THREADS=2   dev pairs, rounds, beam width, training threads
#   COMMAND=eval             eval (loss pass, decoding, scores) or translate (decoding only)
#   EVAL_THREADS=            empty: the timed runs use every core, as a user's do; N: they run
#                            with OPENBLAS_NUM_THREADS=N (1: CPU seconds that are the work
#                            alone, no thread waiting, which a loaded machine measures best)
#   BUILD_DIR=build-bench    Release build of tinyseq made here
#   DATA=../shared/data/tatoeba-eng-fra.tsv  MAX_LEN=10  EPOCHS=1  SIZE=256
#   WORK=$(mktemp -d)        where the model is trained (kept: printed at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
DATA=${DATA:-$SHARED/data/tatoeba-eng-fra.tsv}
MAX_LEN=${MAX_LEN:-10}
EPOCHS=${EPOCHS:-1}
SIZE=${SIZE:-256}
PAIRS=${PAIRS:-500}
ROUNDS=${ROUNDS:-3}
WIDTH=${WIDTH:-5}
THREADS=${THREADS:-2}
BUILD_DIR=${BUILD_DIR:-build-bench}
COMMAND=${COMMAND:-eval}
EVAL_THREADS=${EVAL_THREADS:-}
case $EVAL_THREADS in '' | [1-9] | [1-9][0-9]) ;; *) echo "bench: EVAL_THREADS is a thread count, not '$EVAL_THREADS'" >&2; exit 1 ;; esac
case $COMMAND in eval | translate) ;; *) echo "bench: COMMAND is eval or translate, not '$COMMAND'" >&2; exit 1 ;; esac
# As a user runs it: no OPENBLAS_* setting of the calling shell (kernels,
# cache sizes, spinning) reaches either program.
for v in $(compgen -e | grep '^OPENBLAS_' || true); do unset "$v"; done

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target tinyseq >/dev/null
[ -x /usr/bin/time ] || { echo "bench: needs GNU time (apt-get install -y time)" >&2; exit 1; }
NEW="$BUILD_DIR/tinyseq"

if [ -z "${MODEL:-}" ]; then
  [ -r "$DATA" ] || { echo "bench: cannot read $DATA (or set MODEL and DEV)" >&2; exit 1; }
  WORK=${WORK:-$(mktemp -d)}
  mkdir -p "$WORK"
  echo "training a ${EPOCHS}-epoch $SIZE/$SIZE model on $DATA into $WORK/run"
  "$NEW" train --corpus "$DATA" --max-len "$MAX_LEN" --emb "$SIZE" --hidden "$SIZE" --epochs "$EPOCHS" \
    --threads "$THREADS" --show 0 --out "$WORK/run" --force >"$WORK/train.log"
  MODEL=$WORK/run/best.ckpt
  DEV=$WORK/run/dev-pairs.tsv
fi
[ -r "${DEV:-}" ] || { echo "bench: set DEV to the model's dev pairs (a run's dev-pairs.tsv)" >&2; exit 1; }
PAIRS_FILE=$(mktemp)
SOURCES_FILE=$(mktemp)
trap 'rm -f "$PAIRS_FILE" "$SOURCES_FILE"' EXIT
head -n "$PAIRS" "$DEV" >"$PAIRS_FILE"
cut -f1 "$PAIRS_FILE" >"$SOURCES_FILE"

# "wall cpu": the seconds of one eval (or translate) of the pairs, on the
# clock and of CPU (user + system, every thread's); CPU time varies less
# under load.
run_eval() {  # binary width
  local times threads=()
  times=$(mktemp)
  [ -n "$EVAL_THREADS" ] && threads=(env "OPENBLAS_NUM_THREADS=$EVAL_THREADS")
  if [ "$COMMAND" = translate ]; then
    "${threads[@]}" /usr/bin/time -f "%e %U %S" -o "$times" "$1" translate --model "$MODEL" --beam "$2" <"$SOURCES_FILE" >/dev/null 2>&1
  else
    "${threads[@]}" /usr/bin/time -f "%e %U %S" -o "$times" "$1" eval --model "$MODEL" --corpus "$PAIRS_FILE" --beam "$2" --show 0 >/dev/null
  fi
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$times"
  rm -f "$times"
}

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

declare -A wall cpu
binaries=(new)
[ -n "${BASE:-}" ] && binaries+=(base)
echo "$COMMAND: model $MODEL, $(wc -l <"$PAIRS_FILE") dev pairs, $ROUNDS rounds, ${EVAL_THREADS:-all} threads; load $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for which in "${binaries[@]}"; do
    bin=$NEW
    [ "$which" = base ] && bin=$BASE
    for width in 1 "$WIDTH"; do
      read -r w c < <(run_eval "$bin" "$width")
      wall[$which.$width]+="$w "
      cpu[$which.$width]+="$c "
      echo "round $round $which beam $width: $w s wall, $c s CPU (load $(cut -d' ' -f1 /proc/loadavg))"
    done
  done
done
# Medians of each figure, and the median of each round's own beam/greedy
# ratio (the two runs of a round share its load).
column() { echo "$1" | tr ' ' '\n' | grep .; }
for which in "${binaries[@]}"; do
  for kind in wall cpu; do
    declare -n t=$kind
    g=$(column "${t[$which.1]}" | median)
    b=$(column "${t[$which.$WIDTH]}" | median)
    r=$(paste -d' ' <(column "${t[$which.$WIDTH]}") <(column "${t[$which.1]}") | awk '{printf "%.3f\n", $1 / $2}' | median)
    echo "$which $kind: greedy median $g s, beam $WIDTH median $b s, beam/greedy per round (median) ${r}x"
  done
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${WORK:-}" ] && echo "model kept in $WORK"
exit 0
