"""Building an ONNX graph from a tape: names, constants, casts, and the export driver.

Inputs are named after the tape's input names (``v12`` for ``%12``); literals become
initializers; each equation is handed to its primitive's lowering (``ad.onnx.lowering.LOWERINGS``,
keyed by the primitive object), which adds nodes through ``Graph.op`` and returns the value
names of the equation's outputs (every node documents the equation it comes from). Those
values are declared with their tape avals, so ``onnx.checker``'s shape inference re-checks
every lowering against the tape.

A node is named by the scope of its equation (``Eqn.scope``) as a path, as PyTorch's exporter
names nodes by module: ``/layer#1/MatMul``, ``/Mul`` for the traced function's own lines, and
``_1``, ``_2``... after a name already taken (``node_name``); ``ad.from_onnx`` reads the path
back as the scope.
"""
from __future__ import annotations

import re

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..gradtape import GradTape
from ..reverse_mode.lift import is_weak
from ..serialize import check_serializable
from ..origins import OriginKind
from ..tape import Aval, Lit, Tape

OPSET = 18   # axes as inputs for every reduction (18), ScatterND reduction="add" (16)


class LoweringError(NotImplementedError):
    """A primitive (or a dtype) with no ONNX lowering."""


def onnx_type(dtype) -> int:
    dtype = np.dtype(dtype)
    try:
        return helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, TypeError, ValueError):
        raise LoweringError(f"dtype {dtype} has no ONNX tensor type") from None


def scope_path(scope: tuple) -> str:
    """A scope as the path of a node name, ``/cell#3/sig/``: a ``/`` in a name is written
    ``%2F`` (and ``%`` is ``%25``), so that the path's segments are the scope's names."""
    return "/" + "".join(s.replace("%", "%25").replace("/", "%2F") + "/" for s in scope)


class Graph:
    """The graph under construction. ``op`` adds a node; ``x`` gives an operand's value name,
    cast to a dtype when asked; ``const`` adds an initializer; ``reshape`` and ``cast``
    convert a value."""

    def __init__(self):
        self.nodes: list = []
        self.initializers: list = []
        self.value_info: list = []
        self.names: dict = {}          # Var -> value name
        self.declared: set = set()     # names with a type already (inputs, initializers, infos)
        self._counter = 0
        self._cache: dict = {}
        self._node_names: dict = {}    # a node name -> how many nodes were given it
        self.eqn = None                # the equation being lowered (names and documents nodes)

    def fresh(self, hint: str = "t") -> str:
        self._counter += 1
        return f"{hint}_{self._counter}"

    def node_name(self, op_type: str) -> str:
        """The name of a new node of the equation being lowered: its scope's path and the op,
        ``/layer#1/MatMul``, then ``/layer#1/MatMul_1``... for the next ones (names are unique)."""
        base = scope_path(self.eqn.scope if self.eqn is not None else ()) + op_type
        names = self._node_names
        k = names.get(base, 0)
        name = base if k == 0 else f"{base}_{k}"
        while name in names:               # (a base that is another's suffixed name: never made)
            k += 1
            name = f"{base}_{k}"
        names[base] = k + 1
        if name != base:
            names[name] = 1
        return name

    def op(self, op_type: str, *inputs: str, n_out: int = 1, **attrs):
        """Add a node; returns its output name (a list when ``n_out > 1``)."""
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        doc = ""
        if self.eqn is not None:
            e = self.eqn
            doc = str(e) + (f"    # {e.origin.describe()}" if e.origin.kind is not OriginKind.PRIMAL else "") + \
                (f"  at {e.source}" if e.source else "")
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=self.node_name(op_type),
                                           doc_string=doc, **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=None) -> str:
        """An initializer (small ones are shared)."""
        a = np.asarray(value, dtype=dtype)
        onnx_type(a.dtype)
        key = (a.dtype.str, a.shape, a.tobytes()) if a.size <= 64 else None
        if key is not None and key in self._cache:
            return self._cache[key]
        name = self.fresh("c")
        self.initializers.append(numpy_helper.from_array(a.copy(order="C"), name))
        self.declared.add(name)
        if key is not None:
            self._cache[key] = name
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(values, dtype=np.int64))

    def x(self, operand, dtype=None) -> str:
        """The value name of a Var or Lit, converted to ``dtype`` if given."""
        if type(operand) is Lit:
            value = operand.value
            return self.const(value, dtype if dtype is not None else operand.aval.dtype)
        name = self.names[operand]
        return name if dtype is None else self.cast(name, operand.aval.dtype, dtype)

    def reshape(self, x: str, shape) -> str:
        return self.op("Reshape", x, self.ints(shape), **({"allowzero": 1} if 0 in shape else {}))

    def cast(self, name: str, src, dst) -> str:
        if np.dtype(src) == np.dtype(dst):
            return name
        key = ("cast", name, np.dtype(dst).str)
        if key not in self._cache:
            self._cache[key] = self.op("Cast", name, to=onnx_type(dst))
        return self._cache[key]

    def declare(self, name: str, aval):
        if name not in self.declared:
            self.declared.add(name)
            self.value_info.append(helper.make_tensor_value_info(name, onnx_type(aval.dtype),
                                                                 list(aval.shape)))


