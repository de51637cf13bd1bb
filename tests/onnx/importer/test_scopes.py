"""Scopes through ONNX: ad.to_onnx names each node by its equation's scope as a path, as PyTorch's
exporter names nodes by module (``/layer#1/MatMul``, unique names, deterministic), and
ad.from_onnx reads a node's name back as the scope of the equations it records, in If and Loop
bodies too. A tape exported and imported keeps its scopes; a PyTorch model of nested modules
imports with scopes equal to its module paths."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.examples.programs import mlp_example, mlp_loss, rnn_example, rnn_loss  # noqa: E402
from ad.onnx.graph import scope_path  # noqa: E402
from ad.onnx.importer.nodes import name_scope  # noqa: E402


@pytest.mark.parametrize("name, scope", [
    ("/layer1/layer1.0/conv1/Conv", ("layer1", "layer1.0", "conv1")),
    ("/blocks/blocks.0/fc/Gemm", ("blocks", "blocks.0", "fc")),
    ("/Mul", ()), ("Mul_3", ()), ("", ()), ("block/act", ("block",)), ("/a//b/Add_2", ("a", "b")),
    ("/cell#3/sig/Sigmoid", ("cell#3", "sig")), ("/a%2Fb/50%25/Tanh", ("a/b", "50%")),
    ("/100%/x%41/Relu", ("100%", "x%41")),          # other escapes are text, as torch wrote them
])
def test_a_node_name_says_its_scope(name, scope):
    assert name_scope(name) == scope


@pytest.mark.parametrize("scope", [(), ("layer#1",), ("a/b", "%2F", "50%", "%"), ("x", "é", "a b")])
def test_a_scope_path_reads_back_as_the_scope(scope):
    assert name_scope(scope_path(scope) + "MatMul_4") == scope


# -- export: node names -------------------------------------------------------------------------

def test_exported_node_names_are_scope_paths_unique_and_deterministic():
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    names = [n.name for n in ad.to_onnx(gt).graph.node]
    assert names == [n.name for n in ad.to_onnx(gt).graph.node]
    assert len(set(names)) == len(names)
    assert names[:5] == ["/layer#1/MatMul", "/layer#1/Add", "/layer#1/Tanh", "/layer#2/MatMul", "/layer#2/Add"]
    assert "/Mul" in names and "/log_softmax/Sub_1" in names and "/layer#1/MatMul_1" in names
    computed = [n for n in names if not n.startswith("output_")]
    assert all(re.fullmatch(r"(/[^/]+)*/[A-Za-z]+(_[0-9]+)?", n) for n in computed), computed
    paths = {n.rsplit("/", 1)[0] for n in computed}
    assert paths == {"/" + "/".join(e.scope) if e.scope else "" for e in gt.eqns
                     if e.prim.name not in ("full",)}


def _original_scopes(model, tape) -> dict:
    """Node name -> the scope of the tape equation it was lowered from (its doc string starts
    with that equation, ``%12:f64[3] = ...``)."""
    by_var = {str(v): e.scope for e in tape.eqns for v in e.outputs}
    out = {}
    for node in model.graph.node:
        if node.doc_string:
            out[node.name] = by_var[node.doc_string.split(":", 1)[0].split(",")[0]]
    return out


def _round_trip(tape):
    model = ad.to_onnx(tape)
    original = _original_scopes(model, tape)
    imported = ad.from_onnx(model).tape
    label = re.compile(r"\w+ \((.*)\)")
    checked = 0
    for e in imported.eqns:
        node = label.fullmatch(e.source).group(1)
        if node in original:
            assert e.scope == original[node], (e, node)
            checked += 1
    assert checked >= 0.9 * len(imported.eqns)
    return tape, imported


@pytest.mark.parametrize("program", ["mlp", "rnn"])
def test_a_tape_exported_and_imported_keeps_its_scopes(program):
    loss, example = {"mlp": (mlp_loss, mlp_example), "rnn": (rnn_loss, rnn_example)}[program]
    tape, imported = _round_trip(ad.grad_tape(loss, *example()))
    assert {e.scope for e in imported.eqns} == {e.scope for e in tape.eqns} - {()} | {()}
    if program == "mlp":            # the forward section: one node per equation, in order
        fwd = [(e.prim.name, e.scope) for e in tape.eqns[:tape.n_forward]]
        assert [(e.prim.name, e.scope) for e in imported.eqns[:len(fwd)]] == fwd


def test_scope_names_with_slashes_and_percent_signs_come_back():
    def f(x):
        with ad.scope("enc/dec"):
            with ad.scope("50%"):
                x = np.tanh(x)
            with ad.scope("%2F"):
                x = x * 2.0
        return np.sum(np.sin(x))
    tape = ad.trace(f, np.ones(3))
    _, imported = _round_trip(tape)
    assert [e.scope for e in imported.eqns] == [e.scope for e in tape.eqns] == [
        ("enc/dec", "50%"), ("enc/dec", "%2F"), (), ()]


# -- import: scopes from names, in subgraphs, and back to the caller's after the call ----------

def _vi(name, shape=None, elem=TensorProto.DOUBLE):
    return helper.make_tensor_value_info(name, elem, shape)


def test_nodes_in_if_and_loop_bodies_take_their_names_or_their_nodes_scope():
    """A body node named with a path has that scope; one named without (or unnamed) the scope of
    the If or Loop that holds it; what the Loop computes after its body (its stacked scan
    output) is the Loop's."""
    then_branch = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"], name="/enc/then/Mul")],
                                    "then", [], [_vi("t")])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="/enc/else/Neg")],
                                    "else", [], [_vi("e")])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("MatMul", ["v", "w"], ["vw"], name="mm"),
         helper.make_node("Tanh", ["vw"], ["v_out"], name="/enc/cell/Tanh"),
         helper.make_node("Identity", ["v_out"], ["v_scan"])],
        "body", [_vi("i", [], TensorProto.INT64), _vi("c_in", [], TensorProto.BOOL), _vi("v")],
        [_vi("c_out", [], TensorProto.BOOL), _vi("v_out"), _vi("v_scan")])
    inits = [numpy_helper.from_array(a, n) for a, n in (
        (np.eye(3) * 0.5, "w"), (np.array(2, np.int64), "two"), (np.array(True), "true"))]
    nodes = [helper.make_node("If", ["true"], ["h"], name="/enc/If", then_branch=then_branch,
                              else_branch=else_branch),
             helper.make_node("Loop", ["two", "true", "h"], ["last", "all"], name="/enc/Loop", body=body),
             helper.make_node("Add", ["last", "last"], ["y"], name="/head/Add")]
    graph = helper.make_graph(nodes, "g", [_vi("x", [2, 3])], [_vi("y"), _vi("all")], inits)
    prog = ad.from_onnx(helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]))
    got = [(e.source, e.prim.name, e.scope) for e in prog.tape.eqns]
    stacked = [("Loop (/enc/Loop)", prim, ("enc",)) for prim in ("reshape", "reshape", "concatenate")]
    assert got == [
        ("Mul (/enc/then/Mul)", "multiply", ("enc", "then")),
        ("MatMul (mm)", "matmul", ("enc",)), ("Tanh (/enc/cell/Tanh)", "tanh", ("enc", "cell")),
        ("MatMul (mm)", "matmul", ("enc",)), ("Tanh (/enc/cell/Tanh)", "tanh", ("enc", "cell")),
        *stacked, ("Add (/head/Add)", "add", ("head",)),
    ], got


