"""Finite differences done carefully: a 5-point stencil, Richardson extrapolation, a
convergence test, steps capped to the input's domain, and one-sided estimates for classifying
kinks. Used by the checker and the tests.

The basic quantity is a directional derivative ``J(x) u`` of a function of several arrays; the
dot-product test compares ``<J u, v>`` with ``<u, J^T v>`` from a pullback, which checks the
whole Jacobian in one scalar per random direction pair. Everything is computed in float64 (a
complex value as its real and imaginary parts); the rounding noise of lower-precision outputs
widens the convergence test instead of failing it.

Complex numbers follow the convention of ``ad`` (HIPS autograd's and JAX's): the cotangent ``g``
of a complex ``z`` is ``dL/dx - i dL/dy``, so a first-order change of a real ``L`` is
``Re(sum(g * dz))``, with no conjugation. That real pairing, ``pair(a, b) = Re(sum(a * b))``, is the
inner product of the dot-product test; on real arrays it is the ordinary dot product.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

REFINEMENTS = (1.0, 1 / 16, 1 / 256, 1 / 4096, 1 / 65536)   # step factors tried until one converges


@dataclass(frozen=True)
class Estimate:
    value: np.ndarray        # the extrapolated directional derivative (outputs flattened)
    error: float             # |D(h/2) - D(h)|: how much the estimate still moves
    step: float
    converged: bool          # halving the step moved the estimate by little
    delta: np.ndarray | None = None   # D(h/2) - D(h), elementwise
    noise: float = 0.0       # rounding noise per output element at this step


def _leaves(y):
    return y if isinstance(y, (tuple, list)) else (y,)


def _real_parts(v) -> list[np.ndarray]:
    """A value as real float64 arrays: itself, or its real and imaginary parts."""
    v = np.asarray(v)
    return [np.ravel(v.real).astype(np.float64), np.ravel(v.imag).astype(np.float64)] if v.dtype.kind == "c" \
        else [np.ravel(np.asarray(v, dtype=np.float64))]


def flat64(y) -> np.ndarray:
    """Outputs flattened into one real float64 vector (complex ones as real, then imaginary parts)."""
    parts = [p for v in _leaves(y) for p in _real_parts(v)]
    return np.concatenate(parts) if parts else np.zeros(0)


def pair(a, b) -> float:
    """The real pairing ``Re(sum(a * b))`` of a cotangent and a tangent (see the module docstring)."""
    return float(np.sum(np.real(np.asarray(a) * np.asarray(b))))


def pairing_weights(vs) -> np.ndarray:
    """``w`` with ``dot(flat64(t), w) == sum(pair(v, t))``: ``Re v`` against the real parts of a
    tangent, ``-Im v`` against its imaginary parts."""
    return flat64([np.conj(v) for v in vs])


def random_like(x, rng: np.random.Generator) -> np.ndarray:
    """A standard normal direction shaped like ``x``, complex for a complex ``x``."""
    u = rng.standard_normal(np.shape(x))
    return u + 1j * rng.standard_normal(np.shape(x)) if np.iscomplexobj(x) else u


def _eps(y) -> float:
    """The machine epsilon of the least precise float output (float64 for the others)."""
    eps = [np.finfo(np.asarray(v).dtype).eps for v in _leaves(y) if np.issubdtype(np.asarray(v).dtype, np.inexact)]
    return max(eps, default=np.finfo(np.float64).eps)


def _evaluator(f, xs, us):
    def at(t):
        with np.errstate(all="ignore"):
            return f(*[x + t * u for x, u in zip(xs, us)])
    return at


def _stencil(f, xs, us, h) -> np.ndarray:
    at = _evaluator(f, xs, us)
    return (flat64(at(-2 * h)) - 8 * flat64(at(-h)) + 8 * flat64(at(h)) - flat64(at(2 * h))) / (12 * h)


def max_step(xs, us, domains) -> float:
    """The largest step keeping ``x + 2 h u`` strictly inside each input's (lo, hi) domain."""
    cap = np.inf
    for x, u, dom in zip(xs, us, domains):
        if dom is None:
            continue
        lo, hi = dom
        x, au = np.real(x), np.abs(u)     # a complex step moves the real part by at most |u|
        with np.errstate(divide="ignore", invalid="ignore"):
            if lo is not None:
                cap = min(cap, np.min(np.where(au > 0, (x - lo) / au, np.inf), initial=np.inf))
            if hi is not None:
                cap = min(cap, np.min(np.where(au > 0, (hi - x) / au, np.inf), initial=np.inf))
    return cap / 4


