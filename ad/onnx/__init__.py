"""ONNX export of tapes (needs the ``onnx`` extra: ``pip install tapeviz[onnx]``), and import of
models (``from_onnx``, ``ad.onnx.importer``, docs/onnx_import.md).

``to_onnx(tape)`` lowers a Tape or a GradTape equation by equation through ``LOWERINGS`` (keyed
by the primitive objects) to a standard ONNX model (opset ``OPSET``); ``export_partition(gt)``
exports the two halves of ``ad.partition(gt)``. For a gradient tape the model's inputs are the
function's array arguments in order, its outputs the function's outputs (``out0``...) then the
gradients in argument order (``grad0``...). Tapes whose rules fell back to opaque closures are
refused; complex tapes too, unless ``complex_parts=True`` (each complex value a pair of real
tensors, ``ad.onnx.complex_parts``).
"""
from __future__ import annotations

from ..gradtape import GradTape, partition
from ..primitives import REGISTRY
from ..serialize import NotSerializableError
from ..tape import Tape
from .graph import OPSET, LoweringError, export
from .lowering import LOWERINGS, NOT_LOWERED, lowers, not_lowered
from . import lowering_nn  # noqa: F401,E402  (registers the ad.nn lowerings)
from . import lowering_loop  # noqa: F401,E402  (registers the lowering of ad.vmap's fallback loop)
from .complex_parts import COMPLEX_LOWERINGS
from .importer import OnnxImportError, OnnxProgram, from_onnx, parameters


def to_onnx(tape: Tape, *, opset: int = OPSET, name: str = "tape", check: bool = True,
            guards: str = "refuse", complex_parts: bool = False):
    """An ``onnx.ModelProto`` computing ``tape``; ``onnx.checker.check_model`` (with shape
    inference) is run on it unless ``check=False``. A tape with guards (branches the trace took
    on traced values) is refused unless ``guards="branch"`` (export the branch taken). A tape
    with complex values is refused unless ``complex_parts=True``: each complex value is then
    two real tensors, ``z_re`` and ``z_im`` (``ad.onnx.complex_parts``).

    >>> def loss(W, x):
    ...     return np.sum(np.tanh(x @ W) ** 2)
    >>> model = ad.to_onnx(ad.grad_tape(loss, np.ones((3, 2)), np.ones((4, 3))))
    >>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
    (['W', 'x'], ['out0', 'grad0'])
    """
    return export(tape, LOWERINGS, COMPLEX_LOWERINGS if complex_parts else None, opset=opset, name=name,
                  check=check, guards=guards)


def export_partition(gt: GradTape, **kw):
    """``(fwd, bwd)`` models of ``ad.partition(gt)``: fwd maps the arguments to the outputs
    followed by the residuals; bwd maps the residuals followed by the cotangent seeds to the
    gradients."""
    fwd, bwd = partition(gt)
    return to_onnx(fwd, name="forward", **kw), to_onnx(bwd, name="backward", **kw)


def coverage() -> dict[str, str]:
    """Every registered primitive's name -> "lowered" or the reason it is not."""
    return {name: "lowered" if p in LOWERINGS else not_lowered(p) or "no lowering yet"
            for name, p in sorted(REGISTRY.items())}


__all__ = ["to_onnx", "export_partition", "coverage", "LOWERINGS", "NOT_LOWERED", "not_lowered", "lowers", "OPSET",
           "COMPLEX_LOWERINGS", "from_onnx", "OnnxProgram", "OnnxImportError", "parameters",
           "LoweringError", "NotSerializableError"]
