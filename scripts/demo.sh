#!/usr/bin/env bash
# The main job: build tinyseq, train the default model on the built-in toy
# corpus, then translate a few sentences, show an attention heatmap and check
# every gradient.
# Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo in the checkout)
# OUT_DIR is relative to where you run the script. It must be new, empty, or
# a run directory tinyseq wrote (an earlier demo), which is replaced; any other
# directory is refused untouched.
set -euo pipefail
out=${1:-}
[ -z "$out" ] || [ "${out#/}" != "$out" ] || out=$PWD/$out  # the caller's directory, before the cd
cd "$(dirname "$0")/.."
out=${out:-runs/demo}

# Succeeds when $1 holds only what `tinyseq train` and this script write there
# (config.txt among it); otherwise prints the first other entry.
is_run_dir() {
  [ -f "$1/config.txt" ] || { echo "no config.txt"; return 1; }
  local entry name
  for entry in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    name=${entry##*/}
    if [ -L "$entry" ] || [ -d "$entry" ]; then echo "'$name'"; return 1; fi
    case $name in
      config.txt | metrics.csv | last.ckpt | best.ckpt | loss.svg | attend.svg | attention-*.svg) ;;
      *.ckpt.tmp-* | *.tmp) ;;  # temporary files of an interrupted save
      *) echo "'$name'"; return 1 ;;
    esac
  done
}
if [ -L "$out" ] || { [ -e "$out" ] && [ ! -d "$out" ]; }; then
  echo "demo.sh: '$out' is a file or a symbolic link, not a directory; name a new directory" >&2
  exit 2
fi
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
  if ! why=$(is_run_dir "$out"); then
    echo "demo.sh: '$out' is not a tinyseq run directory ($why), so it is left alone;" \
      "name a new or empty directory, or an earlier demo run to replace" >&2
    exit 2
  fi
  echo "== replacing the earlier run in $out"
  rm -rf "$out"
fi

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF >/dev/null
cmake --build build-release -j "$(nproc)" --target tinyseq attention_basics
tinyseq=build-release/tinyseq

echo "== training on the toy corpus (see $out/)"
$tinyseq train --out "$out"

echo "== translating with $out/best.ckpt"
$tinyseq translate --model "$out/best.ckpt" \
  "the small girl does not see the white cats ." \
  "my brother sells a lot of old books that the teacher loves ." \
  "the doctors cannot open the heavy door tomorrow ."

echo "== attention of one sentence (also written to $out/attend.svg)"
$tinyseq attend --model "$out/best.ckpt" --values --svg "$out/attend.svg" \
  "the small girl does not see the white cats ."

echo "== every gradient of every attention type and decoder against finite differences"
$tinyseq gradcheck | tail -1

echo "== attention from scratch, stage by stage: build-release/examples/attention_basics (docs/attention.md)"
