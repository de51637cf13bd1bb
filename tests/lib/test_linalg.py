"""ad.lib.linalg and the modules added with it, beyond the spec table: HIPS autograd as an
independent oracle, second derivatives (gradients of lifted gradients), rules that lift without
falling back, numpy's result types, and the loud errors (naming the user's line)."""
import os

import numpy as np
import pytest

import ad
from ad.errors import MutationError, UnsupportedFunctionError
from ad.lib import arrays, contraction, linalg, linalg_functions, numeric, selection, statistics, values
from ad.primitives import Primitive
from tests.support.cases import CASES, floats, weighted, weights
from tests.support.needs import module
from tests.support.specs_linalg import LINALG
from tests.support.specs_numeric import NUMERIC

anp = module("autograd.numpy")
autograd = module("autograd")

RNG = np.random.default_rng(7)
A = RNG.uniform(-1, 1, (3, 3)) + 4 * np.eye(3)
B = RNG.uniform(-1, 1, (3, 4))
W = RNG.standard_normal((3, 3))
D = np.diag([1.0, 3.0, 5.0])


def spd(xp, b):
    return b @ b.T / 4 + xp.eye(3)


# (name, function of (numpy module, x), input): the same code runs on numpy and autograd.numpy
ORACLE = [
    ("inv", lambda xp, x: xp.sum(xp.linalg.inv(x) * W), A),
    ("det", lambda xp, x: xp.linalg.det(x), A),
    ("slogdet", lambda xp, x: xp.linalg.slogdet(x)[1], A),
    ("solve", lambda xp, x: xp.sum(xp.linalg.solve(x, W) * W), A),
    ("cholesky", lambda xp, b: xp.sum(xp.linalg.cholesky(spd(xp, b)) * W), B),
    ("eigh", lambda xp, b: xp.sum(xp.linalg.eigh(spd(xp, b) + D)[0] * W[0])
     + xp.sum(xp.linalg.eigh(spd(xp, b) + D)[1] ** 2 * W), B),
    ("svd", lambda xp, x: xp.sum(xp.linalg.svd(x, full_matrices=False)[1] * W[0, :3])
     + xp.sum(xp.linalg.svd(x, full_matrices=False)[0] ** 2 * W), B),
    ("pinv", lambda xp, x: xp.sum(xp.linalg.pinv(x) * W[0, :3]), B),
    ("eig", lambda xp, x: xp.sum(xp.real(xp.linalg.eig(x + D)[0]) * W[0])
     + xp.sum(xp.abs(xp.linalg.eig(x + D)[1]) ** 2 * W), A - 4 * np.eye(3)),
    ("norm fro", lambda xp, x: xp.linalg.norm(x), B),
    ("norm nuc", lambda xp, x: xp.linalg.norm(x, "nuc"), B),
    ("norm vector 3", lambda xp, x: xp.linalg.norm(x[0], 3), B),
    ("diff", lambda xp, x: xp.sum(xp.diff(x, axis=1) ** 2), B),
    ("cross", lambda xp, x: xp.sum(xp.cross(x[:, :3], x[:, 1:]) * W), B),
]


@pytest.mark.parametrize("name,f,x", ORACLE, ids=[o[0] for o in ORACLE])
def test_gradient_matches_autograd(name, f, x):
    expected = autograd.grad(lambda x: f(anp, x))(x)
    np.testing.assert_allclose(ad.grad(lambda x: f(np, x))(x), expected, rtol=1e-9, atol=1e-12)


SECOND_ORDER = [
    ("slogdet", lambda x: np.linalg.slogdet(x)[1], A),
    ("inv", lambda x: np.sum(np.linalg.inv(x) * W), A),
    ("det", lambda x: np.linalg.det(x), A),
    ("cholesky", lambda x: np.sum(np.linalg.cholesky(x) * W), A),
    ("eigh", lambda x: np.sum(np.linalg.eigh(x - 4 * np.eye(3) + D)[1] ** 2 * W), A),
    ("svd", lambda x: np.sum(np.linalg.svd(x)[0] ** 2 * W), A),
    ("qr", lambda x: np.sum(np.linalg.qr(x)[1] * W), A),
    ("pinv", lambda x: np.sum(np.linalg.pinv(x) * W), A),
]


@pytest.mark.parametrize("name,f,x", SECOND_ORDER, ids=[s[0] for s in SECOND_ORDER])
def test_second_derivative_matches_differences_of_the_gradient(name, f, x):
    """The lifted pullbacks are differentiable again: <H u, v> against central differences."""
    g = ad.grad(f)
    u, v = RNG.standard_normal(x.shape), RNG.standard_normal(x.shape)
    hv = ad.grad(lambda x: np.sum(g(x) * v))(x)
    h = 1e-5
    fd = (np.sum(g(x + h * u) * v) - np.sum(g(x - h * u) * v)) / (2 * h)
    assert abs(np.sum(hv * u) - fd) <= 1e-6 * max(1.0, abs(fd))


