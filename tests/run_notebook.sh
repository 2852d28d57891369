#!/usr/bin/env bash
# ctest notebook: executes notebooks/attention.ipynb with Debian's
# jupyter nbconvert on this build's package (PYTHONPATH from ctest) and
# checks the numbers it prints. nbconvert fails on an error in any cell.
# Usage: run_notebook.sh PYTHON NOTEBOOK SANITIZE
set -euo pipefail
python=$1 notebook=$2 sanitize=$3
if [ "$sanitize" = ON ]; then
  echo "skipped: the kernel is a process Jupyter starts, without the ASan preload (docs/python.md)"; exit 77
fi
command -v jupyter-nbconvert >/dev/null ||
  { echo "skipped: jupyter-nbconvert is not installed (apt-get install jupyter-nbconvert python3-ipykernel)"; exit 77; }
"$python" -c 'import ipykernel, matplotlib, numpy' 2>/dev/null ||
  { echo "skipped: $python lacks ipykernel, matplotlib or numpy"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work PYDEVD_DISABLE_FILE_VALIDATION=1
cd "$(dirname "$notebook")"
jupyter-nbconvert --to notebook --execute --ExecutePreprocessor.timeout=600 \
  --output "$work/executed.ipynb" "$notebook"
"$python" - "$work/executed.ipynb" <<'PY'
import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
expected = [
    "scores: [927. 397. 148. 929.]",
    "a1 (score 927) gets 0.12 / a4 (score 929) gets 0.88",
    "context to full precision: 3.88079707797788",   # docs/attention.md's figure
    "d context[0] / d weights: [ 3. 59.  1.  4.]",
    "row sums: [1. 1. 1. 1.]",
    "(layers, heads, T, S)",
    "epoch 5: train loss",                            # the trainer's progress reached the notebook
    # the model trained in the notebook translates its own example (issue 39)
    "the small girl does not see the white cats .  ->  la petite fille ne voit pas les chats blancs .",
    "transformer: the small girl does not see the white cats .  ->  la petite fille ne voit pas les chats blancs .",
    "attention aligns better than the diagonal: True",
]
missing = [e for e in expected if e not in text]
if missing or images < 6:
    print("the executed notebook lacks:", missing, f"({images} figures)")
    print(text)
    sys.exit(1)
print(f"ok: every cell ran, {len(expected)} checks passed, {images} figures")
PY
