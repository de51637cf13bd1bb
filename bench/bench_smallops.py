"""(b) Overhead-bound work: a length-16 vector through 200 elementwise ops (50 rounds of
x = 0.9 sin(x) + 0.1 x). ad.grad against a hand-written numpy gradient, HIPS autograd, PyTorch
eager and JAX when installed."""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402

import ad  # noqa: E402

ROUNDS, N = 50, 16


def f(x):
    for _ in range(ROUNDS):
        x = np.sin(x) * 0.9 + 0.1 * x
    return np.sum(x)


def grad_by_hand(x):
    xs = []
    for _ in range(ROUNDS):
        xs.append(x)
        x = np.sin(x) * 0.9 + 0.1 * x
    g = np.ones_like(x)
    for x in reversed(xs):
        g = g * (0.9 * np.cos(x) + 0.1)
    return g


def contenders() -> dict:
    x = np.random.default_rng(0).standard_normal(N)
    assert np.allclose(ad.grad(f, form="compiled")(x), grad_by_hand(x), rtol=1e-12)
    out = {"numpy by hand": lambda: grad_by_hand(x)}
    for form in ("compiled", "lifted", "closure"):
        g = ad.grad(f, form=form)
        out[f"ad.grad {form}"] = lambda g=g: g(x)
    autograd = optional("autograd")
    if autograd is not None:
        import autograd.numpy as anp

        def fa(x):
            for _ in range(ROUNDS):
                x = anp.sin(x) * 0.9 + 0.1 * x
            return anp.sum(x)
        ag = autograd.grad(fa)
        out["HIPS autograd"] = lambda: ag(x)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        tx = torch.tensor(x, requires_grad=True)

        def torch_grad():
            y = tx
            for _ in range(ROUNDS):
                y = torch.sin(y) * 0.9 + 0.1 * y
            return torch.autograd.grad(y.sum(), tx)
        out["PyTorch eager"] = torch_grad
    jax = optional("jax")
    if jax is not None:
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def fj(x):
            for _ in range(ROUNDS):
                x = jnp.sin(x) * 0.9 + 0.1 * x
            return jnp.sum(x)
        jg, jx = jax.grad(fj), jnp.asarray(x)
        jit = jax.jit(jg)
        out["JAX eager"] = lambda: jax.block_until_ready(jg(jx))
        out["JAX jit"] = lambda: jax.block_until_ready(jit(jx))
    return out


def run(rounds: int = 9) -> str:
    return table(f"Small ops: length-{N} vector, {4 * ROUNDS} elementwise ops", measure(contenders(), rounds=rounds),
                 "numpy by hand")


if __name__ == "__main__":
    print(run())
