"""A node while it runs (``Node``: attributes, opset, static operands) and the table of op
declarations (``OPS``, filled by ``@op`` in the modules that declare ops), with the helpers those
share."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import AttributeProto

from ...errors import ConcretizationError
from .files import MAX_ELEMENTS, OnnxImportError, check_shape, tensor_array

_REQUIRED = object()


class Node:
    """One node while it runs: its attributes (each read is recorded: attributes no op reads are
    refused, never dropped), the opset of its domain, helpers for static operands, and
    ``run_graph(subgraph, bindings)``, which runs a subgraph attribute inline (If's taken branch)
    in the node's scope, and ``max_elements``, the largest output it may make (``check_size``)."""

    def __init__(self, proto: onnx.NodeProto, opset: int, run_graph=None, max_elements: int = MAX_ELEMENTS):
        self.proto, self.opset, self.max_elements = proto, opset, max_elements
        self.op_type, self.domain = proto.op_type, proto.domain or ""
        self.name = proto.name or (proto.output[0] if proto.output else "")
        self.attrs = {a.name: a for a in proto.attribute}
        self.read: set[str] = set()
        self.run_graph = run_graph

    @property
    def label(self) -> str:
        return f"{self.op_type} ({self.name})"

    def scope(self, outer: tuple = ()) -> tuple:
        """The scope of the equations the node records: its name's path (``name_scope``), or
        for a name with no path (or no name) ``outer``, the scope of the node whose subgraph
        holds it (``()`` in the main graph)."""
        name = self.proto.name
        return name_scope(name) if "/" in name else outer

    def error(self, message: str) -> OnnxImportError:
        domain = f" of domain {self.domain!r}" if self.domain else ""
        return OnnxImportError(f"node {self.name!r} ({self.op_type}{domain}, opset {self.opset}): {message}")

    def attr(self, name: str, default=_REQUIRED):
        self.read.add(name)
        a = self.attrs.get(name)
        if a is None:
            if default is _REQUIRED:
                raise self.error(f"attribute {name!r} is required")
            return default
        return self._value(a)

    def _value(self, a: AttributeProto):
        kind = a.type
        if kind == AttributeProto.INT:
            return int(a.i)
        if kind == AttributeProto.FLOAT:
            return float(a.f)
        if kind == AttributeProto.STRING:
            return a.s.decode()
        if kind == AttributeProto.INTS:
            return tuple(int(v) for v in a.ints)
        if kind == AttributeProto.FLOATS:
            return tuple(float(v) for v in a.floats)
        if kind == AttributeProto.STRINGS:
            return tuple(v.decode() for v in a.strings)
        if kind == AttributeProto.TENSOR:
            return tensor_array(a.t, f"node {self.name!r} attribute {a.name!r}", self.max_elements)
        if kind == AttributeProto.GRAPH:       # only for ops declaring it (checked at import)
            return a.g
        raise self.error(f"attribute {a.name!r} of type {AttributeProto.AttributeType.Name(kind)} is not "
                         "supported (subgraphs, sparse tensors and types are refused)")

    def static(self, x, what: str) -> np.ndarray:
        """A value the op needs while it is traced (a shape, axes, pads, a count): a constant, or
        the value a traced one has in this call, recorded as a guard (``guard %3 [2,3]``), so a
        call that gives another value traces again (``ad.grad`` does; a tape raises GuardError).
        A value being differentiated is refused: reading it would drop its gradient."""
        try:
            return np.asarray(x)
        except ConcretizationError:      # not chained: ad.trace would report the cause alone
            raise self.error(f"its {what} is read while tracing (it decides a shape, a count or an index), so it "
                             "cannot be differentiated: differentiate with respect to the other inputs") from None

    def ints(self, x, what: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.static(x, what).reshape(-1))

    def check_size(self, shape, what: str, dtype=None):
        """``shape`` as ints, refused naming the node if it is over the size limit: called with
        the shape an op is about to make, before it allocates it."""
        try:
            return check_shape(shape, what, dtype, self.max_elements)
        except OnnxImportError as exc:
            raise self.error(str(exc)) from None


def name_scope(name: str) -> tuple:
    """The scope a node name says, as exporters write module paths: the segments of the path
    without the last (the op), empty ones skipped. ``/layer1/layer1.0/conv1/Conv`` is
    ``("layer1", "layer1.0", "conv1")``, ``/Mul`` and ``Mul_3`` are ``()``. ``%2F`` and ``%25``
    in a segment are ``/`` and ``%`` (``ad.to_onnx`` writes a scope's names so)."""
    return tuple(s.replace("%2F", "/").replace("%25", "%") if "%" in s else s
                 for s in name.split("/")[:-1] if s)


#: (domain, op_type) -> fn(node, *inputs) returning one value or a tuple (missing optional
#: inputs are None); ``since`` is the first opset the declaration covers, ``subgraphs`` the
#: attributes holding subgraphs it runs (any other subgraph attribute is refused at import),
#: ``static`` the positions of inputs it reads while tracing (a float initializer read only there,
#: such as Resize's scales, is a constant, not a parameter).
OPS: dict[tuple[str, str], "OpDecl"] = {}


class OpDecl:
    __slots__ = ("fn", "since", "subgraphs", "static")

    def __init__(self, fn, since, subgraphs, static):
        self.fn, self.since, self.subgraphs, self.static = fn, since, subgraphs, static


def op(*names: str, domain: str = "", since: int = 1, subgraphs: tuple[str, ...] = (), static: tuple[int, ...] = ()):
    def register(fn):
        for name in names:
            if (domain, name) in OPS:
                raise ValueError(f"ONNX op {name!r} of domain {domain!r} is declared twice")
            OPS[(domain, name)] = OpDecl(fn, since, subgraphs, static)
        return fn
    return register


def declare(table: dict, wrap):
    """Declare each op of ``table`` (op_type -> numpy function) as ``wrap(function)``."""
    for name, f in table.items():
        op(name)(wrap(f))


def resolve_axis(axis: int, ndim: int) -> int:
    """A possibly negative ONNX axis as an index in ``range(ndim)``."""
    return axis + ndim if axis < 0 else axis


def const(value, like):
    """``value`` (an attribute, a Python number) as an array of ``like``'s dtype: numpy would
    promote float32 and float16 values to float64."""
    return np.asarray(value, np.result_type(like))
