"""(d) The digits CNN's gradient: ad (compiled gradient tape) against a hand-written numpy
gradient and PyTorch eager (CPU).

Model (``ad.examples.networks``): conv3x3(1->8, pad 1) relu maxpool2 conv3x3(8->16, pad 1) relu
maxpool2 dense(64->10) logitcrossentropy on scikit-learn's 8x8 digits; one call computes the
loss and the gradient of all six parameters. Sizes: batch 64 (a training step's minibatch:
overhead-bound, about 2 ms) and batch 512 (memory-bound, about 10-30 ms); float32 and float64.
One BLAS/OpenMP thread, contenders interleaved, medians of CPU time per call (``bench.common``).

    python -m bench.bench_cnn
"""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402
from ad.examples import networks as examples  # noqa: E402
from bench.workloads import col2im3x3, conv_relu_pool, pool_relu_back  # noqa: E402

BATCHES = (64, 512)


# -- hand-written numpy -------------------------------------------------------------------
# The tricks of bench.workloads' CNN gradient (layout (C, H, W, N), im2col + GEMM, max-pool by
# strided views), for two conv layers.

def numpy_grad(params, x, y):
    """Loss and gradients of the digits CNN, written by hand."""
    w1, b1, w2, b2, w3, b3 = (params[k] for k in ("w1", "b1", "w2", "b2", "w3", "b3"))
    n = len(x)
    a0 = np.ascontiguousarray(np.moveaxis(x, 0, -1))
    cols1, pos1, r1, p1 = conv_relu_pool(a0, w1, b1)
    cols2, pos2, r2, p2 = conv_relu_pool(p1, w2, b2)
    flat = np.moveaxis(p2, -1, 0).reshape(n, -1)
    logits = flat @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    loss = -np.mean(np.sum(y * (shifted - np.log(total)), axis=1))
    d_logits = (e / total - y) / n
    g = {"w3": flat.T @ d_logits, "b3": d_logits.sum(axis=0)}
    d_p2 = np.moveaxis((d_logits @ w3.T).reshape(np.moveaxis(p2, -1, 0).shape), 0, -1)
    dz2 = pool_relu_back(d_p2, pos2, r2, p2)
    g["w2"], g["b2"] = (dz2 @ cols2.T).reshape(w2.shape), dz2.sum(axis=1)
    d_p1 = col2im3x3(w2.reshape(len(w2), -1).T @ dz2, p1.shape)
    dz1 = pool_relu_back(d_p1, pos1, r1, p1)
    g["w1"], g["b1"] = (dz1 @ cols1.T).reshape(w1.shape), dz1.sum(axis=1)
    return loss, g


# -- PyTorch eager ------------------------------------------------------------------------

def torch_contender(torch, params, x, y):
    import torch.nn.functional as F
    torch.set_num_threads(1)
    tp = {k: torch.tensor(v) for k, v in params.items()}
    tx, labels = torch.tensor(x), torch.tensor(np.argmax(y, axis=1))

    def grad():
        p = {k: v.detach().requires_grad_() for k, v in tp.items()}
        h = F.max_pool2d(F.relu(F.conv2d(tx, p["w1"], p["b1"], padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, p["w2"], p["b2"], padding=1)), 2)
        loss = F.cross_entropy(h.flatten(1) @ p["w3"] + p["b3"], labels)
        loss.backward()
        return loss, {k: v.grad.numpy() for k, v in p.items()}
    return grad


def contenders(batch: int, dtype) -> dict:
    model = examples.digits_cnn(dtype=dtype)
    x, y, params = model.x[:batch], model.y[:batch], model.params
    ad_grad = ad.value_and_grad(model.loss, form="compiled")
    out = {"numpy by hand": lambda: numpy_grad(params, x, y),
           "ad.grad compiled": lambda: ad_grad(params, x, y)}
    torch = optional("torch")
    if torch is not None:
        out["PyTorch eager"] = torch_contender(torch, params, x, y)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    ref = numpy_grad(params, x, y)[1]
    for name, fn in out.items():       # all compute the same gradient (max-pool ties included)
        got = fn()[1]
        assert all(np.allclose(got[k], ref[k], rtol=tol, atol=tol) for k in ref), f"{name} differs"
    return out


def run(rounds: int = 9) -> str:
    report = []
    for dtype in (np.float32, np.float64):
        for batch in BATCHES:
            times = measure(contenders(batch, dtype), rounds=rounds)
            report.append(table(f"digits CNN gradient, batch {batch}, {np.dtype(dtype).name}",
                                times, "ad.grad compiled"))
    return "\n".join(report)


if __name__ == "__main__":
    print(run())
