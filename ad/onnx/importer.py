"""ONNX import: a model becomes a plain numpy function, so tracing it gives a tape that lifts.

``from_onnx(model_or_path)`` returns an ``OnnxProgram``: ``prog(*inputs, **params)`` runs the
graph node by node through ``OPS`` (one declaration per ``(domain, op_type)``, written with numpy
calls, so on tracers every node records ``ad`` primitives), ``prog.tape`` is its trace (inputs:
the graph inputs, then the float initializers, named as in the model), ``prog.params`` the
initializers as named parameters (for ``ad.grad_tape(..., argnums=...)``).

Values that do not depend on the model's inputs are plain numpy arrays while the graph runs, so
shape arithmetic (``Shape -> Gather -> Concat -> Reshape``) is computed at import and the tape
holds the computation only. Each equation's ``source`` is its node, ``"Conv (resnet/conv1)"``.

Loading only parses protobuf (``onnx.load`` without external data, which is then read here from
files inside the model's folder); nothing from the file is executed. Whatever is not understood
(an op, an attribute, a dtype, a data-dependent shape, a cycle, an absurd size) is refused with
an ``OnnxImportError`` naming the node.
"""
from __future__ import annotations

import functools
import math
import os

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

from .. import nn
from ..api import trace
from ..nn.pool import max_pool_p, mean_pool_p
from ..tape import gc_paused
from ..trace_state import ACTIVE
from ..tracer import Tracer

MAX_ELEMENTS = 1 << 28       # per tensor: 2 GiB of float64
MAX_RANK = 32
MAX_FILE_BYTES = 1 << 32


class OnnxImportError(ValueError):
    """A model (or one of its nodes) that the importer refuses, and why."""


DTYPES = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16,
          TensorProto.INT8: np.int8, TensorProto.INT16: np.int16, TensorProto.INT32: np.int32,
          TensorProto.INT64: np.int64, TensorProto.UINT8: np.uint8, TensorProto.UINT16: np.uint16,
          TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64, TensorProto.BOOL: np.bool_}


def dtype_of(code: int, where: str) -> np.dtype:
    if code not in DTYPES:
        name = TensorProto.DataType.Name(code) if code in TensorProto.DataType.values() else str(code)
        raise OnnxImportError(f"{where}: element type {name} is not supported (supported: "
                              f"{', '.join(TensorProto.DataType.Name(c) for c in DTYPES)})")
    return np.dtype(DTYPES[code])


def check_shape(shape, where: str):
    shape = tuple(int(d) for d in shape)
    if len(shape) > MAX_RANK or any(d < 0 for d in shape) or math.prod(shape) > MAX_ELEMENTS:
        raise OnnxImportError(f"{where}: shape {shape} is refused (negative, rank > {MAX_RANK}, or more "
                              f"than {MAX_ELEMENTS} elements)")
    return shape


def tensor_array(t: TensorProto, where: str) -> np.ndarray:
    """A TensorProto's value, its dims and dtype checked before anything is allocated."""
    where = f"{where} {t.name!r}".rstrip()
    dtype = dtype_of(t.data_type, where)
    shape = check_shape(t.dims, where)
    if t.data_location == TensorProto.EXTERNAL:
        raise OnnxImportError(f"{where}: external data was not loaded (load the model from its path)")
    if t.HasField("raw_data") and len(t.raw_data) != math.prod(shape) * dtype.itemsize:
        raise OnnxImportError(f"{where}: raw_data holds {len(t.raw_data)} bytes for shape {shape} of {dtype}")
    try:
        return np.asarray(numpy_helper.to_array(t), dtype=dtype)
    except Exception as exc:
        raise OnnxImportError(f"{where}: malformed tensor ({exc})") from None


# -- loading --------------------------------------------------------------------------------

def load(model_or_path) -> onnx.ModelProto:
    """Parse a model (a path, bytes or a ModelProto) without running anything from it; external
    data is read only from files inside the model's folder."""
    if isinstance(model_or_path, onnx.ModelProto):
        return model_or_path
    if isinstance(model_or_path, (bytes, bytearray)):
        return _parse(bytes(model_or_path), "the model bytes")
    path = os.fspath(model_or_path)
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise OnnxImportError(f"{path}: {size} bytes is more than the {MAX_FILE_BYTES} accepted")
    with open(path, "rb") as f:
        model = _parse(f.read(), path)
    _load_external(model, os.path.dirname(os.path.abspath(path)), path)
    return model


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:
        raise OnnxImportError(f"{where}: not a valid ONNX protobuf ({exc})") from None
    if not model.HasField("graph"):
        raise OnnxImportError(f"{where}: the model has no graph (is it an ONNX file?)")
    return model


def _load_external(model: onnx.ModelProto, folder: str, where: str):
    for t in model.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        name = f"{where}: initializer {t.name!r}"
        location = info.get("location", "")
        full = os.path.realpath(os.path.join(folder, location))
        if not location or os.path.isabs(location) or os.path.commonpath([full, os.path.realpath(folder)]) \
                != os.path.realpath(folder):
            raise OnnxImportError(f"{name}: external data location {location!r} is outside the model's folder")
        if not os.path.isfile(full):
            raise OnnxImportError(f"{name}: external data file {location!r} does not exist")
        dtype = dtype_of(t.data_type, name)
        nbytes = math.prod(check_shape(t.dims, name)) * dtype.itemsize
        offset, length = int(info.get("offset", 0)), int(info.get("length", nbytes))
        if length != nbytes or offset < 0 or offset + length > os.path.getsize(full):
            raise OnnxImportError(f"{name}: external data (offset {offset}, length {length}) does not fit "
                                  f"{location!r} or the tensor's {nbytes} bytes")
        with open(full, "rb") as f:
            f.seek(offset)
            t.raw_data = f.read(length)
        del t.external_data[:]
        t.data_location = TensorProto.DEFAULT


# -- nodes ----------------------------------------------------------------------------------

_REQUIRED = object()


class Node:
    """One node while it runs: its attributes (each read is recorded: attributes no op reads are
    refused, never dropped), the opset of its domain, helpers for static operands, and
    ``run_graph(subgraph, bindings)``, which runs a subgraph attribute inline (If's taken branch)
    in the node's scope."""

    def __init__(self, proto: onnx.NodeProto, opset: int, run_graph=None):
        self.proto, self.opset = proto, opset
        self.op_type, self.domain = proto.op_type, proto.domain or ""
        self.name = proto.name or (proto.output[0] if proto.output else "")
        self.attrs = {a.name: a for a in proto.attribute}
        self.read: set[str] = set()
        self.run_graph = run_graph

    @property
    def label(self) -> str:
        return f"{self.op_type} ({self.name})"

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
            return tensor_array(a.t, f"node {self.name!r} attribute {a.name!r}")
        if kind == AttributeProto.GRAPH:       # only for ops declaring it (checked at import)
            return a.g
        raise self.error(f"attribute {a.name!r} of type {AttributeProto.AttributeType.Name(kind)} is not "
                         "supported (subgraphs, sparse tensors and types are refused)")

    def static(self, x, what: str) -> np.ndarray:
        """A value the op needs at import (a shape, axes, pads): refused if it depends on the inputs."""
        if isinstance(x, Tracer):
            raise self.error(f"its {what} depends on the model's inputs or parameters (float initializers); "
                             "only static values are supported here (pass inputs= with concrete shapes, "
                             "or fold the model first)")
        return np.asarray(x)

    def ints(self, x, what: str) -> tuple[int, ...]:
        return tuple(int(v) for v in self.static(x, what).reshape(-1))

    def check_size(self, shape, what: str):
        try:
            return check_shape(shape, f"node {self.name!r} ({self.op_type}) {what}")
        except OnnxImportError as exc:
            raise self.error(str(exc)) from None


#: (domain, op_type) -> fn(node, *inputs) returning one value or a tuple (missing optional
#: inputs are None); ``since`` is the first opset the declaration covers, ``subgraphs`` the
#: attributes holding subgraphs it runs (any other subgraph attribute is refused at import),
#: ``static`` the positions of inputs it needs at import (a float initializer read only there,
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


def _declare(table: dict, wrap):
    for name, f in table.items():
        op(name)(wrap(f))


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


# -- elementwise --------------------------------------------------------------------------------

def _unary(f):
    return lambda n, x: f(x)


def _binary(f):
    return lambda n, a, b: f(a, b)


def _same_dtype(f):
    """An op whose output keeps the first input's dtype (numpy would promote)."""
    def run(n, a, *rest):
        out = f(a, *rest)
        return out if np.result_type(out) == np.result_type(a) else out.astype(np.result_type(a))
    return run


def _softsign(x):
    return x / (1 + np.abs(x))


_declare({"Abs": np.abs, "Neg": np.negative, "Exp": np.exp, "Log": np.log, "Sqrt": np.sqrt,
          "Tanh": np.tanh, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin,
          "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh,
          "Acosh": np.arccosh, "Atanh": np.arctanh, "Floor": np.floor, "Ceil": np.ceil,
          "Reciprocal": np.reciprocal, "Sign": np.sign, "Round": np.round, "Erf": nn.erf,
          "Sigmoid": nn.sigmoid, "Relu": nn.relu, "Softplus": nn.softplus, "Softsign": _softsign,
          "Not": np.logical_not, "IsNaN": np.isnan}, _unary)
_declare({"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "And": np.logical_and,
          "Or": np.logical_or, "Xor": np.logical_xor, "Equal": np.equal, "Less": np.less,
          "Greater": np.greater, "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal},
         _binary)
_declare({"Pow": np.power}, _same_dtype)


@op("Div")
def _div(n, a, b):
    if np.issubdtype(np.result_type(a), np.integer):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a))
    return np.divide(a, b)


