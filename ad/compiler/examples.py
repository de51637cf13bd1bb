"""Sizes that follow the number of examples: what a tape polymorphic in its number of examples
holds.

A tape is traced at concrete shapes: the mean over 64 examples leaves ``shape=(64,)`` and
``0.015625`` in it. ``ad.grad_tape(..., examples=...)`` traces twice and anti-unifies the two
tapes (``ad.compiler.unify``); what differs between them becomes a function of ``n``, the number
of examples, recorded here (``ad.compiler.polymorphic`` writes it as code):

- ``SizeInt``, ``SizeFloat``: a param that depends on ``n``: an int or float holding its value
  at the sample's size (so the interpreter, the debugger and every pass read the tape as it was
  traced) whose repr is its source (``n``, ``n - 1``, ``2 * n``): the printer and the compiled
  code write that.
- ``Sized``: a literal operand that depends on ``n``. The literal keeps its plain value (numpy
  promotes an int or float subclass like a numpy scalar: a float32 array times one would be
  float64), and ``Examples.literals`` maps it to its form, written as a division at run time
  (``1.0 / n``), the value a trace at ``n`` would have held (checked bit for bit at both sizes).
- ``Examples``: the tape's ``meta["examples"]``: where ``n`` is read (input, axis), each
  variable's symbolic shape, the symbolic literals, and the equations it describes: a tape
  changed since (a pass that rebuilt a param from a concrete shape would drop a symbol) is
  refused, never compiled with a stale size.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..tape import Tape, format_eqn
from .emit import Namespace, value_source


class ExamplesError(ValueError):
    """A program that is not polymorphic in its number of examples, or a polymorphic tape
    asked for what it cannot give."""


def evaluate(source: str, n: int, c=None):
    """The value of a size's source at ``n`` examples (``c``: its constant, ``Sized``)."""
    return eval(source, {"np": np, "n": n, "c": c})     # noqa: S307 (sources written by unify)


class _Size:
    """A number that keeps its value at the sample's size and knows its source as a function of
    ``n``: its repr, parenthesized unless it is ``n`` (a spelling may write it next to an operator)."""

    def __new__(cls, value, source: str):
        self = super().__new__(cls, value)
        self.source = source
        return self

    def __repr__(self) -> str:
        return _written(self.source)

    def __reduce__(self):
        return type(self), (self.number(self), self.source)

    def at(self, n: int):
        return evaluate(self.source, n)


class SizeInt(_Size, int):
    """An int param that follows the number of examples (``n - 1``).

    >>> s = ad.compiler.examples.SizeInt(64, "n - 1")
    >>> s + 1, (s, 3), s.at(10)
    (65, ((n - 1), 3), 9)
    """
    number = int


class SizeFloat(_Size, float):
    """A float param that follows the number of examples (``1.0 / n``)."""
    number = float


@dataclass(frozen=True)
class Sized:
    """A literal operand that follows the number of examples: ``template`` over ``n`` and ``c``
    (``c / (n - 1)``), ``c`` a constant of the literal's type (a float, a numpy scalar, an array);
    ``integer``: the numpy integer type of an int literal (numpy promotes it unlike a Python
    int), which numpy code writes around it."""
    template: str
    c: Any = None
    integer: str | None = None

    def at(self, n: int):
        value = evaluate(self.template, n, self.c)
        return value if self.integer is None else np.dtype(self.integer).type(value)

    def source(self, ns: Namespace) -> str:
        """The literal as compiled code writes it, parenthesized unless it is ``n`` (array code
        takes an int as a Python int: its operands are cast as numpy promotes them)."""
        text = self.template if self.c is None else _C.sub(lambda _: value_source(self.c, ns), self.template)
        if self.integer is not None and ns.xp is None:
            return f"np.{self.integer}({text})"
        return _written(text)

    def __str__(self) -> str:
        return _C.sub(lambda _: repr(self.c.tolist() if isinstance(self.c, np.ndarray) else self.c), self.template)


_C = re.compile(r"\bc\b")     # the constant in a template


def _written(source: str) -> str:
    """A size's source as code writes it: parenthesized unless it is ``n``."""
    return source if source == "n" else f"({source})"


def shape_at(shape: tuple, n: int) -> tuple[int, ...]:
    """A symbolic shape's value at ``n`` examples."""
    return tuple(s.at(n) if isinstance(s, SizeInt) else s for s in shape)


@dataclass(frozen=True, eq=False)
class Examples:
    """``meta["examples"]`` of a tape polymorphic in its number of examples ``n``.

    size: ``n`` at the sample the tape was traced at; inputs: (input position, axis) of each
    examples input, ``n`` read from the first; shapes: the symbolic shape of every variable whose
    shape depends on ``n`` (a tuple holding ``SizeInt``); literals: Lit -> ``Sized``; eqns: the
    equations this describes."""
    size: int
    inputs: tuple[tuple[int, int], ...]
    shapes: dict = field(repr=False)
    literals: dict = field(repr=False)
    eqns: tuple = field(repr=False)

    def shape(self, x) -> tuple:
        """The symbolic shape of a variable (its aval's if it does not depend on ``n``)."""
        return self.shapes.get(x, x.aval.shape)

    def axes(self, x) -> tuple[int, ...]:
        """The axes of a variable's shape that hold the examples (whose size is ``n``)."""
        return tuple(i for i, s in enumerate(self.shapes.get(x, ())) if isinstance(s, SizeInt) and s.source == "n")

    def check(self, tape: Tape) -> None:
        """Refuse a tape changed since it was made polymorphic: its sizes may be stale."""
        if tape.eqns is not self.eqns:
            raise ExamplesError(
                "this tape's meta['examples'] describes another tape: it was changed since "
                "ad.grad_tape(..., examples=...) made it polymorphic in the number of examples (a pass "
                "rebuilds params from the sample's shapes and would drop the symbolic sizes); trace it "
                "again with examples= after changing the program, or compile the tape examples= returned")


def describe(e, i: int) -> str:
    """An equation as errors name it: its index, listing, primitive and the user's line."""
    return f"equation {i} ({format_eqn(e)}; {e.prim.name} at {e.source or 'an unknown line'})"


def is_polymorphic(tape: Tape) -> bool:
    return isinstance(tape.meta.get("examples"), Examples)
