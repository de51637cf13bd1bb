"""Stepping like a source debugger, through the Python API (the view's buttons send the same
actions): the outline of the program (its scope tree, repeated calls folded), the scope at the
cursor, step into / over / out of calls in the forward and the backward (or tangent) phase, run
to a target, breakpoints, run to the first NaN or Inf and to the next failing check; in the
gradient debugger and in the forward-mode one. Definitions: ``tapeviz.debugger.navigation``."""
import json

import numpy as np
import pytest

import ad
import tapeviz
from ad.checktools.gallery import GALLERY
from ad.examples import mlp_example, mlp_loss
from ad.examples.programs import rnn_example, rnn_loss

from tests.support.debug_programs import (click, debugger_with, nan_args, nan_loss, nested_args, nested_loss,
                                          wrong_rule_loss)

B1, B2 = ("block#1",), ("block#2",)


@pytest.fixture(scope="module")
def rnn():
    return tapeviz.debug(rnn_loss, *rnn_example())


@pytest.fixture
def nested():
    return tapeviz.debug(nested_loss, *nested_args())


def inside(path, call) -> bool:
    return tuple(path[:len(call)]) == tuple(call)


def scopes(dbg) -> list[tuple]:
    """Every step's scope, from the equations themselves."""
    m = dbg.model
    out = []
    for s in m.step_list:
        paths = {m.eqns[i].scope for i in range(s.start, s.stop)}
        assert len(paths) == 1                      # these programs' steps are in one scope each
        out.append(paths.pop())
    return out


def phase_starts(dbg) -> dict:
    out = {}
    for k, s in enumerate(dbg.model.step_list):
        out.setdefault(s.phase, k)
    return out


def landings(dbg, move, start: int, **kw) -> list[int]:
    """The steps ``move`` lands on from ``start`` until it reports that it ran off the tape."""
    dbg.step_to(start)
    seen = []
    while getattr(dbg, move)(**kw):
        seen.append(dbg.step)
    return seen


# -- the outline ---------------------------------------------------------------------------

def test_the_rnn_outline_folds_its_40_cells_and_its_counts_add_up(rnn):
    m = rnn.model
    out = rnn.outline()
    json.dumps(out)                                 # plain data
    assert out["path"] == () and out["kind"] == "scope" and out["status"] is None
    assert out["forward"] == m.gt.n_forward and out["backward"] == len(m.eqns) - m.gt.n_forward
    assert out["tangent"] == 0
    [cells] = out["children"]
    assert (cells["kind"], cells["name"], cells["calls"], cells["first"]) == ("group", "cell", 40, ("cell#1",))
    calls = cells["children"]
    assert [c["path"] for c in calls] == [(f"cell#{k}",) for k in range(1, 41)]      # in call order
    for key in ("forward", "backward", "tangent", "residual_bytes"):
        assert cells[key] == sum(c[key] for c in calls)
    own = [e for e in m.eqns if e.scope == ()]                                        # the top level's
    assert out["forward"] + out["backward"] == cells["forward"] + cells["backward"] + len(own)
    assert all(c["forward"] == 5 and c["residual_bytes"] > 0 and c["children"] == [] for c in calls)
    assert out["residual_bytes"] >= cells["residual_bytes"] > 0
    assert out["residual_bytes"] == m.gt.scopes().residual_bytes                      # as ad's tree says
    tree = m.gt.scopes()
    assert [(c["forward"], c["backward"]) for c in calls] == [(len(s.forward), len(s.backward)) for s in tree.children]
    unfolded = rnn.outline(fold=None)               # every call an entry of its own
    assert [c["name"] for c in unfolded["children"]] == [f"cell#{k}" for k in range(1, 41)]
    assert rnn.outline(fold=41)["children"][0]["kind"] == "scope"


def test_the_mlp_outline_and_its_check_status(mlp_dbg):
    out = mlp_dbg.outline()
    layers, softmax = out["children"]
    assert (layers["kind"], layers["name"], layers["calls"]) == ("group", "layer", 2)
    assert [c["path"] for c in layers["children"]] == [("layer#1",), ("layer#2",)]
    assert (softmax["kind"], softmax["path"]) == ("scope", ("log_softmax",))
    assert all(e["backward"] > 0 and e["forward"] > 0 for e in (*layers["children"], softmax))
    assert layers["children"][0]["residual_bytes"] > 0
    assert mlp_dbg.run_checks().ok
    out = mlp_dbg.outline()
    assert out["status"] == "pass" and out["children"][0]["status"] == "pass"
    assert out["children"][0]["children"][1]["status"] == "pass"


