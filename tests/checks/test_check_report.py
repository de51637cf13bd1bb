"""Reports as text, escaped HTML and JSON; the finite-difference numerics behind the checks."""
import json

import numpy as np

from ad.checks import CheckFailure, CheckResult, RuleReport, check
from ad.checks.fd import directional_derivative, jacobian, max_step, one_sided_derivative, refined
from ad.checktools.gallery import GALLERY


def _hostile():
    checks = [CheckResult("primal.value", "fail", "<script>alert(1)</script> & more",
                          {"x": np.array([1.0, np.nan]), "y": np.float32(np.inf)}, "%1 = <b>", "f.py:1 in <lambda>"),
              CheckResult("primal.shape", "pass", "fine")]
    return RuleReport("check_rule <evil>", 3, {"seed": 3}, checks, equation="%1 = <b>")


def test_html_escapes_everything_user_visible():
    html = _hostile()._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>" not in html and "&lt;evil&gt;" in html and "&lt;lambda&gt;" in html


def test_json_is_plain_and_complete():
    data = json.loads(_hostile().to_json())
    assert data["ok"] is False and data["seed"] == 3
    assert data["checks"][1]["numbers"] == {"x": [1.0, "nan"], "y": "inf"}    # sorted: value after shape
    assert data["counts"] == {"pass": 1, "fail": 1, "warn": 0, "skipped": 0}


def test_text_lists_every_check_and_where_failures_are():
    text = str(GALLERY["wrong sign"].run())
    assert "FAIL    fd.dot_product" in text and "gallery.py:" in text and "(seed 0)" in text


def test_program_reports_render_their_equations():
    report = GALLERY["culprit in a program"].run()
    assert "culprit:" in str(report) and "culprit:" in report._repr_html_()
    data = json.loads(report.to_json())
    assert data["culprit"] == report.culprit.equation and len(data["equations"]) == len(report.equations)


def test_check_failure_is_an_assertion_error_listing_all():
    report = _hostile()
    try:
        report.raise_on_failure()
    except CheckFailure as exc:
        assert isinstance(exc, AssertionError) and "primal.value" in str(exc)
    else:
        raise AssertionError("no CheckFailure")


def test_clean_program_json_round_trip():
    data = json.loads(check(lambda x: np.sum(x * x), np.ones(3)).to_json())
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert statuses.pop("program.holomorphic") == "skipped"       # no complex input
    assert statuses.pop("program.batched_grad") == "skipped"      # not requested (batched=True)
    assert data["ok"] and set(statuses.values()) == {"pass"}


# -- numerics ------------------------------------------------------------------------------------

def test_one_sided_derivatives_straddle_a_kink():
    f = np.abs
    plus = one_sided_derivative(f, [np.zeros(1)], [np.ones(1)], side=1)
    minus = one_sided_derivative(f, [np.zeros(1)], [np.ones(1)], side=-1)
    assert plus.converged and minus.converged
    assert plus.value[0] == 1.0 and minus.value[0] == -1.0


def test_refining_the_step_converges_next_to_a_kink():
    x = [np.array([2e-4])]
    coarse = directional_derivative(np.abs, x, [np.ones(1)])
    fine = refined(directional_derivative, np.abs, x, [np.ones(1)])
    assert not coarse.converged and fine.converged and abs(fine.value[0] - 1.0) < 1e-9


def test_richardson_jacobian_of_a_smooth_function():
    x = np.array([0.3, -0.7, 1.1])
    j, ok = jacobian(lambda v: np.sin(v) * v[0], [x], 0)
    exact = np.diag(np.cos(x) * x[0])
    exact[:, 0] += np.sin(x)
    assert ok.all() and np.allclose(j, exact, rtol=1e-10, atol=1e-12)


def test_steps_are_capped_to_the_domain():
    assert max_step([np.array([0.1])], [np.ones(1)], [(0.0, None)]) == 0.1 / 4
    assert max_step([np.array([0.1])], [np.zeros(1)], [(0.0, None)]) == np.inf


def test_float32_outputs_widen_the_convergence_test():
    x = [np.linspace(0.1, 1, 4)]
    est = directional_derivative(lambda v: np.sin(v).astype(np.float32), x, [np.ones(4)])
    assert est.converged and np.allclose(est.value, np.cos(x[0]), rtol=1e-3)
