"""Running a graph: ``OnnxProgram`` (nodes sorted, checked, then run through ``OPS``),
``from_onnx`` and ``parameters``."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import AttributeProto

from ...tape import gc_paused
from ...trace_state import ACTIVE
from ...tracer import Tracer
from ...tracing import trace_call
from . import (control_flow, ops_elementwise, ops_losses, ops_nn, ops_resample, ops_signal, ops_tensor,  # noqa: F401
               ops_vision, recurrent)  # (they fill OPS)
from .files import MAX_ELEMENTS, OnnxImportError, check_shape, dtype_of, load, tensor_array
from .nodes import OPS, Node, OpDecl


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
    reads while tracing (Resize's scales, Pad's value, Range's bounds), which stay constants."""
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
    the model; equation sources ``"Conv (conv1)"``, scopes the paths of the node names,
    ``("layer1", "conv1")`` for ``/layer1/conv1/Conv``; ``tape.meta["onnx_values"]`` maps
    variables to the model's value names). ``prog.function`` is the same program as
    ``f(*inputs, params_dict)``, the form ``ad.grad_tape(..., argnums=...)`` differentiates.

    Float initializers are the parameters; integer and bool initializers (shapes, indices) are
    constants, so shape arithmetic stays static, and so are float initializers read only as
    operands an op reads while tracing (Resize's scales, Pad's value: ``static`` in ``OPS``).
    An integer operand given as a graph input (a shape, axes, a trip count), and an If's or a
    Loop's condition computed from the values, are read in each call and guarded: ``ad.grad``
    of ``prog.function`` keeps one tape per value and re-traces for another.
    """

    def __init__(self, model: onnx.ModelProto, inputs=None, max_elements: int = MAX_ELEMENTS):
        graph = model.graph
        self.model, self.max_elements = model, max_elements
        self.opsets = opsets(model)
        if "" not in self.opsets:
            raise OnnxImportError("the model imports no default ('ai.onnx') opset")
        inits = {}
        for t in graph.initializer:
            if t.name in inits:
                raise OnnxImportError(f"initializer {t.name!r} is defined twice")
            inits[t.name] = tensor_array(t, "initializer", max_elements)
        for t in graph.sparse_initializer:
            raise OnnxImportError(f"sparse initializer {t.values.name!r} is not supported")
        weights = _weights(graph, inits)
        self.params = {k: v for k, v in inits.items() if k in weights}
        self.constants = {k: v for k, v in inits.items() if k not in weights}
        self.input_names = tuple(i.name for i in graph.input if i.name not in inits)
        self.output_names = tuple(o.name for o in graph.output)
        infos = [i for i in graph.input if i.name in self.input_names]
        self._shapes = [_declared_shape(info) for info in infos]
        self._inputs = self._example_inputs(infos, inputs)
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
                                          "If, Loop and Scan, unrolled while tracing)")
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

    def _example_inputs(self, infos, given) -> tuple:
        """``inputs=`` as arrays of the declared dtypes (ones for a shape), ones of the static
        shapes for those not given, and None for a dynamic one not given (the first call fixes it)."""
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
        for info, (dims, declared), value in zip(infos, self._shapes, given):
            where = f"graph input {info.name!r}"
            if not info.type.HasField("tensor_type"):
                raise OnnxImportError(f"{where}: only tensor inputs are supported")
            dtype = dtype_of(info.type.tensor_type.elem_type, where)
            if value is None:
                if declared is not None and None not in dims:
                    value = np.ones(check_shape(dims, where, dtype, self.max_elements), dtype)
            else:
                shape_only = isinstance(value, tuple) and all(isinstance(d, int) for d in value)
                value = value if shape_only else np.asarray(value)
                shape = tuple(value) if shape_only else value.shape
                _check_declared(f"inputs= gives {where}", shape, dims, declared)
                check_shape(shape, where, dtype, self.max_elements)
                value = np.ones(shape, dtype) if shape_only else value.astype(dtype, copy=False)
            out.append(value)
        return tuple(out)

    @property
    def inputs(self) -> tuple:
        """The example inputs ``prog.tape`` is traced on: ``inputs=``, else ones of the declared
        shapes; an input with symbolic dimensions (``batch``) takes the first call's values."""
        for name, (_, declared), value in zip(self.input_names, self._shapes, self._inputs):
            if value is None:
                raise OnnxImportError(f"graph input {name!r} has dynamic shape {declared or 'unknown'}: pass "
                                      "inputs= (arrays or shapes) or call the program once to fix it")
        return self._inputs

    # -- running -------------------------------------------------------------------------------
    def run(self, inputs, params=None, value_names: dict | None = None) -> list:
        """The graph's outputs for ``inputs`` (in graph order) and ``params`` (name -> array;
        missing ones are the initializers). ``value_names`` collects ``Var -> ONNX name``."""
        if len(inputs) != len(self.input_names):
            raise TypeError(f"the model takes {len(self.input_names)} inputs {list(self.input_names)}, "
                            f"got {len(inputs)}")
        for name, (dims, declared), x in zip(self.input_names, self._shapes, inputs):
            _check_declared(f"the call gives graph input {name!r}", np.shape(x), dims, declared)
        params = {} if params is None else params
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"unknown parameters {sorted(unknown)}")
        env = {**self.constants, **self.params, **params, **dict(zip(self.input_names, inputs))}
        saved = [(rec, rec.source, rec.scope) for rec in ACTIVE]
        try:
            for proto in self.nodes:
                self._run_node(proto, env, value_names)
        finally:
            for rec, source, scope in saved:
                rec.source, rec.scope = source, scope
        if any(x is None for x in self._inputs):      # the first call fixes the symbolic dimensions
            self._inputs = tuple(np.array(x.value if isinstance(x, Tracer) else x) for x in inputs)
        return [env[name] for name in self.output_names]

    def _run_graph(self, graph: onnx.GraphProto, outer: dict, value_names, bindings=None,
                   scope: tuple = ()) -> tuple:
        """A subgraph's outputs, its nodes run inline in a scope that sees the enclosing values
        (and ``bindings`` for its inputs); ``scope``: the enclosing node's (``Node.scope``)."""
        env = {**outer, **(bindings or {})}
        missing = [i.name for i in graph.input if i.name not in env]
        if missing:
            raise OnnxImportError(f"subgraph {graph.name!r}: inputs {missing} are not bound")
        for t in graph.initializer:
            env[t.name] = tensor_array(t, f"subgraph {graph.name!r} initializer", self.max_elements)
        for proto in _sorted_nodes(graph, set(env)):
            self._run_node(proto, env, value_names, scope)
        return tuple(env[o.name] for o in graph.output)

    def _run_node(self, proto, env, value_names, outer: tuple = ()):
        """Run one node, its equations stamped with its label (``rec.source``) and the scope its
        name says (``rec.scope``, ``Node.scope``)."""
        decl = self._decl(proto)
        node = Node(proto, self.opsets["" if proto.domain == "ai.onnx" else proto.domain],
                    lambda graph, bindings=None: self._subgraph(graph, env, value_names, bindings, node, outer),
                    self.max_elements)
        if node.opset < decl.since:
            raise node.error(f"opset {node.opset} is older than the importer supports ({decl.since})")
        _stamp(node.label, node.scope(outer))
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
                node.check_size(np.shape(value), f"output {name!r}", np.result_type(value))
                env[name] = value
                if value_names is not None and isinstance(value, Tracer):
                    value_names[value.variable] = name

    def _subgraph(self, graph, env, value_names, bindings, node: Node, outer: tuple) -> tuple:
        """A subgraph of ``node`` run inline, in its scope; then the node's own stamp again (a
        Loop stacks its scan outputs after its body ran)."""
        scope = node.scope(outer)
        try:
            return self._run_graph(graph, env, value_names, bindings, scope)
        finally:
            _stamp(node.label, scope)

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
        """The trace on ``self.inputs`` and ``self.params``: inputs then parameters, ONNX names.
        Nothing is marked differentiated, so a float input an op reads while tracing (Resize's
        scales given as an input) is guarded; ``ad.grad`` with respect to it refuses."""
        if self._tape is None:
            names: dict = {}
            n = len(self.input_names)
            keys = tuple(self.params)

            def flat(*args):
                outs = self.run(args[:n], dict(zip(keys, args[n:])), names)
                return outs[0] if len(outs) == 1 else tuple(outs)
            tape = trace_call(flat, (*self.inputs, *self.params.values()), argnums=())
            tape = tape.replace(input_names=self.input_names + keys)
            tape.meta["onnx_values"] = {**dict(zip(tape.inputs, self.input_names + keys)), **names}
            self._tape = tape
        return self._tape

    def __repr__(self) -> str:
        return (f"OnnxProgram(inputs={list(self.input_names)}, outputs={list(self.output_names)}, "
                f"{len(self.nodes)} nodes, {len(self.params)} parameters)")


