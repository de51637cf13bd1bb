"""The gradient tape: a forward section (rules' primal bodies) and a backward section (their
lifted pullbacks, inlined in reverse), with provenance on every backward equation.

Cotangents live in a map from forward variable to cotangent variable; absence means a
structural zero, so the pullback of an equation whose outputs have no cotangent is skipped
(pullbacks are linear) and nothing is ever decided by looking at values. Fan-in is an explicit
``add`` equation. An overload of a primitive's pullback (``ad.backpropagate``) replaces its
rule's pullback template.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core_prims import add_p, full_p
from ..errors import NonDifferentiableError
from ..gradtape import Fallback, GradTape
from ..origins import Origin, OriginKind
from ..rules import overload_rule, rule_of
from ..tape import Eqn, Tape, Var, active_vars, eval_tape, freeze_params, gc_paused
from .lift import LiftedRule, cached, lift, signature




def lifted_overload(lifted: LiftedRule, overload: Callable, source) -> LiftedRule:
    """An overload's template, refused if it fell back to a closure: the opaque pair would run
    the primitive's rule, not the overload."""
    if lifted.fallback:
        name = getattr(overload, "__qualname__", repr(overload))
        raise NonDifferentiableError(
            f"the pullback of {lifted.prim.name} is overloaded by {name} (ad.backpropagate), which "
            f"cannot be traced ({lifted.fallback}): write it as numpy code with rules, or use "
            "form=\"closure\"", location=source)
    return lifted


def _template(e: Eqn, lifted: LiftedRule, cts: list, templates: "_Templates", needs) -> LiftedRule:
    """The lifted pullback to inline: an overload's for the cotangents' kind, or the rule's."""
    overload = e.prim.overloads.get("zero" if None in cts else "dense")
    if overload is None:
        return lifted
    return lifted_overload(templates.lift(e, needs, overload_rule(e.prim, overload)), overload, e.source)


# -- building ------------------------------------------------------------------------------

class _Templates:
    """The rule templates one build inlines, each looked up once per ``signature`` and operands
    needing gradients (a loop of 10,000 steps has a handful). A template not in the cache is
    lifted at the trace's operands of the same avals (``exemplars``, from
    ``lift.ExemplarRecorder``), so that the primal tape need not run again; one that branched on
    those values, again at its equation's own (the primal tape then runs once)."""

    def __init__(self, primal: Tape, values: list, exemplars: dict | None):
        self.primal, self.values, self.exemplars = primal, values, exemplars or {}
        self.env: dict | None = None
        self.seen: dict = {}

    def of(self, e: Eqn, needs: tuple) -> LiftedRule:
        try:
            key = signature(e) + needs
            lifted = self.seen.get(key)
        except TypeError:           # unhashable params
            key, lifted = None, None
        if lifted is None:
            rule_of(e)              # refuses what has no (checked) rule
            lifted = self.lift(e, needs)
            if key is not None and not lifted.value_dependent:
                self.seen[key] = lifted
        return lifted

    def lift(self, e: Eqn, needs: tuple, rule=None) -> LiftedRule:
        """The template of ``e``'s rule (or of ``rule``): cached, else lifted at operands like
        ``e``'s, and again at ``e``'s own if it branched on those."""
        lifted = cached(e, needs, rule)
        if lifted is None:
            values, own = self._like(e)
            lifted = lift(e.prim, e.params, values, needs, e.source, rule=rule)
            if lifted.value_dependent and not own:
                lifted = lift(e.prim, e.params, self.operands(e), needs, e.source, rule=rule)
        return lifted

    def _like(self, e: Eqn) -> tuple[list, bool]:
        """Operands of ``e``'s avals, and whether they are ``e``'s own."""
        found = self.exemplars.get(signature(e)) if self.exemplars else None
        if found is None:
            return self.operands(e), True
        return found[1], found[0] is e

    def operands(self, e: Eqn) -> list:
        """``e``'s own operands."""
        if self.env is None:
            self.env = {}
            eval_tape(self.primal, self.values, self.env)
        return [self.env[x] if type(x) is Var else x.value for x in e.inputs]


