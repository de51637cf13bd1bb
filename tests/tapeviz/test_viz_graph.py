"""The graph model: a faithful, stably named copy of the tape, and the queries on it."""
import sys
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest

import ad
from ad.tape import Var
from tapeviz import (annotate, backward, collapse, forward, neighbourhood, pullback_block, residuals,
                     summarize, to_networkx, values_of)
from ad.examples import mlp_example, mlp_loss

KINDS = {"input", "parameter", "constant", "equation", "output", "residual", "intermediate", "cotangent"}


def test_every_equation_can_be_read_back_from_the_graph(mlp, mlp_graph):
    """Operands in order (variables and literals), results, primitive and provenance."""
    tape, _ = mlp
    g = mlp_graph
    for e in tape.eqns:
        d = g.nodes[f"eq/{e.outputs[0]!r}"]
        operands = [None] * len(e.inputs)
        for u, edge in g.pred[f"eq/{e.outputs[0]!r}"].items():
            for pos in edge["positions"]:
                operands[pos] = u if g.nodes[u]["kind"] != "constant" else g.nodes[u]["value"]
        expected = [repr(x) for x in e.inputs]
        assert operands == expected
        results = sorted(g.succ[f"eq/{e.outputs[0]!r}"], key=lambda v: g.succ[f"eq/{e.outputs[0]!r}"][v]["positions"])
        assert results == d["outputs"] == [repr(v) for v in e.outputs]
        assert d["primitive"] == e.prim.name and d["origin"] == e.origin.kind
        assert d["of"] == (repr(e.origin.of) if e.origin.of is not None else None)
        assert d["rule"] == e.origin.rule and d["provenance"] == e.origin.describe()
        assert d["phase"] == ("backward" if e.origin.is_backward else "forward")
        assert d["source"] == e.source


def test_kinds_labels_and_cotangents(mlp, mlp_graph):
    tape, _ = mlp
    g = mlp_graph
    assert {d["kind"] for _, d in g.nodes(data=True)} <= KINDS
    by_label = {d["label"]: n for n, d in g.nodes(data=True) if d.get("label")}
    params = [f"params[{k!r}]" for k in ("W0", "b0", "W1", "b1")]
    assert {g.nodes[by_label[p]]["kind"] for p in params} == {"parameter"}
    assert {g.nodes[by_label[p]]["kind"] for p in ("x", "y")} == {"input"}
    loss = repr(tape.outputs[0])
    assert g.nodes[loss]["kind"] == "output" and g.nodes[loss]["output"] == "out"
    for grad, i in zip(tape.outputs[1:], tape.wrt):
        d = g.nodes[repr(grad)]
        assert d["kind"] == "output" and d["output"] == f"grad {tape.input_names[i]}"
        assert d["cotangent_of"] == repr(tape.inputs[i])
    assert g.nodes[repr(tape.inputs[0])]["aval"] == "f64[4,8]"


def test_residuals_are_the_forward_values_the_backward_pass_reads(mlp, mlp_graph):
    tape, _ = mlp
    forward_vars = set(tape.inputs) | {v for e in tape.eqns[:tape.n_forward] for v in e.outputs}
    expected = {}
    for e in tape.eqns[tape.n_forward:]:
        for x in e.inputs:
            if type(x) is Var and x in forward_vars:
                expected.setdefault(repr(x), set()).add(f"eq/{e.outputs[0]!r}")
    found = residuals(mlp_graph)
    assert {r.var: set(r.consumers) for r in found} == expected
    producers = {repr(v): f"eq/{e.outputs[0]!r}" for e in tape.eqns for v in e.outputs}
    assert all(r.producer == producers.get(r.var) for r in found)
    flagged = {n for n, d in mlp_graph.nodes(data=True) if d.get("residual")}
    assert flagged == set(expected)
    assert all(mlp_graph.edges[r.var, c]["kind"] == "residual" for r in found for c in r.consumers)


