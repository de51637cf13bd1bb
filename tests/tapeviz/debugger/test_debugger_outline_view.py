"""What the view's outline pane and stepping-by-call buttons rely on, at the Python level: the
outline's tree as a trait (sent once, again after checks), every step part carrying its scope
(the live frame, the steps sent ahead, a static page's steps), and the messages the buttons,
the outline and the listing's gutter send (``{"action": "step_over", "reverse": true}``, targets
as JSON makes them: paths as lists) moving the cursor exactly as the Python API does, confirmed
by the frame (``seq``), with what a move says in ``message``. The browser half:
tests/e2e/test_e2e_outline.py."""
import json
import re

import numpy as np
import pytest

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tapeviz.debugger import page
from tapeviz.debugger.frames import outline_part

from tests.support.debug_programs import (answers, click, debugger_with, nan_args, nan_loss, nested_args,
                                          nested_loss, wrong_rule_loss)


@pytest.fixture
def rnn():
    return tapeviz.debug(rnn_loss, *rnn_example())


@pytest.fixture(scope="module")
def twin():
    """A second debugger of the RNN, moved through the Python API: where the view's must land."""
    return tapeviz.debug(rnn_loss, *rnn_example())


def as_json(data):
    return json.loads(json.dumps(data))


class Seq:
    """The numbers a view puts on its actions (the frame echoes the last one)."""

    def __init__(self):
        self.n = 0

    def __call__(self, dbg, action: str, **fields) -> None:
        self.n += 1
        click(dbg, action, seq=self.n, view="test-view", **fields)
        assert (dbg._frame["seq"], dbg._frame["by"]) == (self.n, "test-view")


# -- the outline's tree --------------------------------------------------------------------

def test_the_outline_trait_is_the_folded_tree_as_json(rnn):
    tree = rnn._outline
    assert tree == as_json(rnn.outline()) == outline_part(rnn.model)
    assert json.loads(json.dumps(tree)) == tree                   # lists, not tuples: what the view gets
    [cells] = tree["children"]
    assert (cells["kind"], cells["path"], cells["calls"], cells["first"]) == ("group", ["cell"], 40, ["cell#1"])
    assert [c["path"] for c in cells["children"]][16] == ["cell#17"]
    assert tree["status"] is None and rnn._frame["step"]["scope"] == []


def test_the_outline_is_sent_once_and_again_when_checks_ran():
    dbg = debugger_with("culprit in a program", wrong_rule_loss)
    sent = []
    dbg.observe(lambda change: sent.append(change["new"]), names="_outline")
    for move in (dbg.next, dbg.step_over, dbg.last, dbg.first):
        move()
    dbg.run_to(("activation",))
    dbg.set_granularity("primitive")
    assert sent == []                                             # steps send no outline
    dbg.run_checks()
    assert len(sent) == 1 and sent[0] == as_json(dbg.outline())
    [helper] = sent[0]["children"]
    assert helper["path"] == ["activation"] and helper["status"] == "fail" and sent[0]["status"] == "fail"
    dbg.next()
    assert len(sent) == 1


def test_the_forward_mode_outline_counts_tangents():
    W, x = nested_args()
    dbg = tapeviz.debug_jvp(nested_loss, (W, x), (np.ones_like(W), None))
    tree = dbg._outline
    assert tree["tangent"] > 0 and tree["backward"] == 0
    assert tree == as_json(dbg.outline())
    dbg.run_to("block#2/dense#1")
    assert dbg._frame["step"]["scope"] == ["block#2", "dense#1"] == dbg._frame["scope"]


# -- the step parts carry their scope ------------------------------------------------------

def test_every_step_part_carries_its_scope(rnn, monkeypatch):
    for k in (0, 97, 300, 407, rnn.n_steps - 1):
        rnn.step_to(k)
        assert rnn._frame["step"]["scope"] == list(rnn.scope) == rnn._frame["scope"]
    rnn.step_to(97)
    sent = answers(rnn, monkeypatch)
    click(rnn, "ahead", indices=[95, 96, 98, 103])               # the view's guesses highlight the outline too
    steps = sent[-1]["steps"]
    assert [s["step"]["scope"] for s in steps] == [list(rnn.model.nav.scope_of(s["index"])) for s in steps]
    assert [s["step"]["scope"] for s in steps] == [["cell#16"], [], ["cell#17"], ["cell#18"]]


def test_a_static_page_embeds_the_outline_and_every_steps_scope():
    dbg = tapeviz.debug(rnn_loss, *rnn_example(steps=5))
    data = page.session(dbg)
    assert data["outline"] == dbg._outline
    assert "offline" not in data["frame"] and data["frame"]["breakpoints"] == []     # the page steps by call
    dbg.breakpoints.add("cell#2")
    dbg.breakpoints.add(dbg.current)
    assert page.session(dbg)["frame"]["breakpoints"] == [["cell#2"], dbg.current] == dbg._frame["breakpoints"]
    dbg.breakpoints = set()
    m = dbg.model
    for g, steps in data["steps"].items():
        dbg.set_granularity(g)
        assert [s["scope"] for s in steps] == [list(m.nav.scope_of(k)) for k in range(len(steps))]
    assert page.unpack(page.pack(data)) == data                  # JSON all the way


