"""The steps sent ahead to the view (``TapeDebugger._ahead``) carry where the moves by call go
from each (``frames.moves_part``): the view paints a step into, over or out at once from them, so
each must be where the kernel's move lands, in both directions, at both granularities, in the
gradient debugger and the forward-mode one."""
import numpy as np
import pytest

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tapeviz.debugger.widget import AHEAD_MAX

from tests.support.debug_programs import answers, click, nested_args, nested_loss

MOVES = ("step_into", "step_over", "step_out")


def sent_ahead(dbg, monkeypatch, indices) -> dict[int, dict]:
    """The parts the view is sent for ``indices`` (asked for as it does: at most AHEAD_MAX a time)."""
    sent = answers(dbg, monkeypatch)
    indices = list(indices)
    for k in range(0, len(indices), AHEAD_MAX):
        click(dbg, "ahead", indices=indices[k:k + AHEAD_MAX])
    return {part["index"]: part for reply in sent for part in reply["steps"]}


def assert_moves_land_where_sent(dbg, monkeypatch, indices):
    """From each step of ``indices``: every move, as the view sends it, lands on the step the
    part sent ahead names; where it names None, the kernel does not land on a step of its own
    choosing (the edge of the tape) and says why."""
    parts = sent_ahead(dbg, monkeypatch, indices)
    assert sorted(parts) == sorted(set(indices))
    seq = 0
    for k, part in parts.items():
        assert set(part["moves"]) == set(MOVES)
        for move in MOVES:
            for reverse, to in zip((False, True), part["moves"][move]):
                dbg.step_to(k)
                seq += 1
                click(dbg, move, reverse=reverse, seq=seq, view="v1")
                assert dbg._frame["seq"] == seq
                if to is None:
                    assert dbg.message, (k, move, reverse)
                else:
                    assert (dbg.step, dbg.message) == (to, ""), (k, move, reverse)
                    assert dbg._frame["step"] == parts.get(to, {}).get("step", dbg._frame["step"])


@pytest.mark.parametrize("granularity", ["pullback", "primitive"])
def test_every_steps_moves_sent_ahead_are_where_the_kernel_moves(monkeypatch, granularity):
    dbg = tapeviz.debug(nested_loss, *nested_args())
    dbg.set_granularity(granularity)
    assert_moves_land_where_sent(dbg, monkeypatch, range(dbg.n_steps))


def test_the_rnn_moves_sent_ahead_skip_whole_cells():
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    dbg.run_to(("cell#17",))
    k = dbg.step
    dbg.step_out()
    out = dbg.step
    dbg.step_to(k - 1)                                   # the step before cell#17, at the top level
    with pytest.MonkeyPatch.context() as mp:
        parts = sent_ahead(dbg, mp, [k, k - 1])
    assert parts[k]["moves"]["step_into"] == [k + 1, k - 1]
    assert parts[k]["moves"]["step_out"][0] == out
    over = parts[k - 1]["moves"]["step_over"][0]        # cell#17 (and the next calls) run whole
    dbg.step_over()
    assert dbg.step == over and dbg.scope == ()
    dbg.first()
    with pytest.MonkeyPatch.context() as mp:
        first = sent_ahead(dbg, mp, [0])[0]["moves"]
    assert first["step_into"][1] is None and first["step_over"][1] is None     # nothing before the start
    dbg.step_into(reverse=True)
    assert dbg.step == 0 and dbg.message == "at the start of the tape"


def test_the_forward_mode_moves_sent_ahead_are_where_the_kernel_moves(monkeypatch):
    W, x = nested_args()
    dbg = tapeviz.debug_jvp(nested_loss, (W, x), (np.ones_like(W), None))
    assert_moves_land_where_sent(dbg, monkeypatch, range(dbg.n_steps))


def test_no_moves_are_sent_while_the_closure_panel_is_shown(monkeypatch):
    dbg = tapeviz.debug(nested_loss, *nested_args())
    dbg.show_closure(True)
    assert sent_ahead(dbg, monkeypatch, [1, 2]) == {}