MODULES = (linalg, linalg_functions, contraction, numeric, statistics, selection, values, arrays)
PRIMITIVES = {v for m in MODULES for v in vars(m).values() if isinstance(v, Primitive)}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES
                                  if c.primitive in PRIMITIVES or c.name in LINALG or c.name in NUMERIC])
def test_rules_lift_without_fallback(case):
    rng = np.random.default_rng(0)
    xs = case.inputs(case.sample.shapes[-1], rng)
    gt = ad.grad_tape(weighted(case.fn, weights(case.fn(*xs), rng)), *xs, argnums=floats(xs))
    assert not gt.fallbacks


def test_triangle_readers_give_the_unread_triangle_no_gradient():
    x = RNG.uniform(-1, 1, (4, 4)) * 0.2 + np.diag([1.0, 3.0, 5.0, 7.0])
    for f, upper in ((lambda a: np.linalg.eigvalsh(a) @ np.arange(4.0), False),
                     (lambda a: np.sum(np.linalg.cholesky(a, upper=True)), True),
                     (lambda a: np.sum(np.linalg.pinv(a, hermitian=True)), False)):
        g = ad.grad(f)(x)
        unread = np.tril(g, -1) if upper else np.triu(g, 1)
        assert np.all(unread == 0) and np.any(g != 0)


def test_results_keep_numpy_types():
    def f(a):
        eig = np.linalg.eigh(a)
        assert type(np.linalg.eig(a)).__name__ == "EigResult"
        sl = np.linalg.slogdet(a)
        usv = np.linalg.svd(a)
        qr = np.linalg.qr(a)
        assert (type(eig).__name__, type(sl).__name__, type(usv).__name__, type(qr).__name__) == \
            ("EighResult", "SlogdetResult", "SVDResult", "QRResult")
        return np.sum(eig.eigenvalues) + sl.logabsdet + np.sum(usv.S) + np.sum(qr.R) + np.sum(a.round() + a.imag)
    assert np.isclose(ad.trace(f, A)(A), f(A))


def _raises_at_this_line(error, f, *args, match):
    with pytest.raises(error, match=match) as info:
        ad.grad(f)(*args)
    assert os.path.basename(__file__) in str(info.value)
    return info.value


def test_svd_full_matrices_of_a_non_square_matrix_is_refused():
    _raises_at_this_line(UnsupportedFunctionError, lambda x: np.sum(np.linalg.svd(x)[0]), B,
                         match="full_matrices=False")


def test_complete_qr_of_a_tall_matrix_is_refused():
    _raises_at_this_line(UnsupportedFunctionError, lambda x: np.sum(np.linalg.qr(x, mode="complete")[0]), B.T,
                         match="mode='reduced'")


def test_in_place_writers_refuse_plain_ndarray_targets():
    def put_into_constant(x):
        z = np.zeros(12)
        np.put(z, [0, 1], x[0, :2])
        return np.sum(z)
    _raises_at_this_line(MutationError, put_into_constant, B, match="plain ndarray")


def test_in_place_writers_rebind_traced_targets():
    def f(x):
        z = x * 1.0
        alias, copy = z, z.copy()
        np.fill_diagonal(z, 0.0)        # seen through the alias, as in numpy; not through the copy
        return np.sum(alias) + np.sum(copy * 0.5)
    assert np.isclose(ad.trace(f, A)(A), f(A))
    np.testing.assert_array_equal(ad.grad(f)(A), 1.5 - np.eye(3))


@pytest.mark.parametrize("f,match", [
    (lambda x: np.sum(np.interp(x, [0.0, 1.0], [1.0, 2.0], period=1.0)), "period"),
    (lambda x: np.quantile(x, 0.5, method="hazen"), "hazen"),
    (lambda x: np.sum(np.cov(x, aweights=np.ones(4))), "aweights"),
    (lambda x: np.sum(np.delete(x, np.argmax(x[0]))), "traced positions"),
    (lambda x: np.sum(np.insert(x, np.argmax(x[0]), 1.0)), "traced positions"),
    (lambda x: np.sum(np.insert(x, np.argsort(x[0]), x[1], axis=1)), "must be static"),
], ids=["interp period", "quantile method", "cov weights", "delete traced", "insert traced", "insert traced array"])
def test_unsupported_arguments_are_named(f, match):
    _raises_at_this_line(UnsupportedFunctionError, f, B, match=match)
