"""What the checker checks, declared once: the table of checks (name, what it verifies, whether
it needs finite differences), the profiles, the severities and the per-dtype tolerances.

The report lists checks in this order; ``Options`` validates every name a user passes against
it, so a typo in ``severity={...}`` is an error that lists the valid names.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

# (name, what it verifies, needs finite differences). Cheap and exact first, finite differences last.
RULE_CHECKS = (
    ("registration.call", "the call records exactly one equation, of the rule's primitive", False),
    ("registration.rule", "a rule exists for that primitive (the one given, or the registered one)", False),
    ("registration.fires", "differentiating the call fires that rule", False),
    ("structure.pair", "the rule returns (y, pullback) with a callable pullback", False),
    ("structure.arity", "the pullback returns one cotangent per operand", False),
    ("primal.structure", "y has the primitive's container structure (an array, or a tuple of them)", False),
    ("primal.shape", "y has the primitive's shape", False),
    ("primal.dtype", "y has the primitive's dtype", False),
    ("primal.value", "y equals the primitive's value", False),
    ("cotangent.shape", "each cotangent has its operand's shape (or one that project() sums to it)", False),
    ("cotangent.dtype", "no silent upcast, no complex or integer cotangent for a real operand", False),
    ("cotangent.integer", "integer and boolean operands get NoTangent, never ZeroTangent", False),
    ("cotangent.no_tangent", "a float operand declared NoTangent has a zero finite-difference derivative", True),
    ("algebra.zero", "pullback(0) is exactly 0", False),
    ("algebra.zero_tangent", "ZeroTangent in any output slot gives zeros or NoTangent out", False),
    ("algebra.linearity", "pullback(a u + b v) == a pullback(u) + b pullback(v)", False),
    ("algebra.twice", "calling the pullback twice gives identical results", False),
    ("algebra.thunk", "a thunked cotangent gives the same result as a plain one", False),
    ("mutation.cotangent", "the pullback does not write into its incoming cotangent", False),
    ("mutation.inputs", "neither the rule nor its pullback writes into the operands", False),
    ("mutation.captures", "the pullback does not write into the arrays its closure captured", False),
    ("mutation.aliasing", "returned cotangents share no memory with captured arrays or operands", False),
    ("lifted.form", "the rule lifts into equations (no opaque fallback)", False),
    ("lifted.agree", "the lifted template and the closure give the same cotangents", False),
    ("lifted.after_mutation", "they still agree after the program mutates the arrays the rule reads", False),
    ("lifted.captures", "no float array reaches the rule except as an operand (its gradient would be dropped)", False),
    ("forward.linear", "a linear_in / multilinear_in declaration holds: f(a x) == a f(x) and f(x + y) == f(x) + "
     "f(y) in the declared operands (jointly, or each alone)", False),
    ("forward.transpose", "the transpose of the equation in its declared linear operands passes the dot-product "
     "test <v, f(u)> == <T v, u>", False),
    ("forward.frule", "a hand-written @ad.frule equals the pushforward derived from the rrule", False),
    ("batching.loop", "the batching rule (or the fallback loop) on a batch of 3 equals the loop of the primitive "
     "over the examples, at in_axes 0, at the last axis and with each operand alone batched", False),
    ("fd.dot_product", "<J u, v> == <u, J^T v> by converged finite differences; subgradient bracket at kinks", True),
    ("fd.jvp", "<J u, v> with J u from the pushforward forward mode uses (derived from the pullback, or the "
     "frule) equals <u, J^T v> from the pullback, and J u equals finite differences", True),
    ("complex.holomorphic", "complex operands: holomorphic by finite differences (J(i u) == i J(u)) exactly when "
     "the pullback is complex-linear (pullback(i v) == i pullback(v))", True),
    ("second_order.dot_product", "the pullback, as a function of (operands, cotangent), passes the same test", True),
)

PROGRAM_CHECKS = (
    ("program.build", "every differentiated equation has a rule and the gradient tape builds", False),
    ("program.dot_product", "end to end: <J u, v> == <u, J^T v> for the whole program", True),
    ("program.jvp", "end to end: <J u, v> with J u from forward mode (ad.linearize's tangent tape) == <u, J^T v> "
     "from the gradient tape, and J u == finite differences", True),
    ("program.holomorphic", "complex inputs: the whole program is holomorphic exactly when its backward is "
     "complex-linear", True),
    ("program.equations", "every equation passes the rule checks at its recorded values (culprit: the first failing one in reverse order)", False),
    ("program.closure_vs_lifted", "the closure form and the lifted tape give the same gradients", False),
    ("program.zero", "the whole backward maps a zero cotangent to exactly zero", False),
    ("program.linearity", "the whole backward is linear in its cotangent", False),
    ("program.determinism", "running the backward twice gives identical gradients (lifted and closure)", False),
    ("program.dtype_flow", "no equation silently promotes float32 to float64, complex64 to complex128, or "
     "real to complex (a real equation's pullback computing in complex)", False),
    ("program.nan", "no pullback produces NaN or Inf from finite inputs", False),
    ("program.kinks", "equations evaluated at or near a kink (where the gradient is a subgradient choice)", False),
    ("program.residuals", "no array recorded as a residual was mutated between the forward and backward passes", False),
    ("program.fallbacks", "which equations used opaque fallbacks", False),
    ("program.batched_grad", "batched=True: the backward batched over 3 cotangents equals the loop of the backward "
     "over them, as gradcheck's check_batched_grad (culprit: the first backward equation whose batched form "
     "differs)", False),
)

CHECK_NAMES = tuple(name for name, _, _ in RULE_CHECKS + PROGRAM_CHECKS)
GROUPS = tuple(dict.fromkeys(name.split(".")[0] for name in CHECK_NAMES))
NEEDS_FD = frozenset(name for name, _, fd in RULE_CHECKS + PROGRAM_CHECKS if fd)
ORDER = {name: i for i, name in enumerate(CHECK_NAMES)}

SEVERITIES = ("error", "warn", "off")
PROFILES = {
    "full": {},
    # interface only: everything exact and cheap, no finite differences
    "interface": {name: "off" for name in NEEDS_FD},
}

# Finite-difference comparisons: float64 about 1e-6 relative, float32 about 1e-3 (differences
# are always computed in float64, complex128 for complex values); a complex dtype as its parts.
FD_RTOL = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-3, np.dtype(np.float16): 1e-2,
           np.dtype(np.complex128): 1e-6, np.dtype(np.complex64): 1e-3}


def fd_rtol(dtypes) -> float:
    """The tolerance of the least precise float dtype among ``dtypes``."""
    return max([FD_RTOL.get(np.dtype(d), 1e-6) for d in dtypes if np.issubdtype(d, np.inexact)], default=1e-6)


def exact_rtol(dtypes) -> float:
    """Tolerance for identities that hold up to rounding only (linearity, closure == lifted)."""
    eps = [np.finfo(d).eps for d in dtypes if np.issubdtype(d, np.inexact)]
    return 1e3 * max(eps, default=np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Options:
    """How to check. ``seed`` seeds the checker's private generator (recorded in the report, so
    every failure reproduces); ``profile`` is "full" or "interface" (no finite differences);
    ``severity`` maps a check or group name to "error", "warn" (a failure becomes a warning) or
    "off"; ``directions`` is the number of random direction pairs of the dot-product tests;
    ``second_order`` also checks the pullback's own derivative; ``domains`` gives one
    ``(lo, hi)`` (or None) per argument to keep finite-difference steps inside;
    ``strict_aliasing`` also fails cotangents that are views of the incoming cotangent or of
    each other (allowed by default: ad treats cotangents as immutable values); ``holomorphic=True``
    asserts the function is holomorphic in its complex operands (``complex.holomorphic`` and
    ``program.holomorphic`` then fail if finite differences say otherwise); ``batched=True`` also
    checks a program's batched gradient (``program.batched_grad``)."""
    seed: int = 0
    profile: str = "full"
    severity: dict = field(default_factory=dict)
    directions: int = 2
    second_order: bool = False
    domains: tuple | None = None
    strict_aliasing: bool = False
    holomorphic: bool = False
    batched: bool = False

    def __post_init__(self):
        if self.profile not in PROFILES:
            raise ValueError(f"profile={self.profile!r}; choose one of {tuple(PROFILES)}")
        for name, level in self.severity.items():
            if name not in CHECK_NAMES and name not in GROUPS:
                raise ValueError(f"severity names unknown check {name!r}; checks are {CHECK_NAMES} "
                                 f"and groups {GROUPS}")
            if level not in SEVERITIES:
                raise ValueError(f"severity {level!r} for {name!r}; choose one of {SEVERITIES}")
        if self.directions < 1:
            raise ValueError(f"directions={self.directions}; at least one direction pair is needed")
        if self.domains is not None:
            object.__setattr__(self, "domains", tuple(self.domains))

    @classmethod
    def make(cls, **options) -> "Options":
        """Options from keyword arguments; an unknown name is an error listing the valid ones."""
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise TypeError(f"unknown check option(s) {unknown}; the options are {valid}")
        return cls(**options)

    def level(self, name: str) -> str:
        """The severity of a check: its own setting, else its group's, else the profile's."""
        group = name.split(".")[0]
        for table in (self.severity, PROFILES[self.profile]):
            for key in (name, group):
                if key in table:
                    return table[key]
        return "error"

    def as_dict(self) -> dict:
        return {"seed": self.seed, "profile": self.profile, "severity": dict(self.severity),
                "directions": self.directions, "second_order": self.second_order,
                "domains": None if self.domains is None else [list(d) if d else None for d in self.domains],
                "strict_aliasing": self.strict_aliasing, "holomorphic": self.holomorphic,
                "batched": self.batched}
