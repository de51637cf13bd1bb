"""The primitives the machinery itself emits, and ``project``.

The backward pass accumulates with ``add`` and fills zeros and seeds with ``full``; ``project``
unbroadcasts with ``sum_to`` and casts with ``astype``; the tracer records indexing as
``getitem``/``setitem`` and writes through ``reshape``/``transpose`` views. They live here, below
the rule library (which registers the numpy functions that reach them), so that the core never
imports ``ad.lib``. Index specs are static params: ints, None, "...", ("slice", start, stop,
step) and ("array", k) for the k-th index operand (integer arrays, traced or constant).
All of them are linear with real coefficients (or have no operand), so their rules hold for
complex operands unchanged: they declare ``complex_rule``.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import GuardError
from .primitives import Primitive
from .rules import batch_rule, linear_rule, non_differentiable, rrule, scalar_rule, to_front
from .samples import ARRAYS, BINARY, F32, F64, M34, MATRIX, F, In, Sample, Y, index
from .tangents import NoTangent, ZeroTangent, unthunk
from .trace_state import Traced

# -- elementwise -------------------------------------------------------------------------------

add_p = Primitive("add", np.add, function=np.add, elementwise=True, linear_in=(0, 1),
                  spelling="{0} + {1}", scalar_spelling="{0} + {1}", complex_rule=True, correctly_rounded=True,
                  samples=(Sample((F, Y), shapes=BINARY),))
positive_p = Primitive("positive", np.positive, function=np.positive, elementwise=True, linear_in=(0,),
                       scalar_spelling="+{0}", complex_rule=True, correctly_rounded=True,
                       samples=(Sample((F,)),))
scalar_rule(add_p, 1, 1)
scalar_rule(positive_p, 1)

astype_p = Primitive("astype", lambda x, dtype: np.asarray(x).astype(dtype), params=("dtype",),
                     elementwise=True, linear_in=(0,), complex_rule=True, correctly_rounded=True,
                     array_api_spelling="xp.astype({0}, {dtype})",
                     scalar_spelling=lambda args, kwargs: f"{'bool' if kwargs['dtype'] == np.bool_ else 'float'}({args[0]})",
                     samples=(Sample((F,), {"dtype": F32}, dtypes=(F64,)), Sample((F,), {"dtype": F64}, dtypes=(F32,))))
# project() casts back to x's dtype. Complex to real keeps the real part (numpy, with a
# ComplexWarning), so g passes as Re z's does; real to complex is x + 0i, whose real operand
# project() gives Re g.
linear_rule(astype_p, lambda dy, x, dtype: dy)

full_p = Primitive("full", lambda shape, dtype, fill_value: np.full(shape, fill_value, dtype),
                   params=("shape", "dtype", "fill_value"), doc="An array filled with one value.",
                   complex_rule=True,   # no operand, so no cotangent: complex or not
                   spelling="np.full({shape}, {fill_value}, {dtype})",
                   array_api_spelling="xp.full({shape}, {fill_value}, dtype={dtype}, device=device)",
                   # no operand: recorded through the creation functions' like= (ad.lib.creation)
                   samples=(Sample((F,), shapes=ARRAYS, call=lambda x: np.full(np.shape(x), 2.0, like=x)),))


@rrule(full_p)
def _full_rule(shape, dtype, fill_value):
    return full_p.bind(shape=shape, dtype=dtype, fill_value=fill_value), lambda dy: ()


# -- shapes -----------------------------------------------------------------------------------

def _always(operands) -> bool:
    return True


def _unpermute(axes) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argsort(axes))


reshape_p = Primitive("reshape", lambda x, shape: np.reshape(x, shape), params=("shape",),
                      function=np.reshape, linear_in=(0,), returns_view=_always, complex_rule=True,
                      write_through=lambda base, new, shape: np.reshape(new, base.shape),
                      samples=(Sample((M34,), {"shape": (2, 6)}, MATRIX),))
transpose_p = Primitive("transpose", lambda x, axes: np.transpose(x, axes), params=("axes",),
                        function=np.transpose, linear_in=(0,), returns_view=_always, complex_rule=True,
                        write_through=lambda base, new, axes: np.transpose(new, _unpermute(axes)),
                        samples=(Sample((M34,), {"axes": (1, 0)}, MATRIX),))
broadcast_to_p = Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape),
                           params=("shape",), function=np.broadcast_to, linear_in=(0,),
                           returns_view=_always, complex_rule=True, correctly_rounded=True,
                           samples=(Sample((In((3, 1)),), {"shape": (2, 3, 4)}, MATRIX),))
linear_rule(reshape_p, lambda dy, x, shape: np.reshape(dy, x.shape))
linear_rule(transpose_p, lambda dy, x, axes: np.transpose(dy, _unpermute(axes)))
linear_rule(broadcast_to_p, lambda dy, x, shape: dy)   # project() sums back to x's shape


# batching rules (ad.vmap): the batch axis first, the params shifted past it
@batch_rule(reshape_p)
def _reshape_batched(args, dims, shape):
    x = to_front(args[0], dims[0])
    return reshape_p.bind(x, shape=np.shape(x)[:1] + tuple(shape)), 0


@batch_rule(transpose_p)
def _transpose_batched(args, dims, axes):
    x = to_front(args[0], dims[0])
    axes = tuple(reversed(range(np.ndim(x) - 1))) if axes is None else axes
    return transpose_p.bind(x, axes=(0,) + tuple(int(a) % len(axes) + 1 for a in axes)), 0


@batch_rule(broadcast_to_p)
def _broadcast_to_batched(args, dims, shape):
    x = to_front(args[0], dims[0])
    pad = len(shape) - (np.ndim(x) - 1)
    x = np.reshape(x, np.shape(x)[:1] + (1,) * pad + np.shape(x)[1:]) if pad > 0 else x
    return broadcast_to_p.bind(x, shape=np.shape(x)[:1] + tuple(shape)), 0


def _sum_to(x, shape, xp=np):
    """Written over the array namespace ``xp``: compiled array code calls it too."""
    shape = tuple(shape)
    x = xp.asarray(x)
    lead = x.ndim - len(shape)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(shape, x.shape[lead:])):
        raise ValueError(f"a cotangent of shape {x.shape} cannot be summed to its primal's shape "
                         f"{shape}: the pullback returned a wrongly shaped cotangent")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1)
    rows = math.prod(x.shape[:len(axes)])
    if xp is np and x.dtype == np.float64 and axes == tuple(range(len(axes))) and rows >= 64 \
            and x.size >= 4 * rows and x.flags.c_contiguous:
        # a bias's gradient: a BLAS product with ones runs at 2-5x np.sum's speed there (float64
        # only: float32's single-precision dot loses digits that numpy's pairwise sum keeps)
        return np.reshape(np.ones(rows) @ np.reshape(x, (rows, -1)), shape)
    return xp.reshape(xp.sum(x, axis=axes), shape) if axes else xp.reshape(x, shape)


sum_to_p = Primitive("sum_to", _sum_to, params=("shape",), linear_in=(0,), array_api_impl=_sum_to,
                     doc="Sum a broadcast cotangent back to its primal's shape (unbroadcast).", complex_rule=True,
                     samples=(Sample((M34,), {"shape": (4,)}, MATRIX), Sample((M34,), {"shape": (3, 1)}, MATRIX)))
linear_rule(sum_to_p, lambda dy, x, shape: np.broadcast_to(dy, x.shape))


@batch_rule(sum_to_p)
def _sum_to_batched(args, dims, shape):
    x = to_front(args[0], dims[0])
    each = np.shape(x)[1:]
    lead = len(each) - len(shape)
    axes = tuple(range(1, lead + 1)) + tuple(1 + lead + i for i, n in enumerate(shape)
                                             if n == 1 and each[lead + i] != 1)
    return np.reshape(np.sum(x, axis=axes) if axes else x, np.shape(x)[:1] + tuple(shape)), 0


def sum_to(x, shape):
    """Unbroadcast ``x`` to ``shape`` (no equation when the shapes already agree)."""
    shape = tuple(shape)
    return x if np.shape(x) == shape else sum_to_p.bind(x, shape=shape)


# -- indexing ---------------------------------------------------------------------------------

def parse_index(index) -> tuple[tuple, list]:
    """``x[index]`` as (static spec, index operands); boolean masks of one or more dimensions
    become their nonzero parts."""
    items = index if isinstance(index, tuple) else (index,)
    spec, arrays = [], []
    for it in items:
        if it is None:
            spec.append(None)
        elif it is Ellipsis:
            spec.append("...")
        elif isinstance(it, slice):
            spec.append(("slice", _static_int(it.start), _static_int(it.stop), _static_int(it.step)))
        elif isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_)):
            spec.append(int(it))
        else:
            if not isinstance(it, Traced):
                it = np.asarray(it)
            if it.dtype == np.bool_ and it.ndim:   # a 0-d mask stays one (numpy: a new axis of 1 or 0)
                for part in np.nonzero(it):
                    spec.append(("array", len(arrays)))
                    arrays.append(part)
                continue
            if not (np.issubdtype(it.dtype, np.integer) or it.dtype == np.bool_):
                raise IndexError(f"arrays used as indices must be integer or boolean, not {it.dtype}")
            spec.append(("array", len(arrays)))
            arrays.append(it)
    return tuple(spec), arrays


def _static_int(x):
    return None if x is None else int(x.__index__())


def build_index(spec, arrays) -> tuple:
    """The numpy index a spec stands for, with ``arrays`` as its index operands."""
    out = []
    for s in spec:
        if s == "...":
            out.append(Ellipsis)
        elif isinstance(s, tuple):
            out.append(slice(*s[1:]) if s[0] == "slice" else arrays[s[1]])
        else:
            out.append(s)
    return tuple(out)


def _getitem_spelling(args, params) -> str:
    """``x[1:, None, v3]``: the index spec as Python source, ``args[1:]`` its index operands."""
    spec, arrays = params["index"], args[1:]
    parts = []
    for s in spec:
        if s == "...":
            parts.append("...")
        elif s is None:
            parts.append("None")
        elif isinstance(s, tuple) and s[0] == "slice":
            a, b, c = ("" if x is None else str(x) for x in s[1:])
            parts.append(f"{a}:{b}" + (f":{c}" if c else ""))
        elif isinstance(s, tuple):
            parts.append(arrays[s[1]])
        else:
            parts.append(str(s))
    return f"{args[0]}[{', '.join(parts)}{',' if len(parts) == 1 else ''}]"


_ALL_SLICE = ("slice", None, None, None)


def _getitem_array_api_spelling(args, params) -> str | None:
    """``x[1:, None, ...]``: the array API standard's index names every axis (a trailing
    ``...`` is what numpy's shorter index means); a reversed axis (``x[::-1]``: PyTorch has no
    negative steps) is ``xp.flip``. Not written (array code takes the positions, ``POSITIONS``):
    an index array (numpy's advanced indexing, which the standard restricts), other negative
    steps."""
    index = tuple(params["index"])
    if len(args) > 1:
        return None
    reversed_ = [k for k, s in enumerate(index) if isinstance(s, tuple) and (s[3] or 1) < 0]
    if not reversed_:
        return _getitem_spelling(args, {"index": index if "..." in index else index + ("...",)})
    if not all(isinstance(s, tuple) for s in index) or any(index[k] != ("slice", None, None, -1) for k in reversed_):
        return None
    forward = tuple(_ALL_SLICE if k in reversed_ else s for k, s in enumerate(index))
    return f"xp.flip({_getitem_spelling(args, {'index': forward + ('...',)})}, axis={tuple(reversed_)})"


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


# Indexing in array code (``ad.compile(tape, xp=...)``, docs/arrays.md): the array API standard
# gathers (``xp.take``) but has no scatter. A static index (ints, slices, None, ``...``, and
# index arrays that are constants of the tape) selects positions known when compiling, so
# ``ad.compiler.array_api`` passes array code, in place of the index operands, the positions
# ``POSITIONS`` computes here with numpy from the operands (stand-ins of their shapes for the
# variables), one constant; the ``array_api_impl`` gathers with them. A write takes every
# element of ``x``: its cost is ``x``'s size (and the most repeats of one position, for
# ``index_add``), not the index's.

def _numbered(x) -> np.ndarray:
    """The flat position of each element of ``x``, in its shape."""
    return np.arange(np.size(x)).reshape(np.shape(x))


def _getitem_positions(x, *arrays, index):
    """Where each element of ``x[index]`` is in ``x``, flat."""
    return _getitem(_numbered(x), *arrays, index=index)


def _setitem_sources(x, value, *arrays, index):
    """Where each element of ``x`` with ``x[index] = value`` comes from in ``x``'s elements
    followed by ``value``'s, flat (numpy's own assignment says which write of a repeated
    position wins)."""
    return _setitem(_numbered(x), np.size(x) + _numbered(value), *arrays, index=index)


def _index_add_addends(x, value, *arrays, index):
    """The addends of each element of ``x``, as positions in a zero followed by ``value``'s
    elements, flat (0: none), in layers: a position's k-th addend in layer k, the order
    ``np.add.at`` adds them in."""
    selected = _getitem_positions(x, *arrays, index=index)
    sources = np.broadcast_to(1 + _numbered(value), selected.shape).ravel()
    targets = selected.ravel()
    order = np.argsort(targets, kind="stable")
    targets, sources = targets[order], sources[order]
    repeat = np.arange(targets.size) - np.searchsorted(targets, targets)   # earlier addends of its position
    layers = np.zeros((repeat.max(initial=0) + 1, np.size(x)), dtype=np.intp)
    layers[repeat, targets] = sources
    return layers.reshape((-1,) + np.shape(x))


def _flat(x, xp):
    return xp.reshape(x, (-1,))


def _as_elements_of(value, x, xp):
    """``value`` (an array or a Python number) as an array of ``x``'s dtype, as numpy casts what
    it writes into ``x``; a number made from ``x``'s first element (its dtype and its device,
    which Dask's arrays do not name)."""
    if not hasattr(value, "dtype"):
        return xp.full_like(_flat(x, xp)[:1], value)
    return value if value.dtype == x.dtype else xp.astype(value, x.dtype)


