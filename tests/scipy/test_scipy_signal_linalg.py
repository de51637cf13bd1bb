"""ad.scipy.signal and ad.scipy.linalg: scipy's values, gradients by finite differences, the
three forms and float32 (``differentiates``), second derivatives, and HIPS autograd's and
PyTorch's gradients where they have the function."""
from __future__ import annotations

import autograd
import autograd.numpy as anp
import autograd.scipy.linalg as alg
import autograd.scipy.signal as asig
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.signal as ss
import torch

import ad
import ad.scipy.linalg as L
import ad.scipy.signal as S
from ad.errors import NonDifferentiableError
from tests.support.rule_checks import differentiates

RNG = np.random.default_rng(3)
A = RNG.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)        # well conditioned, not triangular
SPD = A @ A.T
B2, B1 = RNG.standard_normal((3, 2)), RNG.standard_normal(3)
SHAPES = [((6,), (3,)), ((3,), (6,)), ((4, 5), (2, 3)), ((2, 3), (4, 5)), ((3, 4, 2), (2, 2, 2))]


# -- signal -------------------------------------------------------------------------------------

@pytest.mark.parametrize("s1,s2", SHAPES)
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_correlate(s1, s2, mode, name):
    x, h = RNG.standard_normal(s1), RNG.standard_normal(s2)
    ours, theirs = getattr(S, name), getattr(ss, name)
    for method in ("direct", "fft", "auto"):
        np.testing.assert_allclose(ours(x, h, mode, method), theirs(x, h, mode, method), rtol=1e-12, atol=1e-12)
    differentiates(lambda x, h: ours(x, h, mode, "direct"), x, h)


def test_convolve_refusals_and_method_fft_gradients():
    with pytest.raises(ValueError, match="at least as large"):
        S.convolve(np.ones((4, 2)), np.ones((2, 3)), "valid")
    with pytest.raises(ValueError, match="same dimensionality"):
        S.convolve(np.ones(4), np.ones((2, 2)))
    x, h = RNG.standard_normal((5, 4)), RNG.standard_normal((3, 2))
    direct = ad.grad(lambda x, h: np.sum(S.convolve(x, h, method="direct") ** 2), (0, 1))(x, h)
    fft = ad.grad(lambda x, h: np.sum(S.convolve(x, h, method="fft") ** 2), (0, 1))(x, h)
    for a, b in zip(direct, fft):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_equals_autograd(mode):
    x, h = RNG.standard_normal((5, 4)), RNG.standard_normal((3, 2))
    w = RNG.standard_normal(ss.convolve(x, h, mode).shape)
    for i in (0, 1):
        ours = ad.grad(lambda x, h: np.sum(S.convolve(x, h, mode) * w), i)(x, h)
        theirs = autograd.grad(lambda x, h: anp.sum(asig.convolve(x, h, mode=mode) * w), i)(x, h)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_correlate_valid_equals_torch_conv1d():
    """torch's conv1d is a cross-correlation: scipy's correlate 'valid'."""
    x, h = RNG.standard_normal(9), RNG.standard_normal(4)
    tx, th = torch.tensor(x, requires_grad=True), torch.tensor(h, requires_grad=True)
    y = torch.nn.functional.conv1d(tx[None, None], th[None, None])[0, 0]
    (y ** 2).sum().backward()
    np.testing.assert_allclose(S.correlate(x, h, "valid"), y.detach().numpy(), rtol=1e-12)
    got = ad.grad(lambda x, h: np.sum(S.correlate(x, h, "valid") ** 2), (0, 1))(x, h)
    np.testing.assert_allclose(got[0], tx.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(got[1], th.grad.numpy(), rtol=1e-10)


# -- linalg: values ---------------------------------------------------------------------------------

TRIANGULAR = [dict(lower=lower, trans=trans, unit_diagonal=unit)
              for lower in (False, True) for trans in (0, 1, "T", "C", "N") for unit in (False, True)]


@pytest.mark.parametrize("kw", TRIANGULAR, ids=str)
@pytest.mark.parametrize("b", [B2, B1], ids=["matrix", "vector"])
def test_solve_triangular(kw, b):
    np.testing.assert_allclose(L.solve_triangular(A, b, **kw), sla.solve_triangular(A, b, **kw), rtol=1e-12)
    differentiates(lambda a, b: L.solve_triangular(a, b, **kw), A, b)


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor_and_cho_solve(lower):
    c, low = L.cho_factor(SPD, lower=lower)
    want_c, want_low = sla.cho_factor(SPD, lower=lower)
    np.testing.assert_allclose(c, want_c, rtol=1e-12)      # the unread triangle too: a's, as LAPACK leaves it
    assert low is want_low
    for b in (B2, B1):
        np.testing.assert_allclose(L.cho_solve((c, low), b), sla.cho_solve((want_c, want_low), b), rtol=1e-12)
        differentiates(lambda a, b: L.cho_solve(L.cho_factor(a, lower=lower), b), SPD, b)


def test_matrix_functions_values():
    M = RNG.uniform(-1, 1, (3, 3))
    np.testing.assert_allclose(L.expm(M), sla.expm(M), rtol=1e-12)
    stack = RNG.uniform(-1, 1, (2, 3, 3))
    np.testing.assert_allclose(L.expm(stack), sla.expm(stack), rtol=1e-12)
    np.testing.assert_allclose(L.sqrtm(SPD), sla.sqrtm(SPD), rtol=1e-12)
    Bs = RNG.uniform(-1, 1, (2, 2)) + 2 * np.eye(2)
    np.testing.assert_allclose(L.solve_sylvester(A, Bs, B2), sla.solve_sylvester(A, Bs, B2), rtol=1e-12)
    for arrs in ((A, B2), (A, B1, 2.0), (B1,), (np.ones((2, 0)), A), ([1.0, 2.0], [[3.0]])):
        np.testing.assert_array_equal(L.block_diag(*arrs), sla.block_diag(*arrs))
    assert L.block_diag().shape == sla.block_diag().shape


def test_matrix_function_gradients():
    M = RNG.uniform(-1, 1, (3, 3))
    differentiates(L.expm, M)
    differentiates(L.expm, RNG.uniform(-1, 1, (2, 3, 3)))
    differentiates(L.sqrtm, SPD)
    differentiates(L.sqrtm, np.diag([1.0, 3.0, 5.0]) + 0.2 * M)          # not symmetric
    differentiates(L.solve_sylvester, A, RNG.uniform(-1, 1, (2, 2)) + 2 * np.eye(2), B2)
    differentiates(lambda a, b, c: L.block_diag(a, b, c), A, B2, 2.0)


@pytest.mark.parametrize("fn,x", [(L.expm, 0.5 * A), (L.sqrtm, SPD)], ids=["expm", "sqrtm"])
def test_second_derivatives(fn, x):
    """The rules are written with the primitives themselves: a Hessian-vector product by
    differentiating the gradient, against finite differences of the gradient."""
    w, u = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
    g = ad.grad(lambda a: np.sum(fn(a) * w))
    hvp = ad.grad(lambda a: np.sum(g(a) * u))(x)
    eps = 1e-5
    fd = np.array([(np.sum(g(x + eps * e) * u) - np.sum(g(x - eps * e) * u)) / (2 * eps)
                   for e in np.eye(9).reshape(9, 3, 3)]).reshape(3, 3)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6, atol=1e-8)


