"""The prepared record of one program under ``ad.check``: everything its checks read.

``prepare`` traces the program and builds its gradient tape once (when that raises,
``program.build`` fails and nothing else runs). What only some checks need is computed on
first use and cached on the record: the observed closure-form run (``closure``), the observed
lifted run (``lifted_run``) and the per-equation rule reports behind the culprit search
(``equation_reports``). So the checks read what they need in any order, and each draws from a
generator of its own (``rng``).

Equations are named as in the gradient tape (``ad.grad_tape``), the tape the widget shows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from .. import pytree
from ..tracing import differentiated_inputs, trace
from ..gradtape import GradTape, partition, residuals
from ..reverse_mode.build import build
from ..reverse_mode.closure import eval_closure
from ..samples import declared_domains
from ..tangents import is_zero, unthunk
from ..tape import Eqn, Tape, Var, eval_tape, format_eqn
from .base import RuleCase, random_cotangent
from .captures import captured, changed, snapshot
from .report import CheckResult, RuleReport
from .rule import run_checks
from .settings import ORDER, Options


@dataclass
class ClosureRun:
    """One closure-form run at the record's seeds, observed through ``eval_closure``.

    operands: per differentiated equation (forward order), the values its rule was called
    with; cotangents: the output cotangents its pullback was called with; mutation: the first
    ``(equation, arrays, mutator, phase)`` whose pullback's arrays changed before it ran; nan:
    the first equation whose pullback made NaN/Inf from finite values."""
    grads: list | None = None
    error: Exception | None = None
    operands: dict = field(default_factory=dict)
    cotangents: dict = field(default_factory=dict)
    mutation: tuple | None = None
    nan: Eqn | None = None
    _pending: dict = field(default_factory=dict, repr=False)   # equation -> (arrays, checksums)

    def observe(self, kind, e, *data):
        if kind == "forward":
            vals, _, pullback = data
            if pullback is not None:
                held = {**captured(pullback), **{f"operand {i}": v for i, v in enumerate(vals)
                                                 if isinstance(v, np.ndarray)}}
                self.operands[e] = vals
                self._pending[e] = (held, snapshot(held))
        else:
            cts, raw = data[0], [unthunk(r) for r in data[1]]
            self.cotangents[e] = cts
            self._pending.pop(e, None)
            if self.nan is None and finite(self.operands[e]) and finite(cts) \
                    and not finite([r for r in raw if not is_zero(r)]):
                self.nan = e
        self._watch(e, "forward" if kind == "forward" else "pullback")

    def _watch(self, e, phase):
        if self.mutation is not None:
            return
        memo: dict = {}     # the pullbacks share most arrays (one's output is the next's operand)
        for victim, (held, before) in self._pending.items():
            moved = [] if victim is e and phase == "forward" else changed(held, before, memo)
            if moved:
                self.mutation = (victim, moved, e, phase)
                return


@dataclass(frozen=True)
class LiftedRun:
    """One run of the lifted backward at the record's seeds, observed equation by equation:
    the first equation making NaN/Inf from finite inputs, the first ``(residuals, equation)``
    that changed a residual."""
    grads: list
    nan: Eqn | None
    mutation: tuple | None


@dataclass(frozen=True, eq=False)
class ProgramRecord:
    """What ``ad.check`` knows of one program: the fields are built once by ``prepare``; the
    cached properties are computed the first time a check reads them."""
    f: Callable
    args: tuple
    opts: Options
    progress: Callable
    want_equations: bool
    primal: Tape
    wrt: list[int]
    values: list
    gt: GradTape
    fwd: Tape
    bwd: Tape
    joint: dict          # primal equation -> the equation that computes it in the gradient tape
    seeds: list          # one random output cotangent per output

    @property
    def source(self) -> str | None:
        return self.primal.eqns[0].source if self.primal.eqns else None

    @property
    def dtypes(self) -> list:
        """The gradient tape's input dtypes: what exact comparisons are judged at."""
        return [v.aval.dtype for v in self.gt.inputs]

    def name(self, e: Eqn) -> str:
        """A primal equation as printed in the gradient tape."""
        j = self.joint.get(e)
        return format_eqn(j if j is not None else e)

    def rng(self, check: str) -> np.random.Generator:
        """The generator of one check, so that no check's draws depend on which ran before."""
        return np.random.default_rng([self.opts.seed, ORDER[check]])

    def residual_values(self) -> list:
        """The lifted forward's residuals, computed afresh (a pullback may write into them)."""
        return eval_tape(self.fwd, _copies(self.values))[self.gt.n_values:]

    def lifted(self, seeds) -> list:
        """Gradients (one per differentiated input) from the lifted tape."""
        return eval_tape(self.bwd, self.residual_values() + _copies(seeds))

    def closure_grads(self, seeds, observe=None) -> list:
        """Gradients from the closure form (raises what the rules raise)."""
        return eval_closure(self.primal, _copies(self.values), self.wrt, _copies(seeds), observe)[1]

    @cached_property
    def closure(self) -> ClosureRun:
        run = ClosureRun()
        try:
            run.grads = self.closure_grads(self.seeds, run.observe)
        except Exception as exc:   # the checks that need the closure form report it
            run.error = exc
        return run

    @cached_property
    def lifted_run(self) -> LiftedRun:
        res = self.residual_values()
        held = {repr(v): x for v, x in zip(residuals(self.gt), res) if isinstance(x, np.ndarray)}
        before = snapshot(held)
        nan = mutation = None

        def apply(e, vals):
            nonlocal nan, mutation
            out = e.prim.impl(*vals, **dict(e.params))
            if nan is None and finite(vals) and not finite(out if e.prim.multiple_results else [out]):
                nan = e
            moved = [] if mutation is not None else changed(held, before)
            if moved:
                mutation = (moved, e)
            return out
        env = {}
        eval_tape(self.bwd, res + _copies(self.seeds), env, apply)
        return LiftedRun([env[x] if type(x) is Var else x.value for x in self.bwd.outputs], nan, mutation)

    @cached_property
    def equation_reports(self) -> list[RuleReport]:
        """Per differentiated equation, the rule checks at the operands and cotangents the
        closure run recorded; [] when not requested or when the closure form raised."""
        wanted = self.want_equations and self.opts.level("program.equations") != "off"
        if not wanted or self.closure.error is not None:
            return []
        todo = list(self.closure.operands.items())
        seeds = np.random.SeedSequence(self.opts.seed).spawn(len(todo))
        reports = []
        for k, ((e, vals), seed) in enumerate(zip(todo, seeds)):
            name = self.name(e)
            self.progress(k, len(todo), f"checking {name}")
            needs = tuple(type(x) is Var and x.aval.is_float for x in e.inputs)
            cts = self.closure.cotangents.get(e)
            case = RuleCase(e.prim, e.prim.rule, dict(e.params), list(vals), needs, name,
                            declared_domains(e.prim, len(e.inputs)), seed_cts=None if cts is None else list(cts),
                            traced=tuple(type(x) is Var for x in e.inputs))
            prior = [CheckResult(n, "pass", "recorded in the program", {}, name, e.source)
                     for n in ("registration.call", "registration.rule", "registration.fires")]
            results = run_checks(case, self.opts, np.random.default_rng(seed), prior)
            reports.append(RuleReport(f"equation {name}", self.opts.seed, self.opts.as_dict(), results,
                                      equation=name, source=e.source, primitive=e.prim.name))
        self.progress(len(todo), len(todo), "done")
        return reports

    @property
    def culprit(self) -> RuleReport | None:
        """The first failing equation in reverse order: the one the backward pass meets first."""
        failing = [r for r in self.equation_reports if not r.ok]
        return failing[-1] if failing else None


