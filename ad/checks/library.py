"""Check the whole rule library: every primitive of ``ad.lib`` at the sample inputs of
``samples.SAMPLES`` (several shapes, float64 and float32, and explicit kink points)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .report import RuleReport
from .rule import check_rule
from .samples import SAMPLES, cases


def uncovered() -> list[str]:
    """Library primitives without a sample line (they cannot be checked)."""
    from ..lib import PRIMITIVES
    return sorted(PRIMITIVES - {s.prim for s in SAMPLES})


def library_cases(names=None, *, seed: int = 0) -> list[tuple[str, Callable, list]]:
    """Every (label, call, inputs) of the library check, drawn from one seeded generator."""
    rng = np.random.default_rng(seed)
    return [c for s in SAMPLES if names is None or s.prim in names for c in cases(s, rng)]


def check_library(names=None, *, progress: Callable | None = None, seed: int = 0, **options) -> list[RuleReport]:
    """One RuleReport per case; ``progress(done, total, label)`` is called before each case."""
    todo = library_cases(names, seed=seed)
    reports = []
    for done, (label, call, inputs) in enumerate(todo):
        if progress is not None:
            progress(done, len(todo), label)
        report = check_rule(call, *inputs, seed=seed, **options)
        report.title = f"check_rule {label}"
        reports.append(report)
    if progress is not None:
        progress(len(todo), len(todo), "done")
    return reports
