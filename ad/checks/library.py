"""Check the whole rule library: every registered primitive that declares samples (``ad.lib``,
``ad.nn`` once imported, anything else loaded) at its ``prim.samples``: several shapes, float64
and float32, and explicit kink points; a primitive declaring ``complex_rule`` also at complex128
(every shape set), complex64 and mixed operands (the first float operand complex, the others
real; at the last shape set). A sample whose call is a composition (eigenvectors made
phase-free, so that a gradient exists) is checked as a program: end to end, and every equation
at the cotangents the program gives it. The registry is read at call time, so primitives
registered after ``ad.lib`` (``ad.nn``'s) are checked too; the opaque fallback pair and users'
own primitives declare no samples."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..tracing import trace
from ..primitives import REGISTRY, Primitive
from ..samples import C64, C128, F64, Sample, caller, draw, operands, traced
from .program import check
from .report import ProgramReport, RuleReport
from .rule import check_rule


def sampled() -> list[Primitive]:
    """The registered primitives that declare samples, in registration order."""
    return [p for p in REGISTRY.values() if p.samples]


def cases(prim: Primitive, sample: Sample, rng: np.random.Generator):
    """(label, call, operands) for every shape set, dtype and kink point of one sample."""
    call = caller(prim, sample)
    params = "".join(f" {k}={v}" for k, v in sample.params.items() if k != "index")
    for n, shape_set in enumerate(sample.shapes):
        last = n == len(sample.shapes) - 1
        for dtype in sample.dtypes[:1] + (sample.dtypes[1:] if last else ()):
            yield f"{prim.name}{params} {shape_set} {dtype.name}", call, operands(sample, rng, shape_set, dtype)
    for k, point in enumerate(sample.kinks):
        yield f"{prim.name}{params} kink {k}", call, [np.array(p) if np.ndim(p) else p for p in point]
    floats = [k for k, i in enumerate(traced(sample.inputs)) if i.kind == "float" and i.value is None]
    if not (prim.complex_rule and floats):
        return
    last = sample.shapes[-1]
    complex_cases = [(f"{shape_set} complex128", operands(sample, rng, shape_set, C128)) for shape_set in sample.shapes]
    complex_cases.append((f"{last} complex64", operands(sample, rng, last, C64)))
    if len(floats) > 1:
        complex_cases.append((f"{last} mixed", _mixed(sample, rng, last, floats[0])))
    for label, ops in complex_cases:
        if _numpy_accepts(call, ops):
            yield f"{prim.name}{params} {label}", call, ops


def _numpy_accepts(call, ops) -> bool:
    """Does numpy compute the call at these complex operands? (rfftn's numpy refuses complex
    input: its complex rule is for the complex output of a real input.)"""
    try:
        with np.errstate(all="ignore"):
            call(*ops)
    except TypeError:
        return False
    return True


def _mixed(sample: Sample, rng: np.random.Generator, shape_set: str, first: int) -> list:
    """Operands with the float operand ``first`` complex and the others real."""
    zs, xs = draw(sample.inputs, rng, shape_set, C128), draw(sample.inputs, rng, shape_set, F64)
    mixed = [z if k == first else x for k, (z, x) in enumerate(zip(zs, xs))]
    return list(sample.derive(*mixed)) if sample.derive is not None else mixed


def library_cases(names=None, *, seed: int = 0) -> list[tuple[str, Callable, list]]:
    """Every (label, call, operands) of the library check, drawn from one seeded generator."""
    rng = np.random.default_rng(seed)
    return [c for p in sampled() if names is None or p.name in names for s in p.samples for c in cases(p, s, rng)]


def check_library(names=None, *, progress: Callable | None = None, seed: int = 0,
                  **options) -> list[RuleReport | ProgramReport]:
    """One report per case (a ProgramReport for a composition); ``progress(done, total, label)``
    is called before each case."""
    todo = library_cases(names, seed=seed)
    reports = []
    for done, (label, call, inputs) in enumerate(todo):
        if progress is not None:
            progress(done, len(todo), label)
        with np.errstate(all="ignore"):
            composition = len(trace(call, *inputs).eqns) > 1
        report = (check if composition else check_rule)(call, *inputs, seed=seed, **options)
        report.title = f"{'check' if composition else 'check_rule'} {label}"
        reports.append(report)
    if progress is not None:
        progress(len(todo), len(todo), "done")
    return reports
