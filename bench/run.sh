#!/usr/bin/env bash
# tinyseq against the PyTorch reference (../shared/bench/torch_ref.py --bucket),
# side by side in one run: issue 8's benchmark. See docs/performance.md.
#
#   bash bench/run.sh                  # full: 3 rounds x 3 configs, A B A B ...
#   BENCH_SMOKE=1 bash bench/run.sh    # CI: a few steps, one round, no speed claims
#
# Environment (all optional):
#   ROUNDS=3  STEPS=150  THREADS=2      rounds, optimizer steps per run, threads
#   CONFIGS="64:128:32:bahdanau 256:256:64:bahdanau 256:256:64:general"
#   BUILD_DIR=build-bench               Release build of tinyseq made here
#   OPENBLAS_CORETYPE                   kept if set, else Haswell (as the machine's
#                                       environment sets it); both programs run under it
#   PYTHON                              a python3 that imports torch (default: the
#                                       first of /usr/bin/python3, python3 that does)
#   DATA=../shared/data/tatoeba-eng-fra.tsv  MAX_LEN=10
#
# Per config it prints the median tokens/s of each program over the rounds,
# their ratio, tinyseq's matmul GFLOP/s (FLOPs counted from its tape) against
# the dgemm rate measured in this run at the output projection's shapes, and
# the peak RSS of each (GNU time). Then the greedy translation time of one
# sentence. Exit status 0 unless a program fails; speed is reported, not asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHARED=${SHARED:-../shared}
DATA=${DATA:-$SHARED/data/tatoeba-eng-fra.tsv}
MAX_LEN=${MAX_LEN:-10}
THREADS=${THREADS:-2}
BUILD_DIR=${BUILD_DIR:-build-bench}
CONFIGS=${CONFIGS:-"64:128:32:bahdanau 256:256:64:bahdanau 256:256:64:general"}
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
  ROUNDS=${ROUNDS:-1}; STEPS=${STEPS:-6}; DGEMM_SECONDS=${DGEMM_SECONDS:-0.1}; GREEDY=${GREEDY:-10}
else
  ROUNDS=${ROUNDS:-3}; STEPS=${STEPS:-150}; DGEMM_SECONDS=${DGEMM_SECONDS:-1.5}; GREEDY=${GREEDY:-200}
fi
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  export OPENBLAS_CORETYPE=Haswell
  coretype_note="OPENBLAS_CORETYPE was unset; set to Haswell for both programs"
else
  export OPENBLAS_CORETYPE
  coretype_note="OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE inherited, for both programs"
fi
[ -r "$DATA" ] || { echo "bench: cannot read $DATA" >&2; exit 1; }
# Peak RSS from GNU time; without it (apt-get install -y time) RSS is not reported.
if [ -x /usr/bin/time ]; then
  timed() { local out=$1; shift; /usr/bin/time -v -o "$out" "$@"; }
else
  echo "bench: /usr/bin/time missing (apt-get install -y time): peak RSS not reported"
  timed() { shift; "$@"; }
fi

# ---- build: Release tinyseq and the profiler, against the same libraries
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target tinyseq >/dev/null
libs=()
for m in train data models autograd tensor; do libs+=("$BUILD_DIR/libtinyseq_$m.a"); done
mkdir -p "$BUILD_DIR/bench"
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I. bench/profile_step.c "${libs[@]}" \
  -lgsl -lopenblas -lz -lunistring -lm -pthread -o "$BUILD_DIR/bench/profile_step"
TINYSEQ=$BUILD_DIR/tinyseq
PROFILE=$BUILD_DIR/bench/profile_step

# ---- the reference, if torch is importable
PY=""
for cand in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import torch' >/dev/null 2>&1; then PY=$cand; break; fi
done
TORCH_REF=$SHARED/bench/torch_ref.py
if [ -z "$PY" ] || [ ! -r "$TORCH_REF" ]; then
  echo "bench: python3-torch is not importable (or $TORCH_REF is missing): reporting tinyseq alone"
  PY=""
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tinyseq-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
maxrss_mb() { [ -r "$1" ] && awk -F': ' '/Maximum resident set size/ {printf "%.0f\n", $2 / 1024}' "$1" || echo "-"; }

echo "# tinyseq vs PyTorch (torch_ref.py --bucket), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# machine: nproc $(nproc), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $coretype_note"
echo "# $THREADS threads, float64, $DATA --max-len $MAX_LEN, $STEPS steps per run (tokens/s after 3 warm-up steps), $ROUNDS rounds A B A B"
[ -n "$PY" ] && echo "# reference: $PY $("$PY" -c 'import torch; print("torch", torch.__version__)')"

