"""Scopes (``Eqn.scope``, the user's calls) in the graph model and the pictures: nodes carry them,
``collapse(by="scope", depth=k)`` draws a call as one node beside its pullback (a loop's calls
folded), the DOT nests a cluster per path component (escaped, deterministic), the CLI's switches,
and the docs' figure ``docs/figures/mlp_scopes.svg`` is what the code draws today (regenerate it
with ``python -m tests.tapeviz.test_scopes_graph``). Cost: about 2 s."""
from __future__ import annotations

import re
import shutil
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ad
import tapeviz
from ad.examples.programs import mlp_example, mlp_loss, rnn_example, rnn_loss
from tapeviz.commands.cli import main
from tests.support import ROOT
from tests.support.needs import needs

has_dot = needs(shutil.which("dot") is not None, "Graphviz's dot program")

HOSTILE = '<b>&"{x}|\'\\N]'          # a scope name with every character a label must escape
SVG = "{http://www.w3.org/2000/svg}"
FIGURE = ROOT / "docs" / "figures" / "mlp_scopes.svg"
FIGURE_ARGV = ["export", "ad.examples:mlp_loss", "--example", "ad.examples:mlp_example", "--optimize",
               "--renderer", "dot", "--title", "The MLP's gradient tape: a cluster per call (layer#1, layer#2, "
               "log_softmax), its pullback in one beside it"]


def dense(h, W):
    return np.tanh(h @ W)


def block(h, W):
    h = dense(h, W)
    h = h * 2.0                  # block's own line, between its two calls
    return dense(h, W)


def deep(W, x):
    """Scopes two deep (block#k/dense#j) and a hostile explicit scope around a lambda."""
    h = x
    for _ in range(3):
        h = block(h, W)
    with ad.scope(HOSTILE):
        h = (lambda z: z * 3.0)(h)
    return np.sum(h)


@pytest.fixture(scope="module")
def rnn():
    gt = ad.grad_tape(rnn_loss, *rnn_example())
    return gt, tapeviz.to_networkx(gt)


@pytest.fixture(scope="module")
def mlp_scoped():
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    return gt, tapeviz.to_networkx(gt)


@pytest.fixture(scope="module")
def nested():
    gt = ad.grad_tape(deep, np.ones((3, 3)) / 3, np.ones((2, 3)))
    return gt, tapeviz.to_networkx(gt)


def calls(c) -> list[tuple[str, str]]:
    """(phase, name) of the call nodes of a collapsed graph, in order."""
    return [(d["phase"], d["name"]) for _, d in c.nodes(data=True) if d["kind"] == "scope" and d["of"]]


# -- the model -----------------------------------------------------------------------------------

def test_every_node_carries_its_scope(mlp_scoped):
    gt, g = mlp_scoped
    for e in gt.eqns:
        node = "eq/" + repr(e.outputs[0])
        assert g.nodes[node]["scope"] == e.scope
        assert all(g.nodes[repr(v)]["scope"] == e.scope for v in e.outputs)   # a variable: its producer's
        for pos, x in enumerate(e.inputs):
            if type(x) is ad.Lit:
                assert g.nodes[f"{node.replace('eq/', 'lit/')}.{pos}"]["scope"] == e.scope   # a literal: its reader's
    assert all(g.nodes[repr(v)]["scope"] == () for v in gt.inputs)
    assert {d["scope"] for _, d in g.nodes(data=True)} == {(), ("layer#1",), ("layer#2",), ("log_softmax",)}
    backward = {g.nodes[n]["scope"] for n, d in g.nodes(data=True) if d["phase"] == "backward"}
    assert ("layer#1",) in backward              # a pullback is in the scope of what it differentiates


# -- collapse by scope -----------------------------------------------------------------------------

def test_the_rnn_loop_folds_into_a_handful_of_nodes(rnn):
    gt, g = rnn
    c = tapeviz.collapse(g, by="scope")
    assert c.graph["by"] == "scope"
    # 6 inputs; forward: the loop and the loss's own lines; backward: the loss's pullback, the last
    # and the first step's pullbacks, the 38 between folded, and the three gradients' last sums
    assert c.number_of_nodes() == 15             # as the README says
    folds = [d for _, d in c.nodes(data=True) if d["kind"] == "fold"]
    assert [(d["phase"], d["count"], d["rule"]) for d in folds] == [
        ("forward", 40, "getitem > cell"), ("backward", 38, "cell > add > add > add")]
    assert (folds[0]["head"], folds[0]["of"], folds[0]["last"]) == ("cell", "cell#1", "cell#40")
    assert calls(c) == [("backward", "cell#40"), ("backward", "cell#1")]
    assert sum(d["n_eqns"] for _, d in c.nodes(data=True)) == len(gt.eqns)
    assert all(c.graph["group_of"]["eq/" + repr(e.outputs[0])] in c for e in gt.eqns)
    fold = next(n for n, d in c.nodes(data=True) if d["kind"] == "fold")
    assert (fold, "scope/%262") in c.graph["align"]          # the loop beside the last step's pullback
    src = tapeviz.to_graphviz(g, collapse="scope").source
    assert "\u00d740 getitem &gt; cell" in src and "\u00d738 pullback: cell &gt; add" in src
    assert src.count('" [label=<') == c.number_of_nodes()


