"""The program checks of ``settings.PROGRAM_CHECKS``: each a function of the prepared
``ProgramRecord`` returning its ``Verdict``, reading only what the record offers (so they run
in any order): the end-to-end dot-product test and its forward-mode mirror (jvp against vjp),
the per-equation rule checks and their culprit,
closure versus lifted, zero, linearity and determinism of the whole backward, holomorphy against
the complex-linearity of the backward, a dtype-flow audit,
the first pullback making NaN/Inf from finite inputs, kinks, residual checksums, fallbacks.
"""
from __future__ import annotations

import numpy as np

from .. import pytree
from ..gradtape import residuals
from ..errors import NonDifferentiableError
from ..forward_mode.build import build_linearized
from ..origins import OriginKind
from ..tape import Var, eval_tape, format_eqn
from .base import Verdict, computes, combine, dense, float_bits, random_cotangent
from .captures import describe, raised_at
from .derivatives import dot_check
from .forms import compare_cotangents
from .forward import compare_jvp, refused
from .holomorphic import holomorphy
from .program_record import ProgramRecord
from .settings import exact_rtol, fd_rtol


@computes("program.build")
def _build(p: ProgramRecord) -> Verdict:
    return Verdict("pass", f"{len(p.primal.eqns)} equations, {len(p.gt.eqns)} in the gradient tape "
                   f"({len(p.wrt)} input(s) differentiated)")


def _as_function(p: ProgramRecord):
    """The program as ``fn(*flat inputs) -> list of outputs``, its lifted backward as
    ``pullback(vs) -> one gradient or None per input``, the inputs' domains and the tolerance."""
    in_tree, leaves = p.primal.in_tree, pytree.flatten(tuple(p.args))[0]

    def fn(*flat):
        it = iter(flat)
        new = [next(it) if traced else x for x, traced in zip(leaves, in_tree.traced)]
        out = p.f(*pytree.unflatten(in_tree.structure, new))
        return [np.asarray(y) for y in pytree.flatten(out)[0]]

    def pullback(vs):
        out = [None] * len(p.values)
        for i, g in zip(p.wrt, p.lifted(vs)):
            out[i] = g
        return out
    n = len(p.values)
    domains = None if p.opts.domains is None else (list(p.opts.domains) + [None] * n)[:n]
    return fn, pullback, domains, [v.aval.dtype for v in p.primal.inputs + tuple(x for x in p.primal.outputs
                                                                                  if type(x) is Var)]


@computes("program.dot_product")
def _dot_product(p: ProgramRecord) -> Verdict:
    if not p.wrt:
        return Verdict("skipped", "no float input to differentiate")
    fn, pullback, domains, dtypes = _as_function(p)
    return dot_check(fn, pullback, p.values, p.wrt, domains=domains, rng=p.rng("program.dot_product"),
                     directions=p.opts.directions, rtol=fd_rtol(dtypes))


@computes("program.jvp")
def _jvp(p: ProgramRecord) -> Verdict:
    if not p.wrt:
        return Verdict("skipped", "no float input to push a tangent through")
    fn, pullback, domains, dtypes = _as_function(p)
    try:
        lin = build_linearized(p.primal, p.values, p.wrt)
    except NonDifferentiableError as exc:
        return Verdict("warn", refused(exc), source=raised_at(exc))
    residuals = eval_tape(lin.forward, p.values)[lin.n_values:]

    def jvp(us):
        touts = eval_tape(lin.tangent, list(residuals) + list(us))
        return [None if s < 0 else touts[s] for s in lin.tangent_slots]
    v = compare_jvp(fn, jvp, pullback, p.values, p.wrt, domains=domains, rng=p.rng("program.jvp"),
                    directions=p.opts.directions, rtol=fd_rtol(dtypes), what="the tangent tape",
                    back="the gradient tape")
    if v.status == "fail":      # the equation to look at: the culprit, if the rule checks found one
        v.equation, v.source = (p.culprit.equation, p.culprit.source) if p.culprit else (None, p.source)
        if p.culprit:
            v.message += f"; culprit: {p.culprit.equation}"
    return v


@computes("program.holomorphic")
def _holomorphic(p: ProgramRecord) -> Verdict:
    fn, pullback, domains, dtypes = _as_function(p)
    v = holomorphy(fn, pullback, p.values, p.wrt, domains=domains, rng=p.rng("program.holomorphic"),
                   rtol=fd_rtol(dtypes), exact=exact_rtol(dtypes), asserted=p.opts.holomorphic, what="input")
    if v.status == "fail":      # the equation to look at: the culprit, if the rule checks found one
        v.equation, v.source = (p.culprit.equation, p.culprit.source) if p.culprit else (None, p.source)
        if p.culprit:
            v.message += f"; culprit: {p.culprit.equation}"
    return v


def _closure_raised(p: ProgramRecord) -> Verdict:
    return Verdict("fail", f"the closure form raised {describe(p.closure.error)}", source=raised_at(p.closure.error))


