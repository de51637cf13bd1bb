"""The graph pane's calls view (``tapeviz.debugger.calls_pane``, ``calls_drawing``): the program's
calls as the outline lists them, each closed call one node beside its pullback, opened ones
clusters holding their level, the cursor's chain opened by itself, one open set shared with the
outline; readable on the RNN (a window of 9 calls, stubs of shared values, no edge across the
columns). The browser half: tests/e2e/test_e2e_calls.py."""
import json
import re
import shutil

import numpy as np
import pytest

import ad
import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from ad.tape import Var
from tapeviz.debugger import calls_drawing
from tapeviz.debugger.calls_drawing import calls_dot
from tapeviz.debugger.calls_tables import STUB_READERS, WINDOW, calls_data
from tapeviz.debugger.dot import DOT

from tests.support.debug_programs import HOSTILE, click, debugger_with, nested_args, nested_loss, wrong_rule_loss
from tests.support.needs import needs


@pytest.fixture
def rnn():
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    dbg.graph_view = "calls"
    return dbg


def cluster(dot: str, name: str) -> str:
    """The text of cluster ``name`` (its own statements and the clusters inside it)."""
    start = dot.index(f'subgraph "{name}" {{\n')
    indent = dot[dot.rindex("\n", 0, start) + 1:start]
    return dot[start:dot.index(f"\n{indent}}}\n", start)]


def nodes(dot: str) -> list[str]:
    return re.findall(r'^\t+"([^"]+)" \[label=', dot, re.M)


def edges(dot: str) -> set[tuple[str, str]]:
    return set(re.findall(r'^\t"([^"]+)" -> "([^"]+)"', dot, re.M))


def clusters_of(dot: str) -> dict[str, tuple]:
    """Each node's clusters, outermost first."""
    out, stack = {}, []
    for line in dot.splitlines():
        if hit := re.match(r'\t+subgraph "([^"]+)" \{$', line):
            stack.append(hit.group(1))
        elif re.fullmatch(r"\t+\}", line):
            stack.pop()
        elif hit := re.match(r'\t+"([^"]+)" \[label=', line):
            out[hit.group(1)] = tuple(stack)
    return out


def columns(dot: str) -> dict[str, str]:
    """Each node's column: the top cluster it is drawn in (``cluster_forward``...)."""
    return {n: clusters[0] for n, clusters in clusters_of(dot).items()}


def scope_number(dbg, path: tuple) -> int:
    return dbg.calls.number(path)


def eq_name(dbg, i: int) -> str:
    return repr(dbg.model.eqns[i].outputs[0])


# -- what the top level shows ---------------------------------------------------------------------

def test_the_rnn_top_level_draws_cell_x40_and_its_pullback_as_one_node_each(rnn):
    dot = rnn._dot
    assert dot == rnn.calls.dot() != rnn.graph.dot()
    drawn = nodes(dot)
    assert "group/f/0" in drawn and "group/b/0" in drawn
    assert not [n for n in drawn if n.startswith(("call/", "more/"))]
    assert re.search(r'"group/f/0" \[label=<.*<B>cell ×40</B>.*40 calls, 200 equations.*, keeps 10 kB<', dot)
    assert re.search(r'"group/b/0" \[label=<.*<B>pullback of cell ×40</B>.*, reads 10 kB kept<', dot)
    assert '{rank=same; "group/f/0"; "group/b/0";}' in dot               # beside its pullback
    cell17 = rnn.model.nav.tree.find(("cell#17",))
    assert not {eq_name(rnn, i) for i in cell17.forward + cell17.backward} & set(drawn)
    assert rnn.opened == frozenset() and rnn.scope == ()
    # the data flow between what is drawn: xs into the group, the group into the read-out; the
    # residuals the group keeps are its pullback's label, not an edge; xs[0] read by the
    # pullback: a stub beside it. Wh, Wx and b, read by the cells alone, are drawn in the group
    flows = edges(dot)
    assert ("%4", "%6") in flows and ("%6", "group/f/0") in flows             # xs -> xs[0] -> the cells
    assert ("group/f/0", "group/b/0") not in flows and ("stub/%6/group/b/0", "group/b/0") in flows
    assert not {"%0", "%1", "%2"} & set(drawn) and "%3" in drawn               # Wo: read by the read-out
    assert re.search(r'"group/f/0" \[label=<.*keeps 10 kB<.*>reads 3 parameters<', dot)
    assert re.search(r'"group/b/0" \[label=<.*reads 10 kB kept<.*>gives 3 gradients<', dot)
    assert len(re.findall(r"^\t\"[^\"]+\" -> ", dot, re.M)) == len(flows)       # each pair and kind once


