"""Linear algebra, reductions, and shapes and layout (reshaping, slicing, gathering and
scattering, padding, casts, constants)."""
from __future__ import annotations

import math

import numpy as np

from ... import nn
from ...tracer import Tracer
from .files import dtype_of
from .nodes import const, op, resolve_axis


# -- linear algebra -----------------------------------------------------------------------------

@op("MatMul")
def _matmul(n, a, b):
    sa, sb = np.shape(a), np.shape(b)          # refused before it is computed if over the size limit
    n.check_size(np.broadcast_shapes(sa[:-2], sb[:-2]) + sa[-2:-1] + sb[-1:] * (len(sb) > 1), "output",
                 np.result_type(a, b))
    return np.matmul(a, b)


@op("Gemm")
def _gemm(n, a, b, c=None):
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if n.attr("transA", 0):
        a = np.transpose(a)
    if n.attr("transB", 0):
        b = np.transpose(b)
    y = a @ b
    if alpha != 1.0:
        y = const(alpha, y) * y
    if c is not None:
        y = y + (c if beta == 1.0 else const(beta, y) * c)
    return y


@op("Einsum")
def _einsum(n, *xs):
    return np.einsum(n.attr("equation").replace(" ", ""), *xs)


@op("Det")
def _det(n, x):
    return np.linalg.det(x)


# -- reductions ---------------------------------------------------------------------------------

def _reduce(f, axes_input_since: int):
    """ONNX's reductions: axes an attribute before ``axes_input_since``, an input from then on."""
    def run(n, x, axes=None):
        keepdims = bool(n.attr("keepdims", 1))
        if n.opset < axes_input_since:
            axes = n.attr("axes", None)
            noop = False
        else:
            axes = None if axes is None else n.ints(axes, "axes")
            noop = bool(n.attr("noop_with_empty_axes", 0))
        if not axes:
            if noop:
                return x
            axes = tuple(range(np.ndim(x)))
        axes = tuple(sorted(resolve_axis(a, np.ndim(x)) for a in axes))
        return f(x, axes, keepdims)
    return run


def _extremum(f, empty):
    """np.max/np.min, with ONNX's value on an empty set (-inf/inf, or the dtype's extreme)."""
    def run(x, axes, keepdims):
        if any(np.shape(x)[a] == 0 for a in axes):
            shape = tuple(1 if a in axes else d for a, d in enumerate(np.shape(x)) if keepdims or a not in axes)
            dt = np.result_type(x)
            fill = (empty if dt.kind == "f" else (np.iinfo(dt).min if empty < 0 else np.iinfo(dt).max)
                    if dt.kind in "iu" else empty > 0)
            return np.full(shape, fill, dt)
        return f(x, axis=axes, keepdims=keepdims)
    return run


_reduce_max, _reduce_min = _extremum(np.max, -np.inf), _extremum(np.min, np.inf)


_REDUCTIONS = {
    "ReduceSum": (lambda x, a, k: np.sum(x, axis=a, keepdims=k), 13),
    "ReduceMean": (lambda x, a, k: np.mean(x, axis=a, keepdims=k), 18),
    "ReduceMax": (_reduce_max, 18),
    "ReduceMin": (_reduce_min, 18),
    "ReduceProd": (lambda x, a, k: np.prod(x, axis=a, keepdims=k), 18),
    "ReduceL1": (lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k), 18),
    "ReduceL2": (lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)), 18),
    "ReduceSumSquare": (lambda x, a, k: np.sum(x * x, axis=a, keepdims=k), 18),
    "ReduceLogSum": (lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)), 18),
    "ReduceLogSumExp": (lambda x, a, k: nn.logsumexp(x, axis=a, keepdims=k) if np.size(x)
                        else np.log(np.sum(x, axis=a, keepdims=k)), 18),
}
for _name, (_f, _since) in _REDUCTIONS.items():
    op(_name)(_reduce(_f, _since))


def _astype(x, dtype):
    return x.astype(dtype) if isinstance(x, Tracer) else np.asarray(x).astype(dtype)


def _arg(f):
    def run(n, x):
        axis = resolve_axis(n.attr("axis", 0), np.ndim(x))
        keepdims = bool(n.attr("keepdims", 1))
        if n.attr("select_last_index", 0):
            i = np.shape(x)[axis] - 1 - f(np.flip(x, axis), axis=axis, keepdims=keepdims)
        else:
            i = f(x, axis=axis, keepdims=keepdims)
        return _astype(i, np.int64)
    return run


