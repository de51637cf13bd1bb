"""Complex rules of the ufuncs and reductions beyond the registry harness (tests/lib/test_complex.py,
which draws near the real samples): the whole plane off the branch cuts, where a real formula can
pick the wrong branch (arccosh for Re z < 0), a real negative base of a complex power, zeros in
prod and cumprod, the values var/std give, and what stays refused. Finite differences are the
oracle; HIPS autograd is one too where it is right (its arccosh, sign and power with a negative
base are not, at the points below)."""
from __future__ import annotations

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad as autograd_grad

import ad
import ad.nn

# Off every cut numpy puts on the real axis (log, sqrt, arcsin, arccos, arctanh, arccosh) and
# the imaginary axis beyond +-i (arctan, arcsinh): |Im z| in [0.15, 0.9], Re z either side of 0.
POINTS = np.array([-2.3 + 0.4j, -0.5 - 0.7j, 0.3 + 0.2j, 1.7 - 0.3j, 2.5 + 0.9j, -1.2 - 0.15j])
W = np.array(0.7 - 1.3j)
H = 1e-6


def _fd_grad(loss, z):
    """dL/dx - i dL/dy by central differences (the convention of docs/complex.md)."""
    dx = (loss(z + H) - loss(z - H)) / (2 * H)
    dy = (loss(z + 1j * H) - loss(z - 1j * H)) / (2 * H)
    return dx - 1j * dy


HOLOMORPHIC = ["sigmoid", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin",
               "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sqrt",
               "square", "reciprocal", "negative"]


