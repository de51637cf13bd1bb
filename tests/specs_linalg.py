"""Spec lines for ad.lib.linalg and ad.lib.linalg_functions (kept apart from tests/specs.py so the
two grow independently; tests/specs.py imports this module at its end, after defining Spec and
Arg, so it must be imported through ``specs``).

Domains keep every matrix away from its singularities: the random inputs are small perturbations
of a fixed well-conditioned matrix (built inside the spec function, in the input's dtype), with
separated eigen- and singular values and QR pivots away from zero. Functions with sign-ambiguous
outputs (eigenvectors, singular vectors) are checked through sign-invariant expressions, and
multi-output functions through one concatenated array.
"""
import numpy as np

from specs import ONE, Arg, Spec

SMALL = Arg(lo=-1.0, hi=1.0)


def eye(x, m, n=None):
    return np.eye(m, n, dtype=x.dtype)


def well(x):
    """x + 4 I: diagonally dominant, far from singular."""
    return x + 4 * eye(x, x.shape[-1])


def spd(x):
    """x x^T / n + I: symmetric positive definite, from an unconstrained (..., m, n) x."""
    return x @ np.swapaxes(x, -1, -2) / x.shape[-1] + eye(x, x.shape[-2])


def separated(x, scale=0.2):
    """A perturbed diag(1, 3, 5, ...): distinct eigenvalues; not symmetric (eigh and cholesky read
    one triangle, so the test also checks that the other triangle gets no gradient)."""
    n = x.shape[-1]
    return np.diag(np.arange(1.0, 2 * n, 2)).astype(x.dtype) + scale * x


def spread(x):
    """0.3 x + diag(3, 2, 1) padded to x's shape: distinct singular values, QR pivots > 0."""
    m, n = x.shape[-2:]
    return 0.3 * x + eye(x, m, n) * np.array([3.0, 2.0, 1.0, 0.5, 0.25][:m], dtype=x.dtype)[:, None]


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


def signed_logdet(x):
    """sign * log|det| of well(x) with its first row negated (a negative determinant)."""
    m = well(x)
    sign, logdet = np.linalg.slogdet(np.concatenate([-m[..., :1, :], m[..., 1:, :]], axis=-2))
    return sign * logdet


LINALG_SPECS = [
    Spec("inv", lambda x: np.linalg.inv(well(x)), (Arg((3, 3), -1, 1),), ONE),
    Spec("solve", lambda a, b: np.linalg.solve(well(a), b), (Arg((3, 3), -1, 1), Arg((3, 2))), ONE),
    Spec("det", lambda x: np.linalg.det(well(x)), (Arg((3, 3), -1, 1),), ONE),
    Spec("slogdet", signed_logdet, (Arg((3, 3), -1, 1),), ONE),
    Spec("cholesky", lambda x: np.linalg.cholesky(separated(x)), (Arg((3, 3), -1, 1),), ONE),
    Spec("eigh", lambda x: eigh_invariant(separated(x)), (Arg((4, 4), -1, 1),), ONE),
    Spec("svd", lambda x: svd_invariant(spread(x)), (Arg((3, 3), -1, 1),), ONE),
    Spec("qr", lambda x: qr_flat(spread(x)), (Arg((4, 3), -1, 1),), ONE),
    Spec("pinv", lambda x: np.linalg.pinv(spread(x)), (Arg((4, 3), -1, 1),), ONE),
    Spec("vecdot", lambda a, b: np.vecdot(a, b), (Arg((3, 4)), Arg((4,))), ONE),
    Spec("matvec", lambda a, b: np.matvec(a, b), (Arg((2, 3, 4)), Arg((4,))), ONE),
    Spec("vecmat", lambda a, b: np.vecmat(a, b), (Arg((3,)), Arg((2, 3, 4))), ONE),
]

BATCH = Arg((2, 3, 3), -1, 1)