class _Builder:
    """The gradient tape's equations as they are written, and the next variable's number
    (templates write theirs through ``lift.Copier``; ``rename`` and ``copy`` inline an overload's
    pullback, ``backpropagate``)."""

    def __init__(self):
        self.count = 0                 # the next variable's number
        self.eqns: list = []

    def new(self, aval) -> Var:
        self.count += 1
        return Var(self.count - 1, aval)

    def emit(self, prim, inputs, params, outputs, source, origin, scope=()):
        self.eqns.append(Eqn(prim, tuple(inputs), params, tuple(outputs), source, origin, scope))

    def rename(self, defined: tuple, sub: dict) -> None:
        """New variables, numbered in order, for the template variables ``defined`` (``sub``
        maps them to the new ones)."""
        n = self.count
        for v in defined:
            sub[v] = Var(n, v.aval)
            n += 1
        self.count = n

    def copy(self, eqns, sub: dict, e: Eqn, origin: Origin, project: Origin | None = None) -> None:
        """``eqns`` on what ``sub`` maps their operands to (``rename`` made their outputs'; it
        holds the template's ``literals``), stamped ``origin`` (``project`` for the equations of
        a projection), ``e``'s source line and scope."""
        source, scope = e.source, e.scope
        new, get = self.eqns.append, sub.__getitem__
        for t in eqns:
            o = origin if project is None or t.origin.kind is not OriginKind.PROJECT else project
            new(Eqn(t.prim, tuple(map(get, t.inputs)), t.params, tuple(map(get, t.outputs)),
                    source or t.source, o, scope))


def _add(b: _Builder, a, c, of: Var, source, scope=()):
    """A fan-in sum of cotangents of ``of``, in ``of``'s scope (an input's: the traced function's)."""
    out = b.new(of.aval)
    b.emit(add_p, (a, c), (), (out,), source, Origin(OriginKind.ACCUMULATE, of=of, rule="add"), scope)
    return out


def _zeros(b: _Builder, aval, of: Var, source=None, scope=()):
    """Explicit zeros for a cotangent no path reaches (of ``of``)."""
    out = b.new(aval)
    b.emit(full_p, (), freeze_params({"shape": aval.shape, "dtype": aval.dtype, "fill_value": 0}),
           (out,), source, Origin(OriginKind.ZEROS, of=of), scope)
    return out


@gc_paused
def build(primal: Tape, values: list, wrt: list[int], *, seed: str = "ones",
          grad_tree=None, grad_slots=(), holomorphic: bool = False,
          exemplars: dict | None = None, overloads: bool = True) -> GradTape:
    """Lift every differentiable equation of ``primal`` and assemble the backward section.

    values: concrete inputs (rules are lifted at real values); wrt: indices of the inputs to
    differentiate; seed: "ones" (scalar output, seed 1) or "input" (cotangent inputs);
    holomorphic: the seed 1 may be complex (``check_seed``); exemplars: the trace's operand
    values (``lift.ExemplarRecorder``), else the primal tape runs once if a rule is not cached;
    overloads: inline the overloads of pullbacks (``backpropagate``), not when transposing a
    pullback (``ad.forward_mode.pushforward``: a linear map has one transpose, the rules').
    """
    if seed == "ones":
        check_seed(primal, wrt, holomorphic)
    b = _Builder()
    inputs = [b.new(v.aval) for v in primal.inputs]
    env: dict = dict(zip(primal.inputs, inputs))
    templates = _Templates(primal, values, exemplars)
    active = active_vars(primal, wrt)
    instances = []
    fallbacks = []
    for e in primal.eqns:
        ops = [env.get(x, x) for x in e.inputs]    # a literal is not in env: itself
        needs = tuple(map(active.__contains__, e.inputs))
        if not (True in needs and e.prim.differentiable):
            outs = [b.new(v.aval) for v in e.outputs]
            b.emit(e.prim, ops, e.params, outs, e.source, e.origin, e.scope)
            env.update(zip(e.outputs, outs))
            continue
        lifted = templates.of(e, needs)
        if lifted.fallback:
            fallbacks.append(Fallback(e.prim.name, e.source, lifted.fallback))
        outs, local, b.count = lifted.copier.fwd(ops, e.outputs, b.count, e.source, e.scope, b.eqns)
        env.update(zip(e.outputs, outs))
        instances.append((e, lifted, local, ops, outs, needs))
    n_forward = len(b.eqns)

    value_outs = [env[x] if type(x) is Var else x for x in primal.outputs]
    reached = [type(x) is Var and x in active for x in primal.outputs]
    ct: dict = {}
    seeds = []
    if seed == "ones":
        out = value_outs[0]
        if reached[0]:
            s = b.new(out.aval)
            b.emit(full_p, (), freeze_params({"shape": out.aval.shape, "dtype": out.aval.dtype,
                                              "fill_value": 1}), (s,), None, Origin(OriginKind.SEED, of=out))
            ct[out] = s
    else:
        for out, live in zip(value_outs, reached):
            s = b.new(out.aval)
            seeds.append(s)
            if live:
                ct[out] = s if out not in ct else _add(b, ct[out], s, out, None)

    scopes = None            # joint variable -> its equation's scope, made when a fan-in first needs it
    for e, lifted, local, ops, outs, needs in reversed(instances):
        cts = list(map(ct.get, outs))
        if cts.count(None) == len(cts):
            continue
        template = _template(e, lifted, cts, templates, needs) if overloads and e.prim.overloads else lifted
        if None in cts:
            cts = [_zeros(b, o.aval, o, e.source, e.scope) if c is None else c for c, o in zip(cts, outs)]
        if template is lifted:
            pulled, b.count = lifted.copier.bwd(local, cts, b.count, e.source, e.scope, b.eqns)
        else:
            pulled = _overload_pullback(b, template, e, ops, outs, cts)
        for target, g, needed in zip(ops, pulled, needs):
            if g is None or not needed:
                continue
            if target in ct:
                if scopes is None:      # only a tape with scopes needs the map
                    scopes = ({o: i[0].scope for i in instances for o in i[4]}
                              if any(f.scope for f in primal.eqns) else {})
                g = _add(b, ct[target], g, target, e.source, scopes.get(target, ()))
            ct[target] = g

    grads, grad_inputs = [], []
    for i in wrt:
        v = inputs[i]
        if not v.aval.is_float:
            continue
        grad_inputs.append(i)
        grads.append(ct[v] if v in ct else _zeros(b, v.aval, v))
    return GradTape(tuple(inputs) + tuple(seeds), tuple(b.eqns), tuple(value_outs) + tuple(grads),
                    primal.in_tree, primal.out_tree, primal.input_names + tuple(
                        f"ct{i}" for i in range(len(seeds))),
                    n_forward=n_forward, n_values=len(value_outs), n_seeds=len(seeds),
                    grad_tree=grad_tree, grad_slots=tuple(grad_slots),
                    fallbacks=tuple(fallbacks), wrt=tuple(grad_inputs), captures=primal.captures,
                    meta={"primal_map": env, "cotangents": ct})


