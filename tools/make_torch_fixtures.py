#!/usr/bin/python3
"""Writes the PyTorch reference fixtures that the C model tests compare
against (to 1e-10): a GRU cell, every attention variant, full seq2seq
losses with the gradient of every parameter, the optimizers after
gradient clipping, and the label-smoothed output loss; and float32
twins of two seq2seq fixtures (SEQ2SEQ_FLOAT32, files *_f32.txt): the
same draws rounded to float32, the loss and gradients computed by torch in
float32, which a float32 model matches to ~1e-5 (tests/test_models.c).

Run by hand with Debian's python3 (torch 1.13; the pyenv python3 first on
PATH has no torch):

    /usr/bin/python3 tools/make_torch_fixtures.py [--out tests/fixtures/torch] [--check]

Neither the build nor the tests run this; its output is committed. The
output is deterministic (a fixed seed per file, float64 everywhere but the
*_f32.txt files, which use their float64 twin's seed). --check
also runs finite-difference gradient checks and cross-checks against
torch.nn.GRU / nn.GRUCell (slower; the files are the same either way).

The model is docs/models.md, written out step by step (no nn.GRU packing):
parameter names are the registry names of that page, batches are time-major,
the attention memory is (B, S, M). Every seq2seq fixture is also computed by
torch's modules, RecurrentSeq2Seq (the encoder's nn.GRU over packed
sequences, the decoder's nn.GRUCell, and the same for every cell of CELLS),
loaded with load_state_dict(strict=True): its loss within 1e-13 and every
gradient within 1e-12 of the step-by-step model's, or the script stops.

Format (docs/fixtures.md): lines starting with '#' are comments; each record
is two lines,

    tensor <name> <ndim> <d0> [<d1> [<d2>]]
    <values, row-major, %.17g, single spaces>
    ints <name> <n>
    <n integers>

A scalar is "tensor loss 1 1".

Readings of docs/models.md that the page leaves implicit (the C code must
match them):
  * scaled-dot divides by sqrt(H) (the query size), also when M = 2H.
  * dot / scaled-dot with a bidirectional encoder: k_j = K m_j with
    K = decoder.attention.key.weight (H, M), no bias; the context is still
    the weighted sum of the raw memory rows m_j (size M).
  * concat / bahdanau: e_j = v . tanh(query.weight q + key.weight m_j +
    key.bias); the only bias is key.bias; v.weight is 1-D (H).
  * general: e_j = q . (W m_j), W = decoder.attention.W.weight (H, M), no bias.
  * Masking: scores at positions j >= length are set to -inf before the
    softmax, so their weights are exactly 0 (and so is their gradient).
  * Luong: h~_t = tanh(combine.weight [c_t; s_t]) -- context first, then
    state; no bias. Input feeding h~_0 = 0. Decoder GRU input is [e_t; h~_{t-1}].
  * Bahdanau: the GRU input is [e_t; c_t] -- embedding first.
  * Bidirectional memory row j = [fwd_j; bwd_j]; the bridge input is
    [final_fwd; final_bwd] where final_fwd is the forward state at the true
    length and final_bwd is the backward state after position 0.
  * Encoder memory at padded positions: forward half = the carried state
    (state at the true length), backward half = 0 (the masked reverse GRU has
    not started yet). These rows get weight exactly 0, so they only matter
    for the `memory` record.
  * Decoder: no masking of the decoder state; pad tokens in tgt_in are
    embedded and fed like any token, but their steps have pad targets, so
    they do not reach the loss.
  * Loss: sum over positions with tgt_out != 0 of -log softmax(logits)[y],
    divided by the number of such positions (one mean over the whole batch,
    not per sentence).
  * Embedding <pad> rows (row 0) hold random values and are looked up (src
    and tgt_in contain pads); their gradient is zero (padding_idx semantics).
    Note: with the masking above, the true gradient of row 0 is zero anyway
    (the finite-difference check confirms it).
"""
import argparse
import contextlib
import math
import os
import sys
import zlib

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

PAD, SOS, EOS, UNK = 0, 1, 2, 3
ATTN_TYPES = ["dot", "scaled-dot", "general", "concat", "bahdanau"]


# --------------------------------------------------------------------- output

def fmt(v):
    return "%.17g" % v


class Writer:
    def __init__(self, header_lines):
        self.lines = ["# " + h for h in header_lines]
        self.names = set()

    def _name(self, name):
        assert " " not in name and name not in self.names, name
        self.names.add(name)

    def tensor(self, name, t):
        self._name(name)
        t = t.detach().to(torch.float64).contiguous()
        shape = list(t.shape) if t.dim() > 0 else [1]
        assert 1 <= len(shape) <= 3, (name, shape)
        vals = t.reshape(-1).tolist()
        assert all(math.isfinite(v) for v in vals), name
        self.lines.append("tensor %s %d %s" % (name, len(shape), " ".join(map(str, shape))))
        self.lines.append(" ".join(fmt(v) for v in vals))

    def ints(self, name, values):
        self._name(name)
        values = [int(v) for v in (values.reshape(-1).tolist()
                                   if torch.is_tensor(values) else values)]
        self.lines.append("ints %s %d" % (name, len(values)))
        self.lines.append(" ".join(map(str, values)))

    def save(self, path):
        with open(path, "w", encoding="ascii") as f:
            f.write("\n".join(self.lines) + "\n")
        size = os.path.getsize(path)
        assert size < 50 * 1024, (path, size)
        return size


