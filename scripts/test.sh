#!/usr/bin/env bash
# Builds tinyseq and runs the whole test suite through ctest.
# Usage: scripts/test.sh [BUILD_DIR] [extra cmake options...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
werror=OFF
[ "${CI:-}" = true ] && werror=ON   # warnings are errors in CI
cmake -S . -B "$build" -DTS_WERROR=$werror "$@"
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
