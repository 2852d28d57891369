#!/usr/bin/env bash
# Runs the tests that compare numbers (ctest -LE words) again under other
# OpenBLAS kernel sets and at one thread, so that no test depends on the
# kernels of the machine it was last run on (docs/design.md, "Same answers").
#
#   scripts/kernels.sh [BUILD_DIR]     # default: build (scripts/test.sh's)
#
# The passes, each a whole ctest run over the same build:
#   - OPENBLAS_CORETYPE=Prescott: SSE3, which every x86-64 runs;
#   - one more core the CPU can execute (its flags in /proc/cpuinfo), other
#     than the one OpenBLAS picks itself: Haswell where AVX2 and FMA are
#     present, else Sandybridge where AVX is; AVX-512 kernels are never forced
#     (SkylakeX only where the CPU has AVX-512 F, BW, DQ and VL, and only when
#     OpenBLAS picked no AVX-512 core itself);
#   - OPENBLAS_NUM_THREADS=1 under OpenBLAS's own choice.
# Exits non-zero if any pass fails, after running them all.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -x "$build/tinyseq" ] || { echo "kernels.sh: no $build/tinyseq: run scripts/test.sh first" >&2; exit 2; }
[ "$(uname -m)" = x86_64 ] || { echo "kernels.sh: OpenBLAS core types are x86-64's; nothing to do on $(uname -m)"; exit 0; }

flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
own=$(env -u OPENBLAS_CORETYPE "$build/tinyseq" --version | sed -n 's/^kernels: \([^,]*\).*/\1/p')
echo "kernels.sh: OpenBLAS's own choice here: ${own:-unknown}"

cores=(Prescott)
if has avx2 fma && [ "$own" != Haswell ]; then cores+=(Haswell)
elif has avx && [ "$own" != Sandybridge ]; then cores+=(Sandybridge)
fi
if has avx512f avx512bw avx512dq avx512vl && [[ $own != SkylakeX && $own != Cooperlake && $own != SapphireRapids ]]; then
  cores+=(SkylakeX)
fi

failed=()
run_pass() {  # NAME VAR=VALUE...
  local name=$1; shift
  echo "== kernels.sh: the number tests with $*"
  env "$@" ctest --test-dir "$build" -LE words --output-on-failure -j "$(nproc)" || failed+=("$name")
}
for core in "${cores[@]}"; do run_pass "$core" OPENBLAS_CORETYPE="$core"; done
run_pass "one thread" OPENBLAS_NUM_THREADS=1

if [ ${#failed[@]} -gt 0 ]; then
  echo "kernels.sh: FAILED under: ${failed[*]}" >&2
  exit 1
fi
echo "kernels.sh: every pass green (${cores[*]}, one thread)"