op("ArgMax")(_arg(np.argmax))
op("ArgMin")(_arg(np.argmin))


@op("TopK")
def _topk(n, x, k=None):
    k = n.attr("k") if n.opset < 10 else n.ints(k, "k")[0]
    axis = resolve_axis(n.attr("axis", -1), np.ndim(x))
    largest, _ = n.attr("largest", 1), n.attr("sorted", 1)     # always sorted: a valid order
    dt = np.result_type(x)
    flipped = np.iinfo(dt).max - x if np.issubdtype(dt, np.unsignedinteger) else -x
    order = np.argsort(flipped if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), _astype(idx, np.int64)


@op("CumSum")
def _cumsum(n, x, axis):
    axis = resolve_axis(n.ints(axis, "axis")[0], np.ndim(x))
    exclusive, reverse = n.attr("exclusive", 0), n.attr("reverse", 0)
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis=axis)
    if np.result_type(y) != np.result_type(x):       # numpy widens small integers
        y = y.astype(np.result_type(x))
    if exclusive:
        y = y - x
    return np.flip(y, axis) if reverse else y


@op("CumProd", since=26)
def _cumprod(n, x, axis):
    """Running products; ``exclusive`` shifts them by one (a 1 first), ``reverse`` runs backwards."""
    axis = resolve_axis(n.ints(axis, "axis")[0], np.ndim(x))
    exclusive, reverse = n.attr("exclusive", 0), n.attr("reverse", 0)
    if reverse:
        x = np.flip(x, axis)
    if exclusive:
        first = np.ones_like(np.take(x, np.arange(min(1, np.shape(x)[axis])), axis=axis))
        x = np.concatenate([first, np.take(x, np.arange(np.shape(x)[axis] - 1), axis=axis)], axis=axis)
    y = np.cumprod(x, axis=axis)
    if np.result_type(y) != np.result_type(x):       # numpy widens small integers
        y = y.astype(np.result_type(x))
    return np.flip(y, axis) if reverse else y


# -- shapes and layout --------------------------------------------------------------------------

@op("Identity")
def _identity(n, x):
    return x


@op("Shape")
def _shape(n, x):
    shape = np.shape(x)
    start, end = n.attr("start", 0), n.attr("end", None)
    return np.array(shape[start:end], np.int64)


@op("Size")
def _size(n, x):
    return np.array(math.prod(np.shape(x)), np.int64)


@op("Reshape")
def _reshape(n, x, shape=None):
    shape = n.attr("shape") if n.opset < 5 else n.ints(shape, "shape")
    if not n.attr("allowzero", 0):
        shape = tuple(np.shape(x)[i] if d == 0 else d for i, d in enumerate(shape))
    return np.reshape(x, shape)


@op("Transpose")
def _transpose(n, x):
    return np.transpose(x, n.attr("perm", None))


def _axes(n, axes, since: int, what="axes"):
    return n.attr("axes", None) if n.opset < since else (None if axes is None else n.ints(axes, what))


@op("Squeeze")
def _squeeze(n, x, axes=None):
    axes = _axes(n, axes, 13)
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(resolve_axis(a, np.ndim(x)) for a in axes))


@op("Unsqueeze")
def _unsqueeze(n, x, axes=None):
    axes = _axes(n, axes, 13)
    rank = np.ndim(x) + len(axes)
    return np.expand_dims(x, tuple(resolve_axis(a, rank) for a in axes))


@op("Flatten")
def _flatten(n, x):
    axis = resolve_axis(n.attr("axis", 1), np.ndim(x))
    shape = np.shape(x)
    return np.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))


@op("Concat")
def _concat(n, *xs):
    return np.concatenate(xs, axis=n.attr("axis"))


