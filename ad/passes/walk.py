"""Fold, simplify and CSE, done together in one walk over the equations. The walk gives each
equation, its operands already rewritten, the rounds the passes run one after the other would
give it (fold, one rewrite, a merge, again until nothing changes), and that is final: the passes
only read equations before the one they rewrite, and the walk has left those in their final
form. So one walk is the three passes' fixed point (tests/passes/test_passes_fixed_point.py
checks it against running them one after the other until nothing changes). ``cse``, ``fold``
and ``simplify`` are the walk doing one of them.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core_prims import full_p
from ..scopes import common_prefix
from ..tape import Eqn, Lit, Tape
from .rebuild import rebuild
from .rewrites import (NO_PLAN, ONE_LITERAL, PLANS, READ_BACK, RENAMED, STRUCTURAL_ZERO, ZERO_LITERAL,
                       Seen, all_equal, simplified)

FOLD_MAX_SIZE = 1   # fold only scalars: array constants would hide the structure


def cse(tape: Tape) -> Tape:
    return walk(tape, cse=True)


def fold(tape: Tape) -> Tape:
    return walk(tape, fold=True)


def simplify(tape: Tape) -> Tape:
    """Algebraic clean-ups (``rewrites.RULES``, and the traits ``elementwise`` and ``linear_in``).
    Structural zeros are the outputs of ``full`` with fill 0 (what the backward pass emits for
    unreached cotangents); a product with one is a zero whatever the other factor holds, as in
    JAX's symbolic zeros."""
    return walk(tape, simplify=True)


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
        kind = self[x] = self._note(x, ZERO_LITERAL if all_equal(v, 0) else ONE_LITERAL if all_equal(v, 1)
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


def walk(tape: Tape, *, fold: bool = False, simplify: bool = False, cse: bool = False) -> Tape:
    """One walk over the equations doing the passes asked for. Each equation, its operands
    rewritten through what the walk replaced before it, goes through the rounds the passes would
    give it one after the other: folded, or rewritten once, or merged with an earlier equal one
    (its earlier forms count: the passes would have met them), again while a rewrite changes it.
    A product of a structural zero that folds to a literal keeps that literal a structural zero
    (one round of ``simplify`` would have used it, as a variable, before ``fold`` made it one).
    Written for speed (tens of thousands of equations): most of them meet no rule and cost one
    look at each operand (``_kinds``, inlined), an empty plan of rules and a CSE look-up."""
    seen = Seen()
    marks, zeros = seen.marks, seen.zeros
    lit_kinds = _Literals()
    canonical = lit_kinds.canonical
    by_prim = _ByPrimitive(simplify, cse)
    subst: dict = {}
    kept: list = []
    keep = kept.append
    dropped: list = []
    rewritten = False
    merged: dict = {}       # an output CSE kept -> the common scope of the equations merged into it
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
                target = simplified(e, rules, seen)
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
                            first = hit[0]
                            merged[first] = common_prefix(merged[first], e.scope) if first in merged else e.scope
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
    if merged:
        kept = _shared_scopes(kept, merged)
    return rebuild(tape, kept, dropped, subst) if dropped or rewritten else tape


def _shared_scopes(kept: list, merged: dict) -> list:
    """An equation CSE merged others into lives in the scope they all share (their common prefix)."""
    out = []
    for e in kept:
        scope = merged.get(e.outputs[0]) if e.outputs else None
        if scope is not None and scope != e.scope:
            e = e.with_scope(common_prefix(e.scope, scope))
        out.append(e)
    return out


class _ByPrimitive(dict):
    """What a walk does with the equations of a primitive, made once per primitive: the rules it
    can ask them (``PLANS``), its CSE table (None where CSE does not merge them), and whether
    ``Seen`` notes them. A CSE table maps an equation's operands (a literal by the first of its
    value: ``_Literals``), with its params if it has any, to the outputs that equation stands for."""

    def __init__(self, simplify: bool, cse: bool):
        super().__init__()
        self.simplify, self.cse = simplify, cse

    def __missing__(self, prim):
        info = self[prim] = (PLANS[prim] if self.simplify else NO_PLAN,
                             {} if self.cse and prim.kind == "pure" else None,
                             self.simplify and prim in READ_BACK)
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
