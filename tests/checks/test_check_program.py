"""ad.check on whole programs: clean programs pass every check; kinks, the culprit, determinism,
equation names that match the gradient tape, pytrees and float32."""
import numpy as np
import pytest

import ad
from ad.checks import CheckFailure, check
from ad.checks.settings import PROGRAM_CHECKS


def mlp(params, x):
    h = np.tanh(x @ params["W1"] + params["b1"])
    return np.sum((h @ params["W2"]) ** 2) / x.shape[0]


def _params(rng, dtype=np.float64):
    return {k: rng.standard_normal(s).astype(dtype) for k, s in
            (("W1", (3, 4)), ("b1", (4,)), ("W2", (4, 2)))}


def test_a_correct_program_passes_every_check():
    rng = np.random.default_rng(0)
    report = check(mlp, _params(rng), rng.standard_normal((5, 3)))
    assert report.ok and not report.warnings, str(report)
    assert [c.name for c in report.checks] == [name for name, _, _ in PROGRAM_CHECKS]
    assert len(report.equations) >= 6 and all(r.ok for r in report.equations)


def test_float32_programs_use_float32_tolerances():
    rng = np.random.default_rng(1)
    report = check(mlp, _params(rng, np.float32), rng.standard_normal((5, 3)).astype(np.float32))
    assert report.ok, str(report)
    assert report["program.dot_product"].numbers["rtol"] == 1e-3


def test_equations_are_named_as_in_the_gradient_tape():
    rng = np.random.default_rng(2)
    args = (_params(rng), rng.standard_normal((5, 3)))
    listing = str(ad.grad_tape(mlp, *args))
    report = check(mlp, *args)
    assert all(r.equation in listing for r in report.equations)


def test_kinks_are_reported_and_judged_by_subgradients():
    report = check(lambda x: np.sum(np.abs(x) + np.maximum(x, 0.0)), np.array([0.0, 1.0, -2.0, 0.0]))
    assert report.ok
    assert report["program.kinks"].status == "warn"
    assert [k["at"] for k in report["program.kinks"].numbers["equations"]] == [2, 2]


def test_the_culprit_is_the_first_failing_equation_in_reverse_order():
    def wrong_exp(x):
        y = np.exp(x)
        return y, lambda dy: (dy * y * 1.01,)

    def f(x):
        return np.sum(np.sin(np.exp(np.tanh(x))) * np.exp(x))
    with ad.using_rule(np.exp, wrong_exp):
        report = check(f, np.linspace(-1, 1, 4))
    assert not report.ok and report["program.dot_product"].status == "fail"
    failing = [r for r in report.equations if not r.ok]
    assert [r.primitive for r in failing] == ["exp", "exp"]
    assert report.culprit is failing[-1]                      # the later one: backward meets it first
    assert report.culprit.equation in report["program.equations"].message


def test_equations_false_skips_the_per_equation_checks():
    report = check(lambda x: np.sum(np.sin(x)), np.ones(3), equations=False)
    assert report.equations == [] and report["program.equations"].status == "skipped"


def test_a_random_pullback_is_not_deterministic():
    noisy = ad.primitive(name="test.noisy")(lambda x: 2.0 * x)
    rng = np.random.default_rng()

    def rule(x):
        return noisy(x), lambda dy: (2.0 * dy + 1e-9 * float(rng.standard_normal()),)
    with ad.using_rule(noisy, rule):
        report = check(lambda x: np.sum(noisy(x)), np.ones(3))
    assert report["program.determinism"].status == "fail"
    assert "closure" in report["program.determinism"].message  # the lifted tape baked one draw in


def test_argnums_and_raise_on_failure():
    report = check(lambda a, b: np.sum(a * b), np.ones(3), np.arange(3.0), argnums=(1,))
    assert report.ok and "1 input(s) differentiated" in report["program.build"].message

    def bad(x):
        return np.sin(x), lambda dy: (-dy * np.cos(x),)
    with ad.using_rule(np.sin, bad), pytest.raises(CheckFailure, match="program.dot_product"):
        check(lambda x: np.sum(np.sin(x)), np.ones(3), raise_on_failure=True)


def test_a_missing_rule_fails_the_build_and_skips_the_rest():
    bare = ad.primitive(name="test.bare_program")(lambda x: x * 3.0)
    report = check(lambda x: np.sum(bare(x)), np.ones(2))
    assert report["program.build"].status == "fail" and "has no rule" in report["program.build"].message
    assert all(c.status == "skipped" for c in report.checks[1:])


def test_progress_is_reported_per_equation():
    calls = []
    report = check(lambda x: np.sum(np.sin(x) * np.exp(x)), np.linspace(0.1, 1.0, 4),
                   progress=lambda done, total, what: calls.append((done, total, what)))
    assert report.ok
    total = calls[0][1]
    assert total == 4                          # sin, exp, multiply, sum
    assert [c[0] for c in calls] == list(range(total + 1))
    assert calls[0][2].startswith("checking") and calls[-1][2] == "done"
