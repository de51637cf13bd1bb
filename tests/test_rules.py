"""Every rule in the library, from the spec table: finite differences (dot-product test with a
converged 5-point stencil), float32, and the closure / lifted / compiled forms agreeing."""
import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import dot_product_test
from ad.lib import PRIMITIVES
from specs import COMPOSITIONS, SPECS, domains, make_inputs

CASES = [pytest.param(s, shape, id=f"{s.prim}-{shape}") for s in SPECS + COMPOSITIONS for shape in s.shapes]


def test_every_rule_has_a_spec():
    specced = {s.prim for s in SPECS}
    missing = sorted(PRIMITIVES - specced)
    assert not missing, f"primitives without a spec line in tests/specs.py: {missing}"
    unknown = sorted(specced - PRIMITIVES)
    assert not unknown, f"spec lines for unknown primitives: {unknown}"


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.prim) for s in SPECS])
def test_spec_exercises_its_primitive(spec):
    xs = make_inputs(spec, spec.shapes[-1], np.random.default_rng(0))
    gt = ad.grad_tape(lambda *a: np.sum(spec.fn(*a)), *xs)
    used = {e.prim.name for e in ad.trace(spec.fn, *xs).eqns} | {e.prim.name for e in gt.eqns}
    assert spec.prim in used


def _loss(spec, w):
    return lambda *xs: np.sum(spec.fn(*xs) * w)


@pytest.mark.parametrize("spec,shape", CASES)
def test_gradient_matches_finite_differences(spec, shape):
    rng = np.random.default_rng(zlib.crc32(f"{spec.prim}/{shape}".encode()))
    xs = make_inputs(spec, shape, rng)
    y, pullback = ad.vjp(spec.fn, *xs)
    for lhs, rhs, est in dot_product_test(spec.fn, pullback, xs, rng=rng, domains=domains(spec)):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= 1e-6 * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("spec,shape", CASES)
def test_forms_agree(spec, shape):
    """closure, lifted, lifted without passes and compiled give the same gradient."""
    rng = np.random.default_rng(1)
    xs = make_inputs(spec, shape, rng)
    w = rng.standard_normal(np.shape(spec.fn(*xs)))
    argnums = tuple(range(len(xs)))
    ref = ad.grad(_loss(spec, w), argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(_loss(spec, w), argnums, form=form, optimize=optimize)(*xs)
        for r, g in zip(ref, got):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")


@pytest.mark.parametrize("spec,shape", CASES)
def test_float32(spec, shape):
    """float32 in, float32 gradients out, close to the float64 gradient."""
    rng = np.random.default_rng(2)
    xs64 = make_inputs(spec, shape, rng)
    xs32 = [np.float32(x) if np.ndim(x) == 0 else x.astype(np.float32) for x in xs64]
    w = rng.standard_normal(np.shape(spec.fn(*xs64)))
    argnums = tuple(range(len(xs64)))
    g64 = ad.grad(_loss(spec, w), argnums)(*xs64)
    g32 = ad.grad(_loss(spec, w.astype(np.float32)), argnums)(*xs32)
    for a, b in zip(g32, g64):
        assert np.result_type(a) == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)