def test_node_ids_and_attributes_are_the_same_in_a_second_run():
    def graph():
        args = mlp_example()
        tape = ad.grad_tape(mlp_loss, *args)
        return to_networkx(tape, values=values_of(tape, *args))
    a, b = graph(), graph()
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))
    assert list(a.edges(data=True)) == list(b.edges(data=True))


def test_the_graph_is_the_one_networkx_builds_from_its_nodes_and_edges(mlp, mlp_graph):
    """to_networkx fills the DiGraph's dicts itself: they hold what add_nodes_from and
    add_edges_from make of the same nodes and edges, in tape order (an equation's operands in
    its inputs' order), and networkx's algorithms and copies read them."""
    tape, _ = mlp
    g = mlp_graph
    edges = []                       # in tape order: each equation's operands, then its results
    for e in tape.eqns:
        eid = f"eq/{e.outputs[0]!r}"
        operands = [repr(x) if type(x) is Var else f"lit/{e.outputs[0]!r}.{pos}" for pos, x in enumerate(e.inputs)]
        edges += [(u, eid) for u in dict.fromkeys(operands)] + [(eid, repr(v)) for v in e.outputs]
    built = nx.DiGraph(**g.graph)
    built.add_nodes_from(g.nodes(data=True))
    built.add_edges_from((u, v, g.edges[u, v]) for u, v in edges)
    assert list(g.nodes(data=True)) == list(built.nodes(data=True))
    for n in g:
        assert list(g.pred[n].items()) == list(built.pred[n].items())
        assert list(g.succ[n].items()) == list(built.succ[n].items())
    assert [d["order"] for _, d in g.nodes(data=True)] == list(range(len(g)))
    assert all(g.succ[u][v] is g.pred[v][u] for u, v in g.edges)
    assert g.number_of_edges() == built.number_of_edges() and nx.is_directed_acyclic_graph(g)
    assert list(g.copy().edges(data=True)) == list(g.edges(data=True))


def test_a_variable_defined_twice_is_refused_by_name():
    tape = ad.trace(lambda x: np.sin(x) * 2.0, np.ones(3))
    again = ad.Tape(tape.inputs, tape.eqns + tape.eqns[:1], tape.outputs, input_names=tape.input_names)
    with pytest.raises(ValueError, match=r"%1 is defined twice .*ad.validate"):
        to_networkx(again)
    with pytest.raises(ValueError, match=r"%0 is defined twice"):
        to_networkx(ad.Tape(tape.inputs * 2, tape.eqns, tape.outputs, input_names=tape.input_names * 2))


def test_value_summaries_come_from_the_values(mlp, mlp_graph):
    tape, args = mlp
    values = values_of(tape, *args)
    loss, grads = tape(*args)
    assert values[repr(tape.outputs[0])] == loss
    np.testing.assert_array_equal(values[repr(tape.outputs[1])], grads["W0"])
    for name, value in values.items():
        assert mlp_graph.nodes[name]["value"] == summarize(value)


def test_summaries():
    assert summarize(np.float64(2.5)) == "2.5"
    assert summarize(np.array([1.0, -2.0])) == "[1, -2]"
    x = np.arange(10.0)
    assert summarize(x) == "mean 4.5 in [0, 9]"
    x[[1, 2]] = np.nan
    x[3] = np.inf
    assert summarize(x) == f"mean {np.mean(x[np.isfinite(x)]):.3g} in [0, 9]; 2 nan; 1 +inf"
    assert summarize(np.array([True, False, True, True, False])) == "3/5 true"
    assert summarize(np.zeros((0, 3))) == "empty"


