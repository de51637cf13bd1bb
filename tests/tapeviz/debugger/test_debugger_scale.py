"""A big debugger (20,000 equations: the suite's stand-in for bench/bench_widget.py's 100,000)
builds with what is computed lazily (the "primitive" steps, the steps' layout, the residuals'
readers) equal to what a full pass over the tape gives, and steps by call correctly: into, over
and out of calls in both phases, run to a call, breakpoints, the outline's folded groups. No
timing here: timings are the benchmark's."""
import gc

import numpy as np
import pytest

import tapeviz
from ad.scopes import common_prefix

from tests.support.debug_programs import click

LAYERS = 667                # 30 gradient equations per layer: 20,014 equations


def cell(h, w):
    return np.tanh(h * w + 0.1)


def layer(h, w):
    h = h * 0.99             # the layer's own equation: a step over from it runs its four cells
    for _ in range(4):
        h = cell(h, w)
    return h


def deep(h, layers, w=0.9):
    for _ in range(layers):
        h = layer(h, w)
    return np.sum(h)


@pytest.fixture(scope="module")
def session():
    return tapeviz.debug(deep, np.ones(3), LAYERS)


@pytest.fixture
def big(session):
    """The session, its cursor at the first step (built once for the module)."""
    session.set_granularity("pullback")
    session.first()
    return session


def scope_from_eqns(m, step) -> tuple:
    path = m.eqns[step.start].scope
    for i in range(step.start + 1, step.stop):
        path = common_prefix(path, m.eqns[i].scope)
    return path


def first_step(dbg, path, phase) -> int:
    """The first step at the cursor's granularity whose equations are all inside ``path``."""
    m = dbg.model
    return next(k for k, s in enumerate(m.step_list) if s.phase == phase
                and scope_from_eqns(m, s)[:len(path)] == path)


def test_a_big_debugger_builds_lazily(big):
    m = big.model
    assert len(m.eqns) >= 20_000 and big.n_steps > 14_000
    # built at first use: the steps of the other granularity, the layout of every step
    assert "primitive" not in m.steps._lists
    assert big.scope == ("layer#1",) and big.phase_line.startswith("forward, step 1 of")
    assert m.step_of(12_345, "primitive") == 12_345 and "primitive" not in m.steps._lists
    lay = m.nav.layout()
    assert lay.scopes == [scope_from_eqns(m, s) for s in m.step_list]
    # the scope of a step, asked before the layout exists, is the layout's
    fresh = tapeviz.debug(deep, np.ones(3), 40)
    assert "pullback" not in fresh.model.nav._layouts
    alone = [fresh.model.nav.scope_of(k) for k in range(fresh.n_steps)]
    assert alone == fresh.model.nav.layout().scopes


def test_the_big_model_matches_the_graph(big):
    """Rows, producers and residual readers, made in passes over the tape, as the graph says."""
    m = big.model
    g = m.graph
    assert m.producer_index == {n: d["index"] for n, d in g.nodes(data=True) if d["kind"] == "equation"
                                for n in d["outputs"]}
    assert sorted(i for row in m.rows for i in row.forward + row.backward) == list(range(len(m.eqns)))
    assert all(r == m.row_of_eqn[i] for r, row in enumerate(m.rows) for i in row.forward + row.backward)
    table = m.residual_table()
    assert len(table) > 2_000
    for r in table[::97]:
        readers = sorted(g.nodes[s]["index"] for s, e in g.succ[r["name"]].items() if e["kind"] == "residual")
        assert r["consumers"] == readers and r["last"] == readers[-1]
    assert m.residual_firsts == sorted(m.residual_firsts)


def test_the_outline_of_a_big_program(big):
    tree = big.outline()
    assert tree["forward"] + tree["backward"] == len(big.model.eqns)
    (group,) = [c for c in tree["children"] if c["kind"] == "group"]
    assert (group["name"], group["calls"], len(group["children"])) == ("layer", LAYERS, LAYERS)
    one = group["children"][299]
    assert one["path"] == ("layer#300",) and (one["forward"], one["backward"]) == (13, 17)
    (cells,) = one["children"]
    assert (cells["kind"], cells["name"], cells["calls"]) == ("group", "cell", 4)


def test_stepping_over_calls_in_a_big_forward_pass(big):
    big.run_to(("layer#300",))
    start = big.step
    assert big.scope == ("layer#300",) and start == first_step(big, ("layer#300",), "forward")
    for k in range(301, 306):                   # a layer's four cells are run whole
        assert big.step_over()
        assert big.scope == (f"layer#{k}",) and big.model.step.phase == "forward"
    assert big.step == start + 5 * 13           # 13 forward steps per layer
    assert big.step_over(reverse=True)         # back: the last step before the call
    assert big.scope == ("layer#304", "cell#4")
    big.run_to(("layer#304",))
    assert big.step_into() and big.scope == ("layer#304", "cell#1")
    big.step_into()                             # inside the first cell, then out of it
    assert big.step_out() and big.scope == ("layer#304", "cell#2")
    assert big.step == first_step(big, ("layer#304", "cell#2"), "forward")
    click(big, "step_over")                     # the view's button is the same move
    assert big.scope == ("layer#304", "cell#2")


def test_stepping_over_calls_in_a_big_backward_pass(big):
    m = big.model
    big.last()                                  # the pullback of layer#1's own equation
    assert big.scope == ("layer#1",) and m.step.phase == "backward"
    big.run_to(("layer#300",))                  # in the cursor's phase: where its pullback begins
    assert m.step.phase == "backward" and big.scope == ("layer#300", "cell#4")
    assert big.step == first_step(big, ("layer#300",), "backward")
    assert big.step_out() and big.scope == ("layer#300", "cell#3")
    while big.scope != ("layer#300",):          # to the layer's own pullback, after its cells'
        assert big.step_into()
    assert big.step_over()                      # the next layer down, entered at its last cell
    assert big.scope == ("layer#299", "cell#4") and big.step == first_step(big, ("layer#299",), "backward")
    assert big.step_over(reverse=True) and big.scope == ("layer#300",)


def test_breakpoints_and_targets_on_a_big_tape(big):
    big.run_to(("layer#300",))
    big.breakpoints = {("layer#310",), "%9000"}
    try:
        assert big.cont() and big.scope == ("layer#310",)
        eqn = big.model.producer_index["%9000"]
        assert big.cont() and big.model.step.start <= eqn < big.model.step.stop
        with pytest.raises(KeyError, match="called 667 times"):
            big.run_to(("layer",))
    finally:
        big.breakpoints = set()


def test_primitive_steps_on_a_big_tape(big):
    big.run_to(("layer#300",))
    start = big.model.step.start
    big.set_granularity("primitive")
    try:
        assert big.n_steps == len(big.model.eqns) and big.step == start
        assert big.step_over() and big.scope == ("layer#301",)
    finally:
        big.set_granularity("pullback")


def test_building_leaves_the_collector_as_it_was():
    """The collector is paused while a session is built (and what was made moved to its oldest
    generation), then on again; left off if it was off; a process's own frozen objects stay."""
    tapeviz.debug(deep, np.ones(3), 3)
    assert gc.isenabled()
    gc.disable()
    try:
        tapeviz.debug(deep, np.ones(3), 3)
        assert not gc.isenabled()
    finally:
        gc.enable()
    gc.freeze()
    try:
        tapeviz.debug(deep, np.ones(3), 3)
        assert gc.get_freeze_count() > 0 and gc.isenabled()
    finally:
        gc.unfreeze()
