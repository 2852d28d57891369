#!/usr/bin/env bash
# Would bfloat16 products pay for float32 training here? (issue 25 item 6;
# docs/performance.md, "bfloat16 products"). Builds bench/bf16_products.c (with
# its product, bench/bf16_gemm.c) and
# runs it beside bench/bf16_torch.py (PyTorch's bf16 matmul, the tuned
# library's ceiling) at the same shapes, 1 and 2 threads, as a user runs
# them (every OPENBLAS_* variable removed).
#
#   bash bench/bf16.sh
#
# Environment (all optional):
#   ROWS=360 D=256 V=6544 FF=1024   the shapes: N, the rows of a step (profile_step
#                                   at 256/256/64 prints N = 359 target tokens a step)
#   REPEATS=7  THREADS="1 2"        medians of REPEATS, each program alternating its variants
#   CLOCK=wall                      cpu: each process's CPU time, for a busy
#                                   machine; only the 1-thread rows mean
#                                   anything then (the 2-thread ones sum both threads)
#   BUILD_DIR=build-bench           where the probe is built
#   PYTHON                          a python3 that imports torch (default: the
#                                   first of /usr/bin/python3, python3 that does)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-360}; D=${D:-256}; V=${V:-6544}; FF=${FF:-1024}
REPEATS=${REPEATS:-7}; THREADS=${THREADS:-"1 2"}; CLOCK=${CLOCK:-wall}
BUILD_DIR=${BUILD_DIR:-build-bench}
for v in $(compgen -e | grep '^OPENBLAS_' || true); do unset "$v"; done

mkdir -p "$BUILD_DIR/bench"
PROBE=$BUILD_DIR/bench/bf16_products
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -I. bench/bf16_products.c bench/bf16_gemm.c -lopenblas -lm -pthread -o "$PROBE"
shape_flags=(--rows "$ROWS" --d "$D" --vocab "$V" --ff "$FF")

PY=""
for cand in ${PYTHON:-} /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import torch' >/dev/null 2>&1; then PY=$cand; break; fi
done
[ -z "$PY" ] && echo "bf16: python3-torch is not importable: the probe alone, no PyTorch ceiling"

SHAPES=$(mktemp "${TMPDIR:-/tmp}/bf16-shapes.XXXXXX")
trap 'rm -f "$SHAPES"' EXIT
"$PROBE" --list shapes "${shape_flags[@]}" >"$SHAPES"

echo "# bf16 products, $(date -u +%Y-%m-%dT%H:%MZ); machine: nproc $(nproc), $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
blas=$(readlink -f "$(ldd "$PROBE" | awk '/libopenblas/ {print $3; exit}')")
echo "# OpenBLAS: $blas, $(nm -D "$blas" 2>/dev/null | grep -ci sbgemm || true) sbgemm symbols (0: built without BUILD_BFLOAT16)"
for t in $THREADS; do
  echo
  "$PROBE" --threads "$t" --repeats "$REPEATS" --clock "$CLOCK" "${shape_flags[@]}"
  if [ -n "$PY" ]; then
    echo
    "$PY" bench/bf16_torch.py --shapes "$SHAPES" --threads "$t" --repeats "$REPEATS" --clock "$CLOCK"
  fi
done
echo
echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
