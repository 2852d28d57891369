"""load / translate / attend / eval / info against the program's own output."""
import json
import os
import re
import resource
import struct
import subprocess
import sys
import zlib

import numpy as np
import pytest

import tinyseq
from conftest import MODELS, SENTENCES, model_path, run_program


def test_imports_the_build_tree():
    want = os.environ.get("TINYSEQ_PACKAGE_DIR")
    if not want:
        pytest.skip("TINYSEQ_PACKAGE_DIR is not set (ctest sets it)")
    assert os.path.realpath(os.path.dirname(tinyseq.__file__)) == os.path.realpath(want)


@pytest.mark.parametrize("name", [n for n in MODELS if n != "none"])
@pytest.mark.parametrize("beam,words", [(1, False), (3, False), (3, True)])
def test_attend_equals_the_cli_json_to_the_bit(models, name, beam, words):
    model = tinyseq.load(model_path(models, name))
    flags = ["--words"] if words else []
    for sentence in SENTENCES + ["the zebra sees xylophones ."]:  # unknown words too
        got = model.attend(sentence, beam=beam, words=words)
        cli = json.loads(run_program("attend", "--model", models[name], "--beam", str(beam), *flags, "--json", "-",
                                     sentence).stdout)
        if name == "subword" and sentence in SENTENCES:  # pieces, or with words the sentence's own words
            assert (got.source == sentence.split()) == words
        assert got.source == cli["source"] and got.target == cli["target"]
        T, S = len(cli["target"]), len(cli["source"])
        searched = np.array(cli["weights"], dtype=np.float64)
        # One shape rule: weights (T, S) is what attend draws by default, heads (layers, heads, T, S).
        assert got.weights.dtype == np.float64 and got.weights.shape == (T, S)
        assert got.weights.tobytes() == searched.tobytes(), f"{name} beam {beam}: {sentence}"
        if name.startswith("transformer"):  # every layer x head x T x S, and the self-attention views
            cfg = model.info()["model"]
            want = np.array(cli["cross"]["heads"], dtype=np.float64)
            assert got.heads.shape == (cfg["layers"], cfg["heads"], T, S) == want.shape
            assert got.heads.tobytes() == want.tobytes()
            assert got.head(0, 1).tobytes() == want[0, 1].tobytes()
            assert got.head().tobytes() == np.array(cli["cross"]["mean"][-1]).tobytes()
            assert np.allclose(got.head(), searched, atol=1e-3)  # the JSON's views keep fewer digits
            assert got.views["enc"]["heads"].tobytes() == np.array(cli["enc"]["heads"]).tobytes()
            assert got.views["dec"]["mean"].tobytes() == np.array(cli["dec"]["mean"]).tobytes()
        else:
            assert got.heads.shape == (1, 1, T, S) and got.head(0, 0).tobytes() == searched.tobytes()
            assert got.views == {}


def test_plot_draws_what_attend_svg_draws(models, tmp_path):
    matplotlib = pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed (scripts/setup.sh)")
    matplotlib.use("Agg")
    for name in ("bahdanau", "transformer"):
        a = tinyseq.load(model_path(models, name)).attend(SENTENCES[0])
        ax = a.plot()
        image = ax.get_images()[0]
        assert image.get_array().shape == a.weights.shape and image.get_clim() == (0, 1)
        assert [t.get_text() for t in ax.get_xticklabels()] == a.source
        assert [t.get_text() for t in ax.get_yticklabels()] == a.target
        assert ax.get_title().startswith("attention: " + ("transformer cross-attention, layer 1 (the last of 2), mean"
                                                           if name == "transformer" else "bahdanau"))
        if name == "transformer":
            assert "head 1 of 2" in a.plot(layer=0, head=1).get_title()
        ax.figure.savefig(tmp_path / f"{name}.png")
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert a.units is None and "subword" not in ax.get_title()  # a word model's labels are words
    # A subword model's title says which it shows, pieces or words, as attend --svg's does (issue 47 point 7).
    model = tinyseq.load(model_path(models, "subword"))
    for words, units, says in ((False, "pieces", ", over subword pieces"), (True, "words", ", in words (subword pieces merged)")):
        a = model.attend(SENTENCES[0], words=words)
        cli = json.loads(run_program("attend", "--model", models["subword"], *(["--words"] if words else []), "--json", "-",
                                     SENTENCES[0]).stdout)
        assert a.units == cli["units"] == units
        assert a.plot().get_title().endswith(says)
        svg = run_program("attend", "--model", models["subword"], *(["--words"] if words else []), "--svg", "-",
                          SENTENCES[0]).stdout
        text = " ".join(re.sub(r"<[^>]+>", " ", svg).split())  # the title's lines (it wraps) as one
        assert says[2:] in text, text[:300]
    with pytest.raises(tinyseq.ArgumentError, match="layer 5"):
        a.head(5, 0)


