"""Indexing: getitem (basic and advanced), functional setitem, scatter-add (``np.add.at``), and
take/take_along_axis/sort written with them. Index structure is a static param; integer index
arrays are operands (constant or traced) and get no gradient."""
from __future__ import annotations

import numpy as np

from ..dispatch import UFUNC_METHODS, build_index, implements, parse_index
from ..primitives import Primitive
from ..rrule import non_differentiable, rrule
from ..tangents import NoTangent


def _getitem(x, *arrays, index):
    return np.asarray(x)[build_index(index, arrays)]


def _setitem(x, value, *arrays, index):
    out = np.array(x, copy=True)
    out[build_index(index, arrays)] = value
    return out


def _index_add(x, value, *arrays, index):
    out = np.array(x, copy=True)
    np.add.at(out, build_index(index, arrays), value)
    return out


getitem_p = Primitive("getitem", _getitem, params=("index",), doc="x[index]")
getitem_p.returns_view = lambda operands: len(operands) == 1   # basic indexing only
setitem_p = Primitive("setitem", _setitem, params=("index",),
                      doc="A copy of x with x[index] = value (functional in-place write).")
index_add_p = Primitive("index_add", _index_add, params=("index",),
                        doc="A copy of x with value added at index, repeats accumulating "
                            "(np.add.at): the scatter-add that transposes a gather.")


@rrule(getitem_p)
def _getitem_rule(x, *arrays, index):
    y = getitem_p.bind(x, *arrays, index=index)

    def pullback(dy):
        zeros = np.zeros_like(x)
        if arrays:   # a gather: repeated indices must accumulate
            dx = index_add_p.bind(zeros, dy, *arrays, index=index)
        else:
            dx = setitem_p.bind(zeros, dy, index=index)
        return (dx,) + (NoTangent(),) * len(arrays)
    return y, pullback


@rrule(setitem_p)
def _setitem_rule(x, value, *arrays, index):
    y = setitem_p.bind(x, value, *arrays, index=index)

    def pullback(dy):
        dx = setitem_p.bind(dy, 0, *arrays, index=index)
        dvalue = getitem_p.bind(dy, *arrays, index=index)
        return (dx, dvalue) + (NoTangent(),) * len(arrays)
    return y, pullback


@rrule(index_add_p)
def _index_add_rule(x, value, *arrays, index):
    y = index_add_p.bind(x, value, *arrays, index=index)
    return y, lambda dy: (dy, getitem_p.bind(dy, *arrays, index=index)) + (NoTangent(),) * len(arrays)


def _add_at(a, indices, b):
    spec, arrays = parse_index(indices)
    return index_add_p.bind(a, b, *arrays, index=spec)


UFUNC_METHODS[(np.add, "at")] = _add_at


@implements(np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        from ..dispatch import _unsupported
        raise _unsupported("np.take(..., out=/mode=)")
    if axis is None:
        a, axis = np.ravel(a), 0
    return a[(slice(None),) * (int(axis) % np.ndim(a)) + (indices,)]


@implements(np.take_along_axis)
def _take_along_axis(arr, indices, axis=-1):
    if axis is None:
        return np.ravel(arr)[indices]
    n = np.ndim(arr)
    axis = int(axis) % n
    shape = np.shape(indices)
    index = tuple(indices if i == axis else
                  np.arange(shape[i]).reshape(tuple(-1 if j == i else 1 for j in range(n)))
                  for i in range(n))
    return arr[index]


nonzero_p = Primitive("nonzero", lambda x: np.nonzero(x), multiple_results=True, function=np.nonzero)
argsort_p = Primitive("argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable"),
                      params=("axis",), function=np.argsort)
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
