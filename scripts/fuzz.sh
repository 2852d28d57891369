#!/usr/bin/env bash
# Fuzzes the checkpoint loader (tests/fuzz/fuzz_checkpoint.c) for a bounded time.
#
#   scripts/fuzz.sh                 # 60 s
#   FUZZ_SECONDS=600 scripts/fuzz.sh
#
# Builds the libFuzzer harness with clang + ASan + UBSan in build-fuzz/ (or
# $FUZZ_BUILD_DIR), seeds a corpus with valid checkpoints written by
# ckpt_seeds, replays the known crash inputs, then fuzzes. Exits non-zero if
# the fuzzer finds a crash, leak, timeout or OOM; the offending inputs are
# copied into tests/fixtures/ckpt_crashes/ for a human to commit (the test
# suite replays every file there).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
crashes=$root/tests/fixtures/ckpt_crashes

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTS_FUZZ=ON -DTS_SANITIZE=ON -DTS_WERROR=ON -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target fuzz_checkpoint ckpt_seeds

fuzzer=$build/tests/fuzz/fuzz_checkpoint
seeds=$build/fuzz-seeds
corpus=$build/fuzz-corpus        # kept between runs: later runs start further on
artifacts=$build/fuzz-artifacts
rm -rf "$seeds" "$artifacts"
mkdir -p "$seeds" "$corpus" "$artifacts"
"$build/tests/fuzz/ckpt_seeds" "$seeds"

# Known crash inputs first: each must now run clean in the fuzzing build too.
shopt -s nullglob
known=("$crashes"/crash-* "$crashes"/leak-* "$crashes"/timeout-* "$crashes"/oom-*)
if [ ${#known[@]} -gt 0 ]; then
  echo "fuzz: replaying ${#known[@]} known crash inputs"
  "$fuzzer" -runs=1 "${known[@]}"
fi

echo "fuzz: running $fuzzer for ${seconds}s"
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
          -dict="$root/tests/fuzz/checkpoint.dict" -artifact_prefix="$artifacts/" \
          -print_final_stats=1 "$corpus" "$seeds" || status=$?

found=("$artifacts"/*)
if [ "$status" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
  mkdir -p "$crashes"
  for f in "${found[@]}"; do cp "$f" "$crashes/"; done
  echo "fuzz: FAILED (exit $status); ${#found[@]} input(s) copied to $crashes:" >&2
  for f in "${found[@]}"; do echo "  $crashes/$(basename "$f")" >&2; done
  echo "fuzz: reproduce with: $fuzzer <file>; commit the files so the tests replay them" >&2
  exit 1
fi
echo "fuzz: no crashes in ${seconds}s"
