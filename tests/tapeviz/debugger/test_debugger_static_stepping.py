"""Stepping by call on a static page: the page's ``Navigation`` (static/debugger.js, run under
Node) goes where Python's ``tapeviz.debugger.navigation.Navigation`` goes, and its ``Session``
answers the view's moves (step into / over / out, run to, breakpoints, continue, NaN/Inf,
failing check) with the step and the message the widget gives. Checked move by move at every
step of the 40-step RNN and of a program with nested calls, at both granularities and in both
directions, in forward mode too, and along seeded sequences of the view's actions on pages of
those programs, of one with a planted NaN and of one with a planted wrong rule."""
import random

import numpy as np
import pytest

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tapeviz.debugger import page
from tapeviz.debugger.frames import navigation_part, steps_part, tape_part
from tests.support.debug_programs import (click, debugger_with, nan_args, nan_loss, nested_args, nested_loss,
                                          wrong_rule_loss)
from tests.support.page_module import NodeRunner, needs_node

pytestmark = needs_node

NODE_SCRIPT = """
const [module, input] = process.argv.slice(2);
const { Navigation, Session } = await import(module);
const fs = await import("node:fs");
const job = JSON.parse(fs.readFileSync(input, "utf-8"));
let out;
if (job.kind === "moves") {
  const nav = new Navigation(job.steps, job.tape, job.navigation);
  out = {};
  for (const g of Object.keys(job.steps)) {
    const moves = job.steps[g].map((_, k) => [false, true].flatMap(
      (r) => [nav.stepInto(g, k, r), nav.stepOver(g, k, r), nav.stepOut(g, k, r)]));
    const runTo = job.cursors[g].map((k) => job.scopes.map((p) => nav.runTo(g, k, nav.target(p))));
    const hits = job.scopes.map((p) => nav.hits(nav.target(p), g));
    out[g] = { moves, runTo, hits };
  }
} else {
  const session = new Session(job.session, "");
  out = job.messages.map((msg) => {
    session.send(msg);
    const f = session.get("_frame");
    return [f.granularity, f.step.index, f.message, f.breakpoints];
  });
}
process.stdout.write(JSON.stringify(out));
"""

# what the kernel says about the Python API, the page says about itself
ON_THE_PAGE = {"no breakpoints: add targets to dbg.breakpoints":
               "no breakpoints: click the left edge of a line, or of a call in the outline, to set one",
               "no checks have run: call run_checks() first": "no checks had run when this page was written"}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """Run a job (JSON) through the page's module under Node; its answer, parsed."""
    return NodeRunner(tmp_path_factory.mktemp("node"), NODE_SCRIPT)


@pytest.fixture(scope="module")
def rnn():
    return tapeviz.debug(rnn_loss, *rnn_example())          # 40 cells, 771 equations


def nested():
    return tapeviz.debug(nested_loss, *nested_args())


def forward_mode():
    W, x = nested_args()
    return tapeviz.debug_jvp(nested_loss, (W, x), (np.ones_like(W), None))


def every_scope(dbg) -> list[list[str]]:
    out, todo = [], [dbg.model.nav.tree]
    while todo:
        node = todo.pop()
        out.append(list(node.path))
        todo.extend(node.children)
    return out


def python_moves(dbg, scopes: list, cursors: dict) -> dict:
    """What Python's Navigation answers, in the shape of the Node job's answer."""
    m, nav = dbg.model, dbg.model.nav
    saved = m.granularity, m.index
    out = {}
    try:
        for g in m.steps:
            m.granularity = g
            moves = []
            for k in range(m.n_steps):
                m.index = k
                moves.append([move(r) for r in (False, True) for move in (nav.step_into, nav.step_over, nav.step_out)])
            run_to = []
            for k in cursors[g]:
                m.index = k
                run_to.append([nav.run_to(tuple(p)) for p in scopes])
            out[g] = {"moves": moves, "runTo": run_to, "hits": [nav.hits(tuple(p)) for p in scopes]}
    finally:
        m.granularity, m.index = saved
    return out