@op("Split")
def _split(n, x, split=None):
    axis = resolve_axis(n.attr("axis", 0), np.ndim(x))
    count = len(n.proto.output)
    if n.opset < 13:
        split = n.attr("split", None)
    elif split is not None:
        split = n.ints(split, "split")
    if n.opset >= 18:
        count = n.attr("num_outputs", count)
    dim = np.shape(x)[axis]
    if split is None:
        chunk = -(-dim // count)
        split = [min(chunk, dim - i * chunk) for i in range(count)]
    if sum(split) != dim:
        raise n.error(f"split sizes {tuple(split)} do not add up to dimension {dim}")
    return tuple(np.split(x, np.cumsum(split)[:-1].tolist(), axis=axis))


@op("Slice")
def _slice(n, x, starts=None, ends=None, axes=None, steps=None):
    if n.opset < 10:
        starts, ends, axes, steps = n.attr("starts"), n.attr("ends"), n.attr("axes", None), None
    else:
        starts, ends = n.ints(starts, "starts"), n.ints(ends, "ends")
        axes = None if axes is None else n.ints(axes, "axes")
        steps = None if steps is None else n.ints(steps, "steps")
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * np.ndim(x)
    for a, s, e, k in zip(axes, starts, ends, steps):
        a = resolve_axis(a, np.ndim(x))
        dim = np.shape(x)[a]
        if k == 0:
            raise n.error("a step of 0")
        if k < 0:       # ONNX clamps to [-1, dim-1]; Python reads -1 as "the last"
            s = min(max(s + dim if s < 0 else s, -1), dim - 1)
            e = min(max(e + dim if e < 0 else e, -1), dim - 1)
            index[a] = slice(s, None if e < 0 else e, k) if s >= 0 else slice(0, 0)
        else:
            index[a] = slice(max(min(s, dim), -dim), max(min(e, dim), -dim - 1), k)
    return x[tuple(index)]


@op("Gather")
def _gather(n, x, indices):
    axis = resolve_axis(n.attr("axis", 0), np.ndim(x))
    return np.take(x, indices, axis=axis)


@op("GatherElements")
def _gather_elements(n, x, indices):
    axis = resolve_axis(n.attr("axis", 0), np.ndim(x))
    indices = np.where(indices < 0, indices + np.shape(x)[axis], indices)
    return np.take_along_axis(x, indices, axis=axis)


@op("Compress", since=9)
def _compress(n, x, condition):
    """The slices along ``axis`` (of the flattened input without one) where ``condition`` is
    true; the condition decides the output's shape, so it is read while tracing."""
    keep = n.static(condition, "condition").astype(bool).reshape(-1)
    axis = n.attr("axis", None)
    if axis is None:
        x, axis = np.reshape(x, -1), 0
    axis = resolve_axis(axis, np.ndim(x))
    return np.take(x, np.nonzero(keep[:np.shape(x)[axis]])[0], axis=axis)


@op("ReverseSequence", since=10)
def _reverse_sequence(n, x, lengths):
    """Along ``time_axis``, the first ``lengths[b]`` steps of each batch entry reversed."""
    batch_axis, time_axis = n.attr("batch_axis", 1), n.attr("time_axis", 0)
    shape = [1] * np.ndim(x)
    shape[time_axis] = -1
    t = np.reshape(np.arange(np.shape(x)[time_axis]), shape)
    shape[time_axis], shape[batch_axis] = 1, -1
    count = np.reshape(_astype(lengths, np.int64), shape)
    order = np.broadcast_to(np.where(t < count, count - 1 - t, t), np.shape(x))
    return np.take_along_axis(x, order, axis=time_axis)


@op("ScatterElements", "Scatter")
def _scatter_elements(n, x, indices, updates):
    axis = resolve_axis(n.attr("axis", 0), np.ndim(x))
    reduction = n.attr("reduction", "none") if n.op_type == "ScatterElements" else "none"
    idx = _astype(indices, np.int64)      # data: a traced index array records an indexed write
    idx = np.where(idx < 0, idx + np.shape(x)[axis], idx)
    grid = list(np.indices(np.shape(idx), sparse=True))
    grid[axis] = idx
    return _scatter(n, x, tuple(np.broadcast_to(g, np.shape(idx)) for g in grid), updates, reduction)


def _scatter(n, x, where, updates, reduction: str):
    """A copy of ``x`` with ``updates`` written (or added) at the index ``where``."""
    out = np.copy(x)
    if reduction == "none":
        out[where] = updates
        return out
    if reduction == "add":
        np.add.at(out, where, updates)
        return out
    combine = {"mul": np.multiply, "max": np.maximum, "min": np.minimum}.get(reduction)
    if combine is None:
        raise n.error(f"reduction={reduction!r} is not supported (none, add, mul, max, min)")
    # the updates of a repeated index combined one after the other: a round per repeat, each
    # writing at distinct positions (the indices are read while tracing)
    where = [n.static(w, "indices") for w in np.broadcast_arrays(*where)]
    flat = np.ravel_multi_index(tuple(w.reshape(-1) for w in where), np.shape(x)[:len(where)])
    order = np.argsort(flat, kind="stable")
    repeat = np.empty_like(order)
    repeat[order] = np.arange(len(flat)) - np.searchsorted(flat[order], flat[order])
    updates = np.reshape(updates, (len(flat),) + np.shape(updates)[where[0].ndim:])
    for r in range(int(repeat.max(initial=-1)) + 1):
        pick = np.nonzero(repeat == r)[0]
        at = tuple(w.reshape(-1)[pick] for w in where)
        out[at] = combine(out[at], updates[pick])
    return out


@op("ScatterND")
def _scatter_nd(n, x, indices, updates):
    reduction = n.attr("reduction", "none")
    idx = _astype(indices, np.int64)
    k = np.shape(idx)[-1]
    idx = np.where(idx < 0, idx + np.array(np.shape(x)[:k]), idx)
    return _scatter(n, x, tuple(idx[..., j] for j in range(k)), updates, reduction)


@op("TensorScatter", since=24)
def _tensor_scatter(n, cache, update, write_indices=None):
    """A key/value cache with ``update`` written along ``axis`` from each batch entry's write
    index (wrapping around with ``mode="circular"``)."""
    axis, mode = resolve_axis(n.attr("axis", -2), np.ndim(cache)), n.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise n.error(f"mode={mode!r} is not supported (linear, circular)")
    lead = np.shape(update)[:axis + 1]
    start = np.zeros(lead[0], np.int64) if write_indices is None else _astype(write_indices, np.int64)
    pos = np.reshape(start, (-1,) + (1,) * axis) + np.arange(lead[axis])
    if mode == "circular":
        pos = pos % np.shape(cache)[axis]
    grid = [np.reshape(np.arange(d), (-1,) + (1,) * (axis - i)) for i, d in enumerate(lead[:axis])]
    out = np.copy(cache)
    out[tuple(grid) + (pos,)] = update
    return out


@op("Expand")
def _expand(n, x, shape):
    shape = np.broadcast_shapes(np.shape(x), n.ints(shape, "shape"))
    return np.broadcast_to(x, n.check_size(shape, "output", np.result_type(x)))


@op("Tile")
def _tile(n, x, repeats):
    reps = n.ints(repeats, "repeats")
    n.check_size(tuple(d * r for d, r in zip(np.shape(x), reps)), "output", np.result_type(x))
    return np.tile(x, reps)


@op("Pad", static=(1, 2, 3))
def _pad(n, x, pads=None, value=None, axes=None):
    mode = n.attr("mode", "constant")
    if n.opset < 11:
        pads, value = n.attr("pads"), n.attr("value", 0.0)
    else:
        pads = n.ints(pads, "pads")
        value = 0 if value is None or np.size(value) == 0 else np.reshape(value, -1)[0]
    ndim = np.ndim(x)
    axes = range(ndim) if axes is None else [resolve_axis(a, ndim) for a in n.ints(axes, "axes")]
    k = len(pads) // 2
    widths = [(0, 0)] * ndim
    for j, a in enumerate(axes):
        widths[a] = (pads[j], pads[j + k])
    crop = tuple(slice(max(-lo, 0), np.shape(x)[a] - max(-hi, 0)) for a, (lo, hi) in enumerate(widths))
    x = x[crop]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    n.check_size([d + lo + hi for d, (lo, hi) in zip(np.shape(x), widths)], "output", np.result_type(x))
    modes = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}
    if mode not in modes:
        raise n.error(f"mode={mode!r} is not supported ({', '.join(modes)})")
    if mode == "constant" and isinstance(value, Tracer):     # a value computed from the inputs: data
        border = np.pad(np.zeros(np.shape(x), np.bool_), widths, constant_values=True)
        return np.where(border, _astype(value, np.result_type(x)), np.pad(x, widths))
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=const(value, x))
    return np.pad(x, widths, mode=modes[mode])


