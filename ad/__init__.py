"""ad: reverse-mode automatic differentiation of plain numpy code, with primitivized rules.

Tracing (``trace``) records a numpy function into an SSA tape; each rule is *lifted* (its
pullback traced into equations) to build a gradient tape (``grad_tape``) that can be shown,
checked, optimised, compiled, saved and differentiated again.
"""
from . import lib as _lib  # noqa: F401  (fills the dispatch tables)
# tracing and the data model
from .api import grad, grad_tape, trace, value_and_grad, vjp
from .forward import Pushforward, frule, jvp, linearize
from .jacobians import hessian, hvp, jacfwd, jacobian, jacrev
from .transpose import NotLinearError, transpose
from .backward import Fallback, GradTape, backpropagate, partition
from .codegen import Compiled
from .fused import compile  # noqa: A001  (ad.compile: backend="numpy" (codegen) or "fused")
from .errors import (ConcretizationError, MutationError, NonDifferentiableError, TraceError,
                     UnsupportedFunctionError)
from .primitives import REGISTRY, Primitive
# writing rules
from .core_prims import project
from .rrule import linear_rule, non_differentiable, primitive, rrule, scalar_rule, using_rule
from .tangents import NoTangent, Thunk, ZeroTangent, thunk, unthunk
from .passes import op_counts, optimize
from .tape import Aval, Eqn, Lit, Origin, Tape, Var, validate

__all__ = [
    "trace", "grad", "value_and_grad", "vjp", "grad_tape", "partition", "backpropagate",
    "jvp", "linearize", "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "transpose", "frule", "Pushforward", "NotLinearError",
    "compile", "Compiled", "optimize", "op_counts", "validate",
    "Tape", "GradTape", "Eqn", "Var", "Lit", "Aval", "Origin", "Fallback", "Primitive", "REGISTRY",
    "rrule", "using_rule", "primitive", "scalar_rule", "linear_rule", "non_differentiable", "project",
    "NoTangent", "ZeroTangent", "Thunk", "thunk", "unthunk",
    "TraceError", "ConcretizationError", "UnsupportedFunctionError", "MutationError",
    "NonDifferentiableError",
]
from .serialize import load, save  # noqa: E402


def to_onnx(tape, **kw):
    """Export a tape to an ``onnx.ModelProto`` (see ``ad.onnx.to_onnx``; needs ``onnx``)."""
    from .onnx import to_onnx as export
    return export(tape, **kw)


def from_onnx(model_or_path, **kw):
    """Import an ONNX model as an ``OnnxProgram`` (see ``ad.onnx.from_onnx``; needs ``onnx``)."""
    from .onnx import from_onnx as load
    return load(model_or_path, **kw)


from .checks import check, check_rule  # noqa: E402
from . import nn  # noqa: E402,F401  (neural-network functions and their rules)
