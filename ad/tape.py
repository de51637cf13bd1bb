"""The data model: an immutable SSA tape of primitive equations.

Naming legend (used across the package):
    Aval   abstract value: shape and dtype of a variable
    Var    an SSA variable, printed ``%n``; compared by identity
    Lit    a literal constant operand (Python scalar or ndarray)
    Eqn    one equation: outputs = primitive(inputs; params)
    Origin where an equation came from (the user's program, a pullback, an accumulation)
    Tape   inputs, equations, outputs (+ the pytree structure of the user's arguments and results)
"""
from __future__ import annotations

import functools
import gc
import math
import operator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import pytree
from .errors import GuardError
from .origins import PRIMAL, Origin, OriginKind
from .primitives import REGISTRY
from .scopes import Scope, scope_tree
from .trace_state import Traced


def gc_paused(fn):
    """Run ``fn`` with the cyclic garbage collector paused. Building tens of thousands of small
    objects triggers it again and again, and each time it re-scans every object of the tape
    (a third of the time for 10,000 equations, and growing with the tape); tapes, tracers and
    graphs hold no reference cycles, so nothing is left for it to find."""
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return paused


@dataclass(frozen=True, slots=True)
class Aval:
    shape: tuple[int, ...]
    dtype: np.dtype

    @staticmethod
    def of(value) -> "Aval":
        if isinstance(value, (np.ndarray, np.generic)):
            return interned_aval(value.shape, value.dtype)
        scalar = SCALAR_AVALS.get(type(value))
        if scalar is not None:
            return scalar
        if isinstance(value, (bool, int, float, complex)):    # an int (its dtype follows its size), a subclass
            return Aval((), np.result_type(value))
        value = np.asarray(value)
        return Aval(value.shape, value.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize if isinstance(self.dtype, np.dtype) else 0

    @property
    def is_float(self) -> bool:
        if isinstance(self.dtype, np.dtype):      # the common case, without issubdtype's cost
            return self.dtype.kind in "fc"
        return np.issubdtype(self.dtype, np.inexact)

    @property
    def is_complex(self) -> bool:
        if isinstance(self.dtype, np.dtype):
            return self.dtype.kind == "c"
        return np.issubdtype(self.dtype, np.complexfloating)

    def __str__(self) -> str:
        return f"{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"


# a Python scalar's aval depends only on its type (an int's also on its size: not here)
SCALAR_AVALS = {t: Aval((), np.result_type(t())) for t in (bool, float, complex)}


@functools.lru_cache(maxsize=4096)
def interned_aval(shape, dtype) -> Aval:
    """One ``Aval`` per shape and dtype (avals are immutable): tracing and lifting ask for the
    same few again and again."""
    return Aval(shape, dtype)


_DTYPE_SHORT = {"float64": "f64", "float32": "f32", "float16": "f16", "int64": "i64",
                "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "bool",
                "complex128": "c128", "complex64": "c64", "object": "handle"}


def short_dtype(dtype) -> str:
    name = np.dtype(dtype).name
    return _DTYPE_SHORT.get(name, name)


HANDLE = Aval((), np.dtype(object))  # the aval of an opaque closure handle


# The tape's objects are slots dataclasses with their own ``__init__``, immutable by convention
# (nothing assigns to their fields after ``__init__``; tests/test_architecture.py checks it): a
# frozen dataclass assigns each field through ``object.__setattr__``, and even its fields'
# descriptors called from an ``__init__`` cost two to three times a plain assignment, which
# Python specialises for slots; a gradient tape of 10,000 operations creates ~100,000 of them.

@dataclass(eq=False, slots=True, init=False)
class Var:
    n: int
    aval: Aval

    def __init__(self, n: int, aval: Aval):
        self.n = n
        self.aval = aval

    def __repr__(self) -> str:
        return f"%{self.n}"


@dataclass(eq=False, slots=True, init=False)
class Lit:
    value: Any
    aval: Aval

    def __init__(self, value: Any, aval: Aval):
        self.value = value
        self.aval = aval

    @staticmethod
    def of(value) -> "Lit":
        return Lit(value, Aval.of(value))

    def __repr__(self) -> str:
        return format_literal(self.value)


def format_literal(value) -> str:
    if isinstance(value, np.ndarray) and value.ndim > 0:
        if value.size <= 4:
            return np.array2string(value, separator=",").replace("\n", "")
        return f"const:{Aval.of(value)}"
    return repr(value.item() if isinstance(value, np.generic | np.ndarray) else value)




@dataclass(slots=True, init=False, unsafe_hash=True)
class Eqn:
    prim: Any                      # ad.primitives.Primitive
    inputs: tuple[Var | Lit, ...]
    params: tuple[tuple[str, Any], ...]  # sorted (name, value) pairs; values hashable
    outputs: tuple[Var, ...]
    source: str | None = None      # "file.py:12 in f"
    origin: Origin = PRIMAL
    scope: tuple[str, ...] = ()    # the user's calls it was recorded in, outermost first (ad.scopes)

    def __init__(self, prim, inputs: tuple, params: tuple, outputs: tuple, source: str | None = None,
                 origin: Origin = PRIMAL, scope: tuple[str, ...] = ()):
        self.prim = prim
        self.inputs = inputs
        self.params = params
        self.outputs = outputs
        self.source = source
        self.origin = origin
        self.scope = scope

    def with_scope(self, scope: tuple[str, ...]) -> "Eqn":
        return Eqn(self.prim, self.inputs, self.params, self.outputs, self.source, self.origin, scope)

    @property
    def kwargs(self) -> dict:
        return dict(self.params)

    def __str__(self) -> str:
        return format_eqn(self)


def freeze_params(params: dict) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items())) if params else ()


