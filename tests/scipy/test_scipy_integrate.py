"""ad.scipy.integrate.odeint: scipy's values, gradients in y0, t and args by the adjoint method
against finite differences (at the solver's tolerance, ``tolerance``), HIPS autograd's odeint,
the three forms, the backward tape (one adjoint equation reading the residuals), and its
refusals."""
from __future__ import annotations

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import scipy.integrate as sint
from autograd.builtins import tuple as atuple
from autograd.scipy.integrate import odeint as autograd_odeint

import ad
from ad.errors import ConcretizationError, NonDifferentiableError, UnsupportedFunctionError
from ad.scipy.integrate import decay, odeint, odeint_adjoint_p, odeint_p, tolerance
from tests.support.rule_checks import differentiates

T = np.linspace(0.0, 1.5, 4)
Y0, K = np.array([1.0, 0.7]), np.array([0.9, 1.2])


def lotka(y, t, a, b):
    """Predator and prey, two parameters (one of them a matrix)."""
    return np.stack([y[0] * (a - b[0, 1] * y[1]), y[1] * (b[1, 0] * y[0] - b[1, 1])])


def autograd_decay(y, t, k):
    return anp.stack([y[1] * k[0] - 0.1 * y[0], -y[0] * k[1] - 0.2 * y[1] * anp.sin(t)])


@pytest.mark.parametrize("rtol", [1e-6, 1e-8, 1e-11])
def test_gradients_match_finite_differences_at_the_solvers_tolerance(rtol):
    opts = {"rtol": rtol, "atol": rtol}
    tol = tolerance(opts.items())
    differentiates(lambda y0, t, k: odeint(decay, y0, t, args=(k,), **opts), Y0, T, K, float32=False, fd_tol=tol)


def test_values_equal_scipy():
    B = np.array([[0.0, 0.4], [0.3, 0.8]])
    np.testing.assert_array_equal(odeint(decay, Y0, T, args=(K,)), sint.odeint(decay, Y0, T, args=(K,)))
    got = ad.value_and_grad(lambda y0: np.sum(odeint(lotka, y0, T, args=(1.1, B))))(Y0)[0]
    assert got == np.sum(sint.odeint(lotka, Y0, T, args=(1.1, B)))
    y, info = odeint(decay, Y0, T, args=(K,), full_output=True)     # untraced: scipy itself
    assert "nfe" in info


def test_several_args_a_scalar_a_matrix_and_tfirst():
    B = np.array([[0.0, 0.4], [0.3, 0.8]])
    opts = {"rtol": 1e-10, "atol": 1e-10}
    differentiates(lambda y0, a, b: odeint(lotka, y0, T, args=(a, b), **opts), Y0, 1.1, B,
                   float32=False, fd_tol=tolerance(opts.items()))
    swapped = ad.grad(lambda k: np.sum(odeint(lambda t, y, k: decay(y, t, k), Y0, T, args=(k,), tfirst=True, **opts)))(K)
    plain = ad.grad(lambda k: np.sum(odeint(decay, Y0, T, args=(k,), **opts)))(K)
    np.testing.assert_allclose(swapped, plain, rtol=1e-8)


def test_an_integer_arg_has_no_gradient():
    def scaled(y, t, k, n):
        return decay(y, t, k) * n
    g = ad.grad(lambda y0, k: np.sum(odeint(scaled, y0, T, args=(k, 2))), (0, 1))(Y0, K)
    fd = (np.sum(sint.odeint(scaled, Y0, T, args=(K + [1e-6, 0], 2))) - np.sum(sint.odeint(scaled, Y0, T, args=(K - [1e-6, 0], 2)))) / 2e-6
    assert abs(g[1][0] - fd) < 1e-5


@pytest.mark.parametrize("argnum", [0, 1, 2])
def test_gradients_equal_autograd(argnum):
    opts = {"rtol": 1e-10, "atol": 1e-10}
    ours = ad.grad(lambda y0, t, k: np.sum(np.sin(odeint(decay, y0, t, args=(k,), **opts))), argnum)(Y0, T, K)
    theirs = autograd.grad(lambda y0, t, k: anp.sum(anp.sin(autograd_odeint(autograd_decay, y0, t, atuple((k,)), **opts))),
                           argnum)(Y0, T, K)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)


