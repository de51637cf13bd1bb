"""ad.check_rule: what it accepts, the order and completeness of its checks, options, severity,
seeds, tolerances and domains."""
import json

import numpy as np
import pytest

import ad
from ad.checks import CheckFailure, check_rule
from ad.checktools.gallery import GALLERY
from ad.checks.settings import RULE_CHECKS
from ad.primitives import REGISTRY


def test_a_correct_rule_passes_and_lists_every_check_in_order():
    report = check_rule(np.sin, np.linspace(-1, 1, 5))
    assert report.ok and not report.warnings
    assert [c.name for c in report.checks] == [name for name, _, _ in RULE_CHECKS]
    assert all(c.status in ("pass", "skipped") for c in report.checks)
    assert all(c.reason for c in report.checks if c.status == "skipped")
    assert report.equation == "%1:f64[5] = sin %0"


def test_ad_exports_it():
    assert ad.check_rule is check_rule


def test_static_params_through_kwargs_and_primitives():
    x = np.arange(12.0).reshape(3, 4)
    assert check_rule(np.sum, x, kwargs={"axis": 0}).ok
    report = check_rule(REGISTRY["sum"], x, kwargs={"axis": (1,), "keepdims": True})
    assert report.ok and "keepdims=True" in report.equation


def test_a_candidate_rule_is_checked_without_being_registered():
    registered = REGISTRY["sin"].rule

    def candidate(x):
        return np.sin(x), lambda dy: (dy * np.cos(x),)
    report = check_rule(np.sin, np.ones(3), rule=candidate)
    assert report.ok and "without registering" in report["registration.rule"].message
    assert REGISTRY["sin"].rule is registered


def test_no_rule_fails_registration_and_skips_the_rest_with_a_reason():
    bare = ad.primitive(name="test.bare")(lambda x: x * 2.0)
    report = check_rule(bare, np.ones(3))
    assert report["registration.rule"].status == "fail"
    assert "@ad.rrule" in report["registration.rule"].message
    assert all(c.status == "skipped" and c.reason for c in report.checks if not c.name.startswith("registration"))


def test_non_differentiable_primitives_pass():
    report = check_rule(np.floor, np.array([0.2, 1.7, -0.4]))
    assert report.ok and report["cotangent.no_tangent"].status == "pass"


def test_integer_operands_get_no_tangent():
    report = check_rule(np.where, np.array([True, False]), np.ones(2), np.zeros(2))
    assert report["cotangent.integer"].status == "pass"


def test_interface_profile_skips_finite_differences():
    report = GALLERY["wrong sign"].run(profile="interface")
    for name in ("fd.dot_product", "cotangent.no_tangent", "second_order.dot_product"):
        assert report[name].status == "skipped" and "interface" in report[name].reason
    assert report.ok


def test_severity_turns_a_failure_into_a_warning():
    report = GALLERY["wrong sign"].run(severity={"fd": "warn"})
    assert report["fd.dot_product"].status == "warn" and report.ok


@pytest.mark.parametrize("options, needle", [
    ({"severity": {"fd.dot_prodcut": "warn"}}, "fd.dot_product"),
    ({"severity": {"fd": "loud"}}, "error"),
    ({"profile": "fast"}, "interface"),
    ({"directions": 0}, "direction"),
])
def test_bad_options_list_the_valid_choices(options, needle):
    with pytest.raises(ValueError, match=needle):
        check_rule(np.sin, np.ones(2), **options)


def test_an_unknown_option_lists_the_options():
    with pytest.raises(TypeError, match="directions"):
        check_rule(np.sin, np.ones(2), direction=3)


def test_raise_on_failure_lists_every_failure():
    with pytest.raises(CheckFailure) as info:
        GALLERY["non-linear pullback"].run(raise_on_failure=True)
    assert isinstance(info.value, AssertionError)
    failures = info.value.report.failures
    assert len(failures) >= 2 and all(c.name in str(info.value) for c in failures)


def test_the_seed_is_recorded_and_reproduces_the_numbers():
    x = np.linspace(0.1, 1, 4)
    a, b = check_rule(np.exp, x, seed=7), check_rule(np.exp, x, seed=7)
    assert a.seed == 7 and json.loads(a.to_json())["seed"] == 7
    assert a["fd.dot_product"].numbers == b["fd.dot_product"].numbers
    assert a["fd.dot_product"].numbers != check_rule(np.exp, x, seed=8)["fd.dot_product"].numbers


def test_float32_is_compared_with_its_own_tolerance():
    report = check_rule(np.tanh, np.linspace(-1, 1, 6).astype(np.float32))
    assert report.ok and report["fd.dot_product"].numbers["rtol"] == 1e-3


def test_steps_stay_inside_the_domain():
    x = np.array([1e-9, 0.5, 2.0])          # even 1e-3 / 65536 would leave log's domain
    report = check_rule(np.log, x)
    assert report.ok and not report.warnings, str(report)
    steps = [d["step"] for d in report["fd.dot_product"].numbers["directions"]]
    assert max(steps) < 1e-9
    assert check_rule(np.log, x, domains=[None])["fd.dot_product"].status == "warn"


def test_second_order_of_a_library_rule():
    report = check_rule(np.sin, np.linspace(-1, 1, 4), second_order=True)
    assert report["second_order.dot_product"].status == "pass", str(report)
