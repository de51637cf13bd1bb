"""The rewrite rules of ``simplify`` and what they know of the equations before the one they
rewrite (``Seen``). Kept apart from the walk that applies them: a new rule is added here and
nowhere else, and ``PLANS`` tells the walk which rules an equation need be asked at all.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core_prims import add_p, astype_p, broadcast_to_p, full_p, positive_p, reshape_p, sum_to_p, transpose_p
from ..lib.contraction import einsum_p, matmul_p, matvec_p, vecdot_p, vecmat_p
from ..lib.elementwise import divide_p, multiply_p, negative_p, power_p, subtract_p
from ..tape import Eqn, Lit, Var


# What a rule can need one of the operands to be (bits): most equations read none of these,
# and an equation is asked only the rules whose need it meets (``PLANS``). RENAMED is CSE's:
# a literal that an earlier one of the same value stands for.
ZERO_LITERAL, ONE_LITERAL, STRUCTURAL_ZERO, BROADCAST, RENAMED = 1, 2, 4, 8, 16


class Seen:
    """What ``simplify`` knows of the equations before the current one."""

    def __init__(self):
        self.producers: dict = {}      # Var -> the equation that made it
        self.zeros: set = set()        # outputs of full(fill_value=0) (or their folds): structural zeros
        self.marks: dict = {}          # Var -> STRUCTURAL_ZERO or BROADCAST (most operations read none)

    def add(self, e: Eqn):
        """Note a kept equation of one of the primitives in ``READ_BACK``."""
        if e.prim is full_p and e.kwargs["fill_value"] == 0:
            self.zeros.add(e.outputs[0])
            self.marks[e.outputs[0]] = STRUCTURAL_ZERO
        elif e.prim is broadcast_to_p:
            self.marks[e.outputs[0]] = BROADCAST
        for v in e.outputs:
            self.producers[v] = e

    def made_by(self, x, prim):
        """The equation of ``prim`` (one a rule declares it reads: ``_reads``) that made ``x``, or None."""
        p = self.producers.get(x) if type(x) is Var else None
        return p if p is not None and p.prim is prim else None

    def structural_zero(self, x) -> bool:
        return x in self.zeros

    def zero(self, x) -> bool:
        """A structural zero, or a literal whose elements are all 0."""
        if type(x) is Var:
            return x in self.zeros
        return all_equal(x.value, 0)

    def one(self, x) -> bool:
        return type(x) is Lit and all_equal(x.value, 1)


def all_equal(v, c) -> bool:
    """Is the literal ``v`` a number or a non-empty array of numbers all equal to ``c``?"""
    if isinstance(v, (int, float, complex)):   # Python scalars, the common case, without numpy's cost
        return v == c
    return isinstance(v, (np.ndarray, np.generic)) and np.size(v) > 0 and bool(np.all(v == c))


def _same(x, v: Var) -> bool:
    return x.aval == v.aval


# -- rewrite rules -------------------------------------------------------------------------------
# A rule sees one equation (operands already rewritten) and returns what its output can be
# replaced by: an existing operand, ZERO, ("inputs", operands) for the same equation on other
# operands, or None.
ZERO = object()   # a rewrite's answer: the output is a structural zero


def _needs(need: int):
    """Declare what ``rule`` needs an operand to be (one of the bits, or several: any of them)."""
    def declare(rule):
        rule.needs = need
        return rule
    return declare


def _reads(*prims):
    """Declare the primitives whose equations ``rule`` asks ``Seen.made_by`` for (``READ_BACK``)."""
    def declare(rule):
        rule.reads = prims
        return rule
    return declare


def _neutral(test, positions, need, complex_exact=True):
    """``x op c -> x`` when the operand at one of ``positions`` passes ``test`` (``Seen.zero``,
    ``Seen.one``, which ``need`` a literal or a structural zero); with ``complex_exact=False``
    not for complex results."""
    @_needs(need)
    def rule(e, ins, out, seen):
        if not complex_exact and out.aval.dtype.kind == "c":
            return None
        for k in positions:
            other = ins[1 - k]
            if test(seen, ins[k]) and _same(other, out):
                return other
        return None
    return rule


@_needs(STRUCTURAL_ZERO)
def _absorbing_zero(e, ins, out, seen):
    """``x * 0 -> 0`` (and ``x @ 0``) for a structural zero, whatever ``x`` holds."""
    return ZERO if seen.zeros and any(seen.structural_zero(x) for x in ins) else None


def _no_op(e, ins, out, seen):
    """An operation that leaves its operand's shape and dtype unchanged leaves it unchanged."""
    return ins[0] if _same(ins[0], out) else None


@_reads(negative_p)
def _double_negation(e, ins, out, seen):
    p = seen.made_by(ins[0], negative_p)
    return p.inputs[0] if p is not None and _same(p.inputs[0], out) else None


def _identity_permutation(e, ins, out, seen):
    axes = e.kwargs["axes"]
    return ins[0] if axes == tuple(range(len(axes))) else None


