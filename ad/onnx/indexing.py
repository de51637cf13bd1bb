"""Lowering numpy indexing: getitem to Slice / Gather / GatherND, setitem and index_add to
ScatterND.

An index spec (see ``ad.core_prims.parse_index``) is first made explicit: ``...`` expanded and
one item per axis. Basic items become one Slice; with integer-array operands, the advanced axes
are gathered (Gather for one, GatherND after moving them to the front for several) and the
gathered block is placed where numpy places it: at the first advanced axis if the advanced
items are adjacent, else in front. ``None`` axes are restored by the final Reshape.
Scatters write through the coordinates of the indexed elements, obtained by indexing a
constant grid of coordinates the same way.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import build_index
from ..tape import Lit

FULL = ("slice", None, None, None)
_BEFORE_START = -(2 ** 63)     # Slice's "end" for a negative step running past index 0


def normalize(spec, ndim: int) -> list:
    """The index with ``...`` expanded and every axis given an item (None items kept)."""
    used = sum(1 for s in spec if s is not None and s != "...")
    items = []
    for s in spec:
        items += [FULL] * (ndim - used) if s == "..." else [s]
    return items + [FULL] * (ndim - sum(1 for s in items if s is not None))


def _is_advanced(s) -> bool:
    return type(s) is int or (type(s) is tuple and s[0] == "array")


def lower_getitem(g, x: str, shape, spec, arrays, out_shape) -> str:
    items = normalize(spec, len(shape))
    per_axis = [s for s in items if s is not None]
    advanced = any(type(s) is tuple and s[0] == "array" for s in per_axis)
    starts, ends, steps, axes, sliced = [], [], [], [], list(shape)
    for ax, (s, n) in enumerate(zip(per_axis, shape)):
        if type(s) is int:
            if not advanced:
                starts, ends, steps, axes = starts + [s % n], ends + [s % n + 1], steps + [1], axes + [ax]
                sliced[ax] = 1
            continue
        if s[0] != "slice":
            continue
        start, stop, step = slice(*s[1:]).indices(n)
        sliced[ax] = len(range(start, stop, step))
        if not sliced[ax]:
            start, stop, step = 0, 0, 1
        if (start, stop, step) != (0, n, 1):   # slice.indices() gives -1 for "before 0"
            starts, steps, axes = starts + [start], steps + [step], axes + [ax]
            ends.append(_BEFORE_START if step < 0 and stop < 0 else stop)
    if axes:
        x = g.op("Slice", x, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps))
    if advanced:
        x = _gather(g, x, sliced, items, per_axis, arrays)
    return g.reshape(x, out_shape)


def _index_tensor(g, s, n: int, arrays):
    """(value name, shape) of one advanced item, negative indices wrapped."""
    if type(s) is int:
        return g.const(np.int64(s % n)), ()
    a = arrays[s[1]]
    if type(a) is Lit:
        v = np.asarray(a.value, dtype=np.int64)
        return g.const(np.where(v < 0, v + n, v)), v.shape
    v = g.x(a, np.dtype(np.int64))
    return g.op("Where", g.op("Less", v, g.ints(0)), g.op("Add", v, g.ints(n)), v), a.aval.shape


def _gather(g, x: str, shape, items, per_axis, arrays) -> str:
    adv = [ax for ax, s in enumerate(per_axis) if _is_advanced(s)]
    index = [_index_tensor(g, per_axis[ax], shape[ax], arrays) for ax in adv]
    batch = np.broadcast_shapes(*(s for _, s in index))
    if len(adv) == 1:       # one advanced axis: Gather puts the index's dims in its place
        return g.op("Gather", x, index[0][0], axis=adv[0])
    rest = [ax for ax in range(len(shape)) if ax not in adv]
    if adv + rest != list(range(len(shape))):
        x = g.op("Transpose", x, perm=adv + rest)
    columns = [g.op("Unsqueeze", g.op("Expand", name, g.ints(batch)) if s != batch else name, g.ints([-1]))
               for name, s in index]
    y = g.op("GatherND", x, g.op("Concat", *columns, axis=-1))
    positions = [i for i, s in enumerate(items) if s is not None and _is_advanced(s)]
    if positions == list(range(positions[0], positions[0] + len(positions))):
        m, before = len(batch), sum(1 for ax in rest if ax < adv[0])
        perm = [m + i for i in range(before)] + list(range(m)) + [m + i for i in range(before, len(rest))]
        if perm != list(range(len(perm))):
            y = g.op("Transpose", y, perm=perm)
    return y


def lower_scatter(g, e, reduction: str | None) -> str:
    """setitem (reduction None) and index_add ("add") as one ScatterND."""
    x, value, *arrays = e.inputs
    shape, dt = x.aval.shape, e.outputs[0].aval.dtype
    items = tuple(normalize(e.kwargs["index"], len(shape)))
    probes = [a.value if type(a) is Lit else np.zeros(a.aval.shape, np.intp) for a in arrays]
    target = np.broadcast_to(np.zeros((), np.int8), shape)[build_index(items, probes)].shape
    data = g.x(x, dt)
    if not shape or 0 in target:
        if not shape:
            update = g.x(value, dt)
            return g.op("Add", data, update) if reduction else g.op("Expand", update, g.ints(()))
        return data
    grid = np.stack(np.indices(shape), axis=-1).astype(np.int64)
    if all(type(a) is Lit for a in arrays):
        coords = g.const(grid[build_index(items + (FULL,), probes)])
    else:
        coords = lower_getitem(g, g.const(grid), grid.shape, items + (FULL,), arrays, target + (len(shape),))
    updates = g.op("Expand", g.x(value, dt), g.ints(target))
    return g.op("ScatterND", data, coords, updates, **({"reduction": reduction} if reduction else {}))
