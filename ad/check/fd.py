"""Finite differences done carefully: a 5-point stencil, Richardson extrapolation, a
convergence test, and steps capped to the input's domain. Used by the checker and the tests.

The basic quantity is a directional derivative ``J(x) u`` of a function of several arrays; the
dot-product test compares ``<J u, v>`` with ``<u, J^T v>`` from a pullback, which checks the
whole Jacobian in one scalar per random direction pair.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Estimate:
    value: np.ndarray        # the extrapolated directional derivative
    error: float             # |D(h/2) - D(h)|: how much the estimate still moves
    step: float
    converged: bool          # the stencil estimates agree to the expected order


def _flat64(y) -> np.ndarray:
    leaves = y if isinstance(y, (tuple, list)) else (y,)
    return np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in leaves]) if leaves else np.zeros(0)


def _stencil(f, xs, us, h) -> np.ndarray:
    def at(t):
        return _flat64(f(*[x + t * u for x, u in zip(xs, us)]))
    return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h)


def max_step(xs, us, domains) -> float:
    """The largest step keeping ``x + 2 h u`` strictly inside each input's (lo, hi) domain."""
    cap = np.inf
    for x, u, dom in zip(xs, us, domains):
        if dom is None:
            continue
        lo, hi = dom
        au = np.abs(u)
        with np.errstate(divide="ignore", invalid="ignore"):
            if lo is not None:
                cap = min(cap, np.min(np.where(au > 0, (x - lo) / au, np.inf), initial=np.inf))
            if hi is not None:
                cap = min(cap, np.min(np.where(au > 0, (hi - x) / au, np.inf), initial=np.inf))
    return cap / 4


def directional_derivative(f: Callable, xs: Sequence[np.ndarray], us: Sequence[np.ndarray], *,
                           step: float | None = None, domains=None) -> Estimate:
    """``J(xs) us`` of ``f(*xs)`` (outputs flattened and concatenated), in float64."""
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    us = [np.asarray(u, dtype=np.float64) for u in us]
    scale = max([1.0] + [float(np.max(np.abs(x), initial=0)) for x in xs])
    h = step if step is not None else 1e-3 * scale
    if domains is not None:
        h = min(h, max_step(xs, us, domains))
    d1 = _stencil(f, xs, us, h)
    d2 = _stencil(f, xs, us, h / 2)
    value = d2 + (d2 - d1) / 15.0          # Richardson: the stencil's error is O(h^4)
    error = float(np.max(np.abs(d2 - d1), initial=0.0))
    size = float(np.max(np.abs(value), initial=0.0))
    # converged: halving the step moved the estimate by little relative to its size
    converged = bool(np.all(np.isfinite(value))) and error <= 1e-5 * max(size, 1.0)
    return Estimate(value, error, h, converged)


def dot_product_test(f: Callable, pullback: Callable, xs, *, rng: np.random.Generator,
                     directions: int = 2, domains=None, wrt=None):
    """Yield ``(lhs, rhs, estimate)`` per random direction: ``lhs = <J u, v>`` by finite
    differences, ``rhs = <u, J^T v>`` from ``pullback(v) -> cotangents``.

    wrt: indices of the inputs to perturb (default: every float input).
    """
    xs = [np.asarray(x) for x in xs]
    wrt = [i for i, x in enumerate(xs) if np.issubdtype(x.dtype, np.floating)] if wrt is None else wrt
    y = f(*xs)
    leaves = y if isinstance(y, (tuple, list)) else (y,)
    for _ in range(directions):
        us = [rng.standard_normal(np.shape(x)) if i in wrt else np.zeros(np.shape(x))
              for i, x in enumerate(xs)]
        vs = [rng.standard_normal(np.shape(leaf)) for leaf in leaves]
        v = _flat64(vs)
        est = directional_derivative(lambda *a: f(*[a[i] if i in wrt else xs[i] for i in range(len(xs))]),
                                     xs, us, domains=domains)
        cts = pullback(type(y)(vs) if isinstance(y, (tuple, list)) else vs[0])
        rhs = sum(float(np.sum(us[i] * np.asarray(cts[i], dtype=np.float64)))
                  for i in wrt if cts[i] is not None)
        lhs = float(np.dot(est.value, v))
        yield lhs, rhs, est
