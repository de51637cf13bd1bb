"""Elementwise primitives (numpy ufuncs, where, clip, astype) and their rules.

Most rules are one line: the partial derivatives as numpy expressions of the operands and the
output ``y`` (reusing ``y`` where it saves work: ``tanh`` is ``1 - y*y``, ``exp`` is ``y``).
Broadcasting is undone by the driver (``ad.rules.project``), never here.

Complex operands (``COMPLEX``): the partials of a holomorphic ufunc are its complex derivative
f'(z), and its pullback is ``g * f'(z)`` (no conjugation, docs/complex.md), so the real formula
holds where it is f' on the principal branch numpy computes; absolute, conjugate and sign are not
holomorphic and have rules of their own for complex operands.
"""
from __future__ import annotations

import math

import numpy as np

from ..core_prims import astype_p
from ..dispatch import UFUNCS, implements, write_out
from ..primitives import BY_FUNCTION, Primitive
from ..rules import non_differentiable, rrule, scalar_rule
from ..samples import (BINARY, DISTINCT, DISTINCT_Y, F64, NONZERO, NONZERO_Y, POSITIVE, F, In, Sample, Y,
                       literal, to_integer)
from ..tangents import NoTangent, thunk


def _power_spelling(args, params) -> str:
    """``a ** b``, a negative literal base in parentheses (``-2.0 ** x`` is ``-(2.0 ** x)``)."""
    base = f"({args[0]})" if args[0].startswith("-") else args[0]
    return f"{base} ** {args[1]}"


# How compiled code spells the ufuncs that are Python operators (the others are np.<name>).
OPERATORS = {np.subtract: "{0} - {1}", np.multiply: "{0} * {1}", np.true_divide: "{0} / {1}",
             np.power: _power_spelling, np.floor_divide: "{0} // {1}", np.remainder: "{0} % {1}",
             np.negative: "-{0}", np.less: "{0} < {1}", np.less_equal: "{0} <= {1}",
             np.greater: "{0} > {1}", np.greater_equal: "{0} >= {1}", np.equal: "{0} == {1}",
             np.not_equal: "{0} != {1}", np.bitwise_and: "{0} & {1}", np.bitwise_or: "{0} | {1}",
             np.bitwise_xor: "{0} ^ {1}", np.invert: "~{0}", np.left_shift: "{0} << {1}",
             np.right_shift: "{0} >> {1}"}