def test_exceptions_print_as_tinyseq_names():
    assert tinyseq.FormatError.__module__ == "tinyseq" and repr(tinyseq.FormatError) == "<class 'tinyseq.FormatError'>"
    assert all(f"tinyseq.{c.__name__}" == f"{c.__module__}.{c.__qualname__}"
               for c in (tinyseq.Error, tinyseq.FileError, tinyseq.ArgumentError, tinyseq.OutOfMemory))


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("kind,steps,words", [("grad", None, False), ("ig", 16, False), ("grad", None, True)])
def test_explain_equals_attend_explain_to_the_bit(models, name, kind, steps, words):
    model = tinyseq.load(model_path(models, name))
    flags = (["--ig-steps", str(steps)] if steps else []) + (["--words"] if words else [])
    for sentence in SENTENCES:
        got = model.explain(sentence, kind=kind, steps=steps, beam=2, words=words)
        cli = json.loads(run_program("attend", "--model", models[name], "--beam", "2", "--explain", kind, *flags,
                                     "--json", "-", sentence).stdout)
        assert isinstance(got, tinyseq.Attribution) and got.kind == kind == cli["explain"]
        assert got.source == cli["source"] and got.target == cli["target"]
        T, S = len(cli["target"]), len(cli["source"])
        assert got.weights.shape == got.raw.shape == (T, S)
        assert got.weights.tobytes() == np.array(cli["weights"], dtype=np.float64).tobytes()
        assert got.raw.tobytes() == np.array(cli["raw"], dtype=np.float64).tobytes()
        assert np.allclose(got.weights.sum(axis=1), 1.0, atol=1e-12)
        assert np.allclose(got.weights, np.abs(got.raw) / np.abs(got.raw).sum(axis=1, keepdims=True), rtol=1e-14, atol=0)
        if kind == "ig" and not words:  # completeness, loosely at 16 steps (a Transformer: test_cli_explain.c at 256)
            assert got.steps == steps and got.log_prob.shape == (T,)
            # attend prints the same gap, to 2 digits
            said = run_program("attend", "--model", models[name], "--beam", "2", "--explain", kind, *flags, sentence).stdout
            printed = float(said.split("completeness: each row sums to log p - log p(zero embeddings) within ")[1].split()[0])
            assert abs(printed - got.completeness_gap) <= 0.05 * got.completeness_gap
            if not name.startswith("transformer"):
                assert np.allclose(got.raw.sum(axis=1), got.log_prob - got.baseline_log_prob, rtol=0.05, atol=1e-3)
        else:
            assert got.completeness_gap is None


def test_explain_refuses_bad_arguments(models):
    model = tinyseq.load(model_path(models, "bahdanau"))
    with pytest.raises(tinyseq.ArgumentError):
        model.explain("the cat sleeps .", kind="shap")
    with pytest.raises(tinyseq.ArgumentError):
        model.explain("the cat sleeps .", kind="grad", steps=8)
    with pytest.raises(tinyseq.ArgumentError):
        model.explain("the cat sleeps .", kind="ig", steps=0)
    with pytest.raises(TypeError):
        model.explain("the cat sleeps .", kind="ig", steps=2.5)