def mlp(y, t, params):
    """A neural ODE's dynamics: its args are a list of (W, b) layers (autograd's ode_net)."""
    for W, b in params:
        out = y @ W + b
        y = np.tanh(out)
    return out


def test_a_neural_ode_with_nested_args_equals_autograd():
    rs = np.random.default_rng(0)
    params = [(rs.standard_normal((2, 5)) * 0.5, rs.standard_normal(5) * 0.5),
              (rs.standard_normal((5, 2)) * 0.5, rs.standard_normal(2) * 0.5)]
    target = rs.standard_normal((4, 2))
    opts = {"rtol": 1e-10, "atol": 1e-10}

    def loss(params):
        return np.sum((odeint(mlp, Y0, T, args=(params,), **opts) - target) ** 2)

    def autograd_mlp(y, t, params):
        for W, b in params:
            out = anp.dot(y, W) + b
            y = anp.tanh(out)
        return out

    def autograd_loss(params):
        return anp.sum((autograd_odeint(autograd_mlp, Y0, T, atuple((params,)), **opts) - target) ** 2)

    ours, theirs = ad.grad(loss)(params), autograd.grad(autograd_loss)(params)
    for (dw, db), (tw, tb) in zip(ours, theirs):
        np.testing.assert_allclose(dw, tw, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(db, tb, rtol=1e-6, atol=1e-9)


def test_the_backward_is_one_adjoint_equation_reading_the_residuals():
    gt = ad.grad_tape(lambda y0, k: np.sum(np.sin(odeint(decay, y0, T, args=(k,)))), Y0, K, argnums=(0, 1))
    forward = [e for e in gt.eqns if e.prim is odeint_p]
    adjoint = [e for e in gt.eqns if e.prim is odeint_adjoint_p]
    assert len(forward) == 1 and len(adjoint) == 1
    ys, t, g, k = adjoint[0].inputs
    assert ys is forward[0].outputs[0] and k is gt.inputs[1]       # the solution and the parameter
    assert "scipy.integrate.odeint_adjoint" in str(gt)


def test_forms_agree_and_the_checker_passes():
    f = lambda y0, k: np.sum(np.sin(odeint(decay, y0, T, args=(k,), rtol=1e-12, atol=1e-12)))  # noqa: E731
    ref = ad.grad(f, (0, 1), form="closure")(Y0, K)
    for form in ("lifted", "compiled"):
        for a, b in zip(ad.grad(f, (0, 1), form=form)(Y0, K), ref):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    # the adaptive solve is linear in the cotangent only up to its tolerance (1e-11 here), and the
    # checker's linearity tolerance is rounding's (1e-13): it warns (a per-primitive tolerance in
    # ad.checks would let it follow ``tolerance``); every other check passes
    report = ad.check_rule(lambda y0, k: odeint(decay, y0, T, args=(k,), rtol=1e-12, atol=1e-12), Y0, K,
                           severity={"algebra.linearity": "warn"})
    assert report.ok, report


def test_refusals():
    with pytest.raises(UnsupportedFunctionError, match="full_output"):
        ad.grad(lambda y0: np.sum(odeint(decay, y0, T, args=(K,), full_output=True)))(Y0)
    with pytest.raises(NonDifferentiableError, match="second derivatives"):
        ad.grad(lambda k: np.sum(ad.grad(lambda y0: np.sum(odeint(decay, y0, T, args=(k,))))(Y0)))(K)
    with pytest.raises(ConcretizationError, match=r"closed over .* args=\(\.\.\.\)"):   # parameters come through args
        ad.grad(lambda k: np.sum(odeint(lambda y, t: decay(y, t, k), Y0, T)))(K)
    with pytest.raises(ConcretizationError, match="closed over"):
        ad.grad(lambda k: np.sum(odeint(lambda y, t, k2: decay(y, t, k), Y0, T, args=(K,))))(K)
