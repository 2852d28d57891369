#!/usr/bin/env bash
# The main job: build tinyseq and install it into /usr/local (the program on
# the PATH, libraries, headers, tinyseq.pc and the Python package; through
# sudo when not root), train the default model on the built-in toy corpus,
# then translate a few sentences, show an attention heatmap and check every
# gradient.
# Usage: scripts/demo.sh [OUT_DIR]   (default runs/demo in the checkout)
# OUT_DIR is relative to where you run the script. It must be new, empty, or
# a run directory tinyseq wrote (an earlier demo), which is replaced; any other
# directory is refused untouched. TINYSEQ=PROGRAM uses that tinyseq instead of
# building and installing one.
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
installed=""
if [ -z "$tinyseq" ]; then
  # -UTS_PYTHON_DIR: the package goes where /usr/bin/python3 imports from
  # under the prefix (/usr/local/lib/python3.X/dist-packages), also in a
  # build-release an earlier demo configured for the user's site-packages.
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DTS_BUILD_TESTS=OFF \
    -DCMAKE_INSTALL_PREFIX=/usr/local -UTS_PYTHON_DIR >/dev/null
  cmake --build build-release -j "$(nproc)" --target tinyseq attention_basics python_package
  tinyseq=build-release/tinyseq
  # Installed as `pip install` would: the program on the PATH, the libraries,
  # headers and tinyseq.pc, the Python package. /usr/local needs root.
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  if [ -z "$sudo" ] || command -v sudo >/dev/null; then
    $sudo cmake --install build-release >/dev/null
    installed=/usr/local/bin/tinyseq
    # An earlier demo put the package in the user's site-packages, which
    # comes first on sys.path: that stale copy would answer `import tinyseq`.
    user_site=$(/usr/bin/python3 -m site --user-site 2>/dev/null || true)
    if [ -n "$user_site" ] && [ -f "$user_site/tinyseq/libtinyseq.so" ]; then
      rm -rf "$user_site/tinyseq"
      echo "== removed an earlier demo's Python package from $user_site"
    fi
    echo "== installed into /usr/local: tinyseq (on the PATH), libraries, headers, tinyseq.pc, the Python package"
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

if [ -n "$installed" ]; then
  echo "== tinyseq is installed as $installed: the README's tour runs as written, from any directory:"
  echo "   tinyseq train --out runs/toy; python3 -c 'import tinyseq'"
  echo "   jupyter notebook notebooks/attention.ipynb$([ "$(id -u)" -eq 0 ] && echo ' --allow-root')   (the notebook, in the browser)"
elif [ -z "${TINYSEQ:-}" ]; then
  echo "== not installed (neither root nor sudo): for the README's tour, put this build on the PATH:"
  echo "   export PATH=\"$PWD/build-release:\$PATH\" PYTHONPATH=\"$PWD/build-release/python\""
fi
