"""The five workloads of issue 19, as data: each has its loss (plain numpy, what ``ad`` traces),
its inputs, and the gradient a careful person writes by hand, which the benchmarks divide by.

(a) ``mlp``: MLP 784-512-512-10, batch 256, tanh, softmax cross-entropy, float64 (BLAS-bound).
(b) ``vector``: a length-16 vector through 240 elementwise ops (60 rounds of
    ``x = 0.9 sin(x) + 0.1 x``): bound by per-operation overhead.
(c) ``scalar``: the same on 16 Python floats (3,856 scalar ops with the final sum), with a
    hand gradient in ``math`` and one in numpy (numpy functions on Python floats).
(d) ``cnn``: conv 32x1x28x28 with 16 3x3 filters (padding 1, bias), relu, 2x2 max-pool, dense
    to 10 classes, softmax cross-entropy, float64 (``ad.nn`` ops).
(e) ``chain``: 20,000 elementwise ops (10,000 rounds of ``x = 0.5 tanh(x)``) on length 1000.

``loss_for(xnp)`` writes the same program against another numpy-like module (autograd.numpy,
jax.numpy); ``torch_grad(torch, args)`` makes PyTorch eager's gradient call. Every gradient is
of the first argument.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ad import nn
from ad.examples import mlp_example, mlp_loss, mlp_loss_for


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    loss: Callable               # the program ad traces (plain numpy; ad.nn ops for the CNN)
    loss_for: Callable           # loss_for(xnp): the same program over autograd.numpy / jax.numpy
    args: Callable[[], tuple]    # fresh inputs
    by_hand: Callable            # the hand-written numpy gradient of args[0]
    torch_grad: Callable         # torch_grad(torch, args) -> a zero-argument gradient call
    by_math: Callable | None = None   # a hand-written gradient in `math` (Python floats only)
    jax_jit: str = ""            # why jax.jit is not measured, if it is not


# -- (a) MLP -------------------------------------------------------------------------------

SIZES = (784, 512, 512, 10)
BATCH = 256


def mlp_grad_by_hand(params, x, y):
    """The gradient a careful person writes (uses sum(y) == 1 per row)."""
    W0, b0, W1, b1, W2, b2 = (params[k] for k in ("W0", "b0", "W1", "b1", "W2", "b2"))
    h1 = np.tanh(x @ W0 + b0)
    h2 = np.tanh(h1 @ W1 + b1)
    logits = h2 @ W2 + b2
    e = np.exp(logits - np.max(logits, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    d = (p - y) / x.shape[0]
    g = {"W2": h2.T @ d, "b2": d.sum(0)}
    d = (d @ W2.T) * (1 - h2 * h2)
    g["W1"], g["b1"] = h1.T @ d, d.sum(0)
    d = (d @ W1.T) * (1 - h1 * h1)
    g["W0"], g["b0"] = x.T @ d, d.sum(0)
    return g


def mlp_loss_with_torch(torch, params, x, y):
    h = x
    for i in range(3):
        z = h @ params[f"W{i}"] + params[f"b{i}"]
        h = torch.tanh(z) if i < 2 else z
    return -(y * torch.log_softmax(h, dim=1)).sum(1).mean()


def _mlp_torch(torch, args):
    params, x, y = args
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tx, ty = torch.tensor(x), torch.tensor(y)
    return lambda: torch.autograd.grad(mlp_loss_with_torch(torch, tp, tx, ty), list(tp.values()))


MLP = Workload("mlp", "MLP 784-512-512-10, b=256, f64", mlp_loss, mlp_loss_for,
               lambda: mlp_example(BATCH, SIZES, 0, np.float64), mlp_grad_by_hand, _mlp_torch)


# -- (b) 240 elementwise ops on a vector, (c) the same on Python floats ----------------------

ROUNDS, N = 60, 16


def vector_loss_for(xnp):
    def vector_loss(x):
        for _ in range(ROUNDS):
            x = xnp.sin(x) * 0.9 + 0.1 * x
        return xnp.sum(x)
    return vector_loss


def vector_grad_by_hand(x):
    xs = []
    for _ in range(ROUNDS):
        xs.append(x)
        x = np.sin(x) * 0.9 + 0.1 * x
    g = np.ones_like(x)
    for x in reversed(xs):
        g = g * (0.9 * np.cos(x) + 0.1)
    return g


def _vector_torch(torch, args):
    tx = torch.tensor(args[0], requires_grad=True)
    loss = vector_loss_for(torch)
    return lambda: torch.autograd.grad(loss(tx), tx)


VECTOR = Workload("vector", f"{4 * ROUNDS} elementwise ops, length-{N} vector", vector_loss_for(np),
                  vector_loss_for, lambda: (np.random.default_rng(0).standard_normal(N),),
                  vector_grad_by_hand, _vector_torch)


def scalar_loss_for(xnp):
    def scalar_loss(xs):
        total = 0.0
        for x in xs:
            for _ in range(ROUNDS):
                x = xnp.sin(x) * 0.9 + 0.1 * x
            total = total + x
        return total
    return scalar_loss


def _scalar_grad(xs, lib):
    """d total / d xs[i]: the product of the rounds' derivatives, accumulated going forward."""
    grads = []
    for x in xs:
        g = 1.0
        for _ in range(ROUNDS):
            g = g * (0.9 * lib.cos(x) + 0.1)
            x = lib.sin(x) * 0.9 + 0.1 * x
        grads.append(g)
    return grads


