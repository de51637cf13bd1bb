"""Wrong or refused gradients that HIPS autograd's test suite and PyTorch's OpInfo database found
(docs/yardsticks.md), each a regression test."""
from __future__ import annotations

import numpy as np
import pytest

import ad


def test_std_of_one_element_has_gradient_zero_not_nan():
    assert ad.grad(np.std)(3.5) == 0.0
    np.testing.assert_array_equal(ad.grad(lambda x: np.sum(np.std(x, axis=0)))(np.ones((1, 3))),
                                  np.zeros((1, 3)))


@pytest.mark.parametrize("form", ["lifted", "closure", "compiled"])
def test_the_power_zero_has_slope_zero_at_zero(form):
    assert ad.grad(lambda x: np.power(x, 0.0), form=form)(0.0) == 0.0
    assert ad.grad(lambda x, p: x ** p, form=form)(0.0, np.float64(0.0)) == 0.0   # traced exponent


def test_a_vjp_can_be_differentiated_with_respect_to_its_cotangent():
    def vjp_of_sin(v):
        _, pullback = ad.vjp(np.sin, 1.0)
        return pullback(v)[0]
    assert ad.grad(vjp_of_sin)(2.0) == pytest.approx(np.cos(1.0))


def test_grad_of_a_complex_valued_function_refuses():
    with pytest.raises(ad.NonDifferentiableError, match="complex-valued function.*np.real"):
        ad.grad(lambda x: np.exp(x) + 0j)(1.0)
    with pytest.raises(ad.NonDifferentiableError, match="complex-valued function"):
        ad.grad(lambda x: x * (1.0 + 0.2j))(1.0)


def test_complex_intermediates_of_a_real_function_refuse_instead_of_a_wrong_gradient():
    """abs has a complex rule now (|i x| = |x|); a rule without one still refuses."""
    np.testing.assert_array_equal(ad.grad(lambda x: np.sum(np.abs(x * 1j)))(np.array([1.0, -2.0])), [1.0, -1.0])
    with pytest.raises(ad.UnsupportedFunctionError, match="complex"):
        ad.grad(lambda x: np.sum(np.real(np.maximum(x * 1j, 0.5j))))(np.array([1.0, 2.0]))
