"""Numbers for tests: central differences for a gradient (the library's own finite differences,
ad.checks.fd, are for rules and report their error; this is the plain one), and the comparison of a
form's results with numpy's as docs/numerics.md promises them (bits or ulps, per primitive)."""
from __future__ import annotations

import numpy as np

import ad
from ad.primitives import ULPS


def fd_grad(f, x, eps=1e-6):
    """d f / d x by central differences, shaped like ``x`` (a float, 0-d or n-d array)."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def ulps(got, want) -> np.ndarray:
    """|got - want| in units in the last place of ``want`` in its own precision (a float32's
    ulp for float32 results; 0 where both are nan or equal)."""
    spacing = np.spacing(np.abs(np.asarray(want))).astype(np.float64)
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        same = (got == want) | np.isnan(got) & np.isnan(want)
        return np.where(same, 0.0, np.abs(got - want) / spacing)


def assert_as_promised(got, want, prim, where: str = "") -> None:
    """``got``, a form's result for one equation of ``prim``, is numpy's ``want`` as the forms
    promise (docs/numerics.md): the same nan-ness, inf and zero everywhere; numpy's bits (signs of
    zero included) for a correctly rounded primitive (``prim.correctly_rounded``); within
    ``ULPS`` of numpy's finite results otherwise (numpy's own paths disagree on some signs of
    zero there: ``np.power(-0.0, 0.5)`` is -0.0 on a scalar exponent, +0.0 on an array)."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, (where, prim, got, want)
    if not np.issubdtype(w.dtype, np.floating):
        assert np.array_equal(g, w), (where, prim, got, want)
        return
    assert np.array_equal(np.isnan(g), np.isnan(w)), (where, prim, got, want)
    equal = (g == w) | np.isnan(w)
    if prim.correctly_rounded:
        assert equal.all() and np.array_equal(np.signbit(g[~np.isnan(w)]), np.signbit(w[~np.isnan(w)])), \
            (where, f"{prim.name} is correctly rounded: numpy's bits expected", got, want)
    else:
        assert (equal | np.isfinite(w) & (ulps(g, w) <= ULPS)).all(), \
            (where, f"{prim.name}: {np.max(ulps(g, w))} ulp from numpy (promised <= {ULPS})", got, want)


def assert_fused_agrees(tape, fused, xs, rtol) -> None:
    """The fused backend's results (``fused``, the tape compiled by it) against the numpy
    backend's, output by output: to rounding, in the dtype the tape declares (the numpy
    backend's own results sometimes widen: scipy.special on float32 scalars)."""
    flat = tape.flatten_args(tuple(xs))
    single = any(y.aval.dtype == np.float32 for e in tape.eqns for y in e.outputs)
    for y, g, r in zip(tape.outputs, fused.fn(*flat), ad.compile(tape).fn(*flat)):
        assert np.shape(g) == np.shape(r) and np.result_type(g) in (np.result_type(r), y.aval.dtype)
        tol = max(rtol, 1e-5) if single else rtol      # float32 sums round, at float32's precision
        np.testing.assert_allclose(g, r, rtol=tol, atol=tol)
