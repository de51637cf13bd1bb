"""np.linalg primitives and their rules: inv, solve, det, slogdet, cholesky, eigh, svd, qr, pinv.

Every rule works on stacks of matrices (``(..., m, n)``), real float32 and float64; pullbacks are
written with numpy calls on their arguments (and with these primitives), so they lift. Formulas
follow Giles, "An extended collection of matrix derivative results" (2008), Murray (cholesky,
arXiv:1602.07527), Townsend (svd) and Walter & Lehmann / Liao et al. (qr).

Functions that read one triangle of their input (``eigh``, ``cholesky``, ``pinv(hermitian=True)``)
get the gradient of exactly what numpy computes: the other triangle gets zero, the read triangle
gets both halves of the symmetric gradient. For a symmetric ``A`` built from other inputs
(``B @ B.T``) the result is the same as with the symmetric convention.

Assumptions, as in every AD system: eigenvalues (eigh) and singular values (svd) are distinct and
singular values non-zero where eigen- or singular vectors are differentiated; matrices are
invertible for inv/solve/det/slogdet; pinv's rank is constant near the point.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import implements, unsupported
from ..primitives import Primitive
from ..rrule import rrule
from ..samples import MATRIX, In, Sample, matrix


def mT(x):
    """Transpose of the last two axes (a stack of matrices)."""
    return np.swapaxes(x, -1, -2)


def _eye_like(x, n: int):
    return np.eye(n, dtype=x.dtype)


def triangle_gradient(g, lower: bool = True):
    """The gradient of a function that reads only one triangle of its argument, from the
    gradient ``g`` it would have on a symmetric one: the read triangle gets ``g + g.T``, the
    diagonal ``g``, the unread triangle zero."""
    both = g + mT(g)
    off = np.tril(both, -1) if lower else np.triu(both, 1)
    return off + _eye_like(g, g.shape[-1]) * g


# -- primitives --------------------------------------------------------------------------------

WELL = matrix((3, 3), "well")
SPREAD = (Sample((matrix((4, 3), "spread"),), shapes=MATRIX), Sample((matrix((3, 4), "spread"),), shapes=MATRIX))

inv_p = Primitive("inv", np.linalg.inv, function=np.linalg.inv, samples=(Sample((WELL,), shapes=MATRIX),))
solve_p = Primitive("solve", np.linalg.solve, function=np.linalg.solve, linear_in=(1,),
                    samples=(Sample((WELL, In((3, 2))), shapes=MATRIX), Sample((WELL, In((3,))), shapes=MATRIX)))
det_p = Primitive("det", np.linalg.det, function=np.linalg.det,
                  samples=(Sample((WELL,), shapes=MATRIX), Sample((matrix((2, 3, 3), "well"),), shapes=MATRIX)))
slogdet_p = Primitive("slogdet", lambda a: tuple(np.linalg.slogdet(a)), multiple_results=True,
                      function=np.linalg.slogdet, samples=(Sample((WELL,), shapes=MATRIX),))
cholesky_p = Primitive("cholesky", lambda a, upper: np.linalg.cholesky(a, upper=upper),
                       params=("upper",), function=np.linalg.cholesky,
                       samples=tuple(Sample((matrix((3, 3), "separated"),), {"upper": upper}, MATRIX)
                                     for upper in (False, True)))
eigh_p = Primitive("eigh", lambda a, UPLO: tuple(np.linalg.eigh(a, UPLO=UPLO)), params=("UPLO",),
                   multiple_results=True, function=np.linalg.eigh,
                   samples=tuple(Sample((matrix((4, 4), "separated"),), {"UPLO": uplo}, MATRIX) for uplo in "LU"))
svd_p = Primitive("svd", lambda a: tuple(np.linalg.svd(a, full_matrices=False)), multiple_results=True,
                  function=np.linalg.svd, spelling="np.linalg.svd({0}, full_matrices=False)",
                  doc="The reduced SVD: u (..., m, k), s (..., k), vh (..., k, n).",
                  samples=SPREAD)
qr_p = Primitive("qr", lambda a: tuple(np.linalg.qr(a)), multiple_results=True, function=np.linalg.qr,
                 doc="The reduced QR decomposition: q (..., m, k), r (..., k, n).", samples=SPREAD)
pinv_p = Primitive("pinv", lambda a, rcond, hermitian: np.linalg.pinv(a, rcond, hermitian),
                   params=("rcond", "hermitian"), function=np.linalg.pinv,
                   samples=(Sample((matrix((4, 3), "spread"),), {"rcond": 1e-15, "hermitian": False}, MATRIX),))

# numpy's namedtuple result classes, from one small call each
_SlogdetResult = type(np.linalg.slogdet(np.eye(1)))
_EighResult = type(np.linalg.eigh(np.eye(1)))
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


@rrule(det_p)
def _det_rule(a):
    y = np.linalg.det(a)
    return y, lambda dy: ((dy * y)[..., None, None] * mT(np.linalg.inv(a)),)


@rrule(slogdet_p)
def _slogdet_rule(a):
    sign, logdet = slogdet_p.bind(a)
    # the sign is piecewise constant: its cotangent is dropped
    return (sign, logdet), lambda cts: (cts[1][..., None, None] * mT(np.linalg.inv(a)),)


@rrule(cholesky_p)
def _cholesky_rule(a, upper):
    c = np.linalg.cholesky(a, upper=upper)

    def pullback(dc):
        low, dlow = (mT(c), mT(dc)) if upper else (c, dc)
        p = _phi(mT(low) @ dlow)
        # s = L^-T p L^-1, with general solves (numpy has no batched triangular solve)
        s = mT(np.linalg.solve(mT(low), mT(np.linalg.solve(mT(low), p))))
        return (triangle_gradient(s, lower=not upper),)
    return c, pullback


def _phi(x):
    """Murray's Phi: the lower triangle with the diagonal halved."""
    return np.tril(x) - 0.5 * _eye_like(x, x.shape[-1]) * x


