"""Optimisation passes over tapes. Each returns a new tape (gradient tapes keep their forward /
backward boundary) and never changes what the tape computes.

* ``dce``: drop equations whose outputs nothing reads (guards stay: they check the inputs).
* ``cse``: merge equations with the same primitive, inputs and params (never opaque or random
  ones).
* ``fold``: evaluate equations whose inputs are all literals (small results only).
* ``simplify``: algebraic clean-ups, one list of rules keyed by the primitive objects (``RULES``:
  x+0, x*1 (not for complex x, where numpy's x*1 turns an infinite part's 0 into NaN), x*0 for
  structural zeros, double negation, transpose of transpose, no-op
  reshape/broadcast/astype/positive), and two read from the primitives' traits: an
  ``elementwise`` operation reads through broadcasts, a ``linear_in`` one of zeros is zero.
  A rewrite keeps the output's aval, so it never turns a complex value real or drops a
  conjugate.
* ``factor``: the distributive law on derivative equations, ``a*c1 + (a*c2)*b -> a*(c1 + c2*b)``
  (it changes rounding: see its docstring).

``optimize`` runs factor, then fold, simplify and CSE together in one walk over the equations,
then DCE (and all again if that left something to factor). The walk gives each equation, its operands
already rewritten, the rounds the passes run one after the other would give it (fold, one
rewrite, a merge, again until nothing changes), and that is final: the passes only read
equations before the one they rewrite, and the walk has left those in their final form. So one
walk is the passes' fixed point (tests/test_passes_fixed_point.py checks it against running them
one after the other until nothing changes). It records op counts in ``tape.meta["passes"]``.
"""
from __future__ import annotations

import bisect
import itertools
from collections import Counter
from dataclasses import replace
from operator import attrgetter

import numpy as np

from .backward import VAR_MAPS, GradTape
from .core_prims import (add_p, astype_p, broadcast_to_p, full_p, positive_p, reshape_p, sum_to_p,
                         transpose_p)
from .lib.contraction import einsum_p, matmul_p, matvec_p, vecdot_p, vecmat_p
from .lib.elementwise import divide_p, multiply_p, negative_p, power_p, subtract_p
from .tape import Eqn, Lit, Tape, Var, gc_paused

FOLD_MAX_SIZE = 1   # fold only scalars: array constants would hide the structure


def _rebuild(tape: Tape, kept: list[Eqn], dropped: list[int], subst: dict) -> Tape:
    """``tape`` with the equations ``kept`` (its own in order, some rewritten, some new) instead of its
    own: those at the indices ``dropped`` are gone and ``subst`` says what replaces their outputs
    (never by a variable ``subst`` replaces itself). A pass that changed nothing returns its
    tape itself instead."""
    eqns = tape.eqns
    removed = {v for i in dropped for v in eqns[i].outputs}
    meta = dict(tape.meta)
    for key in VAR_MAPS:      # maps onto this tape's variables follow the rewrite
        m = meta.get(key)
        if m is None:
            continue
        # the entries of removed variables (the map can have one for each forward variable: a
        # Python loop over it only when a value is removed)
        stale = [k for k in removed if k in m]
        if not removed.isdisjoint(m.values()):
            stale += [k for k, v in m.items() if v in removed]
        if stale:
            m = meta[key] = dict(m)
            for k in stale:
                if k not in m:            # stale by key and by value
                    continue
                if k in removed or m[k] not in subst:
                    del m[k]
                else:
                    m[k] = subst[m[k]]
    changes = {"eqns": tuple(kept), "outputs": tuple([subst.get(x, x) for x in tape.outputs]), "meta": meta}
    if isinstance(tape, GradTape):
        changes["n_forward"] = tape.n_forward - bisect.bisect_left(dropped, tape.n_forward)
    return tape.replace(**changes)


def dce(tape: Tape) -> Tape:
    """Drop the equations whose outputs nothing reads (guards stay: they check the inputs). The
    last equation that no other reads is the last dead one (a dead one after it would leave an
    unread one later still): found at C speed, it spares most tapes, which have nothing dead, the
    walk back from the outputs, and starts that walk there for the others."""
    eqns = tape.eqns
    read = set(itertools.chain.from_iterable(map(_INPUTS, eqns)))
    read.update(tape.outputs)
    unread = [i for i in itertools.compress(range(len(eqns)), map(read.isdisjoint, map(_OUTPUTS, eqns)))
              if eqns[i].prim.kind != "guard"]
    if not unread:
        return tape
    last = unread[-1]
    live = set(tape.outputs)
    live.update(itertools.chain.from_iterable(map(_INPUTS, eqns[last + 1:])))
    kept = []
    dropped = []
    for i in range(last, -1, -1):
        e = eqns[i]
        if live.isdisjoint(e.outputs) and e.prim.kind != "guard":
            dropped.append(i)
        else:
            kept.append(e)
            live.update(e.inputs)          # literals too: harmless, nothing defines them
    kept.reverse()
    dropped.reverse()
    return _rebuild(tape, kept + list(eqns[last + 1:]), dropped, {})


