"""The DOT source: layout, labels, colours, highlights, determinism. No Graphviz binary needed."""
import re
import subprocess
import sys

import numpy as np
import pytest

import ad
from tapeviz import collapse, primitive_colour, to_graphviz, to_networkx, values_of
from ad.examples import mlp_example, mlp_loss
from tapeviz.labels import CURRENT, FAILED, KINDS, TINT, cell_text

HOSTILE = '<b>&"{x}|\'\\N]'


def node_statement(source: str, name: str) -> str:
    return next(line for line in source.splitlines() if line.strip().startswith(f'"{name}" ['))


def test_same_input_gives_byte_identical_dot():
    def sources():
        args = mlp_example()
        tape = ad.grad_tape(mlp_loss, *args)
        graph = to_networkx(tape, values=values_of(tape, *args))
        return [to_graphviz(graph, view).source for view in ("joint", "forward", "backward")] + [
            to_graphviz(graph, collapse=True).source, to_graphviz(graph, window="%9:2").source]
    assert sources() == sources()


def test_forward_left_backward_right_with_a_cluster_per_pullback(mlp, mlp_graph):
    tape, _ = mlp
    src = to_graphviz(mlp_graph).source
    assert src.index('subgraph "cluster_forward"') < src.index('subgraph "cluster_backward"')
    assert "newrank=true" in src
    blocks = {(repr(e.origin.of), e.origin.rule) for e in tape.eqns[tape.n_forward:]
              if e.origin.kind in ("pullback", "project")}
    for of, rule in blocks:
        assert f'subgraph "cluster_pullback_{of}"' in src
        assert f"pullback of {of} ({rule})" in src
        # aligned: the forward equation and its block's first equation share a rank
        first = next(e for e in tape.eqns[tape.n_forward:]
                     if repr(e.origin.of) == of and e.origin.kind in ("pullback", "project"))
        assert f'{{rank=same; "{of}"; "{first.outputs[0]!r}";}}' in src


def test_residual_edges_are_dashed_and_do_not_constrain(mlp_graph):
    src = to_graphviz(mlp_graph).source
    residual = [line for line in src.splitlines() if 'style="dashed"' in line]
    assert residual and all('constraint="false"' in line for line in residual)
    from tapeviz import residuals
    expected = {(r.var, c) for r in residuals(mlp_graph) for c in r.consumers}
    drawn = set()
    for line in residual:
        tail, head = re.match(r'\s*"([^"]+)" -> "([^"]+)"', line).groups()
        drawn.add((tail, head))
    # a consumer is drawn merged with its only result: %n for eq/%n
    assert {(v, c.removeprefix("eq/")) for v, c in expected} == drawn


def test_backward_edges_run_upwards_in_the_joint_view_only(mlp, mlp_graph):
    tape, _ = mlp
    e = tape.eqns[tape.n_forward + 2]          # a backward equation reading a backward value
    src, dst = repr(e.inputs[0]), repr(e.outputs[0])
    assert f'"{dst}" -> "{src}" [color="#7c3aed" dir="back"]' in to_graphviz(mlp_graph).source
    assert f'"{src}" -> "{dst}" [color="#7c3aed"]' in to_graphviz(mlp_graph, "backward").source


def test_labels_say_name_type_value_and_provenance(mlp, mlp_graph):
    tape, args = mlp
    src = to_graphviz(mlp_graph).source
    w1 = node_statement(src, repr(tape.inputs[0]))
    assert cell_text("params['W0']") in w1 and "f64[4,8]" in w1 and "mean" in w1
    grad = node_statement(src, repr(tape.outputs[1]))
    assert cell_text("grad params['W0']") in grad and f"cotangent of {tape.inputs[0]!r}" in grad
    acc = next(e for e in tape.eqns if e.origin.kind == "accumulate")
    assert e_describe(acc) in node_statement(src, repr(acc.outputs[0]))
    scaled = next(e for e in tape.eqns if any(type(x) is ad.Lit for x in e.inputs))
    assert "with " in node_statement(src, repr(scaled.outputs[0]))


def e_describe(e):
    return cell_text(e.origin.describe())


def test_each_primitive_has_a_stable_colour(mlp_graph):
    src = to_graphviz(mlp_graph).source
    for prim in ("matmul", "tanh", "add", "exp"):
        assert f'BGCOLOR="{primitive_colour(prim)}"><B>{prim}</B>' in src
    code = "from tapeviz.labels import primitive_colour as c; print(c('matmul'), c('tanh'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}, cwd=sys.path[0] or ".")
    assert other.stdout.split() == [primitive_colour("matmul"), primitive_colour("tanh")]
    names = ["add", "multiply", "matmul", "tanh", "exp", "log", "sum", "max", "transpose", "reshape"]
    assert len({primitive_colour(n) for n in names}) == len(names)


