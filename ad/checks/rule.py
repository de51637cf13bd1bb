"""``check_rule``: every check of one rule at given operands, in the order of
``settings.RULE_CHECKS`` (cheap and exact first, finite differences last).

The call ``f(*args)`` is traced once; the one equation it records names the primitive, its
static params and its operands (the values the rule is called with). The checks themselves live
in ``interface``, ``algebra``, ``closure``, ``forward``, ``batching``, ``derivatives`` and ``holomorphic``; each
registers with ``@computes`` and adds exactly one result to the report.
"""
from __future__ import annotations

import numpy as np

from ..tracing import trace
from ..reverse_mode.build import build
from ..errors import NonDifferentiableError
from ..primitives import Primitive, lookup
from ..rules import using_rule
from ..samples import declared_domains
from ..tape import Var, eval_tape, format_eqn
from . import (algebra, batching, closure, derivatives, forward, holomorphic, interface)  # noqa: F401  (they register the checks)
from .base import CHECKS, Context, RuleCase
from .captures import describe, location, raised_at
from .report import CheckResult, RuleReport
from .settings import RULE_CHECKS, Options


def run_checks(case: RuleCase, opts: Options, rng: np.random.Generator, prior=()) -> list[CheckResult]:
    """Run every non-registration check on ``case``; ``prior`` are results already computed."""
    ctx = Context(case, opts, rng)
    ctx.results.extend(prior)
    with using_rule(case.prim, case.rule), np.errstate(all="ignore"):
        for name, _, _ in RULE_CHECKS:
            if name.startswith("registration."):
                continue
            if opts.level(name) == "off":
                ctx.add(name, "skipped", f"turned off (profile {opts.profile!r} / severity)")
            elif ctx.broken and name != "structure.pair":
                ctx.add(name, "skipped", ctx.broken)
            elif ctx.unprojectable and name not in ("cotangent.dtype", "cotangent.integer"):
                ctx.add(name, "skipped", ctx.unprojectable)
            else:
                try:
                    CHECKS[name](ctx)
                except NonDifferentiableError as exc:
                    _refused(ctx, name, exc)
                except Exception as exc:   # a rule that raises is a finding, never a crash
                    ctx.raised(name, "the rule or its pullback", exc)
    return ctx.results


def _refused(ctx, name, exc):
    """A pullback that accepted the cotangent a program recorded may refuse on purpose the
    random ones a check draws (phase-dependent losses of eigenvectors: NonDifferentiableError):
    the check cannot judge it there. Anywhere else a refusal is a failure."""
    if ctx.case.seed_cts is not None and ctx.status("structure.arity") == "pass":
        ctx.add(name, "skipped", f"the pullback refuses the random cotangents this check draws "
                f"({describe(exc)}), though it accepts the one the program recorded")
    else:
        ctx.raised(name, "the rule or its pullback", exc)


# -- check_rule: trace the call, find the rule ------------------------------------------------------

def check_rule(f, *args, rule=None, batch_rule=None, kwargs=None, raise_on_failure: bool = False,
               **options) -> RuleReport:
    """Check one rule at the operands of the call ``f(*args, **kwargs)``.

    ``f`` is a primitive, a numpy function, an ``@ad.primitive`` function or any callable that
    records exactly one equation; ``rule`` defaults to the registered rule (passing one checks
    it without registering it); ``batch_rule`` likewise for the batching rule (``batching.loop``).
    Options: see ``ad.checks.settings.Options`` (seed, profile, severity, directions,
    second_order, domains, strict_aliasing, holomorphic).

    >>> ad.check_rule(np.sin, np.linspace(0, 1, 4)).ok
    True
    """
    opts = Options.make(**options)
    rng = np.random.default_rng(opts.seed)
    kwargs = kwargs or {}
    results: list[CheckResult] = []
    case, title = _setup(f, args, kwargs, rule, batch_rule, opts, results)
    if case is None:
        for name, _, _ in RULE_CHECKS:
            if not any(r.name == name for r in results):
                results.append(CheckResult(name, "skipped", "registration failed: no rule to check"))
        report = RuleReport(title, opts.seed, opts.as_dict(), results, primitive=None)
    else:
        report = RuleReport(title, opts.seed, opts.as_dict(), run_checks(case, opts, rng, results),
                            equation=case.equation, source=location(case.rule), primitive=case.prim.name)
    return report.raise_on_failure() if raise_on_failure else report


def _target(f):
    if isinstance(f, Primitive):
        return f
    try:
        return lookup(f)
    except KeyError:
        return None


