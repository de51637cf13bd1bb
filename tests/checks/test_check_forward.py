"""The forward-mode checks: a hand-written frule against the pushforward derived from the rrule,
jvp against vjp against finite differences (per rule and end to end), linearity declarations
evaluated, and the dot-product test of every declared transpose."""
import numpy as np
import pytest

import ad
from ad.checks import check, check_rule
from ad.checktools.gallery import GALLERY

X = np.array([-1.2, 0.3, 0.8, 1.5])


def _statuses(report, prefix="forward."):
    return {c.name: c.status for c in report.checks if c.name.startswith(prefix)}


cube = ad.primitive(lambda x: x * x * x, name="test_forward.cube")
ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))


@pytest.fixture
def frule():
    """Register an frule on ``cube`` for one test."""
    prim = ad.primitives.lookup(cube)

    def register(rule):
        prim.frule = rule
    yield register
    prim.frule = None


def test_a_right_frule_agrees_with_the_derived_pushforward(frule):
    frule(lambda x: (cube(x), lambda dx: 3 * x * x * dx))
    report = check_rule(cube, X)
    assert report.ok, str(report)
    assert _statuses(report) == {"forward.linear": "skipped", "forward.transpose": "skipped",
                                 "forward.frule": "pass"}
    assert report["fd.jvp"].status == "pass"
    assert "from the frule" not in report["fd.jvp"].message


def test_an_frule_with_a_sign_error_is_the_one_blamed(frule):
    frule(lambda x: (cube(x), lambda dx: -3 * x * x * dx))
    report = check_rule(cube, X)
    result = report["forward.frule"]
    assert result.status == "fail" and "the frule is wrong" in result.message
    numbers = result.numbers
    np.testing.assert_allclose(numbers["frule"], -numbers["derived"])
    np.testing.assert_allclose(numbers["fd"], numbers["derived"], rtol=1e-6)
    assert "test_check_forward.py" in result.source          # the frule's line
    jvp = report["fd.jvp"]                               # forward mode uses the frule: jvp != vjp
    assert jvp.status == "fail" and "from the frule" in jvp.message and "the frule is wrong" in jvp.message


def test_a_right_frule_exposes_a_wrong_rrule(frule):
    frule(lambda x: (cube(x), lambda dx: 3 * x * x * dx))
    wrong = lambda x: (cube(x), lambda dy: (2 * x * x * dy,))      # noqa: E731
    report = check_rule(cube, X, rule=wrong)
    assert "the rrule is wrong" in report["forward.frule"].message
    assert report["fd.dot_product"].status == "fail"


def test_a_wrong_rrule_is_consistent_in_both_modes_but_not_with_finite_differences():
    """The derived pushforward transposes the pullback: jvp == vjp, both wrong."""
    report = GALLERY["wrong sign"].run()
    result = report["fd.jvp"]
    assert result.status == "fail" and "agrees with it" in result.message
    row = result.numbers["directions"][-1]
    assert abs(row["jvp"] - row["vjp"]) <= row["allowed"] and abs(row["fd"] + row["jvp"]) < 1e-6 * abs(row["fd"])


exp_linear = ad.primitive(lambda x: np.exp(x), name="test_forward.exp_linear", linear_in=(0,))
ad.rrule(exp_linear)(lambda x: (np.exp(x), lambda dy: (dy * np.exp(x),)))
mul_jointly = ad.primitive(lambda x, y: x * y, name="test_forward.mul_jointly", linear_in=(0, 1))
ad.rrule(mul_jointly)(lambda x, y: (mul_jointly(x, y), lambda dy: (dy * y, dy * x)))
mul_each = ad.primitive(lambda x, y: x * y, name="test_forward.mul_each", multilinear_in=(0, 1))
ad.rrule(mul_each)(lambda x, y: (mul_each(x, y), lambda dy: (dy * y, dy * x)))


def test_a_false_linearity_declaration_is_reported():
    report = check_rule(exp_linear, X)
    assert report["forward.linear"].status == "fail" and "linear_in=(0,)" in report["forward.linear"].message
    result = report["forward.transpose"]
    assert result.status == "fail" and "cannot be transposed" in result.message
    assert report["fd.dot_product"].status == "pass"         # the rule is right: only the declaration is wrong


def test_jointly_is_not_each_alone():
    """x * y is linear in each operand alone (multilinear_in), not in both at once (linear_in)."""
    report = check_rule(mul_jointly, X, X[::-1].copy())
    assert report["forward.linear"].status == "fail" and report["forward.linear"].numbers["operands"] == [0, 1]
    assert report["forward.transpose"].status == "fail"
    report = check_rule(mul_each, X, X[::-1].copy())
    assert _statuses(report)["forward.linear"] == "pass" and report["forward.transpose"].status == "pass"
    assert "each of operands [0, 1] alone" in report["forward.linear"].message


flip = ad.primitive(lambda x: x[::-1] * 2.0, name="test_forward.flip", linear_in=(0,))


def test_a_wrong_transpose_fails_the_dot_product_test():
    right = lambda x: (flip(x), lambda dy: (dy[::-1] * 2.0,))     # noqa: E731
    wrong = lambda x: (flip(x), lambda dy: (dy * 2.0,))           # forgets the reversal  # noqa: E731
    assert check_rule(flip, X, rule=right)["forward.transpose"].status == "pass"
    result = check_rule(flip, X, rule=wrong)["forward.transpose"]
    assert result.status == "fail" and "dot-product test" in result.message


@pytest.mark.parametrize("f,args", [
    (np.matmul, (np.arange(6.0).reshape(2, 3), np.ones((3, 2)))),
    (lambda x: np.sum(x, axis=0), (np.arange(6.0).reshape(2, 3),)),
    (lambda *xs: np.concatenate(xs), (X, 2 * X)),
    (np.conj, (X + 1j * X[::-1],)),
], ids=["matmul", "sum", "concatenate", "conj"])
def test_library_transposes_pass(f, args):
    report = check_rule(f, *args)
    assert report.ok and _statuses(report)["forward.transpose"] == "pass", str(report)


def test_forward_checks_draw_from_their_own_generators():
    """Turning the forward checks off changes no other check's numbers."""
    on, off = check_rule(np.tanh, X), check_rule(np.tanh, X, severity={"forward": "off", "fd.jvp": "off"})
    assert on["fd.dot_product"].numbers == off["fd.dot_product"].numbers
    assert off["fd.jvp"].status == "skipped"


def test_the_interface_profile_keeps_the_exact_forward_checks():
    report = check_rule(exp_linear, X, profile="interface")
    assert report["forward.linear"].status == "fail" and report["fd.jvp"].status == "skipped"


def test_program_jvp_end_to_end():
    W = np.arange(6.0).reshape(2, 3) / 6

    def f(W, x):
        return np.sum(np.tanh(W @ x) * np.maximum(x[:2], 0.0))
    report = check(f, W, np.array([0.5, -0.2, 1.0]))
    assert report["program.jvp"].status == "pass", str(report)
    assert len(report["program.jvp"].numbers["directions"]) == 2


def test_program_jvp_names_the_culprit():
    result = GALLERY["frule with a sign error in a program"].run()["program.jvp"]
    assert result.status == "fail" and "gallery.cube" in result.equation
    assert "the tangent tape is wrong" in result.message


def test_program_jvp_at_complex_inputs():
    z = X + 1j * X[::-1]
    assert check(lambda z: np.sum(np.abs(np.exp(z) * np.conj(z))), z)["program.jvp"].status == "pass"