@pytest.mark.parametrize("name", HOLOMORPHIC + ["conjugate", "absolute", "sign"])
def test_elementwise_gradients_across_the_plane(name):
    f = getattr(ad.nn if name == "sigmoid" else np, name)

    def loss(z):
        return np.sum(np.real(f(z) * W))
    got = ad.grad(loss)(POINTS)
    np.testing.assert_allclose(got, [_fd_grad(loss, z) for z in POINTS], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_holomorphic_grad_is_the_derivative_on_numpys_branch(name):
    f = getattr(ad.nn if name == "sigmoid" else np, name)
    got = ad.grad(lambda z: np.sum(f(z)), holomorphic=True)(POINTS)
    np.testing.assert_allclose(got, (f(POINTS + H) - f(POINTS - H)) / (2 * H), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("name", [n for n in HOLOMORPHIC if n not in ("arccosh", "sigmoid")] + ["conjugate", "absolute"])
def test_agrees_with_autograd(name):
    got = ad.grad(lambda z: np.real(getattr(np, name)(z) * W))
    want = autograd_grad(lambda z: anp.real(getattr(anp, name)(z) * W))
    for z in POINTS:
        np.testing.assert_allclose(got(z), want(z), rtol=1e-12, atol=1e-14)


def test_arccosh_left_of_the_imaginary_axis():
    """1/sqrt(z^2 - 1) (autograd's) is minus the derivative of numpy's arccosh where Re z < 0."""
    z = np.array(-2.3 + 0.4j)
    slope = ad.grad(np.arccosh, holomorphic=True)(z)
    np.testing.assert_allclose(slope, (np.arccosh(z + H) - np.arccosh(z - H)) / (2 * H), rtol=1e-8)
    np.testing.assert_allclose(slope, -1 / np.sqrt(z * z - 1), rtol=1e-12)


def test_abs_and_sign_at_zero_get_zero():
    assert ad.grad(lambda z: np.abs(z))(0j) == 0
    assert ad.grad(lambda z: np.real(np.sign(z) * W))(0j) == 0
    assert ad.grad(lambda x: np.sign(x) * x)(-1.5) == -1.0        # real sign: still a constant


@pytest.mark.parametrize("power", [np.power, np.float_power])
@pytest.mark.parametrize("a, b", [(-2.0, 0.5 + 1j), (0.8, 1.2 - 0.3j), (1.5 + 0.5j, -0.7 + 0.2j),
                                  (-1.3 + 0.4j, 2.0), (-1.5 - 0.2j, 3.0)])
def test_power_with_complex_operands(power, a, b):
    """A real negative base of a complex exponent is numpy's exp(b log(a + 0j)): d/db is y log(a)
    on the principal branch, not the 0 a real power gives for a <= 0."""
    def loss(a, b):
        return np.real(power(a, b) * W)
    da, db = ad.grad(loss, (0, 1))(np.array(a), np.array(b))
    np.testing.assert_allclose(da, _fd_grad(lambda a: loss(a, b), a) if np.iscomplexobj(a)
                               else (loss(a + H, b) - loss(a - H, b)) / (2 * H), rtol=1e-7)
    np.testing.assert_allclose(db, _fd_grad(lambda b: loss(a, b), b) if np.iscomplexobj(b)
                               else (loss(a, b + H) - loss(a, b - H)) / (2 * H), rtol=1e-7)


def test_power_of_a_zero_base():
    da, db = ad.grad(lambda a, b: np.real(a ** b * W), (0, 1))(np.array(0j), np.array(1.5 + 0.5j))
    assert da == 0 and db == 0 and np.isfinite(da) and np.isfinite(db)


@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
def test_prod_and_cumprod_with_zeros(form):
    """The products of the other elements, exact where y / z is nan."""
    z = np.array([[1.1 + 0.3j, 0j, -0.7 + 0.2j], [0j, 0j, 0.4 - 1j]])
    for fn in (lambda z: np.prod(z, axis=1), lambda z: np.cumprod(z, axis=1)):
        y = fn(z)
        w = np.arange(1, y.size + 1).reshape(y.shape) * (1 - 0.5j)

        def loss(z, fn=fn, w=w):
            return np.sum(np.real(fn(z) * w))
        got = ad.grad(loss, form=form)(z)
        want = np.zeros_like(z)
        for idx in np.ndindex(z.shape):
            e = np.zeros_like(z)
            e[idx] = H
            want[idx] = ((loss(z + e) - loss(z - e)) - 1j * (loss(z + 1j * e) - loss(z - 1j * e))) / (2 * H)
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)


def test_var_and_std_of_complex_values_are_numpys():
    z = np.array([[1.1 + 0.3j, -0.2 + 1j, -0.7 + 0.2j], [0.5 - 0.5j, 2j, 0.4 - 1j]])
    for fn in (lambda z: np.var(z, axis=1), lambda z: np.std(z, ddof=1), lambda z: np.mean(z, axis=0)):
        y, _ = ad.vjp(fn, z)
        np.testing.assert_allclose(y, fn(z), rtol=1e-14)
        assert np.result_type(y) == np.result_type(fn(z))

    def loss(z):
        return np.sum(np.std(z, axis=1) * np.array([1.0, -2.0]))
    got = ad.grad(loss)(z)
    want = autograd_grad(lambda z: anp.sum(anp.std(z, axis=1) * anp.array([1.0, -2.0])))(z)
    np.testing.assert_allclose(got, want, rtol=1e-10)


REFUSED = {
    "maximum": lambda z: np.maximum(z, 0.5j), "minimum": lambda z: np.minimum(z, 0.5j),
    "fmax": lambda z: np.fmax(z, 0.5j), "fmin": lambda z: np.fmin(z, 0.5j),
    "clip": lambda z: np.clip(z, 0, 1 + 1j), "max": np.max, "min": np.min, "ptp": np.ptp,
    "relu": ad.nn.relu, "maximum.accumulate": np.maximum.accumulate,
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name):
    """numpy orders complex numbers by real part, then imaginary part (no analytic meaning);
    relu is a maximum."""
    with pytest.raises(ad.UnsupportedFunctionError, match="of complex values|with complex values"):
        ad.grad(lambda z: np.sum(np.real(REFUSED[name](z) * W)))(POINTS)


def test_erf_refuses_complex_values():
    with pytest.raises(TypeError, match="erf of complex values"):
        ad.nn.erf(POINTS)
