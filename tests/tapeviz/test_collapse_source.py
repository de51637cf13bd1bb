"""``tapeviz.collapse(graph, by="source")``: one node per run of equations of one source, the
view of an imported ONNX model (one node per ONNX node, its pullback beside it). Structure of
the collapsed graph, labels escaped, layers of one shape folded, the drawing rendered by
Graphviz's dot. Cost: < 1 s."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import ad
import tapeviz
from tests.support.needs import module, needs
from tapeviz.draw import draw, select

has_dot = needs(shutil.which("dot") is not None, "Graphviz's dot program")

NASTY = 'enc<0>/fc&"1"\\x'          # a node name with every character a label must escape


def imported_mlp(n_hidden: int = 1):
    """A hand-built model: Gemm (named ``NASTY``) -> n_hidden x (Tanh -> MatMul) -> output."""
    onnx = module("onnx")
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(3, 4)), "w0"), numpy_helper.from_array(rng.normal(size=4), "b0")]
    nodes = [helper.make_node("Gemm", ["x", "w0", "b0"], ["h0"], name=NASTY)]
    for i in range(n_hidden):
        inits.append(numpy_helper.from_array(rng.normal(size=(4, 4)), f"w{i + 1}"))
        nodes += [helper.make_node("Tanh", [f"h{i}"], [f"a{i}"], name=f"layer{i}/act"),
                  helper.make_node("MatMul", [f"a{i}", f"w{i + 1}"], [f"h{i + 1}"], name=f"layer{i}/fc")]
    nodes.append(helper.make_node("Identity", [f"h{n_hidden}"], ["y"], name="out"))
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 4])], inits)
    prog = ad.from_onnx(onnx.helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]))

    def loss(x, params):
        return np.sum(prog.function(x, params) ** 2)
    return prog, ad.grad_tape(loss, *prog.inputs, prog.params, argnums=(0, 1))


@pytest.fixture(scope="module")
def mlp():
    return imported_mlp()


def test_one_node_per_onnx_node_and_phase(mlp):
    prog, gt = mlp
    c = tapeviz.collapse(tapeviz.to_networkx(gt), by="source")
    assert c.graph["by"] == "source"
    labels = [f"{n.op_type} ({n.name})" for n in prog.nodes if n.op_type != "Identity"]   # Identity: no equation
    nodes = {phase: [d["rule"] for _, d in c.nodes(data=True) if d["kind"] == "node" and d["phase"] == phase]
             for phase in ("forward", "backward")}
    assert nodes["forward"][:len(labels)] == labels              # then the loss's line of Python
    assert nodes["backward"][-len(labels):] == labels[::-1]       # pullbacks in reverse order
    assert sum(d["n_eqns"] for _, d in c.nodes(data=True)) == len(gt.eqns)
    group_of = c.graph["group_of"]
    for i, e in enumerate(gt.eqns):                  # each node holds one run of one source and phase
        d = c.nodes[group_of[f"eq/{e.outputs[0]!r}"]]
        if e.source is None:
            assert d["n_eqns"] == 1
            continue
        assert d["rule"] == d["of"] == e.source and d["phase"] == ("forward" if i < gt.n_forward else "backward")
    gemm = next(d for _, d in c.nodes(data=True) if d.get("rule") == f"Gemm ({NASTY})" and d["phase"] == "forward")
    assert gemm["provenance"] == "matmul, add" and gemm["aval"] == "f64[2,4]"
    for f, b in c.graph["align"]:                    # each forward node beside its own pullback
        assert c.nodes[f]["phase"] == "forward" and c.nodes[b]["phase"] == "backward"
        assert c.nodes[f]["of"] == c.nodes[b]["of"]
    assert len(c.graph["align"]) == len(labels) + 1
    assert {d["kind"] for *_, d in c.edges(data=True)} == {"data", "residual"}


def test_layers_of_one_shape_fold_across_nodes():
    """Three Tanh -> MatMul layers (different nodes, the same structure) fold, by source too."""
    _, gt = imported_mlp(n_hidden=4)
    c = tapeviz.collapse(tapeviz.to_networkx(gt), by="source")
    folds = [d for _, d in c.nodes(data=True) if d["kind"] == "fold"]
    assert [(d["phase"], d["count"]) for d in folds] == [("forward", 4), ("backward", 4)]
    assert folds[0]["motif"] == ["Tanh (layer0/act)", "MatMul (layer0/fc)"]
    assert folds[0]["of"] == "Tanh (layer0/act)" and folds[0]["last"] == "MatMul (layer3/fc)"
    assert not any(d["kind"] == "fold" for _, d in tapeviz.collapse(tapeviz.to_networkx(gt), min_repeats=5,
                                                                     by="source").nodes(data=True))


def test_by_is_checked(mlp):
    with pytest.raises(ValueError, match=r"by='name'; choose one of \('rule', 'source', 'scope'\)"):
        tapeviz.collapse(tapeviz.to_networkx(mlp[1]), by="name")


@pytest.mark.parametrize("labels", ["html", "text"])
def test_labels_escape_the_node_names(mlp, labels):
    c = tapeviz.collapse(tapeviz.to_networkx(mlp[1]), by="source")
    source = draw(c, select(c, "joint"), labels=labels).source
    assert NASTY not in source
    if labels == "html":
        assert "Gemm (enc&lt;0&gt;/fc&amp;&quot;1&quot;\\\\x)" in source
    else:
        assert 'Gemm (enc<0>/fc&amp;\\"1\\"\\\\x)' in source


@has_dot
def test_the_collapsed_drawing_renders_with_dot(mlp):
    c = tapeviz.collapse(tapeviz.to_networkx(mlp[1]), by="source")
    dot = draw(c, select(c, "joint")).source
    r = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert "Gemm (enc&lt;0&gt;/fc&amp;&quot;1&quot;\\x)" in r.stdout      # Graphviz read the label back
    assert r.stdout.count('class="node"') == c.number_of_nodes()