LINALG_COMPOSITIONS = [
    # the primitives on stacks, other argument kinds, and the other triangle/orientation
    Spec("inv batched", lambda x: np.linalg.inv(well(x)), (BATCH,), ONE),
    Spec("solve vector b", lambda a, b: np.linalg.solve(well(a), b), (Arg((3, 3), -1, 1), Arg((3,))), ONE),
    Spec("solve batched a, vector b", lambda a, b: np.linalg.solve(well(a), b), (BATCH, Arg((3,))), ONE),
    Spec("solve batched", lambda a, b: np.linalg.solve(well(a), b), (BATCH, Arg((2, 3, 2))), ONE),
    Spec("det batched", lambda x: np.linalg.det(well(x)), (BATCH,), ONE),
    Spec("slogdet batched", lambda x: np.linalg.slogdet(well(x)).logabsdet, (BATCH,), ONE),
    Spec("cholesky upper", lambda x: np.linalg.cholesky(separated(x), upper=True), (Arg((3, 3), -1, 1),), ONE),
    Spec("cholesky batched spd", lambda x: np.linalg.cholesky(spd(x)), (Arg((2, 3, 4)),), ONE),
    Spec("eigh upper", lambda x: eigh_invariant(separated(x), "U"), (Arg((4, 4), -1, 1),), ONE),
    Spec("eigh batched", lambda x: eigh_invariant(separated(x)), (Arg((2, 3, 3), -1, 1),), ONE),
    Spec("eigh of a symmetric product", lambda x: np.linalg.eigh(spd(x) + np.diag([0.0, 2.0, 4.0]).astype(x.dtype))[0],
         (Arg((3, 4), -1, 1),), ONE),
    Spec("np.linalg.eigvalsh", lambda x: np.linalg.eigvalsh(separated(x)), (Arg((4, 4), -1, 1),), ONE),
    Spec("svd tall", lambda x: svd_invariant(spread(x)), (Arg((4, 3), -1, 1),), ONE),
    Spec("svd wide", lambda x: svd_invariant(spread(x)), (Arg((3, 4), -1, 1),), ONE),
    Spec("svd batched", lambda x: svd_invariant(spread(x)), (Arg((2, 4, 3), -1, 1),), ONE),
    Spec("svd compute_uv=False", lambda x: np.linalg.svd(x, compute_uv=False), (Arg((4, 3)),), ONE),
    Spec("svd hermitian", lambda x: np.linalg.svd(separated(x), hermitian=True)[1], (Arg((4, 4), -1, 1),), ONE),
    Spec("np.linalg.svdvals", lambda x: np.linalg.svdvals(spread(x)), (Arg((2, 3, 4), -1, 1),), ONE),
    Spec("qr square", lambda x: qr_flat(spread(x)), (Arg((3, 3), -1, 1),), ONE),
    Spec("qr wide", lambda x: qr_flat(spread(x)), (Arg((3, 4), -1, 1),), ONE),
    Spec("qr batched", lambda x: qr_flat(spread(x)), (Arg((2, 4, 3), -1, 1),), ONE),
    Spec("qr mode r", lambda x: np.linalg.qr(spread(x), mode="r"), (Arg((4, 3), -1, 1),), ONE),
    Spec("pinv wide", lambda x: np.linalg.pinv(spread(x)), (Arg((3, 4), -1, 1),), ONE),
    Spec("pinv hermitian", lambda x: np.linalg.pinv(separated(x), hermitian=True), (Arg((3, 3), -1, 1),), ONE),
    Spec("vecdot broadcast", lambda a, b: np.vecdot(a, b), (Arg((2, 1, 4)), Arg((3, 4))), ONE),
    # np.linalg functions written with the primitives
    *(Spec(f"np.linalg.norm vector ord={o}", lambda x, o=o: np.linalg.norm(x, o), (Arg((5,), 0.2, 2.0),), ONE,
           apart=True) for o in (None, 1, 2, np.inf, -np.inf, 3, 0.5, -1)),
    Spec("np.linalg.norm vector ord=inf signed", lambda x: np.linalg.norm(x * np.array([1, -1, 1]), np.inf, axis=1),
         (Arg((2, 3), 0.2, 2.0),), ONE, apart=True),
    *(Spec(f"np.linalg.norm matrix ord={o}", lambda x, o=o: np.linalg.norm(x, o, axis=(2, 0), keepdims=True),
           (Arg((3, 2, 4), 0.2, 2.0),), ONE) for o in (None, "fro", "nuc", 2, -2)),
    *(Spec(f"np.linalg.norm matrix ord={o}", lambda x, o=o: np.linalg.norm(spread(x), o),
           (Arg((3, 4), 0.2, 1.0),), ONE) for o in (1, -1, np.inf, -np.inf)),
    Spec("np.linalg.norm default", lambda x: np.linalg.norm(x, keepdims=True), (Arg((2, 3, 4)),), ONE),
    Spec("np.linalg.vector_norm", lambda x: np.linalg.vector_norm(x, axis=(0, 2), keepdims=True, ord=3),
         (Arg((3, 2, 4), 0.2, 2.0),), ONE),
    Spec("np.linalg.matrix_norm", lambda x: np.linalg.matrix_norm(spread(x), ord="nuc"), (Arg((2, 3, 4), -1, 1),), ONE),
    Spec("np.linalg.cond", lambda x: np.linalg.cond(spread(x)), (Arg((4, 3), -1, 1),), ONE),
    Spec("np.linalg.cond fro", lambda x: np.linalg.cond(well(x), "fro"), (Arg((3, 3), -1, 1),), ONE),
    Spec("np.linalg.matrix_rank", lambda x: x * np.linalg.matrix_rank(spread(x)), (Arg((3, 4), -1, 1),), ONE),
    *(Spec(f"np.linalg.matrix_power {k}", lambda x, k=k: np.linalg.matrix_power(well(x) / 4, k),
           (Arg((3, 3), -1, 1),), ONE) for k in (-2, 0, 1, 3, 6)),
    Spec("np.linalg.multi_dot", lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]),
         (Arg((3,)), Arg((3, 5)), Arg((5, 2)), Arg((2, 4))), ONE),
    Spec("np.linalg.multi_dot three", lambda a, b, c: np.linalg.multi_dot([a, b, c]),
         (Arg((2, 5)), Arg((5, 3)), Arg((3,))), ONE),
    Spec("np.linalg.lstsq", lambda a, b: flat(*np.linalg.lstsq(spread(a), b)[:2]),
         (Arg((5, 3), -1, 1), Arg((5, 2))), ONE),
    Spec("np.linalg.lstsq wide", lambda a, b: np.linalg.lstsq(spread(a), b)[0], (Arg((3, 5), -1, 1), Arg((3,))), ONE),
    Spec("np.linalg.tensorinv", lambda x: np.linalg.tensorinv(np.reshape(well(x), (2, 2, 4)), ind=2),
         (Arg((4, 4), -1, 1),), ONE),
    Spec("np.linalg.tensorsolve", lambda a, b: np.linalg.tensorsolve(np.reshape(well(a), (2, 2, 4)), b),
         (Arg((4, 4), -1, 1), Arg((2, 2))), ONE),
    Spec("np.linalg.matrix_transpose", lambda x: np.linalg.matrix_transpose(x) * np.matrix_transpose(x),
         (Arg((2, 3, 3)),), ONE),
    Spec("np.linalg.vecdot", lambda a, b: np.linalg.vecdot(a, b, axis=0), (Arg((3, 4)), Arg((3, 1))), ONE),
    Spec("np.linalg array-API names", lambda a, b: flat(np.linalg.matmul(a, b.T), np.linalg.tensordot(a, b, axes=2),
                                                        np.linalg.outer(a[0], b[1]), np.linalg.diagonal(a),
                                                        np.linalg.trace(a @ b.T), np.linalg.cross(a[:, :3], b[:, 1:])),
         (Arg((3, 4)), Arg((3, 4))), ONE),
]

# The other modules added alongside linalg (numeric, statistics, selection, values, arrays) keep
# their lines in specs_numeric.py; tests/specs.py reads only this module, so they join here.
from specs_numeric import NUMERIC_COMPOSITIONS, NUMERIC_SPECS  # noqa: E402

LINALG_SPECS += NUMERIC_SPECS
LINALG_COMPOSITIONS += NUMERIC_COMPOSITIONS