@op("Mod")
def _mod(n, a, b):
    return np.fmod(a, b) if n.attr("fmod", 0) else np.mod(a, b)


@op("IsInf")
def _isinf(n, x):
    y = np.isinf(x)
    if not n.attr("detect_positive", 1):
        y = y & (x < 0)
    if not n.attr("detect_negative", 1):
        y = y & (x > 0)
    return y


@op("Where")
def _where(n, c, x, y):
    return np.where(c, x, y)


@op("If", subgraphs=("then_branch", "else_branch"))
def _if(n, cond):
    """A condition known at import (a test on shapes, a flag): the taken branch runs inline, so
    the tape holds it alone. A condition on the model's values is refused (a tape has one path)."""
    then_branch, else_branch = n.attr("then_branch"), n.attr("else_branch")
    if isinstance(cond, Tracer):
        raise n.error("its condition depends on the model's inputs or parameters; If is supported only "
                      "when the condition folds to a constant at import (then the taken branch is inlined)")
    if np.size(cond) != 1:
        raise n.error(f"its condition has {np.size(cond)} elements, not one")
    return n.run_graph(then_branch if bool(np.asarray(cond).reshape(-1)[0]) else else_branch)


MAX_UNROLL = 1 << 14     # iterations of a Loop or Scan unrolled into the tape


@op("Loop", subgraphs=("body",))
def _loop(n, trip=None, cond=None, *carried):
    """Unrolled at import: the trip count and every iteration's condition must be known then (a
    loop over a fixed range, as exporters emit for Python loops); a loop whose end depends on the
    model's values is refused. Scan outputs are stacked along a new first axis."""
    body = n.attr("body")
    names = [i.name for i in body.input]
    trip = None if trip is None else int(n.static(trip, "trip count M").reshape(-1)[0])
    scans = [[] for _ in range(len(body.output) - 1 - len(carried))]
    i = 0
    while trip is None or i < trip:
        if cond is not None:
            if isinstance(cond, Tracer):
                raise n.error(f"the condition of iteration {i} depends on the model's inputs or parameters; "
                              "Loop is supported only when its trip count and conditions fold to constants "
                              "at import (then it is unrolled)")
            if not bool(np.asarray(cond).reshape(-1)[0]):
                break
        if i == MAX_UNROLL:
            raise n.error(f"more than {MAX_UNROLL} iterations to unroll")
        flag = np.array(True) if cond is None else np.asarray(cond).reshape(())
        outs = n.run_graph(body, dict(zip(names, [np.array(i, np.int64), flag, *carried])))
        cond, carried = outs[0], outs[1:1 + len(carried)]
        for scan, value in zip(scans, outs[1 + len(carried):]):
            scan.append(value)
        i += 1
    if scans and i == 0:
        raise n.error("no iteration ran, so its scan outputs have no known shape")
    return (*carried, *(np.stack(s, axis=0) for s in scans))


@op("Scan", since=9, subgraphs=("body",))
def _scan(n, *args):
    """Unrolled over the scan axis (a static length): the body runs once per slice, states carried."""
    body = n.attr("body")
    m = n.attr("num_scan_inputs")
    states, xs = list(args[:len(args) - m]), args[len(args) - m:]
    n_out = len(body.output) - len(states)
    in_axes = [_axis(a, np.ndim(x)) for a, x in zip(n.attr("scan_input_axes", (0,) * m), xs)]
    in_reverse = n.attr("scan_input_directions", (0,) * m)
    out_axes, out_reverse = n.attr("scan_output_axes", (0,) * n_out), n.attr("scan_output_directions", (0,) * n_out)
    lengths = {np.shape(x)[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise n.error(f"the scan inputs have different lengths {sorted(lengths)} along their scan axes")
    steps = lengths.pop()
    if steps == 0 or steps > MAX_UNROLL:
        raise n.error(f"{steps} steps to unroll (1 to {MAX_UNROLL} are supported)")
    names = [i.name for i in body.input]
    ys = [[] for _ in range(n_out)]
    for t in range(steps):
        slices = [np.take(x, steps - 1 - t if rev else t, axis=a) for x, a, rev in zip(xs, in_axes, in_reverse)]
        outs = n.run_graph(body, dict(zip(names, states + slices)))
        states = list(outs[:len(states)])
        for y, value in zip(ys, outs[len(states):]):
            y.append(value)
    return (*states, *(np.stack(y[::-1] if rev else y, axis=a) for y, a, rev in zip(ys, out_axes, out_reverse)))


def _variadic(f):
    return lambda n, *xs: functools.reduce(f, xs)


_declare({"Min": np.minimum, "Max": np.maximum, "Sum": np.add}, _variadic)


@op("Mean")
def _mean(n, *xs):
    return functools.reduce(np.add, xs) / np.asarray(len(xs), np.result_type(xs[0]))


# -- activations --------------------------------------------------------------------------------

def _const(value, like):
    return np.asarray(value, np.result_type(like))


@op("LeakyRelu")
def _leaky_relu(n, x):
    return np.where(x >= 0, x, _const(n.attr("alpha", 0.01), x) * x)


@op("PRelu")
def _prelu(n, x, slope):
    return np.where(x >= 0, x, slope * x)


@op("Elu")
def _elu(n, x):
    return np.where(x > 0, x, _const(n.attr("alpha", 1.0), x) * np.expm1(np.minimum(x, 0)))


@op("Selu")
def _selu(n, x):
    alpha = _const(n.attr("alpha", 1.67326319217681884765625), x)
    gamma = _const(n.attr("gamma", 1.05070102214813232421875), x)
    return gamma * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


@op("Celu")
def _celu(n, x):
    alpha = _const(n.attr("alpha", 1.0), x)
    return np.maximum(x, 0) + alpha * np.expm1(np.minimum(x, 0) / alpha)


@op("ThresholdedRelu")
def _thresholded_relu(n, x):
    return np.where(x > _const(n.attr("alpha", 1.0), x), x, _const(0, x))


@op("Gelu")
def _gelu(n, x):
    return nn.gelu(x, approximate=n.attr("approximate", "none"))


@op("HardSigmoid")
def _hard_sigmoid(n, x):
    a, b = _const(n.attr("alpha", 0.2), x), _const(n.attr("beta", 0.5), x)
    return np.clip(a * x + b, _const(0, x), _const(1, x))


@op("HardSwish")
def _hard_swish(n, x):
    return x * np.clip(x / _const(6, x) + _const(0.5, x), _const(0, x), _const(1, x))


@op("Mish")
def _mish(n, x):
    return x * np.tanh(nn.softplus(x))


@op("Clip")
def _clip(n, x, lo=None, hi=None):
    if n.opset < 11:
        lo, hi = n.attr("min", -np.inf), n.attr("max", np.inf)
        lo, hi = _const(lo, x), _const(hi, x)
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


# -- linear algebra -----------------------------------------------------------------------------

@op("MatMul")
def _matmul(n, a, b):
    return np.matmul(a, b)


@op("Gemm")
def _gemm(n, a, b, c=None):
    alpha, beta = n.attr("alpha", 1.0), n.attr("beta", 1.0)
    if n.attr("transA", 0):
        a = np.transpose(a)
    if n.attr("transB", 0):
        b = np.transpose(b)
    y = a @ b
    if alpha != 1.0:
        y = _const(alpha, y) * y
    if c is not None:
        y = y + (c if beta == 1.0 else _const(beta, y) * c)
    return y


@op("Einsum")
def _einsum(n, *xs):
    return np.einsum(n.attr("equation").replace(" ", ""), *xs)


# -- reductions ---------------------------------------------------------------------------------

def _reduce(f, axes_input_since: int):
    """ONNX's reductions: axes an attribute before ``axes_input_since``, an input from then on."""
    def run(n, x, axes=None):
        keepdims = bool(n.attr("keepdims", 1))
        if n.opset < axes_input_since:
            axes = n.attr("axes", None)
            noop = False
        else:
            axes = None if axes is None else n.ints(axes, "axes")
            noop = bool(n.attr("noop_with_empty_axes", 0))
        if not axes:
            if noop:
                return x
            axes = tuple(range(np.ndim(x)))
        axes = tuple(sorted(_axis(a, np.ndim(x)) for a in axes))
        return f(x, axes, keepdims)
    return run


def _extremum(f, empty):
    """np.max/np.min, with ONNX's value on an empty set (-inf/inf, or the dtype's extreme)."""
    def run(x, axes, keepdims):
        if any(np.shape(x)[a] == 0 for a in axes):
            shape = tuple(1 if a in axes else d for a, d in enumerate(np.shape(x)) if keepdims or a not in axes)
            dt = np.result_type(x)
            fill = (empty if dt.kind == "f" else (np.iinfo(dt).min if empty < 0 else np.iinfo(dt).max)
                    if dt.kind in "iu" else empty > 0)
            return np.full(shape, fill, dt)
        return f(x, axis=axes, keepdims=keepdims)
    return run


_reduce_max, _reduce_min = _extremum(np.max, -np.inf), _extremum(np.min, np.inf)


_REDUCTIONS = {
    "ReduceSum": (lambda x, a, k: np.sum(x, axis=a, keepdims=k), 13),
    "ReduceMean": (lambda x, a, k: np.mean(x, axis=a, keepdims=k), 18),
    "ReduceMax": (_reduce_max, 18),
    "ReduceMin": (_reduce_min, 18),
    "ReduceProd": (lambda x, a, k: np.prod(x, axis=a, keepdims=k), 18),
    "ReduceL1": (lambda x, a, k: np.sum(np.abs(x), axis=a, keepdims=k), 18),
    "ReduceL2": (lambda x, a, k: np.sqrt(np.sum(x * x, axis=a, keepdims=k)), 18),
    "ReduceSumSquare": (lambda x, a, k: np.sum(x * x, axis=a, keepdims=k), 18),
    "ReduceLogSum": (lambda x, a, k: np.log(np.sum(x, axis=a, keepdims=k)), 18),
    "ReduceLogSumExp": (lambda x, a, k: nn.logsumexp(x, axis=a, keepdims=k) if np.size(x)
                        else np.log(np.sum(x, axis=a, keepdims=k)), 18),
}
for _name, (_f, _since) in _REDUCTIONS.items():
    op(_name)(_reduce(_f, _since))


def _astype(x, dtype):
    return x.astype(dtype) if isinstance(x, Tracer) else np.asarray(x).astype(dtype)


def _arg(f):
    def run(n, x):
        axis = _axis(n.attr("axis", 0), np.ndim(x))
        keepdims = bool(n.attr("keepdims", 1))
        if n.attr("select_last_index", 0):
            i = np.shape(x)[axis] - 1 - f(np.flip(x, axis), axis=axis, keepdims=keepdims)
        else:
            i = f(x, axis=axis, keepdims=keepdims)
        return _astype(i, np.int64)
    return run


op("ArgMax")(_arg(np.argmax))
op("ArgMin")(_arg(np.argmin))


@op("TopK")
def _topk(n, x, k=None):
    k = n.attr("k") if n.opset < 10 else n.ints(k, "k")[0]
    axis = _axis(n.attr("axis", -1), np.ndim(x))
    largest, _ = n.attr("largest", 1), n.attr("sorted", 1)     # always sorted: a valid order
    dt = np.result_type(x)
    flipped = np.iinfo(dt).max - x if np.issubdtype(dt, np.unsignedinteger) else -x
    order = np.argsort(flipped if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), _astype(idx, np.int64)


@op("CumSum")
def _cumsum(n, x, axis):
    axis = _axis(n.ints(axis, "axis")[0], np.ndim(x))
    exclusive, reverse = n.attr("exclusive", 0), n.attr("reverse", 0)
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis=axis)
    if np.result_type(y) != np.result_type(x):       # numpy widens small integers
        y = y.astype(np.result_type(x))
    if exclusive:
        y = y - x
    return np.flip(y, axis) if reverse else y


# -- shapes and layout --------------------------------------------------------------------------

@op("Identity")
def _identity(n, x):
    return x


@op("Shape")
def _shape(n, x):
    shape = np.shape(x)
    start, end = n.attr("start", 0), n.attr("end", None)
    return np.array(shape[start:end], np.int64)


@op("Size")
def _size(n, x):
    return np.array(math.prod(np.shape(x)), np.int64)


@op("Reshape")
def _reshape(n, x, shape=None):
    shape = n.attr("shape") if n.opset < 5 else n.ints(shape, "shape")
    if not n.attr("allowzero", 0):
        shape = tuple(np.shape(x)[i] if d == 0 else d for i, d in enumerate(shape))
    return np.reshape(x, shape)


@op("Transpose")
def _transpose(n, x):
    return np.transpose(x, n.attr("perm", None))


def _axes(n, axes, since: int, what="axes"):
    return n.attr("axes", None) if n.opset < since else (None if axes is None else n.ints(axes, what))


@op("Squeeze")
def _squeeze(n, x, axes=None):
    axes = _axes(n, axes, 13)
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(_axis(a, np.ndim(x)) for a in axes))