@dataclass(frozen=True)
class Tape:
    """A straight-line program. ``tape(*args)`` re-runs it on new arguments.

    in_tree/out_tree describe the pytree structure of the user's arguments and result; the
    leaves of ``in_tree`` that are not traced (Python ints, bools, None, strings) are stored in
    ``static`` and must match on re-run. ``captures`` are the values of enclosing traces the
    function closed over (tracers of an outer ``ad.grad``): the last inputs of the tape, supplied
    by ``flatten_args``.
    """
    inputs: tuple[Var, ...]
    eqns: tuple[Eqn, ...]
    outputs: tuple[Var | Lit, ...]
    in_tree: Any = None
    out_tree: Any = None
    input_names: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, compare=False)
    captures: tuple = field(default=(), compare=False)

    def __post_init__(self):
        if not self.input_names:
            object.__setattr__(self, "input_names", tuple(f"x{i}" for i in range(len(self.inputs))))

    # -- running ---------------------------------------------------------------------------
    def __call__(self, *args):
        flat = self.flatten_args(args)
        self.check_shapes(flat)
        out = eval_tape(self, flat)
        return pytree.unflatten(self.out_tree, out) if self.out_tree is not None else tuple(out)

    def flatten_args(self, args) -> list:
        """Flatten ``args`` like the traced arguments (then the captures); static leaves must be
        unchanged."""
        if self.in_tree is None:
            flat = list(args) + list(self.captures)
        else:
            leaves, tree = pytree.flatten(args)
            if tree != self.in_tree.structure:
                raise TypeError(f"argument structure {tree} does not match the traced structure "
                                f"{self.in_tree.structure}; trace the function again for new structures")
            flat = self.in_tree.select_traced(leaves) + list(self.captures)
        return flat

    def check_shapes(self, flat: list) -> None:
        """Refuse inputs of other shapes than the trace's: the equations hold the sizes they were
        traced at (a mean's 1/n, a reshape's shape), so they would compute something else."""
        for x, v, name in zip(flat, self.inputs, self.input_names):
            shape = getattr(x, "shape", None)
            if (np.shape(x) if shape is None else tuple(shape)) != v.aval.shape:
                raise ValueError(
                    f"input {name} ({v!r}) has shape {np.shape(x)}, the tape was traced at {v.aval.shape}: "
                    "a tape holds the sizes it was traced at, so it would compute something else. Trace "
                    "again at this shape (ad.grad and its forms re-trace by themselves), or make the "
                    "gradient polymorphic in its number of examples (examples=, docs/arrays.md)")

    # -- views -----------------------------------------------------------------------------
    def replace(self, **changes) -> "Tape":
        return replace(self, **changes)

    @property
    def vars(self) -> dict[str, Var]:
        """Every variable by its printed name ``%n``."""
        out = {repr(v): v for v in self.inputs}
        for e in self.eqns:
            out.update((repr(v), v) for v in e.outputs)
        return out

    def scopes(self) -> Scope:
        """The scope tree of the equations (``ad.scopes.Scope``): the user's calls, each with
        the positions of its equations by phase, in call order.

        >>> def cell(h, x):
        ...     return np.tanh(h + x)
        >>> tape = ad.trace(lambda x: cell(cell(x, x), x), np.ones(2))
        >>> [(s.path, s.forward) for s in tape.scopes().children]
        [(('cell#1',), [0, 1]), (('cell#2',), [2, 3])]
        """
        return scope_tree(self.eqns)

    def producers(self) -> dict[Var, Eqn]:
        return {v: e for e in self.eqns for v in e.outputs}

    def __str__(self) -> str:
        return format_tape(self)

    def __len__(self) -> int:
        return len(self.eqns)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


