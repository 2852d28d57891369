"""The attention walkthrough's steps on numpy arrays, through the library's
own ops (api/ops.c builds each from autograd/ops.h).

Each function returns the result as a new float64 array; given `dout` (an
array shaped like the result) it returns (result, grads): grads[i] is
d sum(result * dout) / d input i, from the library's backward.
"""
import ctypes

import numpy as np

from . import _capi
from ._capi import call, lib

_DOUBLE_P = ctypes.POINTER(ctypes.c_double)


def _array(x, what):
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what} must be a numpy array, not {type(x).__name__}")
    if x.dtype != np.float64:
        raise TypeError(f"{what} must be float64, not {x.dtype} (use .astype(np.float64))")
    if not 1 <= x.ndim <= 3 or 0 in x.shape:
        raise ValueError(f"{what} must have 1 to 3 dimensions, none of them 0; its shape is {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{what} holds NaN or infinity")
    return np.ascontiguousarray(x)


def op(name, *inputs, dout=None):
    """Runs op `name` (api/tinyseq.h lists them) on the inputs."""
    arrays = [_array(x, f"{name} input {i}") for i, x in enumerate(inputs)]
    c_inputs = (_capi.Array * max(len(arrays), 1))()
    for c, a in zip(c_inputs, arrays):
        c.data = a.ctypes.data_as(_DOUBLE_P)
        c.ndim = a.ndim
        for k, n in enumerate(a.shape):
            c.dims[k] = n
    ndim, dims = ctypes.c_int(), (ctypes.c_int * 3)()
    call("op_shape", name.encode(), c_inputs, len(arrays), ctypes.byref(ndim), dims, context=None)
    out = np.empty(tuple(dims[:ndim.value]), dtype=np.float64)
    if dout is None:
        call("op", name.encode(), c_inputs, len(arrays), out.ctypes.data_as(_DOUBLE_P), out.size, None, None)
        return out
    dout = _array(dout, f"{name} dout")
    if dout.shape != out.shape:
        raise ValueError(f"{name}: dout has shape {dout.shape}, the result {out.shape}")
    grads = [np.empty_like(a) for a in arrays]
    din = (_DOUBLE_P * len(grads))(*[g.ctypes.data_as(_DOUBLE_P) for g in grads])
    call("op", name.encode(), c_inputs, len(arrays), out.ctypes.data_as(_DOUBLE_P), out.size,
         dout.ctypes.data_as(_DOUBLE_P), din)
    return out, grads


def dot_scores(query, keys, dout=None):
    """Luong's dot score of a query (D) against each key row (S, D): (S)."""
    return op("dot_scores", query, keys, dout=dout)


def general_scores(query, keys, W, dout=None):
    """Luong's general score q W k_s, W (D, K): (S)."""
    return op("general_scores", query, keys, W, dout=dout)


def additive_scores(query, keys, W1, W2, v, dout=None):
    """Bahdanau's score v . tanh(W1 q + W2 k_s): W1 (A, D), W2 (A, K), v (A): (S)."""
    return op("additive_scores", query, keys, W1, W2, v, dout=dout)


def softmax(scores, dout=None):
    """Softmax of scores (S), or of each row of (R, S), the largest subtracted first."""
    return op("softmax", scores, dout=dout)


def context(weights, values, dout=None):
    """The context vector sum_s w_s v_s: weights (S), values (S, K): (K)."""
    return op("context", weights, values, dout=dout)


def scaled_dot_weights(queries, keys, dout=None):
    """softmax(Q K^T / sqrt(D)): queries (T, D), keys (S, D): (T, S)."""
    return op("scaled_dot_weights", queries, keys, dout=dout)


def scaled_dot(queries, keys, values, dout=None):
    """Scaled dot-product attention softmax(Q K^T / sqrt(D)) V: values (S, E): (T, E)."""
    return op("scaled_dot", queries, keys, values, dout=dout)