@op("Unsqueeze")
def _unsqueeze(n, x, axes=None):
    axes = _axes(n, axes, 13)
    rank = np.ndim(x) + len(axes)
    return np.expand_dims(x, tuple(_axis(a, rank) for a in axes))


@op("Flatten")
def _flatten(n, x):
    axis = _axis(n.attr("axis", 1), np.ndim(x))
    shape = np.shape(x)
    return np.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))


@op("Concat")
def _concat(n, *xs):
    return np.concatenate(xs, axis=n.attr("axis"))


@op("Split")
def _split(n, x, split=None):
    axis = _axis(n.attr("axis", 0), np.ndim(x))
    count = len(n.proto.output)
    if n.opset < 13:
        split = n.attr("split", None)
    elif split is not None:
        split = n.ints(split, "split")
    if n.opset >= 18:
        count = n.attr("num_outputs", count)
    dim = np.shape(x)[axis]
    if split is None:
        chunk = -(-dim // count)
        split = [min(chunk, dim - i * chunk) for i in range(count)]
    if sum(split) != dim:
        raise n.error(f"split sizes {tuple(split)} do not add up to dimension {dim}")
    return tuple(np.split(x, np.cumsum(split)[:-1].tolist(), axis=axis))


@op("Slice")
def _slice(n, x, starts=None, ends=None, axes=None, steps=None):
    if n.opset < 10:
        starts, ends, axes, steps = n.attr("starts"), n.attr("ends"), n.attr("axes", None), None
    else:
        starts, ends = n.ints(starts, "starts"), n.ints(ends, "ends")
        axes = None if axes is None else n.ints(axes, "axes")
        steps = None if steps is None else n.ints(steps, "steps")
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * np.ndim(x)
    for a, s, e, k in zip(axes, starts, ends, steps):
        a = _axis(a, np.ndim(x))
        dim = np.shape(x)[a]
        if k == 0:
            raise n.error("a step of 0")
        if k < 0:       # ONNX clamps to [-1, dim-1]; Python reads -1 as "the last"
            s = min(max(s + dim if s < 0 else s, -1), dim - 1)
            e = min(max(e + dim if e < 0 else e, -1), dim - 1)
            index[a] = slice(s, None if e < 0 else e, k) if s >= 0 else slice(0, 0)
        else:
            index[a] = slice(max(min(s, dim), -dim), max(min(e, dim), -dim - 1), k)
    return x[tuple(index)]


@op("Gather")
def _gather(n, x, indices):
    axis = _axis(n.attr("axis", 0), np.ndim(x))
    return np.take(x, indices, axis=axis)


@op("GatherElements")
def _gather_elements(n, x, indices):
    axis = _axis(n.attr("axis", 0), np.ndim(x))
    indices = np.where(indices < 0, indices + np.shape(x)[axis], indices)
    return np.take_along_axis(x, indices, axis=axis)


@op("ScatterElements", "Scatter")
def _scatter_elements(n, x, indices, updates):
    axis = _axis(n.attr("axis", 0), np.ndim(x))
    reduction = n.attr("reduction", "none") if n.op_type == "ScatterElements" else "none"
    idx = n.static(indices, "indices").astype(np.int64)
    idx = np.where(idx < 0, idx + np.shape(x)[axis], idx)
    grid = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    return _scatter(n, x, tuple(np.broadcast_to(g, idx.shape) for g in grid), updates, reduction)


def _scatter(n, x, where, updates, reduction: str):
    """A copy of ``x`` with ``updates`` written (or added) at the index ``where``."""
    out = np.copy(x)
    if reduction == "none":
        out[where] = updates
        return out
    if reduction == "add":
        np.add.at(out, where, updates)
        return out
    raise n.error(f"reduction={reduction!r} is not supported (none, add)")


@op("ScatterND")
def _scatter_nd(n, x, indices, updates):
    reduction = n.attr("reduction", "none")
    idx = n.static(indices, "indices").astype(np.int64)
    k = idx.shape[-1]
    idx = np.where(idx < 0, idx + np.array(np.shape(x)[:k]), idx)
    return _scatter(n, x, tuple(idx[..., j] for j in range(k)), updates, reduction)


@op("Expand")
def _expand(n, x, shape):
    shape = np.broadcast_shapes(np.shape(x), n.ints(shape, "shape"))
    return np.broadcast_to(x, n.check_size(shape, "output"))


@op("Tile")
def _tile(n, x, repeats):
    reps = n.ints(repeats, "repeats")
    n.check_size(tuple(d * r for d, r in zip(np.shape(x), reps)), "output")
    return np.tile(x, reps)


@op("Pad", static=(1, 2, 3))
def _pad(n, x, pads=None, value=None, axes=None):
    mode = n.attr("mode", "constant")
    if n.opset < 11:
        pads, value = n.attr("pads"), n.attr("value", 0.0)
    else:
        pads = n.ints(pads, "pads")
        value = 0 if value is None or np.size(value) == 0 else n.static(value, "constant_value").reshape(-1)[0]
    ndim = np.ndim(x)
    axes = range(ndim) if axes is None else [_axis(a, ndim) for a in n.ints(axes, "axes")]
    k = len(pads) // 2
    widths = [(0, 0)] * ndim
    for j, a in enumerate(axes):
        widths[a] = (pads[j], pads[j + k])
    crop = tuple(slice(max(-lo, 0), np.shape(x)[a] - max(-hi, 0)) for a, (lo, hi) in enumerate(widths))
    x = x[crop]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in widths]
    modes = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}
    if mode not in modes:
        raise n.error(f"mode={mode!r} is not supported ({', '.join(modes)})")
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=_const(value, x))
    return np.pad(x, widths, mode=modes[mode])


def _folded(n, x):
    """An input whose values decide the output's shape: folded at import when it is a constant,
    refused when it depends on the model's inputs (a tape has static shapes)."""
    if isinstance(x, Tracer):
        raise n.error(f"its output's shape depends on the values of its input, which depends on the model's "
                      f"inputs or parameters; {n.op_type} is supported only on constants (folded at import)")
    return np.asarray(x)