# An index with arrays the program computes selects positions known only when it runs: array
# code computes them on the device, ``positions`` (``rest_positions``: where the rest of the
# index selects, the arrays' axes of 1) plus each array, its negative entries wrapped, times
# its axis's stride (``axes``: (stride, size) per array; ``at``: where their axes go). A gather
# takes with them; a write scatters with the library's own scatter (``SCATTERS``).

def rest_positions(x, *arrays, index):
    """The flat positions the index's other items select, with axes of 1 where the arrays'
    broadcast axes go; each array's axis as (stride, size); where those axes go (``at``)."""
    shape, ndim = np.shape(x), np.ndim(x)
    consumed = sum(s is not None and s != "..." for s in index)
    items = []
    for s in index + (() if "..." in index else ("...",)):
        items.extend([_ALL_SLICE] * (ndim - consumed) if s == "..." else [s])
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    axes, axis = [None] * len(arrays), 0
    for s in items:
        if isinstance(s, tuple) and s[0] == "array":
            axes[s[1]] = (int(strides[axis]), shape[axis])
        axis += s is not None
    advanced = [k for k, s in enumerate(items) if isinstance(s, int) or isinstance(s, tuple) and s[0] == "array"]
    at = len(items[:advanced[0]]) if advanced == list(range(advanced[0], advanced[-1] + 1)) else 0
    rest = _getitem(_numbered(x), index=tuple(0 if isinstance(s, tuple) and s[0] == "array" else s for s in items))
    rank = len(np.broadcast_shapes(*(np.shape(a) for a in arrays)))
    return np.reshape(rest, rest.shape[:at] + (1,) * rank + rest.shape[at:]), tuple(axes), at