def seed_for(name):
    # a fixed seed per file, so adding a fixture does not change the others
    return zlib.crc32(name.encode("ascii"))


@contextlib.contextmanager
def default_dtype(dtype):
    """Tensors made without a dtype (zeros, masks) are `dtype` inside."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def header(title, extra, dtype="float64"):
    return ["generated by tools/make_torch_fixtures.py with torch %s, %s; do not edit"
            % (torch.__version__, dtype),
            title] + extra + [
            "format: docs/fixtures.md; values row-major %.17g; grad.<x> = d loss / d <x>"]


# ---------------------------------------------------------------------- model

def gru(x, h, w_ih, w_hh, b_ih, b_hh):
    """One GRU step, torch's own cell (rows r, z, n; b_hn inside the r product)."""
    return torch.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)


def gru_explicit(x, h, w_ih, w_hh, b_ih, b_hh):
    """docs/models.md's equations, for cross-checking torch.gru_cell."""
    gx = x @ w_ih.t() + b_ih
    gh = h @ w_hh.t() + b_hh
    H = h.shape[1]
    r = torch.sigmoid(gx[:, :H] + gh[:, :H])
    z = torch.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
    n = torch.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1 - z) * n + z * h


def lstm(x, state, w_ih, w_hh, b_ih, b_hh):
    """One LSTM step, torch's own cell (rows i, f, g, o); state = (h, c)."""
    return torch.lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh)


