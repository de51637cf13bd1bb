"""np.linalg primitives and their rules: inv, solve, det, slogdet, cholesky, eigh, svd, qr, pinv, eig.

Every rule works on stacks of matrices (``(..., m, n)``), real and complex (float32, float64,
complex64, complex128); pullbacks are written with numpy calls on their arguments (and with these
primitives), so they lift. Formulas follow Giles, "An extended collection of matrix derivative
results" (2008), Murray (cholesky, arXiv:1602.07527), Townsend (svd), Walter & Lehmann / Liao et
al. (qr), each derived again for complex matrices in the convention of docs/complex.md (the
cotangent of z is dL/dx - i dL/dy, a change of L is Re(sum(g * dz))): holomorphic functions (inv,
solve, det, eig) pull back with plain transposes, the others (cholesky, eigh, svd, qr, pinv,
slogdet's logabsdet) need conjugates. PyTorch's formulas are the conjugates of these.

Functions that read one triangle of their input (``eigh``, ``cholesky``, ``pinv(hermitian=True)``)
get the gradient of exactly what numpy computes: the Hermitian (symmetric) matrix made of the read
triangle and the real part of the diagonal (LAPACK ignores the diagonal's imaginary part). The
other triangle gets zero, the read one both halves of the Hermitian gradient, the diagonal a
real cotangent. For a Hermitian ``A`` built from other inputs (``B @ B.conj().T``) the result is
the same as with the Hermitian convention.

Eigen- and singular vectors of complex matrices are defined up to a phase each (``v * e^{i phi}``),
which LAPACK fixes arbitrarily: only a loss that does not depend on those phases has a gradient
(functions of eigenvalues, of ``|v|``, of ``v v^H``, of ``u @ vh``). A pullback checks that
(``phase_free_p``) and refuses the gradient of a phase-dependent loss, as PyTorch does.

Assumptions, as in every AD system: eigenvalues (eigh, eig) and singular values (svd) are distinct
and singular values non-zero where eigen- or singular vectors are differentiated; matrices are
invertible for inv/solve/det/slogdet; pinv's rank is constant near the point.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import implements, unsupported
from ..errors import NonDifferentiableError
from ..primitives import Primitive
from ..batching.derived import stacked
from ..rules import batch_rule, rrule, to_front
from ..samples import MATRIX, In, Sample, matrix
from ..tangents import ZeroTangent


def mT(x):
    """Transpose of the last two axes (a stack of matrices)."""
    return np.swapaxes(x, -1, -2)


def _complex(x) -> bool:
    return np.issubdtype(x.dtype, np.complexfloating)


def _conj(x):
    """The conjugate; a real array as it is (real tapes stay as they were)."""
    return np.conj(x) if _complex(x) else x


def _re(x):
    return np.real(x) if _complex(x) else x


def mH(x):
    """Conjugate transpose of the last two axes."""
    return _conj(mT(x))


def _eye_like(x, n: int):
    return np.eye(n, dtype=x.dtype)


def triangle_gradient(g, lower: bool = True):
    """The gradient of a function that reads one triangle of its argument and the real part of
    its diagonal (the Hermitian matrix numpy factorises), from a gradient ``g`` that holds on
    Hermitian directions: the read triangle gets ``g + g^H``, the diagonal ``Re g``, the unread
    triangle zero."""
    both = g + mH(g)
    off = np.tril(both, -1) if lower else np.triu(both, 1)
    return off + _eye_like(g, g.shape[-1]) * _re(g)


def _hermitian_of(x, lower: bool = True):
    """The Hermitian matrix numpy's Hermitian readers see: one triangle of ``x``, its mirror
    conjugated, the real part of the diagonal."""
    part = np.tril(x, -1) if lower else np.triu(x, 1)
    return part + mH(part) + _eye_like(x, x.shape[-1]) * _re(x)


# -- the phase check of eigen- and singular vectors ----------------------------------------------

def _phase_free(k, ref):
    """``k`` unchanged, after checking that the imaginary part of ``diag(k - ref)`` vanishes:
    for ``k = V^T gV`` (``ref`` 0 for eigenvectors, ``gVh Vh^T`` for svd) that is the loss not
    depending on the phase of each vector (d/dphi of L(V e^{i phi}) = -Im(diag(V^T gV)))."""
    d = np.imag(np.diagonal(k - ref, axis1=-2, axis2=-1))
    scale = max(float(np.max(np.abs(k), initial=0.0)), float(np.max(np.abs(ref), initial=0.0)))
    if np.any(np.abs(d) > np.sqrt(np.finfo(d.dtype).eps) * scale):
        raise NonDifferentiableError(
            "the loss depends on the phases of complex eigenvectors or singular vectors (eigh, eig "
            "or svd), which numpy fixes arbitrarily (each vector may be multiplied by e^{i phi}): "
            "its gradient is ill-defined. Differentiate something phase-free instead: eigenvalues, "
            "|v|, v v^H, u @ vh, v * conj(v[0]).")
    return k


phase_free_p = Primitive(
    "phase_free", _phase_free, complex_rule=True, checks_values=True,
    doc="Its first operand, checked to carry no dependence on eigenvector phases (see _phase_free). "
        "Not declared linear: the simplifier would replace it by zeros for zeros, dropping the check.",
    samples=(Sample((In((3, 3)), In((3, 3))), shapes=MATRIX, derive=lambda k, r: (k, k + np.real(r))),))


@rrule(phase_free_p)
def _phase_free_rule(k, ref):
    return phase_free_p.bind(k, ref), lambda dk: (dk, ZeroTangent())


def _phase_checked(k, ref=0.0):
    """``k``, checked by ``phase_free_p`` when it is complex (real vectors have no phase)."""
    return phase_free_p.bind(k, ref) if _complex(k) else k


# -- primitives --------------------------------------------------------------------------------

def _eig_impl(a):
    """numpy's eig, always complex: numpy returns real arrays for a real matrix whose eigenvalues
    happen to be real, a dtype that follows the values; the handler decides that with a guard."""
    w, v = np.linalg.eig(a)
    dtype = np.result_type(a.dtype, np.complex64)
    return w.astype(dtype), v.astype(dtype)


def _times(a, b, conj: bool = False):
    """Real and imaginary parts of ``a * b`` (``a * conj(b)``), written with real arithmetic on
    the parts: the phase-free outputs the samples of eigh, svd and eig differentiate."""
    ar, ai, br, bi = np.real(a), np.imag(a), np.real(b), np.imag(b)
    if conj:
        return ar * br + ai * bi, ai * br - ar * bi
    return ar * br - ai * bi, ar * bi + ai * br


def _eigh_phase_free(a, UPLO):
    w, v = eigh_p.bind(a, UPLO=UPLO)
    return (w, *_times(v, v[..., :1, :], conj=True))


def _svd_phase_free(a):
    """s, each u_k and vh_k times its first element's conjugate, and u_0k vh_k0 (u_k and vh_k
    share a phase, cancelled in the product)."""
    u, s, vh = svd_p.bind(a)
    return (s, *_times(u, u[..., :1, :], conj=True), *_times(vh, vh[..., :, :1], conj=True),
            *_times(u[..., :1, :], mT(vh[..., :, :1])))


def _eig_phase_free(a):
    """LAPACK's order of eigenvalues can change under a finite-difference step: sorted here."""
    w, v = eig_p.bind(a)
    order = np.argsort(np.real(w) + 0.1 * np.imag(w), axis=-1)
    w, v = np.take_along_axis(w, order, axis=-1), np.take_along_axis(v, order[..., None, :], axis=-1)
    return (np.real(w), np.imag(w), *_times(v, v[..., :1, :], conj=True))


