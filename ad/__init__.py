"""ad: reverse-mode automatic differentiation of plain numpy code, with primitivized rules.

Tracing (``trace``) records a numpy function into an SSA tape; each rule is *lifted* (its
pullback traced into equations) to build a gradient tape (``grad_tape``) that can be shown,
checked, optimised, compiled, saved and differentiated again. docs/architecture.md says where
each stage lives; this module only gathers the public names.
"""
from . import lib as _lib  # noqa: F401  (fills the dispatch tables)
from . import nn  # noqa: F401  (neural-network functions and their rules)
from .checks import check, check_rule
from .compiler.array_api import ArrayAPIError
from .compiler.backends import compile  # noqa: A001  (backend="numpy" or "fused")
from .compiler.codegen import Compiled
from .compiler.examples import ExamplesError
from .core_prims import project
from .errors import (BatchedBranchError, ConcretizationError, MutationError, NonDifferentiableError,
                     PlainArrayWriteError, TraceError, UnsupportedFunctionError)
from .forward_mode.pushforward import Pushforward, frule
from .forward_mode.transposition import NotLinearError, transpose
from .gradtape import Fallback, GradTape, partition
from .origins import Origin, OriginKind
from .passes import op_counts, optimize
from .primitives import REGISTRY, Primitive, defer, plug_in
from .rules import backpropagate, batch_rule, linear_rule, non_differentiable, primitive, rrule, scalar_rule, using_rule
from .scopes import scope
from .serialize import load, save
from .tangents import NoTangent, Thunk, ZeroTangent, thunk, unthunk
from .tape import Aval, Eqn, Lit, Tape, Var, validate
from .tracing import trace
from .transforms.gradients import grad, grad_tape, value_and_grad, vjp
from .transforms.jacobians import hessian, hvp, jacfwd, jacobian, jacrev
from .transforms.linearization import jvp, linearize
from .transforms.vectorize import vmap, vmap_tape

__all__ = [
    # transformations
    "trace", "scope", "grad", "value_and_grad", "vjp", "grad_tape", "partition",
    "jvp", "linearize", "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "transpose", "vmap", "vmap_tape",
    # running, optimising, saving, checking tapes
    "compile", "Compiled", "optimize", "op_counts", "validate", "save", "load", "to_onnx", "from_onnx",
    "check", "check_rule",
    # the data model
    "Tape", "GradTape", "Eqn", "Var", "Lit", "Aval", "Origin", "OriginKind", "Fallback", "Primitive",
    "REGISTRY",
    # writing rules
    "rrule", "scalar_rule", "linear_rule", "non_differentiable", "primitive", "using_rule", "project",
    "backpropagate", "frule", "batch_rule", "Pushforward", "NoTangent", "ZeroTangent", "Thunk", "thunk", "unthunk",
    # errors
    "TraceError", "ConcretizationError", "UnsupportedFunctionError", "MutationError",
    "NonDifferentiableError", "NotLinearError", "PlainArrayWriteError", "BatchedBranchError",
    "ArrayAPIError", "ExamplesError",
]


def to_onnx(tape, **kw):
    """Export a tape to an ``onnx.ModelProto`` (see ``ad.onnx.to_onnx``; needs ``onnx``)."""
    from .onnx import to_onnx as export
    return export(tape, **kw)


def from_onnx(model_or_path, **kw):
    """Import an ONNX model as an ``OnnxProgram`` (see ``ad.onnx.from_onnx``; needs ``onnx``)."""
    from .onnx import from_onnx as import_model
    return import_model(model_or_path, **kw)


# ad.scipy's rules, loaded when a scipy.special ufunc first reaches a tracer or a saved tape names
# a scipy primitive (importing scipy costs as much as ad): ad.primitives.defer
defer("scipy.special.", "ad.scipy.special")
defer("scipy.", "ad.scipy.special", "ad.scipy.stats", "ad.scipy.linalg", "ad.scipy.signal",
      "ad.scipy.integrate")
# scipy.fft's backend for traced arrays, set only while a trace runs the user's function, in every
# trace once scipy is imported (scipy.fft on plain arrays never meets it): ad.primitives.plug_in
plug_in("scipy", "ad.scipy.fft")
