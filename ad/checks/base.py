"""The bottom of the checker: the registry of checks and what the rule checks share.

Check modules register one function per check of ``settings`` with ``@computes(name)``: a rule
check (``settings.RULE_CHECKS``) is called with a ``Context`` and adds its result to it; a
program check (``settings.PROGRAM_CHECKS``) is called with a ``ProgramRecord`` and returns a
``Verdict``. ``rule.run_checks`` and ``program.check`` run them in the order of the tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..core_prims import project
from ..primitives import Primitive
from ..tangents import is_zero, unthunk
from ..tape import Aval
from .captures import describe, location, raised_at
from .report import CheckResult
from .settings import CHECK_NAMES, Options

CHECKS: dict[str, Callable] = {}


def computes(name: str):
    """Register the decorated function as the one that computes the check ``name`` (see the
    module docstring); ``ad.check`` and ``ad.check_rule`` run what is registered."""
    if name not in CHECK_NAMES:
        raise ValueError(f"{name!r} is not a check of settings.RULE_CHECKS or settings.PROGRAM_CHECKS")

    def register(fn):
        CHECKS[name] = fn
        return fn
    return register


@dataclass
class Verdict:
    """A check's result before it is named and given its severity."""
    status: str
    message: str
    numbers: dict = field(default_factory=dict)
    equation: str | None = None
    source: str | None = None


def result(name: str, v: Verdict, opts: Options) -> CheckResult:
    """The report line of check ``name``; a failure is a warning where its severity says so."""
    status = "warn" if v.status == "fail" and opts.level(name) == "warn" else v.status
    return CheckResult(name, status, v.message, v.numbers, v.equation, v.source)


# -- cotangent helpers -----------------------------------------------------------------------------

def normalize(raw) -> tuple:
    """The pullback's result as a tuple (a single cotangent may be returned bare), unthunked."""
    return tuple(unthunk(r) for r in (raw if isinstance(raw, tuple) else (raw,)))


def dense(g):
    """A projected cotangent as a float64 array, or None for a structural zero."""
    return None if is_zero(g) else np.asarray(g, dtype=np.complex128 if np.iscomplexobj(g) else np.float64)


def random_cotangent(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    """Standard normal in the output's dtype for a float output (real and imaginary parts for a
    complex one); zeros of its dtype for the others (what the backward builder passes)."""
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if np.issubdtype(dtype, np.inexact):
        return rng.standard_normal(shape).astype(dtype)
    return np.zeros(shape, dtype)


def combine(a: float, us: list, b: float, vs: list) -> list:
    """``a u + b v`` per output, in each output's dtype (non-float outputs stay ``u``)."""
    return [(a * u + b * v).astype(u.dtype) if np.issubdtype(u.dtype, np.inexact) else u for u, v in zip(us, vs)]


def float_bits(dtype) -> int:
    """Precision of a float dtype (0 for the others): how promotions are recognised."""
    return np.finfo(dtype).bits if np.issubdtype(dtype, np.inexact) else 0


# -- the rule under test ---------------------------------------------------------------------------

@dataclass
class RuleCase:
    """One rule instance: the primitive, its rule and params, and the operands it is checked at.

    diff: which operands are differentiated (traced float values). seed_cts: output cotangents
    recorded by a program (used instead of random ones where a check needs one cotangent).
    traced: which operands are traced values (the ones a batch can batch; literals stay shared).
    batch_rule: a candidate batching rule, checked instead of the registered one."""
    prim: Primitive
    rule: Callable
    params: dict
    operands: list
    diff: tuple
    equation: str
    domains: list
    seed_cts: list | None = None
    traced: tuple = ()
    batch_rule: Callable | None = None
    reference: list = field(init=False)

    def __post_init__(self):
        with np.errstate(all="ignore"):
            ref = self.prim.impl(*self.fresh_operands(), **self.params)
        self.reference = list(ref) if self.prim.multiple_results else [ref]

    @property
    def avals(self) -> list[Aval]:
        return [Aval.of(v) for v in self.operands]

    @property
    def out_avals(self) -> list[Aval]:
        return [Aval.of(v) for v in self.reference]

    @property
    def dtypes(self) -> list:
        """Every operand and output dtype: what the tolerances are chosen by."""
        return [a.dtype for a in self.avals + self.out_avals]

    @property
    def is_complex(self) -> bool:
        """Some operand or output is complex (else a complex value in the pullback is a bug)."""
        return any(np.issubdtype(d, np.complexfloating) for d in self.dtypes)

    def fresh_operands(self) -> list:
        return [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in self.operands]

    def call(self, operands=None):
        with np.errstate(all="ignore"):
            return self.rule(*(self.fresh_operands() if operands is None else operands), **self.params)

    def pack(self, cts):
        return tuple(cts) if self.prim.multiple_results else cts[0]


class Context:
    """Shared state of one rule check: options, the private generator, results, and what the
    structure checks learned (the first call's ``y``, pullback and cotangents)."""

    def __init__(self, case: RuleCase, opts: Options, rng: np.random.Generator):
        self.case, self.opts, self.rng = case, opts, rng
        self.results: list[CheckResult] = []
        self.broken: str | None = None       # why checks that call the rule cannot run
        self.unprojectable: str | None = None  # why checks that project cotangents cannot run
        self.y = None
        self.rule_source = location(case.rule)
        self.pullback_source: str | None = None

    @property
    def source(self) -> str | None:
        return self.pullback_source or self.rule_source

    def add(self, name, status, message, numbers=None, *, source=None, equation=None):
        v = Verdict(status, message, numbers or {}, equation or self.case.equation, source or self.source)
        self.results.append(result(name, v, self.opts))

    def status(self, name) -> str | None:
        return next((r.status for r in self.results if r.name == name), None)

    def raised(self, name, what, exc, fn=None):
        self.add(name, "fail", f"{what} raised {describe(exc)}", {"exception": describe(exc)},
                 source=raised_at(exc, prefer=fn or self.case.rule) or self.source)

    def primary_cts(self) -> list:
        """The cotangent a program recorded for this equation, else a random one."""
        if self.case.seed_cts is not None:
            return [np.array(c, copy=True) for c in self.case.seed_cts]
        return self.random_cts()

    def random_cts(self) -> list:
        """One random cotangent per output (``random_cotangent``)."""
        return [random_cotangent(a.shape, a.dtype, self.rng) for a in self.case.out_avals]

    def pullback(self):
        return self.case.call()[1]

    def grads(self, pb, cts) -> list:
        """Projected cotangents of ``pb(cts)``, one per operand (NoTangent where none)."""
        raw = normalize(pb(self.case.pack([np.array(c, copy=True) if isinstance(c, np.ndarray) else c
                                           for c in cts])))
        return [project(a, r) for a, r in zip(self.case.avals, raw)]