WELL = matrix((3, 3), "well")
SPREAD = (Sample((matrix((4, 3), "spread"),), shapes=MATRIX), Sample((matrix((3, 4), "spread"),), shapes=MATRIX))
SVD_SAMPLES = tuple(Sample((matrix(shape, "spread"),), shapes=MATRIX, call=_svd_phase_free)
                    for shape in ((4, 3), (3, 4), (3, 3)))


_ROTATION = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 4.0]])   # eigenvalues 1 +- 2i, 4

inv_p = Primitive("inv", np.linalg.inv, function=np.linalg.inv, complex_rule=True,
                  samples=(Sample((WELL,), shapes=MATRIX),))
solve_p = Primitive("solve", np.linalg.solve, function=np.linalg.solve, linear_in=(1,), complex_rule=True,
                    samples=(Sample((WELL, In((3, 2))), shapes=MATRIX), Sample((WELL, In((3,))), shapes=MATRIX)))
det_p = Primitive("det", np.linalg.det, function=np.linalg.det, complex_rule=True,
                  samples=(Sample((WELL,), shapes=MATRIX), Sample((matrix((2, 3, 3), "well"),), shapes=MATRIX)))
slogdet_p = Primitive("slogdet", lambda a: tuple(np.linalg.slogdet(a)), multiple_results=True,
                      function=np.linalg.slogdet, complex_rule=True, samples=(Sample((WELL,), shapes=MATRIX),))
