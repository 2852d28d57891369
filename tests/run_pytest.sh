#!/usr/bin/env bash
# ctest python_api: Debian's pytest on the Python package's tests.
# Usage: run_pytest.sh PYTHON TESTS_DIR SANITIZE [pytest args...]
set -euo pipefail
python=$1 tests=$2 sanitize=$3
shift 3
[ -x "$python" ] || { echo "skipped: $python is not installed"; exit 77; }
"$python" -c 'import numpy, pytest' 2>/dev/null ||
  { echo "skipped: $python lacks numpy or pytest (apt-get install python3-numpy python3-pytest)"; exit 77; }
if [ "$sanitize" = ON ]; then
  # The library is built with ASan; the interpreter is not, so the runtime
  # must come first (docs/python.md). CPython's own allocations are not ours
  # to judge: leak detection stays off, and the RSS test skips (ASan keeps
  # freed memory in quarantine, so RSS grows without a leak).
  libasan=$(gcc -print-file-name=libasan.so)
  # detect_leaks=0 goes last: a later option wins, and .ci/run exports detect_leaks=1.
  export LD_PRELOAD=$libasan ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 TINYSEQ_SANITIZE=1
fi
cd "$tests"
exec "$python" -m pytest -q -p no:cacheprovider "$tests" "$@"