def test_opening_the_group_and_cell_17_draws_their_equations_in_both_columns(rnn):
    rnn.open_call(("cell",))
    dot = rnn._dot
    k = {n: scope_number(rnn, (f"cell#{n}",)) for n in range(1, 41)}
    drawn = set(nodes(dot))
    assert {f"call/f/{k[n]}" for n in range(1, WINDOW + 1)} <= drawn            # the window: cell#1 to #9
    assert f"call/f/{k[WINDOW + 1]}" not in drawn and "more/f/0/1" in drawn     # the rest summed up
    assert re.search(r'"more/f/0/1" \[label=<.*… 31 more: cell#10 to cell#40', dot)
    assert 'id="tvo_gf0"' in cluster(dot, "cluster_group_f0")                   # a click on its title closes it

    rnn.open_call("cell#17")
    dot = rnn._dot
    assert rnn.opened == {("cell",), ("cell#17",)}
    node = rnn.model.nav.tree.find(("cell#17",))
    forward, backward = cluster(dot, f"cluster_call_f{k[17]}"), cluster(dot, f"cluster_call_b{k[17]}")
    for i in node.forward:
        assert f'"{eq_name(rnn, i)}" [label=' in forward
    for i in node.backward:
        assert f'"{eq_name(rnn, i)}" [label=' in backward
    assert "pullback of cell#17" in backward and f"call/f/{k[17]}" not in nodes(dot)
    # edges, checked against the tape: an operand made in cell#17 comes from its equation, one
    # made in cell#16 from cell#16's node, a parameter (read by every call) from a stub of it
    flows = edges(dot)
    m = rnn.model
    made = {repr(v): i for i, e in enumerate(m.eqns) for v in e.outputs}
    for i in node.forward:
        for x in m.eqns[i].inputs:
            if type(x) is not Var:
                continue
            p = made.get(repr(x))
            if p is None:
                tail = f"stub/{x!r}/{eq_name(rnn, i)}"                          # an input of the tape
            elif p in node.forward:
                tail = eq_name(rnn, p)
            else:
                tail = f"call/f/{k[16]}" if m.eqns[p].scope == ("cell#16",) else eq_name(rnn, p)
            assert (tail, eq_name(rnn, i)) in flows, (tail, i)
    assert any(t == f"call/f/{k[16]}" for t, _ in flows)
    # backward: the pullback reads cell#17's forward values (residuals) from stubs beside it
    pullback = cluster(dot, f"cluster_call_b{k[17]}")
    residuals = 0
    for i in node.backward:
        for x in m.eqns[i].inputs:
            p = made.get(repr(x)) if type(x) is Var else None
            if p in node.forward:
                stub = f"stub/{eq_name(rnn, p)}/{eq_name(rnn, i)}"
                assert (stub, eq_name(rnn, i)) in flows and f'"{stub}" [label=' in pullback
                assert f'{{rank=same; "{stub}"; "{eq_name(rnn, i)}";}}' in dot
                residuals += 1
    assert residuals


def test_the_cursors_calls_open_by_themselves_and_its_node_is_framed(rnn):
    rnn.run_to(("cell#30",))
    k30 = scope_number(rnn, ("cell#30",))
    assert rnn.opened == {("cell",), ("cell#30",)}
    dot = rnn._dot
    assert f'"{rnn.current}" [label=<<TABLE BORDER="4"' in dot and dot.count('class="tv-current"') == 1
    assert f'id="tvn_{rnn.current}" class="tv-current"' in dot
    drawn = nodes(dot)                                     # the window: cell#25 to cell#33
    assert {"more/f/0/0", "more/f/0/1", f"call/f/{scope_number(rnn, ('cell#25',))}",
            f"call/f/{scope_number(rnn, ('cell#33',))}"} <= set(drawn)
    assert not {f"call/f/{scope_number(rnn, (f'cell#{n}',))}" for n in (24, 34)} & set(drawn)
    rnn.close_call("cell#30")                       # the user's close is kept on top of the cursor's chain
    dot = rnn._dot
    assert ("cell#30",) not in rnn.opened and f'id="tvc_f{k30}" class="tv-current"' in dot
    rnn.next()
    assert f'id="tvc_f{k30}" class="tv-current"' in rnn._dot
    rnn.open_call("cell#30")
    assert f'id="tvn_{rnn.current}" class="tv-current"' in rnn._dot


