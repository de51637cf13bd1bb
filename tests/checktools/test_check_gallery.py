"""Every wrong rule of the gallery is flagged by the check designed for it, with the equation and
the source line named."""
import inspect
import os

import pytest

from ad.checktools import gallery
from ad.checktools.gallery import GALLERY
from ad.primitives import lookup

GALLERY_FILE = os.path.abspath(inspect.getsourcefile(gallery))
ENTRIES = [pytest.param(e, id=name) for name, e in GALLERY.items()]


def _span(fn) -> tuple[int, int]:
    lines, start = inspect.getsourcelines(getattr(fn, "__wrapped__", fn))
    return start, start + len(lines) - 1


def _file_line(source: str) -> tuple[str, int]:
    where = source.split(" in ")[0]
    path, _, line = where.rpartition(":")
    return os.path.abspath(path), int(line)


@pytest.mark.parametrize("entry", ENTRIES)
def test_flagged_by_its_check(entry):
    report = entry.run()
    result = report[entry.check]
    assert result.status == entry.expect, str(report)
    assert result.equation, f"{entry.check} names no equation:\n{report}"
    assert result.source, f"{entry.check} names no source line:\n{report}"
    if entry.expect == "fail":
        assert not report.ok and result in report.failures


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.values[0].program is None])
def test_rule_failures_name_the_rules_line(entry):
    report = entry.run()
    result = report[entry.check]
    path, line = _file_line(result.source)
    assert path == GALLERY_FILE
    spans = [_span(entry.rule), _span(entry.target) if inspect.isfunction(entry.target) else (0, -1),
             _span(entry.frule) if entry.frule else (0, -1), _span(entry.batch) if entry.batch else (0, -1)]
    assert any(a <= line <= b for a, b in spans), (result.source, spans)
    called = ["exp", "log1p"] if entry.target is gallery.softplus else [lookup(entry.target).name]
    assert all(name in result.equation for name in called), result.equation


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.values[0].program is not None])
def test_program_failures_name_the_callers_line(entry):
    result = entry.run()[entry.check]
    assert os.path.basename(__file__) in result.source      # the traced program's line is the caller's


def test_the_culprit_is_the_wrong_rule():
    report = GALLERY["culprit in a program"].run()
    assert report.culprit is not None and report.culprit.primitive == "sin"
    assert "fd.dot_product" in [c.name for c in report.culprit.failures]
    assert report["program.dot_product"].status == "fail"     # the end-to-end test sees it too


def test_the_residual_check_names_victim_and_mutator():
    numbers = GALLERY["residual mutated"].run()["program.residuals"].numbers["closure"]
    assert "exp" in numbers["victim"] and "gallery.square" in numbers["mutator"]


def test_the_kink_bug_is_judged_by_the_subgradient_bracket():
    result = GALLERY["wrong derivative only at a kink"].run()["fd.dot_product"]
    assert "kink" in result.message
    assert [v["element"] for v in result.numbers["violations"]] == [[0], [3]]   # only the zeros


def test_a_smooth_failure_reports_the_worst_jacobian_entries():
    jac = GALLERY["wrong sign"].run()["fd.dot_product"].numbers["jacobian"]
    worst = jac["worst"]
    assert worst and all(abs(w["rule"] + w["fd"]) < 1e-6 * max(1.0, abs(w["fd"])) for w in worst)  # rule = -fd
    assert len(jac["fd"]) == 4 and len(jac["rule"][0]) == 4


def test_gallery_rules_are_registered_only_while_checked():
    before = {e.name: lookup(e.target).rule for e in GALLERY.values() if e.register}
    for e in GALLERY.values():
        e.run(profile="interface")
    assert before == {e.name: lookup(e.target).rule for e in GALLERY.values() if e.register}


def test_program_state_is_restored_after_the_mutation_check():
    order, weights = gallery.ORDER.copy(), gallery.W.copy()
    GALLERY["closure reads a later-mutated array"].run()
    GALLERY["gradient dropped through a closure capture"].run()
    assert (gallery.ORDER == order).all() and (gallery.W == weights).all()
