"""How compiled code writes what a tape holds: the emission API that the numpy source generator
(``codegen``) and the fused backend's Python driver (``fused``) share, so that both spell a
primitive, an operand and a constant the same way, and one change of spelling reaches both.

- ``Namespace``: the globals a generated function needs (numpy, the constants it cannot write
  as literals, the functions it calls by name) and their names; one per generated function.
  Its methods say which spelling a primitive takes and what a default call calls: code over
  another array library overrides them (``ad.compiler.array_api.ArrayNamespace``).
- ``value_source``, ``operand_source``: a Python value, an operand (a variable's name, a
  literal) as source text that evaluates back to it, bit for bit.
- ``Spelling``: a primitive's ``spelling`` (``scalar_spelling`` in scalar code) made once per
  primitive: its f-string, its precedence, what an operand written into it needs;
  ``eqn_source``: an equation's right-hand side from it; ``guard_source``: a guard's check.
- ``comment``: a line's comment, the tape variables it computes and the origins of its
  equations, the link from the code to the tape's listing; ``scope_note``: the comment line
  heading a run of lines of one scope (``# in cell#3/sig``).
- holes (``REGISTER``, ``MARK``): the numbers a rolled loop steps, a register's (``r12``) and
  a tape variable's in a comment (``%12``), written as a hole character and the number, so that
  ``reroll`` finds and writes loops from the holes alone, whatever the code and the comments
  say around them; ``written`` is the text a reader sees.
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

from ..core_prims import check_guard
from ..dispatch import public_name
from ..origins import OriginKind
from ..tape import Lit, Var, format_eqn


class Namespace:
    """Names for the constants and functions the generated code needs; ``scalar``: the code is
    the scalar specialisation (Python floats, ``math``); ``compact``: a long tape's code."""

    xp = None       # the array namespace the code runs on (ArrayNamespace); None: numpy

    def __init__(self, scalar: bool = False, compact: bool = False):
        self.globals = {"np": np, "math": math} if scalar else {"np": np}
        self.scalar, self.compact = scalar, compact
        self.names: dict[Var, str] = {}      # reused names (scalar code, long tapes; else v7 for %7)
        self._ids: dict = {}
        self.calls: dict = {}                # primitive -> the function its default spelling calls
        self.spellings = Spellings(self)     # primitive -> its Spelling
        self._floats: dict = {}              # float constants' names
        self.literals: dict = {}             # literal -> its source (but a float's)
        self.float_literals: dict = {}       # (float literal, among floats, as an array) -> its source

    def bind(self, value, stem: str, numbered: bool = True) -> str:
        key = id(value)
        if key not in self._ids:
            name = f"{stem}{len(self._ids)}" if numbered or stem in self.globals else stem
            self._ids[key] = name
            self.define(name, value)
        return self._ids[key]

    def define(self, name: str, value) -> None:
        """Make ``value`` the global ``name`` of the generated function."""
        self.globals[name] = value

    def spelling_of(self, prim):
        """The spelling the primitive declares for this code (None: the default call)."""
        return prim.scalar_spelling if self.scalar else prim.spelling

    def function(self, prim) -> str:
        """What a default call of the primitive calls: numpy's (or scipy's) function by its
        public name (a reduction that is a ufunc's ``reduce``, that reduce), else the impl,
        bound under the primitive's name."""
        reduce = UFUNC_REDUCES.get(prim.function)
        if reduce is not None:
            return f"np.{reduce.__name__}.reduce"
        return _function_path(prim.function, self) or self.helper(prim.impl, prim)

    def helper(self, fn, prim) -> str:
        """``fn`` bound under the primitive's name (``sum_to``)."""
        return self.bind(fn, _ident(prim.name), numbered=False)

    def constant(self, x: float) -> str:
        """A float operand among arrays: a read-only 0-d float64 array named for its value."""
        key = x if x else repr(x)               # 0.0 and -0.0 are equal, and not the same
        if key not in self._floats:
            name = self._floats[key] = "c_" + repr(x).translate(_SPELLED)
            value = self.globals[name] = np.array(x, np.float64)
            value.flags.writeable = False
        return self._floats[key]


# numpy's reductions that are one ufunc's reduce behind a Python wrapper, called with the same
# operand, axis and keepdims (``np.sum`` is ``np.add.reduce``): compiled code calls the reduce,
# 2-15 us a call less (the most when a large matmul just left the caches cold)
UFUNC_REDUCES = {np.sum: np.add, np.prod: np.multiply, np.max: np.maximum, np.min: np.minimum}

_SPELLED = str.maketrans({".": "_", "-": "m", "+": "p"})     # repr(-1e-05) -> m1em05


