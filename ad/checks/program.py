"""``check``: a whole traced program. End-to-end dot-product test; every equation re-checked with
the rule checks at the values it actually saw (the culprit is the first failing one in reverse
order, where the backward pass meets it first); closure versus lifted; linearity, zero and
determinism of the whole backward; a dtype-flow audit; the first pullback producing NaN/Inf
from finite inputs; kinks; residual checksums; opaque fallbacks.

Equations are named as in the gradient tape (``ad.grad_tape``), the tape the widget shows.
"""
from __future__ import annotations

import numpy as np

from .. import pytree
from ..api import _wrt, trace
from ..backward import build, partition, residuals
from ..interpret import eval_closure, eval_tape
from ..tangents import unthunk
from ..tape import Var, format_eqn
from .captures import captured, changed, checksum, describe, raised_at, snapshot
from .derivatives import dot_check
from .report import CheckResult, ProgramReport, RuleReport
from .rule import RuleCase, is_zero, run_checks
from .samples import KINKS, declared_domains
from .settings import PROGRAM_CHECKS, Options, exact_rtol, fd_rtol


def check(f, *args, argnums=None, equations: bool = True, raise_on_failure: bool = False,
          progress=None, **options) -> ProgramReport:
    """Check the gradient of ``f`` at ``args`` (all float inputs, or those of ``argnums``).

    ``equations=False`` skips the per-equation rule checks (and the culprit search).
    ``progress(done, total, what)`` is called as the equations are checked (a progress bar).
    Options: see ``ad.checks.settings.Options``.

    >>> ad.check(lambda x: np.sum(np.sin(x) * x), np.linspace(0, 1, 4)).ok
    True
    """
    opts = Options.make(**options)
    run = _Run(f, args, argnums, opts, progress)
    with np.errstate(all="ignore"):
        run.all(equations)
    report = ProgramReport(f"check {getattr(f, '__name__', 'program')}", opts.seed, opts.as_dict(),
                           run.results, equation=None, source=run.source, equations=run.reports,
                           culprit=run.culprit)
    return report.raise_on_failure() if raise_on_failure else report


