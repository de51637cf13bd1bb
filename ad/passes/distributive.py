"""``factor``: the distributive law on derivative equations. A pass of its own, run before the
walk, because it rewrites three equations into three others where the walk rewrites one at a
time, and because it changes rounding (``factor`` says how much), which no other pass does.
"""
from __future__ import annotations

import functools
import itertools
from collections import Counter
from operator import attrgetter

from ..core_prims import add_p
from ..lib.elementwise import multiply_p
from ..scopes import common_prefix
from ..tape import Eqn, Lit, Tape, Var
from .rebuild import rebuild


def factor(tape: Tape) -> Tape:
    """The distributive law where a derivative adds two products of one value (a cotangent):
    ``a*c1 + (a*c2)*b -> a*(c1 + c2*b)`` for real float values, scalar literals c1 and c2, and
    products read nowhere else. One multiplication fewer, as in the hand-written gradient of
    ``c1*x + c2*f(x)``; the products' values are gone (``meta["cotangents"]`` no longer shows
    those that were a cotangent).

    It changes rounding: the factored sum differs from the unfactored one by a few ulps of
    |a| (|c1| + |c2 b|) (relative to the sum, more where c1 + c2 b nearly cancels). At the edges
    of the floats: a = inf with b = 0 gives inf where inf*c1 + (inf*c2)*0 is nan; an overflow of
    a*c2 goes away, one of c2*b can appear. Only derivative equations are factored: the user's
    own program keeps numpy's arithmetic."""
    eqns = tape.eqns
    start = getattr(tape, "n_forward", 0)     # a gradient tape's derivative equations: its backward ones
    prims = list(map(attrgetter("prim"), eqns[start:]))
    if add_p not in prims:      # no sum at all (a chain of operations), found at C speed
        return tape
    adds = [start + i for i, p in enumerate(prims) if p is add_p]
    made = {eqns[i].outputs[0]: (i, eqns[i])        # output -> (index, its multiply)
            for i in (start + k for k, p in enumerate(prims) if p is multiply_p)}
    # reads by the derivative equations (no forward one reads a product of theirs)
    uses = Counter(itertools.chain.from_iterable(map(attrgetter("inputs"), eqns[start:])))
    uses.update(tape.outputs)
    replaced: dict = {}     # index of an add -> the three equations that replace it
    dropped = []            # the products' indices
    counter = None
    for i in adds:
        e = eqns[i]
        match = _distributive(e, made, uses)
        if match is None:
            continue
        (a, c1, c2, b), products = match
        if counter is None:     # numbers for new variables
            defined = (*tape.inputs, *(v for f in eqns for v in f.outputs))
            counter = itertools.count(1 + max(v.n for v in defined))
        s, q = e.outputs[0], made[products[-1]][1]
        u, v = Var(next(counter), s.aval), Var(next(counter), s.aval)
        scope = functools.reduce(common_prefix, (made[x][1].scope for x in products), e.scope)
        replaced[i] = (Eqn(multiply_p, (c2, b), (), (u,), q.source, q.origin, scope),
                       Eqn(add_p, (c1, u), (), (v,), q.source, q.origin, scope),
                       Eqn(multiply_p, (a, v), (), (s,), e.source, e.origin, scope))
        dropped += [made[x][0] for x in products]
    if not dropped:
        return tape
    dropped.sort()
    gone = set(dropped)
    kept = []
    for k, f in enumerate(eqns):
        if k not in gone:
            kept.extend(replaced.get(k, (f,)))
    return rebuild(tape, kept, dropped, {})


def _distributive(e: Eqn, made: dict, uses) -> tuple | None:
    """For ``e``: s = p + q with p = a*c1, q = r*b, r = a*c2 (operands in either order, the
    products read only there, all derivative equations): ((a, c1, c2, b), (p, r, q)), else None."""
    s = e.outputs[0]
    if not (e.origin.is_backward and s.aval.dtype.kind == "f"):    # complex: where numpy's c*z makes nans
        return None

    def scaled(x):      # x = v * c for a variable v like s and a scalar literal c, read only once
        if uses[x] != 1 or x not in made or not made[x][1].origin.is_backward:
            return None
        ins = made[x][1].inputs
        for v, c in (ins, ins[::-1]):
            if type(v) is Var and type(c) is Lit and v.aval == s.aval and c.aval.shape == ():
                return v, c
        return None

    for p, q in (e.inputs, e.inputs[::-1]):
        ac1 = scaled(p) if q in made and uses[q] == 1 and made[q][1].origin.is_backward else None
        if ac1 is None or q.aval != s.aval:
            continue
        ins = made[q][1].inputs
        for r, b in (ins, ins[::-1]):
            ac2 = scaled(r) if type(r) is Var else None
            if ac2 is not None and ac2[0] is ac1[0] and type(b) is Var and b.aval == s.aval:
                return (ac1[0], ac1[1], ac2[1], b), (p, r, q)
    return None