def _computed_positions(positions, arrays, axes, at, xp):
    """The flat positions an index with computed arrays selects, on their device."""
    flat = None
    for a, (stride, size) in zip(arrays, axes):
        term = xp.where(a < 0, a + size, a) * stride
        flat = term if flat is None else flat + term
    lead = positions.ndim - at - flat.ndim
    return xp.reshape(flat, (1,) * at + tuple(flat.shape) + (1,) * lead) + positions


def _numpy_add(x, p, v):
    out = np.array(x, copy=True)
    np.add.at(out, p, v)
    return out


def _numpy_set(x, p, v):
    out = np.array(x, copy=True)
    out[p] = v
    return out


def _cupy_add(x, p, v):
    import cupyx   # only where CuPy is the namespace
    out = x.copy()
    cupyx.scatter_add(out, p, v)
    return out


# the libraries' own scatters of a flat array (scatter-add, assignment), by namespace name: the
# standard has none. PyTorch's and JAX's adds may sum a position's repeats in another order than
# np.add.at (equal to rounding); an assignment gets positions without repeats.
SCATTERS = {
    "numpy": (_numpy_add, _numpy_set),
    "array_api_compat.numpy": (_numpy_add, _numpy_set),
    "array_api_compat.torch": (lambda x, p, v: x.index_put((p,), v, accumulate=True),
                               lambda x, p, v: x.index_put((p,), v)),
    "jax.numpy": (lambda x, p, v: x.at[p].add(v), lambda x, p, v: x.at[p].set(v)),
    "array_api_compat.cupy": (_cupy_add, _numpy_set),
}