def _one_triangle_source(x: str, lower: bool) -> str:
    """The Hermitian matrix of one triangle of ``x``, as array code writes it: numpy's
    factorizations read one triangle, the standard leaves a non-Hermitian input undefined
    (JAX's symmetrizes it)."""
    tri, k = ("xp.tril", -1) if lower else ("xp.triu", 1)
    return f"{tri}({x}) + xp.conj(xp.matrix_transpose({tri}({x}, k={k})))"


def _cholesky_array_api_spelling(args, params) -> str:
    """numpy's upper factor is the conjugate transpose of the lower one, of the upper triangle."""
    lower = f"xp.linalg.cholesky({_one_triangle_source(args[0], not params['upper'])})"
    return f"xp.conj(xp.matrix_transpose({lower}))" if params["upper"] else lower


cholesky_p = Primitive("cholesky", lambda a, upper: np.linalg.cholesky(a, upper=upper),
                       array_api_spelling=_cholesky_array_api_spelling,
                       params=("upper",), function=np.linalg.cholesky, complex_rule=True,
                       samples=tuple(Sample((matrix((3, 3), "separated"),), {"upper": upper}, MATRIX)
                                     for upper in (False, True)))
eigh_p = Primitive("eigh", lambda a, UPLO: tuple(np.linalg.eigh(a, UPLO=UPLO)), params=("UPLO",),
                   array_api_spelling=lambda args, params:
                       f"xp.linalg.eigh({_one_triangle_source(args[0], params['UPLO'] == 'L')})",
                   multiple_results=True, function=np.linalg.eigh, complex_rule=True,
                   doc="Eigenvalues (real) and eigenvectors of the Hermitian matrix of one triangle. "
                       "Complex eigenvectors: only phase-free losses have a gradient (see the module).",
                   samples=tuple(Sample((matrix((4, 4), "separated"),), {"UPLO": uplo}, MATRIX,
                                        call=lambda a, uplo=uplo: _eigh_phase_free(a, uplo)) for uplo in "LU"))
svd_p = Primitive("svd", lambda a: tuple(np.linalg.svd(a, full_matrices=False)), multiple_results=True,
                  function=np.linalg.svd, spelling="np.linalg.svd({0}, full_matrices=False)", complex_rule=True,
                  array_api_spelling="xp.linalg.svd({0}, full_matrices=False)",
                  doc="The reduced SVD: u (..., m, k), s (..., k), vh (..., k, n). Complex singular vectors: "
                      "only losses free of their phases (u_k, vh_k) -> (u_k, vh_k) e^{i phi} have a gradient.",
                  samples=SVD_SAMPLES)
qr_p = Primitive("qr", lambda a: tuple(np.linalg.qr(a)), multiple_results=True, function=np.linalg.qr,
                 complex_rule=True, samples=SPREAD,
                 doc="The reduced QR decomposition: q (..., m, k), r (..., k, n), r's diagonal real "
                     "(LAPACK's, so q and r are unique up to signs that stay put).")
pinv_p = Primitive("pinv", lambda a, rcond, hermitian: np.linalg.pinv(a, rcond, hermitian),
                   array_api_spelling=lambda args, params:     # numpy's rcond is the standard's rtol
                       f"xp.linalg.pinv({_one_triangle_source(args[0], True) if params['hermitian'] else args[0]}, "
                       f"rtol={params['rcond']!r})",          # (hermitian: numpy's eigh reads the lower triangle)
                   params=("rcond", "hermitian"), function=np.linalg.pinv, complex_rule=True,
                   samples=(Sample((matrix((4, 3), "spread"),), {"rcond": 1e-15, "hermitian": False}, MATRIX),))
eig_p = Primitive("eig", _eig_impl, multiple_results=True, complex_rule=True,
                  doc="Eigenvalues and unit eigenvectors of a general matrix, always complex (numpy's "
                      "real result for real eigenvalues is the handler's, under a guard). Only "
                      "losses free of each eigenvector's phase have a gradient.",
                  samples=(Sample((matrix((3, 3), "separated"),), shapes=MATRIX, call=_eig_phase_free),
                           Sample((matrix((2, 3, 3), "separated"),), shapes=MATRIX, call=_eig_phase_free),
                           Sample((In((3, 3), -1.0, 1.0),), shapes=MATRIX, call=_eig_phase_free,
                                  derive=lambda x: (_ROTATION.astype(x.dtype) + 0.2 * x,))))

