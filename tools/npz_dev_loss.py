#!/usr/bin/python3
"""Loads a model exported by `tinyseq export` into its PyTorch model and
prints its loss on a corpus, to compare with the loss line of `tinyseq eval`
on the same checkpoint and corpus. A GRU-architecture model, of any cell
(model.cell, absent for the GRU), goes into tools/make_torch_fixtures.py's
RecurrentSeq2Seq (torch's nn.GRU / nn.LSTM and their cells); a Transformer
(model.architecture=transformer) into ../shared/bench/torch_ref.py's
TransformerSeq2Seq (imported by path, --torch-ref); both through
load_state_dict(strict=True): every key of its state_dict, and no other.

Run with Debian's python3 (numpy and torch 1.13; the pyenv python3 first on
PATH has neither):

    tinyseq export runs/X/best.ckpt model.npz
    /usr/bin/python3 tools/npz_dev_loss.py model.npz dev.tsv [--tinyseq build/tinyseq]
    tinyseq eval --model runs/X/best.ckpt --corpus dev.tsv     # "loss ... nats per token ...; L"

The corpus is normalised by `tinyseq corpus --normalize` (so the tokens are
exactly those eval sees); pairs with a side longer than the checkpoint's
data.max_len are left out, as eval does by default. The loss is teacher-forced
cross-entropy in nats per target token including <eos>, summed over the
corpus and divided once (eval's definition). Unknown words map to <unk>.
A subword model's export (tinyseq.subword.source/.target) has its
SentencePiece models: each side's words are encoded into pieces with them
(python3-sentencepiece; without it such an export is refused), after the
length filter, which counts words as eval's does.
The last line ends with the loss to 12 decimals, as eval's loss line does.
tests/test_npz_dev_loss.sh runs it on a Transformer (ctest; it skips without
torch or ../shared).
"""
import argparse
import importlib.util
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_torch_fixtures as ref  # noqa: E402  (the model of docs/models.md)

torch.set_default_dtype(torch.float64)


def load(path):
    """The parameters (torch tensors by PyTorch name), vocabularies, config and
    the subword models' bytes (source, target), or None for a word-level model."""
    z = np.load(path, allow_pickle=False)
    config = dict(line.split("=", 1) for line in str(z["tinyseq.config"]).splitlines() if line)
    params = {k: torch.from_numpy(z[k]) for k in z.files if not k.startswith("tinyseq.")}
    subword = None
    if "tinyseq.subword.source" in z.files:
        subword = tuple(z["tinyseq.subword." + side].tobytes() for side in ("source", "target"))
    return params, list(z["tinyseq.vocab.source"]), list(z["tinyseq.vocab.target"]), config, subword


def piece_encoders(subword):
    """Each side's words -> pieces, through the export's SentencePiece models
    (docs/interop.md: a 20-byte tinyseq header, then the model file)."""
    try:
        import sentencepiece as spm
    except ImportError:
        sys.exit("npz_dev_loss.py: this export holds a subword model; encoding its corpus needs the sentencepiece "
                 "module (apt-get install python3-sentencepiece)")
    encoders = []
    for blob in subword:
        sp = spm.SentencePieceProcessor(model_proto=blob[20:])
        encoders.append(lambda words, sp=sp: sp.encode(" ".join(words), out_type=str))
    return encoders


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


def recurrent_model(P, cfg, src_vocab, tgt_vocab):
    """(loss of a time-major batch, a description) for make_torch_fixtures.py's
    RecurrentSeq2Seq holding P: torch's modules of the export's cell."""
    attn, decoder, cell = cfg["model.attention"], cfg["model.decoder"], cfg.get("model.cell", "gru")
    bi = cfg["model.bidirectional"] == "1"
    model = ref.RecurrentSeq2Seq(cell, decoder, attn, bi, len(src_vocab), len(tgt_vocab), int(cfg["model.embedding"]),
                                 int(cfg["model.hidden"]))
    model.load_state_dict(P, strict=True)  # every state_dict key, no other

    def loss(src, src_len, tgt_in, tgt_out):
        return model(src, src_len, tgt_in, tgt_out)[0]
    return loss, "attention %s, %s decoder, %s encoder, %s cells (torch.nn.%s)" % (
        attn, decoder, "bidirectional" if bi else "unidirectional", cell, ref.CELLS[cell]["layer"].__name__)


def transformer_model(P, cfg, src_vocab, tgt_vocab, torch_ref_path):
    """(loss of a time-major batch, a description) for torch_ref.py's Transformer holding P."""
    spec = importlib.util.spec_from_file_location("torch_ref", torch_ref_path)
    torch_ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(torch_ref)  # its command line is parsed only when run as a program
    d, heads, layers, ff = (int(cfg[k]) for k in ("model.d_model", "model.heads", "model.layers", "model.feed_forward"))
    model = torch_ref.TransformerSeq2Seq(len(src_vocab), len(tgt_vocab), d, heads, layers, ff, 0.0).double()
    model.load_state_dict(P, strict=True)  # every state_dict key, no other
    model.eval()

    def loss(src, src_len, tgt_in, tgt_out):
        logits = model(src.t().contiguous(), src_len, tgt_in.t().contiguous())  # batch-first (B, T, V)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.t().reshape(-1),
                                                 ignore_index=ref.PAD)
    return loss, "transformer, d_model %d, %d heads, %d layers per stack, feed-forward %d (%s)" % (
        d, heads, layers, ff, torch_ref_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("npz")
    ap.add_argument("corpus")
    ap.add_argument("--tinyseq", default="build/tinyseq", help="the program, for corpus --normalize")
    ap.add_argument("--torch-ref", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                        "shared", "bench", "torch_ref.py"),
                    help="the Transformer's PyTorch module (default ../shared/bench/torch_ref.py)")
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    P, src_vocab, tgt_vocab, cfg, subword = load(a.npz)
    max_len = int(cfg["data.max_len"])
    if cfg.get("model.architecture", "gru") == "transformer":
        loss_of, described = transformer_model(P, cfg, src_vocab, tgt_vocab, a.torch_ref)
    else:
        loss_of, described = recurrent_model(P, cfg, src_vocab, tgt_vocab)
    pairs = [p for p in read_pairs(a.corpus, a.tinyseq)
             if max_len == 0 or (len(p[0]) <= max_len and len(p[1]) <= max_len)]
    if subword:
        src_pieces, tgt_pieces = piece_encoders(subword)
        pairs = [(src_pieces(s), tgt_pieces(t)) for s, t in pairs]
    src_ids = {w: i for i, w in enumerate(src_vocab)}
    tgt_ids = {w: i for i, w in enumerate(tgt_vocab)}
    total, tokens = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(pairs), a.batch):
            src, src_len, tgt_in, tgt_out = batch(pairs[i:i + a.batch], src_ids, tgt_ids)
            loss = loss_of(src, src_len, tgt_in, tgt_out)
            n = int((tgt_out != ref.PAD).sum())
            total += float(loss) * n
            tokens += n
    print("model %s: %s; torch %s" % (a.npz, described, torch.__version__))
    print("corpus %s: %d pairs" % (a.corpus, len(pairs)))
    print("loss %.4f nats per token over %d target tokens (with <eos>); %.12f" % (total / tokens, tokens, total / tokens))


if __name__ == "__main__":
    sys.exit(main())