def _folded(n, x):
    """An input whose values decide the output's shape: folded at import when it is a constant,
    refused when it depends on the model's inputs (a tape has static shapes)."""
    if isinstance(x, Tracer):
        raise n.error(f"its output's shape depends on the values of its input, which depends on the model's "
                      f"inputs or parameters; {n.op_type} is supported only on constants (folded at import)")
    return np.asarray(x)


@op("NonZero")
def _nonzero(n, x):
    return np.array(np.nonzero(_folded(n, x)), np.int64).reshape(np.ndim(x), -1)


@op("Unique")
def _unique(n, x):
    """np.unique, in the order of first occurrence unless ``sorted``; indices as ONNX wants them."""
    x = _folded(n, x)
    axis = n.attr("axis", None)
    axis = None if axis is None else resolve_axis(axis, x.ndim)
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not n.attr("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.argsort(order)
        y = y[order] if axis is None else np.take(y, order, axis=axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


@op("Cast")
def _cast(n, x):
    n.attr("saturate", 1)      # only meaningful for float8 types, which dtype_of refuses
    n.attr("round_mode", "up")
    return _astype(x, dtype_of(n.attr("to"), f"node {n.name!r} (Cast)"))


@op("CastLike")
def _cast_like(n, x, like):
    n.attr("saturate", 1)
    return _astype(x, np.result_type(like))


@op("Constant")
def _constant(n):
    kinds = {"value": lambda v: v, "value_float": lambda v: np.array(v, np.float32),
             "value_floats": lambda v: np.array(v, np.float32), "value_int": lambda v: np.array(v, np.int64),
             "value_ints": lambda v: np.array(v, np.int64)}
    given = [k for k in n.attrs if k in kinds]
    other = [k for k in n.attrs if k not in kinds]
    if other or len(given) != 1:
        raise n.error(f"needs exactly one of {', '.join(kinds)}; got {list(n.attrs)} (strings and sparse "
                      "tensors are not supported)")
    return kinds[given[0]](n.attr(given[0]))


@op("ConstantOfShape")
def _constant_of_shape(n, shape):
    value = n.attr("value", np.zeros(1, np.float32))
    shape = n.check_size(n.ints(shape, "shape"), "output", value.dtype)
    return np.full(shape, value.reshape(-1)[0], value.dtype)


@op("Range", static=(0, 1, 2))
def _range(n, start, limit, delta):
    """The count is read while tracing (guarded when computed from the inputs); start and delta
    stay data, so the output differentiates with respect to them."""
    if any(np.size(v) != 1 for v in (start, limit, delta)):
        raise n.error(f"start, limit and delta must be scalars, not of shapes "
                      f"{np.shape(start), np.shape(limit), np.shape(delta)}")
    start, limit, delta = (np.reshape(v, ()) for v in (start, limit, delta))   # [1] is a scalar, as onnx reads it
    if delta == 0:
        raise n.error("delta is 0")
    count = max(int(np.ceil((limit - start) / delta)), 0)
    n.check_size((count,), "output", np.result_type(start))
    return _astype(start + np.arange(count) * delta, np.result_type(start))


@op("Trilu")
def _trilu(n, x, k=None):
    k = 0 if k is None else n.ints(k, "k")[0]
    return np.triu(x, k) if n.attr("upper", 1) else np.tril(x, k)


@op("EyeLike")
def _eye_like(n, x):
    """Ones on the ``k``-th diagonal of a matrix shaped like ``x``: a constant."""
    dtype = np.result_type(x) if n.attr("dtype", None) is None else dtype_of(n.attr("dtype"), f"node {n.name!r}")
    rows, cols = np.shape(x)
    return np.eye(rows, cols, k=n.attr("k", 0), dtype=dtype)


@op("Dropout", static=(1, 2))
def _dropout(n, x, ratio=None, training=None):
    if n.opset < 12:
        ratio = n.attr("ratio", 0.5)
        if n.opset < 7 and not n.attr("is_test", 0):
            raise n.error("training-mode Dropout (is_test=0) is not supported: export the model for inference")
    seed = n.attr("seed", None)
    keep = np.ones(np.shape(x), np.bool_)
    if training is None or not bool(n.static(training, "training_mode")):
        return x, keep
    ratio = 0.5 if ratio is None else float(n.static(ratio, "ratio").reshape(-1)[0])
    if ratio == 0:
        return x, keep
    if seed is None:
        raise n.error("training-mode Dropout without a seed is not supported (its mask changes on every run): "
                      "give it a seed, or export the model for inference")
    keep = np.random.RandomState(seed).uniform(0, 1, np.shape(x)) >= ratio    # the mask ONNX draws for this seed
    return x * keep.astype(np.result_type(x)) * const(1 / (1 - ratio), x), keep