@pytest.mark.parametrize("program", ["rnn", "nested", "forward mode"])
def test_every_move_from_every_step_goes_where_python_goes(program, rnn, node):
    dbg = {"rnn": lambda: rnn, "nested": nested, "forward mode": forward_mode}[program]()
    m = dbg.model
    scopes = every_scope(dbg)
    cursors = {}
    for g, steps in m.steps.items():           # each phase's first and middle step, the last step
        firsts = {}
        for k, s in enumerate(steps):
            firsts.setdefault(s.phase, []).append(k)
        cursors[g] = sorted({k for ks in firsts.values() for k in (ks[0], ks[len(ks) // 2])} | {len(steps) - 1})
    got = node({"kind": "moves", "steps": steps_part(m), "tape": tape_part(m), "navigation": navigation_part(m),
                "scopes": scopes, "cursors": cursors})
    want = python_moves(dbg, scopes, cursors)
    for g in m.steps:
        assert len(got[g]["moves"]) == len(m.steps[g])
        for k, (a, b) in enumerate(zip(got[g]["moves"], want[g]["moves"])):
            assert a == b, (g, k, "into, over, out; then in reverse")
        assert got[g]["runTo"] == want[g]["runTo"] and got[g]["hits"] == want[g]["hits"], g
    rows = [moves for g in m.steps for moves in want[g]["moves"]]
    assert any(over is None for row in rows for over in row)      # the ends of the tape are there
    assert sum(row[1] is not None and abs(row[1] - k) > 1 for k, row in enumerate(want["pullback"]["moves"])) >= 3


def actions(dbg, n: int, seed: int) -> list[dict]:
    """A seeded sequence of what the view sends: moves by call both ways, run-to and breakpoints
    on calls, equations and names the tape does not have, continue, NaN/Inf, failing check, steps
    and granularity."""
    m = dbg.model
    rng = random.Random(seed)
    scopes = every_scope(dbg)
    eqns = [repr(e.outputs[0]) for e in m.eqns]
    inputs = [n for n in m.var_attrs if n not in m.producer_index]
    targets = ([p for p in scopes] + ["/".join(p) for p in scopes if p] + rng.sample(eqns, min(12, len(eqns)))
               + ["eq/" + eqns[len(eqns) // 2], inputs[0], "%99999", ["nope", "nothing"]]
               + [[p[0].split("#")[0]] for p in scopes if p and "#" in p[0]][:1])
    out = []
    for _ in range(n):
        kind = rng.choice(["step_into", "step_over", "step_out", "step_over", "step_out", "cont", "cont", "nonfinite",
                           "failure", "run_to", "breakpoint", "breakpoint", "granularity", "step"])
        if kind in ("step_into", "step_over", "step_out", "cont", "failure"):
            out.append({"action": kind, "reverse": rng.random() < 0.4})
        elif kind == "nonfinite":
            out.append({"action": kind, "from_cursor": rng.random() < 0.6})
        elif kind in ("run_to", "breakpoint"):
            msg = {"action": kind, "target": rng.choice(targets)}
            if kind == "breakpoint":
                msg["on"] = rng.random() < 0.7
            out.append(msg)
        elif kind == "granularity":
            out.append({"action": kind, "value": rng.choice(["pullback", "primitive"])})
        else:
            out.append({"action": "step", "index": rng.randrange(len(m.steps["primitive"]) // 2)})
    return out


def python_answers(dbg, messages: list) -> list:
    out = []
    for msg in messages:
        if msg["action"] == "step":
            msg = {**msg, "index": min(msg["index"], dbg.n_steps - 1)}
        click(dbg, **msg)
        frame = dbg._frame
        out.append([frame["granularity"], frame["step"]["index"], ON_THE_PAGE.get(dbg.message, dbg.message),
                    frame["breakpoints"]])
    return out


def page_answers(node, dbg, messages: list) -> list:
    return node({"kind": "session", "session": page.session(dbg), "messages": messages})


def nan_program():
    return tapeviz.debug(nan_loss, *nan_args())


def checked_wrong_rule():
    dbg = debugger_with("culprit in a program", wrong_rule_loss)
    dbg.run_checks()
    dbg.first()
    return dbg


@pytest.mark.parametrize("program, n", [("rnn", 400), ("nested", 300), ("nan", 150), ("wrong rule", 150),
                                        ("wrong rule, unchecked", 60), ("forward mode", 200)])
def test_the_page_answers_each_action_as_the_widget(program, n, rnn, node):
    dbg = {"rnn": lambda: rnn, "nested": nested, "nan": nan_program, "wrong rule": checked_wrong_rule,
           "wrong rule, unchecked": lambda: debugger_with("culprit in a program", wrong_rule_loss),
           "forward mode": forward_mode}[program]()
    dbg.breakpoints = set()
    dbg.step_to(0)
    dbg.set_granularity("pullback")
    messages = actions(dbg, n, seed=len(program))
    got = page_answers(node, dbg, messages)
    want = python_answers(dbg, messages)
    for k, (a, b) in enumerate(zip(got, want)):
        assert a == b, (k, messages[k])
    said = {w[2].split(" ")[0] for w in want if w[2]}
    assert len(got) == n and len(said) >= 3, said                 # the sequence said several things


def test_the_rnn_breakpoints_stop_where_the_widget_stops(rnn, node):
    """Breakpoints on a call and on an equation (the ones set when the page was written are
    kept), continued to forwards and backwards; a step over and out of a call's pullback."""
    m = rnn.model
    h17 = next(repr(e.outputs[0]) for e in m.eqns if e.scope == ("cell#17",) and e.prim.name == "tanh")
    rnn.breakpoints = {("cell#30",)}
    rnn.step_to(0)
    rnn.set_granularity("pullback")
    messages = ([{"action": "breakpoint", "target": "eq/" + h17}] + [{"action": "cont"}] * 4
                + [{"action": "step_over"}, {"action": "step_out"}, {"action": "step_over", "reverse": True}]
                + [{"action": "cont", "reverse": True}] * 4
                + [{"action": "breakpoint", "target": ["cell#30"], "on": False}, {"action": "cont"}])
    got = page_answers(node, rnn, messages)
    want = python_answers(rnn, messages)
    assert got == want
    assert [w[2] for w in want[1:5]] == [f"breakpoint {h17}", "breakpoint cell#30", "breakpoint cell#30",
                                         "no breakpoint ahead"]
    assert got[0][3] == [["cell#30"], h17]
    rnn.breakpoints = set()


def test_the_session_embeds_what_nan_and_failure_look_for():
    dbg = nan_program()
    found = page.session(dbg)["navigation"]
    assert found["nonfinite"] == dbg.model.nav.nonfinite_eqns() and found["nonfinite"]
    assert found["failing"] is None                                # no checks ran
    checked = checked_wrong_rule()
    failing = page.session(checked)["navigation"]["failing"]
    m = checked.model
    assert failing == [1, 11] and [m.eqns[i].prim.name for i in failing] == ["sin", "negative"]   # sin, its pullback
    assert [m.eqns[i].origin.kind.phase for i in failing] == ["forward", "backward"]
