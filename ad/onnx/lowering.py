"""The lowering table: one entry per primitive object, from a tape equation to standard ONNX nodes.

A lowering is ``fn(g, e) -> output name(s)`` (``g`` an ``ad.onnx.graph.Graph``, ``e`` the
equation). Elementwise ufuncs that ONNX has are one line of ``ELEMENTWISE``; the others are
short compositions below. ``NOT_LOWERED`` says why the remaining primitives have no lowering.
Primitives are named by their objects (or, for ufuncs, by the ufunc: ``ad.primitives.lookup``).
numpy's dtype rules are kept by casting operands to the dtype the tape recorded for the result.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from onnx import numpy_helper

from ..core_prims import (astype_p, broadcast_to_p, full_p, getitem_p, guard_p, index_add_p, reshape_p,
                          setitem_p, sum_to_p, transpose_p)
from ..lib.contraction import einsum_p, matmul_p, matvec_p, vecdot_p, vecmat_p
from ..lib.creation import array_p
from ..lib.elementwise import clip_p, where_p
from ..lib.indexing import argsort_p, nonzero_p
from ..lib.linalg import (cholesky_p, det_p, eig_p, eigh_p, inv_p, phase_free_p, pinv_p, qr_p,
                          slogdet_p, solve_p, svd_p)
from ..lib.reductions import (all_p, any_p, argmax_p, argmin_p, cumprod_p, cumsum_p, max_p, mean_p,
                              min_p, prod_p, sum_p, running_arg_p)
from ..lib.selection import argpartition_p, searchsorted_p
from ..lib.shape import concatenate_p, roll_p
from ..forward_mode.pushforward import opaque_pushforward_p
from ..lib.fft import fftn_p, irfftn_p, rfftn_p
from ..lib.values import imag_p, real_p, round_p
from ..reverse_mode.lift import opaque_pullback_p, opaque_rrule_p
from ..nn.stochastic import dropout_mask_p
from ..primitives import lookup
from ..tape import Lit
from .graph import common_dtype
from .indexing import lower_getitem, lower_scatter

LOWERINGS: dict = {}     # primitive -> lowering

_NO_LINALG = "no standard ONNX operator (a factorisation would need loops)"
_CLOSURE = "runs a Python closure (a rule that could not be lifted)"
NOT_LOWERED = {
    guard_p: "checks the branch a trace took; to_onnx refuses it, or drops it with guards='branch'",
    lookup(np.nextafter): "bit-level float stepping; ONNX has no equivalent",
    lookup(np.spacing): "bit-level float spacing; ONNX has no equivalent",
    lookup(np.bitwise_count): "ONNX has no population count",
    argpartition_p: "numpy's order inside each partition is implementation-defined",
    dropout_mask_p: "random: onnxruntime cannot draw numpy's random numbers",
    **{p: _NO_LINALG for p in (inv_p, solve_p, slogdet_p, cholesky_p, eigh_p, svd_p, qr_p, pinv_p, eig_p)},
    phase_free_p: "checks a complex cotangent (eigenvector phases); ONNX exports real tapes only",
    **{lookup(uf): "no lowering yet (new in issue 13): ldexp is Mul by Pow(2, e), divmod Floor and Mod, "
                    "frexp needs bit-level exponent extraction" for uf in (np.ldexp, np.frexp, np.divmod)},
    running_arg_p: "no lowering yet (new in issue 13): ONNX has no running maximum (a Scan would do)",
    **{p: "complex values, which no ONNX arithmetic operator takes (its DFT computes on real "
          "[re, im] pairs; no lowering yet)" for p in (fftn_p, rfftn_p, irfftn_p)},
    opaque_rrule_p: _CLOSURE,
    opaque_pullback_p: _CLOSURE,
    opaque_pushforward_p: _CLOSURE,
}
_SCIPY = ("a scipy function (special functions, scipy.linalg, scipy.signal, scipy.integrate...): "
          "ONNX has no operator for it; no lowering yet")


def not_lowered(prim) -> str | None:
    """Why ``prim`` has no lowering: ``NOT_LOWERED`` says, or it is one of ad.scipy's
    primitives (loaded lazily, so not listed here one by one: their names are scipy's paths,
    ``scipy.linalg.expm``); None when it lowers or nobody has said."""
    if prim in LOWERINGS:
        return None
    return NOT_LOWERED.get(prim) or (_SCIPY if prim.name.startswith("scipy.") else None)


def lowers(*prims, **params):
    """Register ``fn(g, e, **params)`` as the lowering of primitives (or of the ufuncs and numpy
    functions they are recorded for): ``@lowers(sum_p)``, ``@lowers(np.hypot)``. Stack it to
    register one function for several primitives with different ``params``."""
    def register(fn):
        for p in prims:
            LOWERINGS[lookup(p)] = functools.partial(fn, **params) if params else fn
        return fn
    return register


def out_aval(e, i=0):
    return e.outputs[i].aval


# -- elementwise: (ONNX op, how operands are cast, attributes) -------------------------------------
# "out": to the result's dtype (arithmetic); "common": to the operands' common dtype
# (comparisons); "float": like "common" but integers become float64; "bool": to bool (logic).

ELEMENTWISE = {
    np.add: ("Add", "out"), np.subtract: ("Sub", "out"), np.multiply: ("Mul", "out"),
    np.divide: ("Div", "out"), np.power: ("Pow", "out"), np.float_power: ("Pow", "out"),
    np.maximum: ("Max", "out"), np.minimum: ("Min", "out"), np.fmax: ("Max", "out"),
    np.fmin: ("Min", "out"), np.fmod: ("Mod", "out", {"fmod": 1}),
    np.negative: ("Neg", "out"), np.positive: ("Identity", "out"), np.conjugate: ("Identity", "out"),   # (reals only)
    np.exp: ("Exp", "out"), np.log: ("Log", "out"), np.sqrt: ("Sqrt", "out"),
    np.reciprocal: ("Reciprocal", "out"), np.absolute: ("Abs", "out"), np.fabs: ("Abs", "out"),
    np.sin: ("Sin", "out"), np.cos: ("Cos", "out"), np.tan: ("Tan", "out"), np.arcsin: ("Asin", "out"),
    np.arccos: ("Acos", "out"), np.arctan: ("Atan", "out"), np.sinh: ("Sinh", "out"),
    np.cosh: ("Cosh", "out"), np.tanh: ("Tanh", "out"), np.arcsinh: ("Asinh", "out"),
    np.arccosh: ("Acosh", "out"), np.arctanh: ("Atanh", "out"),
    np.sign: ("Sign", "out"), np.floor: ("Floor", "out"), np.ceil: ("Ceil", "out"),
    np.rint: ("Round", "out"),
    np.less: ("Less", "common"), np.less_equal: ("LessOrEqual", "common"),
    np.greater: ("Greater", "common"), np.greater_equal: ("GreaterOrEqual", "common"),
    np.equal: ("Equal", "common"), np.isnan: ("IsNaN", "float"), np.isinf: ("IsInf", "float"),
    np.logical_and: ("And", "bool"), np.logical_or: ("Or", "bool"), np.logical_xor: ("Xor", "bool"),
    np.logical_not: ("Not", "bool"),
}


def operand_dtype(e, mode: str):
    if mode == "out":
        return out_aval(e).dtype
    if mode == "bool":
        return np.dtype(bool)
    dt = common_dtype(e.inputs)
    return dt if mode == "common" or np.issubdtype(dt, np.inexact) else np.dtype(np.float64)


# x*1, x/1, x+0, x-0 emit no node: onnxruntime 1.32's no-op elimination can break a model with
# such a node (it reported a valid graph's node input as undefined), and they compute nothing.
_NEUTRAL = {"Mul": (1, (0, 1)), "Add": (0, (0, 1)), "Div": (1, (1,)), "Sub": (0, (1,))}


def _neutral_operand(e, op):
    """The operand an arithmetic equation returns unchanged, if the other is a neutral literal."""
    value, positions = _NEUTRAL.get(op, (None, ()))
    for k in positions:
        lit, other = e.inputs[k], e.inputs[1 - k]
        if type(lit) is Lit and np.all(np.asarray(lit.value) == value) and other.aval.shape == out_aval(e).shape:
            return other
    return None


def elementwise(op, mode, attrs=None):
    def lower(g, e):
        dt = operand_dtype(e, mode)
        same = e.inputs[0] if op == "Identity" else _neutral_operand(e, op)
        if same is not None:
            return g.x(same, dt)
        return g.op(op, *(g.x(x, dt) for x in e.inputs), **(attrs or {}))
    return lower


for _uf, (_op, _mode, *_attrs) in ELEMENTWISE.items():
    lowers(_uf)(elementwise(_op, _mode, *_attrs))


def _args(g, e, mode="out"):
    """Operand names cast for an elementwise composition, and a constant maker in that dtype."""
    dt = operand_dtype(e, mode)
    return [g.x(x, dt) for x in e.inputs], (lambda v: g.const(v, dt))


def _unary(build):
    """A composition of one operand: ``build(g, x, c)`` with ``c(value)`` a constant."""
    def lower(g, e):
        (x,), c = _args(g, e)
        return build(g, x, c)
    return lower


def _trunc(g, x, c):
    return g.op("Where", g.op("Less", x, c(0)), g.op("Ceil", x), g.op("Floor", x))


UNARY = {   # ufunc -> build(g, x, c) of one operand, c(value) a constant in its dtype
    np.trunc: _trunc,
    np.exp2: lambda g, x, c: g.op("Pow", c(2.0), x),
    np.expm1: lambda g, x, c: g.op("Sub", g.op("Exp", x), c(1.0)),
    np.log2: lambda g, x, c: g.op("Div", g.op("Log", x), c(math.log(2.0))),
    np.log10: lambda g, x, c: g.op("Div", g.op("Log", x), c(math.log(10.0))),
    np.log1p: lambda g, x, c: g.op("Log", g.op("Add", x, c(1.0))),
    np.square: lambda g, x, c: g.op("Mul", x, x),
    np.cbrt: lambda g, x, c: g.op("Mul", g.op("Sign", x), g.op("Pow", g.op("Abs", x), c(1 / 3))),
    np.deg2rad: lambda g, x, c: g.op("Mul", x, c(math.pi / 180)),
    np.radians: lambda g, x, c: g.op("Mul", x, c(math.pi / 180)),
    np.rad2deg: lambda g, x, c: g.op("Mul", x, c(180 / math.pi)),
    np.degrees: lambda g, x, c: g.op("Mul", x, c(180 / math.pi)),
}

for _uf, _build in UNARY.items():
    lowers(_uf)(_unary(_build))


@lowers(np.modf)
def _modf(g, e):
    (x,), c = _args(g, e)
    whole = _trunc(g, x, c)
    return g.op("Sub", x, whole), whole


@lowers(np.arctan2)
def _arctan2(g, e):
    (a, b), c = _args(g, e)
    t = g.op("Atan", g.op("Div", a, b))
    left = g.op("Where", g.op("GreaterOrEqual", a, c(0)), g.op("Add", t, c(math.pi)),
                g.op("Sub", t, c(math.pi)))
    axis = g.op("Where", g.op("Greater", a, c(0)), c(math.pi / 2),
                g.op("Where", g.op("Less", a, c(0)), c(-math.pi / 2), c(0)))
    return g.op("Where", g.op("Greater", b, c(0)), t, g.op("Where", g.op("Less", b, c(0)), left, axis))


@lowers(np.hypot)
def _hypot(g, e):
    (a, b), c = _args(g, e)
    return g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))


@lowers(np.logaddexp, base=math.e)
@lowers(np.logaddexp2, base=2.0)
def _logaddexp(g, e, base: float):
    (a, b), c = _args(g, e)
    m = g.op("Max", a, b)
    d = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    log1p = g.op("Log", g.op("Add", c(1.0), g.op("Pow", c(base), d)))
    return g.op("Add", m, g.op("Div", log1p, c(math.log(base))))


@lowers(np.floor_divide, quotient=True)
@lowers(np.remainder, quotient=False)
def _floor_ops(g, e, quotient: bool):
    """``a // b`` (the quotient) and ``a % b`` through ``floor(a / b)``; integer remainders by Mod."""
    dt = out_aval(e).dtype
    if np.issubdtype(dt, np.integer) and not quotient:
        return g.op("Mod", *(g.x(x, dt) for x in e.inputs))
    work = dt if np.issubdtype(dt, np.inexact) else np.dtype(np.float64)
    a, b = (g.x(x, work) for x in e.inputs)
    q = g.op("Floor", g.op("Div", a, b))
    out = q if quotient else g.op("Sub", a, g.op("Mul", b, q))
    return g.cast(out, work, dt)


