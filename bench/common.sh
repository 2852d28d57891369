# What the bench scripts share (sourced by run.sh and threads.sh): the
# config table's rows, the medians and ratios, and the python that runs
# torch_ref.py; and the data both programs train on.

SHARED=${SHARED:-../shared}
DATA=${DATA:-$SHARED/data/tatoeba-eng-fra.tsv}
MAX_LEN=${MAX_LEN:-10}
LABEL_SMOOTHING=${LABEL_SMOOTHING:-0.1}

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 > 0) printf "%.2f", a / b; else print "-"}'; }

# A row of the config table -> CNAME, CKEY (short), CARCH, and MODEL: the
# model flags, which tinyseq train, torch_ref.py and profile_step all take.
config_flags() {
  local f
  IFS=: read -r -a f <<<"$1"
  if [ "${f[0]}" = transformer ]; then
    CARCH=transformer
    CNAME="transformer, d_model ${f[1]}, ${f[2]} heads, ${f[3]} layers, ff ${f[4]}, batch ${f[5]}"
    CKEY="transformer ${f[1]}/${f[2]}/${f[3]}/${f[4]}/${f[5]}"
    MODEL=(--arch transformer --emb "${f[1]}" --hidden "${f[1]}" --heads "${f[2]}" --layers "${f[3]}" --ff "${f[4]}"
           --batch "${f[5]}")
  else
    CARCH=gru
    CNAME="emb ${f[0]}, hidden ${f[1]}, batch ${f[2]}, ${f[3]}"
    CKEY="${f[0]}/${f[1]}/${f[2]} ${f[3]}"
    MODEL=(--emb "${f[0]}" --hidden "${f[1]}" --batch "${f[2]}" --attn "${f[3]}")
  fi
}

# PY: PYTHON when it imports torch 1.13 or newer (else an error), or the
# first of /usr/bin/python3, python3 that does, or empty.
torch_ok() { "$1" -c 'import sys, torch; v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]); sys.exit(v < (1, 13))' >/dev/null 2>&1; }
find_torch_python() {
  PY=""
  if [ -n "${PYTHON:-}" ]; then
    torch_ok "$PYTHON" || { echo "bench: PYTHON=$PYTHON does not import torch 1.13 or newer" >&2; exit 1; }
    PY=$PYTHON
    return
  fi
  for cand in /usr/bin/python3 python3; do
    if command -v "$cand" >/dev/null 2>&1 && torch_ok "$cand"; then PY=$cand; return; fi
  done
}
