"""The closure-versus-lifted panel: sources, the lifted block and the numeric comparison (the
checker's own, ``ad.checks.forms``), including a disagreement and an opaque fallback."""
import html

import numpy as np
import pytest

import ad
import tapeviz
from ad.checks.forms import CotangentComparison
from ad.checks.settings import exact_rtol
from tests.support.debug_programs import click, debugger_with, forward_eqn
from tests.support.overloads import kinked_relu, one_at_zero


def test_closure_panel_for_a_matmul(mlp_dbg):
    dbg = mlp_dbg
    step = next(s for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "matmul")
    dbg.select(step.of)
    click(dbg, "closure", on=True)
    panel = dbg._closure
    assert f'data-instance="{step.of}"' in panel and 'data-ok="true"' in panel
    assert dbg.closure_shown and dbg._frame["closure"] is True
    assert html.escape("def _matmul_rule(a, b):") in panel and html.escape("def pullback(dy):") in panel
    c = dbg.comparison()
    a, b = (dbg.model.values[o] for o in c.instance.operands)
    g = dbg.model.values[dbg.model.cotangents[step.of]]
    closure = {r.operand: r.result.closure for r in c.rows}
    for operand, expected in zip(c.instance.operands, (g @ b.T, a.T @ g)):
        if operand in closure:                            # dA = G B^T, dB = A^T G
            np.testing.assert_allclose(closure[operand], expected, rtol=1e-12)
    block_outputs = {repr(v) for i in c.block for v in dbg.model.eqns[i].outputs}
    assert all(r.lifted_var in block_outputs and r.result.ok for r in c.rows)
    click(dbg, "closure", on=False)
    assert not dbg.closure_shown and dbg._closure == ""


def test_closure_and_lifted_that_disagree_are_flagged():
    dbg = debugger_with("type-dependent pullback", lambda x: np.sum(np.sin(x)))
    name = repr(dbg.model.eqns[forward_eqn(dbg, "sin")].outputs[0])
    dbg.select(name)
    dbg.show_closure(True)
    c = dbg.comparison()
    r = c.rows[0].result
    assert not c.ok and r.max_abs > 0
    np.testing.assert_allclose(r.lifted, 2 * r.closure)   # the traced branch doubles
    assert 'data-ok="false"' in dbg._closure and "DIFFER" in dbg._closure


def test_opaque_fallbacks_are_shown_with_their_reason():
    dbg = debugger_with("opaque fallback")
    fallbacks = dbg.model.gt.fallbacks
    assert fallbacks and "opaque closure" in dbg._listing
    assert f'title="{html.escape(fallbacks[0].reason)}">opaque closure' in dbg._listing
    name = repr(dbg.model.eqns[forward_eqn(dbg, "opaque_rrule")].outputs[0])
    dbg.select(name)
    dbg.show_closure(True)
    c = dbg.comparison()
    assert c.fallback == fallbacks[0].reason
    assert 'data-fallback="true"' in dbg._closure
    assert html.escape(fallbacks[0].reason) in dbg._closure
    assert c.ok                                          # the tape calls the very same closure


def test_comparison_of_a_value_outside_any_rule_is_none():
    dbg = tapeviz.debug(lambda x: np.sum(x * 2.0), np.ones(3))
    assert dbg.comparison("%0") is None
    dbg.select("%0")
    dbg.show_closure(True)
    assert 'data-instance=""' in dbg._closure


def test_the_panel_judges_by_the_checkers_comparison(mlp_dbg):
    dbg = mlp_dbg
    name = next(s.of for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "matmul")
    c = dbg.comparison(name)
    assert c.rows and all(isinstance(r.result, CotangentComparison) for r in c.rows)
    assert c.tolerance == exact_rtol([np.dtype(np.float64)])
    assert [r.result.index for r in c.rows] == [i for i, need in enumerate(c.instance.needs) if need]