# -- printing ------------------------------------------------------------------------------

def format_operand(x) -> str:
    return repr(x)


def format_param(value) -> str:
    if isinstance(value, np.dtype):
        return short_dtype(value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return short_dtype(value)
    return repr(value)


def format_eqn(e: Eqn, *, with_origin: bool = False) -> str:
    lhs = " ".join(f"{v!r}:{v.aval}" for v in e.outputs)
    params = " ".join(f"{k}={format_param(v)}" for k, v in e.params)
    rhs = " ".join(filter(None, [e.prim.name, params, " ".join(map(format_operand, e.inputs))]))
    line = f"{lhs} = {rhs}"
    if with_origin and e.origin.kind is not OriginKind.PRIMAL:
        line += f"    # {e.origin.describe()}"
    return line


def format_tape(tape: Tape, *, sections: tuple[tuple[str, int], ...] = ()) -> str:
    """jaxpr-like listing: ``{ lambda %0:f64[3] ; let  %1:f64[3] = sin %0 ... in (%1) }``."""
    ins = " ".join(f"{v!r}:{v.aval}" for v in tape.inputs)
    lines = [f"{{ lambda {ins} ; let"]
    marks = dict(sections)
    for i, e in enumerate(tape.eqns):
        if i in marks:
            lines.append(f"  -- {marks[i]}")
        lines.append("    " + format_eqn(e, with_origin=True))
    outs = ", ".join(map(format_operand, tape.outputs))
    lines.append(f"  in ({outs}) }}")
    return "\n".join(lines)


# -- invariants ------------------------------------------------------------------------------

class InvalidTapeError(ValueError):
    """A tape breaks one of the invariants ``validate`` checks."""


class _Where:
    """``equation 3 (%4:f64[] = sin %2)``, formatted only when an error message needs it."""
    __slots__ = ("i", "e")

    def __init__(self, i: int, e: Eqn):
        self.i, self.e = i, e

    def __str__(self) -> str:
        return f"equation {self.i} ({format_eqn(self.e)})"

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def validate(tape: Tape) -> Tape:
    """Check the tape's invariants and return it; raises InvalidTapeError naming the equation.

    1. Every variable is defined exactly once (as an input or by one equation) and every
       ``%n`` name is unique.
    2. Every equation reads only variables defined before it; outputs are defined.
    3. Operands are ``Var`` or ``Lit``; params are sorted (name, value) pairs naming declared
       params of a registered primitive; multi-output equations belong to multi-output primitives.
    4. Gradient tapes: the forward section holds only "primal" equations and reads no backward
       variable; the backward section holds only backward equations.
    """
    defined: set = set()
    names: set = set()

    def define(v, where):
        if type(v) is not Var:
            raise InvalidTapeError(f"{where}: {v!r} is not a Var")
        if v in defined or v.n in names:
            raise InvalidTapeError(f"{where}: {v!r} is defined twice")
        defined.add(v)
        names.add(v.n)

    for v in tape.inputs:
        define(v, "inputs")
    n_forward = getattr(tape, "n_forward", None)
    backward_vars: set = set()
    for i, e in enumerate(tape.eqns):
        where = _Where(i, e)
        if REGISTRY.get(e.prim.name) is not e.prim:
            raise InvalidTapeError(f"{where}: primitive {e.prim.name!r} is not registered")
        if list(e.params) != sorted(e.params, key=lambda kv: kv[0]):
            raise InvalidTapeError(f"{where}: params are not sorted")
        if e.prim.params:
            unknown = [k for k, _ in e.params if k not in e.prim.params]
            if unknown:
                raise InvalidTapeError(f"{where}: unknown params {unknown}")
        if len(e.outputs) != 1 and not e.prim.multiple_results:
            raise InvalidTapeError(f"{where}: {len(e.outputs)} outputs from a single-output primitive")
        for x in e.inputs:
            if type(x) is Var:
                if x not in defined:
                    raise InvalidTapeError(f"{where}: reads {x!r} before it is defined")
                if n_forward is not None and i < n_forward and x in backward_vars:
                    raise InvalidTapeError(f"{where}: a forward equation reads backward {x!r}")
            elif type(x) is not Lit:
                raise InvalidTapeError(f"{where}: operand {x!r} is neither Var nor Lit")
        if n_forward is not None:
            backward = i >= n_forward
            if backward != e.origin.is_backward:
                raise InvalidTapeError(f"{where}: origin {e.origin.kind!r} in the "
                                       f"{'backward' if backward else 'forward'} section")
        for v in e.outputs:
            define(v, where)
            if n_forward is not None and i >= n_forward:
                backward_vars.add(v)
    for x in tape.outputs:
        if type(x) is Var and x not in defined:
            raise InvalidTapeError(f"output {x!r} is not defined")
        if type(x) not in (Var, Lit):
            raise InvalidTapeError(f"output {x!r} is neither Var nor Lit")
    return tape


# -- evaluation: the one interpreter --------------------------------------------------------------

def eval_eqns(eqns, env: dict, apply=None) -> dict:
    """Run ``eqns`` reading and writing ``env`` (Var -> value), through ``Program``.

    ``apply(eqn, operand_values)`` computes one equation (default: ``eqn.prim.bind``, so tapes
    run on tracers too: that is how they are differentiated again); a hook that observes or
    replaces values wraps it, reading its operands (``env`` is written when the run ends). A
    broken guard raises GuardError naming the guard and its line.
    """
    prog = Program(eqns, [v for v in _free(eqns) if v in env])
    values = prog.run([env[v] for v in prog.inputs], apply or bind)
    prog.name_values(values, env)
    return env


def bind(e: Eqn, vals: list):
    """An equation applied to its operand values, recorded if one is traced."""
    return e.prim.bind(*vals, **dict(e.params)) if e.params else e.prim.bind(*vals)


def _free(eqns) -> dict:
    """The variables ``eqns`` read before (or without) defining them, in order."""
    defined, free = set(), {}
    for e in eqns:
        free.update((x, None) for x in e.inputs if type(x) is Var and x not in defined)
        defined.update(e.outputs)
    return free


def _located(exc: GuardError, e: Eqn) -> GuardError:
    """A guard's error naming the equation and the user's line (unless an inner tape did)."""
    return exc if exc.source is not None else exc.at(format_eqn(e), e.source)


def eval_tape(tape: Tape, args, env: dict | None = None, apply=None) -> list:
    """Evaluate a tape on flat inputs; returns the flat outputs (``env`` collects every value).

    On concrete values the tape's ``Program`` computes each equation with its numpy function;
    on tracers (an enclosing trace) it binds each, so the run is recorded; ``apply`` as for
    ``eval_eqns`` (the program is made once per tape, ``eval_eqns`` makes one per call)."""
    if len(args) != len(tape.inputs):
        raise TypeError(f"the tape takes {len(tape.inputs)} array inputs, got {len(args)}")
    prog = program(tape)
    if apply is None and any(isinstance(a, Traced) for a in args):
        apply = bind
    values = prog.run(args, apply)
    if env is not None:
        prog.name_values(values, env)
    return [values[k] for k in prog.outputs]


def _numpy_operator(op, ufunc):
    """``op`` (``a * b``) where it is exactly the ufunc: numpy's operators on plain arrays and
    numeric scalars are its ufuncs without the cost of a ufunc call (a tenth of it on scalars).
    Anything else gets the ufunc: two Python scalars (``1.0 / 0.0`` raises in Python), array
    subclasses (``*`` multiplies ``np.matrix`` as matrices), strings."""
    def binary(a, b):
        ta, tb = type(a), type(b)
        if (ta in _NUMPY and (tb in _NUMPY or tb in _PYTHON)) or (tb in _NUMPY and ta in _PYTHON):
            return op(a, b)
        return ufunc(a, b)
    return binary


_NUMPY = {np.ndarray} | {t for t in set(np.sctypeDict.values()) if np.dtype(t).kind in "biufc"}
_PYTHON = {bool, int, float, complex}
_OPERATORS = {uf: _numpy_operator(op, uf) for uf, op in (
    (np.add, operator.add), (np.subtract, operator.sub), (np.multiply, operator.mul),
    (np.true_divide, operator.truediv))}


class Program:
    """Equations resolved once for repeated runs, and the one loop that runs them: every
    equation's numpy function with its params bound, its operands as integer slots of one list
    of values (literals placed once), its outputs as slots. ``program(tape)`` caches a tape's on
    the tape (tapes are immutable); ``eval_eqns`` makes one for a list of equations."""
    __slots__ = ("steps", "slots", "inputs", "outputs", "variables", "variable_slots")

    def __init__(self, eqns, inputs, outputs=()):
        slot: dict = {v: k for k, v in enumerate(inputs)}
        consts: list = [None] * len(inputs)

        def place(value) -> int:
            """A literal's slot."""
            consts.append(value)
            return len(consts) - 1

        steps = []
        for e in eqns:
            ins = tuple([slot[x] if type(x) is Var else place(x.value) for x in e.inputs])
            fn = e.prim.impl
            if e.params:
                fn = functools.partial(fn, **dict(e.params))
            elif len(ins) == 2:
                fn = _OPERATORS.get(fn, fn)
            first = len(consts)
            for v in e.outputs:
                slot[v] = len(consts)
                consts.append(None)
            steps.append((fn, ins, tuple(range(first, len(consts))) if e.prim.multiple_results else first, e))
        self.outputs = tuple([slot[x] if type(x) is Var else place(x.value) for x in outputs])
        self.steps = tuple(steps)
        self.slots = consts
        self.inputs = tuple(inputs)
        self.variables = tuple(slot)                  # every variable, and its slot
        self.variable_slots = tuple(slot.values())

    def name_values(self, values: list, env: dict) -> None:
        """Put a run's values into ``env`` by variable (allocating no pair per variable: a
        long tape's many small objects would wake the garbage collector)."""
        env.update(zip(self.variables, map(values.__getitem__, self.variable_slots)))

    def run(self, args, apply=None) -> list:
        """Every slot's value after a run on ``args``; ``apply(eqn, operand values)`` computes
        each equation instead of its numpy function (``bind`` on tracers, a checker's hook)."""
        values = self.slots.copy()
        values[:len(self.inputs)] = args
        e = None
        try:
            for fn, ins, out, e in self.steps:
                if apply is not None:
                    y = apply(e, [values[k] for k in ins])
                elif len(ins) == 2:
                    y = fn(values[ins[0]], values[ins[1]])
                elif len(ins) == 1:
                    y = fn(values[ins[0]])
                else:
                    y = fn(*[values[k] for k in ins])
                if type(out) is int:
                    values[out] = y
                else:
                    for k, v in zip(out, y):
                        values[k] = v
        except GuardError as exc:
            raise _located(exc, e) from None
        return values


def program(tape: Tape) -> Program:
    """The tape's ``Program``, made on first use and kept on the tape."""
    prog = tape.__dict__.get("_program")
    if prog is None:
        prog = Program(tape.eqns, tape.inputs, tape.outputs)
        object.__setattr__(tape, "_program", prog)
    return prog


def active_vars(tape: Tape, wrt) -> set:
    """Activity analysis: the float variables that depend on the inputs ``wrt`` (indices)
    through differentiable equations. Only their equations need rules; every other equation
    is a constant of the gradient."""
    active = {tape.inputs[i] for i in wrt if tape.inputs[i].aval.is_float}
    for e in tape.eqns:
        if e.prim.differentiable and not active.isdisjoint(e.inputs):
            for v in e.outputs:
                if v.aval.is_float:
                    active.add(v)
    return active
