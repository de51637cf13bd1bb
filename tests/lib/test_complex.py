"""Complex numbers, registry-wide (issue 14). A primitive declaring ``complex_rule=True`` runs
every sample at complex128 (every float operand complex), mixed (its first float operand complex,
the others real) and complex64: finite differences along random complex directions (the
dot-product test with the real pairing of ad.checks.fd), closure = lifted = compiled, complex64
kept complex64, and second order (the vjp of the gradient against finite differences). Every other primitive refuses complex operands loudly (tests/lib/test_complex_refusal.py).
The convention (docs/complex.md) is HIPS autograd's and JAX's: ``grad`` of a real ``f`` is
``df/dx - i df/dy``."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.checks.fd import dot_product_test
from ad.checks.settings import fd_rtol
from ad.samples import C128, F64
from tests.support.cases import PRIMITIVE_CASES, leaves
from tests.support.complex_cases import complex_weights, inexact, real_loss, seed

COMPLEX = [c for c in PRIMITIVE_CASES if c.primitive.complex_rule
           and any(i.kind == "float" for i in c.sample.inputs)]
SHAPED = [pytest.param(c, shape, id=f"{c.name}-{shape}") for c in COMPLEX for shape in c.sample.shapes]
# mixed real and complex operands: samples with two float operands or more, one of them complex-capable
MIXED = [p for p in SHAPED if sum(i.kind == "float" for i in p.values[0].sample.inputs) > 1
         and any(i.kind == "float" and not i.real for i in p.values[0].sample.inputs)]
LAST = [pytest.param(c, c.sample.shapes[-1], id=c.name) for c in COMPLEX]


def _mixed(case, shape, rng):
    """The first complex-capable float operand complex, the others real."""
    zs = case.inputs(shape, rng, C128)
    xs = case.inputs(shape, rng, F64)
    first = next(i for i, z in enumerate(zs) if np.iscomplexobj(z))
    return [z if i == first else x for i, (z, x) in enumerate(zip(zs, xs))]


@pytest.mark.parametrize("case,shape,variant", [pytest.param(*p.values, "complex", id=p.id + "-complex")
                                                for p in SHAPED] + [pytest.param(*p.values, "mixed", id=p.id + "-mixed")
                                                                    for p in MIXED])
def test_complex_gradient_matches_finite_differences(case, shape, variant):
    rng = seed(case.name, shape, variant)
    xs = case.inputs(shape, rng, C128) if variant == "complex" else _mixed(case, shape, rng)
    y, pullback = ad.vjp(case.fn, *xs)
    rtol = fd_rtol([np.result_type(v) for v in (*xs, *leaves(y))])
    for lhs, rhs, est in dot_product_test(case.fn, pullback, xs, rng=rng, domains=case.domains,
                                          wrt=inexact(xs)):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= rtol * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("case,shape", SHAPED)
def test_complex_forms_agree(case, shape):
    """closure, lifted, lifted without passes and compiled give the same complex gradient."""
    rng = seed(case.name, shape, "forms")
    xs = case.inputs(shape, rng, C128)
    loss = real_loss(case.fn, complex_weights(case.fn(*xs), rng))
    argnums = inexact(xs)
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(loss, argnums, form=form, optimize=optimize)(*xs)
        for r, g in zip(ref, got):
            assert np.result_type(g) == np.result_type(r)
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")


@pytest.mark.parametrize("case,shape", LAST)
def test_complex64(case, shape):
    """complex64 in, complex64 gradients out, close to the complex128 gradient."""
    rng = seed(case.name, "c64")
    xs = case.inputs(shape, rng, C128)
    argnums = inexact(xs)
    xs64 = [x.astype(np.complex64 if np.iscomplexobj(x) else np.float32) if i in argnums else x
            for i, x in enumerate(xs)]
    ws = complex_weights(case.fn(*xs), rng)
    g128 = ad.grad(real_loss(case.fn, ws), argnums)(*xs)
    g64 = ad.grad(real_loss(case.fn, [w.astype(np.complex64) if np.iscomplexobj(w) else w.astype(np.float32)
                                      for w in ws]), argnums)(*xs64)
    for a, b, x in zip(g64, g128, [xs64[i] for i in argnums]):
        assert np.result_type(a) == np.result_type(x)
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)


# -- the convention --------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["lifted", "closure", "compiled"])
def test_the_convention_is_autograds_and_jaxs(form):
    """grad(|z|^2)(1+2j) = df/dx - i df/dy = 2x - 2iy; PyTorch returns the conjugate 2+4j."""
    assert ad.grad(lambda z: np.abs(z) ** 2, form=form)(1 + 2j) == 2 - 4j
    np.testing.assert_allclose(ad.grad(lambda z: np.abs(z), form=form)(1.1 + 1.2j),
                               (1.1 - 1.2j) / np.abs(1.1 + 1.2j))


@pytest.mark.parametrize("form", ["lifted", "closure", "compiled"])
def test_holomorphic_grad_is_the_complex_derivative(form):
    z = np.array(0.3 + 0.7j)
    got = ad.grad(lambda z: np.sin(z) * z, holomorphic=True, form=form)(z)
    np.testing.assert_allclose(got, np.cos(z) * z + np.sin(z), rtol=1e-14)


def test_grad_of_a_complex_output_says_what_to_do():
    with pytest.raises(ad.NonDifferentiableError, match="np.real .*holomorphic=True.*ad.vjp"):
        ad.grad(lambda z: z * z)(1 + 1j)
    with pytest.raises(ad.NonDifferentiableError, match=r"holomorphic=True\) differentiates complex inputs; x is real"):
        ad.grad(lambda x: x * x, holomorphic=True)(1.0)


def test_vjp_of_a_holomorphic_function_multiplies_by_the_derivative():
    """vjp of C -> C follows the same convention: pullback(g) = g * f'(z), no conjugation."""
    z = np.array([0.5 + 1j, -1 + 0.25j])
    g = np.array([1 - 2j, 0.5j])
    _, pullback = ad.vjp(np.exp, z)
    np.testing.assert_allclose(pullback(g)[0], g * np.exp(z), rtol=1e-14)


def test_a_real_input_gets_a_real_gradient():
    """The cotangent of a real operand of a complex product is projected: Re(g z)."""
    x, z = 1.5, 2 - 1j
    assert ad.grad(lambda x: np.real(x * z * np.conj(z * x)))(x) == pytest.approx(2 * x * abs(z) ** 2)
    g = ad.grad(lambda x: np.real(x * z))(x)
    assert np.result_type(g) == np.float64 and g == z.real


@pytest.mark.parametrize("case,shape", LAST)
def test_complex_second_order(case, shape):
    """The vjp of the gradient (a second derivative, lifted through the complex rules of the
    pullback's own equations) against finite differences of the gradient."""
    rng = seed(case.name, "second")
    xs = case.inputs(shape, rng, C128)
    argnums = inexact(xs)
    grad = ad.grad(real_loss(case.fn, complex_weights(case.fn(*xs), rng)), argnums)
    g, pullback = ad.vjp(grad, *xs)
    rtol = fd_rtol([np.result_type(v) for v in (*xs, *g)])
    for lhs, rhs, est in dot_product_test(grad, pullback, xs, rng=rng, domains=case.domains, wrt=argnums):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= rtol * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)