def _declared_shape(info: onnx.ValueInfoProto) -> tuple:
    """(dims, declared): the static dimensions (None for a symbolic one) and the shape as the
    model writes it (``['batch', 3]``); both None when it declares no shape."""
    tt = info.type.tensor_type
    if not tt.HasField("shape"):
        return None, None
    return ([d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim],
            [d.dim_param or d.dim_value or "?" for d in tt.shape.dim])


def _check_declared(what: str, shape: tuple, dims, declared) -> None:
    """Refuse a shape that disagrees with the model's static dimensions."""
    if declared is not None and (len(dims) != len(shape) or any(d is not None and d != s for d, s in zip(dims, shape))):
        raise OnnxImportError(f"{what} the shape {tuple(shape)}; the model declares {tuple(declared)} (only its "
                              "symbolic dimensions may be chosen)")


def _stamp(source, scope) -> None:
    """Stamp the equations the active traces record next with ``source`` and ``scope``."""
    for rec in ACTIVE:
        rec.source, rec.scope = source, scope


@gc_paused
def from_onnx(model_or_path, *, inputs=None, max_elements: int = MAX_ELEMENTS) -> OnnxProgram:
    """Import an ONNX model (a path, bytes or an ``onnx.ModelProto``) as an ``OnnxProgram``.

    ``inputs`` fixes the graph inputs' shapes (and the example values ``prog.tape`` is traced
    on): arrays or shape tuples, in graph order or by name; without it, an input with symbolic
    dimensions (``batch``) takes the first call's (every call may choose them).
    ``max_elements``: the largest tensor accepted (initializers, inputs, every node's output),
    in elements and, at 4 bytes an element, in bytes (2**31 and 8 GiB by default); an op whose
    output size its operands decide (ConstantOfShape, Expand, Tile, Range, Pad, Resize, ...)
    refuses before allocating it, naming the node, its op and the size.

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
    >>> prog.tape.eqns[0].source, prog.tape.eqns[0].scope      # the node's name, read as a path
    ('Tanh (block/act)', ('block',))
    """
    return OnnxProgram(load(model_or_path, max_elements), inputs, max_elements)


def parameters(model_or_path) -> dict[str, np.ndarray]:
    """The model's weights by name (its float initializers but those only read while tracing): what
    ``ad.grad_tape`` can differentiate."""
    graph = load(model_or_path).graph
    inits = {t.name: tensor_array(t, "initializer") for t in graph.initializer}
    weights = _weights(graph, inits)
    return {k: v for k, v in inits.items() if k in weights}


def supported_ops() -> list[str]:
    return sorted(f"{d + '.' if d else ''}{name}" for d, name in OPS)
