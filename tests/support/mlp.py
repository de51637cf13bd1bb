"""A small MLP with its parameters in a dict (W1, b1, W2, b2): tanh hidden layer, softmax
cross-entropy, batch 8, sizes 5-7-3 by default. tests/reverse_mode/test_grad.py and
tests/compiler/test_fused_form.py differentiate it. (tests/support/serialize_cases.py has another
MLP, of positional arrays; ad.examples has the one the demos use.)"""
import numpy as np


def mlp_loss(params, x, y):
    h = np.tanh(x @ params["W1"] + params["b1"])
    logits = h @ params["W2"] + params["b2"]
    m = np.max(logits, axis=1, keepdims=True)
    logp = logits - m - np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(y * logp, axis=1))


def mlp_data(seed=0, batch=8, sizes=(5, 7, 3)):
    """(params, x, y) for ``mlp_loss``: weights scaled by 0.5, zero biases, one-hot labels."""
    rng = np.random.default_rng(seed)
    params = {"W1": rng.standard_normal(sizes[:2]) * 0.5, "b1": np.zeros(sizes[1]),
              "W2": rng.standard_normal(sizes[1:]) * 0.5, "b2": np.zeros(sizes[2])}
    x = rng.standard_normal((batch, sizes[0]))
    y = np.eye(sizes[2])[rng.integers(0, sizes[2], batch)]
    return params, x, y