# How compiled array code spells the ufuncs whose numpy spelling is not the array API
# standard's (ad.compiler.array_api; the others are xp.<name>, renamed where the standard did):
# the standard's logical functions take booleans only (numpy's, any number: nonzero is true).
ARRAY_API_SPELLINGS = {
    np.power: _power_spelling, np.fabs: "xp.abs({0})", np.rint: "xp.round({0})",
    np.float_power: "xp.pow({0}, {1})",                  # (its operands cast to float64 first)
    np.exp2: "xp.pow(2.0, {0})",
    **dict.fromkeys((np.deg2rad, np.radians), f"{{0}} * {math.pi / 180!r}"),     # numpy's product, bit for bit
    **dict.fromkeys((np.rad2deg, np.degrees), f"{{0}} * {180 / math.pi!r}"),
    np.fmax: "xp.where(xp.isnan({1}), {0}, xp.where(xp.isnan({0}), {1}, xp.maximum({0}, {1})))",
    np.fmin: "xp.where(xp.isnan({1}), {0}, xp.where(xp.isnan({0}), {1}, xp.minimum({0}, {1})))",
    np.heaviside: "xp.where({0} < 0, 0.0, xp.where({0} > 0, 1.0, xp.where({0} == 0, {1}, {0})))",
    np.logical_not: "xp.logical_not(xp.astype({0}, xp.bool, copy=False))",
    # compositions: numpy's value (fmod, modf, divmod, spacing exactly; cbrt, logaddexp2 to rounding)
    np.cbrt: f"xp.copysign(xp.pow(xp.abs({{0}}), {1 / 3!r}), {{0}})",
    np.fmod: "xp.sign({0}) * xp.remainder(xp.abs({0}), xp.abs({1}))",   # of magnitudes: C's fmod
    np.logaddexp2: ("xp.where({0} == {1}, {0} + 1.0, xp.maximum({0}, {1}) + "     # numpy's formula
                    f"xp.log1p(xp.pow(2.0, -xp.abs({{0}} - {{1}}))) * {1 / math.log(2)!r})"),
    np.modf: "(xp.copysign(xp.where(xp.isinf({0}), 0.0, {0} - xp.trunc({0})), {0}), xp.trunc({0}))",
    np.divmod: "({0} // {1}, {0} % {1})",
    np.spacing: "xp.where({0} < 0, xp.nextafter({0}, -xp.inf), xp.nextafter({0}, xp.inf)) - {0}",
    **{uf: f"xp.{uf.__name__}(xp.astype({{0}}, xp.bool, copy=False), xp.astype({{1}}, xp.bool, copy=False))"
       for uf in (np.logical_and, np.logical_or, np.logical_xor)},
    # the standard's names of the bitwise functions (numpy 2 has them too, as aliases)
    np.bitwise_and: "xp.bitwise_and({0}, {1})", np.bitwise_or: "xp.bitwise_or({0}, {1})",
    np.bitwise_xor: "xp.bitwise_xor({0}, {1})", np.invert: "xp.bitwise_invert({0})",
    np.left_shift: "xp.bitwise_left_shift({0}, {1})", np.right_shift: "xp.bitwise_right_shift({0}, {1})",
}
# How compiled code spells them on Python floats (ad.compiler.codegen's scalar specialisation): ``math``
# and plain arithmetic, numpy's value wherever these return one; where numpy says inf or nan
# they raise (1.0 / 0.0, math.log(0.0), overflow) and the compiled function reruns in numpy.
# ``**`` is math.pow: Python's is complex for a negative base. maximum and minimum propagate nan
# and return the second operand on ties (numpy's signed zeros).
SCALAR_SPELLINGS = {
    np.subtract: "{0} - {1}", np.multiply: "{0} * {1}", np.true_divide: "{0} / {1}",
    np.floor_divide: "{0} // {1}", np.remainder: "{0} % {1}",
    np.power: "(math.pow({0}, {1}) if {0} > -math.inf else np.power({0}, {1}))",   # (-inf)**0.5 is nan
    np.negative: "-{0}", np.square: "{0} * {0}", np.reciprocal: "1.0 / {0}",
    np.absolute: "abs({0})", np.fabs: "abs({0})", np.copysign: "math.copysign({0}, {1})",
    np.maximum: "({0} if {0} > {1} or {0} != {0} else {1})",
    np.minimum: "({0} if {0} < {1} or {0} != {0} else {1})",
    np.fmax: "({0} if {0} >= {1} or {1} != {1} else {1})",
    np.fmin: "({0} if {0} <= {1} or {1} != {1} else {1})",
    np.less: "{0} < {1}", np.less_equal: "{0} <= {1}", np.greater: "{0} > {1}",
    np.greater_equal: "{0} >= {1}", np.equal: "{0} == {1}", np.not_equal: "{0} != {1}",
    np.isnan: "{0} != {0}", np.isfinite: "math.isfinite({0})",
    np.sign: "(1.0 if {0} > 0 else -1.0 if {0} < 0 else 0.0 if {0} == 0 else {0})",   # sign(-0.0) is 0.0
    **{uf: f"math.{name}({{0}})" for uf, name in (
        (np.sin, "sin"), (np.cos, "cos"), (np.tan, "tan"), (np.arcsin, "asin"), (np.arccos, "acos"),
        (np.arctan, "atan"), (np.sinh, "sinh"), (np.cosh, "cosh"), (np.tanh, "tanh"),
        (np.arcsinh, "asinh"), (np.arccosh, "acosh"), (np.arctanh, "atanh"), (np.exp, "exp"),
        (np.exp2, "exp2"), (np.expm1, "expm1"), (np.log, "log"), (np.log2, "log2"),
        (np.log10, "log10"), (np.log1p, "log1p"), (np.sqrt, "sqrt"), (np.cbrt, "cbrt"))},
    np.arctan2: "math.atan2({0}, {1})", np.hypot: "math.hypot({0}, {1})",
}
# The operands a ufunc is linear in: jointly (a difference), or each alone given the other (a
# product: MULTILINEAR_IN).
LINEAR_IN = {np.subtract: (0, 1), np.true_divide: (0,), np.negative: (0,), np.conjugate: (0,),
             np.deg2rad: (0,), np.rad2deg: (0,), np.radians: (0,), np.degrees: (0,), np.ldexp: (0,)}
