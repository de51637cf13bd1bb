"""The closure-versus-lifted panel: sources, the lifted block and the numeric comparison (the
checker's own, ``ad.checks.forms``), including a disagreement and an opaque fallback."""
import html

import numpy as np
import pytest

import tapeviz
from ad.checks.forms import CotangentComparison
from ad.checks.settings import exact_rtol
from debug_programs import click, debugger_with, forward_eqn


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
    assert all("ad/examples.py:" in e.source for e in dbg.primal.eqns)
    name = next(s.of for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "tanh")
    assert "tapeviz/debugger" not in dbg.closure_panel(name)