# numpy's namedtuple result classes, from one small call each
_SlogdetResult = type(np.linalg.slogdet(np.eye(1)))
_EighResult = type(np.linalg.eigh(np.eye(1)))
_EigResult = type(np.linalg.eig(np.eye(1)))
_SVDResult = type(np.linalg.svd(np.eye(1)))
_QRResult = type(np.linalg.qr(np.eye(1)))


# -- rules -------------------------------------------------------------------------------------

@rrule(inv_p)
def _inv_rule(a):
    y = np.linalg.inv(a)
    return y, lambda dy: (-(mT(y) @ dy @ mT(y)),)


@rrule(solve_p)
def _solve_rule(a, b):
    x = np.linalg.solve(a, b)

    def pullback(dx):
        if np.ndim(b) == 1:     # numpy 2: a 1-d b is one vector, broadcast against a's stack
            db = np.linalg.solve(mT(a), dx[..., None])[..., 0]
            return -db[..., :, None] * x[..., None, :], db
        db = np.linalg.solve(mT(a), dx)
        return -(db @ mT(x)), db
    return x, pullback


# batching (ad.vmap): numpy's linalg maps stacks of matrices, so the batch axis joins the stack
for _prim in (inv_p, det_p, slogdet_p, cholesky_p, eigh_p, svd_p, qr_p, pinv_p, eig_p):
    batch_rule(_prim)(stacked(_prim, 2))


@batch_rule(solve_p)
def _solve_batched(args, dims):
    """A 1-d b is one vector (numpy 2): batched, it becomes a stack of columns."""
    (a, b), (da, db) = args, dims
    vector = np.ndim(b) - (db is not None) == 1
    if vector:
        b = np.expand_dims(to_front(b, db), -1) if db is not None else b[:, None]
        db = None if db is None else 0
    elif db is not None:      # a stack of matrices b: its batch axis first, as solve's stack axes
        b, db = to_front(b, db), 0
    x, _ = _SOLVE_STACKED((a, b), (da, db))
    return (np.squeeze(x, -1) if vector else x), 0


_SOLVE_STACKED = stacked(solve_p, 2, 2)


@rrule(det_p)
def _det_rule(a):
    y = np.linalg.det(a)
    return y, lambda dy: ((dy * y)[..., None, None] * mT(np.linalg.inv(a)),)


@rrule(slogdet_p)
def _slogdet_rule(a):
    sign, logdet = slogdet_p.bind(a)

    def pullback(cts):
        # d log det = d logabsdet + i d(angle) = tr(A^-1 dA). A real sign is piecewise constant;
        # a complex one, e^{i angle}, moves with Im(tr(A^-1 dA)): coefficient i Im(g_sign sign)
        dsign, dlogdet = cts
        c = dlogdet + 1j * np.imag(dsign * sign) if _complex(sign) else dlogdet
        return (c[..., None, None] * mT(np.linalg.inv(a)),)
    return (sign, logdet), pullback


@rrule(cholesky_p)
def _cholesky_rule(a, upper):
    c = np.linalg.cholesky(a, upper=upper)

    def pullback(dc):
        # A = L L^H: the gradient on Hermitian directions is L^-T Phi(L^T gL) conj(L)^-1
        low, dlow = (mH(c), mH(dc)) if upper else (c, dc)
        p = _phi(mT(low) @ dlow)
        # with general solves (numpy has no batched triangular solve)
        s = mT(np.linalg.solve(mH(low), mT(np.linalg.solve(mT(low), p))))
        return (triangle_gradient(s, lower=not upper),)
    return c, pullback


def _phi(x):
    """Murray's Phi: the lower triangle with the diagonal halved."""
    return np.tril(x) - 0.5 * _eye_like(x, x.shape[-1]) * x


@rrule(eigh_p)
def _eigh_rule(a, UPLO):
    w, v = eigh_p.bind(a, UPLO=UPLO)

    def pullback(cts):
        # A = V diag(w) V^H: dw = diag(V^H dA V), V^H dV = F o (V^H dA V) off the diagonal
        dw, dv = cts
        eye = _eye_like(w, w.shape[-1])
        gap = w[..., None, :] - w[..., :, None] + eye        # w_j - w_i; 1 on the diagonal
        inner = eye * dw[..., None, :] + (1 - eye) / gap * _phase_checked(mT(v) @ dv)
        return (triangle_gradient(_conj(v) @ inner @ mT(v), lower=UPLO == "L"),)
    return (w, v), pullback


