"""Shape primitives (concatenate, roll; reshape, transpose and broadcast_to are the core's) and
the many numpy shape functions written as compositions of them (squeeze, stack, split, flip, tile, pad...).
Compositions need no rule of their own: they lift for free."""
from __future__ import annotations

import numpy as np

from ..core_prims import broadcast_to_p, reshape_p, transpose_p
from ..dispatch import copy as copy_tracer, implements
from ..primitives import Primitive
from ..batching.derived import batch_size, shifted_axes
from ..rules import batch_rule, linear_rule, rrule, to_front
from ..samples import ARRAYS, F, Sample, Y
from .reductions import normalize_axis


def _concatenate(*xs, axis):
    return np.concatenate(xs, axis=axis)


def _concatenate_spelling(args, params) -> str:
    return f"np.concatenate(({', '.join(args)},), axis={params['axis']})"


def _concat_spelling(args, params) -> str:
    return f"xp.concat(({', '.join(args)},), axis={params['axis']})"


concatenate_p = Primitive("concatenate", _concatenate, params=("axis",), function=np.concatenate, linear_in="all",
                          spelling=_concatenate_spelling, array_api_spelling=_concat_spelling, complex_rule=True,
                          samples=(Sample((F, Y), {"axis": 0}, ARRAYS),))
roll_p = Primitive("roll", lambda x, shift, axis: np.roll(x, shift, axis), params=("shift", "axis"),
                   function=np.roll, linear_in=(0,), complex_rule=True,
                   samples=(Sample((F,), {"shift": (2,), "axis": (0,)}, ARRAYS),))

linear_rule(roll_p, lambda dy, x, shift, axis: np.roll(dy, tuple(-s for s in shift), axis))
batch_rule(roll_p)(shifted_axes(roll_p, "axis", none_is_all=False))


@batch_rule(concatenate_p)
def _concatenate_batched(args, dims, axis):
    """Shared operands are broadcast along the batch (every example joins the same one)."""
    size = batch_size(args, dims)
    xs = [to_front(x, d) if d is not None else np.broadcast_to(x, (size,) + np.shape(x)) for x, d in zip(args, dims)]
    return concatenate_p.bind(*xs, axis=axis % (np.ndim(xs[0]) - 1) + 1), 0


@rrule(concatenate_p)
def _concatenate_rule(*xs, axis):
    y = np.concatenate(xs, axis=axis)

    def pullback(dy):
        bounds = np.cumsum([0] + [x.shape[axis] for x in xs])
        lead = (slice(None),) * axis
        return tuple(dy[lead + (slice(int(a), int(b)),)] for a, b in zip(bounds[:-1], bounds[1:]))
    return y, pullback


# -- handlers --------------------------------------------------------------------------------