def _scattered(x, value, positions, arrays, axes, at, xp, kind: int):
    """``x`` (flat) with ``value`` scattered at the computed positions, by the library's scatter
    (``kind``: 0 adds, 1 assigns) and the flat positions and values."""
    p = _computed_positions(positions, arrays, axes, at, xp)
    v = _flat(xp.broadcast_to(_as_elements_of(value, x, xp), p.shape), xp)
    return SCATTERS[xp.__name__][kind], _flat(x, xp), _flat(p, xp), v


def _getitem_over(x, positions, *arrays, axes=(), at=0, xp):
    """``x[index]`` over ``xp``: the elements at ``positions`` (``_getitem_positions``; with
    index arrays the program computes, ``_computed_positions``)."""
    if arrays:
        positions = _computed_positions(positions, arrays, axes, at, xp)
    return xp.reshape(xp.take(_flat(x, xp), _flat(positions, xp)), positions.shape)


def _setitem_over(x, value, sources, *arrays, axes=(), at=0, xp):
    """``x`` with ``x[index] = value`` over ``xp``: each element taken from ``x``'s elements
    followed by ``value``'s (``_setitem_sources``). With computed index arrays: a scatter of
    the last write to each position (numpy's), the others sent to a spare element at the end."""
    if arrays:
        assign, flat, p, v = _scattered(x, value, sources, arrays, axes, at, xp, 1)
        order = xp.argsort(p, stable=True)
        p, v = xp.take(p, order), xp.take(v, order)
        last = xp.concat([p[1:] != p[:-1], xp.ones_like(p[:1], dtype=xp.bool)])
        spare = xp.concat([flat, flat[:1]])
        return xp.reshape(assign(spare, xp.where(last, p, flat.shape[0]), v)[:-1], x.shape)
    both = xp.concat([_flat(x, xp), _flat(_as_elements_of(value, x, xp), xp)])
    return xp.reshape(xp.take(both, _flat(sources, xp)), x.shape)


