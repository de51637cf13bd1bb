"""ONNX import: a model becomes a plain numpy function, so tracing it gives a tape that lifts.

``from_onnx(model_or_path)`` returns an ``OnnxProgram``: ``prog(*inputs, **params)`` runs the
graph node by node through ``OPS`` (one declaration per ``(domain, op_type)``, written with numpy
calls, so on tracers every node records ``ad`` primitives), ``prog.tape`` is its trace (inputs:
the graph inputs, then the float initializers, named as in the model), ``prog.params`` the
initializers as named parameters (for ``ad.grad_tape(..., argnums=...)``).

Values that do not depend on the model's inputs are plain numpy arrays while the graph runs, so
shape arithmetic (``Shape -> Gather -> Concat -> Reshape``) is computed at import and the tape
holds the computation only; an integer operand that does depend on them (a shape given as a
graph input, a Loop's trip count, an If's condition) is read in each call and recorded as a guard.
Each equation's ``source`` is its node, ``"Conv (resnet/conv1)"``.

Loading only parses protobuf (``onnx.load`` without external data, which is then read here from
files inside the model's folder); nothing from the file is executed. Whatever is not understood
(an op, an attribute, a dtype, NonZero on computed values, a cycle, an absurd size) is refused with
an ``OnnxImportError`` naming the node.

The modules, bottom first: ``files`` (limits, dtypes, tensors, parsing), ``nodes`` (``Node``,
``OPS`` and ``@op``), the declarations (``ops_elementwise``, ``control_flow``, ``ops_tensor``,
``ops_resample``, ``ops_nn``, ``ops_losses``, ``ops_signal``, ``ops_vision``, ``recurrent``), and
``program`` (``OnnxProgram``, ``from_onnx``). An op's output over the size limit (``MAX_ELEMENTS``,
``max_elements=``) is refused before it is allocated when its operands decide its size.
"""
from __future__ import annotations

from .control_flow import MAX_UNROLL
from .files import (DTYPES, MAX_ELEMENTS, MAX_FILE_BYTES, MAX_RANK, OnnxImportError, check_shape,
                    dtype_of, load, tensor_array)
from .nodes import OPS, Node, OpDecl, op
from .program import OnnxProgram, from_onnx, opsets, parameters, supported_ops

__all__ = ["from_onnx", "OnnxProgram", "OnnxImportError", "parameters", "supported_ops", "opsets", "load",
           "OPS", "OpDecl", "op", "Node", "DTYPES", "dtype_of", "check_shape", "tensor_array",
           "MAX_ELEMENTS", "MAX_RANK", "MAX_FILE_BYTES", "MAX_UNROLL"]
