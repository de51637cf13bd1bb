"""Compiling a tape to straight-line numpy source. The source is shown to learners and executed
for speed: a compiled gradient is, by construction, a hand-written gradient.

A short tape (at most ``LONG`` equations: the ones people read line by line, in the docs and
notebooks) is one line per equation, ``v7`` for ``%7``, a comment with the provenance. A long
one is written as a person writes a long gradient, one line per step of the loop::

    r1 = np.tanh(r0 * c_0_5)  # %3
    r151 = r151 * c_0_5 * (1 - r1 * r1)  # %900: pullback of %4 (multiply), %3 (tanh)

- a value read once, by the same user line (the same ``Eqn.source``, in the same section), is
  written into its reader's expression (``_plan``; a pullback into another's line only if all of
  it fits; at most ``INLINE`` equations a line; parentheses where Python's precedence needs them);
- names of dead values are reused (``_registers``), so a value dies when its name is taken, with
  no ``del`` line (large ones are still deleted after their last read); the comment names the
  line's tape variable ``%N`` and the pullbacks in it: the link to the tape and its listing;
- a float constant among float64 arrays is a read-only 0-d array named for its value (``c_0_9``
  is 0.9, ``c_m1em05`` is -1e-05): numpy converts a Python float operand on every call, about
  0.3 us, which doubles the cost of an operation on a small array.
- hundreds of lines that repeat but for their register numbers (an unrolled loop of the user's)
  are written back as a loop (``ad.reroll``): Python compiles a line in about 11 us, half the
  first call of the 20,000-op chain, and a loop of numpy calls costs 0.06 us a step more.

Why (measured side by side with the one-line-per-equation code, machine shared and loaded):
Python compiles a statement in 10-20 us, and the 10,000-op chain's gradient (30,002 equations)
was 30,944 lines: now 10,007, generated and compiled 2x faster (0.89 -> 0.42 s); the same code
runs faster (a value dies as soon as its name is reused, into numpy's cache of small blocks:
the 2,000-op chain 1.26x faster at length 16, 1.04x at length 1000; bench.workloads' 240-op
vector, with the 0-d constants, 1.25x -> 0.9x the hand-written numpy gradient). The scalar
code (Python floats, ``is_scalar``) is written the same way (1.54x -> 1.3x the hand-written
``math`` gradient). ``python -m bench.bench_compile_time`` measures the compile stage.
"""
from __future__ import annotations

import ast
import collections
import functools
import keyword
import math
import re
import string
import sys
from typing import Callable

import numpy as np

from . import pytree
from .backward import GradTape
from .core_prims import check_guard
from .errors import GuardError
from .reroll import reroll
from .dispatch import public_name
from .tape import Lit, Tape, Var, format_eqn, gc_paused


LONG = 200     # a tape of more equations is written compactly (the module docstring)
INLINE = 6     # at most this many equations in one line of a long tape


class _Namespace:
    """Names for the constants and functions the generated code needs; ``scalar``: the code is
    the scalar specialisation (Python floats, ``math``); ``compact``: a long tape's code."""

    def __init__(self, scalar: bool = False, compact: bool = False):
        self.globals = {"np": np, "math": math} if scalar else {"np": np}
        self.scalar, self.compact = scalar, compact
        self.names: dict[Var, str] = {}      # reused names (scalar code, long tapes; else v7 for %7)
        self._ids: dict = {}
        self.calls: dict = {}                # primitive -> the function its default spelling calls
        self.spellings = _Spellings(scalar)  # primitive -> its _Spelling
        self._floats: dict = {}              # float constants' names
        self.literals: dict = {}             # literal -> its source (but a float's)
        self.float_literals: dict = {}       # (float literal, among floats, as an array) -> its source

    def bind(self, value, stem: str, numbered: bool = True) -> str:
        key = id(value)
        if key not in self._ids:
            name = f"{stem}{len(self._ids)}" if numbered or stem in self.globals else stem
            self._ids[key] = name
            self.globals[name] = value
        return self._ids[key]

    def constant(self, x: float) -> str:
        """A float operand among arrays: a read-only 0-d float64 array named for its value."""
        key = x if x else repr(x)               # 0.0 and -0.0 are equal, and not the same
        if key not in self._floats:
            name = self._floats[key] = "c_" + repr(x).translate(_SPELLED)
            value = self.globals[name] = np.array(x, np.float64)
            value.flags.writeable = False
        return self._floats[key]


