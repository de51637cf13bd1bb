"""``signs``: negations moved out of products and into sums, where they cancel. Derivatives
multiply negated factors often (the pullback of a quotient is -dy*y/b, the derivative of cos is
-sin x), so a chain rule through both computes two negations that cancel; a hand-written
gradient has neither. The code generators run it (``ad.compiler.codegen``, ``fused``), not
``optimize``: it moves one rule's sign into the next rule's equations, so the lifted tape's
blocks, which the debugger compares with the rules' closures, would no longer hold their values.
A pass of its own because whether a negation can move depends on all the readers of its value.

Exact: IEEE rounding is symmetric, so (-a)*b is -(a*b) and (-a)/b is -(a/b) to the bit, and
a + (-b) is a - b, a - (-b) is a + b by definition (only a NaN's sign bit can differ). A sum
whose first operand is negated stays as it is: -(a + b) is not (-a) - b at signed zeros.
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

from ..core_prims import add_p
from ..lib.elementwise import divide_p, multiply_p, negative_p, subtract_p
from ..tape import Eqn, Tape, Var
from .rebuild import rebuild

PRODUCTS = (multiply_p, divide_p)


def signs(tape: Tape) -> Tape:
    """The derivative equations with negations moved outward: a product of one negated factor
    is the negation of the plain product (which the next product absorbs), of two the plain
    product; ``x + (-y)`` becomes ``x - y``, ``(-x) + y`` becomes ``y - x``, ``x - (-y)``
    becomes ``x + y``. A negation is moved only where every reader of its value absorbs it,
    so no value is computed twice and the tape never grows. Real float values of derivative
    equations only (``Origin.is_backward``: pullbacks, pushforwards); the user's own equations
    keep their arithmetic."""
    absorbed = _absorbed(tape.eqns, tape.outputs, _candidates(tape.eqns))
    negated: dict = {}      # v -> u where v = -u and v is not computed
    kept, dropped, counter = [], [], None
    for i, e in enumerate(tape.eqns):
        flips = [type(x) is Var and x in negated for x in e.inputs]
        if _negation(e) and e.outputs[0] in absorbed:
            negated[e.outputs[0]] = e.inputs[0]
            dropped.append(i)
            continue
        if not any(flips):
            kept.append(e)
            continue
        plain = tuple(negated[x] if flip else x for x, flip in zip(e.inputs, flips))
        y = e.outputs[0]
        if e.prim in PRODUCTS and sum(flips) == 1:
            if counter is None:
                counter = itertools.count(1 + max(v.n for v in (*tape.inputs, *(v for f in tape.eqns for v in f.outputs))))
            u = Var(next(counter), y.aval)
            kept.append(replace(e, inputs=plain, outputs=(u,)))
            if y in absorbed:
                negated[y] = u
                dropped.append(i)
            else:
                kept.append(Eqn(negative_p, (u,), (), e.outputs, e.source, e.origin, e.scope))
        elif e.prim in PRODUCTS:
            kept.append(replace(e, inputs=plain))
        elif e.prim is add_p and flips[1]:
            kept.append(replace(e, prim=subtract_p, inputs=(e.inputs[0], plain[1])))
        elif e.prim is add_p:
            kept.append(replace(e, prim=subtract_p, inputs=(e.inputs[1], plain[0])))
        else:                                   # subtract_p, flips[1]
            kept.append(replace(e, prim=add_p, inputs=(e.inputs[0], plain[1])))
    return rebuild(tape, kept, dropped, {}) if negated else tape


def _negation(e: Eqn) -> bool:
    return e.prim is negative_p and type(e.inputs[0]) is Var and _real(e)


def _real(e: Eqn) -> bool:
    """A derivative equation of one real float output: the kind this pass rewrites."""
    return e.origin.is_backward and len(e.outputs) == 1 and e.outputs[0].aval.dtype.kind == "f"


def _candidates(eqns) -> set:
    """Values that may end up negated: negations, and products of one."""
    found = set()
    for e in eqns:
        if _negation(e) or (e.prim in PRODUCTS and _real(e) and any(x in found for x in e.inputs if type(x) is Var)):
            found.add(e.outputs[0])
    return found


def _absorbed(eqns, outputs, candidates: set) -> set:
    """The values each of whose readers can take the value's negation instead, found from the
    last equation back (a reader's own output is decided before its operands are): a product
    (if its output is absorbed in turn, or it is the value's only reader: its one new negation
    replaces the one dropped), the second operand of a sum or difference, the first of a sum
    whose second is not a candidate itself (-a + -b is not -(a + b) at signed zeros)."""
    reads, absorbing, absorbed = Counter(x for x in outputs if type(x) is Var), Counter(), set()
    for e in eqns:
        reads.update(x for x in e.inputs if type(x) is Var)
    for e in reversed(eqns):
        if _real(e):
            y = e.outputs[0]
            if reads[y] == absorbing[y] and y in candidates:
                absorbed.add(y)
            for k, x in enumerate(e.inputs):
                if type(x) is Var and x in candidates and (
                        (e.prim in PRODUCTS and (y in absorbed or reads[x] == 1))
                        or (e.prim in (add_p, subtract_p) and k == 1)
                        or (e.prim is add_p and e.inputs[1] not in candidates)):
                    absorbing[x] += 1
    return absorbed