def _setup(f, args, kwargs, rule, batch_rule, opts, results):
    name = getattr(f, "__name__", None) or getattr(f, "name", None) or repr(f)
    title = f"check_rule {name}"

    def add(check_name, status, message, **kw):
        results.append(CheckResult(check_name, status, message, kw.pop("numbers", {}), **kw))

    call = (lambda *a: f.bind(*a, **kwargs)) if isinstance(f, Primitive) else (lambda *a: f(*a, **kwargs))
    try:
        with np.errstate(all="ignore"):
            tape = trace(call, *args)
    except Exception as exc:
        add("registration.call", "fail", f"calling it on these arguments raised {describe(exc)}",
            source=raised_at(exc))
        return None, title
    target = _target(f)
    recorded = [e.prim.name for e in tape.eqns]
    if len(tape.eqns) != 1 or (target is not None and tape.eqns[0].prim is not target):
        what = (f"{name} is the primitive {target.name}, but " if target is not None else
                f"{name} is not a primitive: ")
        fix = ("mark it with @ad.primitive and register its rule with @ad.rrule, or check one "
               "of those primitives" if target is None else "call the primitive itself")
        add("registration.call", "fail",
            f"{what}the call records {len(tape.eqns)} equations {recorded}, so a rule of its own "
            f"never fires (what fires are the rules of those primitives). Fix: {fix}.",
            numbers={"recorded": recorded}, equation="; ".join(map(format_eqn, tape.eqns)) or None,
            source=location(f))
        return None, title
    eqn = tape.eqns[0]
    prim = eqn.prim
    equation = format_eqn(eqn)
    title = f"check_rule {prim.name}"
    add("registration.call", "pass", f"the call records one {prim.name} equation", equation=equation,
        source=eqn.source)
    chosen = rule if rule is not None else prim.rule
    if chosen is None:
        add("registration.rule", "fail",
            f"no rule is registered for {prim.name}. Fix: register one with @ad.rrule({prim.name}) "
            "returning (y, pullback), or pass rule= to check a candidate", equation=equation)
        return None, title
    note = ("the registered rule" if rule is None or rule is prim.rule else
            f"checked without registering it (programs use {getattr(prim.rule, '__qualname__', prim.rule)})")
    add("registration.rule", "pass", f"{getattr(chosen, '__qualname__', chosen)}: {note}",
        equation=equation, source=location(chosen))

    env: dict = {}
    with np.errstate(all="ignore"):
        eval_tape(tape, tape.flatten_args(args), env)
    # traced values as arrays, as ad.grad_tape passes them (Python scalars stay weak only as literals)
    operands = [(env[x] if isinstance(env[x], np.generic) else np.asarray(env[x])) if type(x) is Var
                else x.value for x in eqn.inputs]
    diff = tuple(type(x) is Var and x.aval.is_float for x in eqn.inputs)
    domains = _domains(opts, tape, eqn, prim)
    case = RuleCase(prim, chosen, dict(eqn.params), operands, diff, equation, domains,
                    traced=tuple(type(x) is Var for x in eqn.inputs), batch_rule=batch_rule)
    _fires(case, tape, env, rule, add)
    return case, title


def _domains(opts, tape, eqn, prim) -> list:
    """Per operand: the domain given for the argument it is (an input of the call), else the
    domain the primitive's samples declare."""
    if opts.domains is None:
        return declared_domains(prim, len(eqn.inputs))
    by_input = dict(zip(tape.inputs, opts.domains))
    return [by_input.get(x) if type(x) is Var else None for x in eqn.inputs]


def _fires(case, tape, env, rule, add):
    """Differentiate the call with a spy in place of the rule: did the rule fire?"""
    name, prim, equation = "registration.fires", case.prim, case.equation
    if not any(case.diff):
        add(name, "skipped", "no traced float operand, so no gradient is asked of the rule", equation=equation)
        return
    if not prim.differentiable:
        if rule is None or rule is prim.rule:
            add(name, "pass", f"{prim.name} is declared non-differentiable: its outputs carry no "
                "gradient and the builder never calls its rule", equation=equation)
        else:
            add(name, "fail", f"{prim.name} is declared non-differentiable (ad.non_differentiable), "
                "so this rule never fires", equation=equation)
        return
    calls = []

    def spy(*a, **k):
        calls.append(1)
        return case.rule(*a, **k)
    values = [env[v] for v in tape.inputs]
    wrt = [i for i, v in enumerate(tape.inputs) if v.aval.is_float]
    try:
        with using_rule(prim, spy), np.errstate(all="ignore"):
            build(tape, values, wrt, seed="input")
    except Exception as exc:
        add(name, "fail", f"differentiating the call raised {describe(exc)}", equation=equation,
            source=raised_at(exc, prefer=case.rule))
        return
    if calls:
        add(name, "pass", "differentiating the call fires the rule", equation=equation)
    else:
        add(name, "fail", "differentiating the call never called the rule", equation=equation)