_INPUTS, _OUTPUTS = attrgetter("inputs"), attrgetter("outputs")


def cse(tape: Tape) -> Tape:
    return _walk(tape, cse=True)


def fold(tape: Tape) -> Tape:
    return _walk(tape, fold=True)


def simplify(tape: Tape) -> Tape:
    """Algebraic clean-ups (``RULES``, and the traits ``elementwise`` and ``linear_in``).
    Structural zeros are the outputs of ``full`` with fill 0 (what the backward pass emits for
    unreached cotangents); a product with one is a zero whatever the other factor holds, as in
    JAX's symbolic zeros."""
    return _walk(tape, simplify=True)


class _Literals(dict):
    """What the walk knows of each literal, made once for each (tapes share a few literal objects
    among many equations): ``self[x]``, what it is for the rules (``ZERO_LITERAL``, ``ONE_LITERAL``
    or neither), and for CSE ``RENAMED`` if an earlier literal of the same value stands for it
    (``self.canonical[x]``). CSE then keys an equation by its operands themselves, unless one of
    them is renamed."""

    def __init__(self):
        super().__init__()
        self.canonical: dict = {}     # literal -> the first literal of its value
        self._firsts: dict = {}       # a literal's value (``_literal_key``) -> its first literal

    def __missing__(self, x: Lit):
        v = x.value
        kind = self[x] = self._note(x, ZERO_LITERAL if _all_equal(v, 0) else ONE_LITERAL if _all_equal(v, 1)
                                    else 0)
        return kind

    def structural_zeros(self, lits):
        """Literals folded from structural zeros: zeros for the rules as their variables were."""
        for x in lits:
            self[x] = self._note(x, ZERO_LITERAL | STRUCTURAL_ZERO)

    def _note(self, x: Lit, kind: int) -> int:
        first = self.canonical[x] = self._firsts.setdefault(_literal_key(x.value), x)
        return kind if first is x else kind | RENAMED


def _literal_key(v) -> tuple:
    """A literal's value for CSE: an array by its identity, a scalar by its type and repr (which
    keeps 0.0 and -0.0, 0j and -0j apart)."""
    return ("array", id(v)) if isinstance(v, np.ndarray) else ("scalar", type(v), repr(v))


def _foldable(e: Eqn) -> bool:
    """Whether an equation that reads no variable folds (its outputs are small)."""
    return e.prim.kind == "pure" and all(v.aval.size <= FOLD_MAX_SIZE for v in e.outputs)


def _folded(e: Eqn) -> list[Lit]:
    """The outputs of an equation of literals, as literals."""
    out = e.prim.impl(*(x.value for x in e.inputs), **e.kwargs)
    lits = []
    for v, o in zip(e.outputs, out if e.prim.multiple_results else (out,)):
        scalar = not isinstance(o, np.ndarray)    # what numpy returned: keep a scalar one
        o = np.asarray(o, v.aval.dtype)
        o.flags.writeable = False
        lits.append(Lit(o[()] if scalar else o, v.aval))
    return lits


