"""Built-in example programs, written in plain numpy (used by the demo, the docs and tests)."""
from __future__ import annotations

import numpy as np


def mlp_loss_for(xnp):
    """The MLP loss written against the numpy-like module ``xnp`` (numpy for ad; the benchmarks
    pass autograd.numpy or jax.numpy to run the very same program through other systems). Each
    layer is a call of ``layer`` (scopes ``layer#1``, ``layer#2``, ...), the loss's normalisation
    one of ``log_softmax``."""
    def layer(h, W, b, last):
        """One dense layer: tanh, except for the last (its logits)."""
        z = h @ W + b
        return z if last else xnp.tanh(z)

    def log_softmax(h):
        shifted = h - xnp.max(h, axis=1, keepdims=True)
        return shifted - xnp.log(xnp.sum(xnp.exp(shifted), axis=1, keepdims=True))

    def mlp_loss(params, x, y):
        """Softmax cross-entropy of a tanh MLP; ``params`` holds W0, b0, W1, b1, ...; ``y`` one-hot."""
        h = x
        n_layers = len(params) // 2
        for i in range(n_layers):
            h = layer(h, params[f"W{i}"], params[f"b{i}"], last=i == n_layers - 1)
        return -xnp.mean(xnp.sum(y * log_softmax(h), axis=1))
    return mlp_loss


mlp_loss = mlp_loss_for(np)


def mlp_example(batch: int = 8, sizes=(4, 8, 3), seed: int = 0, dtype=np.float64):
    """(params, x, y) for ``mlp_loss``: random weights scaled by 1/sqrt(fan-in), one-hot labels."""
    rng = np.random.default_rng(seed)
    params = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"W{i}"] = (rng.standard_normal((m, n)) / np.sqrt(m)).astype(dtype)
        params[f"b{i}"] = np.zeros(n, dtype)
    x = rng.standard_normal((batch, sizes[0])).astype(dtype)
    y = np.eye(sizes[-1], dtype=dtype)[rng.integers(0, sizes[-1], batch)]
    return params, x, y


def cell(h, x, Wh, Wx, b):
    """One step of an Elman RNN: the new hidden state."""
    return np.tanh(h @ Wh + x @ Wx + b)


def rnn_loss(params, xs, y):
    """Squared error of a linear read-out of an RNN's last hidden state; ``xs`` holds the steps
    (one ``cell`` call each: scopes ``cell#1``, ``cell#2``, ...)."""
    h = np.zeros((xs.shape[1], params["Wh"].shape[0]))
    for x in xs:
        h = cell(h, x, params["Wh"], params["Wx"], params["b"])
    return np.mean((h @ params["Wo"] - y) ** 2)


def rnn_example(steps: int = 40, batch: int = 4, n_in: int = 3, n_hidden: int = 8, seed: int = 0):
    """(params, xs, y) for ``rnn_loss``: ``steps`` inputs of shape (batch, n_in)."""
    rng = np.random.default_rng(seed)
    params = {"Wh": rng.normal(size=(n_hidden, n_hidden)) / np.sqrt(n_hidden),
              "Wx": rng.normal(size=(n_in, n_hidden)) / np.sqrt(n_in),
              "b": np.zeros(n_hidden), "Wo": rng.normal(size=(n_hidden, 1)) / np.sqrt(n_hidden)}
    return params, rng.normal(size=(steps, batch, n_in)), rng.normal(size=(batch, 1))