@op("NonZero")
def _nonzero(n, x):
    return np.array(np.nonzero(_folded(n, x)), np.int64).reshape(np.ndim(x), -1)


@op("Unique")
def _unique(n, x):
    """np.unique, in the order of first occurrence unless ``sorted``; indices as ONNX wants them."""
    x = _folded(n, x)
    axis = n.attr("axis", None)
    axis = None if axis is None else _axis(axis, x.ndim)
    y, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(-1)
    if not n.attr("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.argsort(order)
        y = y[order] if axis is None else np.take(y, order, axis=axis)
        first, counts, inverse = first[order], counts[order], rank[inverse]
    return y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)


@op("Cast")
def _cast(n, x):
    n.attr("saturate", 1)      # only meaningful for float8 types, which dtype_of refuses
    n.attr("round_mode", "up")
    return _astype(x, dtype_of(n.attr("to"), f"node {n.name!r} (Cast)"))


@op("CastLike")
def _cast_like(n, x, like):
    n.attr("saturate", 1)
    return _astype(x, np.result_type(like))


@op("Constant")
def _constant(n):
    kinds = {"value": lambda v: v, "value_float": lambda v: np.array(v, np.float32),
             "value_floats": lambda v: np.array(v, np.float32), "value_int": lambda v: np.array(v, np.int64),
             "value_ints": lambda v: np.array(v, np.int64)}
    given = [k for k in n.attrs if k in kinds]
    other = [k for k in n.attrs if k not in kinds]
    if other or len(given) != 1:
        raise n.error(f"needs exactly one of {', '.join(kinds)}; got {list(n.attrs)} (strings and sparse "
                      "tensors are not supported)")
    return kinds[given[0]](n.attr(given[0]))


@op("ConstantOfShape")
def _constant_of_shape(n, shape):
    value = n.attr("value", np.zeros(1, np.float32))
    shape = n.check_size(n.ints(shape, "shape"), "output")
    return np.full(shape, value.reshape(-1)[0], value.dtype)


@op("Range", static=(0, 1, 2))
def _range(n, start, limit, delta):
    start, limit, delta = (n.static(v, w) for v, w in ((start, "start"), (limit, "limit"), (delta, "delta")))
    if any(v.size != 1 for v in (start, limit, delta)):
        raise n.error(f"start, limit and delta must be scalars, not of shapes {start.shape, limit.shape, delta.shape}")
    start, limit, delta = (v.reshape(()) for v in (start, limit, delta))    # [1] is read as a scalar, as onnx does
    if delta == 0:
        raise n.error("delta is 0")
    count = max(int(np.ceil((limit - start) / delta)), 0)
    n.check_size((count,), "output")
    return (start + np.arange(count) * delta).astype(start.dtype)


@op("Trilu")
def _trilu(n, x, k=None):
    k = 0 if k is None else n.ints(k, "k")[0]
    return np.triu(x, k) if n.attr("upper", 1) else np.tril(x, k)


@op("Dropout", static=(1, 2))
def _dropout(n, x, ratio=None, training=None):
    if n.opset < 12:
        ratio = n.attr("ratio", 0.5)
        if n.opset < 7 and not n.attr("is_test", 0):
            raise n.error("training-mode Dropout (is_test=0) is not supported: export the model for inference")
    n.attr("seed", None)     # only used in training mode
    zero = ratio is not None and not isinstance(ratio, Tracer) and float(ratio) == 0
    if training is not None and bool(n.static(training, "training_mode")) and not zero:
        raise n.error("training-mode Dropout is not supported: export the model for inference")
    return x, np.ones(np.shape(x), np.bool_)


# -- resampling ---------------------------------------------------------------------------------

def _triangle(d):
    return np.maximum(1 - np.abs(d), 0.0)


def _keys_cubic(a: float):
    """Keys' cubic convolution kernel with coefficient ``a`` (ONNX's ``cubic_coeff_a``)."""
    def kernel(d):
        d = np.abs(d)
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return np.where(d <= 1, near, np.where(d < 2, far, 0.0))
    return kernel


#: coordinate_transformation_mode -> the input coordinate of output positions ``x`` along an axis
#: of ``n_in`` positions resized by ``s`` to ``n_out`` (``s * n_in``, the length before rounding
#: down, is ONNX's ``length_resized``; ``roi``: the axis' (start, end))
_RESIZE_COORDINATES = {
    "half_pixel": lambda x, s, n_in, n_out, roi: (x + 0.5) / s - 0.5,
    "half_pixel_symmetric": lambda x, s, n_in, n_out, roi:
        n_in / 2 * (1 - n_out / (s * n_in)) + (x + 0.5) / s - 0.5,
    "pytorch_half_pixel": lambda x, s, n_in, n_out, roi: (x + 0.5) / s - 0.5 if s * n_in > 1 else 0 * x,
    "align_corners": lambda x, s, n_in, n_out, roi: x * (n_in - 1) / (s * n_in - 1) if s * n_in > 1 else 0 * x,
    "asymmetric": lambda x, s, n_in, n_out, roi: x / s,
    "tf_half_pixel_for_nn": lambda x, s, n_in, n_out, roi: (x + 0.5) / s,
    "tf_crop_and_resize": lambda x, s, n_in, n_out, roi:
        roi[0] * (n_in - 1) + x * (roi[1] - roi[0]) * (n_in - 1) / (s * n_in - 1) if s * n_in > 1
        else 0.5 * (roi[0] + roi[1]) * (n_in - 1) + 0 * x,
}
_NEAREST = {"round_prefer_floor": lambda c: np.ceil(c - 0.5), "round_prefer_ceil": lambda c: np.floor(c + 0.5),
            "floor": np.floor, "ceil": np.ceil}


def _resize_taps(n, mode: str, coords, n_in: int, scale: float, options: dict):
    """(positions, weights), each (n_out, taps): the input positions each output position reads
    along one axis, and their weights (a row sums to 1). Positions outside the axis are clamped
    to its edge, or dropped with ``exclude_outside``; ``antialias`` stretches the kernel by
    1/scale when downsampling."""
    if mode == "nearest":
        nearest = options["nearest_mode"]
        if nearest not in _NEAREST:
            raise n.error(f"nearest_mode={nearest!r} is not supported ({', '.join(_NEAREST)})")
        return np.clip(_NEAREST[nearest](coords), 0, n_in - 1).astype(np.int64)[:, None], np.ones((len(coords), 1))
    if mode == "linear":
        kernel, support = _triangle, 1
    else:
        kernel, support = _keys_cubic(options["cubic_coeff_a"]), 2
    stretch = 1 / scale if options["antialias"] and scale < 1 else 1.0
    first = np.floor(coords - support * stretch) + 1
    pos = first[:, None] + np.arange(int(np.ceil(2 * support * stretch)) + 1)
    weights = kernel((pos - coords[:, None]) / stretch)
    if options["exclude_outside"]:
        weights = np.where((pos >= 0) & (pos < n_in), weights, 0.0)
    weights = weights / np.sum(weights, axis=1, keepdims=True)
    used = np.any(weights != 0, axis=0)
    return np.clip(pos[:, used], 0, n_in - 1).astype(np.int64), weights[:, used]