def _walk(tape: Tape, *, fold: bool = False, simplify: bool = False, cse: bool = False) -> Tape:
    """One walk over the equations doing the passes asked for. Each equation, its operands
    rewritten through what the walk replaced before it, goes through the rounds the passes would
    give it one after the other: folded, or rewritten once, or merged with an earlier equal one
    (its earlier forms count: the passes would have met them), again while a rewrite changes it.
    A product of a structural zero that folds to a literal keeps that literal a structural zero
    (one round of ``simplify`` would have used it, as a variable, before ``fold`` made it one).
    Written for speed (tens of thousands of equations): most of them meet no rule and cost one
    look at each operand (``_kinds``, inlined), an empty plan of rules and a CSE look-up."""
    seen = _Seen()
    marks, zeros = seen.marks, seen.zeros
    lit_kinds = _Literals()
    canonical = lit_kinds.canonical
    by_prim = _ByPrimitive(simplify, cse)
    subst: dict = {}
    kept: list = []
    keep = kept.append
    dropped: list = []
    rewritten = False
    for i, e in enumerate(tape.eqns):
        ins = e.inputs
        variables = False
        operands = 0        # what the operands are (bits ZERO_LITERAL... RENAMED)
        for x in ins:
            if type(x) is Lit:
                operands |= lit_kinds[x]
            elif x in subst:
                ins = tuple([subst.get(x, x) for x in ins])
                e = replace(e, inputs=ins)
                variables, operands = _kinds(ins, marks, lit_kinds)
                rewritten = True
                break
            else:
                variables = True
                if x in marks:
                    operands |= marks[x]
        outs = None
        keys = ()           # the CSE keys of the forms a rewrite left
        made_zero = False
        while True:     # this equation's rounds of the passes
            plan, table, noted = by_prim[e.prim]
            if fold and not variables and _foldable(e):
                outs = _folded(e)
                if made_zero:
                    zeros.update(outs)
                    lit_kinds.structural_zeros(outs)
                break
            changed = False
            rules = plan[operands]
            if rules:
                target = _simplified(e, rules, seen)
                if type(target) is Eqn:
                    e, ins, changed = target, target.inputs, True
                    variables, operands = _kinds(ins, marks, lit_kinds)
                    made_zero = e.prim is full_p
                    plan, table, noted = by_prim[e.prim]
                elif target is not None:
                    outs = (target,)
                    break
            if table is not None:
                key = tuple(map(canonical.get, ins, ins)) if operands & RENAMED else ins
                if e.params:
                    key = (key, e.params)
                try:
                    hit = table.setdefault(key, e.outputs)
                except TypeError:       # unhashable params
                    pass
                else:
                    if hit is not e.outputs:
                        if all(a.aval == b.aval for a, b in zip(hit, e.outputs)):
                            outs = hit
                            break
                        table[key] = e.outputs
                    if changed:         # a form it leaves: what replaces it answers for it too
                        keys += ((table, key),)
            if not changed:
                break
            rewritten = True
        if outs is None:
            keep(e)
            if noted:
                seen.add(e)
        else:
            subst.update(zip(e.outputs, outs))
            dropped.append(i)
            for table, key in keys:
                table[key] = outs
    return _rebuild(tape, kept, dropped, subst) if dropped or rewritten else tape


class _ByPrimitive(dict):
    """What a walk does with the equations of a primitive, made once per primitive: the rules it
    can ask them (``_PLANS``), its CSE table (None where CSE does not merge them), and whether
    ``_Seen`` notes them. A CSE table maps an equation's operands (a literal by the first of its
    value: ``_Literals``), with its params if it has any, to the outputs that equation stands for."""

    def __init__(self, simplify: bool, cse: bool):
        super().__init__()
        self.simplify, self.cse = simplify, cse

    def __missing__(self, prim):
        info = self[prim] = (_PLANS[prim] if self.simplify else _NO_PLAN,
                             {} if self.cse and prim.kind == "pure" else None,
                             self.simplify and prim in _READ_BACK)
        return info


def _kinds(ins, marks: dict, lit_kinds) -> tuple[bool, int]:
    """Does an equation read a variable, and what its operands are (bits ZERO_LITERAL... RENAMED)."""
    variables = False
    operands = 0
    for x in ins:
        if type(x) is Lit:
            operands |= lit_kinds[x]
        else:
            variables = True
            if x in marks:
                operands |= marks[x]
    return variables, operands


ZERO = object()   # a rewrite's answer: the output is a structural zero


class _Seen:
    """What ``simplify`` knows of the equations before the current one."""

    def __init__(self):
        self.producers: dict = {}      # Var -> the equation that made it
        self.zeros: set = set()        # outputs of full(fill_value=0) (or their folds): structural zeros
        self.marks: dict = {}          # Var -> STRUCTURAL_ZERO or BROADCAST (most operations read none)

    def add(self, e: Eqn):
        """Note a kept equation of one of the primitives in ``_READ_BACK``."""
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
        return _all_equal(x.value, 0)

    def one(self, x) -> bool:
        return type(x) is Lit and _all_equal(x.value, 1)


def _all_equal(v, c) -> bool:
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

# What a rule can need one of the operands to be (bits): most equations read none of these,
# and an equation is asked only the rules whose need it meets (``_PLANS``). RENAMED is CSE's:
# a literal that an earlier one of the same value stands for.
ZERO_LITERAL, ONE_LITERAL, STRUCTURAL_ZERO, BROADCAST, RENAMED = 1, 2, 4, 8, 16


def _needs(need: int):
    """Declare what ``rule`` needs an operand to be (one of the bits, or several: any of them)."""
    def declare(rule):
        rule.needs = need
        return rule
    return declare


def _reads(*prims):
    """Declare the primitives whose equations ``rule`` asks ``_Seen.made_by`` for (``_READ_BACK``)."""
    def declare(rule):
        rule.reads = prims
        return rule
    return declare