def lstm_explicit(x, state, w_ih, w_hh, b_ih, b_hh):
    """docs/models.md's equations, for cross-checking torch.lstm_cell."""
    h, c = state
    i, f, g, o = (x @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh).chunk(4, dim=1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


# The recurrent cells (the rows of models/cell.c): the gate blocks its
# weights stack, the parts of its state (h first), one step of its formula,
# and torch's modules for the encoder's layer and the decoder's cell. A
# state of one part is h itself; of more, a tuple (h, ...).
CELLS = {
    "gru": dict(gates=3, parts=1, step=gru, layer=torch.nn.GRU, cell=torch.nn.GRUCell),
    "lstm": dict(gates=4, parts=2, step=lstm, layer=torch.nn.LSTM, cell=torch.nn.LSTMCell),
}


def output(state):
    """h, part 0 of a state."""
    return state[0] if isinstance(state, tuple) else state


def state_of(cell, h):
    """The state whose h is h and whose other parts are 0 (the bridge's)."""
    parts = CELLS[cell]["parts"]
    return h if parts == 1 else (h,) + tuple(torch.zeros_like(h) for _ in range(parts - 1))


def keep(mask, new, old):
    """new where mask holds, else old, for every part of a state."""
    if isinstance(new, tuple):
        return tuple(torch.where(mask, n, o) for n, o in zip(new, old))
    return torch.where(mask, new, old)


def embed(ids, weight):
    # padding_idx=0: forward looks up row 0 like any row, its gradient is zero
    return F.embedding(ids, weight, padding_idx=PAD)


def length_mask(lengths, S):
    """(B, S) bool, True at real positions j < length."""
    return torch.arange(S).unsqueeze(0) < lengths.unsqueeze(1)


def attn_param_specs(attn, H, M):
    """Registry names and shapes of the attention parameters (docs/models.md)."""
    p = "decoder.attention."
    if attn in ("dot", "scaled-dot"):
        return [(p + "key.weight", (H, M))] if M != H else []
    if attn == "general":
        return [(p + "W.weight", (H, M))]
    if attn in ("concat", "bahdanau"):
        return [(p + "query.weight", (H, H)), (p + "key.weight", (H, M)),
                (p + "key.bias", (H,)), (p + "v.weight", (H,))]
    if attn == "none":
        return []
    raise ValueError(attn)


def attn_keys(attn, P, memory):
    """Per-batch keys (B, S, H or M), independent of the decoder step."""
    p = "decoder.attention."
    if attn in ("dot", "scaled-dot"):
        return memory @ P[p + "key.weight"].t() if p + "key.weight" in P else memory
    if attn == "general":
        return memory @ P[p + "W.weight"].t()
    if attn in ("concat", "bahdanau"):
        return memory @ P[p + "key.weight"].t() + P[p + "key.bias"]
    raise ValueError(attn)


def attend(attn, P, q, memory, keys, mask):
    """q (B, H), memory (B, S, M), keys from attn_keys, mask (B, S).
    Returns context (B, M) and weights (B, S)."""
    p = "decoder.attention."
    H = q.shape[1]
    if attn in ("dot", "general"):
        e = torch.einsum("bh,bsh->bs", q, keys)
    elif attn == "scaled-dot":
        e = torch.einsum("bh,bsh->bs", q, keys) / math.sqrt(H)
    elif attn in ("concat", "bahdanau"):
        qp = q @ P[p + "query.weight"].t()                        # (B, H)
        e = torch.tanh(keys + qp.unsqueeze(1)) @ P[p + "v.weight"]  # (B, S)
    else:
        raise ValueError(attn)
    e = e.masked_fill(~mask, float("-inf"))
    a = torch.softmax(e, dim=1)
    c = torch.einsum("bs,bsm->bm", a, memory)
    return c, a


def encoder(P, src, src_len, bi, cell="gru"):
    """src (S, B) time-major. Returns memory (B, S, M) and the decoder's
    initial state s0 (h (B, H), or a tuple of the cell's parts)."""
    S, B = src.shape
    step, p = CELLS[cell]["step"], "encoder.%s." % cell
    H = P[p + "weight_hh_l0"].shape[1]
    x = embed(src, P["encoder.embedding.weight"])                  # (S, B, E)
    mask = length_mask(src_len, S).t().unsqueeze(2)                # (S, B, 1)
    w = [P[p + n + "_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    h = state_of(cell, torch.zeros(B, H))
    fwd = []
    for t in range(S):
        h = keep(mask[t], step(x[t], h, *w), h)
        fwd.append(output(h))
    final_fwd = h
    fwd = torch.stack(fwd, dim=1)                                  # (B, S, H)
    if not bi:
        return fwd, final_fwd
    w = [P[p + n + "_l0_reverse"]
         for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    h = state_of(cell, torch.zeros(B, H))
    bwd = [None] * S
    for t in range(S - 1, -1, -1):
        h = keep(mask[t], step(x[t], h, *w), h)
        bwd[t] = output(h)
    final_bwd = h
    memory = torch.cat([fwd, torch.stack(bwd, dim=1)], dim=2)      # (B, S, 2H)
    s0 = torch.tanh(torch.cat([output(final_fwd), output(final_bwd)], dim=1) @ P["encoder.bridge.weight"].t()
                    + P["encoder.bridge.bias"])
    return memory, state_of(cell, s0)


def seq2seq_param_specs(decoder, attn, bi, Vs, Vt, E, H, cell="gru"):
    M = 2 * H if bi else H
    G = CELLS[cell]["gates"] * H
    specs = [("encoder.embedding.weight", (Vs, E))]
    for sfx in ["_l0"] + (["_l0_reverse"] if bi else []):
        specs += [("encoder.%s.weight_ih%s" % (cell, sfx), (G, E)),
                  ("encoder.%s.weight_hh%s" % (cell, sfx), (G, H)),
                  ("encoder.%s.bias_ih%s" % (cell, sfx), (G,)),
                  ("encoder.%s.bias_hh%s" % (cell, sfx), (G,))]
    if bi:
        specs += [("encoder.bridge.weight", (H, 2 * H)), ("encoder.bridge.bias", (H,))]
    specs += attn_param_specs(attn, H, M)
    if attn == "none":
        gin = E
    elif decoder == "bahdanau":
        gin = E + M
    else:
        gin = E + H
    specs += [("decoder.embedding.weight", (Vt, E)),
              ("decoder.%s.weight_ih" % cell, (G, gin)),
              ("decoder.%s.weight_hh" % cell, (G, H)),
              ("decoder.%s.bias_ih" % cell, (G,)),
              ("decoder.%s.bias_hh" % cell, (G,))]
    if decoder == "luong" and attn != "none":
        specs += [("decoder.combine.weight", (H, M + H))]
    specs += [("decoder.out.weight", (Vt, H)), ("decoder.out.bias", (Vt,))]
    return specs


def decode(P, decoder, attn, step, memory, s0, src_len, tgt_in, tgt_out):
    """The decoder with teacher forcing ratio 1 from s0 over memory, its
    cell's step(x, state) -> state. Returns loss and intermediates."""
    B, S, M = memory.shape
    T = tgt_in.shape[0]
    mask = length_mask(src_len, S)
    keys = attn_keys(attn, P, memory) if attn != "none" else None
    s = s0
    htil = torch.zeros_like(output(s0))                            # Luong h~_0 = 0
    outs, weights = [], []
    for t in range(T):
        e = embed(tgt_in[t], P["decoder.embedding.weight"])        # (B, E)
        if attn == "none":
            s = step(e, s)
            o = output(s)
        elif decoder == "bahdanau":
            c, a = attend(attn, P, output(s), memory, keys, mask)
            s = step(torch.cat([e, c], dim=1), s)
            o = output(s)
            weights.append(a)
        else:
            s = step(torch.cat([e, htil], dim=1), s)
            c, a = attend(attn, P, output(s), memory, keys, mask)
            htil = torch.tanh(torch.cat([c, output(s)], dim=1) @ P["decoder.combine.weight"].t())
            o = htil
            weights.append(a)
        outs.append(o)
    logits = torch.stack(outs) @ P["decoder.out.weight"].t() + P["decoder.out.bias"]  # (T,B,Vt)
    logp = torch.log_softmax(logits, dim=2)
    nll = -logp.gather(2, tgt_out.unsqueeze(2)).squeeze(2)        # (T, B)
    real = tgt_out != PAD
    loss = nll[real].sum() / real.sum()
    return loss, dict(memory=memory, s0=output(s0), logits=logits,
                      attn=torch.stack(weights) if weights else None)


def seq2seq(P, decoder, attn, bi, src, src_len, tgt_in, tgt_out, cell="gru"):
    """Teacher forcing ratio 1. Returns loss and intermediates."""
    memory, s0 = encoder(P, src, src_len, bi, cell)
    g = [P["decoder.%s.%s" % (cell, n)] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    step = CELLS[cell]["step"]
    return decode(P, decoder, attn, lambda x, s: step(x, s, *g), memory, s0, src_len, tgt_in, tgt_out)


class Weight(torch.nn.Module):
    """A module holding one parameter named weight: decoder.attention.v.weight
    is 1-D (H), which no nn.Linear holds."""

    def __init__(self, *shape):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(*shape))


class RecurrentSeq2Seq(torch.nn.Module):
    """The recurrent model of docs/models.md as torch modules: the encoder's
    nn.GRU / nn.LSTM over packed sequences, the decoder's nn.GRUCell /
    nn.LSTMCell, the attention of attend(). Its state_dict's keys are
    tinyseq's parameter names, so an export loads into it with
    load_state_dict(strict=True) (tools/npz_dev_loss.py), and every seq2seq
    fixture is checked against it (make_seq2seq)."""

    def __init__(self, cell, decoder, attn, bi, Vs, Vt, E, H):
        super().__init__()
        self.cell, self.decoder_type, self.attn, self.bi = cell, decoder, attn, bi
        M = 2 * H if bi else H
        self.encoder, self.decoder = torch.nn.Module(), torch.nn.Module()
        self.encoder.embedding = torch.nn.Embedding(Vs, E, padding_idx=PAD)
        setattr(self.encoder, cell, CELLS[cell]["layer"](E, H, bidirectional=bi))
        if bi:
            self.encoder.bridge = torch.nn.Linear(2 * H, H)
        self.decoder.embedding = torch.nn.Embedding(Vt, E, padding_idx=PAD)
        attention = self.decoder.attention = torch.nn.Module()
        if attn in ("dot", "scaled-dot") and bi:
            attention.key = torch.nn.Linear(M, H, bias=False)
        elif attn == "general":
            attention.W = torch.nn.Linear(M, H, bias=False)
        elif attn in ("concat", "bahdanau"):
            attention.query = torch.nn.Linear(H, H, bias=False)
            attention.key = torch.nn.Linear(M, H)
            attention.v = Weight(H)
        gin = E if attn == "none" else E + M if decoder == "bahdanau" else E + H
        setattr(self.decoder, cell, CELLS[cell]["cell"](gin, H))
        if decoder == "luong" and attn != "none":
            self.decoder.combine = torch.nn.Linear(M + H, H, bias=False)
        self.decoder.out = torch.nn.Linear(H, Vt)

    def forward(self, src, src_len, tgt_in, tgt_out):
        """Time-major ids as make_batch's; returns loss and intermediates as seq2seq()."""
        S, B = src.shape
        x = self.encoder.embedding(src)
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, src_len, enforce_sorted=False)
        out, final = getattr(self.encoder, self.cell)(packed)
        memory = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=S)[0].transpose(0, 1)  # (B, S, M)
        finals = final if isinstance(final, tuple) else (final,)  # each part (directions, B, H)
        if self.bi:
            h0 = torch.tanh(self.encoder.bridge(torch.cat([finals[0][0], finals[0][1]], dim=1)))
            s0 = state_of(self.cell, h0)
        else:
            s0 = tuple(f[0] for f in finals) if len(finals) > 1 else finals[0][0]
        cell = getattr(self.decoder, self.cell)
        return decode(dict(self.named_parameters()), self.decoder_type, self.attn, cell, memory, s0,
                      src_len, tgt_in, tgt_out)


# ------------------------------------------------------------------- fixtures

def randn(*shape):
    return torch.randn(*shape)


def make_gru_cell(out):
    name = "gru_cell.txt"
    torch.manual_seed(seed_for(name))
    I, H, B = 5, 4, 3
    cell = torch.nn.GRUCell(I, H)
    with torch.no_grad():
        for p in cell.parameters():
            p.copy_(randn(*p.shape) * 0.5)
    x = randn(B, I).requires_grad_()
    h = randn(B, H).requires_grad_()
    up = randn(B, H)
    h_next = cell(x, h)
    w = dict(cell.named_parameters())
    ref = gru_explicit(x, h, w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"])
    assert torch.allclose(ref, h_next, rtol=0, atol=1e-14)
    loss = (h_next * up).sum()
    loss.backward()
    wr = Writer(header("GRU cell, torch.nn.GRUCell(in=5, H=4), batch B=3",
                       ["dims: in=5 H=4 B=3; loss = sum(h_next * upstream)",
                        "gate rows r, z, n (torch order)"]))
    wr.tensor("x", x)
    wr.tensor("h", h)
    for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        wr.tensor(n, w[n])
    wr.tensor("upstream", up)
    wr.tensor("h_next", h_next)
    wr.tensor("loss", loss)
    wr.tensor("grad.x", x.grad)
    wr.tensor("grad.h", h.grad)
    for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        wr.tensor("grad." + n, w[n].grad)
    return {name: wr.save(os.path.join(out, name))}


def make_lstm_cell(out):
    name = "lstm_cell.txt"
    torch.manual_seed(seed_for(name))
    I, H, B = 5, 4, 3
    cell = torch.nn.LSTMCell(I, H)
    with torch.no_grad():
        for p in cell.parameters():
            p.copy_(randn(*p.shape) * 0.5)
    x = randn(B, I).requires_grad_()
    h = randn(B, H).requires_grad_()
    c = randn(B, H).requires_grad_()
    up_h, up_c = randn(B, H), randn(B, H)
    h_next, c_next = cell(x, (h, c))
    w = dict(cell.named_parameters())
    ref = lstm_explicit(x, (h, c), w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"])
    assert torch.allclose(ref[0], h_next, rtol=0, atol=1e-14) and torch.allclose(ref[1], c_next, rtol=0, atol=1e-14)
    loss = (h_next * up_h).sum() + (c_next * up_c).sum()
    loss.backward()
    wr = Writer(header("LSTM cell, torch.nn.LSTMCell(in=5, H=4), batch B=3",
                       ["dims: in=5 H=4 B=3; loss = sum(h_next * upstream.h) + sum(c_next * upstream.c)",
                        "gate rows i, f, g, o (torch order)"]))
    wr.tensor("x", x)
    wr.tensor("h", h)
    wr.tensor("c", c)
    for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        wr.tensor(n, w[n])
    wr.tensor("upstream.h", up_h)
    wr.tensor("upstream.c", up_c)
    wr.tensor("h_next", h_next)
    wr.tensor("c_next", c_next)
    wr.tensor("loss", loss)
    wr.tensor("grad.x", x.grad)
    wr.tensor("grad.h", h.grad)
    wr.tensor("grad.c", c.grad)
    for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        wr.tensor("grad." + n, w[n].grad)
    return {name: wr.save(os.path.join(out, name))}


def make_attention(out, attn, bi, check):
    name = "attention_%s%s.txt" % (attn, "_bi" if bi else "")
    torch.manual_seed(seed_for(name))
    B, S, H = 3, 5, 4
    M = 2 * H if bi else H
    lengths = torch.tensor([5, 3, 1])
    specs = attn_param_specs(attn, H, M)
    P = {n: (randn(*shape) * 0.5).requires_grad_() for n, shape in specs}
    q = randn(B, H).requires_grad_()
    memory = randn(B, S, M).requires_grad_()
    up_c = randn(B, M)
    up_w = randn(B, S)
    mask = length_mask(lengths, S)

    def f(q, memory, *pv):
        PP = dict(zip([n for n, _ in specs], pv))
        c, a = attend(attn, PP, q, memory, attn_keys(attn, PP, memory), mask)
        return c, a, (c * up_c).sum() + (a * up_w).sum()

    pv = [P[n] for n, _ in specs]
    context, weights, loss = f(q, memory, *pv)
    assert bool((weights[~mask] == 0).all()), "masked weights must be exactly 0"
    assert torch.allclose(weights.sum(1), torch.ones(B), rtol=0, atol=1e-14)
    loss.backward()
    assert bool((memory.grad[~mask] == 0).all()), "masked memory rows must get zero gradient"
    if check:
        assert torch.autograd.gradcheck(lambda *a: f(*a)[2], (q, memory, *pv),
                                        eps=1e-6, atol=1e-7, rtol=1e-6)
    wr = Writer(header("attention %s, %s memory (M = %d)" % (attn, "bidirectional" if bi else
                                                            "unidirectional", M),
                       ["dims: B=%d S=%d H=%d M=%d; lengths 5 3 1 (mask j < length)" % (B, S, H, M),
                        "loss = sum(context * upstream.context) + sum(weights * upstream.weights)",
                        "parameters: " + (" ".join(n for n, _ in specs) or "(none)")]))
    wr.tensor("q", q)
    wr.tensor("memory", memory)
    wr.ints("lengths", lengths)
    for n, _ in specs:
        wr.tensor(n, P[n])
    wr.tensor("upstream.context", up_c)
    wr.tensor("upstream.weights", up_w)
    wr.tensor("context", context)
    wr.tensor("weights", weights)
    wr.tensor("loss", loss)
    wr.tensor("grad.q", q.grad)
    wr.tensor("grad.memory", memory.grad)
    for n, _ in specs:
        wr.tensor("grad." + n, P[n].grad)
    return {name: wr.save(os.path.join(out, name))}


# The batch of every seq2seq fixture (time-major, pad 0, real ids 4..V-1).
VS, VT, E, H = 7, 8, 3, 4
SRC_LEN = [5, 3, 2]
TGT_GOLD_LEN = [3, 5, 1]          # gold tokens; + <eos> -> 4, 6, 2; T = 6


def make_batch():
    B = len(SRC_LEN)
    S = max(SRC_LEN)
    T = max(TGT_GOLD_LEN) + 1
    src = torch.zeros(S, B, dtype=torch.long)
    tgt_in = torch.zeros(T, B, dtype=torch.long)
    tgt_out = torch.zeros(T, B, dtype=torch.long)
    for b in range(B):
        src[:SRC_LEN[b], b] = torch.randint(4, VS, (SRC_LEN[b],))
        gold = torch.randint(4, VT, (TGT_GOLD_LEN[b],))
        n = TGT_GOLD_LEN[b]
        tgt_in[0, b] = SOS
        tgt_in[1:n + 1, b] = gold
        tgt_out[:n, b] = gold
        tgt_out[n, b] = EOS
    return src, torch.tensor(SRC_LEN), tgt_in, tgt_out


def make_seq2seq(out, decoder, attn, bi, check, float32=False, cell="gru"):
    """float32: the float64 fixture's draws rounded to float32, and the loss
    and gradients torch computes from them in float32. A cell other than the
    GRU, the one cell of the first files, is named in the file name
    (seq2seq_lstm_...) and the title."""
    named = "" if cell == "gru" else cell + "_"
    twin = "seq2seq_%s%s_%s%s.txt" % (named, decoder, attn, "_bi" if bi else "")
    name = twin.replace(".txt", "_f32.txt") if float32 else twin
    torch.manual_seed(seed_for(twin))
    src, src_len, tgt_in, tgt_out = make_batch()
    S, B = src.shape
    T = tgt_in.shape[0]
    M = 2 * H if bi else H
    assert bool((src == PAD).any()) and bool((tgt_in == PAD).any())
    specs = seq2seq_param_specs(decoder, attn, bi, VS, VT, E, H, cell)
    # all parameters ~ N(0, 1) * 0.5, embedding <pad> rows included
    P = {n: (randn(*shape) * 0.5).requires_grad_() for n, shape in specs}
    names = [n for n, _ in specs]

    def f(*pv):
        return seq2seq(dict(zip(names, pv)), decoder, attn, bi, src, src_len, tgt_in, tgt_out, cell)

    agreement = []
    if float32:
        P = {n: P[n].detach().to(torch.float32).requires_grad_() for n in names}
        # torch's own float32 error: float64 on the same (rounded) weights
        exact = [P[n].detach().to(torch.float64).requires_grad_() for n in names]
        loss64, _ = f(*exact)
        grads64 = torch.autograd.grad(loss64, exact)
        with default_dtype(torch.float32):
            loss, aux = f(*[P[n] for n in names])
            loss.backward()
        rel = abs(loss.item() - loss64.item()) / abs(loss64.item())
        worst = max((P[n].grad.to(torch.float64) - g).abs().max().item() / max(g.abs().max().item(), 1e-300)
                    for n, g in zip(names, grads64))
        agreement = ["torch float32 against torch float64 on these weights: loss %.2g relative, "
                     "gradients at most %.2g of their tensor's largest" % (rel, worst)]
        check = False  # gradcheck is float64's
    else:
        loss, aux = f(*[P[n] for n in names])
        loss.backward()
        check_modules(P, names, cell, decoder, attn, bi, src, src_len, tgt_in, tgt_out, loss)
    if aux["attn"] is not None:
        smask = ~length_mask(src_len, S)
        assert bool((aux["attn"][:, smask] == 0).all()), "masked weights must be exactly 0"
    for n in ("encoder.embedding.weight", "decoder.embedding.weight"):
        assert bool((P[n].grad[PAD] == 0).all())
    if check:
        check_seq2seq(f, P, names, decoder, attn, bi, src, src_len, tgt_in, tgt_out, cell)
    dims = "Vs=%d Vt=%d E=%d H=%d M=%d B=%d S=%d T=%d" % (VS, VT, E, H, M, B, S, T)
    wr = Writer(header(
        "seq2seq loss, %s decoder, attention %s, %s encoder%s, teacher forcing ratio 1"
        % (decoder, attn, "bidirectional" if bi else "unidirectional", "" if cell == "gru" else ", %s cells" % cell),
        ["dims: " + dims,
         "ints dims = Vs Vt E H M B S T; src (S, B), tgt_in (T, B), tgt_out (T, B) time-major",
         "src_lengths %s, tgt gold lengths %s (+ <eos>)" % (SRC_LEN, TGT_GOLD_LEN),
         "loss = mean over tgt_out != 0 of -log softmax(logits)[tgt_out]",
         "intermediates: memory (B, S, M), s0 (B, H), logits (T, B, Vt)"
         + (", attn (T, B, S)" if aux["attn"] is not None else ""),
         "parameters: " + " ".join(names)] + agreement, "float32" if float32 else "float64"))
    wr.ints("dims", [VS, VT, E, H, M, B, S, T])
    wr.ints("src", src)
    wr.ints("src_lengths", src_len)
    wr.ints("tgt_in", tgt_in)
    wr.ints("tgt_out", tgt_out)
    for n in names:
        wr.tensor(n, P[n])
    wr.tensor("memory", aux["memory"])
    wr.tensor("s0", aux["s0"])
    wr.tensor("logits", aux["logits"])
    if aux["attn"] is not None:
        wr.tensor("attn", aux["attn"])
    wr.tensor("loss", loss)
    for n in names:
        wr.tensor("grad." + n, P[n].grad)
    return {name: wr.save(os.path.join(out, name))}


def check_modules(P, names, cell, decoder, attn, bi, src, src_len, tgt_in, tgt_out, loss):
    """The fixture's loss and gradients (the formulas above) against torch's
    modules, RecurrentSeq2Seq loaded with load_state_dict(strict=True): the
    parameters' names and layout are torch's, and the cells, packing and all,
    compute what the formulas do."""
    model = RecurrentSeq2Seq(cell, decoder, attn, bi, VS, VT, E, H)
    model.load_state_dict({n: P[n].detach() for n in names}, strict=True)
    got, _ = model(src, src_len, tgt_in, tgt_out)
    got.backward()
    assert abs(got.item() - loss.item()) <= 1e-13 * abs(loss.item()), (got.item(), loss.item())
    worst = 0.0
    for n, p in model.named_parameters():
        want = P[n].grad
        err = (p.grad - want).abs().max().item() / max(want.abs().max().item(), 1e-300)
        assert err <= 1e-12, (n, err)
        worst = max(worst, err)
    return worst


def check_seq2seq(f, P, names, decoder, attn, bi, src, src_len, tgt_in, tgt_out, cell="gru"):
    """Finite differences (gradcheck) and a cross-check of the encoder against
    torch's nn.GRU / nn.LSTM."""
    pv = [P[n].detach().clone().requires_grad_() for n in names]
    # the full numeric Jacobian, embedding pad rows included: their numeric
    # gradient must be 0, which is what padding_idx reports
    assert torch.autograd.gradcheck(lambda *a: f(*a)[0], tuple(pv),
                                    eps=1e-6, atol=1e-7, rtol=1e-6)
    # encoder against torch.nn.GRU on packed sequences (uses torch's own
    # masking): final states and memory rows at real positions must agree
    S, B = src.shape
    layer = CELLS[cell]["layer"](E, H, bidirectional=bi)
    with torch.no_grad():
        for n, p in layer.named_parameters():
            p.copy_(P["encoder.%s.%s" % (cell, n)])
        x = F.embedding(src, P["encoder.embedding.weight"])
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, src_len, enforce_sorted=False)
        o, hn = layer(packed)
        hn = output(hn)
        o, _ = torch.nn.utils.rnn.pad_packed_sequence(o, total_length=S)   # (S, B, M)
        memory, s0 = encoder(P, src, src_len, bi, cell)
        s0 = output(s0)
        mask = length_mask(src_len, S)
        assert torch.allclose(o.transpose(0, 1)[mask], memory[mask], rtol=0, atol=1e-14)
        if bi:
            br = torch.tanh(torch.cat([hn[0], hn[1]], 1) @ P["encoder.bridge.weight"].t()
                            + P["encoder.bridge.bias"])
            assert torch.allclose(br, s0, rtol=0, atol=1e-14)
            # padded memory rows: forward half carried, backward half 0
            for b in range(B):
                L = int(src_len[b])
                if L < S:
                    assert bool((memory[b, L:, :H] == memory[b, L - 1, :H]).all())
                    assert bool((memory[b, L:, H:] == 0).all())
        else:
            assert torch.allclose(hn[0], s0, rtol=0, atol=1e-14)
    print("  check ok: gradcheck over %d parameters, encoder == nn.%s (packed)"
          % (sum(p.numel() for p in pv), CELLS[cell]["layer"].__name__))


SEQ2SEQ = [
    # (decoder, attention, bidirectional, cell)
    ("bahdanau", "bahdanau", False, "gru"),
    ("luong", "general", False, "gru"),
    ("luong", "dot", True, "gru"),
    ("bahdanau", "none", False, "gru"),
    ("bahdanau", "bahdanau", True, "gru"),
    ("luong", "concat", False, "gru"),
    ("luong", "scaled-dot", True, "gru"),
    ("bahdanau", "bahdanau", False, "lstm"),
    ("luong", "general", True, "lstm"),
]
# float32 twins (*_f32.txt) of two of them: the GRU with Bahdanau's decoder,
# and with Luong's over a bidirectional encoder (the key projection too).
# (An LSTM twin measured torch's own float32 gradients 1.2e-5 of their
# tensor's largest from its float64 ones, past the twins' 1e-5: the LSTM's
# float32 is checked against its float64 instead, tests/test_models.c.)
SEQ2SEQ_FLOAT32 = [
    ("bahdanau", "bahdanau", False, "gru"),
    ("luong", "dot", True, "gru"),
]


# ------------------------------------------------------------------ optimizer


def make_optimizer(out):
    """torch.optim.Adam, SGD (momentum) and AdamW after clip_grad_norm_, 4
    steps on two parameters; steps 1 and 3 have gradients large enough to be
    clipped. AdamW keeps torch's default weight decay (0.01), so the fixture
    pins tinyseq's default too."""
    name = "optimizer.txt"
    torch.manual_seed(seed_for(name))
    shapes = {"a": (3, 4), "b": (5,)}
    start = {n: randn(*s) for n, s in shapes.items()}
    steps = 4
    grads = [{n: randn(*s) * (3.0 if t % 2 == 0 else 0.1) for n, s in shapes.items()}
             for t in range(steps)]
    max_norm = 1.0
    wr = Writer(header("optimizers: clip_grad_norm_(max_norm=1) then one optimizer step, "
                       "4 steps", ["adam: torch.optim.Adam(lr=0.01) (betas 0.9 0.999, eps 1e-8)",
                                   "sgd: torch.optim.SGD(lr=0.1, momentum=0.9)",
                                   "adamw: torch.optim.AdamW(lr=0.01) (weight_decay 0.01, torch's default; "
                                   "betas and eps as adam's)",
                                   "grad.<p>.<t> is the raw gradient of step t (before clipping);",
                                   "<optim>.norm.<t> the norm clip_grad_norm_ returned;",
                                   "<optim>.<p>.<t> the parameter after step t"]))
    for n in shapes:
        wr.tensor("start." + n, start[n])
    for t in range(steps):
        for n in shapes:
            wr.tensor("grad.%s.%d" % (n, t), grads[t][n])
    for optim in ("adam", "sgd", "adamw"):
        params = {n: start[n].clone().requires_grad_() for n in shapes}
        if optim == "adam":
            opt = torch.optim.Adam(params.values(), lr=0.01)
        elif optim == "sgd":
            opt = torch.optim.SGD(params.values(), lr=0.1, momentum=0.9)
        else:
            opt = torch.optim.AdamW(params.values(), lr=0.01)
        for t in range(steps):
            for n in shapes:
                params[n].grad = grads[t][n].clone()
            norm = torch.nn.utils.clip_grad_norm_(params.values(), max_norm)
            opt.step()
            wr.tensor("%s.norm.%d" % (optim, t), norm)
            for n in shapes:
                wr.tensor("%s.%s.%d" % (optim, n, t), params[n])
    return {name: wr.save(os.path.join(out, name))}


# ------------------------------------------------------------ label smoothing


def make_label_smoothing(out):
    """F.cross_entropy(x W^T + b, t, ignore_index=0, label_smoothing=e): the
    fused output projection + loss node with PyTorch's label smoothing."""
    name = "label_smoothing.txt"
    torch.manual_seed(seed_for(name))
    N, H, V = 6, 4, 9
    x = randn(N, H).requires_grad_()
    w = randn(V, H).requires_grad_()
    b = randn(V).requires_grad_()
    targets = torch.tensor([3, 0, 8, 1, 0, 5])  # rows 1 and 4 are padding
    wr = Writer(header("label smoothing: F.cross_entropy(x W^T + b, targets, ignore_index=0, "
                       "label_smoothing=e)", ["dims: N=6 H=4 V=9; e = 0.1 and 0.25; "
                                              "loss.<e> and grad.<x>.<e> per value of e"]))
    wr.tensor("x", x)
    wr.tensor("W", w)
    wr.tensor("b", b)
    wr.ints("targets", targets)
    for e in (0.1, 0.25):
        for t in (x, w, b):
            t.grad = None
        loss = F.cross_entropy(x @ w.t() + b, targets, ignore_index=0, label_smoothing=e)
        loss.backward()
        plain = F.cross_entropy(x @ w.t() + b, targets, ignore_index=0)
        wr.tensor("loss.%g" % e, loss)
        wr.tensor("nll.%g" % e, plain)
        wr.tensor("grad.x.%g" % e, x.grad)
        wr.tensor("grad.W.%g" % e, w.grad)
        wr.tensor("grad.b.%g" % e, b.grad)
    return {name: wr.save(os.path.join(out, name))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/torch")
    ap.add_argument("--check", action="store_true",
                    help="also run gradcheck / nn.GRU cross-checks (slower)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    written = {}
    written.update(make_gru_cell(a.out))
    written.update(make_lstm_cell(a.out))
    for bi in (False, True):
        for attn in ATTN_TYPES:
            written.update(make_attention(a.out, attn, bi, a.check))
    for decoder, attn, bi, cell in SEQ2SEQ:
        if a.check:
            print("seq2seq %s %s %s%s" % (cell, decoder, attn, " bi" if bi else ""))
        written.update(make_seq2seq(a.out, decoder, attn, bi, a.check, cell=cell))
    for decoder, attn, bi, cell in SEQ2SEQ_FLOAT32:
        written.update(make_seq2seq(a.out, decoder, attn, bi, False, float32=True, cell=cell))
    written.update(make_optimizer(a.out))
    written.update(make_label_smoothing(a.out))
    for n in sorted(written):
        print("%6d  %s" % (written[n], os.path.join(a.out, n)))


if __name__ == "__main__":
    sys.exit(main())
