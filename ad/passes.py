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

``optimize`` runs them to a fixed point and records op counts per pass in ``tape.meta["passes"]``.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from .backward import VAR_MAPS, GradTape
from .core_prims import (add_p, astype_p, broadcast_to_p, full_p, positive_p, reshape_p, sum_to_p,
                         transpose_p)
from .lib.contraction import einsum_p, matmul_p, matvec_p, vecdot_p, vecmat_p
from .lib.elementwise import divide_p, multiply_p, negative_p, power_p, subtract_p
from .tape import Eqn, Lit, Tape, Var, gc_paused

FOLD_MAX_SIZE = 1   # fold only scalars: array constants would hide the structure


def _rebuild(tape: Tape, kept: list[tuple[int, Eqn]], subst: dict) -> Tape:
    """A tape from (original index, equation) pairs, with inputs rewritten through ``subst``.
    (A pass that changed nothing returns its tape itself: ``optimize`` does not run it again.)"""
    def sub(x):
        while type(x) is Var and x in subst:
            x = subst[x]
        return x
    if subst:
        replaced = subst.keys()
        kept = [(i, e if replaced.isdisjoint(e.inputs) else replace(e, inputs=tuple(map(sub, e.inputs))))
                for i, e in kept]
    eqns = tape.eqns
    dropped = [True] * len(eqns)
    for i, _ in kept:
        dropped[i] = False
    # what the dropped equations defined (every variable of a map is defined on the tape)
    removed = {v for e in itertools.compress(eqns, dropped) for v in e.outputs}
    meta = dict(tape.meta)
    for key in VAR_MAPS:      # maps onto this tape's variables follow the rewrite
        if key in meta:
            meta[key] = {k: v for k, v in ((k, sub(v) if type(v) is Var and v in subst else v)
                                           for k, v in meta[key].items() if k not in removed)
                         if type(v) is not Var or v not in removed}
    changes = {"eqns": tuple(e for _, e in kept), "outputs": tuple(map(sub, tape.outputs)), "meta": meta}
    if isinstance(tape, GradTape):
        changes["n_forward"] = tape.n_forward - sum(dropped[:tape.n_forward])
    return tape.replace(**changes)


def dce(tape: Tape) -> Tape:
    live = {x for x in tape.outputs if type(x) is Var}
    kept = []
    eqns = tape.eqns
    for i in range(len(eqns) - 1, -1, -1):
        e = eqns[i]
        if e.prim.kind == "guard" or not live.isdisjoint(e.outputs):
            kept.append((i, e))
            live.update(e.inputs)          # literals too: harmless, nothing defines them
    if len(kept) == len(eqns):
        return tape
    kept.reverse()
    return _rebuild(tape, kept, {})


def _lit_key(x: Lit):
    v = x.value
    if isinstance(v, np.ndarray):
        return ("array", id(v))
    return ("scalar", type(v), repr(v))     # repr: 0.0 and -0.0 (and 0j, -0j) stay apart


def cse(tape: Tape) -> Tape:
    seen: dict = {}
    subst: dict = {}
    kept = []
    for i, e in enumerate(tape.eqns):
        if e.prim.kind != "pure":
            kept.append((i, e))
            continue
        inputs = tuple([subst.get(x, x) for x in e.inputs]) if subst else e.inputs
        try:
            key = (e.prim, tuple([x if type(x) is Var else _lit_key(x) for x in inputs]), e.params)
            hit = seen.get(key)
        except TypeError:       # unhashable params
            kept.append((i, e))
            continue
        if hit is not None and all(a.aval == b.aval for a, b in zip(hit.outputs, e.outputs)):
            subst.update(zip(e.outputs, hit.outputs))
            continue
        seen[key] = e
        kept.append((i, e))
    return _rebuild(tape, kept, subst) if subst else tape


def _all_literals(inputs, subst) -> bool:
    """Are all ``inputs`` literals, or variables ``fold`` has replaced by literals?"""
    for x in inputs:
        if type(x) is Var and x not in subst:
            return False
    return True