def _ident(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    return s + "_" if keyword.iskeyword(s) or not s.isidentifier() else s


_EXACT_ITEM = frozenset(map(np.dtype, (      # numpy scalars whose .item() is the same number
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.complex64, np.complex128)))


def value_source(v, ns: Namespace) -> str:
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return repr(v)
    if isinstance(v, np.generic) and v.dtype in _EXACT_ITEM:   # (np.float64 is a float)
        item = value_source(v.item(), ns)
        if ns is not None and ns.xp is not None:     # a param of array code: its number
            return item
        if item.startswith("(") and item.endswith(")"):      # np.complex64(1.5-2j)
            item = item[1:-1]
        return f"np.{v.dtype.name}({item})"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else f"float({str(v)!r})"
    if isinstance(v, complex):
        return _complex_src(v)
    if isinstance(v, np.dtype):
        if ns is not None and ns.xp is not None:
            return f"xp.{v.name}"
        return f"np.{v.name}" if hasattr(np, v.name) else f"np.dtype({v.name!r})"
    if isinstance(v, tuple):
        inner = ", ".join(value_source(x, ns) for x in v)
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
    return f"complex({value_source(v.real, None)}, {value_source(v.imag, None)})"


def _short_float(x: float) -> str:
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def operand_source(x, ns) -> str:
    if type(x) is Var:
        return ns.names[x] if ns.names else f"v{x.n}"
    v = x.value
    if type(v) is float:
        return repr(v) if math.isfinite(v) else f"float({str(v)!r})"
    if ns.scalar and np.ndim(v) == 0 and np.result_type(v) in SCALAR_DTYPES:
        v = np.asarray(v).item()         # the same number as a Python float (or bool)
    elif ns.xp is not None and isinstance(v, np.generic):
        v = np.asarray(v)                # a 0-d array of its dtype, as numpy promotes a scalar
    if isinstance(v, np.ndarray):
        return ns.bind(v, "c")
    return value_source(v, ns)


def _function_path(f, ns: Namespace) -> str | None:
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


def eqn_source(e, ns: Namespace, exprs: dict | None = None, spelling: "Spelling | None" = None,
               out: str | None = None) -> str:
    """The right-hand side of one equation, as its primitive's ``spelling`` (``scalar_spelling``
    in scalar code) says: a format string over the operand and param sources, a function of
    the operand sources and the params, or by default a call of the numpy function (else of
    the impl) with the params as keywords. ``exprs``: the sources of operands written into this
    expression (``_plan``), with their precedence; ``spelling``: the primitive's, if known;
    ``out``: the name of an array to write the result into (the default call, ``out=``)."""
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
    if ns.xp is not None:
        ns.promote(e, args)
    if out is not None:                          # only the default call writes into an array
        args.append(f"out={out}")
    elif spelling.fill is not None:
        if spelling.params:
            given = dict(e.params)
            return spelling.fill(args, [value_source(given[k], ns) for k in spelling.params])
        return spelling.fill(args, ())
    elif spelling.text is not None:
        return spelling.text(args, e.kwargs)
    fn = ns.calls.get(prim)
    if fn is None:
        fn = ns.calls[prim] = ns.function(prim)
    if e.params:
        args += [f"{k}={value_source(v, ns)}" for k, v in e.params]
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


def _literal_sources(e, args: list, spelling: "Spelling", ns: Namespace) -> None:
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
                args[k] = ns.literals[x] = operand_source(x, ns)     # the same in every equation
                continue
            key = (x, floats, array)
            text = ns.float_literals.get(key)
            if text is None:
                if not floats:
                    text = operand_source(x, ns)
                elif array:
                    text = ns.constant(float(x.value))
                else:
                    text = value_source(float(x.value), ns)
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


class Spellings(dict):
    """Primitive -> its ``Spelling`` in a namespace, made on first use."""

    def __init__(self, ns: Namespace):
        super().__init__()
        self.ns = ns

    def __missing__(self, prim) -> "Spelling":
        self[prim] = spelling = Spelling(prim, self.ns)
        return spelling


class Spelling:
    """How the code writes a primitive (made once per primitive and namespace): its spelling;
    a format string's f-string, the params it names, its precedence, what its slots need; can
    its value be written into a reader (one value of a pure primitive, a format string or a
    call); the operand slots an expression can be written into (``None``: any, a call's
    arguments; none for a guard or a function of the operands' sources; else the slots of a
    format string that occur once, else it would be computed twice); are its float literals
    among float64 arrays (an elementwise primitive, array code)."""

    __slots__ = ("text", "fill", "params", "precedence", "needs", "takes", "writable", "guard", "floats")

    def __init__(self, prim, ns: Namespace):
        scalar = ns.scalar
        self.text = text = ns.spelling_of(prim)
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


SCALAR_DTYPES = frozenset(map(np.dtype, (np.float64, np.bool_)))   # the scalar code's values


def guard_source(e, ns: Namespace) -> str:
    """A guard checks, and names itself and the user's line when the check fails; a scalar
    assumption (a branch, an integer) is checked inline, it runs on every call."""
    x, expected = (operand_source(v, ns) for v in e.inputs)
    check = ns.bind(check_guard, "check_guard", numbered=False)
    call = f"{check}({x}, {expected}, {format_eqn(e)!r}, {e.source!r})"
    value = e.inputs[1].value
    if isinstance(value, (bool, np.bool_)):               # a branch: a truth test is cheapest
        return f"True if {'' if value else 'not '}{x} else {call}"
    if isinstance(value, np.ndarray):                      # (array code compares on its device)
        return call if ns.xp is None else f"True if xp.all({x} == {expected}) else {call}"
    return f"{x} == {expected} or {call}"


# -- comments ---------------------------------------------------------------------------------

def comment(outputs, origins) -> str:
    """The comment of a line in register code (scalar code, long tapes): the tape variables it
    computes, and the origins of its equations if any is not the user's program (``%5:
    pullback of %4 (multiply), %3 (tanh)``), each variable as a hole."""
    marks = f"{MARK}{outputs[0].n}" if len(outputs) == 1 else ", ".join(f"{MARK}{v.n}" for v in outputs)
    return f"{marks}: {_described(origins)}" if origins else marks


def _described(origins) -> str:
    """The origins of a line's equations, in order, each once: ``pullback of %2 (multiply),
    %1 (tanh)``, the variables as holes."""
    parts: list[str] = []
    before = None
    for o in origins:
        # (equal origins have the same ``of``: most lines' pullbacks differ there, cheaply)
        if o.kind is OriginKind.PRIMAL or before is not None and (o is before or o.of is before.of and o == before):
            continue
        if o.kind is OriginKind.PULLBACK and before is not None and before.kind is OriginKind.PULLBACK:
            parts[-1] += f", {MARK}{o.of.n} ({o.rule})"
        elif o.of is None:
            parts.append(o.describe())
        else:                           # its variable, %4 as the tape's listing writes it, as a hole
            parts.append(o.describe().replace(f"%{o.of.n}", f"{MARK}{o.of.n}", 1))
        before = o
    return "; ".join(parts)


def scope_note(scope: tuple) -> str:
    """The comment line (indented, as it reads) before the first line of a run of lines in one
    scope (``Eqn.scope``): ``# in cell#3/sig``, ``# top level`` for the traced function's own
    lines. A name that holds a character a comment cannot (a newline) is written escaped."""
    if not scope:
        return "    # top level"
    text = "/".join(scope)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return f"    # in {text}"


# -- holes: the numbers a rolled loop steps ---------------------------------------------------
# A hole is its character and the number, ``f"{REGISTER}{n}"`` (written where the line is, as
# ``comment`` does: a call a line would cost 2% of generating a long tape). Nothing else in the
# generated code holds these characters (``repr`` escapes them in strings, ``_ident`` in names),
# and no digit follows a name or a ``%N``, so a hole's number is the run of digits after it.
REGISTER, MARK = "\x00", "\x01"
PREFIX = {REGISTER: "r", MARK: "%"}       # what a hole is written as, before its number: r12, %12
_WRITTEN = str.maketrans(PREFIX)
_HOLE = re.compile(f"[{REGISTER}{MARK}]")
_NUMBER = re.compile(f"[{REGISTER}{MARK}]([0-9]+)")
_REGISTER_NUMBER, _MARK_NUMBER = re.compile(f"{REGISTER}[0-9]+"), re.compile(f"{MARK}[0-9]+")


def written(text: str) -> str:
    """The text a reader sees: each hole written as its name, ``r12``, ``%12``."""
    return text.translate(_WRITTEN)


def unnumbered(text: str) -> str:
    """The text with its holes' numbers taken out: lines that differ only in those numbers are
    the same (one pass over a whole function's text)."""
    return _MARK_NUMBER.sub(MARK, _REGISTER_NUMBER.sub(REGISTER, text))


def numbers(text: str) -> list[int]:
    """The numbers of the text's holes, in order."""
    return list(map(int, _NUMBER.findall(text)))


def holes(pattern: str) -> tuple[list[str], list[str]]:
    """An unnumbered text's pieces between its holes, and its holes (``REGISTER``, ``MARK``)."""
    return _HOLE.split(pattern), _HOLE.findall(pattern)


def with_numbers(pattern: str) -> Callable[..., str]:
    """A function of the numbers of an unnumbered text's holes, in order, writing the text
    with them: ``with_numbers(unnumbered(t))(*numbers(t)) == t``."""
    return pattern.replace("{", "{{").replace("}", "}}").replace(REGISTER, REGISTER + "{}") \
        .replace(MARK, MARK + "{}").format
