#!/usr/bin/env bash
# Fuzzes, for a bounded time split evenly among them: the checkpoint loader
# (tests/fuzz/fuzz_checkpoint.c), the .npz reader (fuzz_npz.c), a
# SentencePiece model inside a checkpoint (fuzz_subword.c: the model check
# and SentencePiece behind it; only in a build with SentencePiece) and what
# `tinyseq report` reads from a run directory (fuzz_report.c).
#
#   scripts/fuzz.sh                 # 60 s in all: 15 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh
#
# Builds the libFuzzer harnesses with clang + ASan + UBSan in build-fuzz/ (or
# $FUZZ_BUILD_DIR), seeds each corpus with valid inputs written by its
# seeder (ckpt_seeds, npz_seeds, subword_seeds, report_seeds), replays the
# known crash inputs, then fuzzes. Exits non-zero if a fuzzer finds a crash,
# leak, timeout or OOM; the offending inputs are copied into
# tests/fixtures/<target>_crashes/ (ckpt_, npz_, subword_, report_) for a
# human to commit (the test suite replays those of the checkpoint and .npz
# readers; this script replays all of them first).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets=(fuzz_checkpoint ckpt_seeds fuzz_npz npz_seeds fuzz_report report_seeds)
spm=0
if pkg-config --exists sentencepiece; then spm=1; targets+=(fuzz_subword subword_seeds); fi
fuzzers=$(( ${#targets[@]} / 2 ))
each=$(( (seconds + fuzzers - 1) / fuzzers ))

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTS_FUZZ=ON -DTS_SANITIZE=ON -DTS_WERROR=ON -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j2 --target "${targets[@]}"

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
fuzz_one fuzz_report report_seeds "$root/tests/fuzz/report.dict" \
         "$root/tests/fixtures/report_crashes" || failed=1
if [ "$spm" = 1 ]; then
  fuzz_one fuzz_subword subword_seeds "$root/tests/fuzz/subword.dict" \
           "$root/tests/fixtures/subword_crashes" || failed=1
else
  echo "fuzz: fuzz_subword skipped: no SentencePiece (scripts/setup.sh installs libsentencepiece-dev)"
fi
exit $failed
