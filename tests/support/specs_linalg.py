"""Composition lines for ad.lib.linalg and ad.lib.linalg_functions: the primitives on stacks,
other argument kinds and orientations, and the np.linalg functions written with them.

Inputs carry the matrix structures of ``ad.samples.STRUCTURES`` (well-conditioned, separated
spectra, QR pivots away from zero), so every matrix stays away from its singularities.
Functions with sign-ambiguous outputs (eigenvectors, singular vectors) are checked through
sign-invariant expressions, multi-output functions through one concatenated array.
"""
import numpy as np

from ad.samples import STRUCTURES, In, matrix
from tests.support.specs import spec

WELL, BATCH = matrix((3, 3), "well"), matrix((2, 3, 3), "well")


def flat(*ys):
    return np.concatenate([np.ravel(y) for y in ys])


def eigh_invariant(a, uplo="L"):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return flat(w, v * v[..., :1, :])          # each column times its first entry: sign-free


def svd_invariant(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return flat(u * u[..., :1, :], s, vh * vh[..., :, :1])


def qr_flat(a):
    q, r = np.linalg.qr(a)
    return flat(q, r)


def signed_logdet(m):
    """sign * log|det| of m with its first row negated (a negative determinant)."""
    sign, logdet = np.linalg.slogdet(np.concatenate([-m[..., :1, :], m[..., 1:, :]], axis=-2))
    return sign * logdet


def spd(x):
    return STRUCTURES["spd"](x)


def real_parts(z):
    return flat(np.real(z), np.imag(z))


# phase-free expressions of eigen- and singular vectors (the complex lines need them)

def mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def times_first_conj(v, axis=-2):
    """Each vector times the conjugate of its first element: phase-free."""
    return v * np.conj(v[..., :1, :] if axis == -2 else v[..., :, :1])


def eigh_phase_free(a, uplo="L"):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return flat(w, times_first_conj(v), (v * w[..., None, :]) @ mH(v) * np.arange(1, 1 + w.shape[-1]))


def svd_phase_free(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return flat(s, u @ vh, np.abs(u) ** 2, times_first_conj(vh, -1), u[..., :1, :] * np.swapaxes(vh[..., :, :1], -1, -2))


def _order(w):
    """LAPACK's order of eigenvalues can change under a finite-difference step: sort them."""
    return np.argsort(np.real(w) + 0.1 * np.imag(w), axis=-1)


def eig_sorted(a):
    w, v = np.linalg.eig(a)
    order = _order(w)
    return np.take_along_axis(w, order, axis=-1), np.take_along_axis(v, order[..., None, :], axis=-1)


def eigvals_sorted(a):
    w = np.linalg.eigvals(a)
    return np.take_along_axis(w, _order(w), axis=-1)


def eig_phase_free(a):
    w, v = eig_sorted(a)
    return flat(w, times_first_conj(v), np.abs(v) ** 2)


ROTATION = np.array([[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 4.0]])


LINALG = {
    "slogdet of a negative determinant": spec(signed_logdet, WELL),
    "inv batched": spec(np.linalg.inv, BATCH),
    "solve vector b": spec(np.linalg.solve, WELL, In((3,))),
    "solve batched a, vector b": spec(np.linalg.solve, BATCH, In((3,))),
    "solve batched": spec(np.linalg.solve, BATCH, In((2, 3, 2))),
    "det batched": spec(np.linalg.det, BATCH),
    "slogdet batched": spec(lambda x: np.linalg.slogdet(x).logabsdet, BATCH),
    "cholesky upper": spec(lambda x: np.linalg.cholesky(x, upper=True), matrix((3, 3), "separated")),
    "cholesky batched spd": spec(lambda x: np.linalg.cholesky(spd(x)), In((2, 3, 4))),
    "eigh invariant": spec(eigh_invariant, matrix((4, 4), "separated")),
    "eigh upper": spec(lambda x: eigh_invariant(x, "U"), matrix((4, 4), "separated")),
    "eigh batched": spec(eigh_invariant, matrix((2, 3, 3), "separated")),
    "eigh of a symmetric product": spec(lambda x: np.linalg.eigh(spd(x) + np.diag([0.0, 2.0, 4.0]).astype(x.dtype))[0],
                                        In((3, 4), -1, 1)),
    "np.linalg.eigvalsh": spec(np.linalg.eigvalsh, matrix((4, 4), "separated")),
    "svd square": spec(svd_invariant, matrix((3, 3), "spread")),
    "svd tall": spec(svd_invariant, matrix((4, 3), "spread")),
    "svd wide": spec(svd_invariant, matrix((3, 4), "spread")),
    "svd batched": spec(svd_invariant, matrix((2, 4, 3), "spread")),
    "svd compute_uv=False": spec(lambda x: np.linalg.svd(x, compute_uv=False), In((4, 3))),
    "svd hermitian": spec(lambda x: np.linalg.svd(x, hermitian=True)[1], matrix((4, 4), "separated")),
    "svd hermitian u s vh": spec(lambda x: flat(*(lambda u, s, vh: ((u * s) @ vh, u * u[..., :1, :]))(
        *np.linalg.svd(x, hermitian=True))), matrix((4, 4), "separated")),
    "np.linalg.svdvals": spec(np.linalg.svdvals, matrix((2, 3, 4), "spread")),
    "qr square": spec(qr_flat, matrix((3, 3), "spread")),
    "qr wide": spec(qr_flat, matrix((3, 4), "spread")),
    "qr batched": spec(qr_flat, matrix((2, 4, 3), "spread")),
    "qr mode r": spec(lambda x: np.linalg.qr(x, mode="r"), matrix((4, 3), "spread")),
    "pinv wide": spec(np.linalg.pinv, matrix((3, 4), "spread")),
    "pinv hermitian": spec(lambda x: np.linalg.pinv(x, hermitian=True), matrix((3, 3), "separated")),
    "vecdot broadcast": spec(np.vecdot, In((2, 1, 4)), In((3, 4))),
    # eig of a real matrix: real arrays when every eigenvalue is real (as numpy), else complex
    "np.linalg.eig real eigenvalues": spec(lambda x: flat(*(lambda w, v: (w, v * v[..., :1, :]))(*eig_sorted(x))),
                                           matrix((2, 3, 3), "separated")),
    "np.linalg.eig complex pairs": spec(lambda x: real_parts(eig_phase_free(ROTATION.astype(x.dtype) + 0.2 * x)), In((3, 3), -1, 1)),
    "np.linalg.eigvals": spec(eigvals_sorted, matrix((2, 4, 4), "separated")),
    # np.linalg functions written with the primitives
    **{f"np.linalg.norm vector ord={o}": spec(lambda x, o=o: np.linalg.norm(x, o), In((5,), 0.2, 2.0, apart=True))
       for o in (None, 1, 2, np.inf, -np.inf, 3, 0.5, -1)},
    "np.linalg.norm vector ord=inf signed": spec(lambda x: np.linalg.norm(x * np.array([1, -1, 1]), np.inf, axis=1),
                                                 In((2, 3), 0.2, 2.0, apart=True)),
    **{f"np.linalg.norm matrix ord={o}": spec(lambda x, o=o: np.linalg.norm(x, o, axis=(2, 0), keepdims=True),
                                              In((3, 2, 4), 0.2, 2.0)) for o in (None, "fro", "nuc", 2, -2)},
    **{f"np.linalg.norm matrix ord={o}": spec(lambda x, o=o: np.linalg.norm(x, o),
                                              In((3, 4), 0.2, 1.0, structure="spread")) for o in (1, -1, np.inf, -np.inf)},
    "np.linalg.norm default": spec(lambda x: np.linalg.norm(x, keepdims=True), In((2, 3, 4))),
    "np.linalg.vector_norm": spec(lambda x: np.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=3),
                                  In((3, 2, 4), 0.2, 2.0)),
    "np.linalg.matrix_norm": spec(lambda x: np.linalg.matrix_norm(x, ord="nuc"), matrix((2, 3, 4), "spread")),
    "np.linalg.cond": spec(np.linalg.cond, matrix((4, 3), "spread")),
    "np.linalg.cond fro": spec(lambda x: np.linalg.cond(x, "fro"), WELL),
    "np.linalg.matrix_rank": spec(lambda x: x * np.linalg.matrix_rank(x), matrix((3, 4), "spread")),
    **{f"np.linalg.matrix_power {k}": spec(lambda x, k=k: np.linalg.matrix_power(x / 4, k), WELL)
       for k in (-2, 0, 1, 3, 6)},
    "np.linalg.multi_dot": spec(lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
                                In((3,)), In((3, 5)), In((5, 2)), In((2, 4))),
    "np.linalg.multi_dot three": spec(lambda a, b, c: np.linalg.multi_dot([a, b, c]), In((2, 5)), In((5, 3)), In((3,))),
    "np.linalg.lstsq": spec(lambda a, b: flat(*np.linalg.lstsq(a, b)[:2]), matrix((5, 3), "spread"), In((5, 2))),
    "np.linalg.lstsq wide": spec(lambda a, b: np.linalg.lstsq(a, b)[0], matrix((3, 5), "spread"), In((3,))),
    "np.linalg.tensorinv": spec(lambda x: np.linalg.tensorinv(np.reshape(x, (2, 2, 4)), ind=2), matrix((4, 4), "well")),
    "np.linalg.tensorsolve": spec(lambda a, b: np.linalg.tensorsolve(np.reshape(a, (2, 2, 4)), b),
                                  matrix((4, 4), "well"), In((2, 2))),
    "np.linalg.matrix_transpose": spec(lambda x: np.linalg.matrix_transpose(x) * np.matrix_transpose(x), In((2, 3, 3))),
    "np.linalg.vecdot": spec(lambda a, b: np.linalg.vecdot(a, b, axis=0), In((3, 4)), In((3, 1))),
    "np.linalg array-API names": spec(lambda a, b: flat(np.linalg.matmul(a, b.T), np.linalg.tensordot(a, b, axes=2),
                                                        np.linalg.outer(a[0], b[1]), np.linalg.diagonal(a),
                                                        np.linalg.trace(a @ b.T), np.linalg.cross(a[:, :3], b[:, 1:])),
                                      In((3, 4)), In((3, 4))),
}


# -- complex matrices (tests/lib/test_complex_linalg.py draws every float input complex) ---------------
# Eigen- and singular vectors enter only through phase-free expressions: the gradient of a loss
# that depends on their phases is refused (ad.lib.linalg.phase_free_p).

SEPARATED, SPREAD43 = matrix((4, 4), "separated"), matrix((4, 3), "spread")

COMPLEX_LINALG = {
    "inv": spec(np.linalg.inv, WELL),
    "inv batched": spec(np.linalg.inv, BATCH),
    "solve": spec(np.linalg.solve, BATCH, In((2, 3, 2))),
    "solve vector b": spec(np.linalg.solve, BATCH, In((3,))),
    "det": spec(np.linalg.det, BATCH),
    "slogdet sign and logabsdet": spec(lambda x: flat(*np.linalg.slogdet(x)), BATCH),
    "slogdet sign * logabsdet": spec(signed_logdet, WELL),
    "cholesky": spec(np.linalg.cholesky, matrix((3, 3), "separated")),
    "cholesky upper": spec(lambda x: np.linalg.cholesky(x, upper=True), matrix((3, 3), "separated")),
    "cholesky of a Hermitian product": spec(lambda x: np.linalg.cholesky(spd(x)), In((2, 3, 4))),
    "eigh": spec(eigh_phase_free, SEPARATED),
    "eigh upper": spec(lambda x: eigh_phase_free(x, "U"), SEPARATED),
    "eigh batched": spec(eigh_phase_free, matrix((2, 3, 3), "separated")),
    "eigh of a Hermitian product": spec(lambda x: eigh_phase_free(spd(x) + np.diag([0.0, 2.0, 4.0]).astype(x.dtype)), In((3, 4))),
    "np.linalg.eigvalsh": spec(np.linalg.eigvalsh, SEPARATED),
    "svd tall": spec(svd_phase_free, SPREAD43),
    "svd wide": spec(svd_phase_free, matrix((3, 4), "spread")),
    "svd square batched": spec(svd_phase_free, matrix((2, 3, 3), "spread")),
    "svd compute_uv=False": spec(lambda x: np.linalg.svd(x, compute_uv=False), SPREAD43),
    "svd hermitian": spec(lambda x: np.linalg.svd(x, hermitian=True)[1], SEPARATED),
    "svd hermitian u s vh": spec(lambda x: flat(*(lambda u, s, vh: ((u * s) @ vh, times_first_conj(u)))(
        *np.linalg.svd(x, hermitian=True))), SEPARATED),
    "np.linalg.svdvals": spec(np.linalg.svdvals, matrix((2, 3, 4), "spread")),
    "qr tall": spec(qr_flat, SPREAD43),
    "qr wide": spec(qr_flat, matrix((3, 4), "spread")),
    "qr square batched": spec(qr_flat, matrix((2, 3, 3), "spread")),
    "qr mode r": spec(lambda x: np.linalg.qr(x, mode="r"), SPREAD43),
    "pinv tall": spec(np.linalg.pinv, SPREAD43),
    "pinv wide": spec(np.linalg.pinv, matrix((3, 4), "spread")),
    "pinv hermitian": spec(lambda x: np.linalg.pinv(x, hermitian=True), matrix((3, 3), "separated")),
    "eig": spec(eig_phase_free, matrix((3, 3), "separated")),
    "eig batched": spec(eig_phase_free, matrix((2, 3, 3), "separated")),
    "eig near a rotation": spec(lambda x: eig_phase_free(ROTATION.astype(x.dtype) + 0.2 * x), In((3, 3), -1, 1)),
    "np.linalg.eigvals": spec(eigvals_sorted, matrix((2, 4, 4), "separated")),
    **{f"np.linalg.norm vector ord={o}": spec(lambda x, o=o: np.linalg.norm(x, o), In((5,), 0.2, 2.0, apart=True))
       for o in (None, 1, 2, np.inf, -np.inf, 3, 0.5, -1)},
    **{f"np.linalg.norm matrix ord={o}": spec(lambda x, o=o: np.linalg.norm(x, o, axis=(2, 0), keepdims=True),
                                              In((3, 2, 4), 0.2, 2.0)) for o in (None, "fro", "nuc")},
    **{f"np.linalg.norm matrix ord={o}": spec(lambda x, o=o: np.linalg.norm(x, o), In((3, 4), 0.2, 1.0, structure="spread"))
       for o in (2, -2, 1, -1, np.inf, -np.inf)},
    "np.linalg.norm default": spec(lambda x: np.linalg.norm(x, keepdims=True), In((2, 3, 4))),
    "np.linalg.norm vector axis": spec(lambda x: np.linalg.norm(x, axis=1), In((2, 3, 4))),
    "np.linalg.vector_norm": spec(lambda x: np.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=3),
                                  In((3, 2, 4), 0.2, 2.0)),
    "np.linalg.matrix_norm": spec(lambda x: np.linalg.matrix_norm(x, ord="nuc"), matrix((2, 3, 4), "spread")),
    "np.linalg.cond": spec(np.linalg.cond, SPREAD43),
    "np.linalg.cond fro": spec(lambda x: np.linalg.cond(x, "fro"), WELL),
    "np.linalg.matrix_rank": spec(lambda x: x * np.linalg.matrix_rank(x), matrix((3, 4), "spread")),
    **{f"np.linalg.matrix_power {k}": spec(lambda x, k=k: np.linalg.matrix_power(x / 4, k), WELL)
       for k in (-2, 0, 3, 6)},
    "np.linalg.lstsq": spec(lambda a, b: flat(*np.linalg.lstsq(a, b)[:2]), matrix((5, 3), "spread"), In((5, 2))),
    "np.linalg.lstsq wide": spec(lambda a, b: np.linalg.lstsq(a, b)[0], matrix((3, 5), "spread"), In((3,))),
    "np.linalg.tensorinv": spec(lambda x: np.linalg.tensorinv(np.reshape(x, (2, 2, 4)), ind=2), matrix((4, 4), "well")),
    "np.linalg.tensorsolve": spec(lambda a, b: np.linalg.tensorsolve(np.reshape(a, (2, 2, 4)), b),
                                  matrix((4, 4), "well"), In((2, 2))),
    "np.linalg.multi_dot": spec(lambda a, b, c: np.linalg.multi_dot([a, b, c]), In((2, 5)), In((5, 3)), In((3,))),
}