def test_a_deeper_depth_never_splits_a_call_without_calls(rnn, mlp_scoped):
    for _, g in (rnn, mlp_scoped):
        one, two = (tapeviz.collapse(g, by="scope", depth=k) for k in (1, 2))
        assert list(one.nodes) == list(two.nodes) and list(one.edges) == list(two.edges)


def test_the_mlp_draws_a_node_per_layer_call_beside_its_pullback(mlp_scoped):
    gt, g = mlp_scoped
    c = tapeviz.collapse(g, by="scope")
    names = [("forward", n) for n in ("layer#1", "layer#2", "log_softmax")]
    assert calls(c) == names + [("backward", n) for n in ("log_softmax", "layer#2", "layer#1")]
    node = {(d["phase"], d["name"]): n for n, d in c.nodes(data=True) if d["kind"] == "scope"}
    for _, name in names:
        assert (node["forward", name], node["backward", name]) in c.graph["align"]
    assert c.nodes[node["forward", "layer#1"]]["provenance"] == "matmul, add, tanh"
    assert c.nodes[node["backward", "layer#1"]]["output"] == ["grad params['b0']", "grad params['W0']"]
    own = [d for _, d in c.nodes(data=True) if d["kind"] == "scope" and d["of"] is None]   # the loss's own lines
    assert [(d["phase"], d["name"], d["rule"]) for d in own] == [
        ("forward", "", "multiply, sum, mean, negative"),
        ("backward", "", "full, negative, multiply, reshape, broadcast_to")]
    assert c.number_of_nodes() == 6 + 8


def test_depth_two_draws_the_calls_inside_calls(nested):
    gt, g = nested
    one = tapeviz.collapse(g, by="scope", depth=1)
    fold = next(d for _, d in one.nodes(data=True) if d["kind"] == "fold")
    assert (fold["count"], fold["rule"], fold["of"], fold["last"]) == (3, "block", "block#1", "block#3")
    two = tapeviz.collapse(g, by="scope", depth=2)
    fold = next(d for _, d in two.nodes(data=True) if d["kind"] == "fold")
    assert (fold["count"], fold["rule"], fold["scope"]) == (3, "block/dense > multiply > block/dense", ())
    backward = [(d["name"], d["scope"]) for _, d in two.nodes(data=True) if d["kind"] == "scope"
                and d["phase"] == "backward" and d["name"].startswith("block#3")]
    # the calls, and block's own line between them: each drawn in block#3
    assert backward == [("block#3/dense#2", ("block#3",)), ("block#3", ("block#3",)),
                        ("block#3/dense#1", ("block#3",))]
    three = tapeviz.collapse(g, by="scope", depth=3)
    assert list(three.nodes) == list(two.nodes)
    src = tapeviz.to_graphviz(g, collapse="scope", depth=2).source
    # the forward calls of block are one fold, in no call; their pullbacks are not folded
    assert [label for label in re.findall(r'subgraph "cluster_scope_\w+" \{\n\s*graph \[label=<([^>]*)>', src)] == [
        "&lt;b&gt;&amp;&quot;{x}|&#x27;\\\\N]",
        "pullback of &lt;b&gt;&amp;&quot;{x}|&#x27;\\\\N]", "pullback of block#3", "pullback of block#2",
        "pullback of block#1"]


def test_by_and_depth_are_checked(mlp_scoped):
    _, g = mlp_scoped
    for depth in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="depth="):
            tapeviz.collapse(g, by="scope", depth=depth)
    with pytest.raises(ValueError, match=r"collapse='layers'; pass True \(by rule\) or one of"):
        tapeviz.to_graphviz(g, collapse="layers")
    assert tapeviz.to_graphviz(g, collapse=True).source == tapeviz.to_graphviz(g, collapse="rule").source


# -- clusters --------------------------------------------------------------------------------------