class _Run:
    def __init__(self, f, args, argnums, opts, progress=None):
        self.f, self.args, self.opts = f, args, opts
        self.progress = progress or (lambda done, total, what: None)
        self.rng = np.random.default_rng(opts.seed)
        self.results: list[CheckResult] = []
        self.reports: list[RuleReport] = []
        self.culprit = None
        self.source = None
        self.argnums = tuple(range(len(args))) if argnums is None else argnums

    def add(self, name, status, message, numbers=None, equation=None, source=None):
        if status == "fail" and self.opts.level(name) == "warn":
            status = "warn"
        self.results.append(CheckResult(name, status, message, numbers or {}, equation, source))

    def enabled(self, name) -> bool:
        if self.opts.level(name) == "off":
            self.add(name, "skipped", f"turned off (profile {self.opts.profile!r} / severity)")
            return False
        return True

    # -- setting up ------------------------------------------------------------------------------
    def all(self, equations):
        try:
            self.primal = trace(self.f, *self.args)
            self.wrt = _wrt(self.primal, self.argnums, len(self.args))[0]
            self.values = self.primal.in_tree.select_traced(pytree.flatten(tuple(self.args))[0])
            self.values = [np.asarray(v) if not isinstance(v, np.generic) else v for v in self.values]
            self.gt = build(self.primal, self.values, self.wrt, seed="input")
        except Exception as exc:
            self.add("program.build", "fail", f"tracing or building the gradient tape raised {describe(exc)}",
                     source=raised_at(exc))
            for name, _, _ in PROGRAM_CHECKS[1:]:
                self.add(name, "skipped", "the gradient tape could not be built")
            return
        self.source = self.primal.eqns[0].source if self.primal.eqns else None
        self.add("program.build", "pass", f"{len(self.primal.eqns)} equations, {len(self.gt.eqns)} in the "
                 f"gradient tape ({len(self.wrt)} input(s) differentiated)")
        self.joint = {}
        pmap, producers = self.gt.meta["primal_map"], self.gt.producers()
        for e in self.primal.eqns:
            out = pmap.get(e.outputs[0])
            self.joint[e] = producers.get(out) if type(out) is Var else None
        self.fwd, self.bwd = partition(self.gt)
        self.seeds = [self._cotangent(v.aval) for v in self.primal.outputs]
        self._closure_run()
        for step in (self._dot_product, lambda: self._equations(equations), self._closure_vs_lifted,
                     self._zero_and_linearity, self._determinism, self._dtype_flow, self._nan,
                     self._kinks, self._residuals, self._fallbacks):
            step()

    def name(self, e) -> str:
        """A primal equation as printed in the gradient tape."""
        j = self.joint.get(e)
        return format_eqn(j) if j is not None else format_eqn(e)

    def _cotangent(self, aval):
        return (self.rng.standard_normal(aval.shape).astype(aval.dtype) if aval.is_float
                else np.zeros(aval.shape, aval.dtype))

    # -- the two backward forms --------------------------------------------------------------------
    def lifted(self, seeds) -> list:
        """Gradients (one per differentiated input) from the lifted tape."""
        res = eval_tape(self.fwd, self.values)[self.gt.n_values:]
        return eval_tape(self.bwd, list(res) + [np.array(s, copy=True) for s in seeds])

    def closure(self, seeds, observe=None) -> list:
        return eval_closure(self.primal, self.values, self.wrt, [np.array(s, copy=True) for s in seeds],
                            observe)[1]

    def _closure_run(self):
        """One instrumented closure-form run: per equation its operands, pullback, output
        cotangents and raw cotangents; residual checksums; the first NaN from finite inputs."""
        self.records, self.order = {}, []
        self.mutation, self.closure_nan, self.closure_error = None, None, None
        self.pending: dict = {}

        def observe(kind, e, *data):
            if kind == "forward":
                vals, y, pb = data
                self.order.append(e)
                if pb is not None:
                    held = {**captured(pb), **{f"operand {i}": v for i, v in enumerate(vals)
                                               if isinstance(v, np.ndarray)}}
                    self.records[e] = {"vals": vals, "pb": pb, "cts": None}
                    self.pending[e] = (held, snapshot(held))
                self._watch(e, "forward")
            else:
                cts, raw = data[0], [unthunk(r) for r in data[1]]
                self.records[e]["cts"] = cts
                self.pending.pop(e, None)
                self._watch(e, "pullback")
                if self.closure_nan is None and _finite(self.records[e]["vals"]) and _finite(cts) \
                        and not _finite([r for r in raw if not is_zero(r)]):
                    self.closure_nan = e
        try:
            self.closure_grads = self.closure(self.seeds, observe)
        except Exception as exc:
            self.closure_error = exc
            self.closure_grads = None

    def _watch(self, e, phase):
        if self.mutation is not None:
            return
        for victim, (held, before) in self.pending.items():
            if victim is e and phase == "forward":
                continue
            moved = changed(held, before)
            if moved:
                self.mutation = (victim, moved, e, phase)
                return

    # -- the checks --------------------------------------------------------------------------------
    def _dot_product(self):
        if not self.enabled("program.dot_product"):
            return
        if not self.wrt:
            self.add("program.dot_product", "skipped", "no float input to differentiate")
            return
        in_tree, leaves = self.primal.in_tree, pytree.flatten(tuple(self.args))[0]

        def fn(*flat):
            it, new = iter(flat), []
            for x, traced in zip(leaves, in_tree.traced):
                new.append(next(it) if traced else x)
            out = self.f(*pytree.unflatten(in_tree.structure, new))
            return [np.asarray(y) for y in pytree.flatten(out)[0]]

        def pullback(vs):
            grads = self.lifted(vs)
            out = [None] * len(self.values)
            for i, g in zip(self.wrt, grads):
                out[i] = g
            return out
        domains = None if self.opts.domains is None else (list(self.opts.domains) + [None] * len(self.values))[:len(self.values)]
        rtol = fd_rtol([v.aval.dtype for v in self.primal.inputs + tuple(
            x for x in self.primal.outputs if type(x) is Var)])
        v = dot_check(fn, pullback, self.values, self.wrt, domains=domains, rng=self.rng,
                      directions=self.opts.directions, rtol=rtol)
        self.add("program.dot_product", v.status, v.message, v.numbers)

    def _equations(self, wanted):
        if not wanted or not self.enabled("program.equations"):
            if not wanted:
                self.add("program.equations", "skipped", "not requested (equations=False)")
            return
        if self.closure_error is not None:
            self.add("program.equations", "fail", f"the closure form raised {describe(self.closure_error)}",
                     source=raised_at(self.closure_error))
            return
        seeds = np.random.SeedSequence(self.opts.seed).spawn(len(self.records))
        for k, ((e, rec), seed) in enumerate(zip(self.records.items(), seeds)):
            self.progress(k, len(self.records), f"checking {self.name(e)}")
            needs = tuple(type(x) is Var and x.aval.is_float for x in e.inputs)
            case = RuleCase(e.prim, e.prim.rule, dict(e.params), list(rec["vals"]), needs, self.name(e),
                            declared_domains(e.prim, len(e.inputs)),
                            seed_cts=None if rec["cts"] is None else list(rec["cts"]))
            prior = [CheckResult(n, "pass", "recorded in the program", {}, case.equation, e.source)
                     for n in ("registration.call", "registration.rule", "registration.fires")]
            results = run_checks(case, self.opts, np.random.default_rng(seed), prior)
            self.reports.append(RuleReport(f"equation {case.equation}", self.opts.seed, self.opts.as_dict(),
                                           results, equation=case.equation, source=e.source,
                                           primitive=e.prim.name))
        self.progress(len(self.records), len(self.records), "done")
        failing = [r for r in self.reports if not r.ok]
        if failing:
            self.culprit = failing[-1]    # the first the backward pass meets
            self.add("program.equations", "fail", f"{len(failing)} equation(s) fail their rule checks; "
                     f"culprit (first in reverse order): {self.culprit.equation} "
                     f"({', '.join(c.name for c in self.culprit.failures)})",
                     {"failing": [r.equation for r in failing]}, self.culprit.equation, self.culprit.source)
        else:
            self.add("program.equations", "pass", f"{len(self.reports)} differentiated equation(s) pass "
                     "their rule checks at their recorded values")

    def _compare(self, a, b, dtypes) -> float | None:
        """The largest relative difference between two gradient lists, or None if they agree."""
        tol = exact_rtol(dtypes)
        worst = 0.0
        for x, y in zip(a, b):
            x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
            with np.errstate(all="ignore"):
                err = np.abs(x - y) / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1.0)
            err = np.where(np.isnan(x) & np.isnan(y), 0.0, err)
            worst = max(worst, float(np.max(np.nan_to_num(err, nan=np.inf), initial=0.0)))
        return worst if worst > tol else None

    def _dtypes(self):
        return [v.aval.dtype for v in self.gt.inputs]

    def _closure_vs_lifted(self):
        if self.closure_error is not None:
            self.add("program.closure_vs_lifted", "fail", f"the closure form raised {describe(self.closure_error)}",
                     source=raised_at(self.closure_error))
            return
        lifted = self.lifted(self.seeds)
        worst = self._compare(self.closure_grads, lifted, self._dtypes())
        if worst is None:
            self.add("program.closure_vs_lifted", "pass", "the closure form and the lifted tape agree")
        else:
            blame = f"; see {self.culprit.equation}" if self.culprit else ""
            self.add("program.closure_vs_lifted", "fail", f"the closure form and the lifted tape differ "
                     f"(relative difference {worst:.3g}){blame}", {"max_relative_difference": worst})

    def _zero_and_linearity(self):
        if self.enabled("program.zero"):
            zeros = [np.zeros(v.aval.shape, v.aval.dtype) for v in self.primal.outputs]
            bad = [i for i, g in zip(self.wrt, self.lifted(zeros)) if not np.all(np.asarray(g) == 0)]
            if bad:
                self.add("program.zero", "fail", f"a zero output cotangent gives nonzero gradients for inputs {bad}")
            else:
                self.add("program.zero", "pass", "zero in, exactly zero out")
        if self.enabled("program.linearity"):
            u, v = self.seeds, [self._cotangent(x.aval) for x in self.primal.outputs]
            a, b = 0.75, -1.5
            w = [(a * x + b * y).astype(x.dtype) if np.issubdtype(x.dtype, np.inexact) else x for x, y in zip(u, v)]
            gu, gv, gw = self.lifted(u), self.lifted(v), self.lifted(w)
            worst = self._compare(gw, [a * np.asarray(x, np.float64) + b * np.asarray(y, np.float64)
                                       for x, y in zip(gu, gv)], self._dtypes())
            if worst is None:
                self.add("program.linearity", "pass", "the backward is linear in its cotangent")
            else:
                self.add("program.linearity", "fail", f"the backward is not linear (relative error {worst:.3g})")

    def _determinism(self):
        if not self.enabled("program.determinism"):
            return
        same = all(np.array_equal(x, y, equal_nan=True) for x, y in zip(self.lifted(self.seeds), self.lifted(self.seeds)))
        forms = ["lifted"] if same else []
        bad = [] if same else ["the lifted tape"]
        if self.closure_error is None:
            again = self.closure(self.seeds)
            if all(np.array_equal(x, y, equal_nan=True) for x, y in zip(self.closure_grads, again)):
                forms.append("closure")
            else:
                bad.append("the closure form")
        if bad:
            self.add("program.determinism", "fail", f"running the backward twice gives different gradients in "
                     f"{' and '.join(bad)}")
        else:
            self.add("program.determinism", "pass", f"identical gradients on a second run ({', '.join(forms)})")

    def _dtype_flow(self):
        """Promotions: a float output more precise than every float variable feeding it (a
        float64 constant, an upcast in a pullback), or complex from real. Explicit astype in the
        user's code is not silent."""
        if not self.enabled("program.dtype_flow"):
            return
        found = []
        for e in self.gt.eqns:
            if e.prim.name == "astype" and not e.origin.is_backward:
                continue
            ins = [x.aval.dtype for x in e.inputs if type(x) is Var and x.aval.is_float]
            if not ins:
                continue
            real = not any(np.issubdtype(d, np.complexfloating) for d in ins)
            for v in e.outputs:
                d = v.aval.dtype
                if v.aval.is_float and (_bits(d) > max(map(_bits, ins)) or (real and np.issubdtype(d, np.complexfloating))):
                    found.append((e, v))
        if not found:
            self.add("program.dtype_flow", "pass", "no silent promotion")
            return
        e, v = found[0]
        where = e.origin.describe() if e.origin.is_backward else "the program"
        status = "fail" if any(x.origin.is_backward for x, _ in found) else "warn"
        self.add("program.dtype_flow", status, f"{len(found)} equation(s) promote silently; first: "
                 f"{format_eqn(e)} in {where} ({', '.join(str(x.aval) for x in e.inputs)} -> {v.aval})",
                 {"equations": [format_eqn(x) for x, _ in found[:10]]}, format_eqn(e), e.source)

    def _nan(self):
        if not self.enabled("program.nan"):
            return
        res = eval_tape(self.fwd, self.values)[self.gt.n_values:]
        first = None
        benv = dict(zip(self.bwd.inputs, list(res) + list(self.seeds)))
        for e in self.bwd.eqns:
            ins = [benv[x] if type(x) is Var else x.value for x in e.inputs]
            with np.errstate(all="ignore"):
                out = e.prim.impl(*ins, **dict(e.params))
            outs = out if e.prim.multiple_results else (out,)
            benv.update(zip(e.outputs, outs))
            if first is None and _finite(ins) and not _finite(list(outs)):
                first = e
        messages, numbers = [], {}
        if first is not None:
            messages.append(f"lifted: {format_eqn(first)} ({first.origin.describe()}) produces NaN/Inf from "
                            "finite inputs")
            numbers["lifted"] = format_eqn(first)
        if self.closure_nan is not None:
            e = self.closure_nan
            messages.append(f"closure: the pullback of {self.name(e)} produces NaN/Inf from finite inputs")
            numbers["closure"] = self.name(e)
        if messages:
            eqn = self.name(self.closure_nan) if self.closure_nan is not None else format_eqn(first)
            src = self.closure_nan.source if self.closure_nan is not None else first.source
            self.add("program.nan", "fail", "; ".join(messages), numbers, eqn, src)
        else:
            self.add("program.nan", "pass", "every pullback maps finite inputs to finite cotangents")

    def _kinks(self):
        if not self.enabled("program.kinks"):
            return
        found = []
        for e in self.order:
            rec = self.records.get(e)
            if rec is None or e.prim.name not in KINKS:
                continue
            vals = rec["vals"]
            with np.errstate(all="ignore"):
                d = np.abs(np.asarray(KINKS[e.prim.name](*vals, **dict(e.params)), dtype=np.float64))
            scale = max([1.0] + [float(np.max(np.abs(np.asarray(v, np.float64)), initial=0.0))
                                 for v in vals if np.issubdtype(np.asarray(v).dtype, np.number)])
            at, near = int(np.sum(d <= 1e-12 * scale)), int(np.sum(d <= 1e-3 * scale))
            if near:
                found.append({"equation": self.name(e), "source": e.source, "at": at, "near": near})
        if found:
            self.add("program.kinks", "warn", "; ".join(f"{k['equation']}: {k['at']} element(s) at a kink, "
                     f"{k['near']} within 1e-3" for k in found) + " (the gradient there is a subgradient choice)",
                     {"equations": found}, found[0]["equation"], found[0]["source"])
        else:
            self.add("program.kinks", "pass", "no equation evaluated at or near a kink")

    def _residuals(self):
        if not self.enabled("program.residuals"):
            return
        problems, numbers = [], {}
        if self.mutation is not None:
            victim, moved, mutator, phase = self.mutation
            problems.append(f"closure: {moved} of {self.name(victim)} changed before its pullback ran, "
                            f"after the {phase} of {self.name(mutator)}")
            numbers["closure"] = {"victim": self.name(victim), "arrays": moved, "mutator": self.name(mutator)}
        lifted = self._lifted_residuals()
        if lifted:
            problems.append(lifted)
            numbers["lifted"] = lifted
        if problems:
            victim = self.mutation[0] if self.mutation else None
            self.add("program.residuals", "fail", "; ".join(problems) + ": the backward pass reads modified "
                     "values", numbers, self.name(victim) if victim else None, victim.source if victim else None)
        else:
            self.add("program.residuals", "pass", "no residual was mutated between the forward and backward "
                     f"passes ({len(self.records)} closures, {len(residuals(self.gt))} lifted residuals)")

    def _lifted_residuals(self) -> str | None:
        out = eval_tape(self.fwd, self.values)
        res = out[self.gt.n_values:]
        held = {repr(v): x for v, x in zip(residuals(self.gt), res) if isinstance(x, np.ndarray)}
        before = {k: checksum(x) for k, x in held.items()}
        env = dict(zip(self.bwd.inputs, list(res) + list(self.seeds)))
        for e in self.bwd.eqns:
            with np.errstate(all="ignore"):
                out = e.prim.impl(*[env[x] if type(x) is Var else x.value for x in e.inputs], **dict(e.params))
            env.update(zip(e.outputs, out if e.prim.multiple_results else (out,)))
            moved = changed(held, before)
            if moved:
                return f"lifted: residual(s) {moved} changed by {format_eqn(e)} ({e.origin.describe()})"
        return None

    def _fallbacks(self):
        if not self.enabled("program.fallbacks"):
            return
        if self.gt.fallbacks:
            opaque = [format_eqn(e) for e in self.gt.eqns[:self.gt.n_forward] if e.prim.kind == "opaque"]
            self.add("program.fallbacks", "warn", f"{len(self.gt.fallbacks)} rule(s) run as opaque closures: "
                     + "; ".join(map(str, self.gt.fallbacks)), {"fallbacks": [str(x) for x in self.gt.fallbacks],
                                                                "equations": opaque},
                     opaque[0] if opaque else None, self.gt.fallbacks[0].source)
        else:
            self.add("program.fallbacks", "pass", "every rule is lifted")


def _finite(values) -> bool:
    for v in values:
        a = np.asarray(v)
        if np.issubdtype(a.dtype, np.inexact) and not np.all(np.isfinite(a)):
            return False
    return True


def _bits(dtype) -> int:
    return np.finfo(dtype).bits if np.issubdtype(dtype, np.inexact) else 0

