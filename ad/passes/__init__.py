"""Optimisation passes over tapes. Each returns a new tape (gradient tapes keep their forward /
backward boundary and ``meta``'s variable maps: ``rebuild``) and never changes what the tape
computes.

* ``dce`` (``dead_code``): drop equations whose outputs nothing reads (guards stay: they check
  the inputs).
* ``cse``: merge equations with the same primitive, inputs and params (never opaque or random
  ones).
* ``fold``: evaluate equations whose inputs are all literals (small results only).
* ``simplify``: algebraic clean-ups, one list of rules keyed by the primitive objects
  (``rewrites.RULES``: x+0, x*1 (not for complex x, where numpy's x*1 turns an infinite part's 0
  into NaN), x*0 for structural zeros, double negation, transpose of transpose, no-op
  reshape/broadcast/astype/positive), and two read from the primitives' traits: an
  ``elementwise`` operation reads through broadcasts, a ``linear_in`` one of zeros is zero.
  A rewrite keeps the output's aval, so it never turns a complex value real or drops a
  conjugate.
* ``factor`` (``distributive``): the distributive law on derivative equations,
  ``a*c1 + (a*c2)*b -> a*(c1 + c2*b)`` (it changes rounding: see its docstring).

* ``signs`` (``negations``): negations moved out of products (exact): ``(-a)*(-b) -> a*b``, ``x + (-y) -> x - y``;
  run by the code generators (compiled, fused), not by ``optimize``: it moves a rule's sign into the next
  rule's equations, so a lifted tape's blocks would no longer hold their rules' values.

``optimize`` (``pipeline``) runs factor, then fold, simplify and CSE together in one walk over
the equations (``walk``: one walk is their fixed point), then DCE, and all again if that left
something to factor. It records op counts in ``tape.meta["passes"]``.
"""
from __future__ import annotations

from .dead_code import dce
from .distributive import factor
from .pipeline import op_counts, optimize
from .rewrites import RULES
from .negations import signs
from .walk import cse, fold, simplify

__all__ = ["optimize", "op_counts", "factor", "signs", "fold", "simplify", "cse", "dce", "RULES"]