def is_real(aval) -> bool:
    return np.issubdtype(aval.dtype, np.floating)


def check_seed(primal: Tape, wrt, holomorphic: bool) -> None:
    """``grad`` seeds its one output with 1: the output must be one real float value, or, for a
    holomorphic function, one complex value of complex inputs (then the gradient is f'(z))."""
    location = primal.eqns[-1].source if primal.eqns else None
    outs = [str(v.aval) for v in primal.outputs]
    if len(primal.outputs) != 1 or primal.outputs[0].aval.size != 1 or not primal.outputs[0].aval.is_float:
        raise NonDifferentiableError(
            f"grad needs a function returning one float value (any shape of size 1); this one "
            f"returns {outs}. Use ad.vjp(f, *args) for other outputs.", location=location)
    if holomorphic:
        real = [primal.input_names[i] if i < len(primal.input_names) else f"input {i}"
                for i in wrt if not np.issubdtype(primal.inputs[i].aval.dtype, np.complexfloating)]
        if real:
            raise NonDifferentiableError(
                f"grad(holomorphic=True) differentiates complex inputs; {', '.join(real)} "
                f"{'is' if len(real) == 1 else 'are'} real. Pass complex values (x + 0j), or drop "
                "holomorphic=True for a real-valued function.", location=location)
    elif not is_real(primal.outputs[0].aval):
        raise NonDifferentiableError(
            f"grad of a complex-valued function: this one returns {outs}. Take np.real (or np.abs) "
            "of the output for a real loss, pass holomorphic=True if the function is holomorphic "
            "(the gradient is then f'(z)), or use ad.vjp(f, *args) with a complex cotangent.",
            location=location)


def _overload_pullback(b: _Builder, template: LiftedRule, e: Eqn, ops, outs, cts) -> list:
    """An overload's pullback (``backpropagate``) inlined for one instance: its template's
    operands are the instance's operands, its primal outputs the instance's outputs, and what
    the overload computed before returning its pullback is computed here, with it."""
    sub = template.literals.copy()
    sub.update({a: o for a, o in zip(template.args, ops) if type(a) is Var})
    computed = set(template.outs)
    body = [t for t in template.fwd if computed.isdisjoint(t.outputs)]     # all but the primitive's own
    b.rename(tuple(v for t in body for v in t.outputs) + template.defined[1], sub)
    sub.update({t: o for t, o in zip(template.outs, outs) if type(t) is Var})
    sub.update(zip(template.cts, cts))
    b.copy(body + list(template.bwd), sub, e, Origin(OriginKind.PULLBACK, outs[0], e.prim.name),
           Origin(OriginKind.PROJECT, outs[0], e.prim.name) if template.projects else None)
    return [sub[g] if type(g) is Var else g for g in template.grads]
