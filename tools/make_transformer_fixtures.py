#!/usr/bin/python3
"""Writes the PyTorch fixtures of the Transformer (issue 24): a padded batch,
every parameter, the loss and the gradient of every parameter, which
tests/test_transformer.c compares with models/transformer.c to 1e-10; and
a float32 twin of the first (FLOAT32, *_f32.txt): its draws rounded to
float32, the loss and gradients torch computes from them in float32, which
a float32 model matches to ~1e-5.

Run by hand with Debian's python3 (torch 1.13):

    /usr/bin/python3 tools/make_transformer_fixtures.py [--out tests/fixtures/torch] [--check]

Neither the build nor the tests run this; its output is committed, and the
same every run (a fixed seed per file, float64; a float32 twin uses its
float64 file's seed). --check also runs
torch.autograd.gradcheck over every parameter (slower, same files).

The model is built here from torch.nn.Transformer directly (not from
../shared/bench/torch_ref.py), exactly as docs/models.md "Transformer"
describes it: embeddings scaled by sqrt(d) plus sinusoidal positions (first
token p = 0), nn.Transformer(norm_first=True, batch_first=True, relu,
layer_norm_eps=1e-5, dropout 0), decoder.out = Linear(d, V_tgt); the source
padding mask on encoder self-attention and cross-attention, a causal mask on
decoder self-attention. Parameter names are this module's state_dict keys.
Every parameter is drawn at random (LayerNorm weights near 1), so that every
gradient is exercised.

Format: docs/fixtures.md (the records of tools/make_torch_fixtures.py). The
batch is time-major as the C batch view reads it: ints src (S*B),
src_len (B), tgt_in (T*B), tgt_out (T*B); then ints config (Vs, Vt, d,
heads, layers, ff), tensor label_smoothing, every parameter under its name,
tensor loss, and grad.<name> for each parameter.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from make_torch_fixtures import Writer, default_dtype, seed_for  # noqa: E402

torch.set_default_dtype(torch.float64)
PAD, SOS, EOS = 0, 1, 2

# name -> (Vs, Vt, d, heads, layers, ff, label smoothing, source lengths, target lengths)
FIXTURES = {
    "transformer_2layer.txt": (7, 8, 4, 2, 2, 6, 0.0, [4, 2, 3], [3, 4, 1]),
    "transformer_3head_smoothed.txt": (6, 7, 6, 3, 1, 5, 0.1, [2, 3], [2, 1]),
}
# float32 twins: name -> its float64 file
FLOAT32 = {"transformer_2layer_f32.txt": "transformer_2layer.txt"}


def positions(n, d):
    pe = torch.zeros(n, d)
    for p in range(n):
        for i in range(0, d, 2):
            angle = p / (10000.0 ** (i / d))
            pe[p, i] = math.sin(angle)
            if i + 1 < d:
                pe[p, i + 1] = math.cos(angle)
    return pe


class Model(nn.Module):
    def __init__(self, vs, vt, d, heads, layers, ff):
        super().__init__()
        self.d = d
        self.encoder = nn.Module()
        self.encoder.embedding = nn.Embedding(vs, d, padding_idx=PAD)
        self.decoder = nn.Module()
        self.decoder.embedding = nn.Embedding(vt, d, padding_idx=PAD)
        self.transformer = nn.Transformer(d_model=d, nhead=heads, num_encoder_layers=layers,
                                          num_decoder_layers=layers, dim_feedforward=ff, dropout=0.0,
                                          activation="relu", layer_norm_eps=1e-5, batch_first=True,
                                          norm_first=True)
        self.decoder.out = nn.Linear(d, vt)

    def embed(self, emb, ids):
        return emb(ids) * math.sqrt(self.d) + positions(ids.size(1), self.d)

    def forward(self, src, dec_in):  # batch-major (B, S), (B, T)
        pad = src == PAD
        mem = self.transformer.encoder(self.embed(self.encoder.embedding, src), src_key_padding_mask=pad)
        T = dec_in.size(1)
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        y = self.transformer.decoder(self.embed(self.decoder.embedding, dec_in), mem, tgt_mask=causal,
                                     memory_key_padding_mask=pad)
        return self.decoder.out(y)


def make_batch(vs, vt, src_len, tgt_len):
    B, S, T = len(src_len), max(src_len), max(tgt_len) + 1
    src = torch.zeros(S, B, dtype=torch.long)
    tgt_in = torch.zeros(T, B, dtype=torch.long)
    tgt_out = torch.zeros(T, B, dtype=torch.long)
    for b in range(B):
        src[:src_len[b], b] = torch.randint(4, vs, (src_len[b],))
        gold = torch.randint(3, vt, (tgt_len[b],))  # <unk> (3) and the words
        n = tgt_len[b]
        tgt_in[0, b] = SOS
        tgt_in[1:n + 1, b] = gold
        tgt_out[:n, b] = gold
        tgt_out[n, b] = EOS
    return src, torch.tensor(src_len), tgt_in, tgt_out


def make(out, name, spec, check, twin=None):
    """twin: the float64 file whose draws a float32 fixture rounds."""
    vs, vt, d, heads, layers, ff, smoothing, src_len, tgt_len = spec
    torch.manual_seed(seed_for(twin or name))
    model = Model(vs, vt, d, heads, layers, ff)
    with torch.no_grad():
        for key, p in model.named_parameters():
            gamma = ".norm" in key and key.endswith(".weight")  # LayerNorm weights near 1
            p.copy_(torch.randn(p.shape) * 0.5 + (1.0 if gamma else 0.0))
    model.train()  # the slow path (no fused fast path); dropout is 0
    src, lens, tgt_in, tgt_out = make_batch(vs, vt, src_len, tgt_len)

    def loss_of(*params):
        named = dict(zip(names, params))
        logits = torch.nn.utils.stateless.functional_call(model, named, (src.t(), tgt_in.t()))
        return F.cross_entropy(logits.reshape(-1, vt), tgt_out.t().reshape(-1), ignore_index=PAD,
                               label_smoothing=smoothing)

    names = [k for k, _ in model.named_parameters()]
    params = [p for _, p in model.named_parameters()]
    agreement = []
    if twin:
        # torch's own float32 error: float64 on the same (rounded) weights
        params = [p.detach().to(torch.float32).requires_grad_(True) for p in params]
        exact = [p.detach().to(torch.float64).requires_grad_(True) for p in params]
        loss64 = loss_of(*exact)
        grads64 = torch.autograd.grad(loss64, exact)
        with default_dtype(torch.float32):  # the positions, the causal mask
            model.float()
            loss = loss_of(*params)
            grads = torch.autograd.grad(loss, params)
        rel = abs(loss.item() - loss64.item()) / abs(loss64.item())
        worst = max((g.to(torch.float64) - e).abs().max().item() / max(e.abs().max().item(), 1e-300)
                    for g, e in zip(grads, grads64))
        agreement = ["torch float32 against torch float64 on these weights: loss %.2g relative, "
                     "gradients at most %.2g of their tensor's largest" % (rel, worst)]
        check = False  # gradcheck is float64's
    else:
        loss = loss_of(*params)
        grads = torch.autograd.grad(loss, params)
    if check:
        leaves = [p.detach().clone().requires_grad_(True) for p in params]
        assert torch.autograd.gradcheck(loss_of, leaves, eps=1e-6, atol=1e-8, rtol=1e-6), name
    w = Writer(["generated by tools/make_transformer_fixtures.py with torch %s, %s; do not edit"
                % (torch.__version__, "float32" if twin else "float64"),
                "torch.nn.Transformer(norm_first=True, batch_first=True): Vs %d Vt %d d %d heads %d layers %d ff %d"
                % (vs, vt, d, heads, layers, ff)] + agreement +
               ["format: docs/fixtures.md; values row-major %.17g; grad.<x> = d loss / d <x>"])
    w.ints("config", [vs, vt, d, heads, layers, ff])
    w.tensor("label_smoothing", torch.tensor([smoothing]))
    w.ints("src", src)
    w.ints("src_len", lens)
    w.ints("tgt_in", tgt_in)
    w.ints("tgt_out", tgt_out)
    for key, p in zip(names, params):
        w.tensor(key, p)
    w.tensor("loss", loss.reshape(1))
    for key, g in zip(names, grads):
        w.tensor("grad." + key, g)
    return {name: w.save(os.path.join(out, name))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/torch")
    ap.add_argument("--check", action="store_true", help="also run torch.autograd.gradcheck (slower)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    for name, spec in FIXTURES.items():
        for n, size in make(a.out, name, spec, a.check).items():
            print("%6d  %s" % (size, os.path.join(a.out, n)))
    for name, twin in FLOAT32.items():
        for n, size in make(a.out, name, FIXTURES[twin], False, twin).items():
            print("%6d  %s" % (size, os.path.join(a.out, n)))


if __name__ == "__main__":
    sys.exit(main())