def fold(tape: Tape) -> Tape:
    subst: dict = {}
    kept = []
    for i, e in enumerate(tape.eqns):
        if (e.prim.kind == "pure" and _all_literals(e.inputs, subst)
                and all(v.aval.size <= FOLD_MAX_SIZE for v in e.outputs)):
            inputs = [subst.get(x, x) for x in e.inputs]
            out = e.prim.impl(*(x.value for x in inputs), **e.kwargs)
            outs = out if e.prim.multiple_results else (out,)
            for v, o in zip(e.outputs, outs):
                scalar = not isinstance(o, np.ndarray)    # what numpy returned: keep a scalar one
                o = np.asarray(o, v.aval.dtype)
                o.flags.writeable = False
                subst[v] = Lit(o[()] if scalar else o, v.aval)
            continue
        kept.append((i, e))
    return _rebuild(tape, kept, subst) if subst else tape


ZERO = "zero"   # a rewrite's answer: the output is a structural zero


class _Seen:
    """What ``simplify`` knows of the equations before the current one."""

    def __init__(self):
        self.producers: dict = {}      # Var -> the equation that made it
        self.zeros: set = set()        # outputs of full(fill_value=0): structural zeros
        self.broadcasts: set = set()   # outputs of broadcast_to (most operations read none)

    def made_by(self, x, prim):
        """The equation of ``prim`` that made ``x``, or None."""
        p = self.producers.get(x) if type(x) is Var else None
        return p if p is not None and p.prim is prim else None

    def structural_zero(self, x) -> bool:
        return type(x) is Var and x in self.zeros

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

def _neutral(test, positions, complex_exact=True):
    """``x op c -> x`` when the operand at one of ``positions`` passes ``test`` (``_Seen.zero``,
    ``_Seen.one``); with ``complex_exact=False`` not for complex results."""
    def rule(e, ins, out, seen):
        if not complex_exact and out.aval.dtype.kind == "c":
            return None
        for k in positions:
            other = ins[1 - k]
            if test(seen, ins[k]) and _same(other, out):
                return other
        return None
    return rule


def _absorbing_zero(e, ins, out, seen):
    """``x * 0 -> 0`` (and ``x @ 0``) for a structural zero, whatever ``x`` holds."""
    return ZERO if seen.zeros and any(seen.structural_zero(x) for x in ins) else None


def _no_op(e, ins, out, seen):
    """An operation that leaves its operand's shape and dtype unchanged leaves it unchanged."""
    return ins[0] if _same(ins[0], out) else None


def _double_negation(e, ins, out, seen):
    p = seen.made_by(ins[0], negative_p)
    return p.inputs[0] if p is not None and _same(p.inputs[0], out) else None


def _identity_permutation(e, ins, out, seen):
    axes = e.kwargs["axes"]
    return ins[0] if axes == tuple(range(len(axes))) else None


def _transpose_of_transpose(e, ins, out, seen):
    axes = e.kwargs["axes"]
    p = seen.made_by(ins[0], transpose_p)
    if p is not None and tuple(p.kwargs["axes"][a] for a in axes) == tuple(range(len(axes))) \
            and _same(p.inputs[0], out):
        return p.inputs[0]
    return None


RULES = [
    (add_p, _neutral(_Seen.zero, (0, 1))),       # x + 0, 0 + x
    (subtract_p, _neutral(_Seen.zero, (1,))),    # x - 0
    (multiply_p, _absorbing_zero),               # x * 0 (structural zeros only: 0 * inf)
    *((p, _absorbing_zero) for p in (matmul_p, einsum_p, vecdot_p, matvec_p, vecmat_p)),   # x @ 0
    # x * 1, 1 * x and x / 1, not for complex x: numpy computes them with 1+0j, and an infinite
    # part times that 0 is NaN ((inf+0j) * 1 == inf+nanj), which x itself does not hold
    (multiply_p, _neutral(_Seen.one, (0, 1), complex_exact=False)),
    (divide_p, _neutral(_Seen.one, (1,), complex_exact=False)),
    (power_p, _neutral(_Seen.one, (1,))),        # x ** 1
    (negative_p, _double_negation),              # -(-x)
    (transpose_p, _identity_permutation),        # transpose(x, (0, 1, ...))
    (transpose_p, _transpose_of_transpose),      # transpose(transpose(x, p), inverse of p)
    *((p, _no_op) for p in (positive_p, reshape_p, broadcast_to_p, sum_to_p, astype_p)),
]
_RULES_OF = {p: [r for q, r in RULES if q is p] for p, _ in RULES}


