"""Built-in example programs, written in plain numpy (used by the demo, the docs and tests)."""
from __future__ import annotations

import numpy as np


def mlp_loss_for(xnp):
    """The MLP loss written against the numpy-like module ``xnp`` (numpy for ad; the benchmarks
    pass autograd.numpy or jax.numpy to run the very same program through other systems)."""
    def mlp_loss(params, x, y):
        """Softmax cross-entropy of a tanh MLP; ``params`` holds W0, b0, W1, b1, ...; ``y`` one-hot."""
        h = x
        n_layers = len(params) // 2
        for i in range(n_layers):
            z = h @ params[f"W{i}"] + params[f"b{i}"]
            h = xnp.tanh(z) if i < n_layers - 1 else z
        shifted = h - xnp.max(h, axis=1, keepdims=True)
        logp = shifted - xnp.log(xnp.sum(xnp.exp(shifted), axis=1, keepdims=True))
        return -xnp.mean(xnp.sum(y * logp, axis=1))
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
