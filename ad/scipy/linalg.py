"""scipy.linalg for ad: the functions models use, with scipy's names and signatures.

scipy.linalg converts its arguments (``np.asarray_chkfinite``, LAPACK wrappers: docs/scipy.md),
so traced values cannot pass through it. ``solve_triangular``, ``sqrtm``, ``expm`` and
``solve_sylvester`` are primitives here (their impl is scipy's function, their rules are written
with these primitives, so they lift and differentiate again); ``cho_factor``, ``cho_solve`` and
``block_diag`` are compositions. Real matrices (float32 and float64); ``from ad.scipy.linalg
import expm`` is the one change a user makes.

Rules: for ``x = op(A)^-1 b`` the cotangent of b is ``op(A)^-T g``, that of A ``-db x^T``
(transposed for trans), kept on the triangle scipy reads (off the diagonal with
``unit_diagonal``). ``expm``: the adjoint of its Fréchet derivative, ``L(A^T, G)``, is the
upper-right block of ``expm([[A^T, G], [0, A^T]])`` (Najfeld & Havel 1995; Higham, "Functions
of Matrices", 2008, 3.2). ``sqrtm``: X dX + dX X = dA, so dA = the solution of the Sylvester
equation X^T Y + Y X^T = G. ``solve_sylvester``: A X + X B = Q gives dQ = the solution of
A^T Y + Y B^T = G, dA = -dQ X^T, dB = -X^T dQ.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ..errors import NonDifferentiableError, UnsupportedFunctionError
from ..primitives import Primitive
from ..rules import rrule
from ..samples import MATRIX, In, Sample, matrix


def mT(x):
    return np.swapaxes(x, -1, -2)


def _trans(trans) -> int:
    """scipy's trans: 0/'N', 1/'T' (2/'C' is 'T' for the real matrices ad writes)."""
    code = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}.get(trans)
    if code is None:
        raise ValueError(f"trans={trans!r}: choose 0, 1, 2, 'N', 'T' or 'C'")
    return code


def _real(name, *xs):
    if any(np.iscomplexobj(x) for x in xs):
        raise UnsupportedFunctionError(f"ad.scipy.linalg.{name} of complex matrices: its rule is "
                                       "written for real ones")


# -- solve_triangular ----------------------------------------------------------------------------

WELL = matrix((3, 3), "well")
solve_triangular_p = Primitive(
    "scipy.linalg.solve_triangular",
    lambda a, b, trans, lower, unit_diagonal: sla.solve_triangular(
        a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal),
    params=("trans", "lower", "unit_diagonal"), function=sla.solve_triangular, linear_in=(1,),
    doc="x with op(A) x = b, A triangular (only its lower or upper triangle is read).",
    samples=tuple(Sample((WELL, In(shape)), {"trans": trans, "lower": lower, "unit_diagonal": unit}, MATRIX)
                  for shape, trans, lower, unit in (((3, 2), 0, True, False), ((3,), 0, False, False),
                                                    ((3, 2), 1, True, False), ((3,), 1, False, True),
                                                    ((3, 2), 0, False, True))))


def _triangle(g, lower: bool, unit_diagonal: bool):
    """The part of a gradient on the entries solve_triangular reads."""
    k = -1 if unit_diagonal else 0
    return np.tril(g, k) if lower else np.triu(g, -k)


@rrule(solve_triangular_p)
def _solve_triangular_rule(a, b, trans, lower, unit_diagonal):
    x = solve_triangular_p.bind(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)

    def pullback(g):
        db = solve_triangular_p.bind(a, g, trans=1 - trans, lower=lower, unit_diagonal=unit_diagonal)
        dop = -(db[:, None] * x[None, :]) if np.ndim(b) == 1 else -(db @ mT(x))
        return _triangle(mT(dop) if trans else dop, lower, unit_diagonal), db
    return x, pullback


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``scipy.linalg.solve_triangular``: x with ``op(a) x = b`` (op: trans 0 none, 1/2 the
    transpose), reading a's lower or upper triangle (its diagonal taken as ones with
    ``unit_diagonal``)."""
    _real("solve_triangular", a, b)
    return solve_triangular_p.bind(a, b, trans=_trans(trans), lower=bool(lower),
                                   unit_diagonal=bool(unit_diagonal))


# -- Cholesky: compositions ------------------------------------------------------------------------

def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cho_factor``: ``(c, lower)``, c holding the Cholesky factor of the
    triangle of ``a`` it reads, and in its other triangle what ``a`` holds there (as LAPACK
    leaves it: cho_solve never reads it)."""
    _real("cho_factor", a)
    if lower:
        return np.linalg.cholesky(a) + np.triu(a, 1), True
    return mT(np.linalg.cholesky(mT(a))) + np.tril(a, -1), False


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``scipy.linalg.cho_solve``: x with ``A x = b`` from ``cho_factor``'s ``(c, lower)``."""
    c, lower = c_and_lower
    if lower:      # A = L L^T
        return solve_triangular(c, solve_triangular(c, b, lower=True), trans=1, lower=True)
    return solve_triangular(c, solve_triangular(c, b, trans=1), lower=False)   # A = U^T U