_SPELLED = str.maketrans({".": "_", "-": "m", "+": "p"})     # repr(-1e-05) -> m1em05


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
    if type(v) is float:
        return repr(v) if math.isfinite(v) else f"float({str(v)!r})"
    if ns.scalar and np.ndim(v) == 0 and np.result_type(v) in SCALAR_DTYPES:
        v = np.asarray(v).item()         # the same number as a Python float (or bool)
    if isinstance(v, np.ndarray):
        return ns.bind(v, "c")
    return _value_src(v, ns)


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


def eqn_source(e, ns: _Namespace, exprs: dict | None = None, spelling: "_Spelling | None" = None) -> str:
    """The right-hand side of one equation, as its primitive's ``spelling`` (``scalar_spelling``
    in scalar code) says: a format string over the operand and param sources, a function of
    the operand sources and the params, or by default a call of the numpy function (else of
    the impl) with the params as keywords. ``exprs``: the sources of operands written into this
    expression (``_plan``), with their precedence; ``spelling``: the primitive's, if known."""
    prim = e.prim
    if spelling is None:
        spelling = ns.spellings[prim]
    names, args, literals = ns.names, [], False
    for x in e.inputs:
        if type(x) is not Var:
            text = ns.literals.get(x)
            if text is None:                     # new, or a float: _literal_sources writes it
                args.append(x)
                literals = True
            else:
                args.append(text)
        elif exprs and (written := exprs.pop(x, None)) is not None:
            text, precedence = written
            needs = spelling.needs[len(args)] if spelling.needs is not None else _ANYWHERE
            args.append(text if precedence >= needs else f"({text})")
        else:
            args.append(names[x] if names else f"v{x.n}")
    if literals:
        _literal_sources(e, args, spelling, ns)
    if spelling.fill is not None:
        if spelling.params:
            given = dict(e.params)
            return spelling.fill(args, [_value_src(given[k], ns) for k in spelling.params])
        return spelling.fill(args, ())
    if spelling.text is not None:
        return spelling.text(args, e.kwargs)
    fn = ns.calls.get(prim)
    if fn is None:
        fn = ns.calls[prim] = _function_path(prim.function, ns) or \
            ns.bind(prim.impl, _ident(prim.name), numbered=False)
    if e.params:
        args += [f"{k}={_value_src(v, ns)}" for k, v in e.params]
    return f"{fn}({', '.join(args)})"


