"""ad: reverse-mode automatic differentiation of plain numpy code, with primitivized rules.

Tracing (``trace``) records a numpy function into an SSA tape; each rule is *lifted* (its
pullback traced into equations) to build a gradient tape (``grad_tape``) that can be shown,
checked, optimised, compiled, saved and differentiated again.
"""
from . import lib as _lib  # noqa: F401  (fills the dispatch tables)
# tracing and the data model
from .tracing import trace
from .transforms.gradients import grad, grad_tape, value_and_grad, vjp
from .forward_mode.pushforward import Pushforward, frule
from .transforms.linearization import jvp, linearize
from .transforms.jacobians import hessian, hvp, jacfwd, jacobian, jacrev
from .forward_mode.transposition import NotLinearError, transpose
from .gradtape import Fallback, GradTape, partition
from .rules import backpropagate
from .compiler.codegen import Compiled
from .compiler.backends import compile  # noqa: A001  (ad.compile: backend="numpy" (codegen) or "fused")
from .errors import (ConcretizationError, MutationError, NonDifferentiableError, TraceError,
                     UnsupportedFunctionError)
from .primitives import REGISTRY, Primitive, defer
# writing rules
from .core_prims import project
from .rules import linear_rule, non_differentiable, primitive, rrule, scalar_rule, using_rule
from .tangents import NoTangent, Thunk, ZeroTangent, thunk, unthunk
from .passes import op_counts, optimize
from .origins import Origin
from .tape import Aval, Eqn, Lit, Tape, Var, validate

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

# ad.scipy's rules, loaded when a scipy.special ufunc first reaches a tracer or a saved tape names
# a scipy primitive (importing scipy costs as much as ad): ad.primitives.defer
defer("scipy.special.", "ad.scipy.special")
defer("scipy.", "ad.scipy.special", "ad.scipy.stats", "ad.scipy.linalg", "ad.scipy.signal", "ad.scipy.integrate")
