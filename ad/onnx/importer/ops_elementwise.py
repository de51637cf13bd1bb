"""Elementwise ops: numpy's functions and ufuncs, the variadic ops, and the activations."""
from __future__ import annotations

import functools

import numpy as np

from ... import nn
from .nodes import const, declare, op


# -- elementwise --------------------------------------------------------------------------------

def _unary(f):
    return lambda n, x: f(x)


def _broadcast(n, *xs):
    """The operands, once their broadcast result is known to fit the size limit (two small
    operands can broadcast to a huge one: (N, 1) + (1, N))."""
    n.check_size(np.broadcast_shapes(*map(np.shape, xs)), "output", np.result_type(*xs))
    return xs


def _binary(f):
    return lambda n, a, b: f(*_broadcast(n, a, b))


def _same_dtype(f):
    """An op whose output keeps the first input's dtype (numpy would promote)."""
    def run(n, a, *rest):
        out = f(a, *rest)
        return out if np.result_type(out) == np.result_type(a) else out.astype(np.result_type(a))
    return run


def softsign(x):
    """ONNX's Softsign, also an activation of the recurrent layers."""
    return x / (1 + np.abs(x))


declare({"Abs": np.abs, "Neg": np.negative, "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt,
         "Tanh": np.tanh, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin,
         "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh,
         "Acosh": np.arccosh, "Atanh": np.arctanh, "Floor": np.floor, "Ceil": np.ceil,
         "Reciprocal": np.reciprocal, "Sign": np.sign, "Round": np.round, "Erf": nn.erf,
         "Sigmoid": nn.sigmoid, "Relu": nn.relu, "Softplus": nn.softplus, "Softsign": softsign,
         "Not": np.logical_not, "IsNaN": np.isnan, "BitwiseNot": np.invert}, _unary)
declare({"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "And": np.logical_and,
         "Or": np.logical_or, "Xor": np.logical_xor, "Equal": np.equal, "Less": np.less,
         "Greater": np.greater, "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal,
         "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor},
        _binary)
declare({"Pow": np.power}, _same_dtype)


@op("Div")
def _div(n, a, b):
    if np.issubdtype(np.result_type(a), np.integer):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a))
    return np.divide(a, b)


@op("BitShift", since=11)
def _bit_shift(n, x, s):
    """Of unsigned integers (ONNX's types): numpy's shifts, a shift of the width or more giving 0."""
    shifts = {"LEFT": np.left_shift, "RIGHT": np.right_shift}
    direction = n.attr("direction")
    if direction not in shifts:
        raise n.error(f"direction={direction!r} (LEFT or RIGHT)")
    return shifts[direction](*_broadcast(n, x, s))


@op("Mod")
def _mod(n, a, b):
    return np.fmod(a, b) if n.attr("fmod", 0) else np.mod(a, b)


@op("IsInf")
def _isinf(n, x):
    y = np.isinf(x)
    if not n.attr("detect_positive", 1):
        y = y & (x < 0)
    if not n.attr("detect_negative", 1):
        y = y & (x > 0)
    return y


@op("Where")
def _where(n, c, x, y):
    return np.where(*_broadcast(n, c, x, y))


def _variadic(f):
    return lambda n, *xs: functools.reduce(f, _broadcast(n, *xs))


declare({"Min": np.minimum, "Max": np.maximum, "Sum": np.add}, _variadic)


@op("Mean")
def _mean(n, *xs):
    return functools.reduce(np.add, xs) / np.asarray(len(xs), np.result_type(xs[0]))


# -- activations --------------------------------------------------------------------------------

@op("LeakyRelu")
def _leaky_relu(n, x):
    return np.where(x >= 0, x, const(n.attr("alpha", 0.01), x) * x)


@op("PRelu")
def _prelu(n, x, slope):
    return np.where(x >= 0, x, slope * x)


@op("Elu")
def _elu(n, x):
    return nn.elu(x, const(n.attr("alpha", 1.0), x))


@op("Selu")
def _selu(n, x):
    alpha = const(n.attr("alpha", 1.67326319217681884765625), x)
    return const(n.attr("gamma", 1.05070102214813232421875), x) * nn.elu(x, alpha)


@op("Celu")
def _celu(n, x):
    return nn.celu(x, const(n.attr("alpha", 1.0), x))


@op("ThresholdedRelu")
def _thresholded_relu(n, x):
    return np.where(x > const(n.attr("alpha", 1.0), x), x, const(0, x))


@op("Gelu")
def _gelu(n, x):
    return nn.gelu(x, approximate=n.attr("approximate", "none"))


@op("HardSigmoid")
def _hard_sigmoid(n, x):
    a, b = const(n.attr("alpha", 0.2), x), const(n.attr("beta", 0.5), x)
    return np.clip(a * x + b, const(0, x), const(1, x))


@op("HardSwish")
def _hard_swish(n, x):
    return x * np.clip(x / const(6, x) + const(0.5, x), const(0, x), const(1, x))


@op("Swish", since=24)
def _swish(n, x):
    return x * nn.sigmoid(const(n.attr("alpha", 1.0), x) * x)


@op("SwiGLU", since=28)
def _swiglu(n, a, b):
    return a * nn.sigmoid(const(n.attr("alpha", 1.0), a) * a) * b


@op("Mish")
def _mish(n, x):
    return x * np.tanh(nn.softplus(x))


@op("Clip")
def _clip(n, x, lo=None, hi=None):
    if n.opset < 11:
        lo, hi = n.attr("min", -np.inf), n.attr("max", np.inf)
        lo, hi = const(lo, x), const(hi, x)
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x