def common_dtype(operands) -> np.dtype:
    """numpy's promotion of the operands, Python scalars weak (as when the tape was traced)."""
    return np.result_type(*(x.value if type(x) is Lit and is_weak(x.value) else x.aval.dtype
                            for x in operands))


def _value_name(text: str, taken: set) -> str:
    m = re.fullmatch(r"%(\d+)", text)
    name = f"v{m.group(1)}" if m else (re.sub(r"\W+", "_", text).strip("_") or "x")
    if name[0].isdigit():
        name = "x_" + name
    base, k = name, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def output_names(tape: Tape) -> list[str]:
    if isinstance(tape, GradTape):
        return [f"out{i}" for i in range(tape.n_values)] + \
               [f"grad{i}" for i in range(len(tape.outputs) - tape.n_values)]
    return [f"out{i}" for i in range(len(tape.outputs))]


GUARD_CHOICES = ("refuse", "branch")


def _unguarded(tape: Tape, guards: str) -> list:
    """The equations to lower: guards (Python control flow on traced values) are refused, or
    dropped on request so that the model computes the branch the trace took."""
    if guards not in GUARD_CHOICES:
        raise ValueError(f"guards={guards!r}; choose one of {GUARD_CHOICES}")
    checks = [e for e in tape.eqns if e.prim.kind == "guard"]
    if checks and guards == "refuse":
        raise LoweringError(
            f"the tape holds {len(checks)} guard(s): the trace took a branch on a traced value, "
            f"first `{checks[0]}` at {checks[0].source or '?'}; an ONNX graph cannot check that a "
            "new input takes the same branch. Write the branch with np.where to export both, or "
            "pass guards='branch' to export the branch taken (the model is then wrong for inputs "
            "that would take another).")
    return [e for e in tape.eqns if e.prim.kind != "guard"]


def is_complex(x) -> bool:
    return x.aval.dtype.kind == "c"


def part_dtype(dtype) -> np.dtype:
    """The real dtype of a complex dtype's parts (a real dtype is its own)."""
    return np.empty((), dtype).real.dtype


def real_aval(aval: Aval) -> Aval:
    return Aval(aval.shape, part_dtype(aval.dtype))


def _refuse_complex(tape: Tape, eqns: list) -> None:
    """A complex tape is refused unless asked for as real pairs, naming its first complex value:
    ONNX has complex tensor types, but its standard operators only move them (Concat, Gather,
    Slice, Where); none computes on them (no Add, Mul, Exp or MatMul takes one)."""
    why = ("ONNX standard operators carry no complex tensors: the complex64/complex128 types "
           "exist, but no arithmetic operator (Add, Mul, Exp, MatMul, ...) takes them. Pass "
           "complex_parts=True to export each complex value as two real tensors (inputs and "
           "outputs <name>_re and <name>_im), or write the program on real arrays.")
    for v, label in zip(tape.inputs, tape.input_names):
        if is_complex(v):
            raise LoweringError(f"cannot export a complex tape: input {label} ({v!r}) is {v.aval}. {why}")
    for i, e in enumerate(eqns):
        if _touches_complex(e):
            made = ", ".join(f"{v!r}:{v.aval}" for v in e.outputs)
            raise LoweringError(
                f"cannot export a complex tape: the first complex equation is {e.prim.name} "
                f"making {made} (equation {i}, at {e.source or '?'}): `{e}`. {why}")


