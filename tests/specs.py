"""The rule spec table: one line per registered primitive, with how to call it from plain numpy
and the domain of each input. ``tests/test_rules.py`` checks every line against finite
differences and across the closure, lifted and compiled forms; ``test_every_rule_has_a_spec``
fails when a primitive is registered without a line here.

Arg(shape, lo, hi, kind): ``shape`` is a key into SHAPES (so one spec runs at several shapes),
or a literal tuple; lo/hi bound the domain (kept away from kinks and poles); kind "int"/"bool"
makes non-differentiable operands.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ad.checks.samples import SHAPES as CHECKER_SHAPES


@dataclass(frozen=True)
class Arg:
    shape: object = "x"
    lo: float | None = None
    hi: float | None = None
    kind: str = "float"


@dataclass(frozen=True)
class Spec:
    prim: str
    fn: Callable
    args: tuple
    shapes: tuple = ("scalar", "vector", "matrix")   # which shape sets to run
    apart: bool = False       # kinks where values tie: keep elements (or the two args) apart


# Shape sets (name -> the shape each Arg.shape key takes) are the checker's.
SHAPES = CHECKER_SHAPES
ELEMENTWISE = ("scalar", "vector", "matrix")
BINARY = ("scalar", "vector", "matrix", "broadcast", "broadcast2")
ONE = ("matrix",)

F = Arg()
Y = Arg("y")
POS = Arg(lo=0.2, hi=3.0)
UNIT = Arg(lo=-0.9, hi=0.9)


def unary(name, fn=None, arg=F):
    return Spec(name, fn or getattr(np, name), (arg,), ELEMENTWISE)


def binary(name, fn=None, a=F, b=Y, apart=False):
    return Spec(name, fn or getattr(np, name), (a, b), BINARY, apart)


def nondiff(name, fn, *args, shapes=ELEMENTWISE, apart=False):
    return Spec(name, fn, args or (F,), shapes, apart)


SPECS = [
    # elementwise, unary
    *(unary(n) for n in ("negative", "positive", "exp", "exp2", "expm1", "sin", "cos", "tanh",
                         "arctan", "sinh", "cosh", "arcsinh", "cbrt", "square", "conjugate",
                         "deg2rad", "rad2deg", "radians", "degrees")),
    *(unary(n, arg=POS) for n in ("log", "log2", "log10", "log1p", "sqrt", "reciprocal")),
    unary("tan", arg=Arg(lo=-1.2, hi=1.2)),
    unary("arcsin", arg=UNIT), unary("arccos", arg=UNIT), unary("arctanh", arg=UNIT),
    unary("arccosh", arg=Arg(lo=1.2, hi=3.0)),
    unary("absolute", arg=Arg(lo=0.1, hi=2.0)), unary("fabs", arg=Arg(lo=-2.0, hi=-0.1)),
    Spec("modf", lambda x: np.modf(x)[0] * 2 + np.modf(x)[1], (Arg(lo=0.1, hi=0.9),), ELEMENTWISE),
    # elementwise, binary
    *(binary(n) for n in ("add", "subtract", "multiply", "arctan2", "hypot", "logaddexp",
                          "logaddexp2")),
    *(binary(n, apart=True) for n in ("maximum", "minimum", "fmax", "fmin")),
    binary("divide", b=Arg("y", lo=0.5, hi=2.0)),
    binary("power", a=Arg(lo=0.5, hi=2.0), b=Arg("y", lo=-1.5, hi=1.5)),
    binary("float_power", a=Arg(lo=0.5, hi=2.0), b=Arg("y", lo=-1.5, hi=1.5)),
    binary("remainder", a=Arg(lo=0.1, hi=0.9), b=Arg("y", lo=1.5, hi=2.0)),
    binary("fmod", a=Arg(lo=0.1, hi=0.9), b=Arg("y", lo=1.5, hi=2.0)),
    binary("copysign", a=Arg(lo=0.5, hi=2.0), b=Arg("y", lo=0.5, hi=2.0)),
    Spec("where", lambda x, y: np.where(x > 0, x, y * 2), (F, Y), BINARY),
    Spec("clip", lambda x: np.clip(x, -0.5, 0.5), (F,), ELEMENTWISE, apart=True),
    Spec("astype", lambda x: x.astype(np.longdouble).astype(np.float64) * 2, (F,), ELEMENTWISE),
    # non-differentiable: their outputs carry no gradient, checked through a differentiable use
    *(nondiff(n, lambda x, _f=getattr(np, n): x * _f(x)) for n in (
        "sign", "floor", "ceil", "rint", "trunc", "signbit", "isnan", "isinf", "isfinite",
        "logical_not", "spacing")),
    *(nondiff(n, lambda x, y, _f=getattr(np, n): x * _f(x, y), F, Y) for n in (
        "less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
        "logical_or", "logical_xor", "heaviside")),
    nondiff("floor_divide", lambda x, y: x * np.floor_divide(x, y), Arg(lo=0.1, hi=0.9), Arg("y", lo=1.5, hi=2.0)),
    binary("nextafter"),
    nondiff("argmax", lambda x: x * np.argmax(x), shapes=("vector", "matrix"), apart=True),
    nondiff("argmin", lambda x: x * np.argmin(x), shapes=("vector", "matrix"), apart=True),
    nondiff("any", lambda x: x * np.any(x > 0)),
    nondiff("all", lambda x: x * np.all(x > -1)),
    nondiff("argsort", lambda x: x * np.argsort(x), shapes=("vector", "matrix"), apart=True),
    nondiff("nonzero", lambda x: x[np.nonzero(x > 0)], shapes=("vector", "matrix")),
    # reductions and scans
    Spec("sum", lambda x: np.sum(x, axis=-1) if np.ndim(x) else np.sum(x), (F,), ELEMENTWISE),
    Spec("mean", lambda x: np.mean(x, axis=0, keepdims=True) if np.ndim(x) else np.mean(x), (F,), ELEMENTWISE),
    Spec("prod", lambda x: np.prod(x, axis=-1) if np.ndim(x) else np.prod(x), (Arg(lo=-1.5, hi=1.5),), ELEMENTWISE),
    Spec("max", lambda x: np.max(x, axis=0), (F,), ("vector", "matrix"), apart=True),
    Spec("min", lambda x: np.min(x), (F,), ("vector", "matrix"), apart=True),
    Spec("cumsum", lambda x: np.cumsum(x, axis=-1), (F,), ("vector", "matrix")),
    Spec("cumprod", lambda x: np.cumprod(x, axis=0), (POS,), ("vector", "matrix")),
    Spec("sum_to", lambda x, y: x + y, (F, Y), ("broadcast", "broadcast2")),
    # shapes
    Spec("reshape", lambda x: np.reshape(x, (2, 6)), (F,), ONE),
    Spec("transpose", lambda x: np.transpose(x), (F,), ONE),
    Spec("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)), (F,), ONE),
    Spec("concatenate", lambda x, y: np.concatenate([x, y, x], axis=-1), (F, Y), ("vector", "matrix")),
    Spec("roll", lambda x: np.roll(x, 2, axis=-1), (F,), ("vector", "matrix")),
    # indexing
    Spec("getitem", lambda x: x[1:, ::2] * x[np.array([0, 2, 0])][:, None, :2].sum(0), (F,), ONE),
    Spec("setitem", lambda x, y: _setitem(x, y), (F, Y), ONE),
    Spec("index_add", lambda x, y: _add_at(x, y), (F, Y), ONE),
    # contractions
    Spec("matmul", lambda a, b: a @ b, (Arg((3, 4)), Arg((4, 2))), ONE),
    Spec("einsum", lambda a, b: np.einsum("ij,kj->ik", a, b), (Arg((3, 4)), Arg((2, 4))), ONE),
    # creation
    Spec("full", lambda x: x + np.ones(np.shape(x), like=x), (F,), ONE),
    Spec("array", lambda x: x * np.array([1.0, 2.0, 3.0, 4.0], like=x), (F,), ONE),
]


def _setitem(x, y):
    z = x * 1.0
    z[1, :] = y[0] * 2
    z[:, 1] = 3.0
    return z


def _add_at(x, y):
    z = x * 1.0
    np.add.at(z, (np.array([0, 0, 2]),), y[:3] * 2)
    return z


# Specs for compositions that have no primitive of their own but must differentiate correctly
# (run by the same tests; they exercise the decompositions in ad.lib).
COMPOSITIONS = [
    Spec("np.var", lambda x: np.var(x, axis=0, ddof=1), (F,), ONE),
    Spec("np.std", lambda x: np.std(x), (F,), ONE),
    Spec("np.average", lambda x: np.average(x, axis=0, weights=np.array([1.0, 2.0, 3.0])), (F,), ONE),
    Spec("np.ptp", lambda x: np.ptp(x, axis=1), (F,), ONE, apart=True),
    Spec("np.stack", lambda x, y: np.stack([x, y], axis=1), (F, Y), ONE),
    Spec("np.hstack", lambda x, y: np.hstack([x, y]), (F, Y), ONE),
    Spec("np.vstack", lambda x, y: np.vstack([x, y]), (F, Y), ONE),
    Spec("np.split", lambda x: np.split(x, 2, axis=1)[1] * 2, (F,), ONE),
    Spec("np.flip", lambda x: np.flip(x, axis=1), (F,), ONE),
    Spec("np.rot90", lambda x: np.rot90(x), (F,), ONE),
    Spec("np.tile", lambda x: np.tile(x, (2, 1)), (F,), ONE),
    Spec("np.repeat", lambda x: np.repeat(x, 2, axis=0), (F,), ONE),
    Spec("np.pad", lambda x: np.pad(x, ((1, 0), (0, 2))), (F,), ONE),
    Spec("np.pad reflect", lambda x: np.pad(x, 2, mode="reflect"), (F,), ONE),
    Spec("np.diagonal", lambda x: np.diagonal(x, 1), (F,), ONE),
    Spec("np.trace", lambda x: np.trace(x), (F,), ONE),
    Spec("np.diag", lambda x: np.diag(x[0]), (F,), ONE),
    Spec("np.triu", lambda x: np.triu(x), (F,), ONE),
    Spec("np.tril", lambda x: np.tril(x, -1), (F,), ONE),
    Spec("np.take", lambda x: np.take(x, np.array([2, 0, 2]), axis=1), (F,), ONE),
    Spec("np.take_along_axis", lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1), (F,), ONE, apart=True),
    Spec("np.sort", lambda x: np.sort(x, axis=0), (F,), ONE, apart=True),
    Spec("np.dot", lambda a, b: np.dot(a, b), (Arg((3, 4)), Arg((4,))), ONE),
    Spec("np.tensordot", lambda a, b: np.tensordot(a, b, axes=([1], [0])), (Arg((3, 4)), Arg((4, 2))), ONE),
    Spec("np.inner", lambda a, b: np.inner(a, b), (Arg((3, 4)), Arg((2, 4))), ONE),
    Spec("np.outer", lambda a, b: np.outer(a, b), (Arg((3,)), Arg((4,))), ONE),
    Spec("np.vdot", lambda a, b: np.vdot(a, b), (Arg((3, 4)), Arg((3, 4))), ONE),
    Spec("np.kron", lambda a, b: np.kron(a, b), (Arg((2, 3)), Arg((2, 2))), ONE),
    Spec("np.einsum ellipsis", lambda a, b: np.einsum("...ij,...jk", a, b), (Arg((2, 3, 4)), Arg((2, 4, 2))), ONE),
    Spec("np.einsum reduce", lambda a: np.einsum("ijk->j", a), (Arg((2, 3, 4)),), ONE),
    Spec("matmul batched", lambda a, b: a @ b, (Arg((2, 3, 4)), Arg((4, 2))), ONE),
    Spec("matmul vector", lambda a, b: a @ b, (Arg((4,)), Arg((2, 4, 3))), ONE),
    Spec("np.sinc", lambda x: np.sinc(x), (F,), ELEMENTWISE),
    Spec("np.squeeze", lambda x: np.squeeze(x[:, None]), (F,), ONE),
    Spec("np.moveaxis", lambda x: np.moveaxis(x[None], 0, -1), (F,), ONE),
    Spec("np.select", lambda x: np.select([x < -0.5, x > 0.5], [x * 2, x ** 2], x), (F,), ONE),
    Spec("np.cumsum flat", lambda x: np.cumsum(x), (F,), ONE),
    Spec("x.T @ x", lambda x: x.T @ x, (F,), ONE),
    Spec("iteration", lambda x: sum(row * i for i, row in enumerate(x)), (F,), ONE),
]


def make_inputs(spec: Spec, shape_set: str, rng: np.random.Generator, dtype=np.float64):
    """Random inputs inside each argument's domain (and away from ties when ``spec.apart``)."""
    for _ in range(1000):
        xs = _draw(spec, shape_set, rng, dtype)
        if not spec.apart or _gap(xs) > 0.05:
            return xs
    raise RuntimeError(f"could not draw inputs apart for {spec.prim}")


def _draw(spec, shape_set, rng, dtype):
    shapes = SHAPES[shape_set]
    out = []
    for a in spec.args:
        shape = shapes[a.shape] if isinstance(a.shape, str) else a.shape
        lo = -2.0 if a.lo is None else a.lo
        hi = 2.0 if a.hi is None else a.hi
        x = rng.uniform(lo, hi, size=shape)
        out.append(np.asarray(x, dtype=dtype) if shape else dtype(x))
    return out


def _gap(xs) -> float:
    """The smallest distance between two values that could tie (pairs within one input, or
    between the two inputs of a binary op), and from the clip bounds +-0.5."""
    if len(xs) == 2:
        return float(np.min(np.abs(np.subtract(xs[0], xs[1]))))
    flat = np.sort(np.append(np.ravel(xs[0]), [-0.5, 0.5]))
    return float(np.min(np.diff(flat))) if flat.size > 1 else np.inf


def domains(spec: Spec):
    return [(a.lo, a.hi) for a in spec.args]


from specs_linalg import LINALG_COMPOSITIONS, LINALG_SPECS  # noqa: E402  (the Spec, Arg names are defined above)

SPECS += LINALG_SPECS
COMPOSITIONS += LINALG_COMPOSITIONS
