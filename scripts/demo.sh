#!/usr/bin/env bash
# The main job: build tinyseq, train the default model on the built-in toy
# corpus, then translate a few sentences, show an attention heatmap and check
# every gradient.
# Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo in the checkout)
# OUT_DIR is relative to where you run the script. It must be new, empty, or
# a run directory tinyseq wrote (an earlier demo), which is replaced; any other
# directory is refused untouched. TINYSEQ=PROGRAM uses that tinyseq instead of
# building one.
set -euo pipefail
out=${1:-}
[ -z "$out" ] || [ "${out#/}" != "$out" ] || out=$PWD/$out  # the caller's directory, before the cd
cd "$(dirname "$0")/.."
out=${out:-runs/demo}

if [ -L "$out" ] || { [ -e "$out" ] && [ ! -d "$out" ]; }; then
  echo "demo.sh: '$out' is a file or a symbolic link, not a directory; name a new directory" >&2
  exit 2
fi
tinyseq=${TINYSEQ:-}
python=/usr/bin/python3
if [ -z "$tinyseq" ]; then
  # The Python package goes to the user's site-packages, where Debian's
  # python3 imports it without root (docs/python.md).
  site=()
  [ -x "$python" ] && site=(-DTS_PYTHON_DIR="$("$python" -m site --user-site)")
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF "${site[@]}" >/dev/null
  cmake --build build-release -j "$(nproc)" --target tinyseq attention_basics python_package
  tinyseq=build-release/tinyseq
  if [ ${#site[@]} -gt 0 ]; then
    cmake --install build-release --component python >/dev/null
    echo "== installed the Python package: $python -c 'import tinyseq' (docs/python.md, notebooks/attention.ipynb)"
  fi
fi
# The trainer alone knows which files a run holds: it says whether $out holds
# nothing else, and --force below then replaces that run.
if ! "$tinyseq" train --out "$out" --check-out; then
  echo "demo.sh: so '$out' is left alone; name a new or empty directory, or an earlier demo run to replace" >&2
  exit 2
fi

echo "== training on the toy corpus (see $out/)"
"$tinyseq" train --out "$out" --force

echo "== translating with $out/best.ckpt"
"$tinyseq" translate --model "$out/best.ckpt" \
  "the small girl does not see the white cats ." \
  "my brother sells a lot of old books that the teacher loves ." \
  "the doctors cannot open the heavy door tomorrow ."

echo "== attention of one sentence"
"$tinyseq" attend --model "$out/best.ckpt" --values "the small girl does not see the white cats ."

echo "== the run as one page: curves and an attention explorer"
"$tinyseq" report "$out" --force  # the page of the run just trained: ours to replace

echo "== every gradient of every attention type and decoder against finite differences"
"$tinyseq" gradcheck | tail -1

echo "== attention from scratch, stage by stage: build-release/examples/attention_basics (docs/attention.md)"