def test_legend_lists_what_is_drawn(mlp_graph):
    legend = to_graphviz(mlp_graph, "forward").source.split("label=<<TABLE BORDER=\"0\"")[1]
    for kind in ("input", "parameter", "residual", "output"):
        assert cell_text(KINDS[kind].text) in legend
    assert cell_text(KINDS["cotangent"].text) not in legend            # nothing backward in this view
    assert ">matmul<" in legend and ">tanh<" in legend


def test_current_step_tint_and_failed_checks_are_marked(mlp):
    tape, _ = mlp
    from types import SimpleNamespace
    bad = tape.eqns[tape.n_forward + 3]
    report = SimpleNamespace(failures=[SimpleNamespace(name="linearity", message="off by 2x", equation=bad)])
    g = to_networkx(tape, checks=report)
    cur, tinted = repr(tape.eqns[2].outputs[0]), repr(tape.eqns[1].outputs[0])
    src = to_graphviz(g, current=cur, tint={tinted}).source
    assert f'BORDER="{CURRENT.width}"' in node_statement(src, cur) and CURRENT.frame in node_statement(src, cur)
    assert f'BGCOLOR="{TINT}"' in node_statement(src, tinted)
    failed = node_statement(src, repr(bad.outputs[0]))
    assert FAILED.frame in failed and "linearity" in failed and "off by 2x" in failed
    assert cell_text(FAILED.text) in src and cell_text(CURRENT.text) in src
    custom = to_graphviz(g, tint={tinted: "#123456"}).source
    assert 'BGCOLOR="#123456"' in node_statement(custom, tinted)


def test_hostile_names_are_escaped_in_dot():
    tape = ad.grad_tape(lambda p: np.sum(np.sin(p[HOSTILE]) * 2.0), {HOSTILE: np.arange(3.0)})
    for labels in ("html", "text"):
        src = to_graphviz(tape, title=HOSTILE, labels=labels).source
        assert HOSTILE not in src and "{x}|" in src
        if labels == "html":
            assert "&lt;b&gt;&amp;&quot;{x}|&#x27;\\\\N]" in src      # backslash doubled: \N is not expanded
        else:
            assert "label=<" not in src


def test_views_select_their_sections(mlp, mlp_graph):
    tape, _ = mlp
    fwd = to_graphviz(mlp_graph, "forward").source
    bwd = to_graphviz(mlp_graph, "backward").source
    assert "cluster_backward" not in fwd and "dashed" not in fwd
    assert "cluster_forward" not in bwd
    for e in tape.eqns[tape.n_forward:]:
        assert f'"{e.outputs[0]!r}" [' in bwd and f'"{e.outputs[0]!r}" [' not in fwd
    with pytest.raises(ValueError, match="choose one of"):
        to_graphviz(mlp_graph, "sideways")
    plain = ad.trace(lambda x: np.sum(np.exp(x)), np.ones(2))
    with pytest.raises(ValueError, match="no backward section"):
        to_graphviz(plain, "backward")
    assert "cluster_forward" in to_graphviz(plain).source


def test_window_and_collapse_keep_ten_thousand_equations_small(big):
    tape, g = big
    middle = repr(tape.eqns[5000].outputs[0])
    window = to_graphviz(g, window=(middle, 3), current=middle).source
    assert len(window) < 40_000 and f'"{middle}" [' in window
    assert window.count(" -> ") < 60
    folded = to_graphviz(g, collapse=True).source
    assert len(folded) < 20_000 and "\u00d71430" in folded
    both = to_graphviz(g, collapse=True, window=(middle, 1)).source
    assert "\u00d71430" in both
    assert collapse(g).number_of_nodes() < 20


def test_windows_accept_equations_and_strings(mlp_graph):
    a = to_graphviz(mlp_graph, window="%9:1").source
    b = to_graphviz(mlp_graph, window=("eq/%9", 1)).source
    assert '"%9" [' in a and '"%9" [' in b
    with pytest.raises(ValueError, match="NODE:K"):
        to_graphviz(mlp_graph, window="%9")


def test_values_belong_to_the_tape_not_the_graph(mlp_graph):
    with pytest.raises(TypeError, match="to_networkx"):
        to_graphviz(mlp_graph, values={"%0": 1.0})