def _shape_tuple(shape, size: int) -> tuple[int, ...]:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if shape.count(-1) == 1:
        known = int(np.prod([s for s in shape if s != -1]))
        shape = tuple(size // known if s == -1 else s for s in shape)
    return shape


@implements(np.reshape)
def _reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise NotImplementedError("np.reshape with order other than 'C' has no rule")
    shape = _shape_tuple(shape if shape is not None else newshape, np.size(a))
    if tuple(np.shape(a)) == shape:
        return copy_tracer(a)
    return reshape_p.bind(a, shape=shape)


@implements(np.transpose)
def _transpose(a, axes=None):
    n = np.ndim(a)
    axes = tuple(reversed(range(n))) if axes is None else tuple(int(x) % n for x in axes)
    return transpose_p.bind(a, axes=axes)


@implements(np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    shape = _shape_tuple(shape, -1)
    return broadcast_to_p.bind(array, shape=shape)


@implements(np.broadcast_arrays)
def _broadcast_arrays(*args, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return tuple(np.broadcast_to(a, shape) for a in args)


@implements(np.concatenate)
def _concat(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    if axis is None:
        arrays, axis = [np.ravel(a) for a in arrays], 0
    if dtype is not None:
        arrays = [np.asarray(a) if not hasattr(a, "astype") else a for a in arrays]
        for a in arrays:      # numpy's check: complex to real is refused under same_kind
            if not np.can_cast(a.dtype, dtype, casting):
                raise TypeError(f"Cannot cast array data from {a.dtype!r} to {np.dtype(dtype)!r} "
                                f"according to the rule {casting!r}")
        arrays = [a.astype(dtype) for a in arrays]
    return concatenate_p.bind(*arrays, axis=int(axis) % np.ndim(arrays[0]))


@implements(np.roll)
def _roll(a, shift, axis=None):
    if axis is None:
        return np.reshape(np.roll(np.ravel(a), shift, 0), np.shape(a))
    shifts = (shift,) if np.ndim(shift) == 0 else tuple(shift)
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    shifts = shifts * len(axes) if len(shifts) == 1 else shifts
    return roll_p.bind(a, shift=tuple(int(s) for s in shifts),
                       axis=tuple(int(x) % np.ndim(a) for x in axes))


@implements(np.expand_dims)
def _expand_dims(a, axis):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    n = np.ndim(a) + len(axes)
    axes = sorted(int(x) % n for x in axes)
    shape = list(np.shape(a))
    for ax in axes:
        shape.insert(ax, 1)
    return np.reshape(a, tuple(shape))


@implements(np.squeeze)
def _squeeze(a, axis=None):
    shape = np.shape(a)
    axes = tuple(i for i, n in enumerate(shape) if n == 1) if axis is None else normalize_axis(axis, len(shape))
    return np.reshape(a, tuple(n for i, n in enumerate(shape) if i not in axes))


@implements(np.ravel)
def _ravel(a, order="C"):
    return np.reshape(a, (-1,), order=order)


@implements(np.moveaxis)
def _moveaxis(a, source, destination):
    n = np.ndim(a)
    src = [int(s) % n for s in np.atleast_1d(source)]
    dst = [int(d) % n for d in np.atleast_1d(destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return np.transpose(a, order)


@implements(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    order = list(range(np.ndim(a)))
    i, j = int(axis1) % len(order), int(axis2) % len(order)
    order[i], order[j] = order[j], order[i]
    return np.transpose(a, order)


@implements(np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    n = np.ndim(arrays[0]) + 1
    return np.concatenate([np.expand_dims(a, int(axis) % n) for a in arrays], axis=int(axis) % n, dtype=dtype)


@implements(np.hstack)
def _hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [np.atleast_1d(a) for a in tup]
    return np.concatenate(arrs, axis=0 if np.ndim(arrs[0]) == 1 else 1, dtype=dtype)


@implements(np.vstack)
def _vstack(tup, *, dtype=None, casting="same_kind"):
    return np.concatenate([np.atleast_2d(a) for a in tup], axis=0, dtype=dtype)


@implements(np.dstack)
def _dstack(tup):
    return np.concatenate([np.atleast_3d(a) for a in tup], axis=2)


@implements(np.column_stack)
def _column_stack(tup):
    return np.concatenate([np.reshape(a, (-1, 1)) if np.ndim(a) < 2 else a for a in tup], axis=1)


_ATLEAST = {  # (n, ndim) -> new shape from the old one
    (1, 0): lambda s: (1,),
    (2, 0): lambda s: (1, 1), (2, 1): lambda s: (1,) + s,
    (3, 0): lambda s: (1, 1, 1), (3, 1): lambda s: (1,) + s + (1,), (3, 2): lambda s: s + (1,),
}


def _atleast(n):
    def atleast(*arys):
        out = [np.reshape(a, _ATLEAST[n, np.ndim(a)](np.shape(a))) if np.ndim(a) < n else a
               for a in arys]
        return out[0] if len(out) == 1 else tuple(out)
    return atleast


implements(np.atleast_1d)(_atleast(1))
implements(np.atleast_2d)(_atleast(2))
implements(np.atleast_3d)(_atleast(3))


@implements(np.array_split)
def _array_split(ary, indices_or_sections, axis=0):
    n = np.shape(ary)[axis]
    if np.ndim(indices_or_sections) == 0:   # a count: int, numpy integer or 0-d array, as numpy's int()
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("number sections must be larger than 0.")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0] + sizes)
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    lead = (slice(None),) * (int(axis) % np.ndim(ary))
    return [ary[lead + (slice(int(a), int(b)),)] for a, b in zip(bounds[:-1], bounds[1:])]


@implements(np.split)
def _split(ary, indices_or_sections, axis=0):
    if np.ndim(indices_or_sections) == 0 and np.shape(ary)[axis] % int(indices_or_sections):
        raise ValueError("array split does not result in an equal division")
    return _array_split(ary, indices_or_sections, axis)


def _split_along(name: str, axis: int, min_ndim: int):
    def handler(ary, indices_or_sections):
        if np.ndim(ary) < min_ndim:
            raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
        return _split(ary, indices_or_sections, axis=axis if np.ndim(ary) > 1 else 0)
    return handler


implements(np.hsplit)(_split_along("hsplit", 1, 1))
implements(np.vsplit)(_split_along("vsplit", 0, 2))
implements(np.dsplit)(_split_along("dsplit", 2, 3))


@implements(np.flip)
def _flip(m, axis=None):
    n = np.ndim(m)
    axes = range(n) if axis is None else normalize_axis(axis, n)
    return m[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(n))]


implements(np.fliplr)(lambda m: _flip(m, 1))
implements(np.flipud)(lambda m: _flip(m, 0))


@implements(np.rot90)
def _rot90(m, k=1, axes=(0, 1)):
    k %= 4
    if k == 0:
        return m[...]
    if k == 2:
        return _flip(_flip(m, axes[0]), axes[1])
    order = list(range(np.ndim(m)))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    return np.transpose(_flip(m, axes[1]), order) if k == 1 else _flip(np.transpose(m, order), axes[1])


@implements(np.repeat)
def _repeat(a, repeats, axis=None):
    if axis is None:
        a, axis = np.ravel(a), 0
    n = np.shape(a)[axis]
    return np.take(a, np.repeat(np.arange(n), repeats), axis=axis)


@implements(np.tile)
def _tile(A, reps):
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = np.shape(A)
    d = max(len(reps), len(shape))
    A = np.reshape(A, (1,) * (d - len(shape)) + shape)
    reps = (1,) * (d - len(reps)) + reps
    for axis, r in enumerate(reps):
        if r != 1:
            A = np.take(A, np.tile(np.arange(np.shape(A)[axis]), r), axis=axis)
    return A


@implements(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    """Constant padding concatenates constant blocks; the other modes are a gather with a static
    index map computed by numpy's own np.pad on positions."""
    n = np.ndim(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (n, 2))
    out = array
    for axis in range(n):
        before, after = (int(w) for w in widths[axis])
        if before == after == 0:
            continue
        if mode == "constant":
            value = kwargs.get("constant_values", 0)
            value = np.broadcast_to(np.asarray(value, dtype=float), (n, 2))[axis] if np.ndim(value) else (value, value)
            shape = list(np.shape(out))
            parts = []
            for width, v in ((before, value[0]), (after, value[1])):
                shape[axis] = width
                parts.append(np.full(tuple(shape), v, dtype=out.dtype, like=out) if width else None)
            out = np.concatenate([p for p in (parts[0], out, parts[1]) if p is not None], axis=axis)
        else:
            index = np.pad(np.arange(np.shape(out)[axis]), (before, after), mode=mode, **kwargs)
            out = np.take(out, index, axis=axis)
    return out


@implements(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    m = np.moveaxis(a, (axis1, axis2), (-2, -1))
    rows, cols = np.shape(m)[-2:]
    start_r, start_c = max(-offset, 0), max(offset, 0)
    k = max(0, min(rows - start_r, cols - start_c))
    return m[..., np.arange(start_r, start_r + k), np.arange(start_c, start_c + k)]


@implements(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return np.sum(np.diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


@implements(np.diag)
def _diag(v, k=0):
    if np.ndim(v) == 2:
        return np.diagonal(v, k)
    n = np.shape(v)[0] + abs(k)
    out = np.zeros((n, n), dtype=v.dtype, like=v)
    rows = np.arange(np.shape(v)[0]) + max(-k, 0)
    out[rows, rows + k] = v
    return out


@implements(np.diagflat)
def _diagflat(v, k=0):
    return _diag(np.ravel(v), k)


def _tri_mask(m, k, lower):
    rows, cols = np.shape(m)[-2:]
    return np.tri(rows, cols, k, dtype=bool) if lower else ~np.tri(rows, cols, k - 1, dtype=bool)


implements(np.tril)(lambda m, k=0: np.where(_tri_mask(m, k, True), m, 0))
implements(np.triu)(lambda m, k=0: np.where(_tri_mask(m, k, False), m, 0))


@implements(np.append)
def _append(arr, values, axis=None):
    if axis is None:
        return np.concatenate([np.ravel(arr), np.ravel(values)])
    return np.concatenate([arr, values], axis=axis)


@implements(np.shape)
def _shape(a):
    return tuple(a.shape)


@implements(np.ndim)
def _ndim(a):
    return a.ndim


@implements(np.size)
def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]

