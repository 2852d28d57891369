#!/usr/bin/env bash
# ctest npz_dev_loss_matches_eval: a small Transformer (3 heads, 2 layers, dropout),
# a GRU and two LSTMs trained for a few steps are exported, loaded into their
# PyTorch models by tools/npz_dev_loss.py (load_state_dict strict: the
# Transformer into ../shared/bench/torch_ref.py's module, the others into
# tools/make_torch_fixtures.py's nn.GRU / nn.LSTM model), and their loss on a
# padded corpus must be `tinyseq eval`'s to 1e-9. Skips (77) without Debian's python3
# with torch and numpy, or without ../shared.
# Usage: test_npz_dev_loss.sh PROGRAM SOURCE_DIR
set -euo pipefail
tinyseq=$1 src=$2
python=/usr/bin/python3  # Debian's torch and numpy import only here
torch_ref=$src/../shared/bench/torch_ref.py
[ -f "$torch_ref" ] || { echo "skipped: $torch_ref is absent (../shared holds the PyTorch reference)"; exit 77; }
"$python" -c 'import torch, numpy' 2>/dev/null ||
  { echo "skipped: $python cannot import torch and numpy (scripts/setup.sh installs python3-torch)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tinyseq" corpus --toy --n 60 --seed 11 > "$work/held.tsv"
check() {  # name, train flags
  # float64: eval and PyTorch (float64) agree to 1e-9 only in the same type
  "$tinyseq" train --dtype float64 --toy-pairs 400 --batch 16 --steps 30 --show 0 --beam 1 $2 --out "$work/$1" >/dev/null
  "$tinyseq" export "$work/$1/last.ckpt" "$work/$1.npz" >/dev/null
  torch_line=$("$python" "$src/tools/npz_dev_loss.py" "$work/$1.npz" "$work/held.tsv" --tinyseq "$tinyseq" \
               --torch-ref "$torch_ref" | tail -1)
  eval_line=$("$tinyseq" eval --model "$work/$1/last.ckpt" --corpus "$work/held.tsv" --show 0 2>/dev/null |
              grep 'nats per token')
  echo "$1 torch:   $torch_line"
  echo "$1 tinyseq: $eval_line"
  "$python" - "${torch_line##*; }" "${eval_line##*; }" "$1" <<'PY'
import sys
torch_loss, eval_loss, name = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
diff = abs(torch_loss - eval_loss) / abs(eval_loss)
print("%s: relative difference %.3g" % (name, diff))
sys.exit(0 if diff <= 1e-9 else 1)
PY
}
check transformer "--arch transformer --d-model 12 --heads 3 --layers 2 --ff 20 --warmup-steps 5 --dropout 0.1"
check gru "--emb 8 --hidden 12 --attn general --decoder luong --bidirectional"
check lstm "--emb 8 --hidden 12 --cell lstm"
check lstm-bi "--emb 8 --hidden 12 --cell lstm --attn dot --decoder luong --bidirectional --dropout 0.1"
# A subword model: the script encodes the corpus with the export's own
# SentencePiece models (tinyseq.subword.*), so the loss matches only if the
# exported models split every word as tinyseq does.
# (The probe's output is kept first: under pipefail its non-zero exit would
# make "train | grep" false even when grep finds the line.)
probe=$("$tinyseq" train --toy-pairs 20 --subword 300 --steps 1 --show 0 --beam 1 --out "$work/probe" 2>&1 || true)
if ! "$python" -c 'import sentencepiece' 2>/dev/null; then
  echo "subword: skipped: $python cannot import sentencepiece (scripts/setup.sh installs python3-sentencepiece)"
elif [[ $probe == *"without SentencePiece"* ]]; then
  echo "subword: skipped: this tinyseq was built without SentencePiece"
else
  check subword "--emb 8 --hidden 12 --subword 400"
fi