@functools.cache     # once per spelling
def _template(spelling: str) -> tuple[Callable, tuple[str, ...]]:
    """A format-string spelling as a function of the operand sources and the sources of the
    params it names (in that order): an f-string, 5x faster than ``str.format``."""
    parts, params = [], []
    for text, field, spec, conversion in string.Formatter().parse(spelling):
        parts.append(text.replace("{", "{{").replace("}", "}}"))
        if field is not None:
            if not field.isdigit() and field not in params:
                params.append(field)
            parts.append("{" + (f"a[{field}]" if field.isdigit() else f"p[{params.index(field)}]")
                         + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")
    return eval(f"lambda a, p: f{''.join(parts)!r}"), tuple(params)   # noqa: S307 (our own template)


def _literal_sources(e, args: list, spelling: "_Spelling", ns: _Namespace) -> None:
    """Write the literal operands (in ``args`` as themselves). A float among float64 operands
    of an elementwise primitive is a Python float: it computes the same, and np.float64(0.9)
    would be built again on every call; in a long tape's array code a 0-d array (numpy converts
    a Python float operand on every call, ~0.3 us: twice the cost of a product of small arrays).
    Each literal is written once (``ns.literals``; a float once per way, ``ns.float_literals``):
    a rule's pullback template shares its literals with every equation made from it."""
    floats = spelling.floats and _all_float64(e.inputs)
    array = floats and ns.compact and e.outputs[0].aval.shape != ()
    for k, x in enumerate(args):
        if type(x) is Lit:
            if ns.scalar and type(x.value) is int and e.outputs[0].aval.dtype == F64:
                args[k] = repr(float(x.value))     # numpy's 0.0: a where's 0 would stay an int, -0 is 0
                continue
            if type(x.value) not in _FLOATS:
                args[k] = ns.literals[x] = _operand_src(x, ns)     # the same in every equation
                continue
            key = (x, floats, array)
            text = ns.float_literals.get(key)
            if text is None:
                if not floats:
                    text = _operand_src(x, ns)
                elif array:
                    text = ns.constant(float(x.value))
                else:
                    text = _value_src(float(x.value), ns)
                ns.float_literals[key] = text
            args[k] = text


_FLOATS = (float, np.float64)
F64 = np.dtype(np.float64)


def _all_float64(operands) -> bool:
    found = False
    for x in operands:
        if type(x) is Var:
            if x.aval.dtype is not F64 and x.aval.dtype != F64:
                return False
            found = True
    return found


# -- writing an expression into another -------------------------------------------------------
# Python's operator precedence, low to high: an expression written into a slot that needs more
# is parenthesized (``v1 * (1 - v2)``); a call, a name or a subscript binds tightest.
_ATOM, _ANYWHERE = 16, 1
_BINARY = {ast.BitOr: 6, ast.BitXor: 7, ast.BitAnd: 8, ast.LShift: 9, ast.RShift: 9, ast.Add: 10,
           ast.Sub: 10, ast.Mult: 11, ast.MatMult: 11, ast.Div: 11, ast.FloorDiv: 11, ast.Mod: 11,
           ast.Pow: 13}


def _precedence(node) -> int:
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)]
    if isinstance(node, ast.UnaryOp):
        return 4 if isinstance(node.op, ast.Not) else 12
    if isinstance(node, ast.Compare):
        return 5
    if isinstance(node, ast.BoolOp):
        return 2 if isinstance(node.op, ast.Or) else 3
    if isinstance(node, ast.IfExp):
        return 1
    if isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.Name, ast.Constant)):
        return _ATOM
    return 0                    # a lambda, a bare tuple...: never written into another expression


def _needs(parent, child) -> int:
    """The precedence an expression needs to stand unparenthesized as ``child`` of ``parent``."""
    if isinstance(parent, ast.BinOp):
        p = _BINARY[type(parent.op)]
        if isinstance(parent.op, ast.Pow):                   # right-associative; 2 ** -x
            return _ATOM if child is parent.left else 12
        return p if child is parent.left else p + 1
    if isinstance(parent, ast.UnaryOp):
        return 4 if isinstance(parent.op, ast.Not) else 12
    if isinstance(parent, ast.Compare):
        return 6
    if isinstance(parent, ast.BoolOp):
        return _precedence(parent) + 1
    if isinstance(parent, ast.IfExp):
        return 1 if child is parent.orelse else 2
    if isinstance(parent, ast.Call) and child is not parent.func or isinstance(parent, ast.keyword):
        return _ANYWHERE
    if isinstance(parent, ast.Subscript) and child is parent.slice \
            or isinstance(parent, (ast.Tuple, ast.Slice)):
        return _ANYWHERE
    return _ATOM


@functools.cache     # once per spelling
def _shape(spelling: str) -> tuple[int, dict[int, int], dict[int, int]]:
    """A format-string spelling's precedence, the precedence each operand slot needs, and how
    often each slot occurs (an expression is written only into a slot that occurs once)."""
    fields = [(text, name) for text, name, _, _ in string.Formatter().parse(spelling)]
    code = "".join(text + ("" if name is None else f"_{name}_" if name.isdigit() else "_param_")
                   for text, name in fields)
    counts = collections.Counter(int(name) for _, name in fields if name is not None and name.isdigit())
    tree = ast.parse(code, mode="eval")
    needs = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, ast.Name) and child.id.startswith("_") and child.id[1:-1].isdigit():
                needs[int(child.id[1:-1])] = _needs(parent, child) if parent is not tree else _ANYWHERE
    root = tree.body
    slot = isinstance(root, ast.Name) and root.id.startswith("_") and root.id.endswith("_")
    return 0 if slot else _precedence(root), needs, counts      # "{0}" is what its operand is