def _neutral(test, positions, need, complex_exact=True):
    """``x op c -> x`` when the operand at one of ``positions`` passes ``test`` (``_Seen.zero``,
    ``_Seen.one``, which ``need`` a literal or a structural zero); with ``complex_exact=False``
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
    (add_p, _neutral(_Seen.zero, (0, 1), ZERO_LITERAL | STRUCTURAL_ZERO)),       # x + 0, 0 + x
    (subtract_p, _neutral(_Seen.zero, (1,), ZERO_LITERAL | STRUCTURAL_ZERO)),    # x - 0
    (multiply_p, _absorbing_zero),               # x * 0 (structural zeros only: 0 * inf)
    *((p, _absorbing_zero) for p in (matmul_p, einsum_p, vecdot_p, matvec_p, vecmat_p)),   # x @ 0
    # x * 1, 1 * x and x / 1, not for complex x: numpy computes them with 1+0j, and an infinite
    # part times that 0 is NaN ((inf+0j) * 1 == inf+nanj), which x itself does not hold
    (multiply_p, _neutral(_Seen.one, (0, 1), ONE_LITERAL, complex_exact=False)),
    (divide_p, _neutral(_Seen.one, (1,), ONE_LITERAL, complex_exact=False)),
    (power_p, _neutral(_Seen.one, (1,), ONE_LITERAL)),        # x ** 1
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


# The equations ``_Seen`` notes: fulls (structural zeros), broadcasts (marked), and those of the
# primitives a rule asks for the producer of (``_Seen.made_by``); most equations are none of these.
_READ_BACK = frozenset({full_p, broadcast_to_p, *(p for _, r in RULES for p in getattr(r, "reads", ())),
                        *_through_broadcasts.reads})


class _Plans(dict):
    """``_PLANS[prim][operands]``: the rules that can apply to an equation of ``prim`` whose
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


_PLANS = _Plans()
_NO_PLAN = ((),) * (2 * RENAMED)


def _simplified(e: Eqn, rules, seen: _Seen):
    """What the first of ``rules`` (from ``_PLANS``) that applies makes of a one-output equation:
    an operand that replaces its output, or a new equation (a structural zero, other operands),
    or None. Never a zero in the user's own program: there 0 * inf keeps IEEE semantics."""
    ins, out = e.inputs, e.outputs[0]
    for rule in rules:
        target = rule(e, ins, out, seen)
        if target is ZERO:
            if not e.origin.is_backward:
                return None
            return Eqn(full_p, (), (("dtype", out.aval.dtype), ("fill_value", 0), ("shape", out.aval.shape)),
                       e.outputs, e.source, e.origin)
        if type(target) is tuple:          # ("inputs", operands)
            return replace(e, inputs=target[1])
        if target is not None:
            return target
    return None


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
    uses = Counter(itertools.chain.from_iterable(map(_INPUTS, eqns[start:])))   # (no forward one reads them)
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
        replaced[i] = (Eqn(multiply_p, (c2, b), (), (u,), q.source, q.origin),
                       Eqn(add_p, (c1, u), (), (v,), q.source, q.origin),
                       Eqn(multiply_p, (a, v), (), (s,), e.source, e.origin))
        dropped += [made[x][0] for x in products]
    if not dropped:
        return tape
    dropped.sort()
    gone = set(dropped)
    kept = []
    for k, f in enumerate(eqns):
        if k not in gone:
            kept.extend(replaced.get(k, (f,)))
    return _rebuild(tape, kept, dropped, {})


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


@gc_paused
def optimize(tape: Tape) -> Tape:
    """``factor``, then fold, simplify and CSE in one walk and DCE: the passes' fixed point
    (module docstring), unless the optimised tape has more to factor (a simplification made
    one more product), and then all again. ``meta["passes"]`` lists (pass, eqns before, after)."""
    log = []
    factored = factor(tape)
    while True:
        walked = _walk(factored, fold=True, simplify=True, cse=True)
        live = dce(walked)
        log += [("factor", len(tape.eqns), len(factored.eqns)), ("fold+simplify+cse", len(factored.eqns),
                len(walked.eqns)), ("dce", len(walked.eqns), len(live.eqns))]
        tape, factored = live, factor(live)
        if factored is live:
            return live.replace(meta={**live.meta, "passes": log})


def op_counts(tape: Tape) -> dict[str, int]:
    """Equations per primitive (for before/after reports)."""
    counts: dict[str, int] = {}
    for e in tape.eqns:
        counts[e.prim.name] = counts.get(e.prim.name, 0) + 1
    return dict(sorted(counts.items()))