def _base_step(xs, us, step, domains) -> float:
    scale = max([1.0] + [float(np.max(np.abs(x), initial=0)) for x in xs])
    h = step if step is not None else 1e-3 * scale
    if domains is not None:
        cap = max_step(xs, us, domains)
        h = min(h, cap) if cap > 0 else h     # a point outside its domain: nothing to keep inside
    return h


def as64(a) -> np.ndarray:
    """A float64 copy of ``a`` (complex128 for a complex ``a``): what differences are taken in."""
    return np.array(a, dtype=np.complex128 if np.iscomplexobj(a) else np.float64)


def _as64(xs, us):
    """float64 copies (complex128 for complex values)."""
    return [as64(x) for x in xs], [as64(u) for u in us]


def _judge(d1, d2, value, h, noise) -> Estimate:
    delta = d2 - d1
    error = float(np.max(np.abs(delta), initial=0.0))
    size = float(np.max(np.abs(value), initial=0.0))
    converged = bool(np.all(np.isfinite(value))) and error <= max(1e-5 * max(size, 1.0), noise)
    return Estimate(value, error, h, converged, delta, noise)


def directional_derivative(f: Callable, xs: Sequence[np.ndarray], us: Sequence[np.ndarray], *,
                           step: float | None = None, domains=None) -> Estimate:
    """``J(xs) us`` of ``f(*xs)`` (outputs flattened and concatenated), in float64."""
    xs, us = _as64(xs, us)
    h = _base_step(xs, us, step, domains)
    d1 = _stencil(f, xs, us, h)
    d2 = _stencil(f, xs, us, h / 2)
    with np.errstate(all="ignore"):
        y0 = f(*xs)
    noise = 50 * _eps(y0) * max(float(np.max(np.abs(flat64(y0)), initial=0.0)), 1.0) / h
    return _judge(d1, d2, d2 + (d2 - d1) / 15.0, h, noise)   # Richardson: the stencil's error is O(h^4)


def one_sided_derivative(f: Callable, xs, us, side: int, *, step: float | None = None,
                         domains=None) -> Estimate:
    """The derivative of ``f`` along ``side * u`` from one side only (``side`` is +1 or -1),
    times ``side``: at a kink the two sides differ, and a rule's value must lie between them."""
    xs, us = _as64(xs, us)
    h = _base_step(xs, us, step, domains)
    at = _evaluator(f, xs, us)
    y0 = at(0.0)
    f0 = flat64(y0)
    fs = {k: flat64(at(side * k * h)) for k in (0.5, 1.0, 2.0)}

    def d(k):   # second-order one-sided difference with step k*h
        return side * (-3 * f0 + 4 * fs[k] - fs[2 * k]) / (2 * k * h)
    d1, d2 = d(1.0), d(0.5)
    noise = 50 * _eps(y0) * max(float(np.max(np.abs(f0), initial=0.0)), 1.0) / h
    return _judge(d1, d2, d2 + (d2 - d1) / 3.0, h, noise)   # Richardson for O(h^2)


def refined(estimator: Callable, f, xs, us, *, domains=None, **kwargs) -> Estimate:
    """The first estimate that converges as the step shrinks (h, h/16, ... h/65536), or the last.

    Shrinking stops a stencil from straddling a nearby kink. The step is chosen by convergence
    alone, never by agreement with the rule under test."""
    xs64, us64 = _as64(xs, us)
    h = _base_step(xs64, us64, None, domains)
    est = None
    for factor in REFINEMENTS:
        est = estimator(f, xs64, us64, step=h * factor, domains=domains, **kwargs)
        if est.converged:
            break
    return est


def coordinates(x) -> int:
    """How many real coordinates ``x`` has: its size, twice that for a complex ``x``."""
    return int(np.size(x)) * (2 if np.iscomplexobj(x) else 1)


