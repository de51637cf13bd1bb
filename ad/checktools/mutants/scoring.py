"""Scoring the mutants: a mutant equal to the original numerically (at the sample and at fresh
draws, random cotangents) is equivalent; the others go through ``check_rule`` and are caught or
survive. ``run`` scores the registry's targets, over worker processes."""
from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass

import numpy as np

from ...checks.base import random_cotangent
from ...checks.rule import check_rule
from ...core_prims import project
from ...tape import Var
from .operators import mutants
from .report import MutationReport, Outcome
from .template import Mutant, Target, original, rule_operands, same, targets, template_rule

EQUIVALENCE_DRAWS = 3      # fresh operand draws (besides the sample's) that must agree


def _run_pullback(t: Target, m: Mutant, ops, cts):
    """The mutant's raw cotangents at ``ops`` and ``cts``, and the cotangents afterwards."""
    cts = [np.array(c, copy=True) for c in cts]
    with np.errstate(all="ignore"):
        _, pb = template_rule(t, m)(*ops, **t.params)
        raw = pb(tuple(cts) if t.prim.multiple_results else cts[0])
    return raw, cts


def _projected(t: Target, raw) -> list | None:
    """Cotangents projected as the builder does (None if one cannot be: a wrong shape)."""
    try:
        with np.errstate(all="ignore"):
            return [project(a.aval, g) for a, g in zip(t.lifted.args, raw)]
    except ValueError:
        return None


@dataclass
class Point:
    """Where mutants are compared: the call's inputs, the rule's operands, random cotangents."""
    inputs: list
    ops: list
    cts: list


def draws(t: Target, rng: np.random.Generator) -> list[Point]:
    """The sample's point, then fresh draws of the same avals (a draw the call turns into other
    avals is left out), each with random cotangents."""
    avals = [a.aval for a in t.lifted.args]
    inputs = [t.inputs] + ([t.draw() for _ in range(EQUIVALENCE_DRAWS)] if t.draw is not None else [])
    points = []
    for xs in inputs:
        _, ops = rule_operands(t.call, xs)
        if ops is not None and all(np.shape(v) == a.shape for v, a in zip(ops, avals)):
            cts = [random_cotangent(c.aval.shape, c.aval.dtype, rng) for c in t.lifted.cts]
            points.append(Point(xs, ops, cts))
    return points


def differs(t: Target, m: Mutant, point: Point, want) -> bool:
    """Do the mutant's projected cotangents (or the cotangents it leaves behind) differ from the
    original's (``want``: its projected cotangents and cotangents afterwards) at ``point``?"""
    raw, after = _run_pullback(t, m, point.ops, point.cts)
    got = _projected(t, raw)
    return got is None or not all(same(g, w) for g, w in zip(got, want[0])) \
        or not all(same(a, c) for a, c in zip(after, want[1]))


def equivalence(t: Target, m: Mutant, points, reference) -> str | None:
    """Why the mutant computes what the original does (None if it does not, at some point)."""
    if any(differs(t, m, p, want) for p, want in zip(points, reference)):
        return None
    where = ("at the kink point (a kink target has no other)" if t.kink else
             f"at the sample and {len(points) - 1} fresh draw(s), random cotangents")
    return _why(t, m) or f"equal cotangents {where}"


def _why(t: Target, m: Mutant) -> str | None:
    """A structural reason, where one is plain."""
    if m.writes is not None:
        return None
    if m.operator == "reduction" and m.site.endswith("project()'s"):
        return "the forgotten sum_to is project()'s, and the builder projects every cotangent again"
    used = {g for g in m.grads if type(g) is Var}
    for e in reversed(m.bwd):
        if any(v in used for v in e.outputs):
            used.update(x for x in e.inputs if type(x) is Var)
    new = [e for e in m.bwd if not any(e is o for o in t.lifted.bwd)]
    if new and m.grads == t.lifted.grads and not any(v in used for e in new for v in e.outputs):
        return "the mutated value reaches no cotangent"
    return None


# -- running ---------------------------------------------------------------------------------------

