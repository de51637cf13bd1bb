"""Nested derivatives: inner functions may close over values an outer ``ad.grad`` traces. The
inner derivative treats them as constants, the outer one sees through them (Siskind and
Pearlmutter's perturbation confusion must not happen), in every form."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from tests.support.numeric import fd_grad

FORMS = ["lifted", "closure", "compiled"]


@pytest.mark.parametrize("form", FORMS)
def test_perturbation_confusion(form):
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1 (a confused system answers 2)
    assert ad.grad(lambda x: x * ad.grad(lambda y: x + y, form=form)(2.0), form=form)(1.0) == 1.0
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x
    assert ad.grad(lambda x: x * ad.grad(lambda y: x * y, form=form)(2.0), form=form)(1.5) == 3.0


@pytest.mark.parametrize("form", FORMS)
def test_an_inner_gradient_of_a_closure_at_every_depth(form):
    def f(x):
        def g(y):
            def h(z):
                return np.sum(np.sin(x * y * z))
            return np.sum(ad.grad(h, form=form)(y) * y)
        return ad.grad(g, form=form)(x * 2.0)
    x = np.array([0.3, -0.2])
    # f(x) = d/dy [y * d/dz sin(x y z)|z=y]  at y = 2x, summed;   compare with finite differences
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(f(x)), form=form)(x),
                               fd_grad(lambda x: np.sum(f(x)), x), rtol=1e-5)


def test_a_jacobian_of_a_gradient_built_from_closures():
    A = np.array([[2.0, 1.0], [1.0, 3.0]])

    def hessian_row(x, i):
        return ad.grad(lambda x: ad.grad(lambda y: 0.5 * y @ A @ y + np.sum(x * y))(x)[i])(x)
    x = np.array([0.5, -1.0])
    # grad_y = A y + x at y = x, so d/dx of its i-th entry is A[i] + e_i
    for i in range(2):
        np.testing.assert_allclose(hessian_row(x, i), A[i] + np.eye(2)[i])


def test_third_order_with_closures():
    def f(x):
        # d/dz (x y z^3) = 3 x y z^2, at z = y: 3 x y^3;  d/dy: 9 x y^2, at y = x: 9 x^3
        return ad.grad(lambda y: ad.grad(lambda z: x * y * z ** 3)(y))(x)
    assert ad.grad(f)(0.5) == pytest.approx(27 * 0.5 ** 2)          # d/dx 9 x^3 = 27 x^2


def test_vjp_and_value_and_grad_inside_grad():
    def f(x):
        y, pullback = ad.vjp(lambda v: np.sin(v) * x, x)
        (ct,) = pullback(np.ones_like(x))
        value, g = ad.value_and_grad(lambda v: np.sum(v * x))(x)
        return np.sum(ct) + value + np.sum(g)
    x = np.array([0.4, 1.1])
    np.testing.assert_allclose(ad.grad(f)(x), fd_grad(f, x), rtol=1e-6)


def test_a_tape_that_captured_outer_values_is_not_cached_across_outer_calls():
    outer = ad.grad(lambda x: x * ad.grad(lambda y: x * y * y)(2.0))   # x * 4x = 4x^2 -> 8x
    assert outer(1.0) == 8.0 and outer(2.0) == 16.0


def test_writing_into_a_captured_value_from_an_inner_trace_is_refused():
    def f(x):
        def g(y):
            x[0] = y            # an in-place write into the outer trace's value
            return np.sum(x)
        return ad.grad(g)(1.0)
    with pytest.raises(ad.MutationError, match="enclosing trace"):
        ad.grad(lambda x: f(x))(np.ones(2))