summary=()
for cfg in $CONFIGS; do
  IFS=: read -r E H B ATTN <<<"$cfg"
  name="emb $E, hidden $H, batch $B, $ATTN"
  : >"$WORK/ts.txt"; : >"$WORK/pt.txt"; : >"$WORK/ts_rss.txt"; : >"$WORK/pt_rss.txt"
  for r in $(seq 1 "$ROUNDS"); do
    # A: tinyseq
    timed "$WORK/ts_time.txt" "$TINYSEQ" train --corpus "$DATA" --max-len "$MAX_LEN" --emb "$E" \
      --hidden "$H" --batch "$B" --attn "$ATTN" --lr 0.001 --clip 5 --steps "$STEPS" --threads "$THREADS" \
      --show 0 --out "$WORK/run" >"$WORK/ts_out.txt" 2>"$WORK/ts_err.txt" \
      || { echo "bench: tinyseq failed:"; cat "$WORK/ts_err.txt"; exit 1; }
    sed -n 's/^train: tokens_per_s=\([0-9.]*\).*/\1/p' "$WORK/ts_out.txt" >>"$WORK/ts.txt"
    maxrss_mb "$WORK/ts_time.txt" >>"$WORK/ts_rss.txt"
    # B: PyTorch
    if [ -n "$PY" ]; then
      timed "$WORK/pt_time.txt" "$PY" "$TORCH_REF" --data "$DATA" --max-len "$MAX_LEN" --emb "$E" \
        --hidden "$H" --batch "$B" --attn "$ATTN" --dtype float64 --threads "$THREADS" --bucket \
        --steps "$STEPS" >"$WORK/pt_out.txt" 2>&1 || { echo "bench: torch_ref.py failed:"; tail "$WORK/pt_out.txt"; exit 1; }
      sed -n 's/^RESULT tokens_per_s=\([0-9.]*\).*/\1/p' "$WORK/pt_out.txt" >>"$WORK/pt.txt"
      maxrss_mb "$WORK/pt_time.txt" >>"$WORK/pt_rss.txt"
    fi
  done
  # FLOPs per token from tinyseq's own tape, and dgemm at this config's shapes, in this run.
  "$PROFILE" --corpus "$DATA" --max-len "$MAX_LEN" --emb "$E" --hidden "$H" --batch "$B" --attn "$ATTN" \
    --threads "$THREADS" --steps 10 --greedy 0 --dgemm-seconds "$DGEMM_SECONDS" >"$WORK/prof.txt"
  mflop=$(sed -n 's/.*(\([0-9.]*\) MFLOP\/token.*/\1/p' "$WORK/prof.txt")
  dgemm=$(sed -n 's/^dgemm_rate \([0-9.]*\).*/\1/p' "$WORK/prof.txt")
  ts_med=$(median <"$WORK/ts.txt")
  ts_all=$(paste -sd' ' "$WORK/ts.txt")
  ts_rss=$(sort -g "$WORK/ts_rss.txt" | tail -1)  # the largest of the rounds
  gflops=$(awk -v t="$ts_med" -v f="$mflop" 'BEGIN {printf "%.1f", t * f / 1000}')
  frac=$(awk -v g="$gflops" -v d="$dgemm" 'BEGIN {printf "%.0f", 100 * g / d}')
  echo
  echo "== $name"
  echo "tinyseq   tokens/s median $ts_med  (runs: $ts_all)  peak RSS ${ts_rss} MB"
  if [ -n "$PY" ]; then
    pt_med=$(median <"$WORK/pt.txt")
    pt_all=$(paste -sd' ' "$WORK/pt.txt")
    pt_rss=$(sort -g "$WORK/pt_rss.txt" | tail -1)
    ratio=$(awk -v a="$ts_med" -v b="$pt_med" 'BEGIN {printf "%.2f", a / b}')
    echo "pytorch   tokens/s median $pt_med  (runs: $pt_all)  peak RSS ${pt_rss} MB"
    echo "ratio     tinyseq / pytorch = ${ratio}x"
  else
    pt_med="-"; pt_rss="-"; ratio="-"
  fi
  echo "flops     ${mflop} MFLOP/token (matmuls, forward + backward) -> ${gflops} GFLOP/s = ${frac}% of dgemm ${dgemm} GFLOP/s (this run, output-projection shapes, $THREADS threads)"
  summary+=("| $E/$H/$B $ATTN | $ts_med | $pt_med | $ratio | $gflops / $dgemm ($frac%) | $ts_rss | $pt_rss |")
done

# Greedy translation of one sentence at a time (hidden 256, the model untrained:
# it runs to its length limit more often than a trained one does).
"$PROFILE" --corpus "$DATA" --max-len "$MAX_LEN" --emb 256 --hidden 256 --batch 64 --attn bahdanau \
  --threads "$THREADS" --steps 1 --warmup 0 --greedy "$GREEDY" >"$WORK/greedy.txt"
greedy=$(grep '^greedy' "$WORK/greedy.txt")

echo
echo "| config | tinyseq tok/s | PyTorch f64 tok/s | ratio | tinyseq GFLOP/s / dgemm | tinyseq RSS MB | PyTorch RSS MB |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
echo
echo "$greedy"
[ "${BENCH_SMOKE:-0}" = 1 ] && echo "(smoke mode: $STEPS steps, numbers are not measurements)"
exit 0