def test_the_listing_has_a_breakpoint_gutter_on_every_equation_line(rnn):
    html = rnn.listing_view.render()
    lines = re.findall(r'<div class="tv-eq[^"]*" data-eq="\d+" data-var="%\d+"><span class="tv-gutter"></span>', html)
    assert lines and len(lines) == html.count(" data-eq=")
    assert html.count('class="tv-gutter"') == len(lines)          # inputs have none
    rnn.select("%103")
    assert "tv-gutter" not in rnn.closure_panel()                  # the closure panel's lines neither


# -- the view's actions move the cursor as the Python API does -----------------------------

def test_the_buttons_and_the_outline_move_the_cursor(rnn, twin):
    """The e2e scenario's moves, sent as the view sends them."""
    send = Seq()
    twin.breakpoints.clear()
    twin.first()

    def same(note=""):
        assert (rnn.step, rnn.scope, rnn.message) == (twin.step, twin.scope, twin.message), note
        assert rnn._frame["step"]["index"] == twin.step and rnn._frame["message"] == twin.message
        assert rnn._frame["step"]["scope"] == list(twin.scope)

    send(rnn, "run_to", target=["cell#17"])                       # a click on cell#17 in the outline
    twin.run_to(("cell#17",))
    same()
    assert rnn.scope == ("cell#17",) and rnn.model.step.phase == "forward"
    send(rnn, "step_out", reverse=False)
    twin.step_out()
    same()
    assert rnn.scope == ()
    before = rnn.step
    send(rnn, "step_over", reverse=False)                          # over cell#18, whole
    twin.step_over()
    same()
    assert rnn.scope == () and rnn.step - before == 6

    send(rnn, "breakpoint", target=["cell#17"], on=True)          # the outline's left edge
    twin.breakpoints.add(("cell#17",))
    assert rnn._frame["breakpoints"] == [["cell#17"]] and rnn.breakpoints == {("cell#17",)}
    send(rnn, "cont", reverse=False)
    twin.cont()
    same()
    assert rnn.model.step.phase == "backward" and rnn.scope == ("cell#17",) and rnn.message == "breakpoint cell#17"

    for move in ("step_over", "step_out", "step_over"):            # backward: within, out, over cell#16's
        send(rnn, move, reverse=False)
        getattr(twin, move)()
        same(move)
    assert rnn.scope == () and rnn.model.step.phase == "backward"
    send(rnn, "step_over", reverse=True)                           # Shift, or the "backwards" toggle
    twin.step_over(reverse=True)
    same()
    send(rnn, "cont", reverse=True)
    twin.cont(reverse=True)
    same()
    assert rnn.scope == ("cell#17",) and rnn.message == "breakpoint cell#17"
    for reverse in (False, True):
        send(rnn, "step_into", reverse=reverse)
        twin.step_into(reverse=reverse)
        same()

    name = rnn._frame["step"]["written"][0]                        # the listing's gutter: an equation
    send(rnn, "breakpoint", target=name, on=True)
    assert rnn._frame["breakpoints"] == [["cell#17"], name]
    send(rnn, "breakpoint", target=name, on=False)                 # its chip
    send(rnn, "breakpoint", target=["cell#17"], on=False)
    assert rnn._frame["breakpoints"] == [] and not rnn.breakpoints
    send(rnn, "cont", reverse=False)
    assert rnn.message.startswith("no breakpoints")


def test_what_the_buttons_say_when_there_is_nowhere_to_go(rnn):
    send = Seq()
    send(rnn, "nonfinite", from_cursor=True)
    assert rnn.step == 0 and rnn._frame["message"] == "no NaN or Inf after this step"
    send(rnn, "failure", reverse=False)
    assert rnn._frame["message"] == "no checks have run: call run_checks() first"
    send(rnn, "step_into", reverse=True)
    assert rnn.step == 0 and rnn._frame["message"] == "at the start of the tape"
    send(rnn, "run_to", target=["cell"])                           # a folded group is not a call
    assert rnn.step == 0 and "'cell' was called 40 times" in rnn._frame["message"]
    send(rnn, "breakpoint", target=["cell#99"], on=True)
    assert "cell#99" in rnn._frame["message"] and not rnn.breakpoints
    send(rnn, "next")
    assert rnn._frame["message"] == ""                              # a move supersedes what the last one said


def test_run_to_nonfinite_and_failure_from_the_view():
    dbg = tapeviz.debug(nan_loss, *nan_args())
    send = Seq()
    dbg.last()
    send(dbg, "nonfinite", from_cursor=False)                      # Shift: the first in the tape
    assert dbg.scope == ("log_of",) and dbg._frame["step"]["scope"] == ["log_of"]
    assert dbg.message.startswith("NaN or Inf in ")
    culprit = debugger_with("culprit in a program", wrong_rule_loss)
    culprit.run_checks()
    culprit.first()
    send(culprit, "failure", reverse=False)
    assert culprit.scope == ("activation",) and culprit.model.step.phase == "forward"
    assert culprit._outline["children"][0]["status"] == "fail"