@computes("program.equations")
def _equations(p: ProgramRecord) -> Verdict:
    if not p.want_equations:
        return Verdict("skipped", "not requested (equations=False)")
    if p.closure.error is not None:
        return _closure_raised(p)
    failing = [r for r in p.equation_reports if not r.ok]
    if not failing:
        return Verdict("pass", f"{len(p.equation_reports)} differentiated equation(s) pass their rule checks "
                       "at their recorded values")
    c = p.culprit
    return Verdict("fail", f"{len(failing)} equation(s) fail their rule checks; culprit (first in reverse "
                   f"order): {c.equation} ({', '.join(x.name for x in c.failures)})",
                   {"failing": [r.equation for r in failing]}, c.equation, c.source)


def _worst(closure, lifted, p: ProgramRecord) -> float | None:
    """The largest relative difference of two gradient lists, or None when they agree."""
    found = compare_cotangents(closure, lifted, (True,) * len(p.wrt), p.dtypes)
    bad = [np.inf if c.max_rel is None else c.max_rel for c in found if not c.ok]
    return max(bad) if bad else None


@computes("program.closure_vs_lifted")
def _closure_vs_lifted(p: ProgramRecord) -> Verdict:
    if p.closure.error is not None:
        return _closure_raised(p)
    worst = _worst(p.closure.grads, p.lifted_run.grads, p)
    if worst is None:
        return Verdict("pass", "the closure form and the lifted tape agree")
    blame = f"; see {p.culprit.equation}" if p.culprit else ""
    return Verdict("fail", f"the closure form and the lifted tape differ (relative difference {worst:.3g})"
                   f"{blame}", {"max_relative_difference": worst})


@computes("program.zero")
def _zero(p: ProgramRecord) -> Verdict:
    zeros = [np.zeros(v.aval.shape, v.aval.dtype) for v in p.primal.outputs]
    bad = [i for i, g in zip(p.wrt, p.lifted(zeros)) if not np.all(np.asarray(g) == 0)]
    if bad:
        return Verdict("fail", f"a zero output cotangent gives nonzero gradients for inputs {bad}")
    return Verdict("pass", "zero in, exactly zero out")


@computes("program.linearity")
def _linearity(p: ProgramRecord) -> Verdict:
    rng = p.rng("program.linearity")
    u, v = p.seeds, [random_cotangent(x.aval.shape, x.aval.dtype, rng) for x in p.primal.outputs]
    a, b = 0.75, -1.5
    gu, gv, gw = p.lifted_run.grads, p.lifted(v), p.lifted(combine(a, u, b, v))
    worst = _worst(gw, [a * dense(x) + b * dense(y) for x, y in zip(gu, gv)], p)
    if worst is None:
        return Verdict("pass", "the backward is linear in its cotangent")
    return Verdict("fail", f"the backward is not linear (relative error {worst:.3g})")


def _same(a, b) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


@computes("program.determinism")
def _determinism(p: ProgramRecord) -> Verdict:
    forms, bad = [], []
    (forms if _same(p.lifted_run.grads, p.lifted(p.seeds)) else bad).append("lifted")
    if p.closure.error is None:
        (forms if _same(p.closure.grads, p.closure_grads(p.seeds)) else bad).append("closure")
    if bad:
        what = {"lifted": "the lifted tape", "closure": "the closure form"}
        return Verdict("fail", "running the backward twice gives different gradients in "
                       + " and ".join(what[b] for b in bad))
    return Verdict("pass", f"identical gradients on a second run ({', '.join(forms)})")


def _complex(values) -> bool:
    return any(np.issubdtype(x.aval.dtype, np.complexfloating) for x in values)


def _real(e, producers) -> bool:
    """Should ``e`` compute in real numbers only? When the equation it is, or the forward
    equation whose pullback it belongs to, has no complex operand or constant (nor output, for a
    forward equation) and a rule written for real numbers (no ``complex_rule``). A complex rule
    may compute in complex on real operands (irfftn's pullback; eig's complex output of a real
    matrix is its math), and a real operand of a complex equation may get a complex cotangent:
    the driver projects it, and projecting a real cotangent onto a complex operand makes it
    complex by design."""
    if e.origin.kind is OriginKind.PROJECT:
        return False
    fwd = producers.get(e.origin.of) if e.origin.kind is OriginKind.PULLBACK else None
    if fwd is None:
        return not e.prim.complex_rule and not _complex(e.inputs)
    return not fwd.prim.complex_rule and not _complex(fwd.inputs + fwd.outputs)


