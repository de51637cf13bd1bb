"""Indexing: scatter-add (``np.add.at``), nonzero, argsort, and take/take_along_axis/sort/select
written with the core's getitem/setitem/index_add (``ad.core_prims``). Index structure is a
static param; integer index arrays are operands (constant or traced) and get no gradient."""
from __future__ import annotations

import numpy as np

from ..core_prims import index_add_p, parse_index
from ..dispatch import UFUNC_METHODS, implements, unsupported
from ..primitives import Primitive
from ..batching.derived import shifted_axes
from ..rules import batch_rule, non_differentiable
from ..samples import ARRAYS, DISTINCT, NONZERO, Sample


def _add_at(a, indices, b):
    spec, arrays = parse_index(indices)
    return index_add_p.bind(a, b, *arrays, index=spec)


UFUNC_METHODS[(np.add, "at")] = _add_at


@implements(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        raise unsupported("np.take(..., out=/mode=)")
    if axis is None:
        a, axis = np.ravel(a), 0
    return a[(slice(None),) * (int(axis) % np.ndim(a)) + (indices,)]


@implements(np.take_along_axis)
def _take_along_axis(arr, indices, axis=-1):
    if axis is None:
        return np.ravel(arr)[indices]
    n = np.ndim(arr)
    axis = int(axis) % n
    shape = np.shape(arr)      # numpy's: the other axes of indices broadcast against arr's
    index = tuple(indices if i == axis else
                  np.arange(shape[i]).reshape(tuple(-1 if j == i else 1 for j in range(n)))
                  for i in range(n))
    return arr[index]


nonzero_p = Primitive("nonzero", lambda x: np.nonzero(x), multiple_results=True, function=np.nonzero,
                      value_dependent_shape=True, samples=(Sample((NONZERO,), shapes=ARRAYS),))
argsort_p = Primitive("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable"),
                      params=("axis",), function=np.argsort,
                      spelling="np.argsort({0}, axis={axis}, kind='stable')",
                      array_api_spelling=lambda args, params:      # (the standard's axis is an int)
                          None if params["axis"] is None else f"xp.argsort({args[0]}, axis={params['axis']}, stable=True)",
                      samples=(Sample((DISTINCT,), {"axis": 0}, ARRAYS),))
batch_rule(argsort_p)(shifted_axes(argsort_p, "axis", none_is_all=False))
non_differentiable(nonzero_p, argsort_p)


@implements(np.nonzero)
def _nonzero(a):
    return nonzero_p.bind(a)


@implements(np.argsort)
def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if axis is None:
        a, axis = np.ravel(a), 0
    return argsort_p.bind(a, axis=int(axis) % np.ndim(a))


@implements(np.sort)
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if axis is None:
        a, axis = np.ravel(a), 0
    return np.take_along_axis(a, np.argsort(a, axis=axis), axis=axis)


@implements(np.select)
def _select(condlist, choicelist, default=0):
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = np.where(cond, choice, out)
    return out