def _plan(tape: Tape, ns: _Namespace) -> tuple[list[int] | range, dict[Var, int]]:
    """The line each equation is written in (its own index, or in a long tape the line of the
    reader it is written into), and where each named variable is last read (the line that
    reads it last; the tape's outputs: past the end; a value written into its reader has no name).

    A value is written into its reader if it is one value of a pure primitive, read once, by an
    equation of the same user line (``Eqn.source``) in the same section, forward or backward,
    and the line stays at most ``INLINE`` equations long; a value of one pullback goes into a
    line of another only if the line has room for all of its pullback's equations so far (so
    that a line is one step of the user's loop, ``g = g * 0.5 * (1 - t * t)``, not one and a
    half). One pass from the end: a value's readers come first."""
    eqns = tape.eqns
    end = len(eqns)
    last: dict[Var, int] = {x: end for x in tape.outputs if type(x) is Var}
    if not ns.compact:
        for i, e in enumerate(eqns):
            for x in e.inputs:
                if type(x) is Var and last.get(x) != end:
                    last[x] = i
        return range(end), last
    n_forward = tape.n_forward if isinstance(tape, GradTape) else end
    runs, so_far = [0] * end, [1] * end      # eqn -> its run (user line), its index in its pullback
    run = 0
    for start, stop in ((0, n_forward), (n_forward, end)):          # no run spans both sections
        source, origin = _NOWHERE, None
        for i in range(start, stop):
            e = eqns[i]
            o, s = e.origin, e.source
            if s != source:
                run += 1
            elif o is origin or o.of is origin.of and o.kind == origin.kind != "primal" \
                    and o.rule == origin.rule:
                so_far[i] = so_far[i - 1] + 1
            runs[i] = run
            source, origin = s, o
    once: dict[Var, int] = {}                 # value -> its reader, while it has one (until defined)
    line, width = [0] * end, [1] * end        # eqn -> its line, line -> its length
    spellings = ns.spellings
    for i in range(end - 1, -1, -1):
        e = eqns[i]
        at = i
        r = once.pop(v := e.outputs[0], None)
        if r is not None and runs[r] == runs[i] and spellings[e.prim].writable:
            reader, into = eqns[r], line[r]
            takes = spellings[reader.prim].takes          # the reader's slots that take an expression
            if width[into] + (1 if r - i < so_far[r] else so_far[i]) <= INLINE \
                    and (takes is None or reader.inputs.index(v) in takes):
                at = into
                width[at] += 1
                del last[v]                   # it has no name: it lives inside the expression
        line[i] = at
        for x in e.inputs:
            if type(x) is Var:
                read = last.get(x)
                if read is None:
                    last[x] = at
                    once[x] = i
                else:
                    once.pop(x, None)
                    if at > read:
                        last[x] = at
    return line, last


_NOWHERE = object()     # the source before a section's first equation: unlike any other


class _Spellings(dict):
    """Primitive -> its ``_Spelling``, made on first use."""

    def __init__(self, scalar: bool):
        super().__init__()
        self.scalar = scalar

    def __missing__(self, prim) -> "_Spelling":
        self[prim] = spelling = _Spelling(prim, self.scalar)
        return spelling


class _Spelling:
    """How the code writes a primitive (made once per primitive and namespace): its spelling;
    a format string's f-string, the params it names, its precedence, what its slots need; can
    its value be written into a reader (one value of a pure primitive, a format string or a
    call); the operand slots an expression can be written into (``None``: any, a call's
    arguments; none for a guard or a function of the operands' sources; else the slots of a
    format string that occur once, else it would be computed twice); are its float literals
    among float64 arrays (an elementwise primitive, array code)."""

    __slots__ = ("text", "fill", "params", "precedence", "needs", "takes", "writable", "guard", "floats")

    def __init__(self, prim, scalar: bool):
        self.text = text = prim.scalar_spelling if scalar else prim.spelling
        formatted = type(text) is str
        self.fill, self.params = _template(text) if formatted else (None, ())
        self.precedence, self.needs, counts = _shape(text) if formatted else (_ATOM, None, None)
        self.writable = prim.kind == "pure" and not prim.multiple_results and not callable(text)
        self.guard = prim.kind == "guard"
        self.floats = not scalar and prim.elementwise      # a float literal among float64 arrays
        if self.guard or callable(text):
            self.takes = frozenset()
        else:
            self.takes = None if counts is None else frozenset(k for k, n in counts.items() if n == 1)


