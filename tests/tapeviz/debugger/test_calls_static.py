"""The calls view on a static page: the page embeds ``calls_data`` once, and ``CallsSource``
(``static/debugger.js``) writes the drawings the kernel's ``CallsPane`` writes, byte for byte,
for the same moves of the cursor and the same opens and closes (run with Node); what the
embedding adds to a page. The browser half: tests/e2e/test_e2e_calls.py."""

import numpy as np
import pytest

import tapeviz
from ad.examples import mlp_example, mlp_loss
from ad.examples.programs import rnn_example, rnn_loss
from tapeviz.debugger import page
from tapeviz.debugger.calls_tables import calls_data

from tests.support.debug_programs import nested_args, nested_loss
from tests.support.needs import module as optional_module
from tests.support.page_module import NodeRunner, needs_node, page_session

NODE_SCRIPT = """
const [module, session, moves] = process.argv.slice(2);
const { CallsSource } = await import(module);
const fs = await import("node:fs");
const data = JSON.parse(fs.readFileSync(session, "utf-8"));
const calls = new CallsSource(data.calls, data.tape, data.graph, data.dots);
let cursor = 0;
const out = [];
for (const [move, arg] of JSON.parse(fs.readFileSync(moves, "utf-8"))) {
  if (move === "at") cursor = arg;
  else if (move === "open") calls.open(calls.named({ path: arg }));
  else calls.close(calls.named({ path: arg }));
  out.push(calls.source(cursor));
}
process.stdout.write(JSON.stringify(out));
"""


def moves_of(dbg) -> list:
    """Moves of the cursor (to steps in both phases, into calls and out) and opens and closes of
    calls and groups, as (move, argument) pairs: the steps' first equations, the paths."""
    out = []
    groups = [e["path"] for e in _entries(dbg.outline()) if e["kind"] == "group"]
    calls = [e["path"] for e in _entries(dbg.outline()) if e["kind"] == "scope" and e["path"]]
    n = dbg.n_steps
    for k in sorted({0, 3, n // 5, n // 3, n // 2, 2 * n // 3, n - 3, n - 1}):
        out.append(("at", k))
    for path in groups[:2]:
        out += [("open", path), ("at", n // 2), ("close", path)]
    for path in calls[:: max(len(calls) // 4, 1)][:5]:
        out += [("open", path), ("at", n // 4), ("at", 3 * n // 4)]
    out += [("close", calls[-1]), ("at", 1)]
    return out


def _entries(entry):
    yield entry
    for c in entry["children"]:
        yield from _entries(c)


def replay(dbg, moves) -> tuple[list, list]:
    """The kernel's drawings for the moves, and the moves with cursor positions as equations."""
    dbg.graph_view = "calls"
    expected, sent = [], []
    for move, arg in moves:
        if move == "at":
            dbg.step_to(arg)
            arg = dbg.model.step.start
        elif move == "open":
            dbg.open_call(tuple(arg))
        else:
            dbg.close_call(tuple(arg))
        expected.append(dbg.calls.dot())
        sent.append([move, arg])
    return expected, sent


@needs_node
@pytest.mark.parametrize("program", ["rnn", "mlp", "forward mode", "imported resnet", "imported lstm"])
def test_the_page_writes_the_kernels_drawings(program, tmp_path):
    """The imported networks: weights and their gradients' sums drawn in the calls that read
    them (test_calls_imported.py)."""
    if program == "forward mode":
        W, x = nested_args()
        dbg = tapeviz.debug_jvp(nested_loss, (W, x), (np.ones_like(W), None))
    elif program.startswith("imported"):
        dbg = optional_module("tests.support.imported_networks").debugger(program.split()[1])
    else:
        dbg = tapeviz.debug(*((rnn_loss, *rnn_example()) if program == "rnn" else (mlp_loss, *mlp_example())))
    data = page_session(dbg, tmp_path)
    assert "eqScope" not in data["calls"] and data["start"]["view"] == "around"
    expected, moves = replay(dbg, moves_of(dbg))
    got = NodeRunner(tmp_path, NODE_SCRIPT)(data, moves)
    assert len(got) == len(expected) and len(set(expected)) > 5          # the moves drew different things
    for k, (a, b) in enumerate(zip(got, expected)):
        assert a == b, (k, moves[k])


def test_the_page_embeds_the_tables_once_and_starts_in_the_dbg_view(tmp_path):
    dbg = tapeviz.debug(rnn_loss, *rnn_example(steps=5))
    dbg.graph_view = "calls"
    data = page.session(dbg)
    full = calls_data(dbg.model)
    assert "edges" not in data["calls"]["scopes"] and "edges" not in data["calls"]["groups"]
    assert data["calls"]["scopes"]["node"] == full["scopes"]["node"] and "eqScope" not in data["calls"]
    assert full["eqScope"] == data["tape"]["scope"] and full["eqPhase"] == data["tape"]["phase"]
    assert data["start"]["view"] == "calls"