def coordinate(k: int, x) -> tuple[tuple, str | None]:
    """Real coordinate ``k`` of ``x`` (the order of ``flat64``) as (element index, part):
    part is None for a real ``x``, "real" or "imag" for a complex one."""
    n = int(np.size(x))
    part = None if not np.iscomplexobj(x) else ("real" if k < n else "imag")
    return tuple(int(t) for t in np.unravel_index(k % max(n, 1), np.shape(x))), part


def cotangent_of(w, like) -> list[np.ndarray]:
    """The cotangents ``vs`` (one per leaf of ``like``) whose pairing weights are ``w``:
    ``pair(vs, t) == dot(w, flat64(t))`` for every tangent ``t``; the inverse of
    ``pairing_weights``. A unit ``w`` picks one real coordinate of the outputs."""
    out, start = [], 0
    for leaf in _leaves(like):
        leaf = np.asarray(leaf)
        n = int(leaf.size)
        if leaf.dtype.kind == "c":
            re, im = w[start:start + n], w[start + n:start + 2 * n]
            out.append((re - 1j * im).reshape(leaf.shape).astype(leaf.dtype))
            start += 2 * n
        else:
            out.append(np.asarray(w[start:start + n]).reshape(leaf.shape).astype(
                leaf.dtype if leaf.dtype.kind == "f" else np.float64))
            start += n
    return out


def basis(xs, i: int, k: int) -> list[np.ndarray]:
    """Directions that move only real coordinate ``k`` of input ``i`` (``coordinate``): one
    element, or the real or imaginary part of one element of a complex input."""
    us = [np.zeros(np.shape(x), dtype=np.complex128 if np.iscomplexobj(x) else np.float64) for x in xs]
    n = int(np.size(xs[i]))
    us[i].flat[k % max(n, 1)] = 1.0 if k < n else 1j
    return us


def jacobian(f: Callable, xs, i: int, *, domains=None, side: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The real Jacobian of ``f`` (outputs flattened by ``flat64``) with respect to input ``i``,
    one column per real coordinate (``coordinate``: a complex input has a column for the real
    and one for the imaginary part of each element), central (``side=0``) or one-sided; also
    which columns converged."""
    cols, ok = [], []
    for k in range(coordinates(xs[i])):
        us = basis(xs, i, k)
        est = (refined(directional_derivative, f, xs, us, domains=domains) if side == 0 else
               refined(one_sided_derivative, f, xs, us, domains=domains, side=side))
        cols.append(est.value)
        ok.append(est.converged)
    m = np.size(flat64(f(*xs)))
    return (np.stack(cols, axis=1) if cols else np.zeros((m, 0))), np.array(ok, dtype=bool)


def dot_product_test(f: Callable, pullback: Callable, xs, *, rng: np.random.Generator,
                     directions: int = 2, domains=None, wrt=None):
    """Yield ``(lhs, rhs, estimate)`` per random direction: ``lhs = <J u, v>`` by finite
    differences, ``rhs = <u, J^T v>`` from ``pullback(v) -> cotangents``.

    wrt: indices of the inputs to perturb (default: every float or complex input).
    Complex inputs move along complex directions and complex outputs get complex weights; both
    sides use the real pairing (``pair``).
    """
    xs = [np.asarray(x) for x in xs]
    wrt = [i for i, x in enumerate(xs) if np.issubdtype(x.dtype, np.inexact)] if wrt is None else wrt
    y = f(*xs)
    leaves = _leaves(y)
    for _ in range(directions):
        us = [random_like(x, rng) if i in wrt else np.zeros(np.shape(x)) for i, x in enumerate(xs)]
        vs = [random_like(leaf, rng) for leaf in leaves]
        est = directional_derivative(lambda *a: f(*[a[i] if i in wrt else xs[i] for i in range(len(xs))]),
                                     xs, us, domains=domains)
        cts = pullback(type(y)(vs) if isinstance(y, (tuple, list)) else vs[0])
        rhs = sum(pair(cts[i], us[i]) for i in wrt if cts[i] is not None)
        lhs = float(np.dot(est.value, pairing_weights(vs)))
        yield lhs, rhs, est