SCALAR_DTYPES = frozenset(map(np.dtype, (np.float64, np.bool_)))


def is_scalar(tape: Tape) -> bool:
    """Can the tape be compiled to Python float arithmetic: every value 0-d float64 or bool,
    every equation a guard or of a primitive that declares its ``scalar_spelling``? (A loop
    that stops at the first array: Compiled asks this of every tape.)"""
    if not tape.eqns or not all(v.aval.shape == () and v.aval.dtype in SCALAR_DTYPES for v in tape.inputs):
        return False
    for e in tape.eqns:
        if e.prim.kind != "guard" and e.prim.scalar_spelling is None:
            return False
        for v in e.outputs:
            if v.aval.shape != () or v.aval.dtype not in SCALAR_DTYPES:
                return False
    return True


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
def generate(tape: Tape, name: str = "f", scalar: bool = False) -> tuple[str, dict]:
    """(source, globals) of a Python function computing the tape: numpy code, or with
    ``scalar`` (see ``is_scalar``) Python float code, whose results are numpy float64 scalars as
    numpy's would be."""
    eqns = tape.eqns
    ns = _Namespace(scalar, compact=len(eqns) > LONG)
    line, last = _plan(tape, ns)
    reuse = scalar or ns.compact
    lines = [f"def {name}({', '.join(f'v{v.n}' for v in tape.inputs)}):"]
    zero_d = [v for v in tape.inputs if v.aval.shape == () and v.aval.dtype.kind in "fc"]
    if not scalar and zero_d:
        lines.append(f"    {', '.join(f'v{v.n}' for v in zero_d)} = "
                     f"{', '.join(f'{_value_src(v.aval.dtype, ns)}(v{v.n})' for v in zero_d)}"
                     "  # numpy scalars: numpy's arithmetic on Python floats (x / 0.0 is inf)")
    dying, dead = _last_reads(tape, last)
    if reuse:
        ns.names = names = _registers(tape, last, line, dying, dead)
    grad = isinstance(tape, GradTape)
    n_forward = tape.n_forward if grad else len(eqns)
    exprs: dict[Var, tuple[str, int]] = {}       # the sources written into a later line
    origins: dict[int, list] = {}                # line -> the backward origins written into it
    spellings = ns.spellings
    if n_forward:
        lines.append("    # forward")
    for i, e in enumerate(eqns):
        if i == n_forward and grad:
            lines.append("    # backward")
        spelling, origin = spellings[e.prim], e.origin
        rhs = _guard_source(e, ns) if spelling.guard else eqn_source(e, ns, exprs, spelling)
        if (at := line[i]) != i:
            exprs[e.outputs[0]] = (rhs, spelling.precedence)
            if origin.kind != "primal":
                seen = origins.get(at)
                if seen is None:
                    origins[at] = [origin]
                elif seen[-1] is not origin:
                    seen.append(origin)
            continue
        outs = e.outputs
        if len(outs) == 1:
            lhs = (names[outs[0]] if reuse else f"v{outs[0].n}") + ("," if e.prim.multiple_results else "")
        else:
            lhs = ", ".join(_operand_src(v, ns) for v in outs)
        if reuse:
            comment = f"%{outs[0].n}" if len(outs) == 1 else ", ".join(f"%{v.n}" for v in outs)
            seen = origins.pop(i, None)
            if seen is not None:
                if seen[-1] is not origin:
                    seen.append(origin)
                lines.append(f"    {lhs} = {rhs}  # {comment}: {_described(seen)}")
            elif origin.kind != "primal":
                lines.append(f"    {lhs} = {rhs}  # {comment}: {origin.describe()}")
            else:
                lines.append(f"    {lhs} = {rhs}  # {comment}")
        elif origin.kind != "primal":
            lines.append(f"    {lhs} = {rhs}  # {origin.describe()}")
        else:
            lines.append(f"    {lhs} = {rhs}")
        deleted = dead[i]
        if deleted:
            lines.append(f"    del {', '.join(_operand_src(v, ns) for v in deleted)}")
    inputs = set(tape.inputs)
    outs = ", ".join(_output_src(x, ns, inputs) for x in tape.outputs)
    lines.append(f"    return ({outs}{',' if len(tape.outputs) == 1 else ''})")
    if ns.compact and not scalar:
        lines[1:] = reroll(lines[1:], ns.globals)
    return "\n".join(lines) + "\n", ns.globals


