"""(a) MLP loss gradient: batch 256, 784-512-512-10, tanh, softmax cross-entropy.

ad.grad (compiled, lifted, closure) against a hand-written numpy gradient, and HIPS autograd,
PyTorch eager and JAX (eager and jit) when installed. float64 and float32.
"""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402

from ad.examples import mlp_example, mlp_loss, mlp_loss_for  # noqa: E402
from bench.workloads import BATCH, SIZES, mlp_grad_by_hand, mlp_loss_with_torch  # noqa: E402

def data(dtype, seed=0):
    return mlp_example(BATCH, SIZES, seed, dtype)


def contenders(dtype) -> dict:
    params, x, y = data(dtype)
    out = {"numpy by hand": lambda: mlp_grad_by_hand(params, x, y)}
    for form in ("compiled", "lifted", "closure"):
        g = ad.grad(mlp_loss, form=form)
        out[f"ad.grad {form}"] = lambda g=g: g(params, x, y)
    ref = mlp_grad_by_hand(params, x, y)
    got = ad.grad(mlp_loss, form="compiled")(params, x, y)
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
            value = mlp_loss_with_torch(torch, tp, tx, ty)
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


def run(rounds: int = 9) -> str:
    report = []
    for dtype in (np.float64, np.float32):
        times = measure(contenders(dtype), rounds=rounds)
        report.append(table(f"MLP gradient, {np.dtype(dtype).name}", times, "numpy by hand"))
    return "\n".join(report)


if __name__ == "__main__":
    print(run())
