"""Compiling a tape to straight-line numpy source: one line per equation, ``v7`` for ``%7``,
a comment with the provenance. The source is shown to learners and executed for speed: a
compiled gradient is, by construction, a hand-written gradient."""
from __future__ import annotations

import ast
import functools
import keyword
import math
import re
import sys

import numpy as np

from . import pytree
from .backward import GradTape
from .core_prims import check_guard
from .errors import GuardError
from .dispatch import public_name
from .tape import Tape, Var, format_eqn, gc_paused


class _Namespace:
    """Names for the constants and functions the generated code needs; ``scalar``: the code is
    the scalar specialisation (Python floats, ``math``)."""

    def __init__(self, scalar: bool = False):
        self.globals = {"np": np, "math": math} if scalar else {"np": np}
        self.scalar = scalar
        self.names: dict[Var, str] = {}      # scalar code's reused names (default: v7 for %7)
        self._ids: dict = {}

    def bind(self, value, stem: str, numbered: bool = True) -> str:
        key = id(value)
        if key not in self._ids:
            name = f"{stem}{len(self._ids)}" if numbered or stem in self.globals else stem
            self._ids[key] = name
            self.globals[name] = value
        return self._ids[key]


def _ident(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    return s + "_" if keyword.iskeyword(s) or not s.isidentifier() else s


_EXACT_ITEM = frozenset(map(np.dtype, (      # numpy scalars whose .item() is the same number
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128)))


def _value_src(v, ns: _Namespace) -> str:
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return repr(v)
    if isinstance(v, np.generic) and v.dtype in _EXACT_ITEM:   # (np.float64 is a float)
        item = _value_src(v.item(), ns)
        if item.startswith("(") and item.endswith(")"):      # np.complex64(1.5-2j)
            item = item[1:-1]
        return f"np.{v.dtype.name}({item})"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else f"float({str(v)!r})"
    if isinstance(v, complex):
        return _complex_src(v)
    if isinstance(v, np.dtype):
        return f"np.{v.name}" if hasattr(np, v.name) else f"np.dtype({v.name!r})"
    if isinstance(v, tuple):
        inner = ", ".join(_value_src(x, ns) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    return ns.bind(v, "k")


def _complex_src(v: complex) -> str:
    """A complex number as Python writes it (``(2+1j)``, ``-1j``), if that reads back as the
    same number: signed zeros do not always (Python's repr of ``-1j`` is ``(-0-1j)``, which
    reads back with a positive real zero; ``0-1j`` is ``(0-1j)``, not ``-1j``); else
    ``complex(re, im)``."""
    if math.isfinite(v.real) and math.isfinite(v.imag):
        sign = "-" if math.copysign(1, v.imag) < 0 else "+"
        written = f"({_short_float(v.real)}{sign}{_short_float(abs(v.imag))}j)"
        for text in (repr(v), "-" + repr(-v), written):
            try:
                back = complex(ast.literal_eval(text))
            except ValueError:         # -(-0+1j): not a literal
                continue
            if all(a == b and math.copysign(1, a) == math.copysign(1, b)
                   for a, b in ((back.real, v.real), (back.imag, v.imag))):
                return text
    return f"complex({_value_src(v.real, None)}, {_value_src(v.imag, None)})"


def _short_float(x: float) -> str:
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def _operand_src(x, ns) -> str:
    if type(x) is Var:
        return ns.names[x] if ns.names else f"v{x.n}"
    v = x.value
    if ns.scalar and np.ndim(v) == 0 and np.result_type(v) in SCALAR_DTYPES:
        v = np.asarray(v).item()         # the same number as a Python float (or bool)
    if isinstance(v, np.ndarray):
        return ns.bind(v, "c")
    return _value_src(v, ns)


@functools.cache    # once per function, not once per equation
def _function_path(f, ns: _Namespace) -> str | None:
    """Where compiled code finds a numpy or scipy function by its public name (``np.sum``,
    ``np.linalg.inv``, ``scipy.special.psi``), if that name leads back to ``f``."""
    if f is None:
        return None
    path = public_name(f)
    root, *parts = path.split(".")
    module = np if root == "np" else sys.modules.get(root) if root == "scipy" else None
    found = module
    for part in parts:
        found = getattr(found, part, None)
    if module is None or found is not f:
        return None
    ns.globals[root] = module
    return path


def eqn_source(e, ns: _Namespace) -> str:
    """The right-hand side of one equation, as its primitive's ``spelling`` (``scalar_spelling``
    in scalar code) says: a format
    string over the operand and param sources, a function of the operand sources and the
    params, or by default a call of the numpy function (else of the impl) with the params as
    keywords."""
    if not ns.scalar and e.prim.elementwise and _all_float64(e.inputs):
        # a float64 literal among float64 operands: a Python float computes the same, and
        # np.float64(0.9) would be built again on every call
        args = [_operand_src(x, ns) if type(x) is Var or type(x.value) is not np.float64
                else _value_src(float(x.value), ns) for x in e.inputs]
    else:
        args = [_operand_src(x, ns) for x in e.inputs]
    spelling = e.prim.scalar_spelling if ns.scalar else e.prim.spelling
    if callable(spelling):
        return spelling(args, e.kwargs)
    if spelling is not None:
        return spelling.format(*args, **{k: _value_src(v, ns) for k, v in e.params})
    kw = "".join(f", {k}={_value_src(v, ns)}" for k, v in e.params)
    fn = _function_path(e.prim.function, ns) or ns.bind(e.prim.impl, _ident(e.prim.name), numbered=False)
    return f"{fn}({', '.join(args)}{kw})"


def _all_float64(operands) -> bool:
    variables = [x for x in operands if type(x) is Var]
    return bool(variables) and all(x.aval.dtype == np.float64 for x in variables)


def _guard_source(e, ns: _Namespace) -> str:
    """A guard checks, and names itself and the user's line when the check fails; a scalar
    assumption (a branch, an integer) is checked inline, it runs on every call."""
    x, expected = (_operand_src(v, ns) for v in e.inputs)
    check = ns.bind(check_guard, "check_guard", numbered=False)
    call = f"{check}({x}, {expected}, {format_eqn(e)!r}, {e.source!r})"
    value = e.inputs[1].value
    if isinstance(value, (bool, np.bool_)):               # a branch: a truth test is cheapest
        return f"True if {'' if value else 'not '}{x} else {call}"
    return call if isinstance(value, np.ndarray) else f"{x} == {expected} or {call}"


SCALAR_DTYPES = frozenset(map(np.dtype, (np.float64, np.bool_)))


def is_scalar(tape: Tape) -> bool:
    """Can the tape be compiled to Python float arithmetic: every value 0-d float64 or bool,
    every equation a guard or of a primitive that declares its ``scalar_spelling``?"""
    values = list(tape.inputs) + [v for e in tape.eqns for v in e.outputs]
    return bool(tape.eqns) and all(v.aval.shape == () and v.aval.dtype in SCALAR_DTYPES for v in values) \
        and all(e.prim.kind == "guard" or e.prim.scalar_spelling is not None for e in tape.eqns)


@gc_paused
def generate(tape: Tape, name: str = "f", scalar: bool = False) -> tuple[str, dict]:
    """(source, globals) of a Python function computing the tape: numpy code, or with
    ``scalar`` (see ``is_scalar``) Python float code, whose results are numpy float64 scalars as
    numpy's would be."""
    ns = _Namespace(scalar)
    last = _last_reads(tape)
    lines = [f"def {name}({', '.join(f'v{v.n}' for v in tape.inputs)}):"]
    zero_d = [v for v in tape.inputs if v.aval.shape == () and v.aval.dtype.kind in "fc"]
    if scalar:
        ns.names = _registers(tape, last)
    elif zero_d:
        lines.append(f"    {', '.join(f'v{v.n}' for v in zero_d)} = "
                     f"{', '.join(f'{_value_src(v.aval.dtype, ns)}(v{v.n})' for v in zero_d)}"
                     "  # numpy scalars: numpy's arithmetic on Python floats (x / 0.0 is inf)")
    n_forward = tape.n_forward if isinstance(tape, GradTape) else len(tape.eqns)
    dead = {} if scalar else _dead_after(tape, last)
    for i, e in enumerate(tape.eqns):
        if i == 0 and n_forward:
            lines.append("    # forward")
        if i == n_forward and isinstance(tape, GradTape):
            lines.append("    # backward")
        lhs = ", ".join(_operand_src(v, ns) for v in e.outputs) + \
            ("," if len(e.outputs) == 1 and e.prim.multiple_results else "")
        rhs = eqn_source(e, ns) if e.prim.kind != "guard" else _guard_source(e, ns)
        line = f"    {lhs} = {rhs}"
        comment = [", ".join(f"%{v.n}" for v in e.outputs)] if scalar else []
        if e.origin.kind != "primal":
            comment.append(e.origin.describe())
        if comment:
            line += f"  # {': '.join(comment)}"
        lines.append(line)
        if i in dead:
            lines.append(f"    del {', '.join(f'v{v.n}' for v in dead[i])}")
    inputs = set(tape.inputs)
    outs = ", ".join(_output_src(x, ns, inputs) for x in tape.outputs)
    lines.append(f"    return ({outs}{',' if len(tape.outputs) == 1 else ''})")
    return "\n".join(lines) + "\n", ns.globals


def _output_src(x, ns: _Namespace, inputs: set) -> str:
    """An output; in scalar code a computed float as the numpy float64 numpy would give."""
    src = _operand_src(x, ns)
    if ns.scalar and type(x) is Var and x.aval.dtype == np.float64 and x not in inputs:
        return f"np.float64({src})"
    return src


def _last_reads(tape: Tape) -> dict[Var, int]:
    """Variable -> index of the last equation reading it (the tape's outputs: past the end)."""
    last: dict[Var, int] = {}
    for i, e in enumerate(tape.eqns):
        for x in e.inputs:
            if type(x) is Var:
                last[x] = i
    for x in tape.outputs:
        if type(x) is Var:
            last[x] = len(tape.eqns)
    return last


def _registers(tape: Tape, last: dict[Var, int]) -> dict[Var, str]:
    """Names for scalar code that reuse a dead value's name (``r3 = r3 * 0.9``), as a hand-written
    scalar gradient does: a Python frame with one local per equation, thousands of them, is slow
    to make and keeps every float alive (measured: 1.7x slower on bench.workloads' scalar
    workload). The tape's own names are in the comments."""
    names = {v: f"v{v.n}" for v in tape.inputs}
    inputs, free, n = set(tape.inputs), [], 0
    for i, e in enumerate(tape.eqns):
        for x in {x for x in e.inputs if type(x) is Var}:
            if last[x] == i and x not in inputs:
                free.append(names[x])
        for v in e.outputs:
            if free:
                names[v] = free.pop()
            else:
                names[v], n = f"r{n}", n + 1
        free += [names[v] for v in e.outputs if v not in last]
    return names


FREE_BYTES = 1 << 16   # temporaries at least this large are deleted right after their last use;
MANY = 100             # in a tape of more than this many, the small ones too, a block at a time:
BLOCK = 32             # after every this many equations


def _dead_after(tape: Tape, last: dict[Var, int]) -> dict[int, list[Var]]:
    """Equation index -> temporaries to delete after it. Straight-line code would otherwise
    keep every intermediate alive to the end, so each new array lands in fresh memory and pays
    its page faults (measured: 2.7x slower on the CNN gradient of bench/bench_cnn.py), and in a
    long tape of small arrays misses numpy's cache of small blocks (1.2x slower on
    bench.workloads' 240-op vector). Short tapes, the ones people read, keep their small
    temporaries; long ones delete them in blocks, not with a ``del`` line per line (Python
    compiles a statement in 10-20 us: the 20,000-op chain has 60,000 equations)."""
    keep, end = set(tape.inputs), len(tape.eqns)
    temporaries = [v for v, i in last.items() if i < end and v not in keep and v.aval.shape != ()]
    many = len(temporaries) > MANY
    dead: dict[int, list[Var]] = {}
    for v in temporaries:
        if v.aval.size * v.aval.dtype.itemsize >= FREE_BYTES:
            dead.setdefault(last[v], []).append(v)
        elif many:
            dead.setdefault(min(last[v] | (BLOCK - 1), end - 1), []).append(v)
    return dead


def _define(tape: Tape, name: str, scalar: bool):
    source, namespace = generate(tape, name, scalar)
    exec(compile(source, f"<ad.compile {name}>", "exec"), namespace)
    return source, namespace[name]


class Compiled:
    """A tape compiled to numpy source. ``.source`` is the code; calling it runs the code.

    A tape of Python floats (``is_scalar``) is compiled to ``math`` and float arithmetic, 5x
    faster than numpy on scalars (``scalar=False`` keeps numpy); where ``math`` raises on a
    value numpy answers with inf or nan (``math.log(0.0)``, ``1.0 / 0.0``, overflow), that call
    reruns the numpy code, so results are numpy's either way."""

    scalar = False           # compiled to Python float code
    numpy_fn = None          # then the numpy code too, made on its first use

    def __init__(self, tape: Tape, name: str = "f", scalar: bool | None = None):
        self.tape, self.name = tape, name
        self.scalar = is_scalar(tape) if scalar is None else scalar and is_scalar(tape)
        self.source, self.fn = _define(tape, name, self.scalar)

    def __call__(self, *args, cotangents=()):
        return self.call_flat(self.tape.flatten_args(args) + list(cotangents))

    def run(self, flat: list) -> tuple:
        """The generated function on the flat inputs."""
        if not self.scalar:
            return self.fn(*flat)
        try:
            return self.fn(*flat)
        except GuardError:
            raise
        except (ArithmeticError, ValueError):     # math refuses what numpy answers with inf/nan
            if self.numpy_fn is None:
                self.numpy_fn = _define(self.tape, self.name, False)[1]
            return self.numpy_fn(*flat)

    def call_flat(self, flat: list):
        """Run on the flat traced inputs; results shaped like the tape's outputs."""
        tape = self.tape
        out = list(self.run(flat))
        if isinstance(tape, GradTape):
            return tape.split(out)
        return pytree.unflatten(tape.out_tree, out) if tape.out_tree is not None else tuple(out)

    def __repr__(self) -> str:
        return self.source

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}```"


def compile_tape(tape: Tape, name: str = "f", scalar: bool | None = None) -> Compiled:
    """Compile a (gradient) tape to a callable with readable ``.source``; a tape of Python
    floats to ``math`` unless ``scalar=False``."""
    return Compiled(tape, name, scalar)