def _described(origins: list) -> str:
    """The origins of a line's equations, in order, each once: ``pullback of %2 (multiply),
    %1 (tanh)``."""
    parts: list[str] = []
    before = None
    for o in origins:
        # (equal origins have the same ``of``: most lines' pullbacks differ there, cheaply)
        if o.kind == "primal" or before is not None and (o is before or o.of is before.of and o == before):
            continue
        if o.kind == "pullback" and before is not None and before.kind == "pullback":
            parts[-1] += f", %{o.of.n} ({o.rule})"
        else:
            parts.append(o.describe())
        before = o
    return "; ".join(parts)


def _output_src(x, ns: _Namespace, inputs: set) -> str:
    """An output; in scalar code a computed float as the numpy float64 numpy would give."""
    src = _operand_src(x, ns)
    if ns.scalar and type(x) is Var and x.aval.dtype == np.float64 and x not in inputs:
        return f"np.float64({src})"
    return src


def _registers(tape: Tape, last: dict[Var, int], line: list[int] | range, dying: list,
               dead: list) -> dict[Var, str]:
    """Names that reuse a dead value's name (``r3 = r3 * 0.9``), as a hand-written gradient
    does, for scalar code and long tapes (the tape's own names are in the comments). A Python
    frame with one local per equation, thousands of them, is slow to make and keeps every value
    alive: on Python floats 1.7x slower (bench.workloads' scalar workload); on small arrays a
    new one misses numpy's cache of small blocks (the 2,000-op chain of length 16 is 1.26x
    faster), and ``del`` lines cost Python as much to compile as the lines they free. A line's
    values take the names of the small values it reads last; a large one's name is free after
    its ``del`` (``_last_reads``)."""
    names = {v: f"v{v.n}" for v in tape.inputs}
    free, n = [], 0
    for i, e, at in zip(range(len(line)), tape.eqns, line):
        if at != i:
            continue
        for x in dying[i]:
            free.append(names[x])
        for v in e.outputs:
            if free:
                names[v] = free.pop()
            else:
                names[v] = f"r{n}"
                n += 1
            if v not in last:                    # never read
                free.append(names[v])
        for x in dead[i]:
            free.append(names[x])
    return names


FREE_BYTES = 1 << 16   # temporaries at least this large are deleted right after their last use


def _last_reads(tape: Tape, last: dict[Var, int]) -> tuple[list, list]:
    """Per line (its equation's index), the temporaries it reads last: the small ones, and the
    large ones, deleted after it. Straight-line code would otherwise keep every intermediate
    alive to the end (a long tape's reused names, until the name is used again), so each new
    array lands in fresh memory and pays its page faults (measured: 2.7x slower on the CNN
    gradient of bench/bench_cnn.py). Small ones are not worth a line: Python compiles a
    statement in 10-20 us."""
    keep, end = set(tape.inputs), len(tape.eqns)
    large: dict[int, bool] = {}                  # id(aval) -> is it large (avals are shared)
    dying: list = [()] * end                     # line -> its small last reads (a list, if any)
    dead: list = [()] * end                      # line -> its large ones
    for v, i in last.items():
        if i >= end or v in keep:
            continue
        aval = v.aval
        big = large.get(id(aval))
        if big is None:
            big = large[id(aval)] = aval.size * aval.dtype.itemsize >= FREE_BYTES
        at = dead if big else dying
        if at[i]:
            at[i].append(v)
        else:
            at[i] = [v]
    return dying, dead


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