def cluster_tree(source: str) -> tuple[dict, dict]:
    """(cluster -> (parent, label), node -> its innermost cluster) read back from DOT source."""
    clusters, home, stack = {}, {}, [None]
    lines = source.splitlines()
    for i, line in enumerate(lines):
        opened = re.match(r'\s*subgraph "([^"]+)" \{$', line)
        if opened:
            label = re.search(r"label=(<.*?>|\"[^\"]*\") style", lines[i + 1]).group(1)
            clusters[opened.group(1)] = (stack[-1], label[1:-1])
            stack.append(opened.group(1))
        elif line.strip() == "}" and len(stack) > 1:
            stack.pop()
        else:
            node = re.match(r'\s*"([^"]+)" \[label=', line)
            if node:
                home[node.group(1)] = stack[-1]
    return clusters, home


def scope_chain(clusters: dict, cluster) -> list[str]:
    """The labels of the scope clusters from the outermost to ``cluster``."""
    chain = []
    while cluster is not None:
        parent, label = clusters[cluster]
        if cluster.startswith("cluster_scope_"):
            chain.insert(0, label)
        cluster = parent
    return chain


def test_clusters_nest_per_path_component(nested):
    gt, g = nested
    src = tapeviz.to_graphviz(g).source
    clusters, home = cluster_tree(src)
    for e in gt.eqns:
        name = repr(e.outputs[0])
        prefix = {"forward": "", "backward": "pullback of "}[e.origin.kind.phase]
        expected = [prefix + tapeviz.labels.cell_text(part, None) for part in e.scope]
        assert scope_chain(clusters, home[name]) == expected, (name, e.scope)
        top = home[name]
        while clusters[top][0] is not None:
            top = clusters[top][0]
        assert top == f"cluster_{e.origin.kind.phase}"
    # a pullback block sits inside the scope cluster of the call it differentiates
    inner = next(e for e in gt.eqns if e.scope == ("block#2", "dense#1") and e.origin.kind == "pullback")
    block = home[repr(inner.outputs[0])]
    assert block.startswith("cluster_pullback_")
    assert clusters[block][1] == f"pullback of {inner.origin.of!r} ({inner.origin.rule})"
    assert scope_chain(clusters, block) == ["pullback of block#2", "pullback of dense#1"]


def test_scopes_are_drawn_by_default_only_when_there_are_any(mlp_scoped):
    _, g = mlp_scoped
    on, off = tapeviz.to_graphviz(g).source, tapeviz.to_graphviz(g, scopes=False).source
    assert on.count('subgraph "cluster_scope_') == 6 and "cluster_scope_" not in off
    assert tapeviz.to_graphviz(g, scopes=True).source == on
    plain = ad.grad_tape(lambda x: np.sum(np.sin(x) * x), np.ones(3))
    assert "cluster_scope_" not in tapeviz.to_graphviz(plain).source
    assert tapeviz.to_graphviz(plain).source == tapeviz.to_graphviz(plain, scopes=True).source
    rule = tapeviz.to_graphviz(g, collapse=True).source           # collapsed by rule: nodes in their calls
    assert rule.count('subgraph "cluster_scope_') == 6
    assert "cluster_scope_" not in tapeviz.to_graphviz(g, collapse="scope").source   # every call a node


def test_forward_mode_draws_pushforwards_in_their_scopes():
    _, f_jvp = ad.linearize(lambda W, x: deep(W, x), np.ones((3, 3)) / 3, np.ones((2, 3)))
    clusters, home = cluster_tree(tapeviz.to_graphviz(f_jvp.tape).source)
    labels = [label for name, (_, label) in clusters.items() if name.startswith("cluster_scope_tangent")]
    assert "pushforward of block#1" in labels and "pushforward of dense#2" in labels


@pytest.mark.parametrize("labels", ["html", "text"])
def test_hostile_scope_names_are_escaped(nested, labels):
    _, g = nested
    for options in ({}, {"collapse": "scope", "depth": 2}, {"collapse": True}):
        src = tapeviz.to_graphviz(g, labels=labels, **options).source
        assert HOSTILE not in src and "{x}|" in src
        if labels == "html":        # HTML-like labels: entities (a tooltip is a quoted string, written as is)
            assert "&lt;b&gt;&amp;&quot;{x}|&#x27;\\\\N]" in src and "&lt;lambda&gt;" in src
            assert "<lambda>" not in re.sub(r'tooltip="(?:[^"\\]|\\.)*"', "", src)
        else:
            assert "label=<" not in src
        for line in src.splitlines():             # never in an id: only in labels and tooltips
            assert not re.match(r'\s*(subgraph )?"[^"]*(lambda|\{x\})', line), line