def test_sqrtm_of_a_matrix_with_a_complex_root_refuses():
    with pytest.raises(NonDifferentiableError, match="complex principal square root"):
        ad.grad(lambda a: np.sum(L.sqrtm(a)))(np.diag([-1.0, 2.0, 3.0]))


# -- linalg: oracles -------------------------------------------------------------------------------

def _torch(*xs):
    return [torch.tensor(x, requires_grad=True) for x in xs]


def _ours(f, *xs):
    return ad.grad(lambda *v: np.sum(np.sin(f(*v))), tuple(range(len(xs))))(*xs)


def _check_torch(ours, theirs, *xs):
    ts = _torch(*xs)
    y = theirs(*ts)
    torch.sin(y).sum().backward()
    for i, (g, t) in enumerate(zip(_ours(ours, *xs), ts)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=f"argument {i}")


@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_equals_torch(lower, trans, unit):
    def theirs(a, b):
        tri = torch.tril(a) if lower else torch.triu(a)
        if unit:
            tri = tri - torch.diag(torch.diagonal(tri)) + torch.eye(3, dtype=a.dtype)
        return torch.linalg.solve_triangular(tri.T if trans else tri, b, upper=lower == bool(trans))
    _check_torch(lambda a, b: L.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), theirs, A, B2)


def test_linalg_gradients_equal_torch():
    M = RNG.uniform(-1, 1, (3, 3))
    _check_torch(L.expm, torch.linalg.matrix_exp, M)
    _check_torch(L.expm, torch.linalg.matrix_exp, RNG.uniform(-1, 1, (2, 3, 3)))
    _check_torch(lambda a, b: L.cho_solve(L.cho_factor(a, lower=True), b),
                 lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(torch.tril(a) + torch.tril(a, -1).T)),
                 SPD, B2)
    _check_torch(lambda a, b: L.block_diag(a, b), torch.block_diag, A, B2)


def test_linalg_gradients_equal_autograd():
    for kw in TRIANGULAR[:4] + TRIANGULAR[-4:]:
        if kw["unit_diagonal"] or kw["trans"] not in (0, 1):
            continue
        for i in (0, 1):
            ours = ad.grad(lambda a, b: np.sum(np.sin(L.solve_triangular(a, b, **kw))), i)(A, B2)
            theirs = autograd.grad(lambda a, b: anp.sum(anp.sin(alg.solve_triangular(a, b, **kw))), i)(A, B2)
            # autograd's gradient of a is not restricted to the triangle scipy reads
            theirs = (np.tril(theirs) if kw["lower"] else np.triu(theirs)) if i == 0 else theirs
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    ours = ad.grad(lambda a: np.sum(np.sin(L.sqrtm(a))))(SPD)
    theirs = autograd.grad(lambda a: anp.sum(anp.sin(alg.sqrtm(a))))(SPD)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8)
    Bs = RNG.uniform(-1, 1, (2, 2)) + 2 * np.eye(2)
    for i in (0, 1, 2):
        ours = ad.grad(lambda a, b, q: np.sum(np.sin(L.solve_sylvester(a, b, q))), i)(A, Bs, B2)
        theirs = autograd.grad(lambda a, b, q: anp.sum(anp.sin(alg.solve_sylvester(a, b, q))), i)(A, Bs, B2)
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-12)