@lowers(np.copysign)
def _copysign(g, e):
    (a, b), c = _args(g, e)
    mag = g.op("Abs", a)
    return g.op("Where", g.op("Less", b, c(0)), g.op("Neg", mag), mag)


@lowers(np.heaviside)
def _heaviside(g, e):
    (x, h), c = _args(g, e)
    return g.op("Where", g.op("Less", x, c(0)), c(0), g.op("Where", g.op("Greater", x, c(0)), c(1), h))


@lowers(real_p)
def _real(g, e):
    """Only real operands reach a lowering (complex tapes are refused): Re x = x."""
    return g.x(e.inputs[0])


@lowers(imag_p)
def _imag(g, e):
    """Im x = 0 for the real operands that reach a lowering (NaN and infinities too)."""
    return filled(g, out_aval(e), 0)


@lowers(round_p)
def _round(g, e):
    """numpy's own method: scale by 10**decimals, round half to even, scale back."""
    (x,), c = _args(g, e)
    d = e.kwargs["decimals"]
    if d == 0:
        return g.op("Round", x)
    if d > 0:
        return g.op("Div", g.op("Round", g.op("Mul", x, c(10.0 ** d))), c(10.0 ** d))
    return g.op("Mul", g.op("Round", g.op("Div", x, c(10.0 ** -d))), c(10.0 ** -d))