def test_a_step_inside_the_open_set_reuses_the_drawing(rnn):
    rnn.run_to(("cell#17",))
    drawings = dict(rnn.calls._drawings)
    before = rnn._dot
    rnn.next()
    assert rnn.scope == ("cell#17",) and rnn._dot != before
    assert dict(rnn.calls._drawings) == drawings                              # no new drawing made
    rnn.step_out()                                                            # out of the call: its chain closes
    assert ("cell#17",) not in rnn.opened and rnn._dot == rnn.calls.dot()


# -- readable on a real program: a small window, stubs, no edge across the columns ---------------

def edge_lines(dot: str) -> list[tuple[str, str]]:
    return re.findall(r'^\t"([^"]+)" -> "([^"]+)"', dot, re.M)


@pytest.mark.parametrize("steps", [40, 400])
def test_the_rnn_at_cell_17_draws_a_bounded_drawing_whatever_the_loops_length(steps):
    """Opened at cell#17 (and the group), the RNN draws a window of 9 calls; however long the
    loop, the same number of nodes and edges, each input's node (if drawn) at most
    ``STUB_READERS`` edges away, no edge from one column to the other."""
    dbg = tapeviz.debug(rnn_loss, *rnn_example(steps=steps))
    dbg.graph_view = "calls"
    dbg.open_call("cell#17")
    dot = dbg._dot
    drawn, lines = nodes(dot), edge_lines(dot)
    assert (len(drawn), len(lines)) == (163, 189)                    # the 40 steps' drawing, measured
    assert len([n for n in drawn if n.startswith("call/f/")]) == WINDOW - 1        # and cell#17, opened
    column = columns(dot)
    assert all(column[t] == column[h] for t, h in lines)
    inputs = {repr(v) for v in dbg.model.gt.inputs}
    assert all(sum(1 for t, _ in lines if t == x) <= STUB_READERS for x in inputs)
    assert not any(t in inputs and column[h] != "cluster_forward" for t, h in lines)


def test_each_stub_is_drawn_beside_its_reader(rnn):
    """A stub: the value's name only (an input's head row), in its look, its tooltip, in its
    reader's cluster, level with it, one edge: to its reader."""
    rnn.run_to(("cell#17",))
    around = rnn.graph.dot()                 # the neighbourhood view draws Wh's node
    rnn.open_call("cell#17")
    dot = rnn._dot
    where = clusters_of(dot)
    stubs = [n for n in nodes(dot) if n.startswith("stub/")]
    assert len(stubs) > 20
    lines = edge_lines(dot)
    wh = re.search(r'^\t+"%0" (\[label=<<TABLE [^>]*>)(<TR>.*?</TR>).* tooltip="([^"]*)"', around, re.M)
    for stub in stubs:
        reader = stub.split("/", 2)[2]
        assert [e for e in lines if stub in e] in ([(stub, reader)], [(reader, stub)])
        assert where[stub] == where[reader] and f'{{rank=same; "{stub}"; "{reader}";}}' in dot
        if stub.startswith("stub/%0/"):                  # Wh's: its node's look, head row and tooltip
            line = re.search(rf'^\t+"{re.escape(stub)}" (.*)$', dot, re.M).group(1)
            assert line.startswith(f"{wh.group(1)}{wh.group(2)}</TABLE>> tooltip=\"{wh.group(3)}\" id=\"tvu_")
    ids = re.findall(r' id="(tvu_[^"]+)"', dot)
    assert len(set(ids)) == len(ids) == len(stubs)                          # SVG ids told apart
    assert "%0" not in nodes(dot)                        # Wh: read by every call, drawn only as stubs


def shared_value(x, W):
    """A value made at the top level (``Wt``) that every call of a loop reads."""
    Wt = np.transpose(W) * 0.5
    for _ in range(6):
        with ad.scope("step"):
            x = np.tanh(x @ Wt)
    return np.sum(x)