def _index_add_over(x, value, addends, *arrays, axes=(), at=0, xp):
    """``x`` with ``value`` added at ``index`` over ``xp``: one layer of addends
    (``_index_add_addends``) at a time, in numpy's order. With computed index arrays: the
    library's scatter-add (``SCATTERS``)."""
    if arrays:
        add, flat, p, v = _scattered(x, value, addends, arrays, axes, at, xp, 0)
        return xp.reshape(add(flat, p, v), x.shape)
    value = _as_elements_of(value, x, xp)
    terms = xp.concat([_as_elements_of(0, x, xp), _flat(value, xp)])
    for k in range(addends.shape[0]):
        x = x + xp.reshape(xp.take(terms, _flat(addends[k, ...], xp)), x.shape)
    return x


getitem_p = Primitive("getitem", _getitem, params=("index",), doc="x[index]", linear_in=(0,),
                      spelling=_getitem_spelling, array_api_spelling=_getitem_array_api_spelling,
                      array_api_impl=_getitem_over, complex_rule=True,
                      returns_view=lambda operands: len(operands) == 1,   # basic indexing only
                      write_through=lambda base, new, *arrays, index:
                          setitem_p.bind(base, new, *arrays, index=index),
                      samples=(Sample((M34,), {"index": (("slice", 1, None, None), ("slice", None, None, 2))}, MATRIX),
                               Sample((M34, index([0, 2, 0])), {"index": (("array", 0),)}, MATRIX)))
