"""Lifting a rule: trace its primal body and its pullback into two equation lists.

``lift(prim, params, values, needs_grad)`` runs the rule on fresh tracers (its primal operations
are recorded, not differentiated), then calls the pullback on placeholder cotangent tracers. What
the pullback closes over *is* a forward tracer, so the backward equations read forward variables
by identity: no re-mapping table. If anything escapes (the pullback coerces its cotangent, calls a
function without a rule, branches on a value), the whole rule falls back to an opaque pair that
runs the real closure (see ``opaque_rrule_p``); falling back for the pullback alone would bake
trace-time residuals into the tape.

Lifted rules are cached per (primitive, params, operand avals, which operands need gradients).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import TraceError, unwrapping_numpy
from ..core_prims import positive_p, project
from ..primitives import Primitive
from ..tangents import NoTangent, ZeroTangent, unthunk
from ..origins import Origin, OriginKind
from ..tape import HANDLE, Aval, Eqn, Lit, Var, eval_eqns, freeze_params
from ..tracer import Recorder, Tracer


@dataclass(frozen=True)
class LiftedRule:
    """One rule instance in closed form over template variables.

    args:  template variables standing for the operands (literals for Python scalars)
    fwd:   the primal body's equations (read args, define outs)
    outs:  the primal outputs (template vars, or args, or literals)
    cts:   placeholder cotangent variables, one per output
    bwd:   the pullback's equations (read cts, args and fwd variables)
    grads: one cotangent per operand: a template var, a literal, or None (no gradient)
    fallback: why the rule could not be lifted (then fwd/bwd are the opaque pair)
    """
    prim: Primitive
    args: tuple[Var, ...]
    fwd: tuple[Eqn, ...]
    outs: tuple
    cts: tuple[Var, ...]
    bwd: tuple[Eqn, ...]
    grads: tuple
    fallback: str | None = None

    @functools.cached_property
    def defined(self) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
        """The variables the primal body defines and those the pullback defines, in order."""
        return tuple(v for e in self.fwd for v in e.outputs), tuple(v for e in self.bwd for v in e.outputs)

    @functools.cached_property
    def literals(self) -> dict:
        """Every literal operand of its equations, mapped to itself: the start of a substitution
        that maps every operand (``backward._Builder.copy``)."""
        return {x: x for e in self.fwd + self.bwd for x in e.inputs if type(x) is Lit}

    @functools.cached_property
    def projects(self) -> bool:
        """Whether the pullback projects a cotangent (some equations have origin "project")."""
        return any(e.origin.kind is OriginKind.PROJECT for e in self.bwd)

    @functools.cached_property
    def copier(self) -> "Copier":
        """The template compiled to the code that writes one instance of it (``Copier``)."""
        return Copier(self)

    @functools.cached_property
    def value_dependent(self) -> bool:
        """Whether the rule branched on its operands' values (it recorded guards): then the
        template holds for those values alone, and is neither cached nor reused."""
        return any(e.prim.kind == "guard" for e in self.fwd + self.bwd)

    @property
    def residuals(self) -> list[Var]:
        """Forward-side variables (operands or primal-body values) the pullback reads."""
        defined = {v for e in self.bwd for v in e.outputs} | set(self.cts)
        seen, out = set(), []
        for e in self.bwd:
            for x in e.inputs:
                if type(x) is Var and x not in defined and x not in seen:
                    seen.add(x)
                    out.append(x)
        return out

    def evaluate(self, values, cotangents, env: dict | None = None) -> tuple[list, list]:
        """Run the template at concrete operands and output cotangents (one per output):
        ``(outputs, grads)``, a grad being None where the template has none. ``env`` collects
        every template value (the checker compares them with the closure's)."""
        env = {} if env is None else env
        env.update((a, v) for a, v in zip(self.args, values) if type(a) is Var)

        def read(x):
            return env[x] if type(x) is Var else x.value
        eval_eqns(self.fwd, env)
        env.update(zip(self.cts, cotangents))
        eval_eqns(self.bwd, env)
        return [read(o) for o in self.outs], [None if g is None else read(g) for g in self.grads]


class Copier:
    """A template compiled to the Python that writes one instance of it into a gradient tape:
    ``backward.build`` instantiates a loop of 10,000 steps' templates 10,000 times, and straight-
    line code with the template's primitives, params, avals and literals bound as constants
    writes an instance in a third fewer instructions than mapping each operand through a dict.

    ``fwd(ops, outputs, n, source, scope, eqns) -> (outs, local, n)`` appends the primal body's
    equations on the joint operands ``ops``, new variables numbered from ``n`` (an output the
    rule did not compute, an operand or a constant, gets a ``positive`` equation, so that it has
    a cotangent of its own: a variable like the primal equation's ``outputs``), and returns the
    joint outputs, the joint values the pullback may read and the next number;
    ``bwd(local, cts, n, source, scope, eqns) -> (grads, n)`` appends the pullback's on the
    output cotangents ``cts``. Equations are stamped with the instance's origins, ``source``
    (else the template's) and ``scope`` (the primal equation's: the backward mirrors the
    forward). ``source`` is the code."""

    def __init__(self, lifted: "LiftedRule"):
        self.rule = lifted.prim.name
        self.constants: dict = {"Var": Var, "Eqn": Eqn, "Origin": Origin}
        self.names: dict = {}            # template variable (or literal operand) -> identifier
        args = [self._name(a, "a") for a in lifted.args]
        fwd = ["def fwd(ops, outputs, n, source, scope, eqns):", *self._unpack(args, "ops")]
        made = self._new(lifted.defined[0], fwd)
        outs, extra = [], []            # extra: (operand, output index) of a positive equation
        for i, o in enumerate(lifted.outs):
            if type(o) is Var and o not in lifted.args:
                outs.append(self.names[o])
            else:
                outs.append(f"p{len(extra)}")
                extra.append((self._ref(o), i))
        fwd += [f"    p{k} = Var(n + {len(made) + k}, outputs[{i}].aval)" for k, (_, i) in enumerate(extra)]
        rule = self._constant(lifted.prim.name, "R")
        fwd.append(f"    o = Origin('primal', {outs[0]}, {rule})")
        fwd += self._copy(lifted.fwd, "o")
        fwd += [f"    eqns.append(Eqn({self._constant(positive_p, 'P')}, ({x},), (), (p{k},), source, o, scope))"
                for k, (x, _) in enumerate(extra)]
        local = args + made + [f"p{k}" for k in range(len(extra))]
        fwd.append(f"    return [{', '.join(outs)}], {self._tuple(local)}, n + {len(made) + len(extra)}")
        bwd = ["def bwd(local, cts, n, source, scope, eqns):", *self._unpack(local, "local"),
               *self._unpack([self._name(c, "c") for c in lifted.cts], "cts")]
        made = self._new(lifted.defined[1], bwd)
        bwd.append(f"    o = Origin('pullback', {outs[0]}, {rule})")
        if lifted.projects:
            bwd.append(f"    j = Origin('project', {outs[0]}, {rule})")
        bwd += self._copy(lifted.bwd, "o", "j")
        grads = ["None" if g is None else self._ref(g) for g in lifted.grads]
        bwd.append(f"    return {self._tuple(grads)}, n + {len(made)}")
        self.source = "\n".join(fwd + bwd) + "\n"
        namespace = dict(self.constants)
        exec(compile(self.source, f"<copier of {lifted.prim.name}>", "exec"), namespace)   # noqa: S102 (our own code)
        self.fwd, self.bwd = namespace["fwd"], namespace["bwd"]

    def _name(self, x, stem: str) -> str:
        self.names[x] = name = f"{stem}{len(self.names)}"
        return name

    def _ref(self, x) -> str:
        """An operand: a named template value, else a literal (bound as a constant)."""
        name = self.names.get(x)
        if name is not None:
            return name
        if type(x) is Var:      # a variable the template does not define: never a constant
            raise TraceError(f"the rule of {self.rule} reads {x!r}, a variable its template does not "
                             "define (a value of another trace?)")
        return self._constant(x, "L")

    def _constant(self, value, stem: str) -> str:
        name = f"{stem}{len(self.constants)}"
        self.constants[name] = value
        return name

    def _new(self, defined, lines: list) -> list[str]:
        made = [self._name(v, "t") for v in defined]
        lines += [f"    {t} = Var({f'n + {k}' if k else 'n'}, {self._constant(v.aval, 'A')})"
                  for k, (t, v) in enumerate(zip(made, defined))]
        return made

    def _copy(self, eqns, origin: str, project: str = "") -> list[str]:
        lines = []
        for t in eqns:
            source = f"source or {self._constant(t.source, 'S')}" if t.source is not None else "source"
            stamp = project if project and t.origin.kind is OriginKind.PROJECT else origin
            ins, outs = self._tuple(map(self._ref, t.inputs)), self._tuple(map(self._ref, t.outputs))
            lines.append(f"    eqns.append(Eqn({self._constant(t.prim, 'P')}, {ins}, {self._constant(t.params, 'Q')}, "
                         f"{outs}, {source}, {stamp}, scope))")
        return lines

    @staticmethod
    def _unpack(names: list, what: str) -> list[str]:
        return [f"    {', '.join(names)}{',' if len(names) == 1 else ''} = {what}"] if names else []

    @staticmethod
    def _tuple(items) -> str:
        items = list(items)
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


_CACHE: dict = {}


def clear_cache():
    _CACHE.clear()


def cache_key(prim, params, avals, needs_grad):
    # the rule is part of the key: re-registering a rule (a fix, a test) must re-lift
    return (prim, prim.rule, params, tuple(avals), tuple(needs_grad))


def lift(prim: Primitive, params: tuple, values: list, needs_grad: tuple[bool, ...],
         source: str | None = None, rule=None) -> LiftedRule:
    """The lifted form of ``prim``'s rule (or of ``rule``, standing in for it) at operands like
    ``values``; cached by their avals (a Python scalar by its value: it stays a literal)."""
    rule = rule or prim.rule
    key = (rule,) + cache_key(prim, params, map(_operand_key, values), needs_grad)
    try:
        hit = _CACHE.get(key)
    except TypeError:       # unhashable params: lift every time
        key, hit = None, None
    if hit is not None:
        return hit
    avals = [Aval.of(v) for v in values]
    try:
        lifted = _trace_rule(prim, rule, params, values, needs_grad, source)
    except TraceError as exc:           # an escape: the rule is not numpy code with rules
        lifted = _opaque(prim, params, avals, values, needs_grad, _reason(exc))
    except Exception as exc:            # a bug in the rule: it must surface
        exc.add_note(f"in the rule of {prim.name} ({getattr(rule, '__qualname__', rule)}), while "
                     f"lifting it at {source or 'an unknown line'}")
        raise
    if key is not None and not lifted.value_dependent:
        _CACHE[key] = lifted
    return lifted


def cached(e: Eqn, needs_grad: tuple[bool, ...], rule=None) -> LiftedRule | None:
    """The cached template of equation ``e``'s rule (or of ``rule``), found from its operands'
    avals alone; None when it must be lifted at values (``lift``)."""
    rule = rule or e.prim.rule
    try:
        return _CACHE.get((rule,) + cache_key(e.prim, e.params, operand_keys(e), needs_grad))
    except TypeError:       # unhashable params: lifted every time
        return None


def operand_keys(e: Eqn) -> tuple:
    """What a template depends on of the operands of equation ``e``: ``_operand_key`` of their
    values, from their avals (a variable's value has its aval's shape and dtype)."""
    return tuple([(x.aval.shape, x.aval.dtype) if type(x) is Var else _operand_key(x.value)
                  for x in e.inputs])


class ExemplarRecorder(Recorder):
    """A Recorder that keeps, for each template ``signature`` (primitive, params, operand avals),
    the operand values of the first equation with it: ``exemplars[signature] = (eqn, values)``.
    What a cache miss needs to lift a rule that does not branch on values, without running the
    traced tape again (``backward.build``)."""

    def __init__(self):
        super().__init__()
        self.exemplars: dict = {}

    def record(self, prim, operands, params):
        out = super().record(prim, operands, params)
        e = self.eqns[-1]
        try:
            key = signature(e)
            known = key in self.exemplars
        except TypeError:       # unhashable params: lifted at the run's values
            return out
        if not known:
            self.exemplars[key] = (e, [x.value if isinstance(x, Tracer) else i.value
                                       for x, i in zip(operands, e.inputs)])
        return out


def signature(e: Eqn) -> tuple:
    """What the template of equation ``e``'s rule depends on (but which operands need gradients),
    within one tape: its primitive, params and operands, a variable's aval by identity (tracing
    makes one aval per shape and dtype, ``tape.interned_aval``: two equal ones would only make two
    signatures; a signature's avals live as long as its tape), a literal as ``_operand_key``. An
    identity is a third of the cost of the aval's fields, on every recorded operation."""
    return (e.prim, e.params) + tuple([id(x.aval) if type(x) is Var else _operand_key(x.value)
                                       for x in e.inputs])


def is_weak(x) -> bool:
    """Python scalars keep numpy's weak-scalar promotion, so they stay literals in templates."""
    return type(x) in _WEAK


_WEAK = frozenset((bool, int, float, complex))


def _operand_key(v):
    """What a template depends on of an operand: its shape and dtype (its aval's fields: a
    tuple hashes in C, an ``Aval`` in Python), or a Python scalar's type and value (a literal)."""
    t = type(v)
    if t is np.ndarray:
        return v.shape, v.dtype
    if t in _WEAK:
        return t, v
    a = Aval.of(v)
    return a.shape, a.dtype


def _reason(exc: Exception) -> str:
    reason = getattr(exc, "reason", None) or str(exc).split("\n")[0]
    return f"{type(exc).__name__}: {reason}"


def _trace_rule(prim, rule, params, values, needs_grad, source) -> LiftedRule:
    if rule is None:
        raise NotImplementedError(f"{prim.name} has no rule")
    kwargs = dict(params)
    with Recorder() as rec:
        rec.source = source
        args = [v if is_weak(v) else rec.new_tracer(v) for v in values]
        rec.differentiated.update(a.variable for a, n in zip(args, needs_grad)
                                  if n and isinstance(a, Tracer) and a.aval.is_float)
        # the template's variables, taken now: a rule writing into a tracer in place rebinds it
        arg_vars = tuple(a.variable if isinstance(a, Tracer) else Lit.of(a) for a in args)
        rec.origin = Origin(OriginKind.PRIMAL, rule=prim.name)
        with unwrapping_numpy():
            result = rule(*args, **kwargs)
        if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
            raise TypeError(f"the rule of {prim.name} must return (y, pullback)")
        y, pullback = result
        n_fwd = len(rec.eqns)
        ys = tuple(y) if prim.multiple_results else (y,)
        cts = [rec.new_tracer(np.ones_like(_value(o))) for o in ys]
        ct_vars = tuple(c.variable for c in cts)
        rec.symbolic.update(ct_vars)    # stand-ins: a pullback may not look at their values
        rec.origin = Origin(OriginKind.PULLBACK, rule=prim.name)
        with unwrapping_numpy():
            raw = pullback(tuple(cts) if prim.multiple_results else cts[0])
        raw = raw if isinstance(raw, tuple) else (raw,)
        if len(raw) != len(args):
            raise TypeError(f"the pullback of {prim.name} returned {len(raw)} cotangents for "
                            f"{len(args)} operands")
        grads = []
        for arg, g, needed in zip(args, raw, needs_grad):
            if not needed:
                grads.append(None)
                continue
            g = unthunk(g)
            rec.origin = Origin(OriginKind.PROJECT, rule=prim.name)
            g = project(Aval.of(_value(arg)), g)
            rec.origin = Origin(OriginKind.PULLBACK, rule=prim.name)
            grads.append(None if isinstance(g, (NoTangent, ZeroTangent)) else g)
    return LiftedRule(
        prim, arg_vars, tuple(rec.eqns[:n_fwd]),
        tuple(_operand(o, rec) for o in ys), ct_vars, tuple(rec.eqns[n_fwd:]),
        tuple(None if g is None else _operand(g, rec) for g in grads))


def _value(x):
    return x.value if isinstance(x, Tracer) else x


def _operand(x, rec):
    if isinstance(x, Tracer):
        if x._rec is not rec:
            raise TraceError("the rule returned a value traced elsewhere")
        return x.variable
    return Lit.of(np.asarray(x) if not isinstance(x, (float, int, complex)) else x)


# -- the opaque fallback -------------------------------------------------------------------

def _opaque_rrule(*operands, prim, params):
    y, pullback = prim.rule(*operands, **dict(params))
    ys = tuple(y) if prim.multiple_results else (y,)
    return (*ys, pullback)


def _opaque_pullback(handle, *cts, prim, avals, needs):
    raw = handle(cts if prim.multiple_results else cts[0])
    raw = raw if isinstance(raw, tuple) else (raw,)
    out = []
    for aval, g, needed in zip(avals, raw, needs):
        if needed:
            g = project(aval, unthunk(g))
            out.append(np.zeros(aval.shape, aval.dtype) if isinstance(g, (NoTangent, ZeroTangent)) else g)
    return tuple(out)


opaque_rrule_p = Primitive("opaque_rrule", _opaque_rrule, params=("prim", "params"),
                           multiple_results=True, kind="opaque",
                           doc="Runs a rule that could not be lifted; yields its value and its "
                               "pullback closure (a handle).")
opaque_pullback_p = Primitive("opaque_pullback", _opaque_pullback, params=("prim", "avals", "needs"),
                              multiple_results=True, kind="opaque",
                              doc="Calls the pullback closure held in a handle.")


def _opaque(prim, params, avals, values, needs_grad, reason) -> LiftedRule:
    """The opaque pair for a rule that cannot be lifted. Its outputs' avals come from running
    the real rule once (it ran already while tracing, so this cannot fail differently)."""
    counter = iter(range(10**9))
    args = tuple(Var(next(counter), a) for a in avals)
    ys = _opaque_rrule(*values, prim=prim, params=params)[:-1]
    outs = tuple(Var(next(counter), Aval.of(y)) for y in ys)
    handle = Var(next(counter), HANDLE)
    fwd = (Eqn(opaque_rrule_p, args, freeze_params({"prim": prim, "params": params}),
               outs + (handle,), None, Origin(OriginKind.PRIMAL, rule=prim.name)),)
    cts = tuple(Var(next(counter), o.aval) for o in outs)
    needed = tuple(i for i, n in enumerate(needs_grad) if n)
    gvars = tuple(Var(next(counter), avals[i]) for i in needed)
    bwd = (Eqn(opaque_pullback_p, (handle,) + cts,
               freeze_params({"prim": prim, "avals": tuple(avals), "needs": tuple(needs_grad)}),
               gvars, None, Origin(OriginKind.PULLBACK, rule=prim.name)),) if needed else ()
    grads = [None] * len(avals)
    for i, g in zip(needed, gvars):
        grads[i] = g
    return LiftedRule(prim, args, fwd, outs, cts, bwd, tuple(grads), fallback=reason)