@_reads(transpose_p)
def _transpose_of_transpose(e, ins, out, seen):
    axes = e.kwargs["axes"]
    p = seen.made_by(ins[0], transpose_p)
    if p is not None and tuple(p.kwargs["axes"][a] for a in axes) == tuple(range(len(axes))) \
            and _same(p.inputs[0], out):
        return p.inputs[0]
    return None


RULES = [
    (add_p, _neutral(Seen.zero, (0, 1), ZERO_LITERAL | STRUCTURAL_ZERO)),       # x + 0, 0 + x
    (subtract_p, _neutral(Seen.zero, (1,), ZERO_LITERAL | STRUCTURAL_ZERO)),    # x - 0
    (multiply_p, _absorbing_zero),               # x * 0 (structural zeros only: 0 * inf)
    *((p, _absorbing_zero) for p in (matmul_p, einsum_p, vecdot_p, matvec_p, vecmat_p)),   # x @ 0
    # x * 1, 1 * x and x / 1, not for complex x: numpy computes them with 1+0j, and an infinite
    # part times that 0 is NaN ((inf+0j) * 1 == inf+nanj), which x itself does not hold
    (multiply_p, _neutral(Seen.one, (0, 1), ONE_LITERAL, complex_exact=False)),
    (divide_p, _neutral(Seen.one, (1,), ONE_LITERAL, complex_exact=False)),
    (power_p, _neutral(Seen.one, (1,), ONE_LITERAL)),        # x ** 1
    (negative_p, _double_negation),              # -(-x)
    (transpose_p, _identity_permutation),        # transpose(x, (0, 1, ...))
    (transpose_p, _transpose_of_transpose),      # transpose(transpose(x, p), inverse of p)
    *((p, _no_op) for p in (positive_p, reshape_p, broadcast_to_p, sum_to_p, astype_p)),
]


@_needs(BROADCAST)
@_reads(broadcast_to_p)
def _through_broadcasts(e, ins, out, seen):
    """An elementwise operand made by broadcast_to is broadcast by the operation anyway: a new
    equation reading the un-broadcast value when the result's shape stays the same."""
    if len(ins) < 2:
        return None
    new_ins = list(ins)
    for k, x in enumerate(ins):
        p = seen.made_by(x, broadcast_to_p)
        if p is not None:
            trial = new_ins[:k] + [p.inputs[0]] + new_ins[k + 1:]
            if np.broadcast_shapes(*(np.shape(t.value) if type(t) is Lit else t.aval.shape
                                     for t in trial)) == out.aval.shape:
                new_ins = trial
    return ("inputs", tuple(new_ins)) if new_ins != list(ins) else None


@_needs(STRUCTURAL_ZERO)
def _linear_of_zeros(e, ins, out, seen):
    """Zero when the operands it is linear in are structural zeros (whether it is linear in them
    jointly, as x + y, or in each, as x @ y)."""
    return ZERO if seen.zeros and all(seen.structural_zero(ins[k]) for k in e.prim.linear_in) else None


# The equations ``Seen`` notes: fulls (structural zeros), broadcasts (marked), and those of the
# primitives a rule asks for the producer of (``Seen.made_by``); most equations are none of these.
READ_BACK = frozenset({full_p, broadcast_to_p, *(p for _, r in RULES for p in getattr(r, "reads", ())),
                        *_through_broadcasts.reads})


class _Plans(dict):
    """``PLANS[prim][operands]``: the rules that can apply to an equation of ``prim`` whose
    operands are ``operands`` (bits: ``ZERO_LITERAL``...; no rule needs ``RENAMED``), in order:
    the primitive's own, then those its traits allow (an elementwise operation reads through
    broadcasts; a linear one of zeros is zero). Nothing for a primitive of several outputs: the
    rules rewrite one."""

    def __missing__(self, prim):
        rules = []
        if not prim.multiple_results:
            rules = [r for q, r in RULES if q is prim]
            if prim.elementwise:
                rules.append(_through_broadcasts)
            if prim.linear_in:
                rules.append(_linear_of_zeros)
        needs = [getattr(r, "needs", 0) for r in rules]
        plan = self[prim] = tuple(tuple(r for r, need in zip(rules, needs) if not need or need & operands)
                                  for operands in range(2 * RENAMED))
        return plan


PLANS = _Plans()
NO_PLAN = ((),) * (2 * RENAMED)


def simplified(e: Eqn, rules, seen: Seen):
    """What the first of ``rules`` (from ``PLANS``) that applies makes of a one-output equation:
    an operand that replaces its output, or a new equation (a structural zero, other operands),
    or None. Never a zero in the user's own program: there 0 * inf keeps IEEE semantics."""
    ins, out = e.inputs, e.outputs[0]
    for rule in rules:
        target = rule(e, ins, out, seen)
        if target is ZERO:
            if not e.origin.is_backward:
                return None
            return Eqn(full_p, (), (("dtype", out.aval.dtype), ("fill_value", 0), ("shape", out.aval.shape)),
                       e.outputs, e.source, e.origin, e.scope)
        if type(target) is tuple:          # ("inputs", operands)
            return replace(e, inputs=target[1])
        if target is not None:
            return target
    return None