@computes("program.dtype_flow")
def _dtype_flow(p: ProgramRecord) -> Verdict:
    """Promotions: a float output more precise than every float variable feeding it (a float64
    constant, an upcast in a pullback: float32 to float64, complex64 to complex128), or complex
    from real: in the pullback of an equation that is all real, or in an equation none of whose
    inputs is complex. Explicit astype in the user's code is not silent."""
    found = []
    producers = p.gt.producers()
    for e in p.gt.eqns:
        if e.prim.name == "astype" and not e.origin.is_backward:
            continue
        ins = [x.aval.dtype for x in e.inputs if type(x) is Var and x.aval.is_float]
        if not ins:
            continue
        real = _real(e, producers)
        for v in e.outputs:
            d = v.aval.dtype
            if v.aval.is_float and (float_bits(d) > max(map(float_bits, ins))
                                    or (real and np.issubdtype(d, np.complexfloating))):
                found.append((e, v))
    if not found:
        return Verdict("pass", "no silent promotion")
    e, v = found[0]
    where = e.origin.describe() if e.origin.is_backward else "the program"
    status = "fail" if any(x.origin.is_backward for x, _ in found) else "warn"
    return Verdict(status, f"{len(found)} equation(s) promote silently; first: {format_eqn(e)} in {where} "
                   f"({', '.join(str(x.aval) for x in e.inputs)} -> {v.aval})",
                   {"equations": [format_eqn(x) for x, _ in found[:10]]}, format_eqn(e), e.source)


@computes("program.nan")
def _nan(p: ProgramRecord) -> Verdict:
    lifted, closure = p.lifted_run.nan, p.closure.nan
    messages, numbers = [], {}
    if lifted is not None:
        messages.append(f"lifted: {format_eqn(lifted)} ({lifted.origin.describe()}) produces NaN/Inf from "
                        "finite inputs")
        numbers["lifted"] = format_eqn(lifted)
    if closure is not None:
        messages.append(f"closure: the pullback of {p.name(closure)} produces NaN/Inf from finite inputs")
        numbers["closure"] = p.name(closure)
    if not messages:
        return Verdict("pass", "every pullback maps finite inputs to finite cotangents")
    if closure is not None:
        return Verdict("fail", "; ".join(messages), numbers, p.name(closure), closure.source)
    return Verdict("fail", "; ".join(messages), numbers, format_eqn(lifted), lifted.source)


@computes("program.kinks")
def _kinks(p: ProgramRecord) -> Verdict:
    found = []
    for e, vals in p.closure.operands.items():
        distance = e.prim.kink
        if distance is None:
            continue
        d = np.abs(np.asarray(distance(*vals, **dict(e.params)))).astype(np.float64)
        scale = max([1.0] + [float(np.max(np.abs(np.asarray(v)), initial=0.0))
                             for v in vals if np.issubdtype(np.asarray(v).dtype, np.number)])
        at, near = int(np.sum(d <= 1e-12 * scale)), int(np.sum(d <= 1e-3 * scale))
        if near:
            found.append({"equation": p.name(e), "source": e.source, "at": at, "near": near})
    if not found:
        return Verdict("pass", "no equation evaluated at or near a kink")
    return Verdict("warn", "; ".join(f"{k['equation']}: {k['at']} element(s) at a kink, {k['near']} within 1e-3"
                                     for k in found) + " (the gradient there is a subgradient choice)",
                   {"equations": found}, found[0]["equation"], found[0]["source"])


@computes("program.residuals")
def _residuals(p: ProgramRecord) -> Verdict:
    problems, numbers = [], {}
    if p.closure.mutation is not None:
        victim, moved, mutator, phase = p.closure.mutation
        problems.append(f"closure: {moved} of {p.name(victim)} changed before its pullback ran, "
                        f"after the {phase} of {p.name(mutator)}")
        numbers["closure"] = {"victim": p.name(victim), "arrays": moved, "mutator": p.name(mutator)}
    if p.lifted_run.mutation is not None:
        moved, e = p.lifted_run.mutation
        numbers["lifted"] = f"lifted: residual(s) {moved} changed by {format_eqn(e)} ({e.origin.describe()})"
        problems.append(numbers["lifted"])
    if not problems:
        return Verdict("pass", "no residual was mutated between the forward and backward passes "
                       f"({len(p.closure.operands)} closures, {len(residuals(p.gt))} lifted residuals)")
    victim = p.closure.mutation[0] if p.closure.mutation else None
    return Verdict("fail", "; ".join(problems) + ": the backward pass reads modified values", numbers,
                   p.name(victim) if victim else None, victim.source if victim else None)


@computes("program.fallbacks")
def _fallbacks(p: ProgramRecord) -> Verdict:
    if not p.gt.fallbacks:
        return Verdict("pass", "every rule is lifted")
    opaque = [format_eqn(e) for e in p.gt.eqns[:p.gt.n_forward] if e.prim.kind == "opaque"]
    return Verdict("warn", f"{len(p.gt.fallbacks)} rule(s) run as opaque closures: "
                   + "; ".join(map(str, p.gt.fallbacks)),
                   {"fallbacks": [str(x) for x in p.gt.fallbacks], "equations": opaque},
                   opaque[0] if opaque else None, p.gt.fallbacks[0].source)