MULTILINEAR_IN = {np.multiply: (0, 1)}
# The ufuncs whose rules hold for complex operands (their gradients are refused otherwise, by
# ad.rules.rule_of). Left out: the ufuncs numpy refuses complex numbers for (arctan2, hypot,
# logaddexp, cbrt, fabs, deg2rad, remainder, copysign...), and maximum, minimum, fmax, fmin,
# which numpy orders lexicographically (real part first), an order with no analytic meaning.
COMPLEX = {np.subtract, np.multiply, np.true_divide, np.power, np.float_power, np.negative,
           np.conjugate, np.absolute, np.sign, np.exp, np.exp2, np.expm1, np.log, np.log2,
           np.log10, np.log1p, np.sqrt, np.square, np.reciprocal, np.sin, np.cos, np.tan,
           np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh,
           np.arctanh}
# The ufuncs of integer (and boolean) operands only: numpy refuses floats. Exact, non-differentiable.
BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift,
           np.bitwise_count)
# The ufuncs whose results on real operands IEEE 754 fixes to the bit (correctly rounded arithmetic
# and sqrt, comparisons, rounding to integers, sign manipulation, min/max, exact remainders):
# every form must give numpy's bits. The others (exp, sin, pow, hypot...) are not correctly
# rounded anywhere; the forms keep within ad.primitives.ULPS of numpy (docs/numerics.md).
CORRECTLY_ROUNDED = {
    np.subtract, np.multiply, np.true_divide, np.negative, np.sqrt, np.square, np.reciprocal,
    np.absolute, np.fabs, np.copysign, np.sign, np.signbit, np.maximum, np.minimum, np.fmax, np.fmin,
    np.floor, np.ceil, np.trunc, np.rint, np.remainder, np.fmod, np.floor_divide, np.divmod, np.modf,
    np.frexp, np.ldexp, np.nextafter, np.spacing, np.heaviside, np.isnan, np.isinf, np.isfinite,
    np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, *BITWISE}

# -- sample inputs (ad.samples) and kinks -------------------------------------------------------
INTEGERS = (-2.0, -1.0, 0.0, 1.0, 2.0)
FRACTION, DIVISOR = In(lo=0.1, hi=0.9), In("y", lo=1.5, hi=2.0)
# quotients in (1.05, 1.93) and (-1.93, -1.05): the divisor's derivative (-trunc or -floor of the
# quotient) is nonzero there, so a wrong divisor term cannot hide behind a zero
ABOVE_DIVISOR, BELOW_MINUS_DIVISOR = In(lo=2.1, hi=2.9), In(lo=-2.9, hi=-2.1)
UNIT = In(lo=-0.9, hi=0.9, domain=(-1.0, 1.0))
BITS, BITS_Y = In(kind="int", lo=-8, hi=8), In("y", kind="int", lo=-8, hi=8)
SHIFTS, BOOL, BOOL_Y = In("y", kind="int", lo=0, hi=6), In(kind="bool"), In("y", kind="bool")


def _v(*values) -> np.ndarray:
    return np.array(values, dtype=float)


def _unary(inp=F, **kw) -> tuple:
    return (Sample((inp,), **kw),)


