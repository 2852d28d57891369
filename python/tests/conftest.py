"""Shared fixtures: tiny models trained once per session, the built program.

ctest runs these with PYTHONPATH pointing at the build tree's package
(build/python) and TINYSEQ_PROGRAM at the build's tinyseq, so the tests read
this build, never an installed copy (test_imports_the_build_tree checks).
"""
import os
import subprocess

import pytest

import tinyseq

SENTENCES = ["the small girl does not see the white cats .", "my brother sells old books .",
             "the doctors cannot open the heavy door tomorrow ."]

# Every attention with the decoder train gives it, both decoders for two, a
# bidirectional encoder, and the Transformer.
MODELS = {
    "bahdanau": dict(attn="bahdanau"),
    "bahdanau-luong": dict(attn="bahdanau", decoder="luong"),
    "dot": dict(attn="dot"),
    "dot-bahdanau": dict(attn="dot", decoder="bahdanau"),
    "scaled-dot": dict(attn="scaled-dot"),
    "general": dict(attn="general", bidirectional=True),
    "concat": dict(attn="concat"),
    "none": dict(attn="none"),
    "transformer": dict(arch="transformer", heads=2, layers=2, ff=32),
    "transformer-float32": dict(arch="transformer", heads=2, layers=2, ff=32, dtype="float32"),
    "lstm": dict(cell="lstm", bidirectional=True),
    "subword": dict(subword=300),  # SentencePiece pieces: labels are pieces, no word is unknown
}


def program():
    path = os.environ.get("TINYSEQ_PROGRAM")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("TINYSEQ_PROGRAM is not set to the built tinyseq (ctest sets it)")
    return path


def run_program(*args, check=True):
    result = subprocess.run([program(), *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"tinyseq {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """name -> best.ckpt of a tiny model trained for 2 epochs on 600 toy pairs."""
    root = tmp_path_factory.mktemp("runs")
    paths = {}
    for name, options in MODELS.items():
        try:
            out = tinyseq.train(on_line=None, out=str(root / name), toy_pairs=600, epochs=2, emb=8, hidden=16,
                                beam=1, show=0, threads=1, **options)
        except tinyseq.Error as e:
            if name == "subword" and "SentencePiece" in str(e):  # a build without it
                paths[name] = None
                continue
            raise
        paths[name] = os.path.join(out, "best.ckpt")
    return paths


def model_path(models, name):
    if models[name] is None:
        pytest.skip(f"the {name} model cannot be trained in this build")
    return models[name]