setitem_p = Primitive("setitem", _setitem, params=("index",), linear_in=(0, 1), complex_rule=True,
                      array_api_impl=_setitem_over,
                      doc="A copy of x with x[index] = value (functional in-place write).",
                      samples=(Sample((M34, In((4,))), {"index": (1,)}, MATRIX),
                               Sample((M34, In(())), {"index": (("slice", None, None, None), 1)}, MATRIX)))
index_add_p = Primitive("index_add", _index_add, params=("index",), linear_in=(0, 1), complex_rule=True,
                        array_api_impl=_index_add_over,
                        doc="A copy of x with value added at index, repeats accumulating "
                            "(np.add.at): the scatter-add that transposes a gather.",
                        samples=(Sample((M34, M34, index([0, 0, 2])), {"index": (("array", 0),)}, MATRIX),))
# what array code passes in place of a static index's operands, by primitive (above)
POSITIONS = {getitem_p: _getitem_positions, setitem_p: _setitem_sources, index_add_p: _index_add_addends}


def _reshapes(index, x, y) -> bool:
    """Does ``x[index]`` only add or drop axes of length 1 (``x[None]``, ``x[..., 0]`` of a
    trailing 1)? Then its cotangent is a reshape, not a write into zeros. Basic indexing with
    full slices keeps every element in order; an integer then drops an axis of length 1 (the
    sizes agree)."""
    return (np.size(x) == np.size(y) > 0 and
            all(s is None or s == "..." or isinstance(s, int) or s == ("slice", None, None, None)
                for s in index))


@rrule(getitem_p)
def _getitem_rule(x, *arrays, index):
    y = getitem_p.bind(x, *arrays, index=index)

    def pullback(dy):
        if _reshapes(index, x, dy):
            return (np.reshape(dy, np.shape(x)),)
        zeros = np.zeros_like(x)
        if arrays:   # a gather: repeated indices must accumulate
            dx = index_add_p.bind(zeros, dy, *arrays, index=index)
        else:
            dx = setitem_p.bind(zeros, dy, index=index)
        return (dx,) + (NoTangent(),) * len(arrays)
    return y, pullback


def _kept_writes(x, arrays, index):
    """Which writes of ``x[index] = value`` stay, as a mask of ``x[index]``'s shape: where index
    arrays repeat a position, numpy keeps its last write, and the others have no gradient.
    None: all of them (constant index arrays without repeats)."""
    selected = np.empty(np.shape(x), dtype=bool)[build_index(index, [getattr(a, "value", a) for a in arrays])]
    order = np.arange(selected.size).reshape(selected.shape)
    last = setitem_p.bind(np.full(np.shape(x), -1), order, *arrays, index=index)
    kept = getitem_p.bind(last, *arrays, index=index) == order
    return None if not isinstance(kept, Traced) and kept.all() else kept


@rrule(setitem_p)
def _setitem_rule(x, value, *arrays, index):
    y = setitem_p.bind(x, value, *arrays, index=index)
    kept = _kept_writes(x, arrays, index) if arrays else None

    def pullback(dy):
        dx = setitem_p.bind(dy, 0, *arrays, index=index)
        dvalue = getitem_p.bind(dy, *arrays, index=index)
        if kept is not None:
            dvalue = np.where(kept, dvalue, 0)
        return (dx, dvalue) + (NoTangent(),) * len(arrays)
    return y, pullback


@rrule(index_add_p)
def _index_add_rule(x, value, *arrays, index):
    y = index_add_p.bind(x, value, *arrays, index=index)
    return y, lambda dy: (dy, getitem_p.bind(dy, *arrays, index=index)) + (NoTangent(),) * len(arrays)


# batching rules (ad.vmap): the batched operand's batch axis first, indexed by a full slice; a
# batched index array is left to the loop over the batch

_ALL = ("slice", None, None, None)


