"""Running tapes: the plain interpreter and the closure-form (eager rrule) interpreter."""
from __future__ import annotations

from .rrule import project
from .tangents import NoTangent, ZeroTangent
from .tape import Tape, Var


def _plan(tape: Tape):
    """Per-equation (bind, inputs, kwargs, outputs, multiple) once per tape: the interpreter's
    inner loop then does no dictionary building."""
    plan = tape.meta.get("plan")
    if plan is None:
        plan = tape.meta["plan"] = [(e.prim.bind, e.inputs, dict(e.params), e.outputs,
                                     e.prim.multiple_results) for e in tape.eqns]
    return plan


def eval_tape(tape: Tape, args, env: dict | None = None) -> list:
    """Evaluate a tape on flat inputs. Works on tracers too (that is how tapes are
    differentiated again): every equation goes through ``Primitive.bind``."""
    if len(args) != len(tape.inputs):
        raise TypeError(f"the tape takes {len(tape.inputs)} array inputs, got {len(args)}")
    env = {} if env is None else env
    env.update(zip(tape.inputs, args))
    for bind, inputs, kwargs, outputs, multiple in _plan(tape):
        out = bind(*[env[x] if type(x) is Var else x.value for x in inputs], **kwargs)
        if multiple:
            env.update(zip(outputs, out))
        else:
            env[outputs[0]] = out
    return [env[x] if type(x) is Var else x.value for x in tape.outputs]


def eval_closure(primal: Tape, args, wrt: list[int], seeds: list, observe=None) -> tuple[list, list]:
    """Closure form: run every rule eagerly, keep its pullback closure, call them in reverse.

    wrt: indices of the inputs to differentiate; seeds: one cotangent per output (None = none).
    Returns (outputs, gradients); an input no path reaches gets zeros.
    observe: called as ``observe("forward", eqn, operands, outputs, pullback_or_None)`` after
    each equation and ``observe("backward", eqn, cotangents, raw_cotangents)`` after each
    pullback (the checker watches values and residuals through it).
    """
    import numpy as np

    env = dict(zip(primal.inputs, args))
    active = {primal.inputs[i] for i in wrt}
    stack = []
    for e in primal.eqns:
        vals = [env[x] if type(x) is Var else x.value for x in e.inputs]
        needs = tuple(type(x) is Var and x in active and x.aval.is_float for x in e.inputs)
        pullback = None
        if any(needs) and e.prim.differentiable:
            if e.prim.rule is None:
                raise NotImplementedError(f"{e.prim.name} has no rule (at {e.source})")
            y, pullback = e.prim.rule(*vals, **dict(e.params))
            stack.append((e, pullback, needs))
            active.update(v for v in e.outputs if v.aval.is_float)
        else:
            y = e.prim.impl(*vals, **dict(e.params))
        env.update(zip(e.outputs, y if e.prim.multiple_results else (y,)))
        if observe is not None:
            observe("forward", e, vals, y, pullback)
    ct: dict = {}
    for out, seed in zip(primal.outputs, seeds):
        if seed is not None and type(out) is Var and out in active:
            ct[out] = _accumulate(ct.get(out), seed)
    for e, pullback, needs in reversed(stack):
        cts = [ct.get(v) for v in e.outputs]
        if all(c is None for c in cts):
            continue
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
        grads.append(np.zeros(v.aval.shape, v.aval.dtype) if g is None else np.asarray(g, v.aval.dtype))
    return outs, grads


def _accumulate(old, new):
    return new if old is None else old + new