def test_the_outline_marks_the_scope_of_a_failing_rule():
    dbg = debugger_with("culprit in a program", wrong_rule_loss)
    assert dbg.outline()["status"] is None
    dbg.run_checks()
    out = dbg.outline()
    [helper] = out["children"]
    assert helper["path"] == ("activation",) and helper["status"] == "fail" and out["status"] == "fail"


def test_the_nested_outline_folds_at_every_level(nested):
    out = nested.outline()
    blocks, penalty = out["children"]
    assert blocks["name"] == "block" and [c["path"] for c in blocks["children"]] == [B1, B2]
    [dense] = blocks["children"][0]["children"]
    assert (dense["kind"], dense["path"], dense["first"]) == ("group", B1 + ("dense",), B1 + ("dense#1",))
    assert [c["path"] for c in dense["children"]] == [B1 + ("dense#1",), B1 + ("dense#2",)]
    assert penalty["path"] == ("penalty",) and penalty["children"] == []


# -- the scope at the cursor ---------------------------------------------------------------

@pytest.mark.parametrize("granularity", ["pullback", "primitive"])
def test_the_scope_at_the_cursor_is_its_equations(nested, granularity):
    nested.set_granularity(granularity)
    want = scopes(nested)
    for k in range(nested.n_steps):
        nested.step_to(k)
        assert nested.scope == want[k] and nested._frame["scope"] == list(want[k])


# -- step into, over, out: forward ---------------------------------------------------------

def test_step_into_is_the_next_step_and_enters_calls(nested):
    assert nested.scope == ()
    assert nested.step_into() and nested.step == 1 and nested.scope == B1 + ("dense#1",)
    assert nested.step_into(reverse=True) and nested.step == 0
    assert not nested.step_into(reverse=True) and nested.step == 0 and "start" in nested.message
    nested.last()
    assert not nested.step_into() and nested.step == nested.n_steps - 1 and "end" in nested.message


def test_step_over_in_forward_skips_whole_calls(nested):
    want = scopes(nested)
    fwd = [k for k in landings(nested, "step_over", 0) if nested.model.step_list[k].phase == "forward"]
    # top-level steps only: block#1 and block#2 (back to back) skipped together, then penalty
    assert fwd == [k for k in range(1, phase_starts(nested)["backward"]) if want[k] == ()]
    assert {w[:1] for w in want[1:fwd[0]]} == {B1, B2}
    nested.step_to(1)                               # in block#1/dense#1: over its own steps
    assert nested.step_over() and nested.scope == B1 + ("dense#1",)
    assert nested.step_over() and nested.scope == B1 + ("dense#2",)    # left dense#1: stops in dense#2
    nested.step_to(want.index(B1))                  # block#1's add, after its calls
    assert nested.step_over() and nested.scope == B2 + ("dense#1",)    # the next call, entered


def test_step_out_in_forward_runs_to_the_first_step_after_the_call(nested):
    want = scopes(nested)
    nested.step_to(1)
    assert nested.step_out() and nested.scope == B1 + ("dense#2",)
    assert nested.step_out() and nested.scope == B1                    # block#1's own add
    assert nested.step_out() and nested.scope == B2 + ("dense#1",)
    nested.step_to(want.index(("penalty",)))
    assert nested.step_out() and nested.scope == () and nested.model.step.phase == "forward"
    # at the top level: the forward pass returns, the backward pass begins with its seed
    assert nested.step_out() and nested.step == phase_starts(nested)["backward"]
    assert nested.model.step.kind == "seed"
    assert nested.step_out(reverse=True) and nested.step == phase_starts(nested)["backward"] - 1
    nested.step_to(2)                               # in reverse: to the step before the call
    assert nested.step_out(reverse=True) and nested.step == 0


# -- step into, over, out: backward (calls in reverse order) -------------------------------

