"""The rest of np.linalg, written with the primitives of ``linalg.py`` and the core library, in
the order numpy computes them (so values agree to rounding): norms, cond, matrix_rank,
matrix_power, multi_dot, lstsq, tensorinv/tensorsolve, and numpy 2's array-API names. Complex
arrays follow numpy too: norms square moduli (``Re(conj(x) x)``), never ``x * x``."""
from __future__ import annotations

import numpy as np

from ..dispatch import implements, write_out
from .linalg import mT
from .reductions import axes_to_front, normalize_axis


# -- norms ------------------------------------------------------------------------------------

def _float(x):
    return x if np.issubdtype(x.dtype, np.inexact) else x.astype(float)


def _abs2(x):
    """|x|^2, as numpy's norms compute it."""
    return np.real(np.conj(x) * x) if np.iscomplexobj(x) else x * x


def _vector_norm(x, ord, axis, keepdims):
    if ord == np.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum((x != 0).astype(np.real(x).dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return np.sqrt(np.sum(_abs2(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    return np.sum(np.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _singular_values(x, row, col):
    return np.linalg.svd(np.moveaxis(x, (row, col), (-2, -1)), compute_uv=False)


def _matrix_norm(x, ord, row, col):
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (2, -2):
        s = _singular_values(x, row, col)
        return np.max(s, axis=-1) if ord == 2 else np.min(s, axis=-1)
    if ord in (1, -1, np.inf, -np.inf):
        if ord in (1, -1):      # max/min column sum: sum over rows first
            inner, outer = row, col - (col > row)
        else:                   # max/min row sum
            inner, outer = col, row - (row > col)
        sums = np.sum(np.abs(x), axis=inner)
        return np.max(sums, axis=outer) if ord > 0 else np.min(sums, axis=outer)
    if ord in (None, "fro", "f"):
        return np.sqrt(np.sum(_abs2(x), axis=(row, col)))
    if ord == "nuc":
        return np.sum(_singular_values(x, row, col), axis=-1)
    raise ValueError("Invalid norm order for matrices.")


@implements(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    x = _float(x)
    nd = np.ndim(x)
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            flat = np.ravel(x)
            if np.iscomplexobj(flat):
                re, im = np.real(flat), np.imag(flat)
                ret = np.sqrt(np.dot(re, re) + np.dot(im, im))
            else:
                ret = np.sqrt(np.dot(flat, flat))
            return np.reshape(ret, (1,) * nd) if keepdims else ret
        axis = tuple(range(nd))
    # normalised one by one: a matrix norm's (row, col) order matters
    axes = tuple(normalize_axis(a, nd)[0] for a in (axis if isinstance(axis, tuple) else (axis,)))
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    ret = _matrix_norm(x, ord, *axes)
    if keepdims:
        ret = np.reshape(ret, tuple(1 if i in axes else n for i, n in enumerate(np.shape(x))))
    return ret


@implements(np.linalg.vector_norm)
def _vector_norm_handler(x, /, *, axis=None, keepdims=False, ord=2):
    flat, kept = axes_to_front(_float(x), axis)
    res = _vector_norm(flat, ord, 0, False)
    return np.reshape(res, kept) if keepdims else res


@implements(np.linalg.matrix_norm)
def _matrix_norm_handler(x, /, *, keepdims=False, ord="fro"):
    return np.linalg.norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


@implements(np.linalg.cond)
def _cond(x, p=None):
    if p is None or p in (2, -2):
        s = np.linalg.svd(x, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        r = np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1))
    # numpy reports a singular matrix as inf, unless x itself has nans
    return np.where(np.isnan(r) & ~np.any(np.isnan(x), axis=(-2, -1)), np.inf, r)


@implements(np.linalg.matrix_rank)
def _matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    if np.ndim(A) < 2:
        return np.any(A != 0).astype(int)
    S = np.linalg.svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        rtol = max(np.shape(A)[-2:]) * np.finfo(S.dtype).eps if rtol is None else np.asarray(rtol)[..., None]
        tol = np.max(S, axis=-1, keepdims=True) * rtol
    else:
        tol = np.asarray(tol)[..., None]
    return np.count_nonzero(S > tol, axis=-1)


# -- products -------------------------------------------------------------------------------------

@implements(np.linalg.matrix_power)
def _matrix_power(a, n):
    n = int(n)
    if n == 0:
        return np.zeros_like(a) + np.eye(np.shape(a)[-1], dtype=a.dtype)
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n <= 3:
        result = a
        for _ in range(n - 1):
            result = result @ a
        return result
    # binary decomposition, as numpy does it
    z = result = None
    while n > 0:
        z = a if z is None else z @ z
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else result @ z
    return result


def _chain_order(shapes):
    """numpy's matrix-chain order: split[i][j] is where the product i..j is split."""
    n = len(shapes)
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    cost = [[0.0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = np.inf
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def _chain(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return np.dot(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


@implements(np.linalg.multi_dot)
def _multi_dot(arrays, *, out=None):
    result = _multi_dot_value(list(arrays))
    return result if out is None else write_out(out, result, "np.linalg.multi_dot")


def _multi_dot_value(arrays):
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return np.dot(arrays[0], arrays[1])
    first, last = np.ndim(arrays[0]), np.ndim(arrays[-1])
    if first == 1:
        arrays[0] = np.atleast_2d(arrays[0])
    if last == 1:
        arrays[-1] = np.atleast_2d(arrays[-1]).T
    shapes = [np.shape(a) for a in arrays]
    if len(arrays) == 3:        # numpy's cost comparison for three
        (a0, a1b0), (b1c0, c1) = shapes[0], shapes[2]
        split = [[0, 0, 1], [0, 0, 0], [0, 0, 0]] if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0) \
            else [[0, 0, 0], [0, 0, 1], [0, 0, 0]]
    else:
        split = _chain_order(shapes)
    result = _chain(arrays, split, 0, len(arrays) - 1)
    if first == 1 and last == 1:
        return result[0, 0]
    return np.ravel(result) if first == 1 or last == 1 else result


@implements(np.linalg.lstsq)
def _lstsq(a, b, rcond=None):
    """x through pinv (exact while the rank is constant); residuals need full column rank, so
    where numpy would return an empty residuals array for a rank-deficient ``a`` they are nan."""
    m, n = np.shape(a)
    if rcond is None:
        rcond = np.finfo(np.float64).eps * max(m, n)
    b2 = b[:, None] if np.ndim(b) == 1 else b
    x = np.linalg.pinv(a, rcond=rcond) @ b2
    s = np.linalg.svd(a, compute_uv=False)
    rank = np.count_nonzero(s > rcond * np.max(s))
    if m > n:
        r = b2 - a @ x
        resids = np.where(rank == n, np.sum(_abs2(r), axis=0), np.nan)
    else:
        resids = np.zeros((0,), dtype=np.real(x).dtype, like=x)
    return (x[:, 0] if np.ndim(b) == 1 else x), resids, rank, s


@implements(np.linalg.tensorinv)
def _tensorinv(a, ind=2):
    shape = np.shape(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    rows = int(np.prod(shape[ind:]))
    return np.reshape(np.linalg.inv(np.reshape(a, (rows, -1))), shape[ind:] + shape[:ind])


@implements(np.linalg.tensorsolve)
def _tensorsolve(a, b, axes=None):
    an = np.ndim(a)
    if axes is not None:
        order = [k for k in range(an) if k not in axes] + list(axes)
        a = np.transpose(a, order)
    shape = np.shape(a)[-(an - np.ndim(b)):]
    size = int(np.prod(shape))
    return np.reshape(np.linalg.solve(np.reshape(a, (size, size)), np.ravel(b)), shape)


# -- numpy 2's array-API names ---------------------------------------------------------------------

@implements(np.linalg.matrix_transpose, np.matrix_transpose)
def _matrix_transpose(x, /):
    return mT(x)


@implements(np.linalg.vecdot)
def _linalg_vecdot(x1, x2, /, *, axis=-1):
    return np.vecdot(np.moveaxis(x1, axis, -1), np.moveaxis(x2, axis, -1))


implements(np.linalg.matmul)(lambda x1, x2, /: np.matmul(x1, x2))
implements(np.linalg.tensordot)(lambda x1, x2, /, *, axes=2: np.tensordot(x1, x2, axes=axes))
implements(np.linalg.outer)(lambda x1, x2, /: np.outer(x1, x2))
implements(np.linalg.cross)(lambda x1, x2, /, *, axis=-1: np.cross(x1, x2, axis=axis))
implements(np.linalg.diagonal)(lambda x, /, *, offset=0: np.diagonal(x, offset, -2, -1))
implements(np.linalg.trace)(lambda x, /, *, offset=0, dtype=None: np.trace(x, offset, -2, -1, dtype))
