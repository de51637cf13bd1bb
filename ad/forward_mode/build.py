"""The tangent tape: every differentiated equation's pushforward template (``pushforward``)
inlined in program order after the forward section (the rules' primal bodies, as in
``ad.reverse_mode.build``), with provenance ``pushforward of %9 (tanh), from its pullback``.

What the pushforwards compute from primals alone moves to the forward section, so the tangent
tape (an ordinary Tape: residuals and tangents in, output tangents out) holds the linear part.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from ..core_prims import full_p, positive_p
from ..gradtape import Fallback
from ..rules import rule_of
from ..origins import Origin, OriginKind
from ..tape import Eqn, Tape, Var, active_vars, eval_eqns, freeze_params, gc_paused
from .pushforward import Pushforward, overload_of, pushforward, with_cotangents


@dataclass(frozen=True)
class Linearized:
    """What ``linearize`` builds: ``forward`` (primal inputs -> outputs, then residuals) and
    ``tangent`` (residuals, then one tangent per differentiated input -> one tangent per float
    output), both ordinary tapes; ``fallbacks`` lists the rules whose pushforward is the vjp of
    their pullback, or whose pullback runs as a closure."""
    forward: Tape
    tangent: Tape
    n_values: int
    fallbacks: tuple[Fallback, ...]
    tangent_slots: tuple[int, ...]      # per output leaf: index into the tangent outputs, or -1


class _Builder:
    """The tangent tape's equations as they are written, each variable numbered anew."""

    def __init__(self):
        self.counter = itertools.count()
        self.eqns: list[Eqn] = []

    def new(self, aval) -> Var:
        return Var(next(self.counter), aval)

    def emit(self, prim, inputs, params, outputs, source, origin, scope=()):
        self.eqns.append(Eqn(prim, tuple(inputs), params, tuple(outputs), source, origin, scope))

    def inline(self, eqns, sub: dict, e: Eqn, origin: Origin | None):
        """A template's equations on ``sub``, in ``e``'s source line and scope."""
        for t in eqns:
            outs = [self.new(v.aval) for v in t.outputs]
            sub.update(zip(t.outputs, outs))
            self.emit(t.prim, [sub[x] if type(x) is Var else x for x in t.inputs], t.params, outs,
                      e.source or t.source, origin or t.origin, e.scope)

    def zeros(self, aval, of: Var, source=None, scope=()) -> Var:
        out = self.new(aval)
        self.emit(full_p, (), freeze_params({"shape": aval.shape, "dtype": aval.dtype, "fill_value": 0}),
                  (out,), source, Origin(OriginKind.TANGENT_ZEROS, of=of), scope)
        return out


