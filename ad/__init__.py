"""ad: reverse-mode automatic differentiation of plain numpy code, with primitivized rules.

Tracing (``trace``) records a numpy function into an SSA tape; each rule is *lifted* (its
pullback traced into equations) to build a gradient tape (``grad_tape``) that can be shown,
checked, optimised, compiled, saved and differentiated again.
"""
from . import lib as _lib  # noqa: F401  (fills the dispatch tables)
# tracing and the data model
from .api import grad, grad_tape, trace, value_and_grad, vjp
from .backward import Fallback, GradTape, backpropagate, partition
from .errors import (ConcretizationError, MutationError, NonDifferentiableError, ShapeError,
                     TraceError, UnsupportedFunctionError)
from .primitives import REGISTRY, Primitive
# writing rules
from .rrule import (linear_rule, non_differentiable, primitive, project, rrule, scalar_rule,
                    using_rule)
from .tangents import NoTangent, Thunk, ZeroTangent, thunk, unthunk
from .tape import Aval, Eqn, Lit, Origin, Tape, Var

__all__ = [
    "trace", "grad", "value_and_grad", "vjp", "grad_tape", "partition", "backpropagate",
    "Tape", "GradTape", "Eqn", "Var", "Lit", "Aval", "Origin", "Fallback", "Primitive", "REGISTRY",
    "rrule", "using_rule", "primitive", "scalar_rule", "linear_rule", "non_differentiable", "project",
    "NoTangent", "ZeroTangent", "Thunk", "thunk", "unthunk",
    "TraceError", "ConcretizationError", "UnsupportedFunctionError", "MutationError", "ShapeError",
    "NonDifferentiableError",
]