#: Resize's options from opset 11 on (each read whatever the mode, which uses only some), and
#: what Upsample and Resize-10 do: ``asymmetric`` coordinates, ``floor`` rounding
_RESIZE_OPTIONS = {"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
                   "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0}
_RESIZE_OPTIONS_18 = {"antialias": 0, "keep_aspect_ratio_policy": "stretch"}
_UPSAMPLE_OPTIONS = {**_RESIZE_OPTIONS, **_RESIZE_OPTIONS_18, "coordinate_transformation_mode": "asymmetric",
                     "nearest_mode": "floor"}


@op("Resize", "Upsample", static=(1, 2, 3))
def _resize(n, x, *operands):
    """Resampling, one axis after the other: each output position is a weighted sum of input
    positions (``np.take`` with indices and weights computed at import), so it differentiates.
    Upsample and Resize-10 are Resize with ``asymmetric`` coordinates and ``floor`` rounding."""
    modern = n.op_type == "Resize" and n.opset >= 11
    if not modern:
        roi, sizes = None, None
        scales = n.attr("scales") if n.op_type == "Upsample" and n.opset < 9 else operands[0]
    else:
        roi, scales, sizes = (operands + (None,) * 3)[:3]
    roi, scales, sizes = (None if v is None or np.size(v) == 0 else n.static(v, what).reshape(-1)
                          for v, what in ((roi, "roi"), (scales, "scales"), (sizes, "sizes")))
    mode = n.attr("mode", "nearest")
    if mode == "bilinear" and n.op_type == "Upsample":
        mode = "linear"
    if mode not in ("nearest", "linear", "cubic") or (mode == "cubic" and not modern):
        raise n.error(f"mode={mode!r} is not supported (nearest, linear{', cubic' if modern else ''})")
    if np.issubdtype(np.result_type(x), np.integer) and mode != "nearest":
        raise n.error(f"mode={mode!r} on integers (it rounds) is not supported: only nearest")
    options = dict(_UPSAMPLE_OPTIONS)
    if modern:
        options.update((k, n.attr(k, v)) for k, v in _RESIZE_OPTIONS.items())
        if n.opset >= 18:
            options.update((k, n.attr(k, v)) for k, v in _RESIZE_OPTIONS_18.items())
    coordinate, policy = options["coordinate_transformation_mode"], options["keep_aspect_ratio_policy"]
    if coordinate not in _RESIZE_COORDINATES:
        raise n.error(f"coordinate_transformation_mode={coordinate!r} is not supported "
                      f"({', '.join(_RESIZE_COORDINATES)})")
    ndim = np.ndim(x)
    axes = [_axis(a, ndim) for a in n.attr("axes", range(ndim))] if n.opset >= 18 else list(range(ndim))
    shape = np.shape(x)
    if (scales is None) == (sizes is None):
        raise n.error("exactly one of scales and sizes must be given")
    if sizes is not None:
        ratios = [int(s) / shape[a] for s, a in zip(sizes, axes)]
        if policy in ("not_larger", "not_smaller"):
            common = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [common] * len(axes)
            sizes = [int(np.floor(common * shape[a] + 0.5)) for a in axes]
        elif policy != "stretch":
            raise n.error(f"keep_aspect_ratio_policy={policy!r} is not supported (stretch, not_larger, not_smaller)")
    else:
        ratios = [float(s) for s in scales]
        if any(r <= 0 for r in ratios):
            raise n.error(f"scales {tuple(ratios)} must be positive")
        sizes = [int(np.floor(shape[a] * r)) for a, r in zip(axes, ratios)]
    n.check_size(tuple(dict(zip(axes, sizes)).get(a, d) for a, d in enumerate(shape)), "output")
    dt = np.result_type(x)
    for i, (a, size, scale) in enumerate(zip(axes, sizes, ratios)):
        n_in = shape[a]
        if size == n_in and scale == 1 and coordinate != "tf_crop_and_resize":
            continue
        span = None if roi is None else (float(roi[i]), float(roi[i + len(axes)]))
        coords = _RESIZE_COORDINATES[coordinate](np.arange(size, dtype=np.float64), scale, n_in, size, span)
        pos, weights = _resize_taps(n, mode, coords, n_in, scale, options)
        bcast = [1] * ndim
        bcast[a] = size
        if pos.shape[1] == 1:
            x = np.take(x, pos[:, 0], axis=a)
        else:
            x = functools.reduce(np.add, [np.take(x, pos[:, k], axis=a) * weights[:, k].reshape(bcast).astype(dt)
                                          for k in range(pos.shape[1])])
        outside = (coords < 0) | (coords > n_in - 1)
        if coordinate == "tf_crop_and_resize" and np.any(outside):
            x = np.where(outside.reshape(bcast), _const(options["extrapolation_value"], x), x)
    return x


# -- neural-network ops ------------------------------------------------------------------------

def _pads(n, spatial, kernel, stride, dilation) -> tuple[tuple[int, int], ...]:
    """(low, high) per spatial axis from ``pads`` or ``auto_pad``."""
    auto = n.attr("auto_pad", "NOTSET")
    nd = len(kernel)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(spatial, kernel, stride, dilation):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
            small = total // 2
            out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
        return tuple(out)
    if auto == "VALID":
        return ((0, 0),) * nd
    if auto != "NOTSET":
        raise n.error(f"auto_pad={auto!r} is not supported")
    pads = n.attr("pads", (0,) * (2 * nd))
    return tuple((pads[i], pads[i + nd]) for i in range(nd))


def _window(n, x, w=None):
    nd = np.ndim(x) - 2
    kernel = n.attr("kernel_shape", None) or (np.shape(w)[2:] if w is not None else None)
    if kernel is None:
        raise n.error("attribute 'kernel_shape' is required")
    kernel = tuple(kernel)
    stride = tuple(n.attr("strides", (1,) * nd))
    dilation = tuple(n.attr("dilations", (1,) * nd))
    return kernel, stride, dilation


def _channel(v, ndim):
    return np.reshape(v, (-1,) + (1,) * (ndim - 2))


@op("Conv")
def _conv(n, x, w, b=None):
    kernel, stride, dilation = _window(n, x, w)
    pads = _pads(n, np.shape(x)[2:], kernel, stride, dilation)
    y = nn.conv(x, w, stride=stride, padding=pads, dilation=dilation, groups=n.attr("group", 1))
    return y if b is None else y + _channel(b, np.ndim(y))


@op("ConvTranspose")
def _conv_transpose(n, x, w, b=None):
    kernel, stride, dilation = _window(n, x, w)
    nd = len(kernel)
    extra = n.attr("output_padding", (0,) * nd)
    out_shape = n.attr("output_shape", None)
    if out_shape is not None:
        out_shape = tuple(out_shape)[-nd:]
        totals = [s * (i - 1) + e + (k - 1) * d + 1 - o for i, s, e, k, d, o in
                  zip(np.shape(x)[2:], stride, extra, kernel, dilation, out_shape)]
        extra = tuple(e + max(-t, 0) for e, t in zip(extra, totals))     # a larger output: zeros at the end
        totals = [max(t, 0) for t in totals]
        upper = n.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        pads = tuple((t // 2, t - t // 2) if upper else (t - t // 2, t // 2) for t in totals)
        n.attr("pads", None)
    elif n.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        upper = n.attr("auto_pad") == "SAME_UPPER"
        totals = [s * (i - 1) + e + (k - 1) * d + 1 - i * s for i, s, e, k, d in
                  zip(np.shape(x)[2:], stride, extra, kernel, dilation)]
        pads = tuple((t // 2, t - t // 2) if upper else (t - t // 2, t // 2) for t in totals)
    else:
        pads = _pads(n, np.shape(x)[2:], kernel, stride, dilation)
    y = nn.conv_transpose(x, w, stride=stride, padding=pads, output_padding=tuple(extra), dilation=dilation,
                          groups=n.attr("group", 1))
    return y if b is None else y + _channel(b, np.ndim(y))


def _pool_geometry(n, x):
    kernel, stride, dilation = _window(n, x)
    spatial = np.shape(x)[2:]
    pads = _pads(n, spatial, kernel, stride, dilation)
    ceil = n.attr("ceil_mode", 0)
    extra = []
    for size, k, s, d, (lo, hi) in zip(spatial, kernel, stride, dilation, pads):
        span = size + lo + hi - (k - 1) * d - 1
        out = (-(-span // s) if ceil else span // s) + 1
        if ceil and (out - 1) * s >= size + lo:
            out -= 1
        extra.append(max(0, (out - 1) * s + (k - 1) * d + 1 - (size + lo + hi)))
    return kernel, stride, dilation, pads, tuple(extra)


@op("MaxPool")
def _max_pool(n, x):
    if len(n.proto.output) > 1 and n.proto.output[1]:
        raise n.error("the Indices output of MaxPool is not supported")
    n.attr("storage_order", 0)      # only affects the Indices output
    kernel, stride, dilation, pads, extra = _pool_geometry(n, x)
    padding = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    return max_pool_p.bind(x, window=kernel, stride=stride, padding=padding, dilation=dilation)


@op("AveragePool")
def _average_pool(n, x):
    """The mean over each window, divided by the count ONNX asks for: ``mean_pool`` of the values
    over ``mean_pool`` of a mask of the counted positions (a constant, computed at import)."""
    kernel, stride, dilation, pads, extra = _pool_geometry(n, x)
    if n.attr("count_include_pad", 0):
        x = np.pad(x, ((0, 0), (0, 0)) + pads) if any(map(any, pads)) else x
        padding = tuple((0, e) for e in extra)
    else:
        padding = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    geometry = dict(window=kernel, stride=stride, padding=padding, dilation=dilation)
    y = mean_pool_p.bind(x, **geometry)
    count = mean_pool_p.bind(np.ones((1, 1) + np.shape(x)[2:], np.result_type(x)), **geometry)
    return y if np.all(count == 1) else y / count


@op("GlobalAveragePool")
def _global_average_pool(n, x):
    return np.mean(x, axis=tuple(range(2, np.ndim(x))), keepdims=True)


@op("GlobalMaxPool")
def _global_max_pool(n, x):
    return np.max(x, axis=tuple(range(2, np.ndim(x))), keepdims=True)


@op("BatchNormalization")
def _batch_norm(n, x, scale, bias, mean, var):
    eps, momentum = n.attr("epsilon", 1e-5), n.attr("momentum", 0.9)
    if n.opset < 9:
        n.attr("spatial", 1)
    if n.opset < 7:
        n.attr("is_test", 0)
    training = n.opset >= 14 and n.attr("training_mode", 0)
    ndim = np.ndim(x)
    dt = np.result_type(x)
    if not training:
        inv = _channel(scale / np.sqrt(var + _const(eps, var)), ndim)
        return (x - _channel(mean, ndim)) * inv.astype(dt) + _channel(bias, ndim)
    axes = (0,) + tuple(range(2, ndim))
    batch_mean = np.mean(x, axis=axes)
    batch_var = np.var(x, axis=axes)
    y = nn.layer_norm(x, axis=axes, eps=eps) * _channel(scale, ndim) + _channel(bias, ndim)
    m = _const(momentum, batch_mean)
    return y, mean * m + batch_mean * (1 - m), var * m + batch_var * (1 - m)


@op("LayerNormalization")
def _layer_norm(n, x, scale, bias=None):
    axis = _axis(n.attr("axis", -1), np.ndim(x))
    eps = n.attr("epsilon", 1e-5)
    n.attr("stash_type", 1)
    axes = tuple(range(axis, np.ndim(x)))
    y = nn.layer_norm(x, axis=axes, eps=eps) * scale
    y = y if bias is None else y + bias
    if len(n.proto.output) == 1:
        return y
    mean = np.mean(x, axis=axes, keepdims=True)
    inv = 1 / np.sqrt(np.var(x, axis=axes, keepdims=True) + _const(eps, x))
    return y, mean, inv


@op("InstanceNormalization")
def _instance_norm(n, x, scale, bias):
    ndim = np.ndim(x)
    y = nn.layer_norm(x, axis=tuple(range(2, ndim)), eps=n.attr("epsilon", 1e-5))
    return y * _channel(scale, ndim) + _channel(bias, ndim)


@op("GroupNormalization")
def _group_norm(n, x, scale, bias):
    groups, eps = n.attr("num_groups"), n.attr("epsilon", 1e-5)
    n.attr("stash_type", 1)
    shape = np.shape(x)
    grouped = np.reshape(x, (shape[0], groups, -1))
    y = np.reshape(nn.layer_norm(grouped, axis=-1, eps=eps), shape)
    if n.opset < 21:        # scale and bias per group, before opset 21
        scale, bias = np.repeat(scale, shape[1] // groups), np.repeat(bias, shape[1] // groups)
    return y * _channel(scale, len(shape)) + _channel(bias, len(shape))


@op("LpNormalization")
def _lp_norm(n, x):
    axis, p = n.attr("axis", -1), n.attr("p", 2)
    if p == 1:
        norm = np.sum(np.abs(x), axis=axis, keepdims=True)
    elif p == 2:
        norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    else:
        raise n.error(f"p={p} (1 or 2)")
    return x / np.where(norm == 0, _const(1, norm), norm)      # a zero slice stays zero


@op("DepthToSpace")
def _depth_to_space(n, x):
    b, mode = n.attr("blocksize"), n.attr("mode", "DCR")
    N, C, H, W = np.shape(x)
    if mode == "DCR":
        y = np.transpose(np.reshape(x, (N, b, b, C // b // b, H, W)), (0, 3, 4, 1, 5, 2))
    elif mode == "CRD":
        y = np.transpose(np.reshape(x, (N, C // b // b, b, b, H, W)), (0, 1, 4, 2, 5, 3))
    else:
        raise n.error(f"mode={mode!r} (DCR or CRD)")
    return np.reshape(y, (N, C // b // b, H * b, W * b))


@op("SpaceToDepth")
def _space_to_depth(n, x):
    b, mode = n.attr("blocksize"), n.attr("mode", "DCR")
    N, C, H, W = np.shape(x)
    if mode not in ("DCR", "CRD"):
        raise n.error(f"mode={mode!r} (DCR or CRD)")
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = np.transpose(np.reshape(x, (N, C, H // b, b, W // b, b)), perm)
    return np.reshape(y, (N, C * b * b, H // b, W // b))


@op("Shrink")
def _shrink(n, x):
    lam, bias = _const(n.attr("lambd", 0.5), x), _const(n.attr("bias", 0.0), x)
    return np.where(x < -lam, x + bias, np.where(x > lam, x - bias, _const(0, x)))


@op("OneHot", static=(1,))
def _one_hot(n, indices, depth, values):
    depth = int(n.static(depth, "depth").reshape(-1)[0])
    axis = n.attr("axis", -1)
    idx = n.static(indices, "indices").astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    hot = np.expand_dims(idx, -1) == np.arange(depth)
    hot = np.moveaxis(hot, -1, _axis(axis, np.ndim(idx) + 1))
    return np.where(hot, values[1], values[0])


@op("GatherND")
def _gather_nd(n, x, indices):
    batch = n.attr("batch_dims", 0)
    idx = n.static(indices, "indices").astype(np.int64)
    shape = np.shape(x)
    idx = np.where(idx < 0, idx + np.array(shape[batch:batch + idx.shape[-1]]), idx)
    lead = idx.shape[:-1]
    grids = [np.arange(shape[i]).reshape((-1,) + (1,) * (len(lead) - 1 - i)) for i in range(batch)]
    where = tuple(np.broadcast_to(g, lead) for g in grids) + tuple(idx[..., k] for k in range(idx.shape[-1]))
    return x[where]


def _heads(x, heads, n, what):
    """(B, S, H*D) -> (B, H, S, D); 4-D inputs are already in that layout."""
    if np.ndim(x) == 4:
        return x
    if heads is None:
        raise n.error(f"3-D {what} needs the attribute {'q_num_heads' if what == 'Q' else 'kv_num_heads'}")
    b, s, hd = np.shape(x)
    return np.transpose(np.reshape(x, (b, s, heads, hd // heads)), (0, 2, 1, 3))


@op("Attention")
def _attention(n, q, k, v, mask=None, past_k=None, past_v=None, nonpad_kv_seqlen=None):
    """Scaled dot-product attention (opset 23): 3-D or 4-D inputs, grouped key/value heads, a
    boolean or additive mask, ``is_causal`` (aligned bottom-right when a past is given), a past
    key/value cache, ``softcap``. Fully masked rows give 0, as ONNX defines."""
    if nonpad_kv_seqlen is not None:
        raise n.error("the nonpad_kv_seqlen input (an external KV cache) is not supported")
    rank = np.ndim(q)
    q = _heads(q, n.attr("q_num_heads", None), n, "Q")
    kv_heads = n.attr("kv_num_heads", None)
    k, v = _heads(k, kv_heads, n, "K"), _heads(v, kv_heads, n, "V")
    mode = n.attr("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        raise n.error(f"qk_matmul_output_mode={mode}")
    dt = np.result_type(q)
    precision = n.attr("softmax_precision", None)
    if precision is not None and dtype_of(precision, f"node {n.name!r}") != dt:
        raise n.error("softmax_precision other than the inputs' type is not supported")
    scale = n.attr("scale", None)
    scale = 1 / math.sqrt(np.shape(q)[-1]) if scale is None else scale
    if past_k is not None:
        k, v = np.concatenate([past_k, k], axis=2), np.concatenate([past_v, v], axis=2)
    present_k, present_v = k, v
    sq, skv = np.shape(q)[2], np.shape(k)[2]
    bias = None
    if mask is not None:
        if np.shape(mask)[-1] < skv:
            fill = False if np.result_type(mask) == np.bool_ else -np.inf
            mask = np.pad(mask, [(0, 0)] * (np.ndim(mask) - 1) + [(0, skv - np.shape(mask)[-1])],
                          constant_values=fill)
        bias = np.where(mask, _const(0, q), _const(-np.inf, q)) if np.result_type(mask) == np.bool_ else mask
    if n.attr("is_causal", 0):
        offset = 0 if past_k is None else np.shape(past_k)[2]
        allowed = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + offset
        causal = np.where(allowed, _const(0, q), _const(-np.inf, q))
        bias = causal if bias is None else bias + causal
    hq, hk = np.shape(q)[1], np.shape(k)[1]
    if hq != hk:
        if hq % hk:
            raise n.error(f"{hq} query heads are not a multiple of {hk} key/value heads")
        k, v = np.repeat(k, hq // hk, axis=1), np.repeat(v, hq // hk, axis=1)
    root = _const(math.sqrt(scale), q)       # ONNX scales both sides: the same rounding in float16
    scores = (q * root) @ (np.swapaxes(k, -1, -2) * root)
    softcap = n.attr("softcap", 0.0)
    if softcap > 0:
        scores = np.tanh(scores / _const(softcap, q)) * _const(softcap, q)
    qk = scores                               # modes 0 and 1: the (soft-capped) scaled product
    if bias is not None:
        scores = scores + bias
    weights = nn.softmax(scores, axis=-1)
    if bias is not None:
        dead = np.isinf(np.max(bias, axis=-1, keepdims=True))
        if isinstance(dead, Tracer) or np.any(dead):
            weights = np.where(dead, _const(0, weights), weights)
    qk = {2: scores, 3: weights}.get(mode, qk)
    y = (weights @ v).astype(dt) if np.result_type(weights) != dt else weights @ v
    if rank == 3:
        b, h, s, d = np.shape(y)
        y = np.reshape(np.transpose(y, (0, 2, 1, 3)), (b, s, h * d))
    return y, present_k, present_v, qk


def _softmax(f):
    """Softmax over ``axis`` (opset >= 13); before, over the flattened axes from ``axis`` on."""
    def run(n, x):
        if n.opset >= 13:
            return f(x, axis=n.attr("axis", -1))
        axis = _axis(n.attr("axis", 1), np.ndim(x))
        shape = np.shape(x)
        flat = np.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        return np.reshape(f(flat, axis=-1), shape)
    return run


op("Softmax")(_softmax(nn.softmax))
op("LogSoftmax")(_softmax(nn.log_softmax))


# -- recurrent layers, unrolled over time ---------------------------------------------------------

_ACTIVATIONS = {"Sigmoid": nn.sigmoid, "Tanh": np.tanh, "Relu": nn.relu, "Softsign": _softsign,
                "Softplus": nn.softplus}


class _Recurrence:
    """What RNN, GRU and LSTM share: layout, directions, activations, clip, the input projection
    of every time step at once (one matmul), and the outputs Y and Y_h."""

    def __init__(self, n, x, w, r, b, seq_lens, h0, gates: int, default_acts: tuple[str, ...]):
        self.n = n
        self.layout = n.attr("layout", 0)
        if self.layout:
            x = np.transpose(x, (1, 0, 2))
            h0 = None if h0 is None else np.transpose(h0, (1, 0, 2))
        self.hidden = n.attr("hidden_size")
        direction = n.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise n.error(f"direction={direction!r}")
        self.reverse = [False, True] if direction == "bidirectional" else [direction == "reverse"]
        names = n.attr("activations", None) or default_acts * len(self.reverse)
        if n.attr("activation_alpha", None) is not None or n.attr("activation_beta", None) is not None:
            raise n.error("activation_alpha/activation_beta are not supported")
        unknown = [a for a in names if a not in _ACTIVATIONS]
        if unknown:
            raise n.error(f"activations {unknown} are not supported ({', '.join(_ACTIVATIONS)})")
        k = len(default_acts)
        self.acts = [[_ACTIVATIONS[a] for a in names[d * k:(d + 1) * k]] for d in range(len(self.reverse))]
        self.clip = n.attr("clip", None)
        seq, batch = np.shape(x)[:2]
        if seq_lens is not None and any(v != seq for v in n.ints(seq_lens, "sequence_lens")):
            raise n.error("sequence_lens shorter than the sequence are not supported (pad-free batches only)")
        self.x, self.w, self.r, self.b, self.gates = x, w, r, b, gates
        self.h0 = h0 if h0 is not None else np.zeros((len(self.reverse), batch, self.hidden), np.result_type(x))

    def pre(self, v):
        return v if self.clip is None else np.clip(v, _const(-self.clip, v), _const(self.clip, v))

    def projected(self, d):
        """(the input projection per time step (+ the W bias), R transposed, the R bias)."""
        gh = self.gates * self.hidden
        xw = np.matmul(self.x, np.transpose(self.w[d]))          # (seq, batch, G*H)
        rb = None
        if self.b is not None:
            xw = xw + self.b[d][:gh]
            rb = self.b[d][gh:]
        return xw, np.transpose(self.r[d]), rb

    def steps(self, d):
        seq = np.shape(self.x)[0]
        return range(seq - 1, -1, -1) if self.reverse[d] else range(seq)

    def outputs(self, per_dir: list[tuple[list, object]], *extra):
        """Y (seq, dirs, batch, H) and Y_h (dirs, batch, H), in the node's layout; then ``extra``."""
        ys = [np.stack(hs[::-1] if rev else hs, axis=0) for (hs, _), rev in zip(per_dir, self.reverse)]
        y = np.stack(ys, axis=1)
        last = np.stack([h for _, h in per_dir], axis=0)
        if self.layout:
            y = np.transpose(y, (2, 0, 1, 3))
            last = np.transpose(last, (1, 0, 2))
            extra = tuple(np.transpose(e, (1, 0, 2)) for e in extra)
        return (y, last, *extra)


def _split_gates(v, k):
    return np.split(v, k, axis=-1)


@op("RNN")
def _rnn(n, x, w, r, b=None, seq_lens=None, h0=None):
    rec = _Recurrence(n, x, w, r, b, seq_lens, h0, 1, ("Tanh",))
    per_dir = []
    for d in range(len(rec.reverse)):
        xw, rt, rb = rec.projected(d)
        (f,) = rec.acts[d]
        h, hs = rec.h0[d], []
        for t in rec.steps(d):
            v = xw[t] + h @ rt
            h = f(rec.pre(v if rb is None else v + rb))
            hs.append(h)
        per_dir.append((hs, h))
    return rec.outputs(per_dir)


@op("GRU")
def _gru(n, x, w, r, b=None, seq_lens=None, h0=None):
    rec = _Recurrence(n, x, w, r, b, seq_lens, h0, 3, ("Sigmoid", "Tanh"))
    linear_before_reset = n.attr("linear_before_reset", 0)
    H = rec.hidden
    per_dir = []
    for d in range(len(rec.reverse)):
        xw, rt, rb = rec.projected(d)
        f, g = rec.acts[d]
        rb = np.zeros(3 * H, np.result_type(x)) if rb is None else rb
        h, hs = rec.h0[d], []
        for t in rec.steps(d):
            xz, xr, xh = _split_gates(xw[t], 3)
            hz, hr = _split_gates(h @ rt[:, :2 * H] + rb[:2 * H], 2)
            z, rgate = f(rec.pre(xz + hz)), f(rec.pre(xr + hr))
            if linear_before_reset:
                cand = g(rec.pre(xh + rgate * (h @ rt[:, 2 * H:] + rb[2 * H:])))
            else:
                cand = g(rec.pre(xh + (rgate * h) @ rt[:, 2 * H:] + rb[2 * H:]))
            h = (1 - z) * cand + z * h
            hs.append(h)
        per_dir.append((hs, h))
    return rec.outputs(per_dir)


@op("LSTM")
def _lstm(n, x, w, r, b=None, seq_lens=None, h0=None, c0=None, p=None):
    if n.attr("input_forget", 0):
        raise n.error("input_forget=1 is not supported")
    rec = _Recurrence(n, x, w, r, b, seq_lens, h0, 4, ("Sigmoid", "Tanh", "Tanh"))
    if c0 is not None and rec.layout:
        c0 = np.transpose(c0, (1, 0, 2))
    c0 = np.zeros_like(rec.h0) if c0 is None else c0
    per_dir, cells = [], []
    for d in range(len(rec.reverse)):
        xw, rt, rb = rec.projected(d)
        f, g, hact = rec.acts[d]
        pi, po, pf = (None, None, None) if p is None else _split_gates(p[d], 3)
        h, c, hs = rec.h0[d], c0[d], []
        for t in rec.steps(d):
            v = xw[t] + h @ rt
            i, o, fg, cand = _split_gates(v if rb is None else v + rb, 4)
            if p is not None:
                i, fg = i + pi * c, fg + pf * c
            i, fg, cand = f(rec.pre(i)), f(rec.pre(fg)), g(rec.pre(cand))
            c = fg * c + i * cand
            o = f(rec.pre(o if p is None else o + po * c))
            h = o * hact(c)
            hs.append(h)
        per_dir.append((hs, h))
        cells.append(c)
    return rec.outputs(per_dir, np.stack(cells, axis=0))


# -- running a graph -----------------------------------------------------------------------------

def opsets(model: onnx.ModelProto) -> dict[str, int]:
    out = {}
    for o in model.opset_import:
        out["" if o.domain == "ai.onnx" else o.domain] = int(o.version)
    return out


def _reads(node: onnx.NodeProto) -> list[str]:
    """The values a node reads: its inputs, and the enclosing values its subgraphs capture."""
    names = list(node.input)
    for a in node.attribute:
        for g in [a.g] if a.type == AttributeProto.GRAPH else a.graphs:
            inner = {i.name for i in g.input} | {t.name for t in g.initializer}
            inner.update(o for nd in g.node for o in nd.output)
            names += [r for nd in g.node for r in _reads(nd) if r not in inner]
            names += [o.name for o in g.output if o.name not in inner]
    return names


def _sorted_nodes(graph: onnx.GraphProto, known: set[str]) -> list[onnx.NodeProto]:
    """The nodes in an order where every input (and every value a subgraph captures) is defined
    before it is read; a cycle or a value nobody defines is refused, naming the nodes."""
    producer = {}
    for node in graph.node:
        for o in node.output:
            if not o:
                continue
            if o in producer or o in known:
                raise OnnxImportError(f"value {o!r} is defined twice (node {node.name!r})")
            producer[o] = node
    order, state = [], {}
    for start in graph.node:
        if state.get(id(start)) == 2:
            continue
        stack = [(start, iter(_reads(start)))]
        state[id(start)] = 1
        while stack:
            node, it = stack[-1]
            for name in it:
                if not name or name in known:
                    continue
                dep = producer.get(name)
                if dep is None:
                    raise OnnxImportError(f"node {node.name!r} ({node.op_type}) reads {name!r}, which no "
                                          "node, input or initializer defines")
                s = state.get(id(dep))
                if s == 1:
                    cycle = [nd.name or nd.op_type for nd, _ in stack]
                    raise OnnxImportError(f"the graph has a cycle through {' -> '.join(cycle)} -> "
                                          f"{dep.name or dep.op_type}")
                if s is None:
                    state[id(dep)] = 1
                    stack.append((dep, iter(_reads(dep))))
                    break
            else:
                state[id(node)] = 2
                order.append(node)
                stack.pop()
    return order


def _is_float(a: np.ndarray) -> bool:
    return np.issubdtype(a.dtype, np.floating)


def _weights(graph: onnx.GraphProto, inits: dict) -> set[str]:
    """The float initializers that are parameters: all but those read only as operands an op
    needs at import (Resize's scales, Pad's value, Range's bounds), which stay constants."""
    floats = {k for k, v in inits.items() if _is_float(v)}
    weights = {o.name for o in graph.output} & floats
    stack = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            decl = OPS.get(("" if node.domain == "ai.onnx" else node.domain, node.op_type))
            static = decl.static if decl is not None else ()
            weights.update(name for i, name in enumerate(node.input) if name in floats and i not in static)
            stack += [a.g for a in node.attribute if a.type == AttributeProto.GRAPH]
            stack += [sub for a in node.attribute for sub in a.graphs]
    return weights


class OnnxProgram:
    """An imported model: a plain numpy-traceable function with its parameters.

    ``prog(*inputs, **params)`` runs it (parameters default to the model's initializers) and
    returns its output, or a tuple for several; ``prog.tape`` is ``ad.trace`` of it on
    ``prog.inputs`` and ``prog.params`` (tape inputs: graph inputs, then parameters, named as in
    the model; equation sources ``"Conv (conv1)"``; ``tape.meta["onnx_values"]`` maps variables
    to the model's value names). ``prog.function`` is the same program as
    ``f(*inputs, params_dict)``, the form ``ad.grad_tape(..., argnums=...)`` differentiates.

    Float initializers are the parameters; integer and bool initializers (shapes, indices) are
    constants, so shape arithmetic stays static, and so are float initializers read only as
    operands an op needs at import (Resize's scales, Pad's value: ``static`` in ``OPS``).
    """

    def __init__(self, model: onnx.ModelProto, inputs=None):
        graph = model.graph
        self.model = model
        self.opsets = opsets(model)
        if "" not in self.opsets:
            raise OnnxImportError("the model imports no default ('ai.onnx') opset")
        inits = {}
        for t in graph.initializer:
            if t.name in inits:
                raise OnnxImportError(f"initializer {t.name!r} is defined twice")
            inits[t.name] = tensor_array(t, "initializer")
        for t in graph.sparse_initializer:
            raise OnnxImportError(f"sparse initializer {t.values.name!r} is not supported")
        weights = _weights(graph, inits)
        self.params = {k: v for k, v in inits.items() if k in weights}
        self.constants = {k: v for k, v in inits.items() if k not in weights}
        self.input_names = tuple(i.name for i in graph.input if i.name not in inits)
        self.output_names = tuple(o.name for o in graph.output)
        self.inputs = self._example_inputs(graph, inputs)
        self.nodes = _sorted_nodes(graph, set(self.input_names) | set(inits))
        self._check(self.nodes)
        self._tape = None

    def _check(self, nodes):
        """Unknown ops and subgraphs no declaration runs are refused before anything runs (in
        subgraphs too)."""
        for node in nodes:
            decl = self._decl(node)
            for a in node.attribute:
                if a.type not in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
                    continue
                if a.type == AttributeProto.GRAPHS or a.name not in decl.subgraphs:
                    raise OnnxImportError(f"node {node.name!r} ({node.op_type}): attribute {a.name!r} is a "
                                          "subgraph that no declaration runs (control flow is supported as "
                                          "If, Loop and Scan, unrolled at import)")
                self._check(a.g.node)

    def _decl(self, node: onnx.NodeProto) -> OpDecl:
        domain = "" if node.domain == "ai.onnx" else node.domain
        decl = OPS.get((domain, node.op_type))
        where = f"node {node.name!r}: op {node.op_type!r} of domain {domain or 'ai.onnx'!r}"
        if decl is None:
            local = any(f.name == node.op_type and f.domain == node.domain for f in self.model.functions)
            raise OnnxImportError(f"{where} is not supported by the importer" +
                                  (" (model-local functions are not expanded)" if local else "") +
                                  "; ad.onnx.importer.OPS lists the supported ops")
        if domain not in self.opsets:
            raise OnnxImportError(f"{where}: the model imports no opset for its domain")
        return decl

    def _example_inputs(self, graph, given) -> tuple[np.ndarray, ...]:
        infos = [i for i in graph.input if i.name in self.input_names]
        if isinstance(given, dict):
            unknown = set(given) - set(self.input_names)
            if unknown:
                raise OnnxImportError(f"inputs= names {sorted(unknown)}, not graph inputs {list(self.input_names)}")
            given = [given.get(i.name) for i in infos]
        elif given is None:
            given = [None] * len(infos)
        elif len(given) != len(infos):
            raise OnnxImportError(f"inputs= has {len(given)} entries for the graph's {len(infos)} inputs "
                                  f"{list(self.input_names)}")
        out = []
        for info, value in zip(infos, given):
            where = f"graph input {info.name!r}"
            if not info.type.HasField("tensor_type"):
                raise OnnxImportError(f"{where}: only tensor inputs are supported")
            tt = info.type.tensor_type
            dtype = dtype_of(tt.elem_type, where)
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            declared = [d.dim_param or d.dim_value or "?" for d in tt.shape.dim] if tt.HasField("shape") else None
            if value is None:
                if declared is None or None in dims:
                    raise OnnxImportError(f"{where} has dynamic shape {declared or 'unknown'}: pass inputs= "
                                          "(arrays or shapes) to fix it")
                value = np.ones(check_shape(dims, where), dtype)
            else:
                shape_only = isinstance(value, tuple) and all(isinstance(d, int) for d in value)
                value = value if shape_only else np.asarray(value)
                shape = tuple(value) if shape_only else value.shape
                if declared is not None and (len(dims) != len(shape) or any(
                        d is not None and d != s for d, s in zip(dims, shape))):
                    raise OnnxImportError(f"inputs= gives {where} the shape {shape}; the model declares "
                                          f"{tuple(declared)} (only its symbolic dimensions may be chosen)")
                check_shape(shape, where)
                value = np.ones(shape, dtype) if shape_only else value.astype(dtype, copy=False)
            out.append(value)
        return tuple(out)

    # -- running -------------------------------------------------------------------------------
    def run(self, inputs, params=None, value_names: dict | None = None) -> list:
        """The graph's outputs for ``inputs`` (in graph order) and ``params`` (name -> array;
        missing ones are the initializers). ``value_names`` collects ``Var -> ONNX name``."""
        if len(inputs) != len(self.input_names):
            raise TypeError(f"the model takes {len(self.input_names)} inputs {list(self.input_names)}, "
                            f"got {len(inputs)}")
        params = {} if params is None else params
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"unknown parameters {sorted(unknown)}")
        env = {**self.constants, **self.params, **params, **dict(zip(self.input_names, inputs))}
        saved = [rec.source for rec in ACTIVE]
        try:
            for proto in self.nodes:
                self._run_node(proto, env, value_names)
        finally:
            for rec, s in zip(ACTIVE, saved):
                rec.source = s
        return [env[name] for name in self.output_names]

    def _run_graph(self, graph: onnx.GraphProto, outer: dict, value_names, bindings=None) -> tuple:
        """A subgraph's outputs, its nodes run inline in a scope that sees the enclosing values
        (and ``bindings`` for its inputs)."""
        env = {**outer, **(bindings or {})}
        missing = [i.name for i in graph.input if i.name not in env]
        if missing:
            raise OnnxImportError(f"subgraph {graph.name!r}: inputs {missing} are not bound")
        for t in graph.initializer:
            env[t.name] = tensor_array(t, f"subgraph {graph.name!r} initializer")
        for proto in _sorted_nodes(graph, set(env)):
            self._run_node(proto, env, value_names)
        return tuple(env[o.name] for o in graph.output)

    def _run_node(self, proto, env, value_names):
        decl = self._decl(proto)
        node = Node(proto, self.opsets["" if proto.domain == "ai.onnx" else proto.domain],
                    lambda graph, bindings=None: self._run_graph(graph, env, value_names, bindings))
        if node.opset < decl.since:
            raise node.error(f"opset {node.opset} is older than the importer supports ({decl.since})")
        for rec in ACTIVE:
            rec.source = node.label
        args = [env[name] if name else None for name in proto.input]
        while args and args[-1] is None:
            args.pop()
        try:
            out = decl.fn(node, *args)
        except OnnxImportError:
            raise
        except Exception as exc:
            raise node.error(f"{type(exc).__name__}: {exc}") from exc
        unread = set(node.attrs) - node.read
        if unread:
            raise node.error(f"attributes {sorted(unread)} are not supported (refused rather than ignored)")
        outs = out if isinstance(out, tuple) else (out,)
        present = [name for name in proto.output]
        if len(present) > len(outs):
            raise node.error(f"{len(present)} outputs requested, the importer computes {len(outs)}")
        for name, value in zip(present, outs):
            if name:
                if not isinstance(value, Tracer):
                    value = np.asarray(value)
                    node.check_size(value.shape, f"output {name!r}")
                env[name] = value
                if value_names is not None and isinstance(value, Tracer):
                    value_names[value.variable] = name

    def __call__(self, *inputs, **params):
        outs = self.run(inputs, params)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def function(self, *args):
        """``f(*inputs, params)``: the program with its parameters as one (differentiable) dict."""
        *inputs, params = args
        outs = self.run(inputs, params)
        return outs[0] if len(outs) == 1 else tuple(outs)

    @property
    def tape(self):
        """The trace on ``self.inputs`` and ``self.params``: inputs then parameters, ONNX names."""
        if self._tape is None:
            names: dict = {}
            n = len(self.input_names)
            keys = tuple(self.params)

            def flat(*args):
                outs = self.run(args[:n], dict(zip(keys, args[n:])), names)
                return outs[0] if len(outs) == 1 else tuple(outs)
            tape = trace(flat, *self.inputs, *self.params.values())
            tape = tape.replace(input_names=self.input_names + keys)
            tape.meta["onnx_values"] = {**dict(zip(tape.inputs, self.input_names + keys)), **names}
            self._tape = tape
        return self._tape

    def __repr__(self) -> str:
        return (f"OnnxProgram(inputs={list(self.input_names)}, outputs={list(self.output_names)}, "
                f"{len(self.nodes)} nodes, {len(self.params)} parameters)")


@gc_paused
def from_onnx(model_or_path, *, inputs=None) -> OnnxProgram:
    """Import an ONNX model (a path, bytes or an ``onnx.ModelProto``) as an ``OnnxProgram``.

    ``inputs`` fixes the graph inputs' shapes (and the example values ``prog.tape`` is traced
    on): arrays or shape tuples, in graph order or by name; needed for dynamic dimensions.

    >>> from onnx import TensorProto, helper
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Tanh", ["x"], ["y"], name="block/act")], "g",
    ...     [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3])],
    ...     [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [3])])
    >>> prog = ad.from_onnx(helper.make_model(graph))
    >>> print(prog.tape)
    { lambda %0:f64[3] ; let
        %1:f64[3] = tanh %0
      in (%1) }
    >>> prog.tape.eqns[0].source
    'Tanh (block/act)'
    """
    return OnnxProgram(load(model_or_path), inputs)


def parameters(model_or_path) -> dict[str, np.ndarray]:
    """The model's weights by name (its float initializers but those only read at import): what
    ``ad.grad_tape`` can differentiate."""
    graph = load(model_or_path).graph
    inits = {t.name: tensor_array(t, "initializer") for t in graph.initializer}
    weights = _weights(graph, inits)
    return {k: v for k, v in inits.items() if k in weights}


def supported_ops() -> list[str]:
    return sorted(f"{d + '.' if d else ''}{name}" for d, name in OPS)
