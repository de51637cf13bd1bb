"""(i) Batching (issue 31): Jacobians with all basis vectors through one batched tape
(``ad.jacfwd``/``ad.jacrev``, the default) beside the loop over them (``batched=False``) and
``jax.jit`` of the same, in both directions of a tall (8 -> 512) and a wide (512 -> 8) Jacobian;
per-example gradients of an MLP (64-32-10 and 784-128-10, batch 256): ``ad.vmap(ad.grad(loss))``
beside a Python loop of ``ad.grad``, a hand-written batched numpy gradient (einsum),
``jax.vmap(jax.grad)`` (eager and jit) and ``torch.func.vmap(grad)`` when installed. float64.
Goals (issue 31): the small MLP at least 10x faster than the loop, the large one within 1.5x of
the hand-written gradient; the costly directions of the Jacobians within 2x of ``jax.jit``.

The Jacobians are of x -> tanh(A @ x), as bench_forward's.
"""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402

from ad.examples import mlp_example, mlp_loss, mlp_loss_for  # noqa: E402

SHAPES = {"tall, 8 -> 512": (512, 8), "wide, 512 -> 8": (8, 512)}
BATCH, MLPS = 256, ((64, 32, 10), (784, 128, 10))


def _jax():
    jax = optional("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    return jax


def jacobian_contenders(m: int, n: int) -> dict:
    rng = np.random.default_rng(2)
    A, x = rng.standard_normal((m, n)) / np.sqrt(n), rng.standard_normal(n)

    def f(x):
        return np.tanh(A @ x)
    out = {}
    for name, jac in (("jacfwd", ad.jacfwd), ("jacrev", ad.jacrev)):
        for form in ("lifted", "compiled"):
            out[f"ad.{name} {form}, batched"] = (lambda j: lambda: j(x))(jac(f, form=form))
            out[f"ad.{name} {form}, loop"] = (lambda j: lambda: j(x))(jac(f, form=form, batched=False))
    want = (1 - np.tanh(A @ x) ** 2)[:, None] * A
    assert all(np.allclose(c(), want) for c in out.values()), "Jacobians differ"
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp
        jA, jx = jnp.asarray(A), jnp.asarray(x)

        def jf(x):
            return jnp.tanh(jA @ x)
        for name, op in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev)):
            out[f"JAX {name} jit"] = (lambda j: lambda: jax.block_until_ready(j(jx)))(jax.jit(op(jf)))
    return out


def _hand_per_example(params, x, y):
    """Per-example gradients of the MLP loss written by hand: the batched backward pass, the
    weight gradients as per-example outer products (einsum)."""
    n_layers = len(params) // 2
    hs, h = [x], x
    for i in range(n_layers):
        z = h @ params[f"W{i}"] + params[f"b{i}"]
        h = z if i == n_layers - 1 else np.tanh(z)
        hs.append(h)
    p = np.exp(h - h.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    dz = p - y                          # each example's loss alone (a batch of one: mean over 1)
    grads = {}
    for i in reversed(range(n_layers)):
        grads[f"W{i}"] = np.einsum("bi,bj->bij", hs[i], dz)
        grads[f"b{i}"] = dz
        if i:
            dz = (dz @ params[f"W{i}"].T) * (1 - hs[i] ** 2)
    return grads


def per_example_contenders(sizes) -> dict:
    params, x, y = mlp_example(BATCH, sizes, 0, np.float64)
    xs, ys = x[:, None], y[:, None]           # each example a batch of one
    g = ad.grad(mlp_loss, form="compiled")
    out = {"hand-written batched numpy (einsum)": lambda: _hand_per_example(params, x, y)}
    for form in ("compiled", "lifted"):
        out[f"ad.vmap(ad.grad) {form}"] = (lambda v: lambda: v(params, xs, ys))(
            ad.vmap(ad.grad(mlp_loss, form=form), in_axes=(None, 0, 0), form=form))
    out["Python loop of ad.grad compiled"] = lambda: [g(params, xs[i], ys[i]) for i in range(BATCH)]
    want, got = _hand_per_example(params, x, y), out["ad.vmap(ad.grad) compiled"]()
    assert all(np.allclose(got[k], want[k]) for k in params), "per-example gradients differ"
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp
        jl = mlp_loss_for(jnp)
        jp = {k: jnp.asarray(v) for k, v in params.items()}
        jxs, jys = jnp.asarray(xs), jnp.asarray(ys)
        per = jax.vmap(jax.grad(jl), in_axes=(None, 0, 0))
        out["JAX vmap(grad) eager"] = lambda: jax.block_until_ready(per(jp, jxs, jys))
        out["JAX vmap(grad) jit"] = (lambda f: lambda: jax.block_until_ready(f(jp, jxs, jys)))(jax.jit(per))
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        from torch.func import grad as tgrad, vmap as tvmap
        tl = mlp_loss_for(_TorchNumpy(torch))
        tp = {k: torch.tensor(v) for k, v in params.items()}
        txs, tys = torch.tensor(xs), torch.tensor(ys)
        out["torch.func vmap(grad)"] = (lambda f: lambda: f(tp, txs, tys))(tvmap(tgrad(tl), in_dims=(None, 0, 0)))
    return out


class _TorchNumpy:
    """The few numpy names ``mlp_loss_for`` calls, spelled with torch."""

    def __init__(self, torch):
        self.torch = torch

    def tanh(self, x):
        return self.torch.tanh(x)

    def exp(self, x):
        return self.torch.exp(x)

    def log(self, x):
        return self.torch.log(x)

    def max(self, x, axis, keepdims):
        return self.torch.amax(x, dim=axis, keepdim=keepdims)

    def sum(self, x, axis, keepdims=False):
        return self.torch.sum(x, dim=axis, keepdim=keepdims)

    def mean(self, x):
        return self.torch.mean(x)


def run(rounds: int = 9) -> str:
    report = [table(f"Per-example gradients of an MLP {'-'.join(map(str, sizes))}, batch {BATCH}, float64",
                    measure(per_example_contenders(sizes), rounds=rounds), "hand-written batched numpy (einsum)")
              for sizes in MLPS]
    for title, (m, n) in SHAPES.items():
        report.append(table(f"Jacobian of tanh(A @ x), {title}: batched beside the loop over basis vectors",
                            measure(jacobian_contenders(m, n), rounds=rounds), "ad.jacfwd compiled, batched"))
    return "\n".join(report)


if __name__ == "__main__":
    print(run())