def test_forward_and_backward_sections(mlp, mlp_graph):
    tape, _ = mlp
    fwd, bwd = forward(mlp_graph), backward(mlp_graph)
    fwd_eqns = {n for n, d in fwd.nodes(data=True) if d["kind"] == "equation"}
    bwd_eqns = {n for n, d in bwd.nodes(data=True) if d["kind"] == "equation"}
    assert fwd_eqns == {f"eq/{e.outputs[0]!r}" for e in tape.eqns[:tape.n_forward]}
    assert bwd_eqns == {f"eq/{e.outputs[0]!r}" for e in tape.eqns[tape.n_forward:]}
    boundary = {n for n, d in bwd.nodes(data=True) if d["phase"] == "forward"}
    assert boundary == {r.var for r in residuals(mlp_graph)}


def test_pullback_block_of_a_forward_variable(mlp, mlp_graph):
    tape, _ = mlp
    for e in tape.eqns[:tape.n_forward]:
        of = e.origin.of
        block = [b for b in tape.eqns[tape.n_forward:]
                 if b.origin.of is of and b.origin.kind in ("pullback", "project")]
        expected = [x for b in block for x in [f"eq/{b.outputs[0]!r}", *map(repr, b.outputs)]]
        assert pullback_block(mlp_graph, of) == expected
    assert any(pullback_block(mlp_graph, e.outputs[0]) for e in tape.eqns[:tape.n_forward])


def test_neighbourhood_counts_equations_as_steps(mlp, mlp_graph):
    tape, _ = mlp
    e = tape.eqns[1]                                   # %7 = add %6 %1
    name = repr(e.outputs[0])
    assert neighbourhood(mlp_graph, name, 0) == [name]
    near = set(neighbourhood(mlp_graph, name, 1))
    consumers = {f"eq/{c.outputs[0]!r}" for c in tape.eqns if any(x is e.outputs[0] for x in c.inputs)}
    assert {f"eq/{name}", *map(repr, e.inputs)} | consumers <= near
    assert all(set(mlp_graph.nodes[c]["outputs"]) <= near for c in consumers)   # equations come whole
    assert set(neighbourhood(mlp_graph, name, 2)) > near
    order = [mlp_graph.nodes[n]["order"] for n in neighbourhood(mlp_graph, name, 2)]
    assert order == sorted(order)
    assert neighbourhood(mlp_graph, f"eq/{name}", 0) == [f"eq/{name}", name]
    with pytest.raises(KeyError, match="not a node"):
        neighbourhood(mlp_graph, "%99999", 1)


def test_deep_tapes_need_no_recursion(big):
    """10,000 equations in one chain: building, windows and collapsing are iterative."""
    tape, _ = big
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        g = to_networkx(tape)
        far = neighbourhood(g, repr(tape.inputs[0]), 2000)
        folded = collapse(g)
    finally:
        sys.setrecursionlimit(limit)
    assert len(far) > 4000
    assert folded.number_of_nodes() < 20


def test_collapsed_view_has_one_node_per_rule_instance(mlp, mlp_graph):
    tape, _ = mlp
    c = collapse(mlp_graph)
    instances = {repr(e.origin.of) for e in tape.eqns[:tape.n_forward]}
    blocks = {repr(e.origin.of) for e in tape.eqns[tape.n_forward:] if e.origin.kind in ("pullback", "project")}
    assert {n for n, d in c.nodes(data=True) if d["kind"] == "rule"} == {f"rule/{v}" for v in instances}
    assert {n for n, d in c.nodes(data=True) if d["kind"] == "pullback"} == {f"pullback/{v}" for v in blocks}
    assert sum(d["n_eqns"] for _, d in c.nodes(data=True)) == len(tape.eqns)
    group_of = c.graph["group_of"]
    for e in tape.eqns:                                # every equation lands in exactly one node
        assert f"eq/{e.outputs[0]!r}" in c.nodes[group_of[f"eq/{e.outputs[0]!r}"]]["members"]
    assert {d["kind"] for _, _, d in c.edges(data=True)} == {"data", "residual", "accumulate"}
    assert all(c.nodes[f]["phase"] == "forward" and c.nodes[b]["kind"] == "pullback"
               for f, b in c.graph["align"])