@pytest.mark.parametrize("name", list(MODELS))
def test_translate_equals_the_cli(models, name):
    model = tinyseq.load(model_path(models, name))
    default = run_program("translate", "--model", models[name], *SENTENCES).stdout.splitlines()
    assert model.translate(SENTENCES) == default
    assert model.translate(SENTENCES[0]) == default[0]
    greedy = run_program("translate", "--model", models[name], "--beam", "1", *SENTENCES).stdout.splitlines()
    assert model.translate(SENTENCES, beam=1) == greedy
    beam = run_program("translate", "--model", models[name], "--beam", "4", "--length-penalty", "0.6",
                       SENTENCES[1]).stdout.strip()
    assert model.translate(SENTENCES[1], beam=4, length_penalty=0.6) == beam
    assert model.translate([]) == []


def test_eval_equals_the_cli(models, tmp_path):
    corpus, gold = tmp_path / "test.tsv", tmp_path / "test.align"
    toy = run_program("corpus", "--toy", "--n", "40", "--seed", "7", "--align", str(gold))
    corpus.write_text(toy.stdout)
    # tinyseq.toy_corpus writes the same bytes.
    tinyseq.toy_corpus(str(tmp_path / "py.tsv"), n=40, seed=7, align=str(tmp_path / "py.align"))
    assert (tmp_path / "py.tsv").read_bytes() == corpus.read_bytes()
    assert (tmp_path / "py.align").read_bytes() == gold.read_bytes()
    with pytest.raises(tinyseq.FileError, match="/nonexistent/"):
        tinyseq.toy_corpus("/nonexistent/x.tsv", n=3)
    model = tinyseq.load(models["bahdanau"])
    got = model.eval(str(corpus), align=str(gold))
    line = run_program("eval", "--model", models["bahdanau"], "--corpus", str(corpus), "--align",
                       str(gold)).stdout.splitlines()[-1]
    fields = dict(kv.split("=") for kv in line.split()[1:])
    for key in ("bleu", "bleu_detok", "chrf", "exact", "aer", "aer_diagonal", "aer_forced", "aer_forced_best"):
        assert f"{got[key]:.4f}" == fields[key], key
    assert f"{got['perplexity']:.3f}" == fields["ppl"] and got["pairs"] == int(fields["pairs"]) == 40
    assert len(got["outputs"]) == 40 and got["pad_mass"] == 0
    assert model.eval(str(corpus))["aer"] is None
    if "subword" in models:  # gold links name words; a subword model attends over pieces (as the CLI refuses)
        with pytest.raises(tinyseq.ArgumentError, match="attends over pieces"):
            tinyseq.load(models["subword"]).eval(str(corpus), align=str(gold))


def test_info_describes_the_model(models):
    info = tinyseq.load(models["general"]).info()
    assert info["model"]["attention"] == "general" and info["model"]["decoder"] == "luong"
    assert info["model"]["bidirectional"] == 1 and info["model"]["hidden"] == 16
    assert info["header"]["train.lr_initial"] == 0.003  # hex doubles read back as numbers
    cli = json.loads(run_program("info", models["general"], "--json").stdout)
    assert info["parameters"] == sum(p["count"] for p in cli["parameters"])
    assert info["vocabularies"] == cli["vocabularies"]
    transformer = tinyseq.load(models["transformer"]).info()
    assert transformer["model"]["architecture"] == "transformer" and transformer["model"]["heads"] == 2
    assert info["model"]["cell"] == "gru" and "cell" not in transformer["model"]
    lstm = tinyseq.load(models["lstm"]).info()
    assert lstm["model"]["cell"] == "lstm" and lstm["header"]["model.cell"] == "lstm"
    assert lstm["parameters"] > tinyseq.load(models["general"]).info()["parameters"]  # four gates, not three