def prepare(f, args, argnums, opts: Options, progress=None, equations: bool = True) -> ProgramRecord:
    """Trace ``f`` at ``args`` and build its gradient tape (what ``program.build`` reports)."""
    primal = trace(f, *args)
    wrt = differentiated_inputs(primal, tuple(range(len(args))) if argnums is None else argnums, len(args))[0]
    values = [v if isinstance(v, np.generic) else np.asarray(v)
              for v in primal.in_tree.select_traced(pytree.flatten(tuple(args))[0])]
    gt = build(primal, values, wrt, seed="input")
    pmap, producers = gt.meta["primal_map"], gt.producers()
    joint = {}
    for e in primal.eqns:
        out = pmap.get(e.outputs[0])
        joint[e] = producers.get(out) if type(out) is Var else None
    fwd, bwd = partition(gt)
    rng = np.random.default_rng(opts.seed)
    seeds = [random_cotangent(v.aval.shape, v.aval.dtype, rng) for v in primal.outputs]
    return ProgramRecord(f, args, opts, progress or (lambda done, total, what: None), equations, primal,
                         wrt, values, gt, fwd, bwd, joint, seeds)


def finite(values) -> bool:
    """No NaN or Inf in any float value."""
    for v in values:
        a = np.asarray(v)
        if np.issubdtype(a.dtype, np.inexact) and not np.all(np.isfinite(a)):
            return False
    return True


def _copies(values) -> list:
    return [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in values]
