"""Mutation testing of the batching rules: how many wrong batching rules would ``batching.loop``
catch?

A batching rule is Python (``rule(args, dims, **params) -> (out, out_dims)``), not a tape, so
its mutants wrap it: the examples come out in reverse order, every example gets the first
one's output, the operands' batch axes are taken to be first without moving them (the bug of
a rule tested at in_axes 0 alone), the output's batch axis is reported one place off. Each is
checked like a candidate, ``check_rule(call, *operands, batch_rule=mutant)``, at the first
sample's largest shape set of every sampled primitive that has a batching rule (derived or its
own); ``ad-check --mutants --batching`` runs it.

A mutant is *equivalent* when it equals the original at the sample and at a fresh draw, on a
batch of 4 scaled copies, at every layout the check tries: no check could catch it there. The
score is caught / (caught + survived).

    >>> from ad.checktools.mutants import batching
    >>> report = batching.run(["matmul"])
    >>> report.score, len(report.survivors)
    (1.0, 0)
"""
from __future__ import annotations

import time

import numpy as np

from ...batching import rule_for
from ...checks import check_rule
from ...checks.batching import apply_batched, layouts, mismatch, stacked
from ...checks.library import cases, sampled
from ...checks.settings import GROUPS
from ...tape import Var, eval_tape
from ...tracing import trace
from .report import MutationReport, Outcome

# every check but the batching one off: the mutants change the batching rule alone
ONLY_BATCHING = {group: "off" for group in GROUPS if group not in ("batching", "registration")}


def _outputs(prim, result):
    out, dims = result
    return (list(out), list(dims)) if prim.multiple_results else ([out], [dims])


def _packed(prim, outs, dims):
    return (tuple(outs), tuple(dims)) if prim.multiple_results else (outs[0], dims[0])


def reversed_examples(prim, rule):
    """The examples' outputs in reverse order."""
    def mutant(args, dims, **params):
        outs, out_dims = _outputs(prim, rule(args, dims, **params))
        outs = [o if d is None else np.flip(o, axis=d) for o, d in zip(outs, out_dims)]
        return _packed(prim, outs, out_dims)
    return mutant


def first_example(prim, rule):
    """Every example gets the first example's output (the output said to be shared)."""
    def mutant(args, dims, **params):
        outs, out_dims = _outputs(prim, rule(args, dims, **params))
        outs = [o if d is None else np.take(o, 0, axis=d) for o, d in zip(outs, out_dims)]
        return _packed(prim, outs, [None] * len(outs))
    return mutant


def axes_assumed_first(prim, rule):
    """The operands' batch axes taken to be first, never moved there."""
    def mutant(args, dims, **params):
        return rule(args, tuple(None if d is None else 0 for d in dims), **params)
    return mutant


def out_axis_off(prim, rule):
    """The output's batch axis reported one place to the right (wrapping round)."""
    def mutant(args, dims, **params):
        outs, out_dims = _outputs(prim, rule(args, dims, **params))
        out_dims = [d if d is None else (d + 1) % max(np.ndim(o), 1) for o, d in zip(outs, out_dims)]
        return _packed(prim, outs, out_dims)
    return mutant


OPERATORS = {"reversed": reversed_examples, "first_example": first_example,
             "axes_assumed_first": axes_assumed_first, "out_axis_off": out_axis_off}


def targets(names=None, seed: int = 0) -> list[tuple]:
    """(primitive, label, call, operands at the sample, operands at a fresh draw) for every sampled
    primitive with a batching rule, at its first sample's largest shape set (first dtype), when
    the call records that one primitive."""
    rng = np.random.default_rng(seed)
    found = []
    for prim in sampled():
        if (names is not None and prim.name not in names) or prim.kind in ("random", "guard") \
                or rule_for(prim) is None:
            continue
        sample = prim.samples[0]
        largest = max(range(len(sample.shapes)), key=lambda k: _size(list(cases(prim, sample, rng))[k][2]))
        label, call, ops = list(cases(prim, sample, rng))[largest]
        with np.errstate(all="ignore"):
            tape = trace(call, *ops)
        if len(tape.eqns) != 1 or tape.eqns[0].prim is not prim:
            continue
        fresh = list(cases(prim, sample, rng))[largest][2]
        found.append((prim, label, call, ops, fresh))
    return found


def _size(ops) -> int:
    return sum(int(np.size(x)) for x in ops)


def _operands(call, ops):
    """The equation's operands as the rule gets them, which of them are traced, and its params."""
    with np.errstate(all="ignore"):
        tape = trace(call, *ops)
        env: dict = {}
        eval_tape(tape, tape.flatten_args(tuple(ops)), env)
    e = tape.eqns[0]
    values = [env[x] if type(x) is Var else x.value for x in e.inputs]
    return values, tuple(type(x) is Var for x in e.inputs), dict(e.params)


def equivalent(prim, rule, mutant, call, ops) -> bool:
    """Do the rule and the mutant agree on a batch of 4 of ``ops`` (scaled copies) at every
    layout of the check?"""
    values, traced, params = _operands(call, ops)
    exs = [[x * s if t and np.issubdtype(np.result_type(x), np.inexact) else x for x, t in zip(values, traced)]
           for s in (1.0, 0.9, 1.1, 1.2)]
    for axes in layouts(values, traced):
        try:
            with np.errstate(all="ignore"):
                want = apply_batched(prim, rule, stacked(exs, axes), axes, params)
        except Exception:       # operands that must agree (the original refuses them too)
            continue
        try:
            with np.errstate(all="ignore"):
                got = apply_batched(prim, mutant, stacked(exs, axes), axes, params)
        except Exception:
            return False
        if mismatch(got, [np.asarray(w) for w in want], 1e-12) is not None:
            return False
    return True


def run(names=None, *, seed: int = 0, progress=None) -> MutationReport:
    """Mutate the batching rule of every target (``names``: only these primitives) and check
    each mutant with ``batching.loop``; ``progress(done, total, label)`` as the CLI's bar."""
    start = time.perf_counter()
    found = targets(names, seed=seed)
    outcomes, baseline, cpu = [], {}, {}
    for k, (prim, label, call, ops, fresh) in enumerate(found):
        if progress is not None:
            progress(k, len(found), prim.name)
        began = time.process_time()
        rule = rule_for(prim)
        base = check_rule(call, *ops, severity=ONLY_BATCHING, seed=seed)
        if not base.ok:
            baseline[prim.name] = [f.name for f in base.failures]
            continue
        for operator, make in OPERATORS.items():
            mutant = make(prim, rule)
            row = dict(primitive=prim.name, label=label, operator=operator, site=f"{prim.name}'s batching rule")
            if equivalent(prim, rule, mutant, call, fresh) and equivalent(prim, rule, mutant, call, ops):
                outcomes.append(Outcome(**row, status="equivalent", why="equal to the original rule at every layout "
                                        "of a fresh draw (rank-1 outputs, a batch axis that is already first)"))
                continue
            report = check_rule(call, *ops, batch_rule=mutant, severity=ONLY_BATCHING, seed=seed)
            failed = tuple(f.name for f in report.failures)
            outcomes.append(Outcome(**row, status="caught" if failed else "survived", checks=failed))
        cpu[prim.name] = time.process_time() - began
    if progress is not None:
        progress(len(found), len(found), "done")
    return MutationReport(outcomes, {}, baseline, time.perf_counter() - start, cpu, operators=tuple(OPERATORS))