@lowers(np.signbit)
def _signbit(g, e):
    (x,), c = _args(g, e, "float")
    return g.op("Less", x, c(0))


@lowers(np.not_equal)
def _not_equal(g, e):
    (a, b), _ = _args(g, e, "common")
    return g.op("Not", g.op("Equal", a, b))


@lowers(np.isfinite)
def _isfinite(g, e):
    (x,), _ = _args(g, e, "float")
    return g.op("Not", g.op("Or", g.op("IsNaN", x), g.op("IsInf", x)))


# -- integers: bitwise operations and shifts ---------------------------------------------------------

@lowers(np.bitwise_and, ints="BitwiseAnd", bools="And")
@lowers(np.bitwise_or, ints="BitwiseOr", bools="Or")
@lowers(np.bitwise_xor, ints="BitwiseXor", bools="Xor")
@lowers(np.invert, ints="BitwiseNot", bools="Not")
def _bitwise(g, e, ints: str, bools: str):
    """ONNX's bitwise ops take integers; numpy's take booleans too, where they are the logical ones."""
    dt = out_aval(e).dtype
    return g.op(bools if dt == np.bool_ else ints, *(g.x(x, dt) for x in e.inputs))


@lowers(np.left_shift, direction="LEFT")
@lowers(np.right_shift, direction="RIGHT")
def _shift(g, e, direction: str):
    """ONNX's BitShift takes unsigned integers: a signed operand shifts as its bits (an unsigned
    integer of its width); numpy's right shift of a signed one is arithmetic, the bits of a
    negative one inverted around a logical shift (``~(~x >> s)``). Shifts of the width or more
    give 0 (-1 for a negative right-shifted), in numpy and onnxruntime alike."""
    dt = out_aval(e).dtype
    bits = np.dtype(f"u{dt.itemsize}")
    x, s = (g.x(v, dt) for v in e.inputs)
    if dt.kind == "u":
        return g.op("BitShift", x, s, direction=direction)
    ux, us = g.cast(x, dt, bits), g.cast(s, dt, bits)
    if direction == "LEFT":
        return g.cast(g.op("BitShift", ux, us, direction=direction), bits, dt)
    negative = g.cast(g.op("Less", x, g.const(0, dt)), bool, bits)
    flip = g.op("Sub", g.const(0, bits), negative)             # all ones where x < 0, else 0
    shifted = g.op("BitShift", g.op("BitwiseXor", ux, flip), us, direction=direction)
    return g.cast(g.op("BitwiseXor", shifted, flip), bits, dt)