def _binary(a=F, b=Y, **kw) -> tuple:
    return (Sample((a, b), shapes=BINARY, **kw),)


TIES = ((_v(1.0, 2.0, -1.0, 0.3), _v(1.0, 0.0, -1.0, 0.5)),)
SAMPLES = {
    **dict.fromkeys((np.negative, np.exp, np.exp2, np.expm1, np.sin, np.cos, np.tanh, np.arctan, np.sinh,
                     np.cosh, np.arcsinh, np.square, np.conjugate, np.deg2rad, np.rad2deg, np.radians,
                     np.degrees, np.isnan, np.isinf, np.isfinite), _unary()),
    **dict.fromkeys((np.log, np.log2, np.log10, np.sqrt), _unary(In(lo=0.2, hi=3.0, domain=(0.0, None)))),
    np.log1p: _unary(In(lo=0.2, hi=3.0, domain=(-1.0, None))),
    np.reciprocal: _unary(POSITIVE),
    **dict.fromkeys((np.arcsin, np.arccos, np.arctanh), _unary(UNIT)),
    np.tan: _unary(In(lo=-1.2, hi=1.2)),
    np.arccosh: _unary(In(lo=1.2, hi=3.0, domain=(1.0, None))),
    np.cbrt: _unary(NONZERO),
    **dict.fromkeys((np.absolute, np.fabs), _unary(NONZERO, kinks=((_v(0.0, 1.3, -0.7, 0.0),), (np.float64(0.0),)))),
    np.modf: _unary(In(avoid=INTEGERS)),
    **dict.fromkeys((np.subtract, np.multiply, np.arctan2, np.hypot, np.logaddexp, np.logaddexp2), _binary()),
    np.maximum: _binary(DISTINCT, DISTINCT_Y, kinks=TIES) + (
        Sample((F, literal(0.0)), kinks=((_v(0.0, 0.5, -0.5, 0.0),),)),),          # relu
    **dict.fromkeys((np.minimum, np.fmax, np.fmin), _binary(DISTINCT, DISTINCT_Y, kinks=TIES)),
    np.true_divide: _binary(F, In("y", lo=0.5, hi=2.0)),
    **dict.fromkeys((np.power, np.float_power),
                    _binary(In(lo=0.5, hi=2.0, domain=(0.0, None)), In("y", lo=-1.5, hi=1.5))),
    **dict.fromkeys((np.remainder, np.fmod, np.floor_divide), _binary(FRACTION, DIVISOR)
                    + _binary(ABOVE_DIVISOR, DIVISOR) + _binary(BELOW_MINUS_DIVISOR, DIVISOR)),
    np.copysign: _binary(In(lo=0.5, hi=2.0), In("y", lo=0.5, hi=2.0)),
    np.nextafter: _binary(DISTINCT, DISTINCT_Y),
    # non-differentiable: their rules return NoTangent, checked against zero derivatives
    **dict.fromkeys((np.sign, np.signbit, np.logical_not), _unary(NONZERO)),
    **dict.fromkeys((np.floor, np.ceil, np.trunc), _unary(In(avoid=INTEGERS))),
    np.rint: _unary(In(avoid=(-1.5, -0.5, 0.5, 1.5))),
    np.spacing: _unary(In(lo=1.1, hi=1.9)),
    **dict.fromkeys((np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal),
                    _binary(DISTINCT, DISTINCT_Y)),
    **dict.fromkeys((np.logical_and, np.logical_or, np.logical_xor), _binary(NONZERO, NONZERO_Y)),
    np.heaviside: _binary(NONZERO, Y),
    # finite differences step every operand as a float, which ldexp refuses for its exponent
    np.ldexp: (Sample((F, literal(3))), Sample((F, literal(np.array([1, -2, 0, 3]))), shapes=("vector", "matrix"))),
    np.frexp: _unary(In(lo=1.1, hi=1.9)),    # one binade: the exponent jumps at powers of two
    np.divmod: _binary(FRACTION, DIVISOR) + _binary(ABOVE_DIVISOR, DIVISOR) + _binary(BELOW_MINUS_DIVISOR, DIVISOR),
    # integers (negative ones too: two's complement bits, arithmetic right shifts), and booleans
    # where numpy takes them; one dtype, as nothing is differentiated
    **dict.fromkeys((np.bitwise_and, np.bitwise_or, np.bitwise_xor),
                    _binary(BITS, BITS_Y, dtypes=(F64,)) + _binary(BOOL, BOOL_Y, dtypes=(F64,))),
    np.invert: _unary(BITS, dtypes=(F64,)) + _unary(BOOL, dtypes=(F64,)),
    **dict.fromkeys((np.left_shift, np.right_shift), _binary(BITS, SHIFTS, dtypes=(F64,))),
    np.bitwise_count: _unary(BITS, dtypes=(F64,)),
}