def test_a_value_made_outside_the_level_it_is_read_at_is_a_stub_there():
    dbg = tapeviz.debug(shared_value, np.ones((2, 3)), np.eye(3))
    dbg.graph_view = "calls"
    dbg.open_call(("step",))
    m = dbg.model
    made = next(i for i, e in enumerate(m.eqns) if e.prim.name == "multiply" and not e.scope)
    wt = eq_name(dbg, made)
    dot = dbg._dot
    lines = edge_lines(dot)
    stubs = [n for n in nodes(dot) if n.startswith(f"stub/{wt}/call/f/")]
    assert len(stubs) == 6 and not [h for t, h in lines if t == wt]       # its node: no edge into the loop
    assert wt in nodes(cluster(dot, "cluster_forward"))
    assert all(re.search(rf'"{stub}" \[label=<<TABLE[^>]*><TR><TD ALIGN="LEFT"><B>{wt}</B></TD></TR></TABLE>>', dot)
               for stub in stubs)


def test_a_closed_calls_residuals_are_its_pullbacks_label_not_edges(rnn):
    rnn.open_call(("cell",))
    dot = rnn._dot
    k = scope_number(rnn, ("cell#5",))
    assert re.search(rf'"call/f/{k}" \[label=<.*5 equations, keeps 256 B<', dot)
    assert re.search(rf'"call/b/{k}" \[label=<.*10 equations, reads 256 B kept<', dot)
    closed = ("call/", "group/", "more/")
    assert not [(t, h) for t, h in edge_lines(dot) if t.startswith(closed) and h.startswith(closed)
                and columns(dot)[t] != columns(dot)[h]]
    assert f'{{rank=same; "call/f/{k}"; "call/b/{k}";}}' in dot                  # level with each other


# -- one open set for the outline and the graph ---------------------------------------------------

def test_the_outline_and_the_graph_share_the_open_set(rnn):
    click(rnn, "open_call", path=["cell"], seq=1, view="v")                # the outline expands the group
    assert ("cell",) in rnn.opened
    assert rnn._frame["pane"]["opened"] == [["group", ["cell"]]] and rnn._frame["pane"]["view"] == "calls"
    k = scope_number(rnn, ("cell#5",))
    assert f'id="tvc_f{k}"' in rnn._dot
    click(rnn, "open_call", call=k, seq=2, view="v")                        # a click on cell#5's node
    assert rnn._frame["pane"]["opened"] == [["group", ["cell"]], ["scope", ["cell#5"]]]  # the outline reveals it
    assert f'subgraph "cluster_call_f{k}"' in rnn._dot
    click(rnn, "close_call", call=k, seq=3, view="v")                       # its cluster's title
    assert rnn._frame["pane"]["closed"] == [["scope", ["cell#5"]]] and ("cell#5",) not in rnn.opened
    click(rnn, "close_call", path=["cell"], seq=4, view="v")                # the outline collapses the group
    assert "group/f/0" in nodes(rnn._dot)
    context = rnn._frame["context"]
    click(rnn, "open_call", path=["cell#99"], seq=5, view="v")               # a bad one is said, not raised
    assert "cell#99" in rnn.message and rnn._frame["context"] == context
    click(rnn, "graph_view", value="around", seq=6, view="v")
    assert rnn.graph_view == "around" and rnn._dot == rnn.graph.dot() and "calls" not in rnn._frame["context"]


def test_the_outline_opens_calls_without_making_the_views_tables():
    """Expanding the outline is the same open, but a debugger that never draws the calls view
    never makes its tables."""
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    click(dbg, "open_call", path=["cell"], seq=1, view="v")
    click(dbg, "close_call", path=["cell#3"], seq=2, view="v")
    assert dbg.calls._data is None and dbg._frame["pane"]["view"] == "around"
    pane = dbg._frame["pane"]
    assert pane["opened"] == [["group", ["cell"]]] and pane["closed"] == [["scope", ["cell#3"]]]
    dbg.graph_view = "calls"
    assert ("cell",) in dbg.opened and ("cell#3",) not in dbg.opened


def test_open_and_close_name_calls_and_groups_or_say_what_is_wrong(rnn):
    with pytest.raises(KeyError, match="cell#41"):
        rnn.open_call("cell#41")
    with pytest.raises(KeyError, match="is an equation"):
        rnn.open_call("%7")
    with pytest.raises(ValueError, match="top level"):
        rnn.close_call(())
    with pytest.raises(ValueError, match="choose one of"):
        rnn.graph_view = "tree"
    rnn.open_call("cell#3")                                                   # what holds it opens too
    assert rnn.opened == {("cell",), ("cell#3",)}


