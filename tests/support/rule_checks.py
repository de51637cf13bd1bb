"""The gradient checks of the rule tests, one call at a time: finite differences (the dot-product
test with a converged 5-point stencil), the closure / lifted / compiled forms agreeing, float32 kept
float32. tests/lib/test_rules.py runs them on every line of the spec table (``GRADIENT_CASES``,
``FLOAT32_CASES``), tests/scipy/test_scipy_special.py on its own spec lines, tests/compiler/test_fused.py
takes the table; ``differentiates`` runs all three on one call (the ad.scipy tests)."""
import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import dot_product_test
from ad.checks.settings import fd_rtol
from ad.samples import F32, F64
from tests.support.cases import CASES, floats, leaves, weighted, weights

# (case, shape set) of every line of the spec table with a float operand, and those that run at float32 too
GRADIENT_CASES = [pytest.param(c, shape, id=f"{c.name}-{shape}") for c in CASES for shape in c.sample.shapes
                  if any(i.kind == "float" for i in c.sample.inputs)]
FLOAT32_CASES = [p for p in GRADIENT_CASES if F32 in p.values[0].sample.dtypes and F64 in p.values[0].sample.dtypes]


def gradient_matches_finite_differences(case, shape):
    """The vjp of ``case`` at shape set ``shape`` against finite differences (the dot-product test)."""
    rng = np.random.default_rng(zlib.crc32(f"{case.name}/{shape}".encode()))
    xs = case.inputs(shape, rng, case.sample.dtypes[0])
    y, pullback = ad.vjp(case.fn, *xs)
    rtol = fd_rtol([np.result_type(v) for v in (*xs, *leaves(y))])    # float32 outputs round
    for lhs, rhs, est in dot_product_test(case.fn, pullback, xs, rng=rng, domains=case.domains):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= rtol * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


def forms_agree(case, shape):
    """closure, lifted, lifted without passes and compiled give the same gradient."""
    rng = np.random.default_rng(1)
    xs = case.inputs(shape, rng, case.sample.dtypes[0])
    loss = weighted(case.fn, weights(case.fn(*xs), rng))
    argnums = floats(xs)
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(loss, argnums, form=form, optimize=optimize)(*xs)
        for r, g in zip(ref, got):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")


def float32_gradients(case, shape):
    """float32 in, float32 gradients out, close to the float64 gradient."""
    rng = np.random.default_rng(2)
    xs64 = case.inputs(shape, rng)
    argnums = floats(xs64)
    xs32 = [np.float32(x) if np.ndim(x) == 0 else x.astype(np.float32) if i in argnums else x
            for i, x in enumerate(xs64)]
    ws = weights(case.fn(*xs64), rng)
    g64 = ad.grad(weighted(case.fn, ws), argnums)(*xs64)
    g32 = ad.grad(weighted(case.fn, [w.astype(np.float32) for w in ws]), argnums)(*xs32)
    for a, b in zip(g32, g64):
        assert np.result_type(a) == np.float32, f"a float32 gradient came out {np.result_type(a)}"
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)


def differentiates(fn, *xs, domains=None, float32=True, fd_tol=None):
    """The gradient checks of the registry-wide tests on one call: finite differences (the
    dot-product test, converged), the closure, lifted (with and without passes) and compiled
    forms agreeing, and float32 in giving float32 gradients close to float64's."""
    rng = np.random.default_rng(zlib.crc32(repr([np.shape(x) for x in xs]).encode()))
    xs = [np.asarray(x, dtype=np.float64) for x in xs]
    y, pullback = ad.vjp(fn, *xs)
    tol = fd_tol or fd_rtol([np.float64])
    for lhs, rhs, est in dot_product_test(fn, pullback, xs, rng=rng, domains=domains):
        assert est.converged, f"finite differences did not converge ({est.error:.2e})"
        assert abs(lhs - rhs) <= tol * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)
    w = rng.standard_normal(np.shape(y))
    loss = lambda *v: np.sum(fn(*v) * w)    # noqa: E731
    argnums = tuple(range(len(xs)))
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        for r, g in zip(ref, ad.grad(loss, argnums, form=form, optimize=optimize)(*xs)):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")
    if float32:
        g32 = ad.grad(lambda *v: np.sum(fn(*v) * w.astype(np.float32)), argnums)(*[x.astype(np.float32) for x in xs])
        for a, b in zip(g32, ref):
            assert np.result_type(a) == np.float32, f"a float32 gradient came out {np.result_type(a)}"
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)