def test_step_over_in_backward_skips_whole_pullback_blocks(nested):
    m = nested.model
    want = scopes(nested)
    back = phase_starts(nested)["backward"]
    b2 = next(k for k in range(back, nested.n_steps) if inside(want[k], B2))
    b1_last = max(k for k in range(back, nested.n_steps) if inside(want[k], B1))
    assert want[b2 - 1] == ()
    nested.step_to(b2 - 1)
    assert nested.step_over()
    assert nested.step == b1_last + 1 and nested.scope == ()        # both pullbacks, run whole
    skipped = range(b2, b1_last + 1)
    fan_in = [k for k in skipped if want[k] == ()]
    assert fan_in and all(m.step_list[k].kind == "accumulate" for k in fan_in)  # W's sums, in block#1's block
    # the first backward step of block#2 is its last call's pullback: calls run in reverse
    nested.run_to(B2)
    assert nested.step == b2 and nested.scope == B2 + ("dense#2",)
    assert nested.step_out() and nested.scope == B2 + ("dense#1",)
    assert nested.step_out() and inside(nested.scope, B1)             # block#1's block begins
    assert nested.step_out() and nested.step == b1_last + 1
    # a fan-in sum of a top-level input inside block#1's block: its scope is the top level,
    # its frame block#1; stepping over or out of it stays in / leaves block#1, not the phase
    nested.step_to(fan_in[-1])
    assert nested.scope == () and m.nav.frame_of() == B1
    assert nested.step_out() and nested.step == b1_last + 1
    nested.step_to(fan_in[0])
    assert nested.step_over() and nested.step in fan_in[1:]          # over block#1's next call
    nested.step_to(b1_last + 1)
    assert nested.step_over(reverse=True) and nested.step == b2 - 1


def test_the_seed_the_fan_ins_and_the_end_of_the_tape(nested):
    m = nested.model
    want = scopes(nested)
    seed = phase_starts(nested)["backward"]
    nested.step_to(seed)
    assert m.step.kind == "seed" and nested.scope == ()
    assert nested.step_over()                       # penalty's pullback, run whole
    assert m.step.kind == "accumulate" and nested.scope == () and inside(want[seed + 1], ("penalty",))
    nested.step_to(seed)
    assert not nested.step_out()                    # top level of the last phase: to the end
    assert nested.step == nested.n_steps - 1 and nested.message == "ran to the end of the tape"
    assert not nested.step_over() and not nested.step_out() and nested.step == nested.n_steps - 1
    nested.step_to(nested.n_steps - 2)              # the last steps are top-level fan-ins
    assert nested.step_over() and nested.step == nested.n_steps - 1 and nested.message == ""
    nested.first()
    assert not nested.step_over(reverse=True) and not nested.step_out(reverse=True) and nested.step == 0
    assert "start of the tape" in nested.message


def test_stepping_at_primitive_granularity(nested):
    m = nested.model
    nested.last()
    nested.run_to(B2)                               # block#2's pullback, backward
    nested.step_to(nested.step - 1)                 # the top-level step before it
    before = m.step.stop - 1
    assert nested.step_over()
    after = m.step.start
    nested.set_granularity("primitive")
    nested.step_to(m.step_of(before))
    assert nested.step_over() and m.step.start == after                       # the same equation
    nested.run_to(B2)
    assert nested.model.step.stop - nested.model.step.start == 1
    assert nested.step_into() and nested.scope == B2 + ("dense#2",)              # one equation on
    assert nested.step_out() and nested.scope == B2 + ("dense#1",)
    nested.step_to(0)
    assert nested.step_over() and nested.scope == () and nested.step > 10


# -- run to, breakpoints ---------------------------------------------------------------------

