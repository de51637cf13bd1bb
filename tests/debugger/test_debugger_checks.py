"""Checks and closure-versus-lifted in the debugger: a wrong rule from the checker's gallery is
found, badged on both sides and jumped to; the closure panel shows sources, the lifted block and
the numeric comparison, including a disagreement and an opaque fallback."""
import html
import re

import numpy as np
import pytest

import ad
import tapeviz
from ad.checks.gallery import GALLERY
from ad.examples import mlp_loss


def debugger_with(entry_name: str, program=None):
    """A debugger on a gallery entry's program (or ``program``), built while its wrong rule is
    registered."""
    entry = GALLERY[entry_name]
    with ad.using_rule(entry.target, entry.rule):
        return tapeviz.debug(program or entry.program, *entry.args())


def forward_eqn(dbg, prim: str) -> int:
    return next(i for i in range(dbg.model.gt.n_forward) if dbg.model.eqns[i].prim.name == prim)


def badged(markup: str, column: str) -> set[int]:
    """Equations with a failure badge in one column of the listing."""
    out = set()
    for cell in re.findall(rf'<td class="{column}">(.*?)</td>', markup):
        out |= {int(i) for i in re.findall(r'data-eq="(\d+)"[^>]*>(?:(?!</div>).)*tv-badge tv-fail', cell)}
    return out


def test_failing_program_jumps_to_the_culprit():
    dbg = debugger_with("culprit in a program")
    dbg.check_button.click()              # after the `with`: the debugger keeps the rule it showed
    report = dbg.report
    assert not report.ok
    sin = forward_eqn(dbg, "sin")
    name = repr(dbg.model.eqns[sin].outputs[0])
    assert report.culprit.equation.startswith(f"{name}:")
    assert dbg.selected == name
    assert dbg.model.step.kind == "pullback" and dbg.model.step.of == name
    assert re.match(rf"backward, step \d+ of \d+: pullback of {name} \(sin\)", dbg.phase_line)
    block = dbg.model.rows[dbg.model.row_of_eqn[sin]].backward
    assert sin in badged(dbg.listing.value, "tv-forward")
    assert block[0] in badged(dbg.listing.value, "tv-backward")
    assert 'data-checks="fail"' in dbg.phase.value
    assert dbg.progress.bar_style == "danger" and 'data-ok="false"' in dbg.check_summary.value
    assert dbg.model.graph.nodes[f"eq/{name}"]["failures"]

    dbg.first()
    dbg.alert_buttons[-1].click()         # an alert takes the cursor back to the culprit
    assert dbg.model.step.of == name and dbg.selected == name
    assert "tv-alert-current" in dbg.alert_buttons[-1]._dom_classes

    dbg.step_to(dbg.model.step_of(sin))   # the culprit drawn red in the graph pane
    assert "#dc2626" in dbg.export("dot").data.decode()


def test_rerunning_checks_does_not_pile_up_findings():
    dbg = debugger_with("culprit in a program")
    first = dbg.run_checks()
    n_marks = sum(map(len, dbg.model.marks.values()))
    n_failures = len(dbg.model.graph.graph["failures"])
    second = dbg.run_checks()
    assert first.summary() == second.summary()
    assert sum(map(len, dbg.model.marks.values())) == n_marks
    assert len(dbg.model.graph.graph["failures"]) == n_failures


def test_a_passing_program_has_no_badges(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(3)
    report = dbg.run_checks()
    assert report.ok and dbg.step == 3
    assert "tv-badge" not in dbg.listing.value
    assert dbg.alert_buttons == [] and "no failures or warnings" in dbg.alerts_box.children[0].value
    assert dbg.progress.bar_style == "success" and 'data-checks="pass"' in dbg.phase.value
    # the bar counted the program's equations as ad.check went through them
    assert dbg.progress.max == len(report.equations) and dbg.progress.value == dbg.progress.max


def test_closure_panel_for_a_matmul(mlp_dbg):
    dbg = mlp_dbg
    step = next(s for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "matmul")
    dbg.select(step.of)
    dbg.closure_toggle.value = True
    panel = dbg.closure_panel.value
    assert f'data-instance="{step.of}"' in panel and 'data-ok="true"' in panel
    assert dbg.closure_panel.layout.display == ""
    assert html.escape("def _matmul_rule(a, b):") in panel and html.escape("def pullback(dy):") in panel
    c = dbg.comparison()
    a, b = (dbg.model.values[o] for o in c.instance.operands)
    g = dbg.model.values[dbg.model.cotangents[step.of]]
    closure = {r.operand: r.closure for r in c.rows}
    for operand, expected in zip(c.instance.operands, (g @ b.T, a.T @ g)):
        if operand in closure:                            # dA = G B^T, dB = A^T G
            np.testing.assert_allclose(closure[operand], expected, rtol=1e-12)
    block_outputs = {repr(v) for i in c.block for v in dbg.model.eqns[i].outputs}
    assert all(r.lifted_var in block_outputs and r.ok for r in c.rows)
    dbg.closure_toggle.value = False
    assert dbg.closure_panel.layout.display == "none"


def test_closure_and_lifted_that_disagree_are_flagged():
    dbg = debugger_with("type-dependent pullback", lambda x: np.sum(np.sin(x)))
    name = repr(dbg.model.eqns[forward_eqn(dbg, "sin")].outputs[0])
    dbg.select(name)
    dbg.show_closure(True)
    c = dbg.comparison()
    assert not c.ok and c.rows[0].max_abs > 0
    np.testing.assert_allclose(c.rows[0].lifted, 2 * c.rows[0].closure)   # the traced branch doubles
    assert 'data-ok="false"' in dbg.closure_panel.value and "DIFFER" in dbg.closure_panel.value


def test_opaque_fallbacks_are_shown_with_their_reason():
    dbg = debugger_with("opaque fallback")
    fallbacks = dbg.model.gt.fallbacks
    assert fallbacks and "opaque closure" in dbg.listing.value
    assert f'title="{html.escape(fallbacks[0].reason)}">opaque closure' in dbg.listing.value
    name = repr(dbg.model.eqns[forward_eqn(dbg, "opaque_rrule")].outputs[0])
    dbg.select(name)
    dbg.show_closure(True)
    c = dbg.comparison()
    assert c.fallback == fallbacks[0].reason
    assert 'data-fallback="true"' in dbg.closure_panel.value
    assert html.escape(fallbacks[0].reason) in dbg.closure_panel.value
    assert c.ok                                          # the tape calls the very same closure


def test_comparison_of_a_value_outside_any_rule_is_none():
    dbg = tapeviz.debug(lambda x: np.sum(x * 2.0), np.ones(3))
    assert dbg.comparison("%0") is None
    dbg.select("%0")
    dbg.show_closure(True)
    assert 'data-instance=""' in dbg.closure_panel.value


@pytest.mark.parametrize("argnums", [0, 1])
def test_checks_follow_argnums(mlp_args, argnums):
    dbg = tapeviz.debug(mlp_loss, *mlp_args, argnums=argnums)
    report = dbg.run_checks(equations=False)
    assert report.ok and f"{len(dbg.model.gt.wrt)} input(s) differentiated" in report["program.build"].message
