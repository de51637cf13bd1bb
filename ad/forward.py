"""Forward mode, derived from the reverse rules: pushforwards are transposed lifted pullbacks.

A rule's lifted pullback (``ad.lift``) is a tape linear in its cotangents, so its transpose
(``ad.transpose``) is the rule's pushforward: forward mode needs no rule of its own. Where a
pullback holds a primitive with no transpose, the pushforward is the vjp of the pullback (it is
linear in its cotangent, so its own pullback is the pushforward), flagged in ``fallbacks`` like
an opaque rule; an ``@ad.frule`` gives one by hand. Pushforward templates are cached like the
pullback templates, and inlined into a tangent tape with provenance
``pushforward of %9 (tanh), from its pullback``. An overload of a pullback (``ad.backpropagate``)
is transposed instead of the rule's, of the kind reverse mode would use (``overload_of``).

``linearize(f, *primals)`` traces ``f``, runs the forward section and returns the tangent tape
(an ordinary Tape: residuals and tangents in, output tangents out); ``jvp`` runs it once.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from . import pytree
from .api import _KeepingRecorder, _trace, _values, _vjp, _wrt
from .backward import Fallback, build, lifted_overload, overload_rule
from .cache import TapeCache, rules_current, rules_of
from .codegen import compile_tape
from .core_prims import full_p, positive_p, project
from .errors import NonDifferentiableError, TraceError, unwrapping_numpy
from .lift import LiftedRule, cache_key, is_weak, lift
from .passes import optimize as run_passes
from .primitives import Primitive, lookup
from .rrule import rule_of
from .tangents import NoTangent, ZeroTangent, unthunk
from .tape import Aval, Eqn, Lit, Origin, Tape, Var, active_vars, eval_eqns, eval_tape, freeze_params, gc_paused
from .tracer import Recorder, Tracer
from .transpose import NotLinearError, transpose


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
    kind: str
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
        kind, why = "pushforward", None
    except NotLinearError as exc:
        t = _vjp_of_pullback(tape, point, n_const, lifted.prim, source)
        kind, why = "pushforward_vjp", f"its pullback has no transpose: {exc.reason}"
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
                                                   "fill_value": 0}), (sub[g],), source, Origin("primal")))
    seeds = gt.inputs[len(tape.inputs):]
    sub.update((s, Var(next(counter), s.aval)) for s in seeds)
    for e in gt.eqns:
        outs = tuple(Var(next(counter), v.aval) for v in e.outputs)
        sub.update(zip(e.outputs, outs))
        eqns.append(Eqn(e.prim, tuple(sub[x] if type(x) is Var else x for x in e.inputs), e.params,
                        outs, e.source, e.origin))
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
              tuple(t for t in out_tangents if t is not None), None, Origin("pushforward_vjp"))
    return Pushforward(lifted.prim, lifted.args, lifted.fwd, lifted.outs, tangents, (eqn,), out_tangents,
                       "pushforward_vjp", f"its rule runs as a closure ({lifted.fallback}): its "
                       "pushforward is the vjp of that closure")


def _run_opaque_pushforward(handle, *tangents, prim, avals, needs, out_avals):
    ts = iter(tangents)
    full = [next(ts) if n else None for n in needs]
    outs = _push_by_vjp(handle, prim.multiple_results, avals, needs, full, out_avals)
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
            rec.origin = Origin("primal", rule=prim.name)
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
                     _operand(project(Aval.of(y.value if isinstance(y, Tracer) else y), unthunk(o)), rec)
                     for o, y in zip(outs, ys)]
    except Exception as exc:
        exc.add_note(f"in the frule of {prim.name} ({getattr(prim.frule, '__qualname__', prim.frule)}), "
                     f"while lifting it at {source or 'an unknown line'}")
        raise
    return Pushforward(prim, arg_vars, tuple(rec.eqns[:n_fwd]), tuple(_operand(o, rec) for o in ys),
                       tuple(tvars), tuple(rec.eqns[n_fwd:]), tuple(out_t), "pushforward_frule")


def _operand(x, rec):
    if isinstance(x, Tracer):
        return rec.operand(x)[0]
    return Lit.of(np.asarray(x) if not isinstance(x, (float, int, complex)) else x)


# -- the tangent tape ------------------------------------------------------------------------

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
    def __init__(self):
        self.counter = itertools.count()
        self.eqns: list[Eqn] = []

    def new(self, aval) -> Var:
        return Var(next(self.counter), aval)

    def emit(self, prim, inputs, params, outputs, source, origin):
        self.eqns.append(Eqn(prim, tuple(inputs), params, tuple(outputs), source, origin))

    def inline(self, eqns, sub: dict, source, origin: Origin | None):
        for t in eqns:
            outs = [self.new(v.aval) for v in t.outputs]
            sub.update(zip(t.outputs, outs))
            self.emit(t.prim, [sub[x] if type(x) is Var else x for x in t.inputs], t.params, outs,
                      source or t.source, origin or t.origin)

    def zeros(self, aval, of: Var, source=None) -> Var:
        out = self.new(aval)
        self.emit(full_p, (), freeze_params({"shape": aval.shape, "dtype": aval.dtype, "fill_value": 0}),
                  (out,), source, Origin("tangent_zeros", of=of))
        return out


@gc_paused
def build_linearized(primal: Tape, values: list, wrt: list[int], known: dict | None = None,
                     traced: dict | None = None) -> Linearized:
    """Inline every differentiated equation's pushforward template after the forward section
    (rules' primal bodies, as in ``backward.build``). ``wrt``: the float inputs with tangents.
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
            b.emit(e.prim, ops, e.params, outs, e.source, e.origin)
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
        b.inline(pf.fwd, sub, e.source, None)
        outs = [_rule_output(b, sub, o, pf, v, e) for o, v in zip(pf.outs, e.outputs)]
        for i in range(start, len(b.eqns)):
            b.eqns[i] = replace(b.eqns[i], origin=Origin("primal", of=outs[0], rule=e.prim.name))
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
                tsub[a] = t if t is not None else b.zeros(a.aval, o, e.source)
        b.inline(pf.jvp, tsub, e.source, Origin(pf.kind, of=outs[0], rule=e.prim.name))
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
    b.emit(positive_p, (sub[o] if type(o) is Var else o,), (), (out,), e.source, Origin("primal", rule=e.prim.name))
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


# -- the transforms --------------------------------------------------------------------------

FORMS = ("lifted", "closure", "compiled")


class LinearMap:
    """``f_jvp(*tangents)``: the output tangent, one tangent per differentiated argument (a
    pytree like it; None leaves are zeros). ``tape``: the tangent tape (residuals, then the
    tangents -> one tangent per float output); ``residuals``: their values at the primal point;
    ``forward``: the tape that computed them; ``fallbacks``: rules without a transposed
    pushforward. With ``form="compiled"`` the tangent tape runs as generated numpy source."""

    def __init__(self, primal: Tape, argnums, wrt, slots, lin: Linearized, residuals, compiled=None):
        self.tape, self.forward, self.fallbacks = lin.tangent, lin.forward, lin.fallbacks
        self.residuals = residuals
        self._primal, self._argnums, self._wrt, self._slots, self._lin = primal, argnums, wrt, slots, lin
        self._compiled = compiled

    def __call__(self, *tangents):
        return output_tangents(self._primal, self._lin.tangent_slots, self._run(
            tangent_leaves(self._primal, self._argnums, self._wrt, self._slots, tangents)))

    def _run(self, tangents: list) -> list:
        flat = list(self.residuals) + tangents
        return list(self._compiled.call_flat(flat) if self._compiled else eval_tape(self.tape, flat))

    def columns(self, leaf: int) -> list | None:
        """The tangent tape run on each unit vector of the differentiated input leaf ``leaf``
        (zeros elsewhere): per element, the output leaves' tangents (None for integer ones);
        None for a leaf without a tangent. ``ad.jacfwd``'s inner loop, without the pytrees."""
        slot = self._slots[leaf]
        if slot < 0:
            return None
        avals = [self._primal.inputs[i].aval for i in self._wrt]
        flat = [np.zeros(a.shape, a.dtype) for a in avals]
        out = []
        for e in np.eye(avals[slot].size, dtype=avals[slot].dtype):
            flat[slot] = e.reshape(avals[slot].shape)
            ts = self._run(flat)
            out.append([None if s < 0 else ts[s] for s in self._lin.tangent_slots])
        return out


def tangent_leaves(primal: Tape, argnums, wrt, slots, tangents) -> list:
    """The flat tangents of the differentiated inputs, checked against the primals' structure,
    shapes and dtypes (a real input takes a real tangent; None is zeros)."""
    children = primal.in_tree.structure[1]
    if len(tangents) != len(argnums):
        raise TypeError(f"{len(tangents)} tangents for {len(argnums)} differentiated arguments")
    leaves = []
    for k, t in zip(argnums, tangents):
        ls, tree = pytree.flatten(t)
        if tree != children[k] and t is not None:
            raise TypeError(f"the tangent of argument {k} has structure {tree}, its primal {children[k]}")
        leaves += ls if t is not None else [None] * len(pytree.leaf_paths(children[k]))
    out = []
    for leaf, s in zip(leaves, slots):
        if s < 0:
            continue
        v = primal.inputs[wrt[s]]
        if leaf is None:
            out.append(np.zeros(v.aval.shape, v.aval.dtype))
            continue
        if np.shape(leaf) != v.aval.shape:
            raise ValueError(f"the tangent of {primal.input_names[wrt[s]]} has shape {np.shape(leaf)}, "
                             f"its primal {v.aval.shape}")
        dtype = np.result_type(leaf)
        if np.issubdtype(dtype, np.complexfloating) and not np.issubdtype(v.aval.dtype, np.complexfloating):
            raise TypeError(f"a complex tangent for the real {primal.input_names[wrt[s]]}: a real input "
                            "moves along real directions")
        out.append(leaf if isinstance(leaf, Tracer) and leaf.dtype == v.aval.dtype else
                   leaf.astype(v.aval.dtype) if isinstance(leaf, Tracer) else np.asarray(leaf, v.aval.dtype))
    return out


def output_tangents(primal: Tape, tangent_slots, outs: list):
    """The output tangents shaped like the output (None for integer and boolean leaves; a 0-d
    array as a numpy scalar, as numpy returns them)."""
    outs = [t[()] if isinstance(t, np.ndarray) and t.ndim == 0 else t for t in outs]
    return pytree.unflatten(primal.out_tree, [None if s < 0 else outs[s] for s in tangent_slots])


@dataclass(frozen=True)
class _Traced:
    """One trace of ``f`` linearized, as the tape cache keeps it, with the rules it inlined."""
    primal: Tape
    wrt: list
    slots: list
    lin: Linearized
    rules: tuple

    @property
    def captures(self):
        return self.primal.captures


def linearize(f, *primals, argnums=None, form: str = "lifted", optimize: bool = True, max_traces: int = 8):
    """``y, f_jvp = ad.linearize(f, *primals)``: ``f_jvp(*tangents)`` is the Jacobian of ``f`` at
    ``primals`` applied to tangents (one per argument, or per ``argnums``), run from a tangent
    tape (``f_jvp.tape``, an ordinary Tape: it prints, optimises, compiles, saves). What the
    pushforwards compute from the primals alone runs once, in the forward section; the tangent
    tape holds the linear part. Complex inputs move along complex directions, ``t = dx + i dy``
    (docs/complex.md).

    Each call traces ``f`` (a one-shot transform keeps no tapes: see ``ad.cache``); ``f_jvp``
    runs the tangent tape as often as wanted.

    >>> y, f_jvp = ad.linearize(lambda x: np.sin(x) * 2.0, np.zeros(2))
    >>> f_jvp(np.ones(2))
    array([2., 2.])
    >>> print(f_jvp.tape)                  # cos(x), read by sin's pushforward, is a residual
    { lambda %4:f64[2] %3:f64[2] ; let
        %5:f64[2] = multiply %3 %4    # pushforward of %1 (sin), from its pullback
        %6:f64[2] = multiply %5 2.0    # pushforward of %2 (multiply), from its pullback
      in (%6) }
    """
    if form not in ("lifted", "compiled"):
        raise ValueError(f"linearize form={form!r}: choose 'lifted' or 'compiled' (the closure form "
                         "has no tape: use ad.jvp(..., form='closure'))")
    argnums = tuple(range(len(primals))) if argnums is None else argnums
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    cache = TapeCache(max_traces)
    return linearize_with(cache, f, primals, argnums, form, optimize)


def linearize_with(cache, f, primals, argnums: tuple, form: str, optimize: bool = True):
    """``linearize`` keeping its tapes in ``cache`` (``ad.hvp`` keys them by the function whose
    gradient it linearizes)."""
    nargs = len(primals)
    fresh: dict = {}        # id of a tape traced in this call -> the forward outputs its building computed

    def new_tape(args):
        computed: dict = {}
        primal = _trace(f, args, argnums, _KeepingRecorder(computed))
        wrt, _, slots = _wrt(primal, argnums, nargs)
        plain = all(type(a) is np.ndarray for a in primal.flatten_args(args))    # no tracer, no Python scalar
        known: dict = {}
        lin = build_linearized(primal, _values(primal, args), wrt, known, computed if plain else None)
        out = [known[x] if type(x) is Var else x.value for x in lin.forward.outputs]
        if optimize:
            lin = replace(lin, forward=run_passes(lin.forward), tangent=run_passes(lin.tangent))
        traced = _Traced(primal, wrt, slots, lin, rules_of(primal))
        if plain:
            fresh[id(traced)] = out         # what running the forward tape would give, computed once
        return traced

    def run(entry, args, leaves):
        if not rules_current(entry.tape.rules):     # a rule registered since: its pushforward changed
            entry.tape, entry.compiled = new_tape(args), None
        t = entry.tape
        out = fresh.pop(id(t), None)
        if out is None:
            out = eval_tape(t.lin.forward, t.primal.flatten_args(args))     # tracers of an enclosing trace, if any
        if t.lin.fallbacks and any(isinstance(x, Tracer) for x in out):
            raise NonDifferentiableError("cannot differentiate through a linearization whose rules fell "
                                         "back to closures: " + "; ".join(map(str, t.lin.fallbacks)))
        if form == "compiled" and entry.compiled is None:
            entry.compiled = compile_tape(t.lin.tangent)
        y = pytree.unflatten(t.primal.out_tree, out[:t.lin.n_values])
        return y, LinearMap(t.primal, argnums, t.wrt, t.slots, t.lin, out[t.lin.n_values:], entry.compiled)
    return cache.call(tuple(primals), new_tape, run)


def jvp(f, primals, tangents, *, form: str = "lifted"):
    """``y, ty = ad.jvp(f, primals, tangents)``: ``f(*primals)`` and its Jacobian applied to
    ``tangents`` (a tuple like ``primals``; a None entry leaves that argument constant).

    form: "lifted" runs the tangent tape of the pushforwards derived from the rules' pullbacks
    (``linearize``); "compiled" runs it as generated numpy source; "closure" calls each rule's
    pushforward eagerly (its frule, or the vjp of its pullback closure). All three agree.

    >>> ad.jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (np.float64(6.0), np.float64(3.0))
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r}; choose one of {FORMS}")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp takes primals and tangents as tuples: ad.jvp(f, (x,), (t,))")
    if len(primals) != len(tangents):
        raise TypeError(f"{len(primals)} primals and {len(tangents)} tangents")
    argnums = tuple(k for k, t in enumerate(tangents) if t is not None)
    given = [tangents[k] for k in argnums]
    if form != "closure":
        y, f_jvp = linearize(f, *primals, argnums=argnums, form=form)
        return y, f_jvp(*given)
    primal = _trace(f, tuple(primals), argnums)
    wrt, _, slots = _wrt(primal, argnums, len(primals))
    outs, touts = eval_closure_jvp(primal, primal.flatten_args(tuple(primals)), wrt,
                                   tangent_leaves(primal, argnums, wrt, slots, given))
    tangent_slots, k = [], 0
    for v in primal.outputs:
        tangent_slots.append(k if v.aval.is_float else -1)
        k += v.aval.is_float
    return (pytree.unflatten(primal.out_tree, outs),
            output_tangents(primal, tangent_slots, [t for t, v in zip(touts, primal.outputs) if v.aval.is_float]))


# -- the closure form -------------------------------------------------------------------------

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
            out = _push_by_vjp(pullback, e.prim.multiple_results, [Aval.of(v) for v in vals], needs, ts,
                               [Aval.of(yk) for yk in ys])
        ys, outs = (tuple(y), tuple(out)) if e.prim.multiple_results else ((y,), (out,))
        for v, yk, t in zip(e.outputs, ys, outs):
            t = unthunk(t)
            if v.aval.is_float and t is not None and not isinstance(t, (NoTangent, ZeroTangent)):
                tan[v] = project(Aval.of(yk), t)
        return y
    eval_eqns(primal.eqns, env, run_rule)
    outs = [env[x] if type(x) is Var else x.value for x in primal.outputs]
    touts = [tan[x] if type(x) is Var and x in tan else np.zeros(x.aval.shape, x.aval.dtype)
             for x in primal.outputs]
    return outs, touts


def _zeros_of(value):
    aval = Aval.of(value)
    return np.zeros(aval.shape, aval.dtype) if aval.is_float else NoTangent()


def _push_by_vjp(pullback, multiple_results: bool, avals, needs, ts, out_avals):
    """The pushforward of one rule instance as the vjp of its pullback closure (linear in the
    cotangent, so its pullback is the pushforward), at the zero cotangent. ``avals``: the
    operands'; ``ts``: their tangents (None: zero); ``out_avals``: the outputs'."""
    def pulled(ct):
        raw = pullback(ct)
        raw = raw if isinstance(raw, tuple) else (raw,)
        out = []
        for a, g, n in zip(avals, raw, needs):
            if n:
                g = project(a, unthunk(g))
                out.append(np.zeros(a.shape, a.dtype) if isinstance(g, (NoTangent, ZeroTangent)) else g)
        return tuple(out)
    zeros = tuple(np.zeros(a.shape, a.dtype) for a in out_avals)
    _, pb = _vjp(pulled, (zeros if multiple_results else zeros[0],), overloads=False)
    (out,) = pb(tuple(t if t is not None else np.zeros(a.shape, a.dtype) for t, a, n in zip(ts, avals, needs) if n))
    return out