def _difference(a, b):
    return np.subtract(a, b)


def _ratio_to_integer(a, b):
    return to_integer(np.divide(a, b))


# The distance of each element to the nearest kink of the ufuncs that have one.
KINKS = {
    np.absolute: np.absolute, np.fabs: lambda x: x, np.sign: np.absolute, np.heaviside: lambda x, h: x,
    **dict.fromkeys((np.maximum, np.minimum, np.fmax, np.fmin), _difference),
    np.floor: to_integer, np.ceil: to_integer, np.trunc: to_integer, np.rint: lambda x: to_integer(x - 0.5),
    **dict.fromkeys((np.remainder, np.fmod, np.floor_divide, np.divmod), _ratio_to_integer),
    np.copysign: lambda a, b: b,
}


def _ufunc_primitive(uf: np.ufunc) -> Primitive:
    """The primitive of a ufunc (the core's own, for add and positive)."""
    prim = BY_FUNCTION.get(uf) or Primitive(uf.__name__, uf, function=uf, multiple_results=uf.nout > 1,
                                            elementwise=True, linear_in=LINEAR_IN.get(uf, ()),
                                            multilinear_in=MULTILINEAR_IN.get(uf, ()),
                                            spelling=OPERATORS.get(uf), scalar_spelling=SCALAR_SPELLINGS.get(uf),
                                            array_api_spelling=ARRAY_API_SPELLINGS.get(uf),
                                            samples=SAMPLES[uf],
                                            kink=KINKS.get(uf), complex_rule=uf in COMPLEX,
                                            correctly_rounded=uf in CORRECTLY_ROUNDED)
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
            np.spacing, np.modf, np.radians, np.degrees, np.ldexp, np.frexp, np.divmod, *BITWISE):
    _ufunc_primitive(_uf)
# named for the rewrite rules of ad.passes
subtract_p, multiply_p, divide_p, power_p, negative_p = (
    UFUNCS[uf] for uf in (np.subtract, np.multiply, np.true_divide, np.power, np.negative))

# -- the derivative table ----------------------------------------------------------------------
# partials take (*operands, y); 1 / -1 mean identity / negation; None means "no gradient".
LN2, LN10 = float(np.log(2.0)), float(np.log(10.0))   # Python floats: no float32 -> float64 upcast


def _sqrt_z2_minus_1(x):
    """sqrt(x*x - 1) as arccosh's derivative needs it: for complex z, sqrt(z-1) sqrt(z+1), the
    branch of numpy's principal arccosh (sqrt(z*z - 1) has the opposite sign where Re z < 0)."""
    return np.sqrt(x - 1) * np.sqrt(x + 1) if np.iscomplexobj(x) else np.sqrt(x * x - 1)