@lowers(where_p)
def _where(g, e):
    cond, x, y = e.inputs
    dt = out_aval(e).dtype
    return g.op("Where", g.x(cond, np.dtype(bool)), g.x(x, dt), g.x(y, dt))


@lowers(clip_p)
def _clip(g, e):
    (x, lo, hi), _ = _args(g, e)
    return g.op("Min", g.op("Max", x, lo), hi)


@lowers(astype_p)
def _astype(g, e):
    return g.x(e.inputs[0], out_aval(e).dtype)


# -- reductions and scans -------------------------------------------------------------------------

def _axes(e) -> tuple:
    axis, ndim = e.kwargs["axis"], e.inputs[0].aval.ndim
    if axis is None:
        return tuple(range(ndim))
    return (axis,) if isinstance(axis, int) else tuple(axis)


@lowers(sum_p, op="ReduceSum")
@lowers(mean_p, op="ReduceMean")
@lowers(prod_p, op="ReduceProd")
@lowers(max_p, op="ReduceMax")
@lowers(min_p, op="ReduceMin")
@lowers(any_p, op="ReduceMax", to_bool=True)
@lowers(all_p, op="ReduceMin", to_bool=True)
def _reduction(g, e, op: str, to_bool: bool = False):
    out = out_aval(e)
    axes = _axes(e)
    work = np.dtype(np.int64) if to_bool else out.dtype
    if to_bool:      # any/all: reduce 0/1 integers, then back to bool
        x = g.cast(g.x(e.inputs[0], np.dtype(bool)), bool, work)
    else:
        x = g.x(e.inputs[0], work)
    if axes:
        x = g.op(op, x, g.ints(axes), keepdims=int(e.kwargs["keepdims"]))
    return g.cast(x, work, out.dtype)