def test_equations_after_the_imported_program_are_the_callers_again():
    model = ad.to_onnx(ad.trace(lambda x: np.tanh(x) * 2.0, np.ones(3)))
    prog = ad.from_onnx(model)

    def head(y):
        return np.sum(y ** 2)

    def f(x):
        return head(prog(x) + 1.0)
    tape = ad.trace(f, np.ones(3))
    scopes = [(e.prim.name, e.scope, e.source.split(" (")[0] if "(" in e.source else "user") for e in tape.eqns]
    assert scopes == [("tanh", (), "Tanh"), ("multiply", (), "Mul"), ("add", (), "user"),
                      ("power", ("head",), "user"), ("sum", ("head",), "user")], scopes


# -- PyTorch's module paths ---------------------------------------------------------------------

def test_a_pytorch_model_of_nested_modules_imports_with_its_module_paths():
    """A Sequential of blocks (each a Linear and a ReLU), a named submodule holding another and a
    Sequential head, exported by torch.onnx.export (the TorchScript exporter: it names nodes
    ``/blocks/blocks.0/fc/Gemm``): every equation's scope is the module path of the module
    that computed it, as the exporter spells it (a Sequential's child ``blocks.0``), and the
    traced function's own operations (``* 2``) have scope ``()``."""
    torch = optional_module("torch")
    from torch import nn
    from tests.support.torch_models import export

    class Block(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.fc, self.act = nn.Linear(n, n), nn.ReLU()

        def forward(self, x):
            return self.act(self.fc(x))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.inner = Block(4)

        def forward(self, x):
            return self.inner(torch.tanh(self.proj(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Block(4), Block(4))
            self.encoder = Encoder()
            self.head = nn.Sequential(nn.Linear(4, 2), nn.Sigmoid())

        def forward(self, x):
            return self.head(self.encoder(self.blocks(x))) * 2.0

    torch.manual_seed(0)
    net = Net().double().eval()
    x = torch.randn(3, 4, dtype=torch.float64)
    prog = ad.from_onnx(export(net, x))
    computed = {   # module path -> the scope its operations import with, and their ONNX ops
        "blocks.0.fc": (("blocks", "blocks.0", "fc"), {"Gemm"}),
        "blocks.0.act": (("blocks", "blocks.0", "act"), {"Relu"}),
        "blocks.1.fc": (("blocks", "blocks.1", "fc"), {"Gemm"}),
        "blocks.1.act": (("blocks", "blocks.1", "act"), {"Relu"}),
        "encoder": (("encoder",), {"Tanh"}),                  # its forward's own torch.tanh
        "encoder.proj": (("encoder", "proj"), {"Gemm"}),
        "encoder.inner.fc": (("encoder", "inner", "fc"), {"Gemm"}),
        "encoder.inner.act": (("encoder", "inner", "act"), {"Relu"}),
        "head.0": (("head", "head.0"), {"Gemm"}), "head.1": (("head", "head.1"), {"Sigmoid"}),
        "": ((), {"Mul"}),                                    # Net.forward's * 2
    }
    modules = dict(net.named_modules())
    assert set(computed) <= set(modules)
    assert {name for name, m in modules.items() if not list(m.children())} <= set(computed)
    tape = prog.tape
    ops: dict = {}
    for e in tape.eqns:
        ops.setdefault(e.scope, set()).add(e.source.split(" (")[0])
    assert ops == dict(computed.values())
    for e in tape.eqns:                          # the scope is the node name's path
        node = e.source.split(" (", 1)[1][:-1]
        assert "/" + "/".join(e.scope + (node.rsplit("/", 1)[1],)) == node
    tree = tape.scopes()
    assert [c.name for c in tree.children] == ["blocks", "encoder", "head"]
    assert [c.name for c in tree.find(("blocks",)).children] == ["blocks.0", "blocks.1"]
    assert [c.name for c in tree.find("blocks/blocks.0").children] == ["fc", "act"]
    np.testing.assert_allclose(prog(x.numpy()), net(x).detach().numpy(), rtol=1e-12)
    # the gradient's backward equations carry the module paths too, and export under them
    gt = ad.grad_tape(lambda x, p: np.sum(prog.function(x, p)), x.numpy(), prog.params, argnums=(0, 1))
    assert {e.scope for e in gt.backward.eqns} >= {("blocks", "blocks.0", "fc"), ("head", "head.1")}
    names = [n.name for n in ad.to_onnx(gt).graph.node]
    assert any(n.startswith("/blocks/blocks.0/fc/") for n in names)
