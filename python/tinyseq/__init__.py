"""tinyseq from Python: attention-based seq2seq models in C, with their
attention and gradients as numpy arrays (docs/python.md).

    import tinyseq
    run = tinyseq.train(epochs=1, toy_pairs=2000, out="runs/py")
    model = tinyseq.load(run + "/best.ckpt")
    model.translate("the small girl sees the cats .")
    a = model.attend("the small girl sees the cats .")   # a.weights: (T, S)
    tinyseq.ops.softmax(np.array([927.0, 901.0, 148.0, 929.0]))
"""
from . import ops
from ._capi import ArgumentError, Error, FileError, FormatError, OutOfMemory, lib as _lib
from .model import Attention, Attribution, Model, load
from .train import gradcheck, toy_corpus, train

__version__ = _lib.tinyseq_version().decode()
__all__ = ["load", "Model", "Attention", "Attribution", "train", "gradcheck", "toy_corpus", "ops", "Error", "ArgumentError", "FileError",
           "FormatError", "OutOfMemory"]
