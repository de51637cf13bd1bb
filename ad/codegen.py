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
from .dispatch import public_name
from .tape import Tape, Var, format_eqn, gc_paused


class _Namespace:
    """Names for the constants and functions the generated code needs."""

    def __init__(self):
        self.globals = {"np": np}
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
        return f"v{x.n}"
    v = x.value
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
    """The right-hand side of one equation, as its primitive's ``spelling`` says: a format
    string over the operand and param sources, a function of the operand sources and the
    params, or by default a call of the numpy function (else of the impl) with the params as
    keywords."""
    args = [_operand_src(x, ns) for x in e.inputs]
    spelling = e.prim.spelling
    if callable(spelling):
        return spelling(args, e.kwargs)
    if spelling is not None:
        return spelling.format(*args, **{k: _value_src(v, ns) for k, v in e.params})
    kw = "".join(f", {k}={_value_src(v, ns)}" for k, v in e.params)
    fn = _function_path(e.prim.function, ns) or ns.bind(e.prim.impl, _ident(e.prim.name), numbered=False)
    return f"{fn}({', '.join(args)}{kw})"


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


@gc_paused
def generate(tape: Tape, name: str = "f") -> tuple[str, dict]:
    """(source, globals) of a Python function computing the tape."""
    ns = _Namespace()
    lines = [f"def {name}({', '.join(f'v{v.n}' for v in tape.inputs)}):"]
    n_forward = tape.n_forward if isinstance(tape, GradTape) else len(tape.eqns)
    dead = _dead_after(tape)
    for i, e in enumerate(tape.eqns):
        if i == 0 and n_forward:
            lines.append("    # forward")
        if i == n_forward and isinstance(tape, GradTape):
            lines.append("    # backward")
        lhs = ", ".join(f"v{v.n}" for v in e.outputs) + ("," if len(e.outputs) == 1 and e.prim.multiple_results else "")
        rhs = eqn_source(e, ns) if e.prim.kind != "guard" else _guard_source(e, ns)
        line = f"    {lhs} = {rhs}"
        if e.origin.kind != "primal":
            line += f"  # {e.origin.describe()}"
        lines.append(line)
        if i in dead:
            lines.append(f"    del {', '.join(f'v{v.n}' for v in dead[i])}")
    outs = ", ".join(_operand_src(x, ns) for x in tape.outputs)
    lines.append(f"    return ({outs}{',' if len(tape.outputs) == 1 else ''})")
    return "\n".join(lines) + "\n", ns.globals


FREE_BYTES = 1 << 16   # temporaries at least this large are deleted after their last use


def _dead_after(tape: Tape) -> dict[int, list[Var]]:
    """Equation index -> large temporaries last read there. Straight-line code would otherwise
    keep every intermediate alive to the end, so each new array lands in fresh memory and pays
    its page faults (measured: 2.7x slower on the CNN gradient of bench/bench_cnn.py)."""
    last: dict[Var, int] = {}
    for i, e in enumerate(tape.eqns):
        for x in e.inputs:
            if type(x) is Var:
                last[x] = i
    keep = {x for x in tape.outputs if type(x) is Var} | set(tape.inputs)
    dead: dict[int, list[Var]] = {}
    for v, i in last.items():
        if v not in keep and v.aval.size * v.aval.dtype.itemsize >= FREE_BYTES:
            dead.setdefault(i, []).append(v)
    return dead


class Compiled:
    """A tape compiled to numpy source. ``.source`` is the code; calling it runs the code."""

    def __init__(self, tape: Tape, name: str = "f"):
        self.tape = tape
        self.source, namespace = generate(tape, name)
        exec(compile(self.source, f"<ad.compile {name}>", "exec"), namespace)
        self.fn = namespace[name]

    def __call__(self, *args, cotangents=()):
        return self.call_flat(self.tape.flatten_args(args) + list(cotangents))

    def call_flat(self, flat: list):
        """Run on the flat traced inputs; results shaped like the tape's outputs."""
        tape = self.tape
        out = list(self.fn(*flat))
        if isinstance(tape, GradTape):
            return tape.split(out)
        return pytree.unflatten(tape.out_tree, out) if tape.out_tree is not None else tuple(out)

    def __repr__(self) -> str:
        return self.source

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}```"


def compile_tape(tape: Tape, name: str = "f") -> Compiled:
    """Compile a (gradient) tape to a callable with readable ``.source``."""
    return Compiled(tape, name)
