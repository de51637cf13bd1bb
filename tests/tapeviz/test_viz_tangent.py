"""Forward mode in the graph model and its drawings: a linearization's tangent tape has a tangent
phase, pushforward blocks grouped by the primal variable they push forward, and is drawn in a
column of its own, in its own colour, with a legend entry; collapsed, each block is one node."""
import numpy as np
import pytest

import ad
import tapeviz
from tapeviz import labels


def f(x, W):
    return np.sum(np.tanh(W @ np.sin(x)) * x)


@pytest.fixture(scope="module")
def f_jvp():
    return ad.linearize(f, np.ones(3), np.eye(3))[1]


def test_the_tangent_tape_is_the_tangent_phase_grouped_by_primal(f_jvp):
    graph = tapeviz.to_networkx(f_jvp.tape)
    eqns = [d for d in graph.nodes.values() if d["kind"] == "equation"]
    assert {d["phase"] for d in eqns} == {"tangent"}
    assert set(graph.graph["pushforwards"]) == {"%2", "%3", "%4", "%5", "%6"}      # sin ... sum
    for of, ids in graph.graph["pushforwards"].items():
        assert {graph.nodes[i]["of"] for i in ids} == {of}
        assert graph.nodes[ids[0]]["provenance"].startswith(f"pushforward of {of} (")
    out = f_jvp.tape.outputs[0]
    assert graph.nodes[repr(out)]["tangent_of"] == "%6" and graph.nodes[repr(out)]["kind"] == "output"
    assert all(e["kind"] == "residual" for u, v, e in graph.edges(data=True)
               if graph.nodes[u]["phase"] == "forward" and e["kind"] != "result")


def test_the_drawing_has_a_tangent_column_and_legend(f_jvp):
    dot = tapeviz.to_graphviz(f_jvp.tape).source
    look = labels.KINDS["tangent"]
    assert 'subgraph "cluster_tangent"' in dot and 'subgraph "cluster_pushforward_%4"' in dot
    assert "pushforward of %4 (tanh)" in dot and look.frame in dot and look.text in dot
    assert labels.EDGES["tangent"][1] in dot                       # tangent data flow, in the legend
    assert tapeviz.to_graphviz(f_jvp.tape, view="tangent").source.count("cluster_pushforward_") == 5
    text = tapeviz.to_graphviz(f_jvp.tape, labels="text").source
    assert "teal frame: tangent value (forward mode)" in text
    with pytest.raises(ValueError, match="no tangent section"):
        tapeviz.to_graphviz(ad.trace(f, np.ones(3), np.eye(3)), view="tangent")


def test_collapsed_each_pushforward_block_is_one_node(f_jvp):
    graph = tapeviz.collapse(tapeviz.to_networkx(f_jvp.tape))
    blocks = {n: d for n, d in graph.nodes(data=True) if d["kind"] == "pushforward"}
    assert sorted(blocks) == [f"pushforward/%{i}" for i in range(2, 7)]
    assert blocks["pushforward/%3"]["n_eqns"] == 7 and blocks["pushforward/%3"]["rule"] == "matmul"
    assert "pushforward of %3" in tapeviz.to_graphviz(graph).source


def test_exports_and_listings_know_the_tangent_view(f_jvp, tmp_path):
    path = tapeviz.export(f_jvp.tape, tmp_path / "t.dot", view="tangent")
    assert "cluster_tangent" in path.read_text()
    assert "pushforward of %2 (sin)" in tapeviz.listing(f_jvp.tape, view="tangent")
    with pytest.raises(ValueError, match="no tangent section"):
        tapeviz.listing(ad.grad_tape(f, np.ones(3), np.eye(3)), view="tangent")