@has_dot
@pytest.mark.filterwarnings("ignore::tapeviz.RenderWarning")   # Graphviz 2.43 routes one dashed edge straight
def test_hostile_scope_names_render_literally(nested, tmp_path):
    _, g = nested
    for labels, options in (("html", {}), ("html", {"collapse": "scope", "depth": 2})):
        svg = tapeviz.export(g, tmp_path / "h.svg", renderer="dot", **options).read_bytes()
        texts = [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]
        assert f"pullback of {HOSTILE}" in texts and any("<lambda>" in t for t in texts)


def test_the_same_input_gives_the_same_bytes(rnn, nested):
    def sources():
        out = []
        for f, args in ((rnn_loss, rnn_example()), (deep, (np.ones((3, 3)) / 3, np.ones((2, 3))))):
            gt = ad.grad_tape(f, *args)
            g = tapeviz.to_networkx(gt, values=tapeviz.values_of(gt, *args))
            out += [tapeviz.to_graphviz(g).source, tapeviz.to_graphviz(g, collapse="scope").source,
                    tapeviz.to_graphviz(g, collapse="scope", depth=2, labels="text").source,
                    tapeviz.to_graphviz(g, window="%20:2").source]
        return out
    assert sources() == sources()


# -- the command line ------------------------------------------------------------------------------

def test_cli_switches(tmp_path, capsys):
    rnn = ["export", "ad.examples.programs:rnn_loss", "--example", "ad.examples.programs:rnn_example",
           "--format", "dot"]
    assert main(rnn + ["--collapse-by", "scope"]) == 0
    out = capsys.readouterr().out
    assert "\u00d740 getitem &gt; cell" in out and "cluster_scope_" not in out
    assert main(rnn + ["--collapse-by", "scope", "--depth", "2"]) == 0
    assert capsys.readouterr().out == out                       # nothing deeper than the calls of cell
    mlp = ["export", "ad.examples:mlp_loss", "--example", "ad.examples:mlp_example", "--format", "dot"]
    assert main(mlp) == 0
    assert capsys.readouterr().out.count('subgraph "cluster_scope_') == 6      # default: on
    assert main(mlp + ["--no-scopes"]) == 0
    assert "cluster_scope_" not in capsys.readouterr().out
    assert main(mlp + ["--collapse"]) == 0 and main(mlp + ["--collapse-by", "rule"]) == 0
    by_flag, by_name = capsys.readouterr().out.split("digraph tape {")[1:]
    assert by_flag == by_name and "pullback of %9" in by_flag
    assert main(mlp + ["--collapse-by", "source", "--scopes"]) == 0
    assert "cluster_forward" in capsys.readouterr().out
    for bad, message in ((["--depth", "2"], "--collapse-by scope"),
                         (["--collapse-by", "scope", "--depth", "0"], "1 or more"),
                         (["--collapse", "--collapse-by", "scope"], "--collapse is --collapse-by rule")):
        assert main(mlp + bad) == 1
        assert message in capsys.readouterr().err


# -- the docs' figure ------------------------------------------------------------------------------

def _graphviz_version(svg: bytes) -> str:
    return re.search(rb"Generated by graphviz version ([^\n]*)", svg).group(1).decode().strip()


@has_dot
def test_the_docs_figure_is_what_the_code_draws(tmp_path):
    fresh = tmp_path / "mlp_scopes.svg"
    assert draw_figure(fresh) == 0
    new, committed = fresh.read_bytes(), FIGURE.read_bytes()
    texts = {name: [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")] for name, svg in
             (("new", new), ("committed", committed))}
    stale = "docs/figures/mlp_scopes.svg is out of date: run python -m tests.tapeviz.test_scopes_graph"
    assert texts["new"] == texts["committed"], stale
    if _graphviz_version(new) == _graphviz_version(committed):      # another Graphviz lays out otherwise
        assert new == committed, stale
    titles = [t.text for t in ET.fromstring(committed).iter(f"{SVG}title")]
    for label in ("layer#1", "layer#2", "log_softmax", "pullback of layer#1"):
        assert label in texts["committed"]
    assert sum(t.startswith("cluster_scope_") for t in titles) == 6


def draw_figure(out) -> int:
    """The docs' figure, its source lines named from the repository (the tooltips say
    ``ad/examples/programs.py:14``, not where this clone happens to be)."""
    code = main(FIGURE_ARGV + ["--out", str(out)])
    svg = out.read_bytes()
    out.write_bytes(svg.replace(f"{ROOT}/".encode(), b""))
    return code


if __name__ == "__main__":         # regenerate the docs' figure
    sys.exit(draw_figure(FIGURE))
