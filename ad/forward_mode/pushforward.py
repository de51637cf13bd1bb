"""Pushforward templates, derived from the reverse rules: a rule's pushforward is its transposed
lifted pullback (the mirror of ``ad.reverse_mode.lift``).

A rule's lifted pullback (``ad.reverse_mode.lift``) is a tape linear in its cotangents, so its
transpose (``ad.transpose``) is the rule's pushforward: forward mode needs no rule of its own.
Where a pullback holds a primitive with no transpose, the pushforward is the vjp of the pullback
(it is linear in its cotangent, so its own pullback is the pushforward), flagged in
``fallbacks`` like an opaque rule; an ``@ad.frule`` gives one by hand. Pushforward templates are
cached like the pullback templates; ``ad.forward_mode.build`` inlines them into a tangent tape.
An overload of a pullback (``ad.backpropagate``) is transposed instead of the rule's, of the
kind reverse mode would use (``overload_of``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..core_prims import full_p, project
from ..errors import NonDifferentiableError, TraceError, unwrapping_numpy
from ..primitives import Primitive, lookup
from ..reverse_mode.build import build, lifted_overload
from ..rules import overload_rule
from ..reverse_mode.lift import LiftedRule, cache_key, is_weak, lift, opaque_pullback_p
from ..reverse_mode.pullback import pullback_of
from ..tangents import NoTangent, ZeroTangent, unthunk
from ..origins import Origin, OriginKind
from ..tape import Aval, Eqn, Lit, Tape, Var, eval_eqns, freeze_params
from ..tracer import Recorder, Tracer
from ..tracing import output_operand
from .transposition import NotLinearError, transpose


def frule(f):
    """Give a primitive's pushforward by hand (otherwise it is derived from its rrule):
    ``@ad.frule(my_primitive)`` on ``rule(*operands, **params) -> (y, pushforward)``, with
    ``pushforward(*tangents)`` returning the output's tangent (a tuple for multiple results).
    An operand without a tangent gets zeros (``NoTangent()`` for integers and booleans).

    >>> cube = ad.primitive(lambda x: x * x * x, name="cube_frule_doc")
    >>> _ = ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))
    >>> @ad.frule(cube)
    ... def cube_frule(x):
    ...     return cube(x), lambda dx: 3 * x * x * dx
    >>> ad.jvp(cube, (2.0,), (1.0,))
    (8.0, np.float64(12.0))
    """
    prim = lookup(f)

    def register(rule):
        prim.frule = rule
        return rule
    return register


@dataclass(frozen=True)
class Pushforward:
    """One rule instance's pushforward in closed form over template variables (a LiftedRule's
    mirror).

    args, fwd, outs: the rule's primal body, as in ``LiftedRule``
    tangents: one template variable per operand (None: it has no tangent)
    jvp:   the pushforward's equations (read tangents, args and fwd variables)
    out_tangents: one per output: a template variable, or None (a zero tangent)
    kind:  its Origin kind: "pushforward" (transposed pullback), "pushforward_vjp" (the vjp of
           the pullback), "pushforward_frule"
    fallback: why the pullback was not transposed (kind "pushforward_vjp")
    """
    prim: object
    args: tuple
    fwd: tuple
    outs: tuple
    tangents: tuple
    jvp: tuple
    out_tangents: tuple
    kind: OriginKind
    fallback: str | None = None

    def evaluate(self, values, tangents) -> tuple[list, list]:
        """Run at concrete operands and tangents (one per operand, None where there is none):
        ``(outputs, output tangents)``, a tangent None where the template has none."""
        env = {a: v for a, v in zip(self.args, values) if type(a) is Var}
        eval_eqns(self.fwd, env)
        for a, t, v in zip(self.tangents, tangents, values):
            if a is not None:
                env[a] = np.zeros(a.aval.shape, a.aval.dtype) if t is None else t
        eval_eqns(self.jvp, env)

        def read(x):
            return env[x] if type(x) is Var else x.value
        return [read(o) for o in self.outs], [None if t is None else read(t) for t in self.out_tangents]


_CACHE: dict = {}


def clear_cache():
    _CACHE.clear()


def pushforward(prim, params: tuple, values: list, needs: tuple[bool, ...], source=None,
                overload=None) -> Pushforward:
    """The pushforward template of ``prim``'s rule at operands like ``values`` (its frule's, or
    the transpose of its lifted pullback), or the transpose of ``overload``'s pullback (an
    overload of the rule's, ``ad.backpropagate``); cached like ``lift``'s templates."""
    rule = None if overload is None else overload_rule(prim, overload)
    how = ("overload", rule) if rule is not None else ("frule" if prim.frule else "derived", prim.frule)
    key = how + cache_key(prim, params, [(type(v), v) if is_weak(v) else Aval.of(v) for v in values], needs)
    try:
        hit = _CACHE.get(key)
    except TypeError:           # unhashable params
        key, hit = None, None
    if hit is not None:
        return hit
    if rule is not None:
        lifted = lifted_overload(lift(prim, params, values, needs, source, rule), overload, source)
        pf = derive(lifted, values, source)
    elif prim.frule is not None:
        pf = _lift_frule(prim, params, values, needs, source)
    else:
        pf = derive(lift(prim, params, values, needs, source), values, source)
    if key is not None and not any(e.prim.kind == "guard" for e in pf.fwd + pf.jvp):
        _CACHE[key] = pf
    return pf


def pullback_tape(lifted: LiftedRule) -> tuple[Tape, list[int]]:
    """A lifted pullback as a tape: (operands, residuals, float cotangents) -> the operands'
    cotangents, and the operand each output belongs to. The cotangent of an integer output
    (frexp's exponent) is a constant, not a linear input."""
    args = [a for a in lifted.args if type(a) is Var]
    cts = [c for c in lifted.cts if c.aval.is_float]
    res = [r for r in lifted.residuals if r not in set(args)] + [c for c in lifted.cts if not c.aval.is_float]
    owners = [i for i, g in enumerate(lifted.grads) if g is not None]
    return Tape(tuple(args + res) + tuple(cts), lifted.bwd, tuple(lifted.grads[i] for i in owners)), owners


def derive(lifted: LiftedRule, values: list, source=None) -> Pushforward:
    """The pushforward of a lifted rule: the transpose of its pullback in its cotangents, or
    (a primitive in it has no transpose) the vjp of its pullback."""
    if lifted.fallback:
        return _opaque_pushforward(lifted)
    tape, owners = pullback_tape(lifted)
    cts = [c for c in lifted.cts if c.aval.is_float]    # an integer output has no tangent
    env = {a: v for a, v in zip(lifted.args, values) if type(a) is Var}
    eval_eqns(lifted.fwd, env)
    # the point of the cotangents: zero, which a primitive checking its cotangent (phase_free) accepts
    env.update((c, np.zeros(c.aval.shape, c.aval.dtype)) for c in lifted.cts)
    point = [env[v] for v in tape.inputs]
    n_const = len(tape.inputs) - len(cts)
    try:
        t = transpose(tape, range(n_const, len(tape.inputs)), point)
        kind, why = OriginKind.PUSHFORWARD, None
    except NotLinearError as exc:
        t = _vjp_of_pullback(tape, point, n_const, lifted.prim, source)
        kind, why = OriginKind.PUSHFORWARD_VJP, f"its pullback has no transpose: {exc.reason}"
    tangents = [None] * len(lifted.args)
    for k, i in enumerate(owners):
        tangents[i] = t.inputs[n_const + k]
    out_tangents = dict(zip(cts, t.outputs))
    return Pushforward(lifted.prim, lifted.args, lifted.fwd, lifted.outs, tuple(tangents), t.eqns,
                       tuple(out_tangents.get(c) for c in lifted.cts), kind, why)


def _vjp_of_pullback(tape: Tape, point: list, n_const: int, prim, source) -> Tape:
    """The pushforward as the vjp of the pullback (linear in the cotangents, so its pullback is
    the pushforward): a tape (constants, tangents) -> output tangents over ``tape``'s constants."""
    cts = list(range(n_const, len(tape.inputs)))
    try:
        gt = build(tape, point, cts, seed="input", overloads=False)
    except (NotImplementedError, TraceError) as exc:
        raise NonDifferentiableError(
            f"no pushforward for {prim.name}: its pullback has no transpose, and it cannot be "
            f"differentiated either ({exc}); give one with @ad.frule({prim.name})", location=source) from None
    counter = itertools.count(1 + max(v.n for v in tape.inputs + tuple(v for e in tape.eqns for v in e.outputs)))
    sub = dict(zip(gt.inputs[:n_const], tape.inputs[:n_const]))
    eqns = []
    for g, v in zip(gt.inputs[n_const:len(tape.inputs)], tape.inputs[n_const:]):
        sub[g] = Var(next(counter), g.aval)     # any point: the cotangent is zero
        eqns.append(Eqn(full_p, (), freeze_params({"shape": g.aval.shape, "dtype": g.aval.dtype,
                                                   "fill_value": 0}), (sub[g],), source, Origin(OriginKind.PRIMAL)))
    seeds = gt.inputs[len(tape.inputs):]
    sub.update((s, Var(next(counter), s.aval)) for s in seeds)
    for e in gt.eqns:
        outs = tuple(Var(next(counter), v.aval) for v in e.outputs)
        sub.update(zip(e.outputs, outs))
        eqns.append(Eqn(e.prim, tuple(sub[x] if type(x) is Var else x for x in e.inputs), e.params,
                        outs, e.source, e.origin, e.scope))
    return Tape(tuple(tape.inputs[:n_const]) + tuple(sub[s] for s in seeds), tuple(eqns),
                tuple(sub[x] if type(x) is Var else x for x in gt.outputs[gt.n_values:]))


def _opaque_pushforward(lifted: LiftedRule) -> Pushforward:
    """The pushforward of a rule that runs as a closure (``lift``'s opaque pair): the vjp of its
    pullback closure, taken when the tape runs."""
    (rrule_eqn,) = lifted.fwd
    handle = rrule_eqn.outputs[-1]
    counter = itertools.count(1 + max(v.n for v in (*rrule_eqn.inputs, *rrule_eqn.outputs, *lifted.cts)))
    needs = tuple(g is not None for g in lifted.grads)
    tangents = tuple(Var(next(counter), a.aval) if n else None for a, n in zip(lifted.args, needs))
    out_tangents = tuple(Var(next(counter), o.aval) if o.aval.is_float else None for o in lifted.outs)
    params = freeze_params({"prim": lifted.prim, "avals": tuple(a.aval for a in lifted.args), "needs": needs,
                            "out_avals": tuple(o.aval for o in lifted.outs)})
    eqn = Eqn(opaque_pushforward_p, (handle,) + tuple(t for t in tangents if t is not None), params,
              tuple(t for t in out_tangents if t is not None), None, Origin(OriginKind.PUSHFORWARD_VJP))
    return Pushforward(lifted.prim, lifted.args, lifted.fwd, lifted.outs, tangents, (eqn,), out_tangents,
                       OriginKind.PUSHFORWARD_VJP, f"its rule runs as a closure ({lifted.fallback}): its "
                       "pushforward is the vjp of that closure")


def _run_opaque_pushforward(handle, *tangents, prim, avals, needs, out_avals):
    ts = iter(tangents)
    full = [next(ts) if n else None for n in needs]
    outs = push_by_vjp(handle, prim, avals, needs, full, out_avals)
    outs = outs if prim.multiple_results else (outs,)
    return tuple(t for t, a in zip(outs, out_avals) if a.is_float)


opaque_pushforward_p = Primitive(
    "opaque_pushforward", _run_opaque_pushforward, params=("prim", "avals", "needs", "out_avals"),
    multiple_results=True, kind="opaque",
    doc="The pushforward of a rule that runs as a closure: the vjp of the pullback closure in its handle.")


def _lift_frule(prim, params, values, needs, source) -> Pushforward:
    """Trace an ``@ad.frule``: its primal body, then its pushforward on placeholder tangents."""
    kwargs = dict(params)
    try:
        with Recorder() as rec:
            rec.source = source
            args = [v if is_weak(v) else rec.new_tracer(v) for v in values]
            rec.differentiated.update(a.variable for a, n in zip(args, needs) if n and isinstance(a, Tracer))
            arg_vars = tuple(a.variable if isinstance(a, Tracer) else Lit.of(a) for a in args)
            rec.origin = Origin(OriginKind.PRIMAL, rule=prim.name)
            with unwrapping_numpy():
                y, push = prim.frule(*args, **kwargs)
            n_fwd = len(rec.eqns)
            ys = tuple(y) if prim.multiple_results else (y,)
            tangents, tvars = [], []
            for a, n in zip(args, needs):
                aval = Aval.of(a.value if isinstance(a, Tracer) else a)
                if n:
                    t = rec.new_tracer(np.ones(aval.shape, aval.dtype))
                    rec.symbolic.add(t.variable)
                    tvars.append(t.variable)
                else:
                    t = rec.record(full_p, (), {"shape": aval.shape, "dtype": aval.dtype, "fill_value": 0}) \
                        if aval.is_float else NoTangent()
                    tvars.append(None)
                tangents.append(t)
            with unwrapping_numpy():
                out = push(*tangents)
            outs = tuple(out) if prim.multiple_results else (out,)
            out_t = [None if isinstance(unthunk(o), (NoTangent, ZeroTangent)) else
                     output_operand(rec, project(Aval.of(y.value if isinstance(y, Tracer) else y), unthunk(o)))
                     for o, y in zip(outs, ys)]
    except Exception as exc:
        exc.add_note(f"in the frule of {prim.name} ({getattr(prim.frule, '__qualname__', prim.frule)}), "
                     f"while lifting it at {source or 'an unknown line'}")
        raise
    return Pushforward(prim, arg_vars, tuple(rec.eqns[:n_fwd]), tuple(output_operand(rec, o) for o in ys),
                       tuple(tvars), tuple(rec.eqns[n_fwd:]), tuple(out_t), OriginKind.PUSHFORWARD_FRULE)


def with_cotangents(primal: Tape, active: set) -> set:
    """The active variables that some output of ``primal`` depends on through differentiable
    equations: those reverse mode gives a cotangent when it seeds every output (as ``vjp`` does;
    ``grad``'s one output is every output)."""
    live = {x for x in primal.outputs if type(x) is Var and x in active}
    for e in reversed(primal.eqns):
        if e.prim.differentiable and not live.isdisjoint(e.outputs):
            live.update(x for x in e.inputs if type(x) is Var and x in active)
    return live


def overload_of(e: Eqn, live: set):
    """The overload of ``e``'s pullback that reverse mode uses (``ad.backpropagate``), by
    ``with_cotangents``: "dense" when every output of ``e`` has a cotangent, else "zero"."""
    if not e.prim.overloads:
        return None
    return e.prim.overloads.get("dense" if live.issuperset(e.outputs) else "zero")


def push_by_vjp(pullback, prim, avals, needs, ts, out_avals):
    """The pushforward of one instance of ``prim``'s rule as the vjp of its pullback closure
    (linear in the cotangent, so its pullback is the pushforward), at the zero cotangent.
    ``avals``: the operands'; ``ts``: their tangents (None: zero); ``out_avals``: the outputs'."""
    def pulled(ct):         # called as the opaque pair calls it: projected, zeros where none
        return opaque_pullback_p.impl(pullback, *(ct if prim.multiple_results else (ct,)),
                                      prim=prim, avals=avals, needs=needs)
    zeros = tuple(np.zeros(a.shape, a.dtype) for a in out_avals)
    _, pb = pullback_of(pulled, (zeros if prim.multiple_results else zeros[0],), overloads=False)
    (out,) = pb(tuple(t if t is not None else np.zeros(a.shape, a.dtype) for t, a, n in zip(ts, avals, needs) if n))
    return out