# ---- errors are exceptions with tinyseq's message, never a crash ---------------

def test_a_missing_checkpoint_raises_file_error(tmp_path):
    missing = tmp_path / "nothing.ckpt"
    with pytest.raises(tinyseq.FileError, match="nothing.ckpt") as e:
        tinyseq.load(missing)
    assert isinstance(e.value, OSError)


def test_a_corrupt_checkpoint_raises_format_error(models, tmp_path):
    data = open(models["dot"], "rb").read()
    for i, damaged in enumerate([data[: len(data) // 2], data[:100] + bytes(200) + data[300:], b"not a model"]):
        path = tmp_path / f"bad{i}.ckpt"
        path.write_bytes(damaged)
        with pytest.raises(tinyseq.FormatError, match=f"bad{i}.ckpt"):
            tinyseq.load(str(path))
    with pytest.raises(tinyseq.FileError):
        tinyseq.load(str(tmp_path))  # a directory
    run = tmp_path / "run"  # a run directory: the error names the checkpoint inside
    run.mkdir()
    (run / "best.ckpt").write_bytes(data)
    with pytest.raises(tinyseq.FileError, match=r"did you mean tinyseq.load\('.*run/best.ckpt'\)"):
        tinyseq.load(str(run))


def test_bad_arguments_raise_before_or_inside_c(models):
    model = tinyseq.load(models["dot"])
    with pytest.raises(TypeError):
        model.translate(123)
    with pytest.raises(TypeError):
        model.translate([b"bytes"])
    with pytest.raises(ValueError, match="NUL"):
        model.translate("a\0b")
    with pytest.raises(tinyseq.FormatError, match="sentence 2 .*empty"):
        model.translate(["the cat .", "   ", "the dog ."])
    with pytest.raises(tinyseq.FormatError, match="more than the 1000"):
        model.attend("word " * 1001)
    with pytest.raises(TypeError, match="words must be a bool"):
        model.attend("the cat .", words=1)
    with pytest.raises(tinyseq.ArgumentError, match="beam 1001 is outside 0..1000"):
        model.translate("the cat .", beam=1001)
    with pytest.raises(tinyseq.ArgumentError, match="beam -3 is outside"):
        model.translate("the cat .", beam=-3)
    with pytest.raises(tinyseq.ArgumentError, match="length_penalty"):
        model.translate("the cat .", beam=2, length_penalty=-1)
    with pytest.raises(tinyseq.ArgumentError, match="no attention"):
        tinyseq.load(models["none"]).attend("the cat .")
    with pytest.raises(tinyseq.FileError, match="nope.tsv"):
        model.eval("/nonexistent/nope.tsv")
    model.close()
    with pytest.raises(tinyseq.ArgumentError, match="closed"):
        model.translate("the cat .")
    assert "invalid" not in repr(model)


def test_invalid_utf8_is_an_error_not_a_crash(models):
    model = tinyseq.load(models["dot"])
    with pytest.raises(tinyseq.FormatError):
        model.translate("caf\udce9 .")  # a lone surrogate byte: not UTF-8


# ---- nothing leaks -------------------------------------------------------------

def rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (resource.getpagesize() // 1024)


@pytest.mark.skipif(os.environ.get("TINYSEQ_SANITIZE") == "1",
                    reason="under ASan freed memory waits in quarantine, so RSS grows without a leak")
def test_a_thousand_loads_and_translations_keep_rss_flat(models):
    def work(n):
        for i in range(n):
            with tinyseq.load(models["bahdanau"]) as m:
                m.translate(SENTENCES[i % 3])
                if i % 10 == 0:
                    m.attend(SENTENCES[0], beam=2)
            try:
                tinyseq.load("/nonexistent.ckpt")
            except tinyseq.FileError:
                pass
    work(100)  # allocator pools and caches settle
    before = rss_kib()
    work(1000)
    growth = rss_kib() - before
    # A leak of one model (~70 KiB of parameters) or one arena page per
    # iteration would add tens of MiB.
    assert growth < 2048, f"RSS grew by {growth} KiB over 1000 loads and translations"


def _varint(data, i):
    value, shift = 0, 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def _put_varint(value):
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _crafted_subword(blob):
    """A tinyseq subword model (TSSP header + SentencePiece model) whose
    normalizer is `nmt_nfkc` with a character map whose trie points outside it
    (issue 38): every other field and both header fields (length, CRC) right."""
    model, out, i = blob[20:], bytearray(), 0
    while i < len(model):
        start = i
        key, i = _varint(model, i)
        if key & 7 == 0:
            _, i = _varint(model, i)
        elif key & 7 == 5:
            i += 4
        else:
            n, i = _varint(model, i)
            i += n
        if key >> 3 != 3:
            out += model[start:i]
    normalizer = b"\x0a\x08nmt_nfkc\x12\x08\x04\x00\x00\x00\xff\xff\xff\xff"
    out += b"\x1a" + _put_varint(len(normalizer)) + normalizer
    return blob[:8] + struct.pack("<QI", len(out), zlib.crc32(out)) + bytes(out)


def _with_blob(checkpoint, name, edit):
    """An uncompressed checkpoint (docs/checkpoint.md) with blob `name`
    replaced by edit(blob), every CRC recomputed."""
    assert checkpoint[:8] == b"TSEQCKPT"
    at, sections = 32, []
    while len(sections) < 5:
        tag, n = checkpoint[at:at + 4], struct.unpack_from("<Q", checkpoint, at + 4)[0]
        sections.append((tag, checkpoint[at + 12:at + 12 + n]))
        at += 16 + n
    tag, body = sections[4]
    assert tag == b"BLOB"
    count, i, blobs = struct.unpack_from("<I", body)[0], 4, b""
    for _ in range(count):
        length = struct.unpack_from("<I", body, i)[0]
        key = body[i + 4:i + 4 + length]
        size = struct.unpack_from("<Q", body, i + 4 + length)[0]
        value = body[i + 12 + length:i + 12 + length + size]
        i += 12 + length + size
        if key == name.encode():
            value = edit(value)
        blobs += struct.pack("<I", len(key)) + key + struct.pack("<Q", len(value)) + value
    sections[4] = (tag, struct.pack("<I", count) + blobs)
    payload = b""
    for tag, body in sections:
        frame = tag + struct.pack("<Q", len(body)) + body
        payload += frame + struct.pack("<I", zlib.crc32(frame))
    prelude = checkpoint[:16] + struct.pack("<Q", len(payload) + 4) + checkpoint[24:28]
    prelude += struct.pack("<I", zlib.crc32(prelude))
    return prelude + payload + struct.pack("<I", zlib.crc32(prelude + payload))


def test_a_crafted_subword_model_raises_format_error_not_a_crash(models, tmp_path):
    # The interpreter runs apart: before issue 38 it died (SIGSEGV) on translate.
    path = tmp_path / "crafted.ckpt"
    path.write_bytes(_with_blob(open(model_path(models, "subword"), "rb").read(), "subword.source", _crafted_subword))
    script = ("import tinyseq\n"
              "try:\n"
              f"    tinyseq.load({str(path)!r}).translate('the cat .')\n"
              "except tinyseq.FormatError as e:\n"
              "    print('FormatError:', e)\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    assert "FormatError:" in result.stdout and "crafted.ckpt" in result.stdout, result.stdout
    assert "subword.source" in result.stdout and "normalizer_spec" in result.stdout, result.stdout
    # The same edit that leaves the normalizer alone loads: the CRCs are right.
    same = tmp_path / "same.ckpt"
    same.write_bytes(_with_blob(open(model_path(models, "subword"), "rb").read(), "subword.source", lambda b: b))
    assert tinyseq.load(str(same)).translate("the cat .")