@rrule(eigh_p)
def _eigh_rule(a, UPLO):
    w, v = eigh_p.bind(a, UPLO=UPLO)

    def pullback(cts):
        dw, dv = cts
        eye = _eye_like(w, w.shape[-1])
        gap = w[..., None, :] - w[..., :, None] + eye        # w_j - w_i; 1 on the diagonal
        inner = eye * dw[..., None, :] + (1 - eye) / gap * (mT(v) @ dv)
        return (triangle_gradient(v @ inner @ mT(v), lower=UPLO == "L"),)
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
        f = 1 / (s2[..., None, :] - s2[..., :, None] + eye)   # 1/(s_j^2 - s_i^2) off the diagonal
        utdu = mT(u) @ du
        vtdv = vh @ mT(dvh)
        core = ((f * (utdu - mT(utdu))) * s[..., None, :] + eye * ds[..., None, :]
                + s[..., :, None] * (f * (vtdv - mT(vtdv))))
        da = u @ core @ vh
        if m > k:       # the part of du outside span(u)
            da = da + ((du - u @ utdu) / s[..., None, :]) @ vh
        if n > k:       # the part of dv outside span(v)
            da = da + u @ ((dvh - mT(vtdv) @ vh) / s[..., :, None])
        return (da,)
    return (u, s, vh), pullback


def _copyltu(x):
    """The symmetric matrix with the lower triangle of ``x``."""
    low = np.tril(x, -1)
    return low + mT(low) + _eye_like(x, x.shape[-1]) * x


def _qr_tall_pullback(q, r, dq, dr):
    """da = (dq + q copyltu(m)) r^-T with m = r dr^T - dq^T q, for m >= n."""
    m = r @ mT(dr) - mT(dq) @ q
    b = dq + q @ _copyltu(m)
    return mT(np.linalg.solve(r, mT(b)))


@rrule(qr_p)
def _qr_rule(a):
    q, r = qr_p.bind(a)

    def pullback(cts):
        dq, dr = cts
        m, n = a.shape[-2:]
        if m >= n:
            return (_qr_tall_pullback(q, r, dq, dr),)
        # wide: a = [x | y] with x = q r[:, :m] square and r[:, m:] = q^T y
        y, dr_x, dr_y = a[..., m:], dr[..., :m], dr[..., m:]
        dx = _qr_tall_pullback(q, r[..., :m], dq + y @ mT(dr_y), dr_x)
        return (np.concatenate([dx, q @ dr_y], axis=-1),)
    return (q, r), pullback


@rrule(pinv_p)
def _pinv_rule(a, rcond, hermitian):
    x = np.linalg.pinv(a, rcond, hermitian)

    def pullback(dx):
        # Golub & Pereyra: exact while the rank is constant near a. hermitian=True reads the
        # lower triangle of a: the formula holds at the symmetric matrix numpy inverts.
        m, n = a.shape[-2:]
        sym = np.tril(a) + mT(np.tril(a, -1)) if hermitian else a
        xt, dxt = mT(x), mT(dx)
        g = (-(xt @ dx @ xt) + (_eye_like(x, m) - sym @ x) @ dxt @ x @ xt
             + xt @ x @ dxt @ (_eye_like(x, n) - x @ sym))
        return (triangle_gradient(g, lower=True) if hermitian else g,)
    return x, pullback


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
    return _SVDResult(u, s, mT(u * sgn[..., None, :]))


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

