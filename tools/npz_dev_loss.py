#!/usr/bin/python3
"""Loads a model exported by `tinyseq export` into the PyTorch model of
tools/make_torch_fixtures.py and prints its loss on a corpus, to compare with
the loss line of `tinyseq eval` on the same checkpoint and corpus.

Run by hand with Debian's python3 (numpy and torch 1.13; the pyenv python3
first on PATH has neither):

    tinyseq export runs/X/best.ckpt model.npz
    /usr/bin/python3 tools/npz_dev_loss.py model.npz dev.tsv [--tinyseq build/tinyseq]
    tinyseq eval --model runs/X/best.ckpt --corpus dev.tsv     # "loss ... nats per token"

The corpus is normalised by `tinyseq corpus --normalize` (so the tokens are
exactly those eval sees); pairs with a side longer than the checkpoint's
data.max_len are left out, as eval does by default. The loss is teacher-forced
cross-entropy in nats per target token including <eos>, summed over the
corpus and divided once (eval's definition). Unknown words map to <unk>.
Nothing here is run by the build or the tests.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_torch_fixtures as ref  # noqa: E402  (the model of docs/models.md)

torch.set_default_dtype(torch.float64)


def load(path):
    """The parameters (torch tensors by PyTorch name), vocabularies and config."""
    z = np.load(path, allow_pickle=False)
    config = dict(line.split("=", 1) for line in str(z["tinyseq.config"]).splitlines() if line)
    params = {k: torch.from_numpy(z[k]) for k in z.files if not k.startswith("tinyseq.")}
    return params, list(z["tinyseq.vocab.source"]), list(z["tinyseq.vocab.target"]), config


def read_pairs(corpus, tinyseq):
    out = subprocess.run([tinyseq, "corpus", "--normalize", corpus], check=True, capture_output=True,
                         text=True).stdout
    return [(s.split(), t.split()) for s, t in (line.split("\t")[:2] for line in out.splitlines())]


def batch(pairs, src_ids, tgt_ids):
    """Time-major ids as the C trainer builds them (docs/models.md)."""
    B = len(pairs)
    S = max(len(s) for s, _ in pairs)
    T = max(len(t) for _, t in pairs) + 1
    src = torch.zeros(S, B, dtype=torch.long)
    tgt_in = torch.zeros(T, B, dtype=torch.long)
    tgt_out = torch.zeros(T, B, dtype=torch.long)
    for b, (s, t) in enumerate(pairs):
        src[:len(s), b] = torch.tensor([src_ids.get(w, ref.UNK) for w in s])
        gold = torch.tensor([tgt_ids.get(w, ref.UNK) for w in t], dtype=torch.long)
        tgt_in[0, b] = ref.SOS
        tgt_in[1:len(t) + 1, b] = gold
        tgt_out[:len(t), b] = gold
        tgt_out[len(t), b] = ref.EOS
    return src, torch.tensor([len(s) for s, _ in pairs]), tgt_in, tgt_out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("npz")
    ap.add_argument("corpus")
    ap.add_argument("--tinyseq", default="build/tinyseq", help="the program, for corpus --normalize")
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    P, src_vocab, tgt_vocab, cfg = load(a.npz)
    attn, decoder = cfg["model.attention"], cfg["model.decoder"]
    bi = cfg["model.bidirectional"] == "1"
    max_len = int(cfg["data.max_len"])
    want = dict(ref.seq2seq_param_specs(decoder, attn, bi, len(src_vocab), len(tgt_vocab),
                                        int(cfg["model.embedding"]), int(cfg["model.hidden"])))
    for name, shape in want.items():
        assert tuple(P[name].shape) == shape, (name, tuple(P[name].shape), shape)
    assert set(P) == set(want), set(P) ^ set(want)
    pairs = [p for p in read_pairs(a.corpus, a.tinyseq)
             if max_len == 0 or (len(p[0]) <= max_len and len(p[1]) <= max_len)]
    src_ids = {w: i for i, w in enumerate(src_vocab)}
    tgt_ids = {w: i for i, w in enumerate(tgt_vocab)}
    total, tokens = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(pairs), a.batch):
            src, src_len, tgt_in, tgt_out = batch(pairs[i:i + a.batch], src_ids, tgt_ids)
            loss, _ = ref.seq2seq(P, decoder, attn, bi, src, src_len, tgt_in, tgt_out)
            n = int((tgt_out != ref.PAD).sum())
            total += float(loss) * n
            tokens += n
    print("model %s: attention %s, %s decoder, %s encoder; torch %s" %
          (a.npz, attn, decoder, "bidirectional" if bi else "unidirectional", torch.__version__))
    print("corpus %s: %d pairs" % (a.corpus, len(pairs)))
    print("loss %.4f nats per token over %d target tokens (with <eos>); %.12f" % (total / tokens, tokens, total / tokens))


if __name__ == "__main__":
    sys.exit(main())
