#!/usr/bin/env bash
# The main job: build tinyseq, train the default model on the built-in toy
# corpus, then translate a few sentences and show an attention heatmap.
# Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/demo}
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build build-release -j "$(nproc)" --target tinyseq
tinyseq=build-release/tinyseq

echo "== training on the toy corpus (see $out/)"
rm -rf "$out"
$tinyseq train --out "$out"

echo "== translating with $out/best.ckpt"
$tinyseq translate --model "$out/best.ckpt" \
  "the small girl does not see the white cats ." \
  "my brother sells a lot of old books that the teacher loves ." \
  "the doctors cannot open the heavy door tomorrow ."

echo "== attention of one sentence (also written to $out/attend.svg)"
$tinyseq attend --model "$out/best.ckpt" --values --svg "$out/attend.svg" \
  "the small girl does not see the white cats ."