def scalar_grad_by_math(xs):
    """The hand gradient with ``math``'s functions."""
    return _scalar_grad(xs, math)


def scalar_grad_by_hand(xs):
    """The same with numpy's functions (on Python floats, as the traced program calls them)."""
    return _scalar_grad(xs, np)


def _scalar_torch(torch, args):
    txs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in args[0]]
    loss = scalar_loss_for(torch)
    return lambda: torch.autograd.grad(loss(txs), txs)


SCALAR = Workload("scalar", f"the same on {N} Python floats ({N * 4 * ROUNDS + N:,} scalar ops)",
                  scalar_loss_for(np), scalar_loss_for,
                  lambda: ([float(v) for v in np.random.default_rng(0).standard_normal(N)],),
                  scalar_grad_by_hand, _scalar_torch, by_math=scalar_grad_by_math)


# -- (d) CNN -------------------------------------------------------------------------------
# The hand gradient keeps activations as (C, H, W, N) (batch innermost, like ad.nn's im2col),
# writes 3x3 convolutions as im2col + one GEMM, a 2x2 max-pool as three np.maximum of strided
# views with PyTorch's first-maximum gradient, masks applied by multiplying (np.where is 10x
# slower on random masks), in-place updates where they save a temporary, the softmax
# cross-entropy gradient fused to (softmax - y) / N.

CNN_SHAPE, FILTERS, CLASSES = (32, 1, 28, 28), 16, 10


def im2col3x3(a):
    """(C, H, W, N) -> (C*9, H*W*N) windows of a 3x3 convolution with padding 1."""
    c, h, w, n = a.shape
    padded = np.zeros((c, h + 2, w + 2, n), a.dtype)
    padded[:, 1:-1, 1:-1] = a
    cols = np.empty((c, 3, 3, h, w, n), a.dtype)
    for i in range(3):
        for j in range(3):
            cols[:, i, j] = padded[:, i:i + h, j:j + w]
    return cols.reshape(c * 9, h * w * n)


def col2im3x3(cols, shape):
    c, h, w, n = shape
    blocks = cols.reshape(c, 3, 3, h, w, n)
    padded = np.zeros((c, h + 2, w + 2, n), cols.dtype)
    for i in range(3):
        for j in range(3):
            padded[:, i:i + h, j:j + w] += blocks[:, i, j]
    return padded[:, 1:-1, 1:-1]


_CORNERS = [(slice(i, None, 2), slice(j, None, 2)) for i in range(2) for j in range(2)]


def conv_relu_pool(a, w, b):
    """Forward of conv3x3(pad 1) + bias, relu, 2x2 max-pool on (C, H, W, N): what the pullback needs."""
    c, h, wd, n = a.shape
    cols = im2col3x3(a)
    r = w.reshape(len(w), -1) @ cols
    r += b[:, None]
    np.maximum(r, 0, out=r)
    positive = r > 0
    r = r.reshape(len(w), h, wd, n)
    pooled = np.maximum(np.maximum(r[:, 0::2, 0::2], r[:, 0::2, 1::2]),
                        np.maximum(r[:, 1::2, 0::2], r[:, 1::2, 1::2]))
    return cols, positive, r, pooled


def pool_relu_back(d_pooled, positive, r, pooled):
    d = np.zeros_like(r)
    unclaimed = np.ones(pooled.shape, bool)
    for rows, cols in _CORNERS:
        hit = (r[:, rows, cols] == pooled) & unclaimed
        unclaimed ^= hit
        np.multiply(d_pooled, hit, out=d[:, rows, cols])
    d = d.reshape(positive.shape)
    d *= positive
    return d


def cnn_loss(params, x, y):
    h = nn.relu(nn.conv(x, params["w1"], padding=1) + np.reshape(params["b1"], (-1, 1, 1)))
    h = nn.max_pool(h, 2)
    return nn.logitcrossentropy(nn.flatten(h) @ params["w3"] + params["b3"], y)


