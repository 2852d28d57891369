#!/usr/bin/env bash
# tinyseq float32 against torch_ref.py float32 at several thread counts
# (issue 37): which count is best for each config, how far tinyseq's default
# (no --threads) is from it, and how each program scales. See
# docs/performance.md ("Many cores").
#
#   bash bench/threads.sh
#   TINYSEQ=build-release/tinyseq PYTHON=/opt/torch/bin/python3 bash bench/threads.sh
#
# Environment (all optional):
#   THREAD_COUNTS="1 2 4 8 16"  ROUNDS=3  STEPS=40
#   CONFIGS="256:256:64:bahdanau transformer:256:4:3:1024:64"   (bench/common.sh's table)
#   CORETYPES=""            more kernels for tinyseq alone at KERNEL_THREADS (2) threads,
#                           each set as OPENBLAS_CORETYPE (e.g. "Haswell": AVX2 kernels on
#                           an AVX-512 machine), in the same rounds
#   PROFILE_THREADS=""      thread counts at which profile_step splits tinyseq's step
#                           into its phases (one run each, after the rounds)
#   TINYSEQ, PROFILE, PYTHON, BUILD_DIR=build-bench, DATA, MAX_LEN=10, LABEL_SMOOTHING=0.1
#
# Each round runs, for every thread count in turn, tinyseq train --threads N
# and then torch_ref.py --threads N, then tinyseq with no --threads (its
# default): alternated, so a machine's drift falls on both. Medians of the
# rounds; ratios of medians. Both programs as a user runs them: every
# OPENBLAS_* variable removed (but CORETYPES's).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh  # SHARED, DATA, MAX_LEN, LABEL_SMOOTHING too
THREAD_COUNTS=${THREAD_COUNTS:-"1 2 4 8 16"}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-40}
CONFIGS=${CONFIGS:-"256:256:64:bahdanau transformer:256:4:3:1024:64"}
CORETYPES=${CORETYPES:-}
KERNEL_THREADS=${KERNEL_THREADS:-2}
PROFILE_THREADS=${PROFILE_THREADS:-}
BUILD_DIR=${BUILD_DIR:-build-bench}
for v in $(compgen -e | grep '^OPENBLAS_' || true); do unset "$v"; done
[ -r "$DATA" ] || { echo "bench: cannot read $DATA" >&2; exit 1; }
if [ -z "${TINYSEQ:-}" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target tinyseq profile_step >/dev/null
  TINYSEQ=$BUILD_DIR/tinyseq
fi
[ -x "$TINYSEQ" ] || { echo "bench: TINYSEQ=$TINYSEQ is not an executable" >&2; exit 1; }
PROFILE=${PROFILE:-$(dirname "$TINYSEQ")/bench/profile_step}
[ -z "$PROFILE_THREADS" ] || [ -x "$PROFILE" ] || { echo "bench: PROFILE_THREADS needs profile_step ($PROFILE)" >&2; exit 1; }
find_torch_python
TORCH_REF=$SHARED/bench/torch_ref.py
[ -r "$TORCH_REF" ] || PY=""
[ -n "$PY" ] || echo "bench: no python3 imports torch 1.13 or newer (or $TORCH_REF is missing): tinyseq alone"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tinyseq-threads.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "# tinyseq f32 vs torch_ref.py f32 by thread count, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: nproc $(nproc), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
echo "# tinyseq: $("$TINYSEQ" --version | sed -n 's/^kernels: //p'); $("$TINYSEQ" --version | sed -n 's/^threads: //p')"
[ -n "$PY" ] && echo "# reference: $PY $("$PY" -c 'import torch; print("torch", torch.__version__, "eager; default threads", torch.get_num_threads(), "; MKL" if torch.backends.mkl.is_available() else "")')"
echo "# $DATA --max-len $MAX_LEN, --label-smoothing $LABEL_SMOOTHING, $STEPS steps a run (tokens/s after 3 warm-up steps), $ROUNDS rounds, medians"

# tinyseq's tokens/s with the given extra flags (and env), appended to file $1.
ts_run() {
  local file=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$TINYSEQ" train --corpus "$DATA" --max-len "$MAX_LEN" "${MODEL[@]}" --lr 0.001 --clip 5 \
    --label-smoothing "$LABEL_SMOOTHING" --steps "$STEPS" --dtype float32 --show 0 --force --verbose --out "$WORK/run" "$@" \
    >"$WORK/out.txt" 2>&1 || { echo "bench: tinyseq failed:"; tail "$WORK/out.txt"; exit 1; }
  sed -n 's/^train: tokens_per_s=\([0-9.]*\).*/\1/p' "$WORK/out.txt" >>"$file"
  sed -n 's/^kernels: .*; \([0-9]*\) BLAS threads$/\1/p' "$WORK/out.txt" | head -1 >"$WORK/threads_used.txt"
}
pt_run() {  # threads
  "$PY" "$TORCH_REF" --data "$DATA" --max-len "$MAX_LEN" "${MODEL[@]}" --dtype float32 --threads "$1" --bucket \
    --label-smoothing "$LABEL_SMOOTHING" --steps "$STEPS" >"$WORK/pt.txt" 2>&1 \
    || { echo "bench: torch_ref.py failed:"; tail "$WORK/pt.txt"; exit 1; }
  sed -n 's/^RESULT tokens_per_s=\([0-9.]*\).*/\1/p' "$WORK/pt.txt" >>"$WORK/pt.$1"
}

table=()
for cfg in $CONFIGS; do
  config_flags "$cfg"
  rm -f "$WORK"/ts.* "$WORK"/pt.* "$WORK"/k.*
  for r in $(seq "$ROUNDS"); do
    line="$CKEY round $r:"  # each run's figure as it comes (a run cut short still says what it measured)
    for n in $THREAD_COUNTS; do
      ts_run "$WORK/ts.$n" -- --threads "$n"
      line+=" $n: $(tail -1 "$WORK/ts.$n")"
      [ -n "$PY" ] && pt_run "$n" && line+=" / torch $(tail -1 "$WORK/pt.$n");"
    done
    ts_run "$WORK/ts.default" --
    default_threads=$(cat "$WORK/threads_used.txt")
    line+=" default ($default_threads): $(tail -1 "$WORK/ts.default")"
    for core in $CORETYPES; do
      ts_run "$WORK/k.$core" OPENBLAS_CORETYPE="$core" -- --threads "$KERNEL_THREADS"
      line+="; $core at $KERNEL_THREADS: $(tail -1 "$WORK/k.$core")"
    done
    echo "$line (load $(cut -d' ' -f1 /proc/loadavg))"
  done
  echo
  echo "== $CNAME"
  best=0 best_n=-
  for n in $THREAD_COUNTS; do
    m=$(median <"$WORK/ts.$n")
    if awk -v a="$m" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$m best_n=$n; fi
  done
  two=$( [ -r "$WORK/ts.2" ] && median <"$WORK/ts.2" || echo 0)
  for n in $THREAD_COUNTS; do
    m=$(median <"$WORK/ts.$n") p="-"
    [ -n "$PY" ] && p=$(median <"$WORK/pt.$n")
    echo "threads $n: tinyseq $m (runs $(paste -sd' ' "$WORK/ts.$n")), torch $p$([ -n "$PY" ] && echo " (runs $(paste -sd' ' "$WORK/pt.$n"))"); tinyseq / torch $(ratio "$m" "$p")x, / tinyseq at 2 threads $(ratio "$m" "$two")x, / best $(ratio "$m" "$best")x"
    table+=("| $CKEY | $n | $m | $p | $(ratio "$m" "$p")x | $(ratio "$m" "$two")x | $(ratio "$m" "$best")x |")
  done
  d=$(median <"$WORK/ts.default")
  echo "default (no --threads: $default_threads threads): tinyseq $d (runs $(paste -sd' ' "$WORK/ts.default")) = $(ratio "$d" "$best")x the best count's ($best_n threads, $best)"
  table+=("| $CKEY | default ($default_threads) | $d | - | - | $(ratio "$d" "$two")x | $(ratio "$d" "$best")x |")
  for core in $CORETYPES; do
    k=$(median <"$WORK/k.$core")
    echo "OPENBLAS_CORETYPE=$core, $KERNEL_THREADS threads: tinyseq $k (runs $(paste -sd' ' "$WORK/k.$core")); torch at $KERNEL_THREADS threads $([ -n "$PY" ] && median <"$WORK/pt.$KERNEL_THREADS"); ratio $( [ -n "$PY" ] && ratio "$k" "$(median <"$WORK/pt.$KERNEL_THREADS")")x"
    table+=("| $CKEY | $KERNEL_THREADS, $core kernels | $k | $([ -n "$PY" ] && median <"$WORK/pt.$KERNEL_THREADS") | $([ -n "$PY" ] && ratio "$k" "$(median <"$WORK/pt.$KERNEL_THREADS")")x | - | - |")
  done
  for n in $PROFILE_THREADS; do
    echo "-- profile_step, $n threads:"
    "$PROFILE" --corpus "$DATA" --max-len "$MAX_LEN" "${MODEL[@]}" --dtype float32 --threads "$n" --steps 20 --greedy 0 \
      | grep -v '^ *$' | head -40
  done
done
echo
echo "| config | threads | tinyseq f32 tok/s | torch f32 tok/s | tinyseq / torch | / tinyseq at 2 threads | / best count |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${table[@]}"