def test_repeated_identical_blocks_fold_with_a_count(big):
    tape, g = big
    c = collapse(g)
    folds = {d["phase"]: d for _, d in c.nodes(data=True) if d["kind"] == "fold"}
    assert folds["forward"]["count"] == folds["backward"]["count"] == 1430
    assert folds["forward"]["motif"] == ["sin", "multiply", "add"]
    assert sum(d["n_eqns"] for _, d in c.nodes(data=True)) == len(tape.eqns)


def test_only_identical_blocks_fold():
    def steps(sizes):
        def f(x):
            for n in sizes:
                x = np.tanh(x[:n] * 1.5)
                x = np.concatenate([x, x])
            return np.sum(x)
        return f

    def folds(sizes, x):
        c = collapse(to_networkx(ad.grad_tape(steps(sizes), x)))
        return [d["count"] for _, d in c.nodes(data=True) if d["kind"] == "fold"]
    assert folds((3, 3, 3, 3), np.ones(6)) == [4, 4]          # forward and backward
    assert folds((3, 4, 3, 4), np.ones(4)) == []              # same primitives, other shapes


def test_plain_tapes_have_no_backward_section():
    tape = ad.trace(lambda x: np.sum(np.sin(x) * 2.0), np.ones(3))
    g = to_networkx(tape)
    assert not g.graph["gradient"]
    assert {d["phase"] for _, d in g.nodes(data=True)} == {"forward"}
    assert {d["kind"] for _, d in g.nodes(data=True)} == {"input", "intermediate", "output", "equation",
                                                           "constant"}


def test_check_failures_attach_to_the_nodes_they_name(mlp):
    tape, _ = mlp
    fail = SimpleNamespace
    report = SimpleNamespace(failures=[
        fail(name="linearity", message="pullback is not linear", equation=tape.eqns[20]),
        fail(name="fd", message="mismatch", equation=repr(tape.eqns[3].outputs[0])),
        fail(name="closure=lifted", message="differ", equation=None)])
    g = to_networkx(tape, checks=report)
    assert g.nodes[f"eq/{tape.eqns[20].outputs[0]!r}"]["failures"] == [("linearity", "pullback is not linear")]
    assert g.nodes[f"eq/{tape.eqns[3].outputs[0]!r}"]["failures"] == [("fd", "mismatch")]
    assert [f[0] for f in g.graph["failures"]] == [f"eq/{tape.eqns[20].outputs[0]!r}",
                                                    f"eq/{tape.eqns[3].outputs[0]!r}", None]
    again = annotate(to_networkx(tape), report)
    assert again.graph["failures"] == g.graph["failures"]
    with pytest.raises(TypeError, match="failures"):
        annotate(g, object())


def test_a_checker_report_marks_the_culprit_equation():
    """The checker names equations as printed ("%1:f64[4] = sin %0"); a wrong rule for sin
    must mark the sin equation, and the drawing must show it failed."""
    from tapeviz import to_graphviz
    from tapeviz.labels import FAILED

    def f(x):
        return np.sum(np.sin(x) * 2.0)

    def wrong_sin(x):
        return np.sin(x), lambda dy: dy * np.cos(x) * 1.5
    x = np.linspace(0.1, 1.0, 4)
    with ad.using_rule(np.sin, wrong_sin):
        report = ad.check(f, x)
        tape = ad.grad_tape(f, x)
    assert not report.ok
    g = to_networkx(tape, checks=report)
    sin = next(f"eq/{e.outputs[0]!r}" for e in tape.eqns if e.prim.name == "sin")
    marked = {n for n, d in g.nodes(data=True) if d.get("failures")}
    assert marked == {sin}
    assert FAILED.frame in next(line for line in to_graphviz(g).source.splitlines()
                                if line.strip().startswith(f'"{sin.removeprefix("eq/")}" ['))
