"""A trained model: load, translate, attend, eval, info."""
import ctypes
import json
import os
import threading

import numpy as np

from . import _capi
from ._capi import call, call_text, encode, lib


def _beam(beam, length_penalty):
    # C bounds the width and gives 0 its one meaning, the default width
    # (models/search.h: TS_BEAM_MAX, ts_beam_width), so the two cannot drift.
    if beam is None:
        beam = 0
    elif isinstance(beam, bool) or not isinstance(beam, int):
        raise TypeError(f"beam must be an int, not {type(beam).__name__}")
    beam = max(-2**31, min(beam, 2**31 - 1))  # within C's int, outside its bounds as it was
    if length_penalty is None:
        return beam, -1.0
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)):
        raise TypeError(f"length_penalty must be a number, not {type(length_penalty).__name__}")
    if not 0 <= length_penalty <= 100:
        raise _capi.ArgumentError(f"length_penalty {length_penalty} is outside 0..100")
    return beam, float(length_penalty)


class Attention:
    """One sentence's attention, with one shape rule for every model.

    `source` (S labels), `target` (T labels: the output words, then <eos> or
    <cut>); labels read "<unk>:word" where the model reads <unk>.
    `weights` is always (T, S), the matrix `tinyseq attend` draws by
    default: a GRU's attention, a Transformer's last layer's cross-attention
    mean over its heads (what its search attends with). `heads` is always
    (layers, heads, T, S): a Transformer's every cross-attention head, a
    GRU's one matrix as (1, 1, T, S). `head(layer, head)` is one (T, S)
    matrix of it (head=None: that layer's mean). A Transformer's `views`
    holds every attention by attend's JSON names, "cross", "enc" (S x S)
    and "dec" (T x T, causal), each a dict of "heads" (layers, heads, rows,
    cols), "mean" (layers, rows, cols) and what its "rows" and "cols" are.
    `units` says what a subword model's labels are: "pieces", or "words"
    (its pieces merged, words=True); None for a word model, whose labels
    are words. `plot()` draws what `attend --svg` draws, with matplotlib."""

    # What plot()'s title adds for each of `units`, as attend's titles say it.
    UNIT_TITLES = {"pieces": ", over subword pieces", "words": ", in words (subword pieces merged)"}

    def __init__(self, source, target, weights, attention, heads=None, views=None, units=None):
        self.source, self.target, self.weights, self.attention = source, target, weights, attention
        self.heads = weights[np.newaxis, np.newaxis] if heads is None else heads
        self.views = views or {}
        self.units = units

    @property
    def search_weights(self):
        """The search's own rows: `weights` (kept for earlier code)."""
        return self.weights

    @property
    def output(self):
        """The translation: the target labels without the last row's <eos>/<cut>."""
        return " ".join(self.target[:-1])

    def head(self, layer=-1, head=None):
        """(T, S): cross-attention head `head` of layer `layer` (negative
        counts from the last), or with head=None that layer's mean."""
        layers, heads = self.heads.shape[:2]
        if isinstance(layer, bool) or not isinstance(layer, int) or not -layers <= layer < layers:
            raise _capi.ArgumentError(f"layer {layer!r}: this model has {layers} (0 to {layers - 1})")
        if head is None:
            return self.heads[layer].mean(axis=0) if "cross" not in self.views else self.views["cross"]["mean"][layer]
        if isinstance(head, bool) or not isinstance(head, int) or not -heads <= head < heads:
            raise _capi.ArgumentError(f"head {head!r}: this model has {heads} (0 to {heads - 1})")
        return self.heads[layer, head]

    def plot(self, ax=None, layer=None, head=None, values=None, title=None):
        """Draws a heatmap as `tinyseq attend --svg` does (viridis over the
        fixed scale [0, 1], target words down the left, source words along
        the bottom at 45 degrees, each weight written in its cell, a colour
        bar, a title naming the matrix and, for a subword model, whether
        its labels are pieces or words) on a matplotlib Axes (ax None: a new
        figure's). layer/head pick a Transformer's head as head() does
        (default: `weights`). Returns the Axes."""
        import matplotlib.pyplot as plt  # only plotting needs matplotlib (Debian: python3-matplotlib)

        if layer is None and head is None:
            m = self.weights
            if self.heads.shape[:2] == (1, 1) and "cross" not in self.views:
                what = self.attention or "none"
            else:
                layers, heads = self.heads.shape[:2]
                # The model's name for its attention (attend's JSON: a Transformer's is "transformer").
                what = f"{self.attention} cross-attention, layer {layers - 1} (the last of {layers}), mean of {heads} heads"
        else:
            layer = -1 if layer is None else layer
            m = self.head(layer, head)
            layers, heads = self.heads.shape[:2]
            what = (f"{self.attention} cross-attention, layer {layer % layers} of {layers}, "
                    + (f"mean of {heads} heads" if head is None else f"head {head % heads} of {heads}"))
        if ax is None:
            width, height = 1.2 + 0.45 * len(self.source), 1.2 + 0.4 * len(self.target)
            _, ax = plt.subplots(figsize=(max(4.0, width), max(3.0, height)))
        image = ax.imshow(m, cmap="viridis", vmin=0, vmax=1, aspect="equal")
        ax.set_xticks(range(len(self.source)), self.source, rotation=45, ha="right", rotation_mode="anchor")
        ax.set_yticks(range(len(self.target)), self.target)
        ax.set_xlabel("source")
        ax.set_ylabel("target")
        if values is None:
            values = m.size <= 400
        if values:
            for (j, i), w in np.ndenumerate(m):
                ax.text(i, j, f"{w:.2f}", ha="center", va="center", fontsize=7, color="black" if w > 0.55 else "white")
        ax.figure.colorbar(image, ax=ax, ticks=[0, 0.5, 1], fraction=0.046, pad=0.04)
        units = self.UNIT_TITLES.get(self.units, "")
        ax.set_title(title if title is not None else f"attention: {what}{units}", fontsize=10, wrap=True)
        return ax

    def __repr__(self):
        return f"Attention({self.output!r}, weights {self.weights.shape}, heads {self.heads.shape})"


