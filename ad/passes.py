"""Optimisation passes over tapes. Each returns a new tape (gradient tapes keep their forward /
backward boundary) and never changes what the tape computes.

* ``dce``: drop equations whose outputs nothing reads (guards stay: they check the inputs).
* ``cse``: merge equations with the same primitive, inputs and params (never opaque or random
  ones).
* ``fold``: evaluate equations whose inputs are all literals (small results only).
* ``simplify``: algebraic clean-ups: x+0, x*1, x*0 for structural zeros, transpose of transpose,
  reshape of reshape, no-op reshape/broadcast/astype/positive, double negation.

``optimize`` runs them to a fixed point and records op counts per pass in ``tape.meta["passes"]``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .backward import VAR_MAPS, GradTape
from .core_prims import full_p
from .tape import Eqn, Lit, Tape, Var, gc_paused

FOLD_MAX_SIZE = 1   # fold only scalars: array constants would hide the structure


def _rebuild(tape: Tape, kept: list[tuple[int, Eqn]], subst: dict) -> Tape:
    """A tape from (original index, equation) pairs, with inputs rewritten through ``subst``."""
    def sub(x):
        while type(x) is Var and x in subst:
            x = subst[x]
        return x
    eqns = [replace(e, inputs=tuple(sub(x) for x in e.inputs)) if any(
        type(x) is Var and x in subst for x in e.inputs) else e for _, e in kept]
    old = set(tape.inputs).union(*(e.outputs for e in tape.eqns))
    new = set(tape.inputs).union(*(e.outputs for _, e in kept))

    def still_defined(k, v) -> bool:
        return (type(v) is not Var or v in new) and (k not in old or k in new)
    meta = dict(tape.meta)
    for key in VAR_MAPS:      # maps onto this tape's variables follow the rewrite
        if key in meta:
            meta[key] = {k: sub(v) for k, v in meta[key].items() if still_defined(k, sub(v))}
    changes = {"eqns": tuple(eqns), "outputs": tuple(sub(x) for x in tape.outputs), "meta": meta}
    if isinstance(tape, GradTape):
        changes["n_forward"] = sum(1 for i, _ in kept if i < tape.n_forward)
    return tape.replace(**changes)


def dce(tape: Tape) -> Tape:
    live = {x for x in tape.outputs if type(x) is Var}
    kept = []
    for i in range(len(tape.eqns) - 1, -1, -1):
        e = tape.eqns[i]
        if e.prim.kind == "guard" or any(v in live for v in e.outputs):
            kept.append((i, e))
            live.update(x for x in e.inputs if type(x) is Var)
    kept.reverse()
    return _rebuild(tape, kept, {})


def _lit_key(x):
    if type(x) is Var:
        return x
    v = x.value
    if isinstance(v, np.ndarray):
        return ("array", id(v))
    return ("scalar", type(v), v)


def cse(tape: Tape) -> Tape:
    seen: dict = {}
    subst: dict = {}
    kept = []
    for i, e in enumerate(tape.eqns):
        if e.prim.kind != "pure":
            kept.append((i, e))
            continue
        inputs = tuple(subst.get(x, x) if type(x) is Var else x for x in e.inputs)
        try:
            key = (e.prim, tuple(_lit_key(x) for x in inputs), e.params)
            hit = seen.get(key)
        except TypeError:       # unhashable params
            kept.append((i, e))
            continue
        if hit is not None and all(a.aval == b.aval for a, b in zip(hit.outputs, e.outputs)):
            subst.update(zip(e.outputs, hit.outputs))
            continue
        seen[key] = e
        kept.append((i, e))
    return _rebuild(tape, kept, subst)


def fold(tape: Tape) -> Tape:
    subst: dict = {}
    kept = []
    for i, e in enumerate(tape.eqns):
        inputs = [subst.get(x, x) if type(x) is Var else x for x in e.inputs]
        if (e.prim.kind == "pure" and all(type(x) is Lit for x in inputs)
                and all(v.aval.size <= FOLD_MAX_SIZE for v in e.outputs)):
            out = e.prim.impl(*(x.value for x in inputs), **e.kwargs)
            outs = out if e.prim.multiple_results else (out,)
            for v, o in zip(e.outputs, outs):
                o = np.asarray(o, v.aval.dtype)
                o.flags.writeable = False
                subst[v] = Lit(o, v.aval)
            continue
        kept.append((i, e))
    return _rebuild(tape, kept, subst)


def _is_zero(x, zeros) -> bool:
    if type(x) is Var:
        return x in zeros
    v = x.value
    return isinstance(v, (int, float, np.ndarray, np.generic)) and np.size(v) > 0 and not np.any(v)


def _is_one(x) -> bool:
    return type(x) is Lit and np.size(x.value) > 0 and np.all(np.asarray(x.value) == 1)


def _same(x, v: Var) -> bool:
    return x.aval == v.aval


def simplify(tape: Tape) -> Tape:
    """Algebraic clean-ups. Structural zeros are the outputs of ``full`` with fill 0 (what the
    backward pass emits for unreached cotangents); a product with one is a zero whatever the
    other factor holds, as in JAX's symbolic zeros."""
    producers: dict = {}
    zeros: set = set()
    subst: dict = {}
    kept = []
    for i, e in enumerate(tape.eqns):
        ins = tuple(subst.get(x, x) if type(x) is Var else x for x in e.inputs)
        e = replace(e, inputs=ins) if ins != e.inputs else e
        out = e.outputs[0] if len(e.outputs) == 1 else None
        target = _simplified(e, ins, out, producers, zeros) if out is not None else None
        if target == "zero" and not e.origin.is_backward:
            target = None        # keep IEEE semantics (0 * inf) in the user's own program
        if target == "zero":
            e = Eqn(full_p, (), (("dtype", out.aval.dtype), ("fill_value", 0), ("shape", out.aval.shape)),
                    e.outputs, e.source, e.origin)
        elif isinstance(target, tuple) and target[0] == "inputs":
            e = replace(e, inputs=target[1])
        elif target is not None:
            subst[out] = target
            continue
        if e.prim is full_p and e.kwargs["fill_value"] == 0:
            zeros.add(out)
        for v in e.outputs:
            producers[v] = e
        kept.append((i, e))
    return _rebuild(tape, kept, subst)