@lowers(argmax_p, op="ArgMax")
@lowers(argmin_p, op="ArgMin")
def _argmax(g, e, op: str):
    x, axis = g.x(e.inputs[0]), e.kwargs["axis"]
    if axis is None:
        x, axis = g.op("Reshape", x, g.ints([-1])), 0
    y = g.op(op, x, axis=axis, keepdims=int(e.kwargs["keepdims"]))
    return g.reshape(y, out_aval(e).shape)


@lowers(cumsum_p)
def _cumsum(g, e):
    return g.op("CumSum", g.x(e.inputs[0], out_aval(e).dtype), g.const(np.int64(e.kwargs["axis"])))


@lowers(cumprod_p)
def _cumprod(g, e):
    """ONNX has no cumulative product: a Hillis-Steele scan, log2(n) shifted multiplies."""
    out, axis = out_aval(e), e.kwargs["axis"]
    x, n = g.x(e.inputs[0], out.dtype), out.shape[axis]
    step = 1
    while step < n:
        ones = np.ones(tuple(step if i == axis else s for i, s in enumerate(out.shape)), out.dtype)
        x = g.op("Mul", x, g.op("Concat", g.const(ones), slice_axis(g, x, axis, 0, n - step), axis=axis))
        step *= 2
    return x


@lowers(sum_to_p)
def _sum_to(g, e):
    xs, shape = e.inputs[0].aval.shape, e.kwargs["shape"]
    lead = len(xs) - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and xs[lead + i] != 1]
    x = g.x(e.inputs[0])
    if axes:
        x = g.op("ReduceSum", x, g.ints(axes), keepdims=1)
    return g.reshape(x, shape)


# -- shapes -----------------------------------------------------------------------------------

@lowers(reshape_p)
def _reshape(g, e):
    return g.reshape(g.x(e.inputs[0]), e.kwargs["shape"])


@lowers(transpose_p)
def _transpose(g, e):
    return g.op("Transpose", g.x(e.inputs[0]), perm=list(e.kwargs["axes"]))


@lowers(broadcast_to_p)
def _broadcast_to(g, e):
    return g.op("Expand", g.x(e.inputs[0]), g.ints(e.kwargs["shape"]))


@lowers(concatenate_p)
def _concatenate(g, e):
    dt = out_aval(e).dtype
    return g.op("Concat", *(g.x(x, dt) for x in e.inputs), axis=e.kwargs["axis"])