class Model:
    """A checkpoint loaded for use (tinyseq.load). One thread at a time uses
    it (calls from several threads wait for each other). close() frees it now;
    otherwise it is freed with the object."""

    def __init__(self, handle, path):
        self._handle, self.path = handle, path
        self._lock = threading.Lock()

    def _use(self):
        if not self._handle:
            raise _capi.ArgumentError(f"model {self.path} is closed")
        return self._handle

    def close(self):
        with self._lock:
            if self._handle:
                lib.tinyseq_model_free(self._handle)
                self._handle = None

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.tinyseq_model_free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def translate(self, texts, beam=None, length_penalty=None):
        """The translation of a str, or a list of them for a list, as
        `tinyseq translate` gives them (beam None or 0: its default width;
        1: greedy). A list decodes in batches of 128, as translate's lines do."""
        one = isinstance(texts, str)
        items = [texts] if one else list(texts)
        if not items:
            return []
        encoded = [encode(t, f"text {i}") for i, t in enumerate(items)]
        beam, alpha = _beam(beam, length_penalty)
        array = (ctypes.c_char_p * len(encoded))(*encoded)
        with self._lock:
            _, text = call_text("translate", self._use(), array, len(encoded), beam, alpha)
        outputs = text.split("\n")
        return outputs[0] if one else outputs

    def attend(self, text, beam=None, length_penalty=None, words=False):
        """Translates `text` and returns its Attention, the numbers of
        `tinyseq attend --json` to the last bit. words=True: a subword
        model's pieces merged into words, as `attend --words` merges them
        (source columns summed, target rows averaged); a word model's are
        words already."""
        beam, alpha = _beam(beam, length_penalty)
        if not isinstance(words, bool):
            raise TypeError(f"words must be a bool, not {type(words).__name__}")
        raw = encode(text, "text")
        with self._lock:
            _, doc = call_text("attend", self._use(), raw, beam, alpha, int(words))
        return attention_from_json(doc)

    def explain(self, text, kind="grad", steps=None, beam=None, length_penalty=None, words=False):
        """Translates `text` and returns its Attribution, the numbers of
        `tinyseq attend --explain KIND --json` to the last bit: kind "grad"
        (gradient x input on the source embeddings) or "ig" (integrated
        gradients from zero embeddings, `steps` points, default 64);
        docs/attention.md, section 6. words as attend()."""
        beam, alpha = _beam(beam, length_penalty)
        if kind not in ("grad", "ig"):
            raise _capi.ArgumentError(f"kind must be 'grad' or 'ig', not {kind!r}")
        if steps is None:
            steps = 0
        elif isinstance(steps, bool) or not isinstance(steps, int):
            raise TypeError(f"steps must be an int, not {type(steps).__name__}")
        elif kind != "ig" or not 1 <= steps <= 1024:
            raise _capi.ArgumentError(f"steps {steps}: integrated gradients ('ig') take 1..1024")
        if not isinstance(words, bool):
            raise TypeError(f"words must be a bool, not {type(words).__name__}")
        raw = encode(text, "text")
        with self._lock:
            _, doc = call_text("explain", self._use(), raw, beam, alpha, int(words), kind.encode(), steps)
        return attribution_from_json(doc)

    def eval(self, corpus, align=None, beam=None, max_len=None):
        """Evaluates on a TSV corpus as `tinyseq eval` does: a dict with
        pairs, loss, perplexity, bleu (of the words), bleu_detok (of the
        text as written, sacreBLEU's 13a), chrf, exact, bucket_bleu, aer,
        aer_diagonal, aer_forced and aer_forced_best (with `align`, gold
        Pharaoh alignments), entropy,
        pad_mass and the decoded `outputs`. max_len None: the model's
        training limit; 0: every pair."""
        beam, _ = _beam(beam, None)
        if max_len is None:
            max_len = -1
        elif isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 0:
            raise _capi.ArgumentError(f"max_len must be a whole number >= 0, not {max_len!r}")
        path = encode(corpus, "corpus")
        gold = encode(align, "align") if align is not None else None
        with self._lock:
            _, doc = call_text("eval", self._use(), path, gold, beam, min(max_len, 2**31 - 1))
        return json.loads(doc)

    def info(self):
        """The model's configuration, vocabulary sizes, parameter count and
        the checkpoint's header (values as stored) as a dict."""
        with self._lock:
            _, doc = call_text("info", self._use())
        info = json.loads(doc)
        info["header"] = {k: _header_value(v) for k, v in info["header"].items()}
        return info

    def __repr__(self):
        return f"tinyseq.Model({self.path!r})"