def test_run_to_an_equation_or_a_scope(nested):
    m = nested.model
    eqn = next(i for i, e in enumerate(m.eqns) if e.scope == B2 + ("dense#1",) and e.prim.name == "tanh")
    name = repr(m.eqns[eqn].outputs[0])
    nested.run_to(name)
    assert m.step.start <= eqn < m.step.stop and nested.scope == B2 + ("dense#1",)
    nested.run_to("eq/" + name)                     # as select accepts it
    assert m.step.start <= eqn < m.step.stop
    nested.first()
    nested.run_to(B2)                               # in the cursor's phase: forward
    assert m.step.phase == "forward" and nested.scope == B2 + ("dense#1",)
    nested.last()
    nested.run_to("block#2/dense#1")                # in backward: its pullback
    assert m.step.phase == "backward" and nested.scope == B2 + ("dense#1",)
    nested.run_to(())
    assert nested.step == phase_starts(nested)["backward"]
    with pytest.raises(KeyError, match="no scope 'block#3'"):
        nested.run_to(("block#3",))
    with pytest.raises(KeyError, match="'block' was called 2 times: name one call"):
        nested.run_to("block")
    with pytest.raises(KeyError, match="is an input"):
        nested.run_to("%0")
    with pytest.raises(KeyError, match="not a variable of this tape"):
        nested.run_to("%9999")
    with pytest.raises(TypeError, match="a target is"):
        nested.run_to(12)
    step = nested.step
    click(nested, "run_to", target="nope/nothing")  # from the view: said, not raised
    assert nested.step == step and "no scope 'nope/nothing'" in nested._frame["message"]
    click(nested, "run_to", target=["block#1", "dense#2"])
    assert nested.scope == B1 + ("dense#2",)


def test_breakpoints_on_an_equation_and_on_a_scope(rnn):
    m = rnn.model
    rnn.breakpoints = set()
    assert not rnn.cont() and rnn.message.startswith("no breakpoints")
    h17 = next(repr(e.outputs[0]) for e in m.eqns if e.scope == ("cell#17",) and e.prim.name == "tanh")
    rnn.breakpoints.add("cell#30")                  # a string path: kept as a tuple
    rnn.breakpoints |= {h17}
    assert rnn.breakpoints == {("cell#30",), h17} and ("cell#30",) in rnn.breakpoints
    assert rnn._frame["breakpoints"] == [["cell#30"], h17]
    rnn.first()
    stops = []
    while rnn.cont():
        stops.append((rnn.model.step.phase, rnn.scope, rnn.message))
    # the equation once; the scope where its forward body begins and where its pullback begins
    assert stops == [("forward", ("cell#17",), f"breakpoint {h17}"),
                     ("forward", ("cell#30",), "breakpoint cell#30"),
                     ("backward", ("cell#30",), "breakpoint cell#30")]
    assert rnn.message == "no breakpoint ahead" and rnn.scope == ("cell#30",)
    assert rnn.cont(reverse=True) and rnn.scope == ("cell#30",) and rnn.model.step.phase == "forward"
    first_of_30 = rnn.step
    assert all(rnn.model.nav.scope_of(k) != ("cell#30",) for k in range(first_of_30))
    with pytest.raises(KeyError):
        rnn.breakpoints = {"cell#31", "cell#99"}    # all or nothing
    assert rnn.breakpoints == {("cell#30",), h17}
    rnn.breakpoints.discard("cell#30")
    rnn.breakpoints.discard("cell#30")              # absent: nothing
    assert rnn.breakpoints == {h17}
    click(rnn, "breakpoint", target="cell#5")
    click(rnn, "breakpoint", target="cell#500")     # said, not raised
    assert "no scope 'cell#500'" in rnn._frame["message"]
    click(rnn, "breakpoint", target=h17, on=False)
    assert rnn.breakpoints == {("cell#5",)}
    rnn.first()
    click(rnn, "cont")
    assert rnn.scope == ("cell#5",)
    rnn.breakpoints.clear()


# -- run to the first NaN, to the next failing check ---------------------------------------

def test_run_to_the_first_nonfinite_value():
    dbg = tapeviz.debug(nan_loss, *nan_args())
    m = dbg.model
    dbg.last()
    assert dbg.run_to_nonfinite()                   # from the start of the tape
    assert dbg.scope == ("log_of",) and m.eqns[m.step.start].prim.name == "log"
    assert np.isnan(m.values[dbg.current]).any() and dbg.message == f"NaN or Inf in {dbg.current}"
    assert all(np.isfinite(m.values[n]).all() for k in range(dbg.step) for n in m.written(m.step_list[k]))
    assert dbg.run_to_nonfinite(from_cursor=True) and dbg.scope == () and m.step.phase == "forward"
    while dbg.run_to_nonfinite(from_cursor=True):
        last = dbg.step
    assert m.step_list[last].phase == "backward" and dbg.message == "no NaN or Inf after this step"
    clean = tapeviz.debug(mlp_loss, *mlp_example())
    assert not clean.run_to_nonfinite() and clean.step == 0 and clean.message == "no NaN or Inf in this tape"