# -- matrix functions --------------------------------------------------------------------------------

expm_p = Primitive(
    "scipy.linalg.expm", sla.expm, function=sla.expm,
    doc="The matrix exponential (of a stack of square matrices).",
    samples=(Sample((In((3, 3), -1.0, 1.0),), shapes=MATRIX), Sample((In((2, 3, 3), -1.0, 1.0),), shapes=MATRIX)))


@rrule(expm_p)
def _expm_rule(a):
    y = expm_p.bind(a)

    def pullback(g):
        n = a.shape[-1]
        at = mT(a)
        top = np.concatenate([at, g], axis=-1)
        bottom = np.concatenate([np.zeros_like(at), at], axis=-1)
        return (expm_p.bind(np.concatenate([top, bottom], axis=-2))[..., :n, n:],)
    return y, pullback


def expm(A):
    """``scipy.linalg.expm``: the matrix exponential of ``A`` (..., n, n)."""
    _real("expm", A)
    return expm_p.bind(A)


def _solve_sylvester(a, b, q):
    """scipy's solve_sylvester in the operands' float dtype (scipy computes float32 in float64)."""
    return sla.solve_sylvester(a, b, q).astype(np.result_type(a, b, q), copy=False)


solve_sylvester_p = Primitive(
    "scipy.linalg.solve_sylvester", _solve_sylvester, linear_in=(2,),
    doc="X with A X + X B = Q (A and B with no eigenvalues summing to zero).",
    samples=(Sample((matrix((3, 3), "separated"), matrix((2, 2), "separated"), In((3, 2))), shapes=MATRIX),))


@rrule(solve_sylvester_p)
def _solve_sylvester_rule(a, b, q):
    x = solve_sylvester_p.bind(a, b, q)

    def pullback(g):
        dq = solve_sylvester_p.bind(mT(a), mT(b), g)
        return -(dq @ mT(x)), -(mT(x) @ dq), dq
    return x, pullback


def solve_sylvester(a, b, q):
    """``scipy.linalg.solve_sylvester``: X with ``a X + X b = q``."""
    _real("solve_sylvester", a, b, q)
    return solve_sylvester_p.bind(a, b, q)


def _sqrtm(a):
    """scipy's principal square root; a real matrix whose root is complex (an eigenvalue on the
    negative axis) is refused: ad's rules are real."""
    x = sla.sqrtm(a)
    if np.iscomplexobj(x):
        raise NonDifferentiableError("ad.scipy.linalg.sqrtm: this real matrix has a complex "
                                     "principal square root (eigenvalues <= 0); complex matrices are not covered")
    return x.astype(a.dtype, copy=False)


sqrtm_p = Primitive(
    "scipy.linalg.sqrtm", _sqrtm,
    doc="The principal square root of a real matrix with a real one (eigenvalues off (-inf, 0]).",
    samples=(Sample((matrix((3, 3), "spd"),), shapes=MATRIX), Sample((matrix((3, 3), "separated"),), shapes=MATRIX)))


@rrule(sqrtm_p)
def _sqrtm_rule(a):
    x = sqrtm_p.bind(a)
    return x, lambda g: (solve_sylvester_p.bind(mT(x), mT(x), g),)


def sqrtm(A, disp=True, blocksize=64):
    """``scipy.linalg.sqrtm``: the principal square root of a real square matrix."""
    _real("sqrtm", A)
    return sqrtm_p.bind(A)


# -- block_diag: a composition -------------------------------------------------------------------

def block_diag(*arrs):
    """``scipy.linalg.block_diag``: the arrays (0-d and 1-d ones as rows) on the diagonal of a
    zero matrix."""
    if not arrs:
        return np.empty((1, 0))
    blocks = [np.reshape(a, (1, -1)) if np.ndim(a) < 2 else a for a in arrs]
    if any(np.ndim(b) > 2 for b in blocks):
        raise ValueError("arguments in the following positions have dimension greater than 2: "
                         f"{[i for i, b in enumerate(blocks) if np.ndim(b) > 2]}")
    dtype = np.result_type(*[b.dtype if hasattr(b, "dtype") else np.asarray(b).dtype for b in blocks])
    cols = sum(np.shape(b)[1] for b in blocks)
    rows, start = [], 0
    for b in blocks:
        r, c = np.shape(b)
        rows.append(np.concatenate([np.zeros((r, start), dtype), b, np.zeros((r, cols - start - c), dtype)],
                                   axis=1))
        start += c
    return np.concatenate(rows, axis=0).astype(dtype, copy=False)


PRIMITIVES = (solve_triangular_p, expm_p, solve_sylvester_p, sqrtm_p)
