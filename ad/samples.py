"""Sample inputs: the one vocabulary in which a primitive declares where it is checked and tested.

Each primitive carries ``samples``, a tuple of ``Sample`` declared next to its rule; the library
check (``ad.checks.library``) and the test suite draw from them with ``draw``. An ``In``
describes one operand: its shape (a key into a shape set of ``SHAPES``, or a literal shape),
the range [lo, hi) its values are drawn from, its mathematical ``domain`` (finite differences
never step outside it), the kink points it keeps ``GAP`` away from (``avoid``), whether its
values stay ``GAP`` apart (ties are kinks of max, sort, ...) and a matrix ``structure``
(well-conditioned, positive definite, separated spectrum...), and whether it stays ``real`` at
complex dtypes. ``kind`` "int"/"bool" draws non-differentiable operands; "literal" bakes
``value`` into the call (a constant operand).

Imports numpy only: it sits below the primitives that use it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable

import numpy as np

F64, F32 = np.dtype(np.float64), np.dtype(np.float32)
C128, C64 = np.dtype(np.complex128), np.dtype(np.complex64)
GAP = 0.05        # how far values stay from kinks and from each other
IMAG = 0.5        # complex draws: the imaginary part lies in [-IMAG, IMAG), clear of the branch
                  # cuts numpy puts on the imaginary axis beyond +-i (arctan, arcsinh)


@dataclass(frozen=True)
class In:
    """One operand: where its values are drawn and what they must keep clear of (see above)."""
    shape: object = "x"
    lo: float = -2.0
    hi: float = 2.0
    kind: str = "float"
    value: object = None
    avoid: tuple = ()
    apart: bool = False
    structure: str | None = None
    domain: tuple | None = None
    real: bool = False          # stays real at complex dtypes (numpy takes only real: rfft's input)


@dataclass(frozen=True)
class Sample:
    """Operands (one ``In`` each, literals included) and static params of one kind of call.

    shapes: the shape sets of ``SHAPES`` it runs at; dtypes: the first at every shape set, the
    others at the last one (a primitive declaring ``complex_rule`` also runs every sample at
    complex128 and complex64: ``draw`` with a complex dtype); kinks: explicit points, one tuple of values per non-literal operand,
    where a subgradient applies; call: for primitives not called through ``bind`` (``full``
    has no operand to trace) and for compositions; derive: ``(*drawn) -> operands`` for an
    operand that follows from the others (the maxima ``max_unpool`` routes to).
    """
    inputs: tuple
    params: dict = field(default_factory=dict)
    shapes: tuple = ("scalar", "vector", "matrix")
    dtypes: tuple = (F64, F32)
    kinks: tuple = ()
    call: Callable | None = None
    derive: Callable | None = None


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
MATRIX = ("matrix",)     # also the one set of samples whose shapes are all literal


def _eye(x):
    return np.eye(x.shape[-2], x.shape[-1], dtype=x.dtype)


def _steps(x):
    """A rectangular diagonal 3, 2, 1, ... (separated singular values)."""
    k = min(x.shape[-2:])
    d = np.zeros(x.shape[-2:], dtype=x.dtype)
    d[np.arange(k), np.arange(k)] = np.arange(k, 0, -1)
    return d


def _spd(x):
    """x x^H / n + I: Hermitian (symmetric) positive definite, from any (..., m, n) x."""
    gram = x @ np.swapaxes(x, -1, -2).conj()
    return gram / x.shape[-1] + _eye(gram)


# Matrix structures, applied to values drawn in [-1, 1): well-posed inverses, separated spectra.
STRUCTURES = {
    "well": lambda x: x + 3 * _eye(x),                                   # diagonally dominant
    "spd": _spd,
    # distinct eigenvalues 1, 3, 5, ... and not symmetric: readers of one triangle must give
    # the other no gradient
    "separated": lambda x: np.diag(np.arange(1.0, 2 * x.shape[-1], 2)).astype(x.dtype) + 0.2 * x,
    "spread": lambda x: 0.3 * x + _steps(x),                             # distinct singular values
    "sorted": lambda x: np.sort(x, axis=-1),
}

F, Y = In(), In("y")
NONZERO, NONZERO_Y = In(avoid=(0.0,)), In("y", avoid=(0.0,))
DISTINCT, DISTINCT_Y = In(apart=True), In("y", apart=True)
POSITIVE = In(lo=0.2, hi=3.0)
M34 = In((3, 4))
IMAGES = In((2, 3, 5, 4))       # (N, C, H, W)


def literal(value) -> In:
    return In(kind="literal", value=value)


def index(values) -> In:
    """A constant integer index operand."""
    return In((len(values),), kind="int", value=np.array(values))


def matrix(shape, structure: str) -> In:
    """A matrix (or stack) drawn in [-1, 1), then given a structure of ``STRUCTURES``."""
    return In(shape, -1.0, 1.0, structure=structure)


# -- drawing ---------------------------------------------------------------------------------------

def traced(inputs) -> list[In]:
    """The inputs that become operands of the traced call (literals are baked in)."""
    return [i for i in inputs if i.kind != "literal"]


def _shape(inp: In, shape_set: str) -> tuple:
    return SHAPES[shape_set][inp.shape] if isinstance(inp.shape, str) else tuple(inp.shape)


def _spread_apart(inp: In, shape, rng) -> np.ndarray:
    """Values ``GAP`` apart: one per cell of [lo, hi) cut into equal cells, cells shuffled."""
    n = int(np.prod(shape, dtype=int))
    cell = (inp.hi - inp.lo) / max(n, 1)
    if cell <= GAP:
        raise ValueError(f"{n} values cannot be {GAP} apart in [{inp.lo}, {inp.hi}): widen the range")
    return (inp.lo + rng.permutation(n) * cell + rng.uniform(0, cell - GAP, n)).reshape(shape)


def _draw_one(inp: In, shape, dtype, rng):
    if inp.value is not None:
        return np.array(inp.value)
    if inp.kind == "bool":
        return rng.random(shape) < 0.5
    if inp.kind == "int":
        return rng.integers(int(inp.lo), int(inp.hi), size=shape)
    x = _spread_apart(inp, shape, rng) if inp.apart else rng.uniform(inp.lo, inp.hi, size=shape)
    if dtype.kind == "c" and inp.real:
        dtype = np.finfo(dtype).dtype     # complex64 -> float32
    elif dtype.kind == "c":   # the real part where a real draw lies (its domain), a small imaginary one
        x = x + 1j * rng.uniform(-IMAG, IMAG, size=shape)
    if inp.structure is not None:
        x = STRUCTURES[inp.structure](x)
    x = np.asarray(x).astype(dtype)
    return x if shape else dtype.type(x)


def _pairs(a, b):
    """Differences of the elements that meet: aligned if the shapes broadcast, else all pairs."""
    try:
        return np.subtract(a, b)
    except ValueError:
        return np.subtract.outer(np.ravel(a), np.ravel(b))


def _gap(inputs, xs) -> float:
    """The smallest distance to an ``avoid`` point (of the real part, for complex values: it
    bounds |z - p| and keeps lexicographic comparisons clear too), and between ``apart`` inputs
    that meet (each one is apart within itself by construction)."""
    gaps = [np.min(np.abs(np.subtract.outer(np.real(np.ravel(x)), inp.avoid)), initial=np.inf)
            for x, inp in zip(xs, inputs) if inp.avoid]
    apart = [x for x, inp in zip(xs, inputs) if inp.apart]
    gaps += [np.min(np.abs(_pairs(a, b)), initial=np.inf) for a, b in combinations(apart, 2)]
    return float(min(gaps, default=np.inf))


def draw(inputs, rng: np.random.Generator, shape_set: str = "matrix", dtype=F64) -> list:
    """Random values for the non-literal ``inputs``, inside their ranges and ``GAP`` away from
    their kinks and ties. A complex ``dtype`` makes every float operand complex (but the ``real``
    ones): its real part drawn as a real one, its imaginary part in [-IMAG, IMAG)."""
    todo = traced(inputs)
    dtype = np.dtype(dtype)
    for _ in range(1000):
        xs = [_draw_one(i, _shape(i, shape_set), dtype, rng) for i in todo]
        if _gap(todo, xs) > GAP:
            return xs
    raise RuntimeError(f"could not draw {todo} {GAP} away from their kinks")


def operands(sample: Sample, rng: np.random.Generator, shape_set: str = "matrix", dtype=F64) -> list:
    """The operands of one call of ``sample``: drawn, then derived."""
    xs = draw(sample.inputs, rng, shape_set, dtype)
    return list(sample.derive(*xs)) if sample.derive is not None else xs


def caller(prim, sample: Sample) -> Callable:
    """The call that records one equation of ``prim``: ``bind`` with the literal operands and the
    params baked in (or the sample's own call)."""
    if sample.call is not None:
        return sample.call

    def call(*values):
        it = iter(values)
        return prim.bind(*[i.value if i.kind == "literal" else next(it) for i in sample.inputs], **sample.params)
    call.__name__ = prim.name
    return call


def declared_domains(prim, n: int) -> list:
    """The mathematical domain of each of ``n`` operands of ``prim``, as its first sample declares
    (None: the whole real line)."""
    declared = [i.domain for i in prim.samples[0].inputs] if prim.samples else []
    return (declared + [None] * n)[:n]


# -- kinks: the distance of each element to the nearest point where a derivative jumps ----------

def tie_gap(x, axis, largest: bool):
    """Distance between the two largest (or smallest) elements of each reduced slice."""
    x = np.asarray(x, dtype=float)
    axes = tuple(range(x.ndim)) if axis is None else axis
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    flat = np.sort(moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,)), axis=-1)
    if flat.shape[-1] < 2:
        return np.full(flat.shape[:-1], np.inf)
    return flat[..., -1] - flat[..., -2] if largest else flat[..., 1] - flat[..., 0]


def to_integer(x):
    """Distance to the nearest integer (the steps of floor, ceil, trunc)."""
    return x - np.round(x)
