"""tinyseq.train and tinyseq.gradcheck: options, progress, Ctrl-C."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

import tinyseq

ATTENTIONS = ("none", "dot", "scaled-dot", "general", "concat", "bahdanau")


def test_train_reports_progress_and_writes_a_run(tmp_path):
    lines = []
    out = tinyseq.train(on_line=lines.append, out=str(tmp_path / "run"), toy_pairs=200, epochs=1, emb=8,
                        hidden=8, attn="dot", beam=1, show=0, threads=1)
    assert out == str(tmp_path / "run")
    assert os.path.exists(os.path.join(out, "best.ckpt")) and os.path.exists(os.path.join(out, "config.txt"))
    assert any(line.startswith("epoch 1:") for line in lines) and lines[-1].startswith("train:")
    config = open(os.path.join(out, "config.txt")).read()
    assert "attention = dot" in config and "decoder = luong" in config  # the CLI's decoder rule
    assert tinyseq.load(os.path.join(out, "best.ckpt")).info()["model"]["attention"] == "dot"


@pytest.mark.parametrize("options, message", [
    (dict(attn="nope"), "attn"),
    (dict(bogus=1), "unknown option 'bogus'"),
    (dict(epochs=0), "epochs is 0"),
    (dict(lr="fast"), "lr expects a number"),
    (dict(bidirectional=2), "0 or 1"),
])
def test_bad_options_raise_argument_error_naming_them(tmp_path, options, message):
    with pytest.raises(tinyseq.ArgumentError, match=message):
        tinyseq.train(on_line=None, out=str(tmp_path / "run"), **options)


def test_help_lists_every_option_and_a_typo_names_the_nearest(tmp_path):
    doc = tinyseq.train.__doc__
    for name in ("max_len", "attn", "epochs", "subword", "preset", "warmup_steps", "transformer-small"):
        assert f"      {name}" in doc, name
    with pytest.raises(tinyseq.ArgumentError, match="unknown option 'epoch'; did you mean epochs"):
        tinyseq.train(on_line=None, out=str(tmp_path / "run"), epoch=3)
    with pytest.raises(tinyseq.ArgumentError, match="did you mean max_len"):
        tinyseq.train(on_line=None, out=str(tmp_path / "run"), maxlen=3)


def test_a_preset_trains_with_its_flags_and_given_options_win(tmp_path):
    lines = []
    out = tinyseq.train(on_line=lines.append, out=str(tmp_path / "run"), preset="gru-small", toy_pairs=200, emb=8,
                        hidden=8, steps=1, beam=1, show=0, threads=1)
    config = open(os.path.join(out, "config.txt")).read()
    assert "preset = gru-small" in config and "max_len = 10" in config and "batch = 64" in config
    assert "hidden = 8" in config and "emb = 8" in config


def test_a_flag_of_another_architecture_is_named_in_a_warning(tmp_path):
    lines = []
    tinyseq.train(on_line=lines.append, out=str(tmp_path / "run"), arch="transformer", attn="dot", toy_pairs=100,
                  hidden=8, heads=2, layers=1, steps=1, beam=1, show=0, threads=1)
    assert any("warning: --attn does not apply to --arch transformer" in line for line in lines), lines


def test_a_missing_corpus_raises_file_error(tmp_path):
    with pytest.raises(tinyseq.Error, match="nothing.tsv"):
        tinyseq.train(on_line=None, out=str(tmp_path / "run"), corpus=str(tmp_path / "nothing.tsv"))


def test_an_exception_in_the_callback_is_raised_after_the_run(tmp_path):
    def fail(line):
        raise RuntimeError("callback failed")
    with pytest.raises(RuntimeError, match="callback failed"):
        tinyseq.train(on_line=fail, out=str(tmp_path / "run"), toy_pairs=100, epochs=1, emb=4, hidden=4,
                      beam=1, show=0)


def test_ctrl_c_stops_saves_and_raises_keyboard_interrupt(tmp_path):
    # A child process trains until SIGINT, then checks the aftermath itself.
    script = textwrap.dedent(f"""
        import os, signal, sys, tinyseq
        seen = []
        def on_line(line):
            if line.startswith("epoch "):
                seen.append(line)
            if len(seen) == 1:  # once: a second one ends the process, as the CLI's
                os.kill(os.getpid(), signal.SIGINT)
        try:
            tinyseq.train(on_line=on_line, out={str(tmp_path / 'run')!r}, toy_pairs=2000, epochs=50, emb=8,
                          hidden=8, log_every=1, beam=1, threads=1)
            print("not stopped"); sys.exit(1)
        except KeyboardInterrupt as e:
            print("stopped:", e)
        assert os.path.exists({str(tmp_path / 'run' / 'last.ckpt')!r})
        # Python's own SIGINT handling is back: a Ctrl-C now raises at once.
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**7): pass
            print("no KeyboardInterrupt"); sys.exit(1)
        except KeyboardInterrupt:
            print("python handler restored")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stopped: training stopped by SIGINT" in result.stdout and "last.ckpt" in result.stdout
    assert "python handler restored" in result.stdout


def test_gradcheck_passes_for_every_attention_and_decoder():
    rows = tinyseq.gradcheck()
    assert {(r["attn"], r["decoder"]) for r in rows} == {(a, d) for a in ATTENTIONS for d in ("bahdanau", "luong")}
    assert all(r["passed"] for r in rows), [r for r in rows if not r["passed"]]
    assert max(r["max_rel_err"] for r in rows) < 1e-6
    bi = tinyseq.gradcheck(attn="concat", decoder="luong", bidirectional=True, tf=0.5)
    assert bi and all(r["passed"] for r in bi)
    transformer = tinyseq.gradcheck(arch="transformer")
    assert len(transformer) > 10 and all(r["passed"] for r in transformer)
    with pytest.raises(tinyseq.ArgumentError):
        tinyseq.gradcheck(attn="nope")
    with pytest.raises(tinyseq.ArgumentError, match="teacher-forced pass"):
        tinyseq.gradcheck(arch="transformer", tf=0.5)
    with pytest.raises(tinyseq.ArgumentError, match="rtol"):
        tinyseq.gradcheck(attn="dot", decoder="luong", rtol=0)
    cells = tinyseq.gradcheck(attn="general", decoder="luong", cell="gru")
    assert cells and all(r["passed"] and r["cell"] == "gru" for r in cells)
    lstm = tinyseq.gradcheck(cell="lstm", bidirectional=True, tf=0.5)
    assert len(lstm) > 12 * 13 and all(r["passed"] and r["cell"] == "lstm" for r in lstm), [r for r in lstm if not r["passed"]]
    assert any(r["parameter"] == "encoder.lstm.weight_hh_l0_reverse" for r in lstm)
    assert {r["cell"] for r in rows} == {"gru"} and {r["cell"] for r in transformer} == {None}
    with pytest.raises(tinyseq.ArgumentError, match="unknown cell 'nope'"):
        tinyseq.gradcheck(attn="dot", decoder="luong", cell="nope")
    with pytest.raises(tinyseq.ArgumentError, match="cell does not apply"):
        tinyseq.gradcheck(arch="transformer", cell="gru")
