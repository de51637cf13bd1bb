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
    negative steps) is ``xp.flip``. Not written: an index array (numpy's advanced indexing,
    which the standard restricts), other negative steps."""
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


getitem_p = Primitive("getitem", _getitem, params=("index",), doc="x[index]", linear_in=(0,),
                      spelling=_getitem_spelling, array_api_spelling=_getitem_array_api_spelling, complex_rule=True,
                      returns_view=lambda operands: len(operands) == 1,   # basic indexing only
                      write_through=lambda base, new, *arrays, index:
                          setitem_p.bind(base, new, *arrays, index=index),
                      samples=(Sample((M34,), {"index": (("slice", 1, None, None), ("slice", None, None, 2))}, MATRIX),
                               Sample((M34, index([0, 2, 0])), {"index": (("array", 0),)}, MATRIX)))
setitem_p = Primitive("setitem", _setitem, params=("index",), linear_in=(0, 1), complex_rule=True,
                      doc="A copy of x with x[index] = value (functional in-place write).",
                      samples=(Sample((M34, In((4,))), {"index": (1,)}, MATRIX),
                               Sample((M34, In(())), {"index": (("slice", None, None, None), 1)}, MATRIX)))
index_add_p = Primitive("index_add", _index_add, params=("index",), linear_in=(0, 1), complex_rule=True,
                        doc="A copy of x with value added at index, repeats accumulating "
                            "(np.add.at): the scatter-add that transposes a gather.",
                        samples=(Sample((M34, M34, index([0, 0, 2])), {"index": (("array", 0),)}, MATRIX),))


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
