"""The composition spec table: numpy code that has no primitive of its own (np.std, np.stack,
indexing, in-place writes...) but must differentiate correctly, one line each with its inputs in
the vocabulary of ``ad.samples``. The primitives themselves are tested from their own declared
samples (``prim.samples``); tests/support/cases.py joins both for the rule tests.

A line is a ``Sample`` whose call is the composition: ``spec(fn, *inputs)``, at the matrix
shape set unless told otherwise. tests/support/specs_linalg.py and tests/support/specs_numeric.py hold the lines
of the modules added with linalg.
"""
from __future__ import annotations

import numpy as np

from ad.samples import ARRAYS, BINARY, DISTINCT, MATRIX, UNARY, F, In, Sample, Y


def spec(fn, *inputs, shapes=MATRIX) -> Sample:
    return Sample(inputs, shapes=shapes, call=fn)


def _setitem(x, y):
    z = x * 1.0
    z[1, :] = y[0] * 2
    z[:, 1] = 3.0
    return z


def _add_at(x, y):
    z = x * 1.0
    np.add.at(z, (np.array([0, 0, 2]),), y[:3] * 2)
    return z


MASK = np.array([True, False, True, True])   # where= of the reductions, over the last axis


COMPOSITIONS = {
    # numpy's front end: what the samples bind directly, reached from plain numpy code
    "indexing": spec(lambda x: x[1:, ::2] * x[np.array([0, 2, 0])][:, None, :2].sum(0), F),
    "in-place assignment": spec(_setitem, F, Y),
    "np.add.at": spec(_add_at, F, Y),
    "boolean mask": spec(lambda x: x[np.nonzero(x > 0)], F, shapes=ARRAYS),
    "np.where of a comparison": spec(lambda x, y: np.where(x > 0, x, y * 2), F, Y, shapes=BINARY),
    "astype through longdouble": spec(lambda x: x.astype(np.longdouble).astype(np.float64) * 2, F, shapes=UNARY),
    "np.array like=": spec(lambda x: x * np.array([1.0, 2.0, 3.0, 4.0], like=x), F),
    # reductions, shapes, contractions written with the primitives
    "np.var": spec(lambda x: np.var(x, axis=0, ddof=1), F),
    "np.std": spec(lambda x: np.std(x), F),
    "np.average": spec(lambda x: np.average(x, axis=0, weights=np.array([1.0, 2.0, 3.0])), F),
    "np.ptp": spec(lambda x: np.ptp(x, axis=1), DISTINCT),
    "np.sum where=": spec(lambda x: np.sum(x, axis=1, where=MASK), F),
    "np.sum initial=": spec(lambda x: np.sum(x, axis=0, initial=1.5), F),
    "np.prod where= initial=": spec(lambda x: np.prod(x, where=MASK, initial=0.5, keepdims=True), In(lo=0.5, hi=1.5)),
    "np.max where= initial=": spec(lambda x: np.max(x, axis=1, where=MASK, initial=-3.0), DISTINCT),
    "np.min initial=": spec(lambda x: np.min(x, axis=0, initial=0.0), In(lo=0.1, hi=2.0)),
    "np.mean where=": spec(lambda x: np.mean(x, axis=1, where=MASK), F),
    "np.add.reduce where=": spec(lambda x: np.add.reduce(x, axis=None, where=MASK), F),
    "np.maximum.accumulate": spec(lambda x: np.maximum.accumulate(x, axis=1), DISTINCT),
    "np.minimum.accumulate": spec(lambda x: np.minimum.accumulate(x), DISTINCT, shapes=ARRAYS),
    "np.diagflat": spec(lambda x: np.diagflat(x[:2], -1), F),
    "np.stack": spec(lambda x, y: np.stack([x, y], axis=1), F, Y),
    "np.hstack": spec(lambda x, y: np.hstack([x, y]), F, Y),
    "np.vstack": spec(lambda x, y: np.vstack([x, y]), F, Y),
    "np.split": spec(lambda x: np.split(x, 2, axis=1)[1] * 2, F),
    "np.flip": spec(lambda x: np.flip(x, axis=1), F),
    "np.rot90": spec(lambda x: np.rot90(x), F),
    "np.tile": spec(lambda x: np.tile(x, (2, 1)), F),
    "np.repeat": spec(lambda x: np.repeat(x, 2, axis=0), F),
    "np.pad": spec(lambda x: np.pad(x, ((1, 0), (0, 2))), F),
    "np.pad reflect": spec(lambda x: np.pad(x, 2, mode="reflect"), F),
    "np.diagonal": spec(lambda x: np.diagonal(x, 1), F),
    "np.trace": spec(lambda x: np.trace(x), F),
    "np.diag": spec(lambda x: np.diag(x[0]), F),
    "np.triu": spec(lambda x: np.triu(x), F),
    "np.tril": spec(lambda x: np.tril(x, -1), F),
    "np.take": spec(lambda x: np.take(x, np.array([2, 0, 2]), axis=1), F),
    "np.take_along_axis": spec(lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1), DISTINCT),
    "np.sort": spec(lambda x: np.sort(x, axis=0), DISTINCT),
    "np.dot": spec(lambda a, b: np.dot(a, b), In((3, 4)), In((4,))),
    "np.tensordot": spec(lambda a, b: np.tensordot(a, b, axes=([1], [0])), In((3, 4)), In((4, 2))),
    "np.inner": spec(lambda a, b: np.inner(a, b), In((3, 4)), In((2, 4))),
    "np.outer": spec(lambda a, b: np.outer(a, b), In((3,)), In((4,))),
    "np.vdot": spec(lambda a, b: np.vdot(a, b), In((3, 4)), In((3, 4))),
    "np.kron": spec(lambda a, b: np.kron(a, b), In((2, 3)), In((2, 2))),
    "np.einsum ellipsis": spec(lambda a, b: np.einsum("...ij,...jk", a, b), In((2, 3, 4)), In((2, 4, 2))),
    "np.einsum reduce": spec(lambda a: np.einsum("ijk->j", a), In((2, 3, 4))),
    "np.einsum diagonal ii->i": spec(lambda a: np.einsum("ii->i", a), In((3, 3))),
    "np.einsum trace ii": spec(lambda a: np.einsum("ii", a), In((3, 3))),
    "np.einsum lli": spec(lambda a: np.einsum("lli", a), In((3, 3, 2))),
    "np.einsum diagonal with a product": spec(lambda a, b: np.einsum("ij,iik->jk", a, b), In((3, 4)), In((3, 3, 2))),
    "np.einsum interleaved": spec(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), In((3, 4)), In((4, 2))),
    "np.einsum interleaved implicit, ellipsis": spec(lambda a: np.einsum(a, [Ellipsis, 0, 0]), In((2, 3, 3))),
    "matmul batched": spec(lambda a, b: a @ b, In((2, 3, 4)), In((4, 2))),
    "matmul vector": spec(lambda a, b: a @ b, In((4,)), In((2, 4, 3))),
    "np.sinc": spec(lambda x: np.sinc(x), F, shapes=UNARY),
    "np.squeeze": spec(lambda x: np.squeeze(x[:, None]), F),
    "np.moveaxis": spec(lambda x: np.moveaxis(x[None], 0, -1), F),
    "np.select": spec(lambda x: np.select([x < -0.5, x > 0.5], [x * 2, x ** 2], x), In(avoid=(-0.5, 0.5))),
    "np.cumsum flat": spec(lambda x: np.cumsum(x), F),
    "x.T @ x": spec(lambda x: x.T @ x, F),
    "iteration": spec(lambda x: sum(row * i for i, row in enumerate(x)), F),
}