def _batch_axis_of_index(index, arrays) -> int:
    """Where ``x[(:,) + index]`` puts the batch axis: first, unless the index mixes integer
    arrays (or ints) separated by other items: numpy then puts the indexed axes first."""
    advanced = [k for k, s in enumerate(index) if isinstance(s, int) or isinstance(s, tuple) and s[0] == "array"]
    if not arrays or advanced == list(range(advanced[0], advanced[-1] + 1)):
        return 0
    return len(np.broadcast_shapes(*(np.shape(a) for a in arrays)))


def _selected_rank(shape, index, arrays) -> int:
    """The rank of ``x[index]`` for one example's ``x`` of ``shape``."""
    values = [getattr(a, "value", a) for a in arrays]
    return np.ndim(np.empty(shape, dtype=bool)[build_index(index, values)])


@batch_rule(getitem_p)
def _getitem_batched(args, dims, index):
    if any(d is not None for d in dims[1:]):
        return NotImplemented
    y = getitem_p.bind(to_front(args[0], dims[0]), *args[1:], index=(_ALL,) + tuple(index))
    return y, _batch_axis_of_index(index, args[1:])


def _write_batched(prim):
    """The batching rule of a write into ``x[index]`` (``setitem``, ``index_add``): both the
    array and the value batched, the value's batch axis ahead of the axes it broadcasts over."""
    def rule(args, dims, index):
        (x, value, *arrays), (dx, dv, *da) = args, dims
        if any(d is not None for d in da) or _batch_axis_of_index(index, arrays) != 0:
            return NotImplemented
        size = np.shape(x)[dx] if dx is not None else np.shape(value)[dv]
        x = to_front(x, dx) if dx is not None else np.broadcast_to(x, (size,) + np.shape(x))
        if dv is not None:
            value = to_front(value, dv)
            pad = _selected_rank(np.shape(x)[1:], index, arrays) - (np.ndim(value) - 1)
            value = np.reshape(value, np.shape(value)[:1] + (1,) * pad + np.shape(value)[1:]) if pad > 0 else value
        return prim.bind(x, value, *arrays, index=(_ALL,) + tuple(index)), 0
    return rule


batch_rule(setitem_p)(_write_batched(setitem_p))
batch_rule(index_add_p)(_write_batched(index_add_p))


# -- guards -------------------------------------------------------------------------------------

def _guard(x, expected):
    # scalars (a branch, an integer) compare directly: a guard runs once per use, so it is cheap
    same = np.array_equal(x, expected) if isinstance(expected, np.ndarray) else x == expected
    if not same:
        raise GuardError(expected, np.asarray(x))
    return np.True_


def check_guard(x, expected, guard: str, source: str | None):
    """A guard in generated code: the check, and the error naming the guard and its line."""
    try:
        return _guard(x, expected)
    except GuardError as exc:
        raise exc.at(guard, source) from None


guard_p = Primitive("guard", _guard, kind="guard",
                    doc="Checks an assumption the trace made (x == expected): a branch taken on a "
                        "traced value, an integer it used; raises GuardError when a run breaks it.",
                    samples=(Sample((In(kind="bool", value=True), In(kind="literal", value=True)),
                                    shapes=("scalar",), dtypes=(F64,)),))
non_differentiable(guard_p)


# -- project ------------------------------------------------------------------------------------

def project(aval, ct):
    """Project a cotangent onto its primal: undo broadcasting, match the dtype, drop the
    tangent of integer and boolean primals. Works on tracers (lifting) and arrays (closure)."""
    ct = unthunk(ct)
    if ct is None or isinstance(ct, (NoTangent, ZeroTangent)):
        return ct if ct is not None else NoTangent()
    if not np.issubdtype(aval.dtype, np.inexact):
        return NoTangent()
    if np.shape(ct) != aval.shape:
        ct = sum_to(ct, shape=aval.shape)
    ct_dtype = ct.dtype if hasattr(ct, "dtype") else np.result_type(ct)
    if ct_dtype != aval.dtype:
        if np.issubdtype(ct_dtype, np.complexfloating) and not np.issubdtype(aval.dtype, np.complexfloating):
            ct = np.real(ct)
        ct = ct.astype(aval.dtype) if hasattr(ct, "astype") else np.asarray(ct, aval.dtype)
    return ct