scalar_rule(np.subtract, 1, -1)
scalar_rule(np.negative, -1)
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
scalar_rule(np.arccosh, lambda x, y: 1 / _sqrt_z2_minus_1(x))
scalar_rule(np.arctanh, lambda x, y: 1 / (1 - x * x))
scalar_rule(np.sqrt, lambda x, y: 0.5 / y)
scalar_rule(np.cbrt, lambda x, y: 1 / (3 * y * y))
scalar_rule(np.square, lambda x, y: 2 * x)
scalar_rule(np.reciprocal, lambda x, y: -y * y)
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
non_differentiable(np.floor, np.ceil, np.rint, np.trunc, np.floor_divide, np.heaviside,
                   np.signbit, np.isnan, np.isinf, np.isfinite, np.less, np.less_equal,
                   np.greater, np.greater_equal, np.equal, np.not_equal, np.logical_and,
                   np.logical_or, np.logical_xor, np.logical_not, np.spacing, *BITWISE)
# nextafter(x, y) moves x by one ulp: its value follows x, so its derivative is that of x.
scalar_rule(np.nextafter, 1, None)


@rrule(np.conjugate)
def _conjugate_rule(z):
    """conj is linear but not holomorphic: d conj(z)/d conj(z) = 1, so g -> conj(g)."""
    return np.conjugate(z), lambda dy: (np.conjugate(dy) if np.iscomplexobj(z) else dy,)


def _nonzero(r):
    """``r`` with its zeros replaced by 1: a divisor where the numerator vanishes with it."""
    return np.where(r == 0, 1, r)


@rrule(np.absolute)
def _absolute_rule(x):
    """|x|: sign(x) for real x, and for complex z (not holomorphic) g -> g conj(z) / |z|. At 0
    both give 0, a subgradient."""
    y = np.absolute(x)
    if np.iscomplexobj(x):
        return y, lambda dy: (thunk(lambda: dy * (np.conjugate(x) / _nonzero(y))),)
    return y, lambda dy: (thunk(lambda: dy * np.sign(x)),)


@rrule(np.sign)
def _sign_rule(x):
    """sign is piecewise constant for real x; for complex z it is s = z/|z|, whose Wirtinger
    derivatives 1/(2|z|) and -s^2/(2|z|) give g -> i conj(s) Im(g s) / |z| (0 at z = 0)."""
    y = np.sign(x)
    if not np.iscomplexobj(x):
        return y, lambda dy: (NoTangent(),)
    return y, lambda dy: (thunk(lambda: 1j * np.conjugate(y) * np.imag(dy * y) / _nonzero(np.absolute(x))),)


@rrule(np.multiply)
def _multiply_rule(a, b):
    # thunks: the cotangent of an operand that needs none (a constant) is never even traced
    return a * b, lambda dy: (thunk(lambda: dy * b), thunk(lambda: dy * a))


@rrule(np.divide)
def _divide_rule(a, b):
    y = a / b
    return y, lambda dy: (thunk(lambda: dy / b), thunk(lambda: -(dy / b) * y))   # CSE shares dy / b


def _power_slope(x, p):
    """d(x**p)/dx; 0 where p is 0, also at x = 0 where p * x**(p-1) would be 0 * inf."""
    if isinstance(p, (int, float)):                 # a constant exponent: decided here, once
        return 0 * x if p == 0 else p * x ** (p - 1)
    return np.where(p == 0, 0, p * x ** (p - 1))


def _log_base(x, y):
    """log(x) for d(x**p)/dp = y log(x). A real power is defined for x > 0 only, elsewhere 0
    (x**p is real only for integer p there); a complex one is exp(p log(x)) with numpy's
    principal log, a real negative base included ((-2.0) ** 1j). 0 at x = 0, where y is 0."""
    if np.iscomplexobj(y):
        return np.log(np.where(x == 0, 1, x).astype(y.dtype))
    return np.log(np.where(x > 0, x, 1))


@rrule(np.power)
def _power_rule(x, p):
    y = x ** p

    def pullback(dy):
        return thunk(lambda: dy * _power_slope(x, p)), thunk(lambda: dy * y * _log_base(x, y))
    return y, pullback


@rrule(np.float_power)
def _float_power_rule(x, p):
    y = np.float_power(x, p)

    def pullback(dy):
        return (thunk(lambda: dy * p * np.float_power(x, p - 1)),
                thunk(lambda: dy * y * _log_base(x, y)))
    return y, pullback


