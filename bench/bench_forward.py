"""(h) Forward mode: jvp of the MLP loss against its forward pass (goal: at most 3x), a
Hessian-vector product against one gradient (goal: at most 5x), jacfwd against jacrev on a tall
and a wide Jacobian; each against JAX (eager and jit) and torch.func when installed. float64.

The MLP is bench_mlp's (batch 256, 784-512-512-10, tanh, softmax cross-entropy); the tangent
(and the Hessian's direction) moves every parameter. The Jacobians are of x -> tanh(A @ x),
8 -> 512 (tall) and 512 -> 8 (wide).
"""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402

from ad.examples import mlp_example, mlp_loss, mlp_loss_for  # noqa: E402
from bench.workloads import BATCH, SIZES, mlp_loss_with_torch as _loss_with_torch  # noqa: E402

SHAPES = {"tall, 8 -> 512": (512, 8), "wide, 512 -> 8": (8, 512)}


def _mlp():
    params, x, y = mlp_example(BATCH, SIZES, 0, np.float64)
    rng = np.random.default_rng(1)
    tangent = {k: rng.standard_normal(v.shape) for k, v in params.items()}
    return params, x, y, tangent


def _jax():
    jax = optional("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    return jax


def _torch():
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
    return torch


def jvp_contenders() -> dict:
    params, x, y, tangent = _mlp()
    out = {"forward pass (numpy)": lambda: mlp_loss(params, x, y)}
    for form in ("compiled", "lifted"):
        out[f"ad.jvp {form}"] = lambda form=form: ad.jvp(mlp_loss, (params, x, y), (tangent, None, None), form=form)
    _, ty = ad.jvp(mlp_loss, (params, x, y), (tangent, None, None))
    eps = 1e-6
    fd = (mlp_loss({k: v + eps * tangent[k] for k, v in params.items()}, x, y)
          - mlp_loss({k: v - eps * tangent[k] for k, v in params.items()}, x, y)) / (2 * eps)
    assert np.isclose(ty, fd, rtol=1e-6), (ty, fd)
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp
        jl = mlp_loss_for(jnp)
        jp, jt = ({k: jnp.asarray(v) for k, v in d.items()} for d in (params, tangent))
        jx, jy = jnp.asarray(x), jnp.asarray(y)

        def jvp(p, t):
            return jax.jvp(lambda p: jl(p, jx, jy), (p,), (t,))
        jit = jax.jit(jvp)
        out["JAX eager"] = lambda: jax.block_until_ready(jvp(jp, jt))
        out["JAX jit"] = lambda: jax.block_until_ready(jit(jp, jt))
        fwd_jit = jax.jit(jl)
        out["JAX jit forward pass"] = lambda: jax.block_until_ready(fwd_jit(jp, jx, jy))
    torch = _torch()
    if torch is not None:
        from torch.func import jvp as tjvp
        tp, tt = ({k: torch.tensor(v) for k, v in d.items()} for d in (params, tangent))
        tx, tyy = torch.tensor(x), torch.tensor(y)
        out["torch.func.jvp"] = lambda: tjvp(lambda p: _loss_with_torch(torch, p, tx, tyy), (tp,), (tt,))
        out["PyTorch forward pass"] = lambda: _loss_with_torch(torch, tp, tx, tyy)
    return out


def hvp_contenders() -> dict:
    params, x, y, tangent = _mlp()
    g = ad.grad(mlp_loss, form="compiled")
    out = {"ad.grad compiled": lambda: g(params, x, y)}
    for form in ("compiled", "lifted"):
        out[f"ad.hvp {form}"] = lambda form=form: ad.hvp(mlp_loss, (params, x, y), (tangent, None, None), form=form)
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp
        jl = mlp_loss_for(jnp)
        jp, jt = ({k: jnp.asarray(v) for k, v in d.items()} for d in (params, tangent))
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        jg = jax.grad(lambda p: jl(p, jx, jy))

        def hvp(p, t):
            return jax.jvp(jg, (p,), (t,))
        out["JAX grad jit"] = (lambda f: lambda: jax.block_until_ready(f(jp)))(jax.jit(jg))
        out["JAX hvp eager"] = lambda: jax.block_until_ready(hvp(jp, jt))
        out["JAX hvp jit"] = (lambda f: lambda: jax.block_until_ready(f(jp, jt)))(jax.jit(hvp))
    torch = _torch()
    if torch is not None:
        from torch.func import grad as tgrad, jvp as tjvp
        tp, tt = ({k: torch.tensor(v) for k, v in d.items()} for d in (params, tangent))
        tx, tyy = torch.tensor(x), torch.tensor(y)
        tg = tgrad(lambda p: _loss_with_torch(torch, p, tx, tyy))
        out["torch.func grad"] = lambda: tg(tp)
        out["torch.func hvp (jvp of grad)"] = lambda: tjvp(tg, (tp,), (tt,))
    return out


def jacobian_contenders(m: int, n: int) -> dict:
    rng = np.random.default_rng(2)
    A, x = rng.standard_normal((m, n)) / np.sqrt(n), rng.standard_normal(n)

    def f(x):
        return np.tanh(A @ x)
    out = {name: (lambda j: lambda: j(x))(j) for name, j in (
        ("ad.jacfwd", ad.jacfwd(f)), ("ad.jacfwd compiled", ad.jacfwd(f, form="compiled")),
        ("ad.jacrev", ad.jacrev(f)), ("ad.jacobian", ad.jacobian(f)))}
    want = (1 - np.tanh(A @ x) ** 2)[:, None] * A
    assert all(np.allclose(c(), want) for c in out.values()), "Jacobians differ"
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp
        jA, jx = jnp.asarray(A), jnp.asarray(x)

        def jf(x):
            return jnp.tanh(jA @ x)
        for name, op in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev)):
            out[f"JAX {name} eager"] = (lambda j: lambda: jax.block_until_ready(j(jx)))(op(jf))
            out[f"JAX {name} jit"] = (lambda j: lambda: jax.block_until_ready(j(jx)))(jax.jit(op(jf)))
    torch = _torch()
    if torch is not None:
        from torch.func import jacfwd as tjacfwd, jacrev as tjacrev
        tA, tx = torch.tensor(A), torch.tensor(x)

        def tf(x):
            return torch.tanh(tA @ x)
        out["torch.func.jacfwd"] = (lambda j: lambda: j(tx))(tjacfwd(tf))
        out["torch.func.jacrev"] = (lambda j: lambda: j(tx))(tjacrev(tf))
    return out


def run(rounds: int = 9) -> str:
    report = [table("jvp of the MLP loss, float64 (goal: ad.jvp at most 3x the forward pass)",
                    measure(jvp_contenders(), rounds=rounds), "forward pass (numpy)"),
              table("Hessian-vector product of the MLP loss, float64 (goal: ad.hvp at most 5x one gradient)",
                    measure(hvp_contenders(), rounds=rounds), "ad.grad compiled")]
    for title, (m, n) in SHAPES.items():
        report.append(table(f"Jacobian of tanh(A @ x), {title}", measure(jacobian_contenders(m, n), rounds=rounds),
                            "ad.jacfwd"))
    return "\n".join(report)


if __name__ == "__main__":
    print(run())