def test_steps_sent_ahead_carry_the_calls_views_drawing(rnn, monkeypatch):
    from tests.support.debug_programs import answers
    rnn.run_to(("cell#17",))
    sent = answers(rnn, monkeypatch)
    click(rnn, "ahead", indices=[rnn.step + 1])
    [part] = sent[-1]["steps"]
    rnn.next()
    assert sent[-1]["texts"][part["dot"]] == rnn._dot == rnn.calls.dot()


# -- other programs --------------------------------------------------------------------------------

def test_the_mlp_draws_its_layers_and_log_softmax(mlp_dbg):
    mlp_dbg.graph_view = "calls"
    assert mlp_dbg.scope == ("layer#1",) and mlp_dbg.opened == {("layer",), ("layer#1",)}
    mlp_dbg.close_call(("layer",))
    dot = mlp_dbg._dot
    assert "<B>layer ×2</B>" in dot and "<B>pullback of layer ×2</B>" in dot
    assert re.search(r'"call/f/\d+" \[label=<.*<B>log_softmax</B>', dot)
    mlp_dbg.open_call(("layer",))
    assert re.search(r'"call/b/\d+" \[label=<.*<B>pullback of layer#2</B>', mlp_dbg._dot)


def hostile(x):
    """Two blocks named by a hostile string (a folded group) and one named with a backslash."""
    for _ in range(2):
        with ad.scope(HOSTILE):
            x = np.sin(x)
    with ad.scope("a\\N"):
        x = x * 2.0
    return np.sum(x)


def test_a_hostile_scope_name_is_escaped_everywhere():
    dbg = tapeviz.debug(hostile, np.ones(3))
    dbg.graph_view = "calls"
    dbg.open_call((HOSTILE,))
    dot = dbg._dot
    labels = re.sub(r'tooltip="(?:[^"\\]|\\.)*"', "", dot)        # plain text (Graphviz escapes it)
    assert HOSTILE not in dot and '&"x' not in dot
    for text in ("<b>", "a\\N>"):
        assert text not in labels
    assert "&lt;b&gt;&amp;&quot;x{|} ×2" in dot and "a\\\\N" in dot
    json.dumps(calls_data(dbg.model))
    assert dbg._frame["pane"]["opened"] == [["group", [HOSTILE]]]          # the outline's key, as it is


def hostile_weight(params, x):
    """A weight named by a hostile string, read by every call of a loop: drawn as stubs."""
    for _ in range(4):
        with ad.scope("step"):
            x = np.tanh(x * params[HOSTILE])
    return np.sum(x)


def test_a_hostile_inputs_stubs_are_escaped():
    dbg = tapeviz.debug(hostile_weight, {HOSTILE: np.ones(3)}, np.ones(3))
    dbg.graph_view = "calls"
    dbg.open_call(("step",))
    dot = dbg._dot
    stubs = [line for line in dot.splitlines() if re.match(r'\t+"stub/%0/[^"]+" \[label=', line)]
    assert len(stubs) == 7             # beside step#2 to #4 and their pullbacks, step#1's multiply (opened)
    assert all("<B>params[&#x27;&lt;b&gt;&amp;&quot;x{|}&#x27;]</B>" in line for line in stubs)
    assert HOSTILE not in dot


@needs(bool(shutil.which("dot")), "Graphviz's dot")
def test_a_hostile_scope_name_reaches_the_svg_escaped():
    dbg = tapeviz.debug(hostile, np.ones(3))
    dbg.graph_view = "calls"
    dbg.open_call((HOSTILE,))
    svg = DOT.svg(dbg._dot)
    assert svg and "&lt;b&gt;&amp;&quot;x{|}#1" in svg and "<b>&" not in svg


def column_spans(svg: str) -> dict[str, tuple[float, float]]:
    """The left and right x of each column's cluster in an SVG drawing."""
    out = {}
    for name, shape in re.findall(r'<title>(cluster_(?:forward|backward|tangent))</title>\s*<(?:path|polygon)[^>]*? '
                                  r'(?:d|points)="([^"]+)"', svg):
        xs = [float(x) for x in re.findall(r"(-?[\d.]+),-?[\d.]+", shape)]
        out[name] = (min(xs), max(xs))
    return out


