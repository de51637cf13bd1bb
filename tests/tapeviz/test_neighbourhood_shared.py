"""A window does not spread through a shared value (``tapeviz.graph.SHARED_LIMIT``): an RNN's
``Wh``, read by every ``cell`` call, is drawn beside the cursor's equation with a note of how
many readers were left out, but the other cells are not pulled in; a long loop sharing one
weight has a small graph pane at every step. The static page's ``PaneSource`` writes the same
notes (checked with Node when it is installed; tests/e2e/test_e2e_static.py checks the page)."""
import numpy as np
import pytest

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tapeviz.graph import SHARED_LIMIT, left_out, neighbourhood
from tests.support.page_module import NodeRunner, needs_node, page_session

PANE_LIMIT = 200_000        # bytes of DOT per step


@pytest.fixture(scope="module")
def rnn():
    return tapeviz.debug(rnn_loss, *rnn_example())          # 40 cells, 771 equations


def cell_of(graph, n) -> str | None:
    scope = graph.nodes[n].get("scope") or ()
    return scope[0] if scope else None


def wh_of(dbg) -> str:
    """The ``Wh`` variable: the second operand of the first ``h @ Wh`` matmul."""
    m = dbg.model
    e = next(e for e in m.eqns if e.prim.name == "matmul" and tuple(e.scope) == ("cell#1",))
    return repr(e.inputs[1])


def test_a_window_does_not_spread_through_a_shared_weight(rnn):
    g = rnn.model.graph
    wh = wh_of(rnn)
    assert len(g.succ[wh]) > SHARED_LIMIT                  # every cell reads it (and its pullbacks)
    eqns = [n for n in g.nodes if g.nodes[n]["kind"] == "equation" and cell_of(g, n) == "cell#17"
            and g.nodes[n]["phase"] == "forward"]
    reads_wh = next(n for n in eqns if wh in g.pred[n])
    for start in eqns:
        window = neighbourhood(g, start, 2)
        cells = {cell_of(g, n) for n in window}
        assert not cells & {"cell#3", "cell#30"}, (start, sorted(filter(None, cells)))
        assert len(window) < 60
    window = neighbourhood(g, reads_wh, 2)
    assert wh in window
    count, what = left_out(g, window)[wh]
    readers_drawn = sum(1 for r in g.succ[wh] if r in window)
    assert what == "readers" and count == len(g.succ[wh]) - readers_drawn and count > 30


def test_the_shared_node_itself_spreads_when_it_is_the_start(rnn):
    g = rnn.model.graph
    wh = wh_of(rnn)
    window = neighbourhood(g, wh, 1)
    assert set(g.succ[wh]) <= set(window)
    assert wh not in left_out(g, window)


def test_the_pane_notes_what_it_left_out(rnn):
    g = rnn.model.graph
    wh = wh_of(rnn)
    start = next(i for i, e in enumerate(rnn.model.eqns) if tuple(e.scope) == ("cell#17",)
                 and e.prim.name == "matmul" and repr(e.inputs[1]) == wh)
    rnn.step_to(rnn.model.step_of(start))
    dot = rnn.graph.dot()
    window = neighbourhood(g, "eq/" + rnn.model.current, 2)
    notes = left_out(g, window)
    assert notes, "the window holds a shared value"
    for n, (count, what) in notes.items():
        assert f'"more/{n}" [label=<+{count} more {what}>' in dot
        assert f'"{n}" -> "more/{n}"' in dot or f'-> "more/{n}"' in dot or f'"more/{n}" ->' in dot
    assert len(dot) < 20_000
    text = rnn.graph.dot("text")                            # the kernel's fallback labels
    assert all(f'"more/{n}" [label="+{c} more {w}"' in text for n, (c, w) in notes.items())


def shared_loop(params, steps):
    """Every step reads the one weight ``w`` (and every pullback reads it as a residual)."""
    x, w = params["x"], params["w"]
    for _ in range(steps):
        x = np.sin(x * w) + x
    return np.sum(x)


@pytest.fixture(scope="module")
def loop20k():
    dbg = tapeviz.debug(shared_loop, {"x": np.ones(3), "w": np.full(3, 0.5)}, 2250)
    assert len(dbg.model.eqns) >= 20_000
    return dbg


def test_a_long_loop_sharing_one_weight_has_a_small_pane(loop20k):
    dbg = loop20k
    g = dbg.model.graph
    w = max((n for n in g.nodes if g.nodes[n]["kind"] != "equation"), key=lambda n: len(g.succ[n]))
    assert len(g.succ[w]) > 2250
    sizes = [len(dbg.graph.dot())]                          # at opening
    for step in (1, 2, dbg.n_steps // 4, dbg.n_steps // 2, dbg.n_steps // 2 + 1, 3 * dbg.n_steps // 4,
                 dbg.n_steps - 2, dbg.n_steps - 1):
        dbg.step_to(step)
        dot = dbg.graph.dot()
        sizes.append(len(dot))
    assert max(sizes) < PANE_LIMIT, sizes
    dbg.step_to(1)
    assert "more readers>" in dbg.graph.dot()


# -- the static page's PaneSource writes the same notes ---------------------------------------------

NODE_SCRIPT = """
const [module, session, steps] = process.argv.slice(2);
const { PaneSource } = await import(module);
const fs = await import("node:fs");
const data = JSON.parse(fs.readFileSync(session, "utf-8"));
const pane = new PaneSource(data.tape, data.graph, data.dots);
const out = JSON.parse(fs.readFileSync(steps, "utf-8")).map(([a, b]) => pane.source(a, b));
process.stdout.write(JSON.stringify(out));
"""


@needs_node
def test_the_page_writes_the_same_notes(rnn, tmp_path):
    rnn.step_to(0)
    data = page_session(rnn, tmp_path)
    m = rnn.model
    picks = sorted({0, 1, 5, rnn.n_steps // 3, rnn.n_steps // 2, rnn.n_steps - 2, rnn.n_steps - 1})
    spans, expected = [], []
    for i in picks:
        rnn.step_to(i)
        spans.append([m.step.start, m.step.stop])
        expected.append(rnn.graph.dot())
    got = NodeRunner(tmp_path, NODE_SCRIPT)(data, spans, timeout=120)
    assert sum("more readers>" in d for d in expected) >= 3
    for i, (a, b) in zip(picks, zip(got, expected)):
        assert a == b, i