def test_run_to_the_next_failing_check():
    dbg = debugger_with("culprit in a program", wrong_rule_loss)
    assert not dbg.run_to_failure() and "run_checks" in dbg.message
    dbg.run_checks()
    dbg.first()
    m = dbg.model
    assert m.step.rule != "sin"
    assert dbg.run_to_failure()                     # the wrong rule's forward instance
    assert m.step.phase == "forward" and m.step.rule == "sin" and dbg.scope == ("activation",)
    assert dbg.run_to_failure()                     # and its pullback block
    assert m.step.phase == "backward" and m.step.rule == "sin" and dbg.scope == ("activation",)
    assert not dbg.run_to_failure() and dbg.message == "no failing check ahead"
    assert dbg.run_to_failure(reverse=True) and m.step.phase == "forward"
    click(dbg, "failure")
    assert m.step.phase == "backward"


# -- forward mode ---------------------------------------------------------------------------

def test_the_forward_mode_debugger_steps_by_call():
    W, x = nested_args()
    dbg = tapeviz.debug_jvp(nested_loss, (W, x), (np.ones_like(W), None))
    m = dbg.model
    want = scopes(dbg)
    out = dbg.outline()
    assert out["backward"] == 0 and out["tangent"] > 0 and out["forward"] == sum(
        e.origin.kind.phase == "forward" for e in m.eqns)
    assert out["children"][0]["name"] == "block" and out["residual_bytes"] > 0
    tangent = phase_starts(dbg)["tangent"]
    dbg.step_to(0)
    assert dbg.step_out() and dbg.step == tangent   # the forward pass returns
    assert m.step.phase == "tangent" and dbg.scope == B1 + ("dense#1",)    # pushed forward in forward order
    dbg.step_to(tangent - 1)                        # the forward pass's last step, top level
    assert want[tangent - 1] == () and dbg.step_over()
    assert dbg.scope == () and m.step.phase == "tangent"                    # both blocks' pushforwards, whole
    assert all(want[k] != () for k in range(tangent, dbg.step))
    assert any(inside(want[k], B2) for k in range(tangent, dbg.step))
    dbg.last()
    dbg.run_to(B1)                                  # in the cursor's phase
    assert dbg.step == tangent
    assert dbg.step_out() and dbg.scope == B1 + ("dense#2",)
    dbg.breakpoints = {B2}
    dbg.first()
    assert dbg.cont() and m.step.phase == "forward" and dbg.scope == B2 + ("dense#1",)
    assert dbg.cont() and m.step.phase == "tangent" and dbg.scope == B2 + ("dense#1",)
    assert not dbg.cont()
    click(dbg, "step_over", reverse=True)           # back over nothing: block#1's last step
    assert m.step.phase == "tangent" and dbg.scope == B1 + ("dense#2",)


def test_the_forward_mode_debugger_finds_the_nan_and_the_failing_rule():
    dbg = tapeviz.debug_jvp(nan_loss, nan_args(), (np.ones(3),))
    assert dbg.run_to_nonfinite() and dbg.scope == ("log_of",) and dbg.model.step.phase == "forward"
    assert dbg.run_to_nonfinite(from_cursor=True)
    entry = GALLERY["culprit in a program"]
    with ad.using_rule(entry.target, entry.rule):
        dbg = tapeviz.debug_jvp(wrong_rule_loss, entry.args(), (np.ones(4),))
    dbg.run_checks()
    dbg.first()
    assert dbg.run_to_failure() and dbg.scope == ("activation",) and dbg.model.step.phase == "forward"
    assert dbg.run_to_failure() and dbg.scope == ("activation",) and dbg.model.step.phase == "tangent"
    assert dbg.outline()["children"][0]["status"] == "fail"