def cnn_loss_for(xnp):
    """The CNN in basic array operations (9 shifted slices, a reshape max-pool), for numpy-likes
    without convolutions (autograd.numpy) and for jax.numpy."""
    def cnn_loss(params, x, y):
        n, c, h, w = x.shape
        padded = xnp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        windows = xnp.stack([padded[:, :, i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=2)
        z = xnp.einsum("nckhw,ock->nohw", windows, xnp.reshape(params["w1"], (FILTERS, c, 9)))
        r = xnp.maximum(z + xnp.reshape(params["b1"], (1, -1, 1, 1)), 0.0)
        pooled = xnp.max(xnp.reshape(r, (n, FILTERS, h // 2, 2, w // 2, 2)), axis=(3, 5))
        logits = xnp.reshape(pooled, (n, -1)) @ params["w3"] + params["b3"]
        shifted = logits - xnp.max(logits, axis=1, keepdims=True)
        logp = shifted - xnp.log(xnp.sum(xnp.exp(shifted), axis=1, keepdims=True))
        return -xnp.mean(xnp.sum(y * logp, axis=1))
    return cnn_loss


def cnn_args(seed: int = 0):
    rng = np.random.default_rng(seed)
    n, c, h, w = CNN_SHAPE
    params = {"w1": rng.standard_normal((FILTERS, c, 3, 3)) * np.sqrt(2 / 9),
              "b1": rng.standard_normal(FILTERS) * 0.1,
              "w3": rng.standard_normal((FILTERS * h * w // 4, CLASSES)) / np.sqrt(FILTERS * h * w // 4),
              "b3": np.zeros(CLASSES)}
    x = rng.random(CNN_SHAPE)
    y = np.eye(CLASSES)[rng.integers(0, CLASSES, n)]
    return params, x, y


def cnn_grad_by_hand(params, x, y):
    w1, b1, w3, b3 = (params[k] for k in ("w1", "b1", "w3", "b3"))
    n = len(x)
    cols, positive, r, pooled = conv_relu_pool(np.ascontiguousarray(np.moveaxis(x, 0, -1)), w1, b1)
    flat = np.moveaxis(pooled, -1, 0).reshape(n, -1)
    logits = flat @ w3 + b3
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    d_logits = (e / e.sum(axis=1, keepdims=True) - y) / n
    g = {"w3": flat.T @ d_logits, "b3": d_logits.sum(axis=0)}
    d_pooled = np.moveaxis((d_logits @ w3.T).reshape(n, *pooled.shape[:3]), 0, -1)
    dz = pool_relu_back(d_pooled, positive, r, pooled)
    g["w1"], g["b1"] = (dz @ cols.T).reshape(w1.shape), dz.sum(axis=1)
    return g


def _cnn_torch(torch, args):
    """PyTorch eager with its native convolution and pooling kernels."""
    import torch.nn.functional as F
    params, x, y = args
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tx, labels = torch.tensor(x), torch.tensor(np.argmax(y, axis=1))

    def grad():
        h = F.max_pool2d(F.relu(F.conv2d(tx, tp["w1"], tp["b1"], padding=1)), 2)
        loss = F.cross_entropy(h.flatten(1) @ tp["w3"] + tp["b3"], labels)
        return torch.autograd.grad(loss, list(tp.values()))
    return grad


CNN = Workload("cnn", "conv 32x1x28x28, 16 3x3 filters, pool, dense, CE", cnn_loss, cnn_loss_for,
               cnn_args, cnn_grad_by_hand, _cnn_torch)


# -- (e) a long chain ------------------------------------------------------------------------

CHAIN_OPS, CHAIN_N = 20_000, 1000


def chain_loss_for(xnp, n_ops: int = CHAIN_OPS):
    def chain_loss(x):
        for _ in range(n_ops // 2):
            x = xnp.tanh(x) * 0.5
        return xnp.sum(x)
    return chain_loss


def chain_grad_by_hand(x, n_ops: int = CHAIN_OPS):
    ts = []
    for _ in range(n_ops // 2):
        t = np.tanh(x)
        ts.append(t)
        x = t * 0.5
    g = np.ones_like(x)
    for t in reversed(ts):
        g = g * (0.5 - 0.5 * t * t)
    return g


def _chain_torch(torch, args):
    tx = torch.tensor(args[0], requires_grad=True)
    loss = chain_loss_for(torch)
    return lambda: torch.autograd.grad(loss(tx), tx)


CHAIN = Workload("chain", f"{CHAIN_OPS:,}-op chain, length {CHAIN_N}", chain_loss_for(np), chain_loss_for,
                 lambda: (np.linspace(-1, 1, CHAIN_N),), chain_grad_by_hand, _chain_torch,
                 jax_jit="not measured: XLA's compile time of a 20,000-op program explodes")


WORKLOADS = {w.name: w for w in (MLP, VECTOR, SCALAR, CNN, CHAIN)}