def _select_rule(op, chose_a):
    """max/min-style rules: the gradient goes to the selected operand, split evenly on ties.
    ``dy`` times a share (1, 1/2 or 0), as JAX's rule: a select of ``dy`` on a mask that is
    half true is ~5x slower in numpy (branch mispredictions) than the product."""
    def rule(a, b):
        y = op(a, b)

        def pullback(dy):
            def da():
                half = np.asarray(0.5, np.result_type(dy))                   # keeps dy's dtype
                chose = chose_a(a, b, y)             # a Python bool when a and b are Python numbers
                if isinstance(chose, bool):
                    chose = half.dtype.type(chose)
                # a mask of choices: where promotes it to half's dtype in its one pass (no astype)
                return dy * np.where(a == b, half, chose)
            return thunk(da), thunk(lambda: dy - da())     # CSE merges the two da()
        return y, pullback
    return rule


# Where ``a`` is the operand selected (not on a tie): maximum and minimum compare (a NaN on
# either side selects neither: y is that NaN); fmax and fmin skip a NaN, so they ask y.
_CHOSE_A = {np.maximum: lambda a, b, y: a >= b, np.minimum: lambda a, b, y: a <= b,
            np.fmax: lambda a, b, y: a == y, np.fmin: lambda a, b, y: a == y}
for _uf, _chose_a in _CHOSE_A.items():
    rrule(_uf)(_select_rule(_uf, _chose_a))


@rrule(np.modf)
def _modf_rule(x):
    frac, whole = np.modf(x)
    return (frac, whole), lambda dys: (dys[0],)


scalar_rule(np.ldexp, lambda x, e, y: np.ldexp(np.ones_like(x), e), None)   # x * 2**e


@rrule(np.frexp)
def _frexp_rule(x):
    mantissa, exponent = np.frexp(x)     # x = mantissa * 2**exponent, the exponent piecewise constant
    return (mantissa, exponent), lambda dys: (np.ldexp(dys[0], -exponent),)


@rrule(np.divmod)
def _divmod_rule(a, b):
    quotient, rest = np.divmod(a, b)     # rest = a - b * quotient, the quotient piecewise constant
    return (quotient, rest), lambda dys: (dys[1], -dys[1] * quotient)


# -- where, clip -------------------------------------------------------------------------

where_p = Primitive("where", np.where, function=np.where, elementwise=True, linear_in=(1, 2),
                    scalar_spelling="({1} if {0} else {2})", complex_rule=True, correctly_rounded=True,
                    samples=(Sample((In(kind="bool"), F, Y), shapes=BINARY),))


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


def _clip_kink(x, lo, hi):
    return np.minimum(np.abs(np.subtract(x, lo)), np.abs(np.subtract(x, hi)))


clip_p = Primitive("clip", _clip, function=np.clip, elementwise=True, kink=_clip_kink, samples=(
    Sample((In(avoid=(-0.5, 0.5)), literal(-0.5), literal(0.5)), kinks=((_v(-0.5, 0.5, 0.0, 0.9),),)),
    Sample((DISTINCT, In(lo=-1.5, hi=-0.3, apart=True), In(lo=0.3, hi=1.5, apart=True)),
           kinks=((_v(-0.5, 0.5, 0.0), _v(-0.5, -1.0, -1.0), _v(1.0, 0.5, 1.0)),))))


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
        # numpy's clip is minimum(maximum(x, lo), hi): where lo > hi every element is hi
        return (thunk(lambda: np.where((x >= lo) & (x <= hi), dy, 0)),
                thunk(lambda: np.where((x < lo) & (lo <= hi), dy, 0)),
                thunk(lambda: np.where((x > hi) | (lo > hi), dy, 0)))
    return y, pullback


@implements(np.sinc)
def _sinc(x):
    t = np.pi * np.where(x == 0, 1.0e-20, x)
    return np.sin(t) / t