@needs(bool(shutil.which("dot")), "Graphviz's dot")
def test_the_drawings_are_valid_graphviz_the_forward_column_on_the_left(rnn):
    for move in (lambda: None, lambda: rnn.open_call(("cell",)), lambda: rnn.open_call("cell#17"),
                 lambda: rnn.run_to(("cell#39",)), lambda: rnn.close_call(("cell",)), rnn.last):
        move()
        svg = DOT.svg(rnn._dot)
        assert svg and len(re.findall(r'class="node[ "]', svg)) == len(nodes(rnn._dot))
        spans = column_spans(svg)
        assert spans["cluster_forward"][1] <= spans["cluster_backward"][0], spans


def test_forward_mode_draws_pushforwards_in_the_tangent_column():
    W, x = nested_args()
    dbg = tapeviz.debug_jvp(nested_loss, (W, x), (np.ones_like(W), None))
    dbg.graph_view = "calls"
    dot = dbg._dot
    assert "cluster_tangent" in dot and "cluster_backward" not in dot
    assert "<B>pushforward of block ×2</B>" in dot and '"group/t/0"' in dot
    dbg.run_to("block#2/dense#1")
    k = scope_number(dbg, ("block#2", "dense#1"))
    assert f'subgraph "cluster_call_f{k}"' in dbg._dot
    assert "dir=" not in "".join(line for line in dbg._dot.splitlines() if "->" in line)     # tangents run down


def test_checks_mark_the_calls_and_the_export_is_the_views():
    dbg = debugger_with("culprit in a program", wrong_rule_loss)
    dbg.graph_view = "calls"
    dbg.close_call(("activation",))
    assert "a check failed" not in dbg._dot
    dbg.run_checks()                                   # jumps into activation's pullback: keep it closed
    dbg.close_call(("activation",))
    k = dbg.calls.number(("activation",))
    node = next(line for line in dbg._dot.splitlines() if f'id="tvc_f{k}"' in line)
    assert "\u2717 a check failed" in node and 'COLOR="#dc2626"' in node
    assert dbg.export("dot").data == dbg.calls.dot().encode() and dbg.last_export.name.endswith(".dot")


# -- the tables and the cost of a drawing ----------------------------------------------------------

def test_the_tables_are_json_and_the_writer_a_function_of_them(rnn):
    data = calls_data(rnn.model)
    assert json.loads(json.dumps(data)) == json.loads(json.dumps(rnn.calls.data))
    shown = rnn.calls.shown()
    assert calls_dot(json.loads(json.dumps(data)), json.loads(json.dumps(shown)),
                     calls_drawing.EquationNodes(rnn.model, data)) == rnn._dot


def deep(h, layers):
    def cell(h):
        return np.tanh(h * 0.9 + 0.1)

    def layer(h):
        h = h * 0.99
        for _ in range(4):
            h = cell(h)
        return h

    for _ in range(layers):
        h = layer(h)
    return np.sum(h)


def test_a_drawing_reads_only_what_it_draws(monkeypatch):
    """On a 9,000-equation tape: the equations whose nodes are made, and the edges looked at,
    are those of the drawn levels (counted), not the tape's."""
    dbg = tapeviz.debug(deep, np.ones(3), 300)
    dbg.run_to(("layer#150", "cell#2"))
    made, held = [], []
    statement = calls_drawing.EquationNodes.statement
    holder = calls_drawing.Drawing.holder
    monkeypatch.setattr(calls_drawing.EquationNodes, "statement",
                        lambda self, i, c: made.append(i) or statement(self, i, c))
    monkeypatch.setattr(calls_drawing.Drawing, "holder", lambda self, x: held.append(x) or holder(self, x))
    dbg.graph_view = "calls"
    dot = dbg._dot
    data = dbg.calls.data
    levels = [0, scope_number(dbg, ("layer#150",)), scope_number(dbg, ("layer#150", "cell#2"))]
    drawn = [n for n in nodes(dot) if n.startswith("%")]
    assert sorted(made) == sorted(i for i in range(len(dbg.model.eqns)) if eq_name(dbg, i) in drawn)
    layers, cells = dbg.calls.number(("layer",)), dbg.calls.number(("layer#150", "cell"))
    a = dbg.calls.shown()["windows"][str(layers)]
    level_edges = (sum(len(data["scopes"]["edges"][k]) for k in levels)
                   + sum(len(t) for t in data["groups"]["edges"][layers][a:a + WINDOW])
                   + sum(len(t) for t in data["groups"]["edges"][cells])) // 3
    assert len(held) <= 2 * level_edges + 1                # each edge's two ends, and the cursor
    assert len(held) < len(dbg.model.eqns) / 10 and len(made) < 40