def score_target(t: Target, seed: int = 0, **options) -> tuple[list[Outcome], list | None]:
    """Every mutant of one target with its outcome; the second item lists the checks the
    unmutated template fails (None when it passes: only then are its mutants meaningful).
    A mutant equal to the original at the sample but not at a fresh draw is checked there too."""
    rng = np.random.default_rng(seed)
    base = check_rule(t.call, *t.inputs, rule=template_rule(t, original(t)), seed=seed, **options)
    if not base.ok:
        return [], [f.name for f in base.failures]
    points = draws(t, rng)
    reference = [_run_pullback(t, original(t), p.ops, p.cts) for p in points]
    reference = [(_projected(t, raw), after) for raw, after in reference]
    env: dict = {}
    t.lifted.evaluate(points[0].ops, points[0].cts, env)
    out = []
    for m in mutants(t, env):
        row = dict(primitive=t.prim.name, label=t.label, operator=m.operator, site=m.site)
        try:
            _run_pullback(t, m, points[0].ops, points[0].cts)
        except Exception as exc:
            out.append(Outcome(**row, status="stillborn", why=f"{type(exc).__name__}: {exc}"[:200]))
            continue
        why = equivalence(t, m, points, reference)
        if why is not None:
            out.append(Outcome(**row, status="equivalent", why=why))
            continue
        failed, where = (), ""
        for k, (p, want) in enumerate(zip(points, reference)):
            if k > 0 and not differs(t, m, p, want):
                continue
            report = check_rule(t.call, *p.inputs, rule=template_rule(t, m), seed=seed, **options)
            failed = tuple(f.name for f in report.failures)
            if failed:
                where = "" if k == 0 else f"caught at fresh draw {k} (at the sample it equals the original)"
                break
        if not failed and _one_subgradient(t):
            out.append(Outcome(**row, status="equivalent", why=SUBGRADIENT))
            continue
        out.append(Outcome(**row, status="caught" if failed else "survived", checks=failed, why=where))
    return out, None


SUBGRADIENT = ("another subgradient at a kink: the primitive is elementwise in its one differentiated operand, "
               "so the one-sided bracket it passes (fd.dot_product) is the whole subdifferential")


def _one_subgradient(t: Target) -> bool:
    """At a kink of an elementwise primitive differentiated in one operand, every value between
    the one-sided derivatives is a correct rule (relu's 0 or 1 at 0, |x|'s -1 to 1)."""
    return t.kink and t.prim.elementwise and sum(type(a) is Var and a.aval.is_float for a in t.lifted.args) == 1


def _score_one(args):
    """Every target of one primitive: its outcomes, the checks its unmutated templates fail
    (None if none), its CPU seconds."""
    name, seed, options = args
    start = time.process_time()
    found, _ = targets([name], seed=seed)
    rows, failing = [], []
    for t in found:
        more, base = score_target(t, seed=seed, **options)
        rows.extend(more)
        failing.extend(f"{t.label}: {c}" for c in base or ())
    return name, (rows, failing or None, time.process_time() - start)


def run(names=None, *, workers: int = 1, seed: int = 0, progress=None, **options) -> MutationReport:
    """Mutate and check every target (``names``: only these primitives), with ``workers``
    processes; ``progress(done, total, label)`` as the CLI's bar."""
    start = time.perf_counter()
    found, skipped = targets(names, seed=seed)
    todo = [(name, seed, options) for name in dict.fromkeys(t.prim.name for t in found)]
    outcomes, baseline, cpu = [], {}, {}
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.imap(_score_one, todo)
            results = _collect(results, todo, progress)
    else:
        results = _collect(map(_score_one, todo), todo, progress)
    for name, (rows, base, seconds) in results:
        outcomes.extend(rows)
        cpu[name] = seconds
        if base is not None:
            baseline[name] = base
    return MutationReport(outcomes, skipped, baseline, time.perf_counter() - start, cpu)


def _collect(results, todo, progress):
    done = []
    for k, r in enumerate(results):
        if progress is not None:
            progress(k, len(todo), r[0])
        done.append(r)
    if progress is not None:
        progress(len(todo), len(todo), "done")
    return done