def slice_axis(g, x: str, axis: int, start: int, stop: int) -> str:
    return g.op("Slice", x, g.ints([start]), g.ints([stop]), g.ints([axis]))


@lowers(roll_p)
def _roll(g, e):
    x, shape = g.x(e.inputs[0]), e.inputs[0].aval.shape
    for s, ax in zip(e.kwargs["shift"], e.kwargs["axis"]):
        n = shape[ax]
        s = s % n if n else 0
        if s:
            x = g.op("Concat", slice_axis(g, x, ax, n - s, n), slice_axis(g, x, ax, 0, n - s), axis=ax)
    return x


# -- indexing, sorting ---------------------------------------------------------------------------

@lowers(getitem_p)
def _getitem(g, e):
    x, *arrays = e.inputs
    return lower_getitem(g, g.x(x), x.aval.shape, e.kwargs["index"], arrays, out_aval(e).shape)


lowers(setitem_p, reduction=None)(lower_scatter)
lowers(index_add_p, reduction="add")(lower_scatter)


@lowers(argsort_p)
def _argsort(g, e):
    x, axis = e.inputs[0], e.kwargs["axis"]
    _, idx = g.op("TopK", g.x(x), g.ints([x.aval.shape[axis]]), axis=axis, largest=0, sorted=1, n_out=2)
    return idx


@lowers(searchsorted_p)
def _searchsorted(g, e):
    """Count the elements of the sorted ``a`` before each value (O(len(a)) per value)."""
    a, v = e.inputs
    dt = common_dtype(e.inputs)
    vals = g.op("Unsqueeze", g.x(v, dt), g.ints([-1]))
    before = g.op("Less" if e.kwargs["side"] == "left" else "LessOrEqual", g.x(a, dt), vals)
    return g.op("ReduceSum", g.cast(before, bool, np.int64), g.ints([-1]), keepdims=0)


@lowers(nonzero_p)
def _nonzero(g, e):
    nz = g.op("NonZero", g.x(e.inputs[0]))
    return tuple(g.op("Gather", nz, g.const(np.int64(i)), axis=0) for i in range(len(e.outputs)))


# -- contractions, creation -------------------------------------------------------------------------

@lowers(matmul_p)
def _matmul(g, e):
    dt = out_aval(e).dtype
    return g.op("MatMul", *(g.x(x, dt) for x in e.inputs))


@lowers(vecdot_p)
def _vecdot(g, e):
    dt = out_aval(e).dtype
    a, b = (g.x(x, dt) for x in e.inputs)
    return g.op("ReduceSum", g.op("Mul", a, b), g.ints([-1]), keepdims=0)


@lowers(matvec_p, vector=1, axis=-1)
@lowers(vecmat_p, vector=0, axis=-2)
def _matvec(g, e, vector: int, axis: int):
    """``A @ v[..., None]`` and ``v[..., None, :] @ A``: the vector operand given a unit
    ``axis``, multiplied, the unit axis dropped."""
    dt = out_aval(e).dtype
    ab = [g.x(x, dt) for x in e.inputs]
    ab[vector] = g.op("Unsqueeze", ab[vector], g.ints([axis]))
    return g.op("Squeeze", g.op("MatMul", *ab), g.ints([axis]))


@lowers(det_p)
def _det(g, e):
    return g.op("Det", g.x(e.inputs[0], out_aval(e).dtype))


@lowers(einsum_p)
def _einsum(g, e):
    dt = out_aval(e).dtype
    return g.op("Einsum", *(g.x(x, dt) for x in e.inputs), equation=e.kwargs["subscripts"])


@lowers(full_p)
def _full(g, e):
    return filled(g, out_aval(e), e.kwargs["fill_value"])


def filled(g, out, fill_value):
    if out.size <= 16:
        return g.const(np.full(out.shape, fill_value, out.dtype))
    value = numpy_helper.from_array(np.full((1,), fill_value, out.dtype))
    return g.op("ConstantOfShape", g.ints(out.shape), value=value)


@lowers(array_p)
def _array(g, e):
    return g.x(e.inputs[0], out_aval(e).dtype)

