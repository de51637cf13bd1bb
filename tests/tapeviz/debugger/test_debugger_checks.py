"""Checks in the debugger: a wrong rule from the checker's gallery is found, badged on both sides
and jumped to; re-running does not pile findings up; argnums are followed."""
import re

import pytest

import tapeviz
from ad.examples import mlp_loss
from tests.support.debug_programs import click, debugger_with, forward_eqn


def badged(markup: str, column: str) -> set[int]:
    """Equations with a failure badge in one column of the listing."""
    out = set()
    for cell in re.findall(rf'<td class="{column}">(.*?)</td>', markup):
        out |= {int(i) for i in re.findall(r'data-eq="(\d+)"[^>]*>(?:(?!</div>).)*tv-badge tv-fail', cell)}
    return out


def test_failing_program_jumps_to_the_culprit():
    dbg = debugger_with("culprit in a program")
    click(dbg, "checks")                  # after the `with`: the debugger keeps the rule it showed
    report = dbg.report
    assert not report.ok
    sin = forward_eqn(dbg, "sin")
    name = repr(dbg.model.eqns[sin].outputs[0])
    assert report.culprit.equation.startswith(f"{name}:")
    assert dbg.selected == name
    assert dbg.model.step.kind == "pullback" and dbg.model.step.of == name
    assert re.match(rf"backward, step \d+ of \d+: pullback of {name} \(sin\)", dbg.phase_line)
    block = dbg.model.rows[dbg.model.row_of_eqn[sin]].backward
    assert sin in badged(dbg._listing, "tv-forward")
    assert block[0] in badged(dbg._listing, "tv-backward")
    checks = dbg._frame["checks"]
    assert checks["state"] == "fail" and checks["summary"] == report.summary()
    assert [a["label"][0] for a in checks["alerts"]] == ["\u2717" if a.status == "fail" else "\u26a0" for a in dbg.alerts]
    assert dbg.model.graph.nodes[f"eq/{name}"]["failures"]

    dbg.first()
    last = len(dbg.alerts) - 1
    click(dbg, "alert", k=last)           # an alert takes the cursor back to the culprit
    assert dbg.model.step.of == name and dbg.selected == name
    assert dbg._frame["checks"]["current"] == last
    target = dbg._frame["checks"]["alerts"][last]["target"]       # where a static page jumps
    assert target["pullback"] == dbg.step and target["select"] == name

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
    assert "tv-badge" not in dbg._listing
    checks = dbg._frame["checks"]
    assert checks["alerts"] == [] and checks["state"] == "pass"
    # the bar counted the program's equations as ad.check went through them
    assert checks["total"] == len(report.equations) == checks["done"]


@pytest.mark.parametrize("argnums", [0, 1])
def test_checks_follow_argnums(mlp_args, argnums):
    dbg = tapeviz.debug(mlp_loss, *mlp_args, argnums=argnums)
    report = dbg.run_checks(equations=False)
    assert report.ok and f"{len(dbg.model.gt.wrt)} input(s) differentiated" in report["program.build"].message
