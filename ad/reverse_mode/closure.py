"""The closure form: run every rule eagerly and call the pullback closures it returns in reverse
(or those of the overloads of their pullbacks, ``ad.backpropagate``).

The reference the lifted form is checked against (the checker, the debugger's comparison
panel, ``ad.grad(..., form="closure")``): nothing here reads a lifted template.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import project
from ..rules import rule_of
from ..tangents import NoTangent, ZeroTangent
from ..tape import Tape, Var, active_vars, eval_tape
from ..trace_state import Traced


def eval_closure(primal: Tape, args, wrt: list[int], seeds: list, observe=None) -> tuple[list, list]:
    """Closure form: run every rule eagerly, keep its pullback closure, call them in reverse
    (or, if the primitive has one for the cotangents' kind, an overload's pullback, made then).

    wrt: indices of the inputs to differentiate; seeds: one cotangent per output (None = none).
    Returns (outputs, gradients); an input no path reaches gets zeros.
    observe: called as ``observe("forward", eqn, operands, outputs, pullback_or_None)`` after
    each equation and ``observe("backward", eqn, cotangents, raw_cotangents)`` after each
    pullback (the checker watches values and residuals through it).
    """
    env = dict(zip(primal.inputs, args))
    active = active_vars(primal, wrt)
    stack = []

    def run_rule(e, vals):
        needs = tuple(type(x) is Var and x in active for x in e.inputs)
        pullback = None
        if any(needs) and e.prim.differentiable:
            y, pullback = rule_of(e)(*vals, **dict(e.params))
            stack.append((e, vals, pullback, needs))
        else:
            y = e.prim.bind(*vals, **dict(e.params))
        if observe is not None:
            observe("forward", e, vals, y, pullback)
        return y
    eval_tape(primal, args, env, run_rule)
    ct: dict = {}
    for out, seed in zip(primal.outputs, seeds):
        if seed is not None and type(out) is Var and out in active:
            ct[out] = _accumulate(ct.get(out), seed)
    for e, vals, pullback, needs in reversed(stack):
        cts = [ct.get(v) for v in e.outputs]
        if all(c is None for c in cts):
            continue
        overload = e.prim.overloads.get("zero" if any(c is None for c in cts) else "dense")
        if overload is not None:
            pullback = overload(*vals, **dict(e.params))
        cts = [np.zeros(v.aval.shape, v.aval.dtype) if c is None else c for c, v in zip(cts, e.outputs)]
        raw = pullback(tuple(cts) if e.prim.multiple_results else cts[0])
        raw = raw if isinstance(raw, tuple) else (raw,)
        if observe is not None:
            observe("backward", e, cts, raw)
        for x, g, needed in zip(e.inputs, raw, needs):
            if needed:
                g = project(x.aval, g)
                if not isinstance(g, (NoTangent, ZeroTangent)):
                    ct[x] = _accumulate(ct.get(x), g)
    outs = [env[x] if type(x) is Var else x.value for x in primal.outputs]
    grads = []
    for i in wrt:
        v = primal.inputs[i]
        g = ct.get(v)
        if g is None:
            g = np.zeros(v.aval.shape, v.aval.dtype)
        elif not isinstance(g, Traced):     # tracers: the closure form runs inside a trace
            g = np.asarray(g, v.aval.dtype)
        grads.append(g)
    return outs, grads


def _accumulate(old, new):
    return new if old is None else old + new