@gc_paused
def build_linearized(primal: Tape, values: list, wrt: list[int], known: dict | None = None,
                     traced: dict | None = None) -> Linearized:
    """Inline every differentiated equation's pushforward template after the forward section
    (rules' primal bodies, as in ``ad.reverse_mode.build``). ``wrt``: the float inputs with tangents.
    The forward section is evaluated at ``values`` as it is built (the rules are lifted at its
    values); ``known`` collects those values, by the forward tape's variables. ``traced``: the
    values the trace computed, by the primal's variables; an equation whose outputs they give
    is not evaluated again (the rules' intermediates still are)."""
    b = _Builder()
    inputs = [b.new(v.aval) for v in primal.inputs]
    env: dict = dict(zip(primal.inputs, inputs))
    known = {} if known is None else known
    known.update(zip(inputs, values))
    active = active_vars(primal, wrt)
    live = with_cotangents(primal, active)
    instances, fallbacks = [], []
    for e in primal.eqns:
        ops = [env[x] if type(x) is Var else x for x in e.inputs]
        needs = tuple(type(x) is Var and x in active for x in e.inputs)
        if not (any(needs) and e.prim.differentiable):
            outs = [b.new(v.aval) for v in e.outputs]
            b.emit(e.prim, ops, e.params, outs, e.source, e.origin, e.scope)
            _evaluate(b.eqns[-1:], known, dict(zip(outs, e.outputs)), traced)
            env.update(zip(e.outputs, outs))
            continue
        rule_of(e)
        opvals = [known[x] if type(x) is Var else x.value for x in ops]
        pf = pushforward(e.prim, e.params, opvals, needs, e.source, overload_of(e, live))
        if pf.fallback:
            fallbacks.append(Fallback(e.prim.name, e.source, pf.fallback))
        sub = {a: o for a, o in zip(pf.args, ops) if type(a) is Var}
        start = len(b.eqns)
        b.inline(pf.fwd, sub, e, None)
        outs = [_rule_output(b, sub, o, pf, v, e) for o, v in zip(pf.outs, e.outputs)]
        for i in range(start, len(b.eqns)):
            b.eqns[i] = replace(b.eqns[i], origin=Origin(OriginKind.PRIMAL, of=outs[0], rule=e.prim.name))
        _evaluate(b.eqns[start:], known, dict(zip(outs, e.outputs)), traced)
        env.update(zip(e.outputs, outs))
        instances.append((e, pf, sub, ops, outs))
    n_forward = len(b.eqns)
    tangent_inputs = [b.new(inputs[i].aval) for i in wrt]
    tan: dict = dict(zip((inputs[i] for i in wrt), tangent_inputs))
    for e, pf, sub, ops, outs in instances:
        ts = [tan.get(o) if type(o) is Var else None for o in ops]
        if all(t is None for t, a in zip(ts, pf.tangents) if a is not None):
            continue
        tsub = dict(sub)
        for a, t, o in zip(pf.tangents, ts, ops):
            if a is not None:
                tsub[a] = t if t is not None else b.zeros(a.aval, o, e.source, e.scope)
        b.inline(pf.jvp, tsub, e, Origin(pf.kind, of=outs[0], rule=e.prim.name))
        for o, t in zip(outs, pf.out_tangents):
            if type(t) is Var:
                tan[o] = tsub[t]
    value_outs = [env[x] if type(x) is Var else x for x in primal.outputs]
    tangent_outs, slots = [], []
    for o in value_outs:
        if not o.aval.is_float:
            slots.append(-1)
            continue
        slots.append(len(tangent_outs))
        tangent_outs.append(tan[o] if type(o) is Var and o in tan else b.zeros(o.aval, o if type(o) is Var else None))
    eqns, n_hoisted = _hoist(b.eqns, n_forward, tangent_inputs)
    eval_eqns(eqns[n_forward:n_hoisted], known)
    n_forward = n_hoisted
    residuals = _residuals(eqns, n_forward, inputs, tangent_outs)
    forward = Tape(tuple(inputs), tuple(eqns[:n_forward]), tuple(value_outs) + tuple(residuals),
                   input_names=primal.input_names)
    tangent = Tape(tuple(residuals) + tuple(tangent_inputs), tuple(eqns[n_forward:]), tuple(tangent_outs),
                   input_names=tuple(repr(v) for v in residuals) +
                   tuple(f"t_{primal.input_names[i]}" for i in wrt))
    return Linearized(forward, tangent, len(value_outs), tuple(fallbacks), tuple(slots))


def _evaluate(eqns, known: dict, primal_of: dict, traced: dict | None):
    """Evaluate ``eqns`` into ``known``, taking the outputs the trace computed (``traced``, by
    ``primal_of`` their primal variable) from it instead."""
    if traced is None:
        eval_eqns(eqns, known)
        return
    for e in eqns:
        if all(v in primal_of and primal_of[v] in traced for v in e.outputs):
            known.update((v, traced[primal_of[v]]) for v in e.outputs)
        else:
            eval_eqns((e,), known)


def _rule_output(b: _Builder, sub, o, pf: Pushforward, primal_var: Var, e: Eqn):
    """The joint variable of a rule's output; one the rule did not compute gets its own equation."""
    if type(o) is Var and o not in pf.args:
        return sub[o]
    out = b.new(primal_var.aval)
    b.emit(positive_p, (sub[o] if type(o) is Var else o,), (), (out,), e.source,
           Origin(OriginKind.PRIMAL, rule=e.prim.name), e.scope)
    return out


def _hoist(eqns, n_forward: int, tangent_inputs) -> tuple[list[Eqn], int]:
    """Move the pushforwards' equations that read no tangent (``cos(x)`` in sin's) to the end of
    the forward section: ``f_jvp`` then runs only the linear part, once per tangent."""
    varying = set(tangent_inputs)
    hoisted, linear = [], []
    for e in eqns[n_forward:]:
        if e.prim.kind == "pure" and not any(type(x) is Var and x in varying for x in e.inputs) \
                and not (e.prim is full_p and e.kwargs["fill_value"] == 0):   # zeros stay: the optimiser folds them
            hoisted.append(e)
        else:
            varying.update(e.outputs)
            linear.append(e)
    return list(eqns[:n_forward]) + hoisted + linear, n_forward + len(hoisted)


def _residuals(eqns, n_forward: int, inputs, tangent_outs) -> list[Var]:
    """Forward variables (primal inputs included) that the tangent section reads."""
    forward_vars = list(inputs) + [v for e in eqns[:n_forward] for v in e.outputs]
    read = {x for e in eqns[n_forward:] for x in e.inputs if type(x) is Var}
    read |= {x for x in tangent_outs if type(x) is Var}
    return [v for v in forward_vars if v in read]
