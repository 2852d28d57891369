#!/usr/bin/env bash
# Fuzzes the checkpoint loader (tests/fuzz/fuzz_checkpoint.c) and the .npz
# reader (tests/fuzz/fuzz_npz.c) for a bounded time, split evenly.
#
#   scripts/fuzz.sh                 # 60 s in all: 30 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh
#
# Builds the libFuzzer harnesses with clang + ASan + UBSan in build-fuzz/ (or
# $FUZZ_BUILD_DIR), seeds each corpus with valid files written by ckpt_seeds /
# npz_seeds, replays the known crash inputs, then fuzzes. Exits non-zero if
# a fuzzer finds a crash, leak, timeout or OOM; the offending inputs are
# copied into tests/fixtures/ckpt_crashes/ or tests/fixtures/npz_crashes/ for
# a human to commit (the test suite replays every file there).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
each=$(( (seconds + 1) / 2 ))

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTS_FUZZ=ON -DTS_SANITIZE=ON -DTS_WERROR=ON -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target fuzz_checkpoint ckpt_seeds fuzz_npz npz_seeds

# fuzz_one NAME SEEDER DICT CRASHES: fuzzes $build/tests/fuzz/NAME for $each s.
fuzz_one() {
  local name=$1 seeder=$2 dict=$3 crashes=$4
  local fuzzer=$build/tests/fuzz/$name
  local seeds=$build/$name-seeds
  local corpus=$build/$name-corpus        # kept between runs: later runs start further on
  local artifacts=$build/$name-artifacts
  rm -rf "$seeds" "$artifacts"
  mkdir -p "$seeds" "$corpus" "$artifacts"
  "$build/tests/fuzz/$seeder" "$seeds" || return 1
  [ "$name" = fuzz_checkpoint ] && cp "$root"/tests/fixtures/format1/*.ckpt "$seeds/"  # version 1: gzip

  # Known crash inputs first: each must now run clean in the fuzzing build too.
  shopt -s nullglob
  local known=("$crashes"/crash-* "$crashes"/leak-* "$crashes"/timeout-* "$crashes"/oom-*)
  if [ ${#known[@]} -gt 0 ]; then
    echo "fuzz: replaying ${#known[@]} known crash inputs for $name"
    "$fuzzer" -runs=1 "${known[@]}" || { echo "fuzz: $name: a known crash input fails again" >&2; return 1; }
  fi

  echo "fuzz: running $fuzzer for ${each}s"
  local status=0
  "$fuzzer" -max_total_time="$each" -timeout=10 -rss_limit_mb=2048 \
            -dict="$dict" -artifact_prefix="$artifacts/" \
            -print_final_stats=1 "$corpus" "$seeds" || status=$?

  local found=("$artifacts"/*)
  if [ "$status" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
    mkdir -p "$crashes"
    for f in "${found[@]}"; do cp "$f" "$crashes/"; done
    echo "fuzz: $name FAILED (exit $status); ${#found[@]} input(s) copied to $crashes:" >&2
    for f in "${found[@]}"; do echo "  $crashes/$(basename "$f")" >&2; done
    echo "fuzz: reproduce with: $fuzzer <file>; commit the files so the tests replay them" >&2
    return 1
  fi
  echo "fuzz: $name: no crashes in ${each}s"
}

failed=0
fuzz_one fuzz_checkpoint ckpt_seeds "$root/tests/fuzz/checkpoint.dict" \
         "$root/tests/fixtures/ckpt_crashes" || failed=1
fuzz_one fuzz_npz npz_seeds "$root/tests/fuzz/npz.dict" \
         "$root/tests/fixtures/npz_crashes" || failed=1
exit $failed
