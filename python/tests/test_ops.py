"""The walkthrough's ops: values against numpy, gradients against central
finite differences (~1e-6 relative), errors before a crash."""
import numpy as np
import pytest

import tinyseq
from tinyseq import ops

HIDDEN = np.array([5.0, 1.0, 20.0])
ANNOTATIONS = np.array([[3.0, 12.0, 45.0], [59.0, 2.0, 5.0], [1.0, 43.0, 5.0], [4.0, 3.0, 45.3]])


def test_the_927_929_softmax_is_012_088():
    scores = ops.dot_scores(HIDDEN, ANNOTATIONS)
    assert scores.tolist() == [927.0, 397.0, 148.0, 929.0]
    weights = ops.softmax(scores)
    assert np.round(weights, 2).tolist() == [0.12, 0.0, 0.0, 0.88]
    assert weights[2] == 0.0 and abs(weights.sum() - 1) < 1e-15
    context = ops.context(weights, ANNOTATIONS)
    # docs/attention.md's full-precision line, reproduced by examples/attention_basics too.
    assert abs(context[0] - 3.88079707797788) < 1e-12


def numeric_grad(f, inputs, dout, i, h=1e-6):
    x = inputs[i]
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        step = h * max(1.0, abs(x[k]))
        saved = x[k]
        x[k] = saved + step
        plus = np.sum(f(*inputs) * dout)
        x[k] = saved - step
        minus = np.sum(f(*inputs) * dout)
        x[k] = saved
        g[k] = (plus - minus) / (2 * step)
    return g


rng = np.random.default_rng(3)
S, T, D, K, A, E = 5, 3, 4, 6, 7, 2
CASES = {
    "dot_scores": (ops.dot_scores, [(D,), (S, D)], lambda q, k: k @ q),
    "general_scores": (ops.general_scores, [(D,), (S, K), (D, K)], lambda q, k, W: k @ (q @ W)),
    "additive_scores": (ops.additive_scores, [(D,), (S, K), (A, D), (A, K), (A,)],
                        lambda q, k, W1, W2, v: np.tanh(W1 @ q + k @ W2.T) @ v),
    "softmax": (ops.softmax, [(T, S)], lambda x: np.exp(x - x.max(1, keepdims=True)) /
                np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)),
    "context": (ops.context, [(S,), (S, K)], lambda w, v: w @ v),
    "scaled_dot": (ops.scaled_dot, [(T, D), (S, D), (S, E)], None),
    "scaled_dot_weights": (ops.scaled_dot_weights, [(T, D), (S, D)], None),
}


def scaled_weights(q, k):
    e = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(e - e.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


CASES["scaled_dot"] = CASES["scaled_dot"][:2] + (lambda q, k, v: scaled_weights(q, k) @ v,)
CASES["scaled_dot_weights"] = CASES["scaled_dot_weights"][:2] + (scaled_weights,)


@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_numpy_and_its_gradient_finite_differences(name):
    f, shapes, reference = CASES[name]
    inputs = [rng.normal(size=s) for s in shapes]
    value = f(*inputs)
    assert np.allclose(value, reference(*inputs), rtol=1e-12, atol=1e-12)
    dout = rng.normal(size=value.shape)  # not all ones, so a wrong transpose cannot hide
    again, grads = f(*inputs, dout=dout)
    assert again.tobytes() == value.tobytes()
    for i, g in enumerate(grads):
        assert g.shape == inputs[i].shape
        want = numeric_grad(lambda *xs: f(*xs), inputs, dout, i)
        assert np.all(np.abs(g - want) <= 1e-8 + 1e-6 * np.abs(want)), f"{name} input {i}: {g} vs {want}"


def test_wrong_dtype_shape_or_values_raise():
    with pytest.raises(TypeError, match="float64"):
        ops.softmax(np.array([1, 2, 3]))
    with pytest.raises(TypeError, match="numpy array"):
        ops.softmax([1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        ops.softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="dimensions"):
        ops.softmax(np.zeros((0,)))
    with pytest.raises(tinyseq.FormatError, match="keys"):
        ops.dot_scores(HIDDEN, HIDDEN)  # keys must be a matrix
    with pytest.raises(tinyseq.FormatError, match="dot_scores"):
        ops.dot_scores(np.ones(2), ANNOTATIONS)  # widths differ
    with pytest.raises(tinyseq.ArgumentError, match="no op"):
        ops.op("nothing", HIDDEN)
    with pytest.raises(tinyseq.ArgumentError, match="takes 2 inputs"):
        ops.op("context", HIDDEN)
    with pytest.raises(ValueError, match="dout has shape"):
        ops.softmax(HIDDEN, dout=np.ones(2))


def test_non_contiguous_input_is_copied_not_misread():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    assert np.array_equal(ops.softmax(x.T), ops.softmax(np.ascontiguousarray(x.T)))
