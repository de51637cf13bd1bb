"""Data about the rule library the checker needs, declared once: sample inputs for every
library primitive (called through ``Primitive.bind`` with declared params), the mathematical
domain of each operand (finite-difference steps stay inside it), explicit kink points (where a
subgradient applies), and each kinked primitive's distance to its kink.

``In(shape, lo, hi, kind)``: ``shape`` is a key into a shape set of SHAPES or a literal shape;
values are drawn uniformly in [lo, hi) away from the ``avoid`` points, then given the named
``structure`` (well-conditioned, symmetric positive definite...); ``kind`` "int"/"bool" draws
non-differentiable operands, "literal" bakes ``value`` into the call (a constant operand).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)


@dataclass(frozen=True)
class In:
    shape: object = "x"
    lo: float = -2.0
    hi: float = 2.0
    kind: str = "float"
    value: object = None
    avoid: tuple = ()
    structure: str | None = None


def _eye(x):
    return np.eye(x.shape[-2], x.shape[-1], dtype=x.dtype)


def _steps(x):
    """A rectangular diagonal 3, 2, 1, ... (separated singular values)."""
    k = min(x.shape[-2:])
    d = np.zeros(x.shape[-2:], dtype=x.dtype)
    d[np.arange(k), np.arange(k)] = np.arange(k, 0, -1)
    return d


# Matrix structures some primitives need (well-posed inverses, separated spectra).
STRUCTURES = {
    "well": lambda x: x + 3 * _eye(x),
    "spd": lambda x: x @ np.swapaxes(x, -1, -2) + 3 * _eye(x),
    "symmetric": lambda x: (x + np.swapaxes(x, -1, -2)) / 2 + 2 * np.diag(np.arange(x.shape[-1])).astype(x.dtype),
    "spread": lambda x: 0.3 * x + _steps(x),
    "sorted": lambda x: np.sort(x, axis=-1),
}


@dataclass(frozen=True)
class Sample:
    prim: str
    inputs: tuple
    params: dict = field(default_factory=dict)
    shapes: tuple = ("scalar", "vector", "matrix")
    dtypes: tuple = (F64, F32)       # the first at every shape set, the others at the last one
    apart: bool = False              # keep float values 0.05 apart (ties are kinks)
    kinks: tuple = ()                # explicit points: one tuple of values per non-literal input
    call: Callable | None = None     # for primitives not called through bind (creation)


SHAPES = {
    "scalar": {"x": (), "y": ()},
    "vector": {"x": (4,), "y": (4,)},
    "matrix": {"x": (3, 4), "y": (3, 4)},
    "broadcast": {"x": (3, 4), "y": (4,)},
    "broadcast2": {"x": (3, 1), "y": (1, 4)},
    "mm": {"x": (3, 4), "y": (4, 2)},
    "mv": {"x": (3, 4), "y": (4,)},
    "vm": {"x": (4,), "y": (4, 3)},
    "vv": {"x": (4,), "y": (4,)},
    "bmm": {"x": (2, 3, 4), "y": (4, 2)},
}
UNARY = ("scalar", "vector", "matrix")
BINARY = UNARY + ("broadcast", "broadcast2")
ARRAYS = ("vector", "matrix")
MATRIX = ("matrix",)

F, Y = In(), In("y")
NZ, NZY = In(avoid=(0.0,)), In("y", avoid=(0.0,))
POS, UNIT = In(lo=0.2, hi=3.0), In(lo=-0.9, hi=0.9)
FRACTION, DIVISOR = In(lo=0.1, hi=0.9), In("y", lo=1.5, hi=2.0)
BASE, EXPONENT = In(lo=0.5, hi=2.0), In("y", lo=-1.5, hi=1.5)
M34 = In((3, 4))
INTEGERS = (-2.0, -1.0, 0.0, 1.0, 2.0)


def literal(value) -> In:
    return In(kind="literal", value=value)


def index(values) -> In:
    return In((len(values),), kind="int", value=np.array(values))


def _v(*values) -> np.ndarray:
    return np.array(values, dtype=float)


def _unary(names, inp=F, **kw):
    return [Sample(n, (inp,), **kw) for n in names]


def _binary(names, a=F, b=Y, **kw):
    return [Sample(n, (a, b), shapes=BINARY, **kw) for n in names]


def _reduction(name, inp=F, apart=False, kinks=()):
    return [Sample(name, (inp,), {"axis": None, "keepdims": False}, ARRAYS if apart else UNARY, apart=apart,
                   kinks=kinks),
            Sample(name, (inp,), {"axis": (0,), "keepdims": True}, MATRIX, apart=apart)]


ZERO_KINK = ((_v(0.0, 1.3, -0.7, 0.0),), (np.float64(0.0),))
TIES = ((_v(1.0, 2.0, -1.0, 0.3), _v(1.0, 0.0, -1.0, 0.5)),)

SAMPLES = [
    # elementwise, unary
    *_unary(["negative", "positive", "exp", "exp2", "expm1", "sin", "cos", "tanh", "arctan", "sinh",
             "cosh", "arcsinh", "square", "conjugate", "deg2rad", "rad2deg", "radians", "degrees"]),
    *_unary(["log", "log2", "log10", "log1p", "sqrt", "reciprocal"], POS),
    *_unary(["arcsin", "arccos", "arctanh"], UNIT),
    Sample("tan", (In(lo=-1.2, hi=1.2),)),
    Sample("arccosh", (In(lo=1.2, hi=3.0),)),
    Sample("cbrt", (NZ,)),
    *_unary(["absolute", "fabs"], NZ, kinks=ZERO_KINK),
    Sample("modf", (In(avoid=INTEGERS),)),
    # elementwise, binary
    *_binary(["add", "subtract", "multiply", "arctan2", "hypot", "logaddexp", "logaddexp2"]),
    *_binary(["maximum", "minimum", "fmax", "fmin"], apart=True, kinks=TIES),
    Sample("maximum", (F, literal(0.0)), kinks=((_v(0.0, 0.5, -0.5, 0.0),),)),   # relu
    *_binary(["divide"], F, In("y", lo=0.5, hi=2.0)),
    *_binary(["power", "float_power"], BASE, EXPONENT),
    *_binary(["remainder", "fmod"], FRACTION, DIVISOR),
    *_binary(["copysign"], BASE, In("y", lo=0.5, hi=2.0)),
    *_binary(["nextafter"], apart=True),
    Sample("where", (In(kind="bool"), F, Y), shapes=BINARY),
    Sample("clip", (In(avoid=(-0.5, 0.5)), literal(-0.5), literal(0.5)), kinks=((_v(-0.5, 0.5, 0.0, 0.9),),)),
    Sample("clip", (F, In(lo=-1.5, hi=-0.3), In(lo=0.3, hi=1.5)), apart=True,
           kinks=((_v(-0.5, 0.5, 0.0), _v(-0.5, -1.0, -1.0), _v(1.0, 0.5, 1.0)),)),
    Sample("astype", (F,), {"dtype": F32}, dtypes=(F64,)),
    Sample("astype", (F,), {"dtype": F64}, dtypes=(F32,)),
    # non-differentiable: their rules return NoTangent, checked against zero derivatives
    *_unary(["sign", "signbit", "logical_not"], NZ),
    *_unary(["floor", "ceil", "trunc"], In(avoid=INTEGERS)),
    Sample("rint", (In(avoid=(-1.5, -0.5, 0.5, 1.5)),)),
    *_unary(["isnan", "isinf", "isfinite"]),
    Sample("spacing", (In(lo=1.1, hi=1.9),)),
    *_binary(["less", "less_equal", "greater", "greater_equal", "equal", "not_equal"], apart=True),
    *_binary(["logical_and", "logical_or", "logical_xor"], NZ, NZY),
    *_binary(["heaviside"], NZ, Y),
    *_binary(["floor_divide"], FRACTION, DIVISOR),
    Sample("argmax", (F,), {"axis": None, "keepdims": False}, ARRAYS, apart=True),
    Sample("argmin", (F,), {"axis": None, "keepdims": False}, ARRAYS, apart=True),
    Sample("any", (NZ,), {"axis": None, "keepdims": False}),
    Sample("all", (NZ,), {"axis": None, "keepdims": False}),
    Sample("argsort", (F,), {"axis": 0}, ARRAYS, apart=True),
    Sample("nonzero", (NZ,), shapes=ARRAYS),
    # reductions and scans
    *_reduction("sum"), *_reduction("mean"),
    *_reduction("prod", In(lo=-1.5, hi=1.5), kinks=((_v(0.0, 1.5, -0.5, 2.0),),)),
    *_reduction("max", apart=True, kinks=((_v(1.0, 1.0, 0.3, -2.0),),)),
    *_reduction("min", apart=True, kinks=((_v(-1.0, 0.5, -1.0, 2.0),),)),
    Sample("cumsum", (F,), {"axis": 0}, ARRAYS),
    Sample("cumprod", (POS,), {"axis": 0}, ARRAYS),
    Sample("sum_to", (M34,), {"shape": (4,)}, MATRIX),
    Sample("sum_to", (M34,), {"shape": (3, 1)}, MATRIX),
    # shapes
    Sample("reshape", (M34,), {"shape": (2, 6)}, MATRIX),
    Sample("transpose", (M34,), {"axes": (1, 0)}, MATRIX),
    Sample("broadcast_to", (In((3, 1)),), {"shape": (2, 3, 4)}, MATRIX),
    Sample("concatenate", (F, Y), {"axis": 0}, ARRAYS),
    Sample("roll", (F,), {"shift": (2,), "axis": (0,)}, ARRAYS),
    # indexing
    Sample("getitem", (M34,), {"index": (("slice", 1, None, None), ("slice", None, None, 2))}, MATRIX),
    Sample("getitem", (M34, index([0, 2, 0])), {"index": (("array", 0),)}, MATRIX),
    Sample("setitem", (M34, In((4,))), {"index": (1,)}, MATRIX),
    Sample("setitem", (M34, In(())), {"index": (("slice", None, None, None), 1)}, MATRIX),
    Sample("index_add", (M34, M34, index([0, 0, 2])), {"index": (("array", 0),)}, MATRIX),
    # contractions
    Sample("matmul", (F, Y), shapes=("mm", "mv", "vm", "vv", "bmm")),
    Sample("einsum", (M34, In((2, 4))), {"subscripts": "ij,kj->ik"}, MATRIX),
    Sample("einsum", (In((2, 3, 4)),), {"subscripts": "ijk->j"}, MATRIX),
    Sample("vecdot", (M34, In((4,))), shapes=MATRIX),
    Sample("matvec", (In((2, 3, 4)), In((4,))), shapes=MATRIX),
    Sample("vecmat", (In((3,)), In((2, 3, 4))), shapes=MATRIX),
    # linear algebra
    *[Sample(n, (In((3, 3), -1.0, 1.0, structure="well"),), shapes=MATRIX) for n in ("inv", "det", "slogdet")],
    Sample("det", (In((2, 3, 3), -1.0, 1.0, structure="well"),), shapes=MATRIX),
    Sample("solve", (In((3, 3), -1.0, 1.0, structure="well"), In((3, 2))), shapes=MATRIX),
    Sample("solve", (In((3, 3), -1.0, 1.0, structure="well"), In((3,))), shapes=MATRIX),
    *[Sample("cholesky", (In((3, 3), -1.0, 1.0, structure="spd"),), {"upper": upper}, MATRIX) for upper in (False, True)],
    *[Sample("eigh", (In((4, 4), -1.0, 1.0, structure="symmetric"),), {"UPLO": uplo}, MATRIX) for uplo in "LU"],
    *[Sample(n, (In(shape, -1.0, 1.0, structure="spread"),), shapes=MATRIX)
      for n in ("svd", "qr") for shape in ((4, 3), (3, 4))],
    Sample("pinv", (In((4, 3), -1.0, 1.0, structure="spread"),), {"rcond": 1e-15, "hermitian": False}, MATRIX),
    # selection and rounding (non-differentiable)
    Sample("round", (In(avoid=(-1.5, -0.5, 0.5, 1.5)),), {"decimals": 0}),
    Sample("argpartition", (F,), {"kth": 1, "axis": 0}, ARRAYS, apart=True),
    Sample("searchsorted", (In((5,), structure="sorted"), F), {"side": "left"}, ARRAYS, apart=True),
    # creation
    Sample("array", (F,)),
    Sample("full", (F,), call=lambda x: np.full(np.shape(x), 2.0, like=x)),
]

# The mathematical domain of each operand where it is not the whole real line: finite
# differences never step outside it.
DOMAINS = {
    "log": [(0.0, None)], "log2": [(0.0, None)], "log10": [(0.0, None)], "sqrt": [(0.0, None)],
    "log1p": [(-1.0, None)], "arcsin": [(-1.0, 1.0)], "arccos": [(-1.0, 1.0)],
    "arctanh": [(-1.0, 1.0)], "arccosh": [(1.0, None)],
    "power": [(0.0, None), None], "float_power": [(0.0, None), None],
}


def declared_domains(prim, n: int) -> list:
    doms = list(DOMAINS.get(prim.name, []))
    return (doms + [None] * n)[:n]


def _tie_gap(x, axis, largest: bool):
    """Distance between the two largest (or smallest) elements of each reduced slice."""
    x = np.asarray(x, dtype=float)
    axes = tuple(range(x.ndim)) if axis is None else axis
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    flat = np.sort(moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,)), axis=-1)
    if flat.shape[-1] < 2:
        return np.full(flat.shape[:-1], np.inf)
    return flat[..., -1] - flat[..., -2] if largest else flat[..., 1] - flat[..., 0]


def _to_integer(x):
    return x - np.round(x)


# Per kinked primitive: the distance of each element to its kink (0 at the kink), from the
# operands and params. Used to list the equations a program evaluates at or near a kink.
KINKS = {
    "absolute": lambda x: x, "fabs": lambda x: x, "sign": lambda x: x, "heaviside": lambda x, h: x,
    "maximum": lambda a, b: np.subtract(a, b), "minimum": lambda a, b: np.subtract(a, b),
    "fmax": lambda a, b: np.subtract(a, b), "fmin": lambda a, b: np.subtract(a, b),
    "clip": lambda x, lo, hi: np.minimum(np.abs(np.subtract(x, lo)), np.abs(np.subtract(x, hi))),
    "max": lambda x, axis, keepdims: _tie_gap(x, axis, True),
    "min": lambda x, axis, keepdims: _tie_gap(x, axis, False),
    "floor": _to_integer, "ceil": _to_integer, "trunc": _to_integer,
    "rint": lambda x: _to_integer(x - 0.5),
    "remainder": lambda a, b: _to_integer(np.divide(a, b)), "fmod": lambda a, b: _to_integer(np.divide(a, b)),
    "floor_divide": lambda a, b: _to_integer(np.divide(a, b)), "copysign": lambda a, b: b,
}


# -- drawing inputs --------------------------------------------------------------------------------

def _shape(inp: In, shape_set: str) -> tuple:
    return SHAPES[shape_set][inp.shape] if isinstance(inp.shape, str) else tuple(inp.shape)


def _draw_one(inp: In, shape, dtype, rng):
    if inp.value is not None:
        return np.array(inp.value)
    if inp.kind == "bool":
        return rng.random(shape) < 0.5
    if inp.kind == "int":
        return rng.integers(int(inp.lo), int(inp.hi), size=shape)
    x = rng.uniform(inp.lo, inp.hi, size=shape).astype(dtype)
    if inp.structure is not None:
        x = STRUCTURES[inp.structure](x).astype(dtype)
    return x if shape else dtype.type(x)


def _gap(sample: Sample, xs) -> float:
    """The smallest distance to an ``avoid`` point and, for ``apart`` samples, between values
    that could tie: elements of one float input, or elements of two that meet."""
    floats = [x for x, inp in zip(xs, _traced(sample)) if inp.kind == "float"]
    gaps = [np.min(np.abs(np.subtract.outer(np.ravel(x), inp.avoid)), initial=np.inf)
            for x, inp in zip(xs, _traced(sample)) if inp.avoid and inp.kind == "float"]
    if sample.apart and len(floats) == 1:
        gaps.append(np.min(np.diff(np.sort(np.ravel(floats[0]))), initial=np.inf))
    elif sample.apart:
        gaps += [np.min(np.abs(_pairs(a, b)), initial=np.inf) for k, a in enumerate(floats) for b in floats[k + 1:]]
    return float(min(gaps, default=np.inf))


def _pairs(a, b):
    """Differences of the elements that meet: aligned if the shapes broadcast, else all pairs."""
    try:
        return np.subtract(a, b)
    except ValueError:
        return np.subtract.outer(np.ravel(a), np.ravel(b))


def _traced(sample: Sample) -> list[In]:
    return [i for i in sample.inputs if i.kind != "literal"]


def draw(sample: Sample, shape_set: str, dtype, rng) -> list:
    """Random inputs for the non-literal operands, inside their ranges and away from kinks."""
    for _ in range(1000):
        xs = [_draw_one(i, _shape(i, shape_set), dtype, rng) for i in _traced(sample)]
        if _gap(sample, xs) > 0.05:
            return xs
    raise RuntimeError(f"could not draw inputs for {sample.prim} 0.05 away from its kinks")


def caller(sample: Sample):
    """The call that records one equation of the sample's primitive: ``bind`` with the literal
    operands and params baked in (or the sample's own call)."""
    if sample.call is not None:
        return sample.call
    from ..primitives import REGISTRY
    prim = REGISTRY[sample.prim]

    def call(*traced):
        it = iter(traced)
        return prim.bind(*[i.value if i.kind == "literal" else next(it) for i in sample.inputs], **sample.params)
    call.__name__ = sample.prim
    return call


def cases(sample: Sample, rng):
    """(label, call, inputs) for every shape set, dtype and kink point of a sample."""
    call = caller(sample)
    params = "".join(f" {k}={v}" for k, v in sample.params.items() if k != "index")
    for n, shape_set in enumerate(sample.shapes):
        last = n == len(sample.shapes) - 1
        for dtype in sample.dtypes[:1] + (sample.dtypes[1:] if last else ()):
            yield f"{sample.prim}{params} {shape_set} {dtype.name}", call, draw(sample, shape_set, dtype, rng)
    for k, point in enumerate(sample.kinks):
        yield f"{sample.prim}{params} kink {k}", call, [np.array(p) if np.ndim(p) else p for p in point]
