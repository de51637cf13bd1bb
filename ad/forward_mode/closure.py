"""The closure form of forward mode: every rule runs eagerly and pushes the tangents through its
frule, or through the vjp of its pullback closure (the mirror of ``ad.reverse_mode.closure``).

``ad.jvp(..., form="closure")``: the reference the tangent tape is checked against, since
nothing here reads a lifted template.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import project
from ..rules import rule_of
from ..tangents import NoTangent, ZeroTangent, unthunk
from ..tape import Aval, Tape, Var, active_vars, eval_tape
from .pushforward import overload_of, push_by_vjp, with_cotangents


def eval_closure_jvp(primal: Tape, args, wrt: list[int], tangents: list) -> tuple[list, list]:
    """Closure form: run every rule eagerly and push the tangents through its frule, or through
    the vjp of its pullback closure, or of an overload's (``overload_of``; nothing here reads a
    lifted template). Returns (outputs, one tangent per output: zeros where none reaches it)."""
    env = dict(zip(primal.inputs, args))
    tan = {primal.inputs[i]: t for i, t in zip(wrt, tangents)}
    active = active_vars(primal, wrt)
    live = with_cotangents(primal, active)

    def run_rule(e, vals):
        needs = tuple(type(x) is Var and x in active for x in e.inputs)
        ts = [tan.get(x) if type(x) is Var else None for x in e.inputs]
        if not (any(needs) and e.prim.differentiable) or all(t is None for t in ts):
            return e.prim.bind(*vals, **dict(e.params))
        overload = overload_of(e, live)
        if e.prim.frule is not None and overload is None:
            y, push = e.prim.frule(*vals, **dict(e.params))
            out = push(*(t if t is not None else _zeros_of(v) for t, v in zip(ts, vals)))
        else:
            y, pullback = rule_of(e)(*vals, **dict(e.params))
            if overload is not None:
                pullback = overload(*vals, **dict(e.params))
            ys = tuple(y) if e.prim.multiple_results else (y,)
            out = push_by_vjp(pullback, e.prim, [Aval.of(v) for v in vals], needs, ts,
                              [Aval.of(yk) for yk in ys])
        ys, outs = (tuple(y), tuple(out)) if e.prim.multiple_results else ((y,), (out,))
        for v, yk, t in zip(e.outputs, ys, outs):
            t = unthunk(t)
            if v.aval.is_float and t is not None and not isinstance(t, (NoTangent, ZeroTangent)):
                tan[v] = project(Aval.of(yk), t)
        return y
    eval_tape(primal, args, env, run_rule)
    outs = [env[x] if type(x) is Var else x.value for x in primal.outputs]
    touts = [tan[x] if type(x) is Var and x in tan else np.zeros(x.aval.shape, x.aval.dtype)
             for x in primal.outputs]
    return outs, touts


def _zeros_of(value):
    """The tangent of an operand that has none, as an frule takes it."""
    aval = Aval.of(value)
    return np.zeros(aval.shape, aval.dtype) if aval.is_float else NoTangent()
