"""(a) MLP loss gradient: batch 256, 784-512-512-10, tanh, softmax cross-entropy.

ad.grad (compiled, lifted, closure) against a hand-written numpy gradient, and HIPS autograd,
PyTorch eager and JAX (eager and jit) when installed. float64 and float32.
"""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402

from ad.examples import mlp_example, mlp_loss, mlp_loss_for  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 256
loss = mlp_loss


def grad_by_hand(params, x, y):
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


def data(dtype, seed=0):
    return mlp_example(BATCH, SIZES, seed, dtype)


def contenders(dtype) -> dict:
    params, x, y = data(dtype)
    out = {"numpy by hand": lambda: grad_by_hand(params, x, y)}
    for form in ("compiled", "lifted", "closure"):
        g = ad.grad(loss, form=form)
        out[f"ad.grad {form}"] = lambda g=g: g(params, x, y)
    ref = grad_by_hand(params, x, y)
    got = ad.grad(loss, form="compiled")(params, x, y)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    assert all(np.allclose(got[k], ref[k], rtol=tol, atol=tol) for k in ref), "gradients differ"
    autograd = optional("autograd")
    if autograd is not None:
        import autograd.numpy as anp
        ag = autograd.grad(mlp_loss_for(anp))
        out["HIPS autograd"] = lambda: ag(params, x, y)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
        tx, ty = torch.tensor(x), torch.tensor(y)

        def torch_grad():
            value = _loss_with_torch(torch, tp, tx, ty)
            return torch.autograd.grad(value, list(tp.values()))
        out["PyTorch eager"] = torch_grad
    jax = optional("jax")
    if jax is not None:
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", dtype == np.float64)
        jg = jax.grad(mlp_loss_for(jnp))
        jp = {k: jnp.asarray(v) for k, v in params.items()}
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        jit = jax.jit(jg)
        out["JAX eager"] = lambda: jax.block_until_ready(jg(jp, jx, jy))
        out["JAX jit"] = lambda: jax.block_until_ready(jit(jp, jx, jy))
    return out


def _loss_with_torch(torch, params, x, y):
    h = x
    for i in range(3):
        z = h @ params[f"W{i}"] + params[f"b{i}"]
        h = torch.tanh(z) if i < 2 else z
    return -(y * torch.log_softmax(h, dim=1)).sum(1).mean()


def run(rounds: int = 9) -> str:
    report = []
    for dtype in (np.float64, np.float32):
        times = measure(contenders(dtype), rounds=rounds)
        report.append(table(f"MLP gradient, {np.dtype(dtype).name}", times, "numpy by hand"))
    return "\n".join(report)


if __name__ == "__main__":
    print(run())