def _simplified(e, ins, out, producers, zeros):
    """What ``out`` can be replaced by: an existing operand, "zero", a new equation, or None."""
    name = e.prim.name
    if name == "add":
        a, b = ins
        if _is_zero(a, zeros) and _same(b, out):
            return b
        if _is_zero(b, zeros) and _same(a, out):
            return a
    elif name == "subtract":
        if _is_zero(ins[1], zeros) and _same(ins[0], out):
            return ins[0]
    elif name == "multiply":
        a, b = ins
        if (type(a) is Var and a in zeros) or (type(b) is Var and b in zeros):
            return "zero"
        if _is_one(a) and _same(b, out):
            return b
        if _is_one(b) and _same(a, out):
            return a
    elif name in ("divide", "power"):
        if _is_one(ins[1]) and _same(ins[0], out):
            return ins[0]
    elif name in ("positive",) and _same(ins[0], out):
        return ins[0]
    elif name == "negative":
        p = producers.get(ins[0])
        if p is not None and p.prim.name == "negative" and _same(p.inputs[0], out):
            return p.inputs[0]
    elif name in ("reshape", "broadcast_to", "sum_to", "astype") and _same(ins[0], out):
        return ins[0]
    elif name == "transpose":
        axes = e.kwargs["axes"]
        if axes == tuple(range(len(axes))):
            return ins[0]
        p = producers.get(ins[0])
        if p is not None and p.prim.name == "transpose":
            inner = p.kwargs["axes"]
            if tuple(inner[a] for a in axes) == tuple(range(len(axes))) and _same(p.inputs[0], out):
                return p.inputs[0]
    if name in _ELEMENTWISE_BINARY:
        narrowed = _skip_broadcast(ins, out, producers)
        if narrowed is not None:
            return narrowed
    if name in _LINEAR_UNARY and type(ins[0]) is Var and ins[0] in zeros:
        return "zero"
    return None


def _skip_broadcast(ins, out, producers):
    """An elementwise operand made by broadcast_to is broadcast by the operation anyway: a new
    equation reading the un-broadcast value when the result's shape stays the same."""
    new_ins = list(ins)
    for k, x in enumerate(ins):
        p = producers.get(x) if type(x) is Var else None
        if p is not None and p.prim.name == "broadcast_to":
            trial = new_ins[:k] + [p.inputs[0]] + new_ins[k + 1:]
            if np.broadcast_shapes(*(np.shape(t.value) if type(t) is Lit else t.aval.shape
                                     for t in trial)) == out.aval.shape:
                new_ins = trial
    return ("inputs", tuple(new_ins)) if new_ins != list(ins) else None


_ELEMENTWISE_BINARY = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"}
_LINEAR_UNARY = {"negative", "reshape", "transpose", "broadcast_to", "sum_to", "sum", "mean",
                 "cumsum", "positive", "getitem", "conjugate"}

PASSES = (("fold", fold), ("simplify", simplify), ("cse", cse), ("dce", dce))


@gc_paused
def optimize(tape: Tape, *, max_rounds: int = 4) -> Tape:
    """Run all passes to a fixed point; ``meta["passes"]`` lists (pass, eqns before, after)."""
    log = []
    for _ in range(max_rounds):
        start = len(tape.eqns)
        for name, fn in PASSES:
            before = len(tape.eqns)
            tape = fn(tape)
            log.append((name, before, len(tape.eqns)))
        if len(tape.eqns) == start:
            break
    tape.meta["passes"] = log
    return tape


def op_counts(tape: Tape) -> dict[str, int]:
    """Equations per primitive (for before/after reports)."""
    counts: dict[str, int] = {}
    for e in tape.eqns:
        counts[e.prim.name] = counts.get(e.prim.name, 0) + 1
    return dict(sorted(counts.items()))
