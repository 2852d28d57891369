#!/usr/bin/env bash
# Installs every Debian package tinyseq's build and tests need. Idempotent:
# packages already present are left alone. Runs apt-get as root, or via sudo.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libgsl-dev libopenblas-dev zlib1g-dev libunistring-dev
  libcriterion-dev
  libxml2-utils            # xmllint: tests check the SVG heatmaps are well-formed XML
  clang libclang-rt-dev    # libFuzzer harnesses for the checkpoint loader and the .npz reader
  python3-numpy            # tests load tinyseq export's .npz with numpy.load (Debian's /usr/bin/python3); the Python package
  python3-torch            # tests/test_npz_dev_loss.sh: an export in its PyTorch model scores eval's loss
  python3-sentencepiece    # tests/test_npz_dev_loss.sh: a subword export's corpus encoded with its own models
  python3-pytest           # the Python package's tests (ctest python_api; docs/python.md)
  python3-matplotlib jupyter-nbconvert python3-ipykernel  # notebooks/attention.ipynb, executed by ctest
  jupyter-notebook         # its server: jupyter notebook notebooks/attention.ipynb (README)
  chromium                 # tests render tinyseq report's page in headless Chromium
  libsentencepiece-dev     # subword units (data/subword.h); optional at build time like MPI
  libopenmpi-dev openmpi-bin  # data-parallel training: mpirun -np N tinyseq train (docs/scaling.md)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