def _skip_broadcast(ins, out, seen):
    """An elementwise operand made by broadcast_to is broadcast by the operation anyway: a new
    equation reading the un-broadcast value when the result's shape stays the same."""
    if seen.broadcasts.isdisjoint(ins):
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


def _simplified(e, ins, out, seen):
    """The first rewrite that applies: the primitive's own rules, then those its traits allow
    (an elementwise operation reads through broadcasts; a linear one of zeros is zero)."""
    prim = e.prim
    for rule in _RULES_OF.get(prim, ()):
        target = rule(e, ins, out, seen)
        if target is not None:
            return target
    if prim.elementwise and len(ins) > 1:
        target = _skip_broadcast(ins, out, seen)
        if target is not None:
            return target
    if prim.linear_in and seen.zeros and all(seen.structural_zero(ins[k]) for k in prim.linear_in):
        return ZERO      # true whether the operands are linear jointly (x + y) or each (x @ y)
    return None


def simplify(tape: Tape) -> Tape:
    """Algebraic clean-ups (``RULES``, and the traits ``elementwise`` and ``linear_in``).
    Structural zeros are the outputs of ``full`` with fill 0 (what the backward pass emits for
    unreached cotangents); a product with one is a zero whatever the other factor holds, as in
    JAX's symbolic zeros."""
    seen = _Seen()
    subst: dict = {}
    kept = []
    rewritten = False
    for i, e in enumerate(tape.eqns):
        if subst:
            ins = tuple([subst.get(x, x) for x in e.inputs])
            e = replace(e, inputs=ins) if ins != e.inputs else e
        else:
            ins = e.inputs
        out = e.outputs[0] if len(e.outputs) == 1 else None
        target = _simplified(e, ins, out, seen) if out is not None else None
        if target == ZERO and not e.origin.is_backward:
            target = None        # keep IEEE semantics (0 * inf) in the user's own program
        if target == ZERO:
            e = Eqn(full_p, (), (("dtype", out.aval.dtype), ("fill_value", 0), ("shape", out.aval.shape)),
                    e.outputs, e.source, e.origin)
            rewritten = True
        elif isinstance(target, tuple) and target[0] == "inputs":
            e = replace(e, inputs=target[1])
            rewritten = True
        elif target is not None:
            subst[out] = target
            continue
        if e.prim is full_p and e.kwargs["fill_value"] == 0:
            seen.zeros.add(out)
        elif e.prim is broadcast_to_p:
            seen.broadcasts.add(out)
        for v in e.outputs:
            seen.producers[v] = e
        kept.append((i, e))
    return _rebuild(tape, kept, subst) if subst or rewritten else tape


PASSES = (("fold", fold), ("simplify", simplify), ("cse", cse), ("dce", dce))
# Passes that leave nothing for a second run of themselves: fold folds what its own folds make
# foldable, cse merges what its own merges make equal, dce's liveness is exact.
IDEMPOTENT = {"fold", "cse", "dce"}


@gc_paused
def optimize(tape: Tape, *, max_rounds: int = 4) -> Tape:
    """Run all passes to a fixed point; ``meta["passes"]`` lists (pass, eqns before, after).
    A pass is not run again on a tape it would leave unchanged: one it left unchanged before
    (passes are deterministic) or, for an idempotent pass, one it made."""
    log = []
    done = {}          # pass -> the tape it has nothing to do on
    for _ in range(max_rounds):
        start = len(tape.eqns)
        for name, fn in PASSES:
            before = tape
            if done.get(name) is not tape:
                tape = fn(tape)
                if tape is before or name in IDEMPOTENT:
                    done[name] = tape
            log.append((name, len(before.eqns), len(tape.eqns)))
        if len(tape.eqns) == start:
            break
    return tape.replace(meta={**tape.meta, "passes": log})


def op_counts(tape: Tape) -> dict[str, int]:
    """Equations per primitive (for before/after reports)."""
    counts: dict[str, int] = {}
    for e in tape.eqns:
        counts[e.prim.name] = counts.get(e.prim.name, 0) + 1
    return dict(sorted(counts.items()))