@rrule(svd_p)
def _svd_rule(a):
    u, s, vh = svd_p.bind(a)

    def pullback(cts):
        du, ds, dvh = cts
        m, n = a.shape[-2:]
        k = min(m, n)
        eye = _eye_like(s, k)
        s2 = s * s
        f = (1 - eye) / (s2[..., None, :] - s2[..., :, None] + eye)   # 1/(s_j^2 - s_i^2) off the diagonal
        utdu = mT(u) @ du
        dvhv = dvh @ mT(vh)                 # gVh conj(V): the transpose of V^T gV in the real case
        utdu = _phase_checked(utdu, dvhv)   # phase-free: Im diag(U^T gU) = Im diag(gVh conj(V))
        core = ((f * (utdu - mH(utdu))) * s[..., None, :] + eye * ds[..., None, :]
                + s[..., :, None] * (f * (mH(dvhv) - dvhv)))
        if _complex(utdu):      # the common phase of u_k and v_k moves Im(U^H dA V)_kk / s_k
            core = core + 1j * eye * np.imag(utdu) / s[..., None, :]
        da = _conj(u) @ core @ _conj(vh)
        if m > k:       # the part of du outside span(u)
            da = da + ((du - _conj(u) @ utdu) / s[..., None, :]) @ _conj(vh)
        if n > k:       # the part of dv outside span(v)
            da = da + _conj(u) @ ((dvh - dvhv @ _conj(vh)) / s[..., :, None])
        return (da,)
    return (u, s, vh), pullback


def _qr_tall_pullback(q, r, dq, dr):
    """da = (dq - conj(q) herm(b)) r^-T with b = q^T dq - dr r^T and herm(b) the Hermitian matrix
    of b's upper triangle (its diagonal's real part): q^H dq is skew-Hermitian, dr r^-1 upper
    triangular with a real diagonal."""
    b = mT(q) @ dq - dr @ mT(r)
    return mT(np.linalg.solve(r, mT(dq - _conj(q) @ _hermitian_of(b, lower=False))))


@rrule(qr_p)
def _qr_rule(a):
    q, r = qr_p.bind(a)

    def pullback(cts):
        dq, dr = cts
        m, n = a.shape[-2:]
        if m >= n:
            return (_qr_tall_pullback(q, r, dq, dr),)
        # wide: a = [x | y] with x = q r[:, :m] square and r[:, m:] = q^H y
        y, dr_x, dr_y = a[..., m:], dr[..., :m], dr[..., m:]
        dx = _qr_tall_pullback(q, r[..., :m], dq + _conj(y) @ mH(dr_y), dr_x)
        return (np.concatenate([dx, _conj(q) @ dr_y], axis=-1),)
    return (q, r), pullback


@rrule(pinv_p)
def _pinv_rule(a, rcond, hermitian):
    x = np.linalg.pinv(a, rcond, hermitian)

    def pullback(dx):
        # Golub & Pereyra: dX = -X dA X + X X^H dA^H (I - A X) + (I - X A) dA^H X^H X, exact
        # while the rank is constant near a. hermitian=True reads the lower triangle of a: the
        # formula holds at the Hermitian matrix numpy inverts.
        m, n = a.shape[-2:]
        sym = _hermitian_of(a) if hermitian else a
        xt, dxt, xh = mT(x), mT(dx), mH(x)
        g = -(xt @ dx @ xt) + _conj((_eye_like(x, m) - sym @ x) @ dxt @ x @ xh
                                    + xh @ x @ dxt @ (_eye_like(x, n) - x @ sym))
        return (triangle_gradient(g, lower=True) if hermitian else g,)
    return x, pullback


@rrule(eig_p)
def _eig_rule(a):
    w, v = eig_p.bind(a)

    def pullback(cts):
        # A V = V diag(w): dw = diag(P), V^-1 dV = F o P off the diagonal with P = V^-1 dA V and
        # F_ij = 1/(w_j - w_i), then each column's component along v_k that keeps |v_k| = 1
        # (numpy's normalisation): dv_k -= v_k Re(v_k^H dv_k). Holomorphic in A but for that
        # real normalisation, hence plain transposes and one conj.
        dw, dv = cts
        eye = _eye_like(w, w.shape[-1])
        f = (1 - eye) / (w[..., None, :] - w[..., :, None] + eye)
        norm = np.real(np.sum(v * dv, axis=-2))               # Re diag(V^T gV)
        inner = eye * dw[..., None, :] + f * (_phase_checked(mT(v) @ dv) - (mT(v) @ np.conj(v)) * norm[..., None, :])
        return (np.linalg.solve(mT(v), inner @ mT(v)),)
    return (w, v), pullback