def _touches_complex(e) -> bool:
    return any(is_complex(x) for x in (*e.inputs, *e.outputs))


def _declare_value(g: Graph, v, names, declare: bool) -> list:
    """(name, aval) of a variable's value(s): a complex one is two real values."""
    pairs = list(zip(names, (real_aval(v.aval),) * 2)) if is_complex(v) else [(names, v.aval)]
    if declare:
        for n, aval in pairs:
            g.declare(n, aval)
    return pairs


def export(tape: Tape, lowerings: dict, complex_lowerings: dict | None = None, *, opset: int = OPSET,
           name: str = "tape", check: bool = True, guards: str = "refuse") -> onnx.ModelProto:
    """The model of ``tape``; with ``complex_lowerings`` (``ad.onnx.complex_parts``) complex
    values are pairs of real tensors, without them a complex tape is refused."""
    check_serializable(tape, "exported to ONNX")
    eqns = _unguarded(tape, guards)
    if complex_lowerings is None:
        _refuse_complex(tape, eqns)
    table = [complex_lowerings if complex_lowerings is not None and _touches_complex(e) else lowerings
             for e in eqns]
    missing, complex_missing = {}, False
    for i, (e, t) in enumerate(zip(eqns, table)):
        if e.prim not in t:
            complex_missing |= t is complex_lowerings
            kind = " with complex values" if t is complex_lowerings else ""
            missing.setdefault(e.prim.name + kind, []).append(f"equation {i} at {e.source or '?'}")
    if missing:
        raise LoweringError("no ONNX lowering for " + "; ".join(
            f"{p} ({len(w)}x, first {w[0]})" for p, w in missing.items())
            + ". The coverage table is in docs/serialization.md; add a lowering with "
              "@ad.onnx.lowering.lowers(primitive)"
            + (" (with complex values: to ad.onnx.COMPLEX_LOWERINGS)." if complex_missing else "."))
    g = Graph()
    taken: set = set()
    inputs = []
    for v, label in zip(tape.inputs, tape.input_names):
        base = _value_name(label, taken)
        g.names[v] = (_value_name(base + "_re", taken), _value_name(base + "_im", taken)) \
            if is_complex(v) else base
        for n, aval in _declare_value(g, v, g.names[v], declare=False):
            g.declared.add(n)
            inputs.append(helper.make_tensor_value_info(n, onnx_type(aval.dtype), list(aval.shape)))
    for e, t in zip(eqns, table):
        g.eqn = e
        try:
            outs = t[e.prim](g, e)
        except LoweringError as exc:
            raise LoweringError(f"{exc}: cannot lower {e} (at {e.source or '?'})") from None
        if isinstance(outs, str) or (len(e.outputs) == 1 and is_complex(e.outputs[0])):
            outs = (outs,)
        for v, n in zip(e.outputs, outs):
            g.names[v] = n
            _declare_value(g, v, n, declare=True)
    g.eqn = None
    outputs = []
    for x, label in zip(tape.outputs, output_names(tape)):
        if is_complex(x):
            value = np.asarray(x.value) if type(x) is Lit else None
            dt = part_dtype(x.aval.dtype)
            names = (g.const(value.real, dt), g.const(value.imag, dt)) if value is not None else g.names[x]
            labels = (f"{label}_re", f"{label}_im")
        else:
            names, labels = (g.x(x),), (label,)
        for n, out in zip(names, labels):
            aval = real_aval(x.aval)
            g.nodes.append(helper.make_node("Identity", [n], [out], name=f"output_{out}"))
            outputs.append(helper.make_tensor_value_info(out, onnx_type(aval.dtype), list(aval.shape)))
    graph = helper.make_graph(g.nodes, name, inputs, outputs, g.initializers, value_info=g.value_info,
                              doc_string=_describe(tape))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tapeviz", ir_version=helper.find_min_ir_version_for(
                                  [helper.make_opsetid("", opset)]))
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


def _describe(tape: Tape) -> str:
    if isinstance(tape, GradTape):
        return (f"gradient tape: inputs are the function's array arguments "
                f"({', '.join(tape.input_names)}); outputs are the function's {tape.n_values} "
                f"output(s) (out*), then the gradients in argument order (grad*)")
    return "tape exported by tapeviz: " + ", ".join(tape.input_names) + " -> " + \
           ", ".join(output_names(tape))

