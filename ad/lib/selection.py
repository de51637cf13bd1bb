"""Selecting elements by position or value: partition, searchsorted, argwhere, compress, extract,
choose, delete, insert. The index computations are non-differentiable primitives (argpartition,
searchsorted) or constants; the selections are gathers, whose rule sends the gradient to the
selected elements. insert concatenates its values to the array and gathers the result in the order
numpy's own np.insert gives the positions."""
from __future__ import annotations

import numpy as np

from ..dispatch import implements, unsupported
from ..primitives import Primitive
from ..batching.derived import shifted_axes
from ..rules import batch_rule, non_differentiable, to_front
from ..samples import ARRAYS, DISTINCT, In, Sample
from ..tracer import Tracer
from .numeric import as_array, traced_together
from .reductions import normalize_axis

argpartition_p = Primitive("argpartition", lambda x, kth, axis: np.argpartition(x, kth, axis=axis),
                           params=("kth", "axis"), function=np.argpartition,
                           samples=(Sample((DISTINCT,), {"kth": 1, "axis": 0}, ARRAYS),))
batch_rule(argpartition_p)(shifted_axes(argpartition_p, "axis", none_is_all=False))
searchsorted_p = Primitive("searchsorted", lambda a, v, side: np.searchsorted(a, v, side=side),
                           params=("side",), function=np.searchsorted,
                           samples=(Sample((In((5,), apart=True, structure="sorted"), DISTINCT), {"side": "left"},
                                           ARRAYS),))
non_differentiable(argpartition_p, searchsorted_p)


@batch_rule(searchsorted_p)
def _searchsorted_batched(args, dims, side):
    """Elementwise in the values ``v``: a batch of them is looked up at once in a shared ``a``
    (a batch of sorted arrays is left to the loop)."""
    (a, v), (da, dv) = args, dims
    if da is not None:
        return NotImplemented
    return searchsorted_p.bind(a, to_front(v, dv), side=side), 0


def _flat_axis(a, axis):
    a = as_array(a)
    return (np.ravel(a), 0) if axis is None else (a, normalize_axis(axis, a.ndim)[0])


@implements(np.argpartition)
def _argpartition(a, kth, axis=-1, kind="introselect", order=None):
    a, axis = _flat_axis(a, axis)
    kth = int(kth) if np.ndim(kth) == 0 else tuple(int(k) for k in np.ravel(kth))
    return argpartition_p.bind(a, kth=kth, axis=axis)


@implements(np.partition)
def _partition(a, kth, axis=-1, kind="introselect", order=None):
    a, axis = _flat_axis(a, axis)
    return np.take_along_axis(a, np.argpartition(a, kth, axis=axis), axis=axis)


@implements(np.searchsorted)
def _searchsorted(a, v, side="left", sorter=None):
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = as_array(a) if sorter is None else np.take(as_array(a), sorter)
    return searchsorted_p.bind(a, as_array(v), side=side)


@implements(np.argwhere)
def _argwhere(a):
    a = as_array(a)
    if a.ndim == 0:
        return _argwhere(np.reshape(a, (1,)))[:, :0]
    return np.stack(np.nonzero(a), axis=-1)


def _positions(condition):
    """Indices of the true entries of a (flattened) condition: constant or traced."""
    return np.nonzero(np.ravel(as_array(condition)))[0]


@implements(np.compress)
def _compress(condition, a, axis=None, out=None):
    if out is not None:
        raise unsupported("np.compress(..., out=)")
    a, axis = _flat_axis(a, axis)
    return np.take(a, _positions(condition), axis=axis)


@implements(np.extract)
def _extract(condition, arr):
    return np.take(np.ravel(as_array(arr)), _positions(condition))


@implements(np.choose)
def _choose(a, choices, out=None, mode="raise"):
    if out is not None or mode != "raise":
        raise unsupported("np.choose(..., out=/mode=)", "Clip or wrap the indices yourself.")
    parts = np.broadcast_arrays(*traced_together(as_array(a), *[as_array(c) for c in choices]))
    stacked = np.stack(parts[1:])
    return np.take_along_axis(stacked, parts[0][None], axis=0)[0]


@implements(np.delete)
def _delete(arr, obj, axis=None):
    if isinstance(obj, Tracer):
        raise unsupported("np.delete with traced positions", "Select what to keep with a boolean "
                           "mask: x[mask], with the mask computed from the values.")
    arr, axis = _flat_axis(arr, axis)
    keep = np.delete(np.arange(arr.shape[axis]), obj)    # numpy's own rules for obj, on positions
    return np.take(arr, keep, axis=axis)


@implements(np.insert)
def _insert(arr, obj, values, axis=None):
    if isinstance(obj, Tracer):
        raise unsupported("np.insert at traced positions", "The positions must be static: Python ints, "
                          "a slice, or a plain numpy integer array. To place values at positions "
                          "computed from the data, select with np.where and a mask computed from them.")
    arr, axis = _flat_axis(arr, axis)
    n = arr.shape[axis]
    indices = np.arange(*obj.indices(n)) if isinstance(obj, slice) else np.asarray(obj)
    if indices.dtype == bool:
        indices = np.flatnonzero(indices)
    single = indices.size == 1
    if single and indices.dtype.kind in "iu" and not -n <= indices.item() <= n:     # numpy's message
        raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {n}")
    v = as_array(values)
    v = v if v.dtype == arr.dtype else v.astype(arr.dtype)
    if single:      # numpy's rule: values take arr's rank; a scalar position moves their first axis
        v = np.reshape(v, (1,) * (arr.ndim - v.ndim) + v.shape)
        v = np.moveaxis(v, 0, axis) if indices.ndim == 0 else v
    while v.ndim > arr.ndim and v.shape[0] == 1:        # a write drops leading unit axes
        v = v[0]
    count = v.shape[axis] if single else indices.size
    block = np.broadcast_to(v, arr.shape[:axis] + (count,) + arr.shape[axis + 1:])
    # numpy's own rules for obj (negative, repeated, unsorted, bounds), on positions: entry k of
    # the result is entry order[k] of arr and the block side by side
    order = np.insert(np.arange(n), obj, np.arange(n, n + count))
    return np.take(np.concatenate([arr, block], axis=axis), order, axis=axis)
