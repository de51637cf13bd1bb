"""(g) Spectral losses of a 4096-sample real signal: the gradient through np.fft.

Two losses of a signal ``x`` fitted to a noisy target ``y``:

* smoothing: ``sum(w * |rfft(x)|^2) + lam * sum((x - y)^2)``, a penalty rising with frequency;
* low-pass: ``sum((irfft(H * rfft(x)) - y)^2)``, a filtered signal against the target.

ad.grad (compiled, lifted, closure) against the gradient derived by hand in numpy, HIPS autograd,
PyTorch eager (one thread) and JAX (eager and jit) when installed. All gradients are checked
against the hand-written one before anything is timed.
"""
from __future__ import annotations

from bench.common import measure, optional, table

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402

N = 4096
LAM = 0.5


def data(seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(N) / N
    y = np.sin(2 * np.pi * 5 * t) + 0.5 * np.sin(2 * np.pi * 40 * t) + 0.3 * rng.standard_normal(N)
    x = y + 0.1 * rng.standard_normal(N)
    k = np.arange(N // 2 + 1) / (N // 2)
    w = k ** 2                             # the smoothing penalty per frequency bin
    h = 1.0 / (1.0 + (k / 0.05) ** 8)      # a Butterworth-like low-pass response
    return x, y, w, h


def smoothing_for(xp):
    def loss(x, y, w):
        spectrum = xp.fft.rfft(x)
        return xp.sum(w * xp.abs(spectrum) ** 2) + LAM * xp.sum((x - y) ** 2)
    return loss


def lowpass_for(xp):
    def loss(x, y, h):
        return xp.sum((xp.fft.irfft(h * xp.fft.rfft(x), n=N) - y) ** 2)
    return loss


def _doubled_ends(c):
    """The half spectrum with its DC and Nyquist bins doubled: irfft reads those once, the
    other bins twice (as c_k and conj(c_k) of the full spectrum)."""
    c = c.copy()
    c[0] *= 2
    c[-1] *= 2
    return c


def smoothing_by_hand(x, y, w):
    """d/dx_j sum_k w_k |X_k|^2 = 2 Re sum_k w_k X_k e^{2 pi i jk/n} over the half spectrum, which
    is n * irfft of w X with its DC and Nyquist bins doubled (n even)."""
    return N * np.fft.irfft(_doubled_ends(w * np.fft.rfft(x)), n=N) + 2 * LAM * (x - y)


def lowpass_by_hand(x, y, h):
    """x -> irfft(h rfft(x)) is a real symmetric operator A for a real response h: the gradient
    of |A x - y|^2 is 2 A (A x - y)."""
    def a(v):
        return np.fft.irfft(h * np.fft.rfft(v), n=N)
    return 2 * a(a(x) - y)


# name -> (loss written against a numpy-like module, gradient by hand, which of w/h it takes)
LOSSES = {"smoothing": (smoothing_for, smoothing_by_hand, 2), "low-pass": (lowpass_for, lowpass_by_hand, 3)}


def contenders(name: str) -> dict:
    loss_for, by_hand, which = LOSSES[name]
    x, y, p = (data()[k] for k in (0, 1, which))
    ref = by_hand(x, y, p)
    out = {"numpy by hand": lambda: by_hand(x, y, p)}
    check = {}
    for form in ("compiled", "lifted", "closure"):
        g = ad.grad(loss_for(np), form=form)
        out[f"ad.grad {form}"] = check[f"ad.grad {form}"] = lambda g=g: g(x, y, p)
    autograd = optional("autograd")
    if autograd is not None:
        import autograd.numpy as anp
        ag = autograd.grad(loss_for(anp))
        out["HIPS autograd"] = check["HIPS autograd"] = lambda: ag(x, y, p)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        tx = torch.tensor(x, requires_grad=True)
        ty, tp = torch.tensor(y), torch.tensor(p)
        torch_loss = loss_for(_TorchNumpy(torch))

        def torch_grad():
            return torch.autograd.grad(torch_loss(tx, ty, tp), tx)[0]
        out["PyTorch eager"] = torch_grad
        check["PyTorch eager"] = lambda: torch_grad().numpy()
    jax = optional("jax")
    if jax is not None:
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        jg = jax.grad(loss_for(jnp))
        jit = jax.jit(jg)
        jx, jy, jp = jnp.asarray(x), jnp.asarray(y), jnp.asarray(p)
        out["JAX eager"] = lambda: jax.block_until_ready(jg(jx, jy, jp))
        out["JAX jit"] = lambda: jax.block_until_ready(jit(jx, jy, jp))
        check["JAX eager"], check["JAX jit"] = (lambda: np.asarray(jg(jx, jy, jp))), (lambda: np.asarray(jit(jx, jy, jp)))
    scale = np.max(np.abs(ref))
    for who, fn in check.items():
        got = np.asarray(fn())
        assert np.allclose(got, ref, rtol=1e-9, atol=1e-9 * scale), f"{name}: {who}'s gradient differs from numpy's"
    return out


class _TorchNumpy:
    """The numpy spellings the losses use, for torch tensors."""
    def __init__(self, torch):
        self.fft, self.abs, self.sum = torch.fft, torch.abs, torch.sum


def run(rounds: int = 9) -> str:
    return "\n".join(table(f"Spectral loss gradient ({name}), {N} samples, float64", measure(contenders(name), rounds=rounds),
                           "numpy by hand") for name in LOSSES)


if __name__ == "__main__":
    print(run())
