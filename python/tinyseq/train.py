"""Training and the whole model's gradient check."""
import ctypes
import difflib
import json
import os
import signal

from . import _capi
from ._capi import call, call_text, encode, lib


def _option_text(name, value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str, os.PathLike)):
        return encode(value if not isinstance(value, (int, float)) else repr(value), name).decode()
    raise TypeError(f"train option {name} must be a number, a str or a bool, not {type(value).__name__}")


def _train_options():
    """train's options and presets from the library's one table: ({name: option}, [preset])."""
    _, doc = call_text("train_options")
    d = json.loads(doc)
    return {o["name"]: o for o in d["options"]}, d["presets"]


def _check_names(options):
    """ArgumentError naming an unknown option and the nearest ones (a typo)."""
    known, _ = _train_options()
    names = set(known) | {o["key"] for o in known.values() if o["key"]}  # flags, or config.txt's keys
    for name in options:
        if name not in names and name.replace("-", "_") not in names:
            near = difflib.get_close_matches(name, sorted(names), n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(near)}?" if near else "; help(tinyseq.train) lists them"
            raise _capi.ArgumentError(f"train: unknown option {name!r}{hint}", -4)


def _train_doc():
    known, presets = _train_options()
    lines = [train.__doc__.rstrip(), "", "    Options (defaults in brackets; docs/python.md, `tinyseq train --help`):", ""]
    for name, o in known.items():
        default = f" [{o['default']}]" if o["default"] not in ("", "0") or o["meta"] == "" else ""
        lines.append(f"      {name}{'=' + o['meta'] if o['meta'] else '=True'}{default}: {o['help']}")
    lines += ["", "    Presets (preset=NAME; options given win):", ""]
    for p in presets:
        lines.append(f"      {p['name']}: {' '.join(p['help'].split())}")
        lines.append(f"        = {p['flags']}")
    return "\n".join(lines) + "\n"


def train(on_line=print, **options):
    """Trains as `tinyseq train` does and returns the run directory.

    Options are train's flags with '_' for '-' (attn="dot", max_len=10,
    epochs=2, out="runs/x", force=True, resume="runs/x/last.ckpt",
    preset="transformer-small", ...); None leaves an option at its default,
    and a name that is no option raises ArgumentError naming the nearest
    ones. Every line the trainer prints goes to on_line(line) (default
    print; None: nowhere), so a notebook shows the progress. Ctrl-C
    (KeyboardInterrupt, a Jupyter interrupt) stops the run at the next step
    and saves last.ckpt, as the CLI does, then raises KeyboardInterrupt;
    SIGINT's handler is Python's again afterwards.
    """
    _check_names(options)
    options = {k: v for k, v in options.items() if v is not None}
    keys = [encode(k, "option name") for k in options]
    values = [_option_text(k, v).encode() for k, v in options.items()]
    key_array = (ctypes.c_char_p * len(keys))(*keys)
    value_array = (ctypes.c_char_p * len(values))(*values)
    failure = []

    def forward(line, err, user):
        try:
            if on_line is not None:
                on_line(line.decode("utf-8", "replace"))
        except BaseException as e:  # noqa: B902 - raised again after the run, not lost in ctypes
            failure.append(e)

    callback = _capi.LINE_FN(forward)
    stopped, steps, out_dir = ctypes.c_int(0), ctypes.c_long(0), ctypes.c_void_p()
    status = lib.tinyseq_train_dir(key_array, value_array, len(keys), callback, None, ctypes.byref(stopped),
                                   ctypes.byref(steps), ctypes.byref(out_dir))
    # The run directory the trainer chose (train's default without out=)
    out = ctypes.string_at(out_dir).decode() if out_dir.value else None
    lib.tinyseq_free(out_dir)
    if status < 0:
        _capi.raise_for(status, "train")
    if failure:
        raise failure[0]
    if status == _capi.STOPPED:
        name = signal.Signals(stopped.value).name
        raise KeyboardInterrupt(f"training stopped by {name} at step {steps.value}; saved {out}/last.ckpt "
                                f"(continue with train(..., out={out!r}, resume={out + '/last.ckpt'!r}))")
    return out


train.__doc__ = _train_doc()


def toy_corpus(path, n=1000, seed=1, align=None):
    """Writes n pairs of the built-in toy corpus (seed picks them) to `path`
    as TSV and, given `align`, their gold alignments there; the same bytes as
    `tinyseq corpus --toy --n N --seed S --align FILE`. Returns path."""
    if isinstance(n, bool) or not isinstance(n, int) or isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError("n and seed must be ints")
    gold = encode(align, "align") if align is not None else None
    call("toy_corpus", n, seed, encode(path, "path"), gold)
    return path


_ATTENTIONS = ("none", "dot", "scaled-dot", "general", "concat", "bahdanau")
_DECODERS = ("bahdanau", "luong")


def gradcheck(arch="gru", attn="all", decoder="all", bidirectional=False, cell=None, tf=1.0, seed=1, rtol=1e-6,
              atol=1e-8):
    """`tinyseq gradcheck`: every parameter's gradient of a tiny model
    against central finite differences: for the GRU architecture, each
    attention x decoder asked ("all" for every one) with `cell` ("gru" or
    another of train's --cell; None: the GRU); for arch="transformer", its
    one model. Returns a list of dicts (arch, attn, decoder, cell, parameter,
    checked, max_abs_err, max_rel_err, passed)."""
    # The flags a model of arch has (the library's answer: its field table).
    flags = ("attn", "decoder", "bidirectional", "cell")
    has = {flag: call("arch_has", encode(arch, "arch"), flag.encode()) for flag in flags}
    given = {"attn": attn != "all", "decoder": decoder != "all", "bidirectional": bool(bidirectional),
             "cell": cell is not None}
    for flag in has:
        if given[flag] and not has[flag]:
            raise _capi.ArgumentError(f"{flag} does not apply to arch {arch}")
    cases = [(a, d) for a in ((_ATTENTIONS if attn == "all" else (attn,)) if has["attn"] else (None,))
             for d in ((_DECODERS if decoder == "all" else (decoder,)) if has["decoder"] else (None,))]
    rows = []
    for a, d in cases:
        _, doc = call_text("gradcheck", encode(arch, "arch"), a and encode(a, "attn"), d and encode(d, "decoder"),
                           bool(bidirectional), cell and encode(cell, "cell"), float(tf), int(seed), float(rtol),
                           float(atol))
        rows += [dict(arch=arch, attn=a, decoder=d, cell=cell or ("gru" if has["cell"] else None), **r)
                 for r in json.loads(doc)]
    return rows