# -- handlers with numpy's signatures ----------------------------------------------------------

@implements(np.linalg.inv)
def _inv(a):
    return inv_p.bind(a)


@implements(np.linalg.solve)
def _solve(a, b):
    return solve_p.bind(a, b)


@implements(np.linalg.det)
def _det(a):
    return det_p.bind(a)


@implements(np.linalg.slogdet)
def _slogdet(a):
    return _SlogdetResult(*slogdet_p.bind(a))


@implements(np.linalg.cholesky)
def _cholesky(a, /, *, upper=False):
    return cholesky_p.bind(a, upper=bool(upper))


def _uplo(UPLO: str) -> str:
    if UPLO.upper() not in ("L", "U"):
        raise ValueError(f"UPLO argument must be 'L' or 'U', not {UPLO!r}")
    return UPLO.upper()


@implements(np.linalg.eigh)
def _eigh(a, UPLO="L"):
    return _EighResult(*eigh_p.bind(a, UPLO=_uplo(UPLO)))


@implements(np.linalg.eigvalsh)
def _eigvalsh(a, UPLO="L"):
    return eigh_p.bind(a, UPLO=_uplo(UPLO))[0]


def _as_numpy_returns(a, w, v=None):
    """numpy returns real arrays for a real matrix whose eigenvalues are all real: that branch,
    taken under a guard (a call with other values re-traces)."""
    if not _complex(a) and np.all(np.imag(w) == 0):
        return np.real(w), None if v is None else np.real(v)
    return w, v


@implements(np.linalg.eig)
def _eig(a):
    return _EigResult(*_as_numpy_returns(a, *eig_p.bind(a)))


@implements(np.linalg.eigvals)
def _eigvals(a):
    return _as_numpy_returns(a, eig_p.bind(a)[0])[0]


@implements(np.linalg.svd)
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    if not compute_uv:
        return svd_p.bind(a)[1]
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise unsupported(
            f"np.linalg.svd(a, full_matrices=True) of a {m}x{n} matrix",
            "The extra columns of u (or rows of vh) are not unique, so they have no gradient. "
            "Fix: pass full_matrices=False.")
    return _SVDResult(*svd_p.bind(a))


def _svd_hermitian(a, compute_uv):
    """numpy's own reduction of a Hermitian SVD to eigh, written with traced functions."""
    if not compute_uv:
        return np.sort(np.abs(np.linalg.eigvalsh(a)), axis=-1)[..., ::-1]
    w, u = np.linalg.eigh(a)
    order = np.argsort(np.abs(w), axis=-1)[..., ::-1]
    sgn = np.take_along_axis(np.sign(w), order, axis=-1)
    s = np.take_along_axis(np.abs(w), order, axis=-1)
    u = np.take_along_axis(u, order[..., None, :], axis=-1)
    return _SVDResult(u, s, mH(u * sgn[..., None, :]))


@implements(np.linalg.svdvals)
def _svdvals(x, /):
    return svd_p.bind(x)[1]


@implements(np.linalg.qr)
def _qr(a, mode="reduced"):
    m, n = np.shape(a)[-2:]
    if mode == "r":
        return qr_p.bind(a)[1]
    if mode == "reduced" or (mode == "complete" and m <= n):
        return _QRResult(*qr_p.bind(a))
    raise unsupported(f"np.linalg.qr(a, mode={mode!r}) of a {m}x{n} matrix",
                       "Only mode='reduced' and 'r' have rules (the completed columns of q are "
                       "not unique). Fix: pass mode='reduced'.")


@implements(np.linalg.pinv)
def _pinv(a, rcond=None, hermitian=False, *, rtol=np._NoValue):
    if rcond is None:   # numpy's defaults, resolved here so the param is one static float
        rcond = 1e-15 if rtol is np._NoValue else (
            max(np.shape(a)[-2:]) * np.finfo(a.dtype).eps if rtol is None else rtol)
    elif rtol is not np._NoValue:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    if np.ndim(rcond):
        raise unsupported("np.linalg.pinv with an array rcond", "Pass one float.")
    return pinv_p.bind(a, rcond=float(rcond), hermitian=bool(hermitian))

