"""np.linalg on complex matrices (issue 14), beyond the registry-wide harness of tests/lib/test_complex.py
(which runs the primitives' own samples): every line of specs_linalg.COMPLEX_LINALG drawn complex
(finite differences along random complex directions, closure = lifted = compiled, complex64),
PyTorch and HIPS autograd as oracles (PyTorch's gradient is the conjugate of ours), second
derivatives, the refusal of phase-dependent losses of eigen- and singular vectors, numpy's
value-dependent dtype of eig, and the triangle Hermitian readers read."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import dot_product_test, pair, random_like
from ad.checks.settings import fd_rtol
from ad.samples import C64, C128, draw
from tests.support.cases import leaves
from tests.support.needs import module
from tests.support.specs_linalg import COMPLEX_LINALG, eig_phase_free

torch = module("torch")
anp = module("autograd.numpy")
autograd = module("autograd")

LINES = [pytest.param(name, s, id=name) for name, s in COMPLEX_LINALG.items()]


def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _cweights(y, rng, dtype=np.complex128):
    return [(rng.standard_normal(np.shape(v)) + 1j * rng.standard_normal(np.shape(v))).astype(dtype)
            if np.iscomplexobj(v) else rng.standard_normal(np.shape(v)).astype(np.real(np.ones(1, dtype)).dtype)
            for v in leaves(y)]


def _loss(fn, ws):
    """A real loss: the real pairing of each output with its weight."""
    return lambda *xs: sum(np.sum(np.real(leaf * w)) for leaf, w in zip(leaves(fn(*xs)), ws))


def crand(shape, rng):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.mark.parametrize("name,s", LINES)
def test_gradient_matches_finite_differences(name, s):
    rng = _rng(name, "fd")
    xs = draw(s.inputs, rng, dtype=C128)
    y, pullback = ad.vjp(s.call, *xs)
    rtol = fd_rtol([np.result_type(v) for v in (*xs, *leaves(y))])
    for lhs, rhs, est in dot_product_test(s.call, pullback, xs, rng=rng):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= rtol * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("name,s", LINES)
def test_forms_agree(name, s):
    rng = _rng(name, "forms")
    xs = draw(s.inputs, rng, dtype=C128)
    loss = _loss(s.call, _cweights(s.call(*xs), rng))
    argnums = tuple(range(len(xs)))
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(loss, argnums, form=form, optimize=optimize)(*xs)
        for r, g in zip(ref, got):
            assert np.result_type(g) == C128
            np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-11, err_msg=f"{form} optimize={optimize}")
    assert not ad.grad_tape(loss, *xs, argnums=argnums).fallbacks


@pytest.mark.parametrize("name,s", LINES)
def test_complex64(name, s):
    """LAPACK's single-precision complex routines: complex64 gradients close to complex128's."""
    rng = _rng(name, "c64")
    xs = draw(s.inputs, rng, dtype=C128)
    ws = _cweights(s.call(*xs), rng)
    argnums = tuple(range(len(xs)))
    g128 = ad.grad(_loss(s.call, ws), argnums)(*xs)
    ws64 = [w.astype(np.complex64) if np.iscomplexobj(w) else w.astype(np.float32) for w in ws]
    g64 = ad.grad(_loss(s.call, ws64), argnums)(*[x.astype(C64) for x in xs])
    for a, b in zip(g64, g128):
        assert np.result_type(a) == C64
        np.testing.assert_allclose(a, b, rtol=3e-3, atol=3e-3 * max(1.0, np.max(np.abs(b))))


# -- PyTorch: its gradient of a real loss is the conjugate of ours -----------------------------------

RNG = np.random.default_rng(14)
Z = crand((3, 3), RNG) * 0.3 + 3 * np.eye(3)                           # well conditioned
T = crand((4, 3), RNG) * 0.3 + np.diag([3.0, 2.0, 1.0, 0.0])[:, :3]    # spread singular values
H = crand((3, 4), RNG)
HPD = H @ H.conj().T / 4 + np.eye(3)                                   # Hermitian positive definite
NH = np.diag([1.0, 3.0, 5.0]) + 0.3 * crand((3, 3), RNG)               # separated, not normal
W3, W43 = crand((3, 3), RNG), crand((4, 3), RNG)


def _mh(x, xp):
    return x.mH if xp is torch else np.conj(np.swapaxes(x, -1, -2))


def _re(x, xp):
    return xp.real(x)


# (name, f(xp, x) -> real scalar, x): the same code on numpy and torch (xp.linalg.*)
TORCH = [
    ("inv", lambda xp, x: xp.sum(_re(xp.linalg.inv(x) * W3c(xp), xp)), Z),
    ("det", lambda xp, x: _re(xp.linalg.det(x) * (0.3 - 1j), xp), Z),
    ("slogdet", lambda xp, x: xp.linalg.slogdet(x)[1] + _re(xp.linalg.slogdet(x)[0] * (1 + 2j), xp), Z),
    ("solve", lambda xp, x: xp.sum(_re(xp.linalg.solve(x, W3c(xp)) * W3c(xp), xp)), Z),
    ("cholesky", lambda xp, x: xp.sum(_re(xp.linalg.cholesky(x @ _mh(x, xp) + eye(xp)) * W3c(xp), xp)), Z / 3),
    ("eigh eigenvalues", lambda xp, x: xp.sum(xp.linalg.eigvalsh(x + _mh(x, xp)) * xp.arange(3.0, dtype=xp.float64)), Z),
    ("eigh projectors", lambda xp, x: xp.sum(_re((lambda w, v: v @ (_mh(v, xp) * (w * w)[:, None]) * W3c(xp))(
        *xp.linalg.eigh(x + _mh(x, xp))), xp)), NH),
    ("svd values", lambda xp, x: xp.sum(xp.linalg.svdvals(x) ** 3), T),
    ("svd u s^2 vh wide", lambda xp, x: xp.sum(_re((lambda u, s, vh: (u * s ** 2) @ vh * W43c(xp).T)(
        *xp.linalg.svd(x, full_matrices=False)), xp)), T.T),
    ("svd |u|^2", lambda xp, x: xp.sum(xp.abs(xp.linalg.svd(x, full_matrices=False)[0]) ** 2 * W43r(xp)), T),
    ("svd u vh tall", lambda xp, x: xp.sum(_re((lambda u, s, vh: u @ vh * W43c(xp))(
        *xp.linalg.svd(x, full_matrices=False)), xp)), T),
    ("qr", lambda xp, x: xp.sum(_re(xp.linalg.qr(x)[0] * W43c(xp), xp)) + xp.sum(_re(xp.linalg.qr(x)[1] * W3c(xp), xp)), T),
    ("pinv", lambda xp, x: xp.sum(_re(xp.linalg.pinv(x) * W43c(xp).T, xp)), T),
    ("eig values", lambda xp, x: xp.sum(_re(xp.linalg.eigvals(x) * W3c(xp)[0], xp)), NH),
    ("eig |v|^2", lambda xp, x: xp.sum(xp.abs(xp.linalg.eig(x)[1]) ** 2 * W3r(xp)), NH),
    ("norm fro", lambda xp, x: xp.linalg.norm(x), T),
    ("norm nuc", lambda xp, x: xp.linalg.matrix_norm(x, ord="nuc"), T),
    ("norm 2", lambda xp, x: xp.linalg.matrix_norm(x, ord=2), T),
    ("norm vector 3", lambda xp, x: xp.linalg.vector_norm(x[0], ord=3), T),
    ("matrix_power", lambda xp, x: xp.sum(_re(xp.linalg.matrix_power(x / 3, 3) * W3c(xp), xp)), Z),
    ("cond", lambda xp, x: xp.linalg.cond(x), T),
]


def _const(a):
    return lambda xp: torch.from_numpy(a) if xp is torch else a


W3c, W43c = _const(W3), _const(W43)
W3r, W43r = _const(W3.real), _const(W43.real)


def eye(xp):
    return torch.eye(3, dtype=torch.complex128) if xp is torch else np.eye(3)


@pytest.mark.parametrize("name,f,x", TORCH, ids=[t[0] for t in TORCH])
def test_gradient_is_the_conjugate_of_pytorchs(name, f, x):
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    f(torch, xt).backward()
    np.testing.assert_allclose(ad.grad(lambda x: f(np, x))(x), np.conj(xt.grad.numpy()), rtol=1e-9, atol=1e-11)


# -- HIPS autograd: same convention -----------------------------------------------------------------

AUTOGRAD = [
    ("inv", lambda xp, x: xp.sum(xp.real(xp.linalg.inv(x) * W3)), Z),
    ("det", lambda xp, x: xp.real(xp.linalg.det(x) * (0.3 - 1j)), Z),
    ("solve", lambda xp, x: xp.sum(xp.real(xp.linalg.solve(x, W3) * W3)), Z),
    ("slogdet", lambda xp, x: xp.linalg.slogdet(x)[1], Z),
    ("eigh", lambda xp, x: xp.sum(xp.linalg.eigh(x)[0] * xp.arange(3.0))
     + xp.sum(xp.abs(xp.linalg.eigh(x)[1]) ** 2 * W3.real), HPD + np.diag([0.0, 2.0, 4.0])),
    ("eig", lambda xp, x: xp.sum(xp.real(xp.linalg.eig(x)[0] * W3[0])) + xp.sum(xp.abs(xp.linalg.eig(x)[1]) ** 2 * W3.real), NH),
    ("svd", lambda xp, x: xp.sum(xp.linalg.svd(x, full_matrices=False)[1] * W3.real[0])
     + xp.sum(xp.abs(xp.linalg.svd(x, full_matrices=False)[0]) ** 2 * W43.real), T),
    ("norm fro", lambda xp, x: xp.linalg.norm(x), T),
    ("norm nuc", lambda xp, x: xp.linalg.norm(x, "nuc"), T),
    ("norm vector 3", lambda xp, x: xp.linalg.norm(x[0], 3), T),
]


@pytest.mark.parametrize("name,f,x", AUTOGRAD, ids=[a[0] for a in AUTOGRAD])
def test_gradient_matches_autograd(name, f, x):
    np.testing.assert_allclose(ad.grad(lambda x: f(np, x))(x), autograd.grad(lambda x: f(anp, x))(x),
                               rtol=1e-9, atol=1e-11)


# -- second derivatives ------------------------------------------------------------------------------

SECOND = [
    ("inv", lambda x: np.sum(np.real(np.linalg.inv(x) * W3)), Z),
    ("det", lambda x: np.real(np.linalg.det(x) * (1 - 0.5j)), Z),
    ("solve", lambda x: np.sum(np.real(np.linalg.solve(x, W3) * W3)), Z),
    ("slogdet", lambda x: np.linalg.slogdet(x)[1], Z),
    ("matrix_power", lambda x: np.sum(np.real(np.linalg.matrix_power(x / 3, 3) * W3)), Z),
    ("cholesky", lambda x: np.sum(np.imag(np.linalg.cholesky(x @ x.conj().T / 9 + np.eye(3)) * W3)), Z),
    ("eigh", lambda x: np.sum(np.linalg.eigvalsh(x + x.conj().T) ** 3)
     + np.sum(np.abs(np.linalg.eigh(NH + 0.1 * x)[1]) ** 2 * W3.real), Z),
    ("svd", lambda x: np.sum(np.real((lambda u, s, vh: (u * s ** 2) @ vh)(*np.linalg.svd(x, full_matrices=False)) * W43)), T),
    ("qr", lambda x: np.sum(np.real(np.linalg.qr(x)[0] * W43)) + np.sum(np.imag(np.linalg.qr(x)[1] * W3)), T),
    ("pinv", lambda x: np.sum(np.real(np.linalg.pinv(x) * W43.T)), T),
    ("eig", lambda x: np.sum(eig_phase_free(x).real * np.arange(21)), NH),
    ("norm nuc", lambda x: np.linalg.norm(x, "nuc"), T),
]


@pytest.mark.parametrize("name,f,x", SECOND, ids=[s[0] for s in SECOND])
def test_second_derivative_matches_differences_of_the_gradient(name, f, x):
    """<H u, v> in the real pairing against central differences of the gradient along u."""
    g = ad.grad(f)
    u, v = random_like(x, RNG), random_like(x, RNG)
    hv = ad.grad(lambda x: np.sum(np.real(g(x) * v)))(x)
    h = 1e-5
    fd = (pair(g(x + h * u), v) - pair(g(x - h * u), v)) / (2 * h)
    assert abs(pair(hv, u) - fd) <= 1e-6 * max(1.0, abs(fd))


# -- phases of eigen- and singular vectors -----------------------------------------------------------

PHASE_DEPENDENT = [
    ("eigh", lambda x: np.sum(np.real(np.linalg.eigh(x)[1])), HPD),
    ("svd u", lambda x: np.sum(np.imag(np.linalg.svd(x, full_matrices=False)[0])), T),
    ("svd vh", lambda x: np.sum(np.real(np.linalg.svd(x, full_matrices=False)[2] * W3)), T),
    ("eig", lambda x: np.sum(np.real(np.linalg.eig(x)[1] * W3)), NH),
]


@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
@pytest.mark.parametrize("name,f,x", PHASE_DEPENDENT, ids=[p[0] for p in PHASE_DEPENDENT])
def test_a_loss_depending_on_vector_phases_is_refused(name, f, x, form):
    with pytest.raises(ad.NonDifferentiableError, match="phases of complex eigenvectors"):
        ad.grad(f, form=form)(x)


def test_phase_free_losses_pass_the_check_and_a_real_one_is_not_checked():
    """|v|^2, v v^H and eigenvalues pass; real matrices have signs, not phases: no check."""
    assert np.all(np.isfinite(ad.grad(lambda x: np.sum(eig_phase_free(x).real))(NH)))
    tape = ad.grad_tape(lambda x: np.sum(np.linalg.eigh(x)[1] ** 2 * W3.real), HPD.real)
    assert "phase_free" not in str(tape)


def test_the_phase_of_a_vector_moves_nothing_a_phase_free_loss_sees():
    """The check is the condition d/dphi L(V e^{i phi}) = 0: along e^{i phi}, L is constant."""
    f = lambda v: np.sum(np.abs(v @ v.conj().T * W3) ** 2)  # noqa: E731
    v = np.linalg.eigh(HPD)[1]
    phase = np.exp(1j * np.array([0.3, -1.0, 2.0]))
    assert np.isclose(f(v), f(v * phase))


# -- eig's dtype follows the values, as numpy's ------------------------------------------------------

REAL_PAIR = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 4.0]]) + 0.1 * RNG.standard_normal((3, 3))
REAL_REAL = np.diag([1.0, 3.0, 5.0]) + 0.1 * RNG.standard_normal((3, 3))


@pytest.mark.parametrize("x", [REAL_PAIR, REAL_REAL, NH, REAL_REAL.astype(np.float32)],
                         ids=["real matrix, complex pair", "real eigenvalues", "complex", "float32"])
def test_eig_returns_numpys_dtypes_and_values(x):
    def f(a):
        w, v = np.linalg.eig(a)
        assert w.dtype == np.linalg.eig(x)[0].dtype and v.dtype == np.linalg.eig(x)[1].dtype
        assert np.linalg.eigvals(a).dtype == np.linalg.eigvals(x).dtype
        return w, v
    w, v = ad.trace(f, x)(x)
    np.testing.assert_array_equal(w, np.linalg.eig(x)[0])
    np.testing.assert_array_equal(v, np.linalg.eig(x)[1])


def test_eig_retraces_when_the_real_branch_changes():
    """One gradient function for both kinds of real matrix: the guard on numpy's dtype decision
    re-traces, and each gradient matches finite differences of the real loss."""
    g = ad.grad(lambda a: np.sum(np.real(np.linalg.eigvals(a)) ** 2 + np.imag(np.linalg.eigvals(a)) ** 3))
    for x in (REAL_REAL, REAL_PAIR, REAL_REAL):
        u = RNG.standard_normal(x.shape)
        loss = lambda a: np.sum(np.real(np.linalg.eigvals(a)) ** 2 + np.imag(np.linalg.eigvals(a)) ** 3)  # noqa: E731
        fd = (loss(x + 1e-6 * u) - loss(x - 1e-6 * u)) / 2e-6
        got = g(x)
        assert got.dtype == np.float64 and abs(np.sum(got * u) - fd) <= 1e-6 * max(1.0, abs(fd))
    assert g.cache_info().guard_failures >= 1


# -- the triangle Hermitian readers read -------------------------------------------------------------

def test_hermitian_readers_give_the_unread_triangle_and_the_imaginary_diagonal_nothing():
    """LAPACK reads one triangle and the real part of the diagonal: the gradient says so."""
    x = NH.copy()
    for f, upper in ((lambda a: np.linalg.eigvalsh(a) @ np.arange(3.0), False),
                     (lambda a: np.linalg.eigvalsh(a, UPLO="U") @ np.arange(3.0), True),
                     (lambda a: np.sum(np.real(np.linalg.cholesky(a) * W3)), False),
                     (lambda a: np.sum(np.imag(np.linalg.cholesky(a, upper=True) * W3)), True),
                     (lambda a: np.sum(np.real(np.linalg.pinv(a, hermitian=True) * W3)), False)):
        g = ad.grad(f)(x)
        unread = np.tril(g, -1) if upper else np.triu(g, 1)
        assert np.all(unread == 0) and np.all(np.diag(g).imag == 0) and np.any(g != 0)
        # and it is the gradient of what numpy computes: finite differences in every direction
        u = random_like(x, RNG)
        fd = (f(x + 1e-6 * u) - f(x - 1e-6 * u)) / 2e-6
        assert abs(pair(g, u) - fd) <= 1e-6 * max(1.0, abs(fd))


def test_a_hermitian_input_built_from_others_gets_the_hermitian_gradient():
    """For A = B B^H the triangle convention and the Hermitian one give the same gradient of B."""
    def f(b):
        return np.sum(np.linalg.eigvalsh(b @ b.conj().T + np.diag([0.0, 2.0, 4.0])) ** 3)
    xt = torch.from_numpy(H.copy()).requires_grad_(True)
    (torch.linalg.eigvalsh(xt @ xt.mH + torch.diag(torch.tensor([0.0, 2.0, 4.0], dtype=torch.complex128))) ** 3).sum().backward()
    np.testing.assert_allclose(ad.grad(f)(H), np.conj(xt.grad.numpy()), rtol=1e-9)