def test_the_built_in_example_names_its_own_lines(mlp_dbg):
    dbg = mlp_dbg
    assert all("ad/examples/programs.py:" in e.source for e in dbg.primal.eqns)
    name = next(s.of for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "tanh")
    assert "tapeviz/debugger" not in dbg.closure_panel(name)


# -- an overload of the pullback (ad.backpropagate) ------------------------------------------

def relu_masked_one_at_zero(x):
    """The same, its mask computed before the pullback: the tape's block holds that too."""
    mask = (x >= 0) * 1.0
    return lambda dy: (dy * mask,)


X = np.array([-1.0, 0.0, 2.0])
RULE, OVERLOAD = [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]


def relu_panel(dbg):
    name = repr(dbg.model.eqns[forward_eqn(dbg, "kinked_relu")].outputs[0])
    dbg.select(name)
    dbg.show_closure(True)
    return dbg.comparison()


@pytest.mark.parametrize("overload", [one_at_zero, relu_masked_one_at_zero])
def test_the_panel_runs_the_overload_of_the_pullback_as_the_tape_does(overload):
    with ad.backpropagate.using(kinked_relu, overload):
        dbg = tapeviz.debug(lambda x: np.sum(kinked_relu(x)), X)
    c = relu_panel(dbg)
    (row,) = c.rows
    block_outputs = {repr(v) for i in c.block for v in dbg.model.eqns[i].outputs}
    assert row.lifted_var in block_outputs                       # read from the tape, not re-derived
    np.testing.assert_array_equal(row.result.lifted, OVERLOAD)   # what the tape computed
    np.testing.assert_array_equal(row.result.closure, OVERLOAD)  # the overload's pullback, called
    assert c.ok and c.instance.overload is overload and c.instance.overload_kind == "dense"
    panel = dbg._closure
    assert 'data-ok="true"' in panel and 'data-overload="dense"' in panel
    assert html.escape(f"def {overload.__name__}(x):") in panel     # the overload's source, not the rule's
    assert "def kinked_relu_rule" not in panel
    assert html.escape("ad.backpropagate(kinked_relu, \"dense\")") in panel


def test_the_panel_keeps_the_overload_the_tape_was_built_with():
    with ad.backpropagate.using(kinked_relu, one_at_zero):
        dbg = tapeviz.debug(lambda x: np.sum(kinked_relu(x)), X)
    c = relu_panel(dbg)                                          # the overload is gone by now
    assert c.ok and c.instance.overload is one_at_zero
    np.testing.assert_array_equal(c.rows[0].result.closure, OVERLOAD)
    plain = tapeviz.debug(lambda x: np.sum(kinked_relu(x)), X)
    c = relu_panel(plain)
    assert c.ok and c.instance.overload is None and 'data-overload' not in plain._closure
    np.testing.assert_array_equal(c.rows[0].result.closure, RULE)
    assert "def kinked_relu_rule" in plain._closure


def test_forward_mode_and_the_checks_use_the_overload_the_tape_was_built_with(monkeypatch):
    with ad.backpropagate.using(kinked_relu, one_at_zero):
        jvp = tapeviz.debug_jvp(lambda x: np.sum(kinked_relu(x)), (X,), (np.ones(3),))
        dbg = tapeviz.debug(lambda x: np.sum(kinked_relu(x)), X)
    name = repr(next(e for e in jvp.model.eqns if e.prim.name == "kinked_relu").outputs[0])
    c = jvp.comparison(name)                    # the closure form transposes the overload's pullback
    assert c.ok and c.overloaded and "def one_at_zero" in c.rule_source
    np.testing.assert_array_equal(c.rows[0].result.closure, OVERLOAD)
    assert "overload source" in jvp.closure_panel(name)
    prim, check, seen = ad.primitives.lookup(kinked_relu), ad.check, []

    def checking(*args, **options):             # the checker builds its tapes with the overload too
        seen.append(dict(prim.overloads))
        return check(*args, **options)
    monkeypatch.setattr(ad, "check", checking)
    assert dbg.run_checks().ok and seen == [{"dense": one_at_zero}]
    assert not prim.overloads                   # and leaves none registered
