"""Elementwise primitives (numpy ufuncs, where, clip, astype) and their rules.

Most rules are one line: the partial derivatives as numpy expressions of the operands and the
output ``y`` (reusing ``y`` where it saves work: ``tanh`` is ``1 - y*y``, ``exp`` is ``y``).
Broadcasting is undone by the driver (``ad.rrule.project``), never here.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import astype_p
from ..dispatch import UFUNCS, copy, implements, write_out
from ..errors import UnsupportedFunctionError
from ..primitives import BY_FUNCTION, Primitive
from ..rrule import non_differentiable, rrule, scalar_rule
from ..tangents import NoTangent, thunk


def _ufunc_primitive(uf: np.ufunc) -> Primitive:
    """The primitive of a ufunc (the core's own, for add and positive)."""
    prim = BY_FUNCTION.get(uf) or Primitive(uf.__name__, uf, function=uf, multiple_results=uf.nout > 1,
                                            elementwise=True)
    UFUNCS[uf] = prim
    return prim


for _uf in (np.add, np.subtract, np.multiply, np.true_divide, np.power, np.float_power,
            np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2, np.hypot, np.logaddexp,
            np.logaddexp2, np.remainder, np.fmod, np.copysign, np.negative, np.positive,
            np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sin, np.cos,
            np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh,
            np.arccosh, np.arctanh, np.sqrt, np.cbrt, np.square, np.reciprocal, np.absolute,
            np.fabs, np.deg2rad, np.rad2deg, np.conjugate, np.sign, np.floor, np.ceil, np.rint,
            np.trunc, np.floor_divide, np.heaviside, np.signbit, np.isnan, np.isinf, np.isfinite,
            np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
            np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.nextafter,
            np.spacing, np.modf, np.radians, np.degrees):
    _ufunc_primitive(_uf)

# -- the derivative table ----------------------------------------------------------------------
# partials take (*operands, y); 1 / -1 mean identity / negation; None means "no gradient".
LN2, LN10 = float(np.log(2.0)), float(np.log(10.0))   # Python floats: no float32 -> float64 upcast

scalar_rule(np.subtract, 1, -1)
scalar_rule(np.negative, -1)
scalar_rule(np.conjugate, 1)
scalar_rule(np.exp, lambda x, y: y)
scalar_rule(np.exp2, lambda x, y: y * LN2)
scalar_rule(np.expm1, lambda x, y: y + 1)
scalar_rule(np.log, lambda x, y: 1 / x)
scalar_rule(np.log2, lambda x, y: 1 / (x * LN2))
scalar_rule(np.log10, lambda x, y: 1 / (x * LN10))
scalar_rule(np.log1p, lambda x, y: 1 / (x + 1))
scalar_rule(np.sin, lambda x, y: np.cos(x))
scalar_rule(np.cos, lambda x, y: -np.sin(x))
scalar_rule(np.tan, lambda x, y: 1 + y * y)
scalar_rule(np.arcsin, lambda x, y: 1 / np.sqrt(1 - x * x))
scalar_rule(np.arccos, lambda x, y: -1 / np.sqrt(1 - x * x))
scalar_rule(np.arctan, lambda x, y: 1 / (1 + x * x))
scalar_rule(np.sinh, lambda x, y: np.cosh(x))
scalar_rule(np.cosh, lambda x, y: np.sinh(x))
scalar_rule(np.tanh, lambda x, y: 1 - y * y)
scalar_rule(np.arcsinh, lambda x, y: 1 / np.sqrt(x * x + 1))
scalar_rule(np.arccosh, lambda x, y: 1 / np.sqrt(x * x - 1))
scalar_rule(np.arctanh, lambda x, y: 1 / (1 - x * x))
scalar_rule(np.sqrt, lambda x, y: 0.5 / y)
scalar_rule(np.cbrt, lambda x, y: 1 / (3 * y * y))
scalar_rule(np.square, lambda x, y: 2 * x)
scalar_rule(np.reciprocal, lambda x, y: -y * y)
scalar_rule(np.absolute, lambda x, y: np.sign(x))
scalar_rule(np.fabs, lambda x, y: np.sign(x))
scalar_rule(np.deg2rad, lambda x, y: np.pi / 180)
scalar_rule(np.rad2deg, lambda x, y: 180 / np.pi)
scalar_rule(np.radians, lambda x, y: np.pi / 180)
scalar_rule(np.degrees, lambda x, y: 180 / np.pi)
scalar_rule(np.arctan2, lambda a, b, y: b / (a * a + b * b), lambda a, b, y: -a / (a * a + b * b))
scalar_rule(np.hypot, lambda a, b, y: a / y, lambda a, b, y: b / y)
scalar_rule(np.logaddexp, lambda a, b, y: np.exp(a - y), lambda a, b, y: np.exp(b - y))
scalar_rule(np.logaddexp2, lambda a, b, y: np.exp2(a - y), lambda a, b, y: np.exp2(b - y))
scalar_rule(np.remainder, 1, lambda a, b, y: -np.floor_divide(a, b))
scalar_rule(np.fmod, 1, lambda a, b, y: -np.trunc(a / b))
scalar_rule(np.copysign, lambda a, b, y: np.sign(a) * np.sign(y), None)
non_differentiable(np.sign, np.floor, np.ceil, np.rint, np.trunc, np.floor_divide, np.heaviside,
                   np.signbit, np.isnan, np.isinf, np.isfinite, np.less, np.less_equal,
                   np.greater, np.greater_equal, np.equal, np.not_equal, np.logical_and,
                   np.logical_or, np.logical_xor, np.logical_not, np.spacing)
# nextafter(x, y) moves x by one ulp: its value follows x, so its derivative is that of x.
scalar_rule(np.nextafter, 1, None)


@rrule(np.multiply)
def _multiply_rule(a, b):
    # thunks: the cotangent of an operand that needs none (a constant) is never even traced
    return a * b, lambda dy: (thunk(lambda: dy * b), thunk(lambda: dy * a))


@rrule(np.divide)
def _divide_rule(a, b):
    y = a / b
    return y, lambda dy: (thunk(lambda: dy / b), thunk(lambda: -dy * y / b))


@rrule(np.power)
def _power_rule(x, p):
    y = x ** p

    def pullback(dy):
        # d/dp is y*log(x): defined for x > 0; elsewhere 0 (x**p is real only for integer p).
        return (thunk(lambda: dy * p * x ** (p - 1)),
                thunk(lambda: dy * y * np.log(np.where(x > 0, x, 1))))
    return y, pullback


@rrule(np.float_power)
def _float_power_rule(x, p):
    y = np.float_power(x, p)

    def pullback(dy):
        return (thunk(lambda: dy * p * np.float_power(x, p - 1)),
                thunk(lambda: dy * y * np.log(np.where(x > 0, x, 1))))
    return y, pullback


def _select_rule(op):
    """max/min-style rules: the gradient goes to the selected operand, split evenly on ties."""
    def rule(a, b):
        y = op(a, b)

        def pullback(dy):
            def da():
                return np.where(a == b, 0.5 * dy, np.where(a == y, dy, 0))   # in dy's dtype
            return thunk(da), thunk(lambda: dy - da())     # CSE merges the two da()
        return y, pullback
    return rule


for _uf in (np.maximum, np.minimum, np.fmax, np.fmin):
    rrule(_uf)(_select_rule(_uf))


@rrule(np.modf)
def _modf_rule(x):
    frac, whole = np.modf(x)
    return (frac, whole), lambda dys: (dys[0],)


# -- where, clip -------------------------------------------------------------------------

where_p = Primitive("where", np.where, function=np.where)


@implements(np.where)
def _where(condition, x=None, y=None):
    if x is None and y is None:
        return np.nonzero(condition)
    return where_p.bind(condition, x, y)


@rrule(where_p)
def _where_rule(c, x, y):
    out = np.where(c, x, y)
    return out, lambda dy: (NoTangent(), thunk(lambda: np.where(c, dy, 0)), thunk(lambda: np.where(c, 0, dy)))


def _clip(x, lo, hi):
    return np.clip(x, lo, hi)


clip_p = Primitive("clip", _clip, function=np.clip)


@implements(np.clip)
def _clip_handler(a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    lo = a_min if a_min is not None else min
    hi = a_max if a_max is not None else max
    result = clip_p.bind(a, -np.inf if lo is None else lo, np.inf if hi is None else hi)
    if out is not None:
        return write_out(out, result, "np.clip")
    return result


@rrule(clip_p)
def _clip_rule(x, lo, hi):
    y = np.clip(x, lo, hi)

    def pullback(dy):
        return (thunk(lambda: np.where((x >= lo) & (x <= hi), dy, 0)),
                thunk(lambda: np.where(x < lo, dy, 0)), thunk(lambda: np.where(x > hi, dy, 0)))
    return y, pullback


@implements(np.real)
def _real(val):
    if np.iscomplexobj(val):
        raise UnsupportedFunctionError("np.real of a complex traced value: complex numbers are not "
                                       "supported yet")
    return copy(val)


@implements(np.sinc)
def _sinc(x):
    t = np.pi * np.where(x == 0, 1.0e-20, x)
    return np.sin(t) / t
