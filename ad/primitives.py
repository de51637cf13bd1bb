"""Primitives: named operations with a numpy implementation, an rrule and their declared facts.

Primitives are objects, never strings. Everything the project knows about one primitive is
declared once, on the object, next to its rule (``ad.lib``, ``ad.nn``): its traits, its
checker and test samples, its codegen spelling; the layers above look them up by the object
(the ONNX exporter keeps its own table keyed by the object). ``REGISTRY`` maps names to
primitives only so that a saved tape can be loaded by looking names up (never by importing
anything named in a file); names are therefore unique.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .trace_state import find_recorder

REGISTRY: dict[str, "Primitive"] = {}
BY_FUNCTION: dict[Any, "Primitive"] = {}   # numpy function / ufunc / user function -> primitive

KINDS = ("pure", "random", "opaque", "guard")
# The most, in units in the last place of numpy's result, by which a form may differ from numpy
# on one equation of a function that is not correctly rounded (measured on 60,000 operands per
# function: at most 3 between numpy's AVX-512 paths, its own AVX2 tanh and the C library's).
ULPS = 4


@dataclass(frozen=True)
class Linear:
    """How a primitive is linear (``Primitive(linear_in=...)`` or ``multilinear_in=...``).

    operands: indices, or "all" (variadic primitives). jointly: linear in those operands taken
    together (then any of them may vary at once, and those that do not must be zero: ``x + c``
    is affine); otherwise linear in each one alone, the others fixed (one may vary at a time).
    """
    operands: tuple[int, ...] | str
    jointly: bool = True

    def __post_init__(self):
        if self.operands != "all":
            object.__setattr__(self, "operands", tuple(self.operands))

    def of(self, n: int) -> tuple[int, ...]:
        """The linear operands of an equation with ``n`` operands."""
        return tuple(range(n)) if self.operands == "all" else tuple(k for k in self.operands if k < n)


class Primitive:
    """An operation ``outputs = impl(*operands, **params)`` and what is known about it.

    params: the names of the static parameters (validated when loading tapes).
    multiple_results: impl returns a tuple of arrays.
    kind: "pure", "random" (never merged by CSE or folded), "opaque" (runs a Python closure), or
        "guard" (checks an assumption of the trace; never removed by DCE).
    function: the numpy function (or user function) whose calls record this primitive.
    elementwise: applies to each element alone (broadcasting operands).
    linear_in: the operands the output is linear in *jointly*, the others fixed (``add``,
        ``subtract``, ``setitem`` in x and value, ``where`` in its two branches), or "all"
        (variadic: ``concatenate``).
    multilinear_in: the operands the output is linear in *each alone*, the others fixed
        (``multiply``, ``matmul``: x * x is not linear), or "all" (``einsum``). The transpose of
        either kind is the primitive's own pullback (``ad.transpose``): a pullback of a map
        linear in an operand is its transpose there, whatever the point.
    returns_view: predicate on the operands: does numpy return a view of the first operand?
    write_through: ``(base, new, *rest, **params) -> new base`` for views that can be written
        through (``y = x[1:]; y += 1`` changes ``x``).
    value_dependent_shape: the output shape follows the operand values, not their avals.
    samples: the checker's and the tests' sample inputs (``ad.samples.Sample``).
    kink: ``(*operands, **params) -> distance`` of each element to the nearest point where the
        derivative jumps (0 there): the program checker lists equations evaluated at a kink.
    spelling: how generated code calls it: a format string over ``{0}``, ``{1}``... and the
        params (``"np.matmul({0}, {1})"``), or a function ``(args, params) -> str``; by default
        ``np.<name>`` of ``function``.
    scalar_spelling: the same for a tape of Python floats (every value a 0-d float64 or bool),
        in ``math`` and plain Python arithmetic (``"math.sin({0})"``): ``codegen`` uses it when
        every equation of a tape declares one. It must give numpy's value wherever it returns
        one; where numpy answers with inf or nan and ``math`` raises (ValueError,
        ZeroDivisionError, OverflowError) the compiled function reruns the numpy spelling.
    array_api_spelling: the same for code over an array namespace ``xp`` (``ad.compile(tape,
        xp=...)``, docs/arrays.md), in the array API standard's names (``"xp.asin({0})"``;
        creation functions take ``device=device``, the inputs' device); a function may return
        None for params the standard cannot write. By default: ``spelling`` if it is Python
        operators alone (``"{0} @ {1}"``), else the standard's function of the same name as the
        numpy function (renamed by ``ad.compiler.array_api.STANDARD_NAMES``: arcsin -> asin),
        if the standard has one (``STANDARD``); else the tape is refused when compiled.
    array_api_impl: the impl written over an array namespace, ``f(*operands, **params, xp=xp)``,
        for what no single call of the standard spells (``sum_to``, ``im2col``); compiled code
        calls it by the primitive's name. It may be the impl itself, if that takes ``xp``.
    correctly_rounded: numpy's result is fixed by IEEE 754 alone (correctly rounded arithmetic
        and sqrt, comparisons, abs, min/max, rounding to integers, copysign): every form gives
        numpy's bits. Other functions (exp, sin, pow...) are not correctly rounded anywhere:
        numpy's SIMD paths and the C library (``math``, the fused backend) differ in the last
        bits, and the forms promise numpy's result within ``ULPS`` (docs/numerics.md).
    complex_rule: its rule is written and checked for complex operands (the convention of
        docs/architecture.md); until then a gradient through it with complex values is refused.
    checks_values: its impl returns its first operand, or raises on values it refuses (a
        condition on a cotangent, which a pullback being lifted does not have yet: recorded on
        such stand-ins, the check is left to the runs of the template).
    rule: the rrule, set by ``@ad.rrule``; differentiable: False for non_differentiable.
    frule: a pushforward written by hand, set by ``@ad.frule`` (else it is derived from the rule).
    batch: its batching rule, set by ``@ad.batch_rule`` (``ad.vmap``; else one derived from its
        traits, ``ad.batching.rule_for``, or the loop over the batch, ``ad.batching.fallback``).
    overloads: kind -> an overload of the rule's pullback, set by ``@ad.backpropagate``.
    """

    def __init__(self, name: str, impl: Callable, *, params: tuple[str, ...] = (),
                 multiple_results: bool = False, kind: str = "pure", function: Any = None,
                 doc: str | None = None, elementwise: bool = False,
                 linear_in: tuple[int, ...] | str = (), multilinear_in: tuple[int, ...] | str = (),
                 returns_view: Callable | None = None, write_through: Callable | None = None,
                 value_dependent_shape: bool = False, samples: tuple = (), kink: Callable | None = None,
                 spelling: str | Callable | None = None, scalar_spelling: str | Callable | None = None,
                 array_api_spelling: str | Callable | None = None, array_api_impl: Callable | None = None,
                 complex_rule: bool = False, correctly_rounded: bool = False,
                 checks_values: bool = False):
        if kind not in KINDS:
            raise ValueError(f"primitive kind {kind!r}; choose one of {KINDS}")
        if name in REGISTRY:
            raise ValueError(
                f"a primitive named {name!r} is already registered; names identify primitives in "
                "saved tapes, so they must be unique: pick another name, or reuse the existing "
                f"primitive (ad.REGISTRY[{name!r}])")
        self.name = name
        self.impl = impl
        self.params = tuple(params)
        self.multiple_results = multiple_results
        self.kind = kind
        self.function = function
        self.elementwise = elementwise
        if linear_in and multilinear_in:
            raise ValueError(f"{name}: declare linear_in (jointly) or multilinear_in (each alone), not both")
        self.linear = Linear(multilinear_in or linear_in, jointly=not multilinear_in) \
            if linear_in or multilinear_in else None
        self.returns_view = returns_view
        self.write_through = write_through
        self.value_dependent_shape = value_dependent_shape
        self.samples = tuple(samples)
        self.kink = kink
        self.spelling = spelling
        self.scalar_spelling = scalar_spelling
        self.array_api_spelling = array_api_spelling
        self.array_api_impl = array_api_impl
        self.complex_rule = complex_rule
        self.correctly_rounded = correctly_rounded
        self.checks_values = checks_values
        self.rule = None
        self.frule = None
        self.batch = None
        self.overloads: dict[str, Callable] = {}
        self.differentiable = True
        self.__doc__ = doc or getattr(function, "__doc__", None)
        REGISTRY[name] = self
        if function is not None:
            BY_FUNCTION[function] = self

    @property
    def linear_in(self) -> tuple[int, ...]:
        """The declared linear operands of a fixed-arity declaration, either kind (what
        ``passes.simplify`` reads: all of them zero make the output zero)."""
        return () if self.linear is None or self.linear.operands == "all" else self.linear.operands

    def bind(self, *operands, **params):
        """Apply to operands: records an equation if any operand is traced, else computes."""
        rec = find_recorder(operands)
        if rec is None:
            return self.impl(*operands, **params)
        return rec.record(self, operands, params)

    def __repr__(self) -> str:
        return self.name


def unique_name(name: str) -> str:
    """``name``, or ``name_2``, ``name_3``... if it is taken (a user's lambdas, a redefinition)."""
    if name not in REGISTRY:
        return name
    k = 2
    while f"{name}_{k}" in REGISTRY:
        k += 1
    return f"{name}_{k}"


def binds(prim: Primitive):
    """Mark a function as ``prim``'s public spelling (``ad.nn.relu`` binds ``relu_p``), so that
    ``lookup``, and so ``ad.backpropagate`` and ``ad.check_rule``, take the function for the
    primitive. Only for functions that pass their operands to ``prim`` as they are."""
    def mark(fn):
        fn.primitive = prim
        return fn
    return mark


def lookup(f) -> Primitive:
    """The primitive of a numpy function, a user ``@primitive`` function or a primitive itself."""
    if isinstance(f, Primitive):
        return f
    prim = getattr(f, "primitive", None) or BY_FUNCTION.get(f)
    if prim is None:
        name = getattr(f, "__name__", repr(f))
        raise KeyError(f"{name} is not a primitive; mark your own functions with @ad.primitive, "
                       f"or see ad.lib for the numpy functions that have rules")
    return prim


# -- rule modules loaded when first needed --------------------------------------------------------
# Some rule modules cost too much to import with ``ad``: ad.scipy's import scipy (a quarter
# second, as much as ad). The package's facade names them here, by the prefix of the primitive
# names they register (``defer``); the tracer's dispatch (a scipy.special ufunc it does not know)
# and the loader of saved files (a ``scipy.`` name) load them by that prefix. The modules they
# name sit above the layers that ask: this hook, not an import, is the way down.
DEFERRED: dict[str, tuple[str, ...]] = {}   # prefix of primitive names -> modules registering them


def defer(prefix: str, *modules: str) -> None:
    """Register ``modules`` (dotted names) as the ones that define the primitives named ``prefix...``."""
    DEFERRED[prefix] = DEFERRED.get(prefix, ()) + modules


def load_deferred(name: str) -> None:
    """Import the rule modules deferred for the longest prefix of ``name`` registered."""
    prefix = max((p for p in DEFERRED if name.startswith(p)), key=len, default=None)
    for module in DEFERRED.get(prefix, ()):
        importlib.import_module(module)


# Rule modules that plug into a library's own dispatch instead of numpy's: scipy.fft hands its
# transforms to the first of its uarray backends that takes them, and ``ad.scipy.fft`` is one, set
# only while a trace runs the user's function (scipy.fft on plain arrays never meets it). The
# facade names them by the library (``plug_in``); every trace enters their ``tracing()`` contexts
# once that library is imported (``plugged_in``), importing them the first time.
PLUGINS: dict[str, tuple[str, ...]] = {}     # library module -> modules with a tracing() context


def plug_in(library: str, *modules: str) -> None:
    """Register ``modules`` (dotted names, each with a ``tracing()`` context manager) for the
    traces that run while ``library`` is imported."""
    PLUGINS[library] = PLUGINS.get(library, ()) + modules


@contextlib.contextmanager
def plugged_in():
    """The ``tracing()`` contexts of the plugins whose library is imported, entered together."""
    with contextlib.ExitStack() as stack:
        for library, modules in PLUGINS.items():
            if library in sys.modules:
                for module in modules:
                    stack.enter_context(importlib.import_module(module).tracing())
        yield
