#!/usr/bin/env bash
# Fuzzes every reader of a hostile file, for a bounded time split evenly
# among them (tests/fuzz/, one harness each):
#   fuzz_checkpoint  the checkpoint loader
#   fuzz_npz         the .npz reader
#   fuzz_report      what `tinyseq report` reads from a run directory
#   fuzz_json        attention.jsonl's strict JSON reader alone (viz/json.c)
#   fuzz_gold        guided alignment's gold links with their corpus, and the
#                    gold distributions trained towards
#   fuzz_rundir      what a continued run reads back of its run directory
#                    (steps.csv, metrics.csv, heads.csv, attention.jsonl)
#   fuzz_options     the training options with the preset table, their
#                    checkpoint rows and config.txt read back
#   fuzz_subword     a SentencePiece model inside a checkpoint (the model
#                    check and SentencePiece behind it; only in a build with
#                    SentencePiece)
#
#   scripts/fuzz.sh                 # 60 s in all, split evenly (8 s each)
#   FUZZ_SECONDS=600 scripts/fuzz.sh
#
# Builds the libFuzzer harnesses with clang + ASan + UBSan in build-fuzz/ (or
# $FUZZ_BUILD_DIR), seeds each corpus with valid inputs written by its
# seeder (<x>_seeds), replays the known crash inputs, then fuzzes. Exits
# non-zero if a fuzzer finds a crash, leak, timeout or OOM; the offending
# inputs are copied into tests/fixtures/<x>_crashes/ for a human to commit
# (the test suite replays those of the checkpoint and .npz readers; this
# script replays all of them first).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}

# One row a harness: its name, its seeder, its dictionary (tests/fuzz/) and
# the prefix of its crash folder (tests/fixtures/<prefix>_crashes).
rows=(
  "fuzz_checkpoint ckpt_seeds    checkpoint.dict ckpt"
  "fuzz_npz        npz_seeds     npz.dict        npz"
  "fuzz_report     report_seeds  report.dict     report"
  "fuzz_json       json_seeds    report.dict     json"
  "fuzz_gold       gold_seeds    gold.dict       gold"
  "fuzz_rundir     rundir_seeds  rundir.dict     rundir"
  "fuzz_options    options_seeds options.dict    options"
)
if pkg-config --exists sentencepiece; then
  rows+=("fuzz_subword    subword_seeds subword.dict    subword")
else
  echo "fuzz: fuzz_subword skipped: no SentencePiece (scripts/setup.sh installs libsentencepiece-dev)"
fi
targets=()
for row in "${rows[@]}"; do
  read -r name seeder _ _ <<<"$row"
  targets+=("$name" "$seeder")
done
each=$(( (seconds + ${#rows[@]} - 1) / ${#rows[@]} ))

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTS_FUZZ=ON -DTS_SANITIZE=ON -DTS_WERROR=ON -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"  # train/ and what it links, too

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
for row in "${rows[@]}"; do
  read -r name seeder dict prefix <<<"$row"
  fuzz_one "$name" "$seeder" "$root/tests/fuzz/$dict" "$root/tests/fixtures/${prefix}_crashes" || failed=1
done
exit $failed