def _header_value(text):
    """A checkpoint header value as written: whole numbers and hex doubles
    (docs/checkpoint.md) as numbers, the rest as text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float.fromhex(text) if text.lstrip("-").startswith("0x") else text
    except ValueError:
        return text


def attention_from_json(doc):
    """An Attention from `tinyseq attend --json`'s document."""
    d = json.loads(doc)
    searched = np.array(d["weights"], dtype=np.float64).reshape(len(d["target"]), len(d["source"]))
    views = {}
    for name in ("cross", "enc", "dec"):
        if name in d:
            v = d[name]
            views[name] = {"rows": v["rows"], "cols": v["cols"], "heads": np.array(v["heads"], dtype=np.float64),
                           "mean": np.array(v["mean"], dtype=np.float64)}
    heads = views["cross"]["heads"] if "cross" in views else None
    return Attention(d["source"], d["target"], searched, d.get("attention"), heads, views, d.get("units"))


class Attribution(Attention):
    """One sentence's attributions (Model.explain): `weights` (T, S) each
    row's absolute values over their sum, drawn and aligned as attention is;
    `raw` (T, S) the signed values; `kind` "grad" or "ig"; for "ig" also
    `steps`, `log_prob` and `baseline_log_prob` (T), whose difference each
    raw row sums to (completeness), and `completeness_gap`, the largest
    distance from it in nats, which `attend --explain ig` prints."""

    def __init__(self, source, target, weights, attention, kind, raw, steps=None, log_prob=None,
                 baseline_log_prob=None, units=None):
        super().__init__(source, target, weights, attention, units=units)
        self.kind, self.raw, self.steps = kind, raw, steps
        self.log_prob, self.baseline_log_prob = log_prob, baseline_log_prob

    @property
    def completeness_gap(self):
        """max_t |sum_s raw[t, s] - (log_prob[t] - baseline_log_prob[t])| in
        nats: the quadrature's error (more steps narrow it); None without
        log-probabilities (grad, words)."""
        if self.log_prob is None or self.baseline_log_prob is None:
            return None
        return float(np.max(np.abs(self.raw.sum(axis=1) - (self.log_prob - self.baseline_log_prob))))

    def __repr__(self):
        return f"Attribution({self.kind!r}, {self.output!r}, weights {self.weights.shape})"


def attribution_from_json(doc):
    """An Attribution from `tinyseq attend --explain KIND --json`'s document."""
    d = json.loads(doc)
    shape = (len(d["target"]), len(d["source"]))
    vector = lambda key: np.array(d[key], dtype=np.float64) if key in d else None
    return Attribution(d["source"], d["target"], np.array(d["weights"], dtype=np.float64).reshape(shape),
                       d.get("attention"), d["explain"], np.array(d["raw"], dtype=np.float64).reshape(shape),
                       d.get("ig_steps"), vector("log_prob"), vector("baseline_log_prob"), d.get("units"))


def load(path):
    """Loads a checkpoint written by tinyseq train (a run's best.ckpt)."""
    raw = encode(path, "path")
    handle = ctypes.c_void_p()
    best = os.path.join(os.fsdecode(raw), "best.ckpt")
    if os.path.isdir(raw) and os.path.isfile(best):  # a run directory: its model is inside
        raise _capi.FileError(f"{os.fsdecode(raw)} is a directory, not a checkpoint; did you mean "
                              f"tinyseq.load({best!r})?", -5)
    call("load", raw, ctypes.byref(handle))
    return Model(handle.value, path if isinstance(path, str) else raw.decode("utf-8", "replace"))
