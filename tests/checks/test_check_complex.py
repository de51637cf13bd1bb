"""The checker with complex numbers: complex operands in check_rule, check and the library check;
finite differences along real and imaginary directions with the real pairing Re(sum(g * dz));
Jacobian entries naming the real or imaginary part; the holomorphic checks (Cauchy-Riemann by
finite differences against the complex-linearity of the pullback); silent real -> complex and
complex64 -> complex128 promotions. The convention: docs/complex.md (HIPS autograd's and JAX's)."""
import numpy as np
import pytest

import ad
from ad.checks import check, check_rule
from ad.checks.fd import flat64, pairing_weights, basis, coordinate, cotangent_of, jacobian, pair
from ad.checktools.gallery import GALLERY
from ad.checks.library import check_library
from ad.primitives import BY_FUNCTION, REGISTRY
from ad.samples import F, Y, Sample

Z = np.array([0.5 + 0.3j, -1.0 + 0.2j, 1.2 - 0.4j])
W = np.array([0.3 - 0.8j, 1.1 + 0.5j, -0.6 - 0.2j])


def _remove(*prims):
    for p in prims:
        REGISTRY.pop(p.name, None)
        if p.function is not None:
            BY_FUNCTION.pop(p.function, None)


@pytest.fixture(scope="module")
def prims():
    """Test-local primitives with correct complex rules: a holomorphic one (exp), a
    non-holomorphic one (conj), and a product whose operands may be real or complex."""
    @ad.primitive(name="test.cexp", complex_rule=True)
    def cexp(z):
        return np.exp(z)

    @ad.primitive(name="test.conj", complex_rule=True)
    def conj(z):
        return np.conj(z)

    mul_p = ad.Primitive("test.cmul", lambda a, b: a * b, complex_rule=True,
                         samples=(Sample((F, Y), shapes=("vector", "matrix")),))

    @ad.rrule(cexp.primitive)
    def _cexp(z):
        y = cexp(z)
        return y, lambda dy: (dy * y,)

    @ad.rrule(conj.primitive)
    def _conj(z):
        return conj(z), lambda dy: (np.conj(dy),)

    @ad.rrule(mul_p)
    def _mul(a, b):
        return mul_p.bind(a, b), lambda dy: (dy * b, dy * a)    # holomorphic in each: no conj
    yield {"exp": cexp, "conj": conj, "mul": mul_p}
    _remove(cexp.primitive, conj.primitive, mul_p)


# -- finite differences -----------------------------------------------------------------------------

def test_a_jacobian_column_per_real_and_imaginary_part():
    j, ok = jacobian(np.conj, [Z[:2]], 0)
    assert ok.all() and j.shape == (4, 4)
    np.testing.assert_allclose(j, np.diag([1.0, 1.0, -1.0, -1.0]), atol=1e-9)   # Re stays, Im flips
    assert coordinate(3, Z[:2]) == ((1,), "imag") and coordinate(1, Z[:2]) == ((1,), "real")
    assert basis([Z[:2]], 0, 3)[0].tolist() == [0, 1j]
    assert coordinate(1, np.ones(2)) == ((1,), None)


def test_cotangent_of_inverts_the_pairing_weights():
    rng = np.random.default_rng(0)
    like = [Z, np.ones(2)]
    w = rng.standard_normal(8)
    vs = cotangent_of(w, like)
    np.testing.assert_allclose(pairing_weights(vs), w)
    t = [W, np.array([2.0, -1.0])]
    assert pair(vs[0], t[0]) + pair(vs[1], t[1]) == pytest.approx(float(w @ flat64(t)))


# -- check_rule with complex operands ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("fn", [np.real, np.imag])
def test_real_and_imag_pass_at_complex_operands(fn, dtype):
    report = check_rule(fn, Z.astype(dtype), second_order=True)
    assert report.ok and not report.warnings, str(report)
    assert report["fd.dot_product"].status == "pass"


@pytest.mark.parametrize("name", ["exp", "conj"])
def test_correct_complex_rules_pass_every_check(prims, name):
    report = check_rule(prims[name], Z)
    assert report.ok and not report.warnings, str(report)
    message = report["complex.holomorphic"].message
    assert ("holomorphic, complex-linear pullback" if name == "exp" else "not holomorphic") in message


def test_mixed_real_and_complex_operands(prims):
    """A real operand of a complex product gets a complex cotangent, projected by the driver:
    not a dtype error."""
    x = np.array([0.5, -1.0, 2.0])
    report = check_rule(prims["mul"], x, Z)
    assert report.ok and not report.warnings, str(report)
    assert "projected to its real part" in report["cotangent.dtype"].message
    numbers = report["complex.holomorphic"].numbers
    assert list(numbers) == ["operand 1"]                  # only the complex operand is judged


def test_complex64_is_differenced_in_complex128_at_its_own_tolerance(prims):
    report = check_rule(prims["exp"], Z.astype(np.complex64))
    assert report.ok, str(report)
    assert report["fd.dot_product"].numbers["rtol"] == 1e-3


def test_holomorphic_true_asserts_holomorphy(prims):
    assert check_rule(prims["exp"], Z, holomorphic=True).ok
    report = check_rule(prims["conj"], Z, holomorphic=True)
    result = report["complex.holomorphic"]
    assert result.status == "fail" and "asserted holomorphic" in result.message
    assert check_rule(np.real, Z, holomorphic=True)["complex.holomorphic"].status == "fail"   # real-valued


def test_the_holomorphic_check_is_skipped_for_real_values():
    result = check_rule(np.sin, np.linspace(0, 1, 3))["complex.holomorphic"]
    assert result.status == "skipped" and result.reason == "no complex operand"
    result = check_rule(np.real, Z)["complex.holomorphic"]
    assert result.status == "skipped" and "real outputs" in result.reason


def test_the_holomorphic_check_has_a_severity():
    report = GALLERY["forgotten conj in conj"].run(severity={"complex": "warn", "fd": "off"})
    assert report.ok and report["complex.holomorphic"].status == "warn"


# -- what the gallery's complex entries show ------------------------------------------------------

@pytest.mark.parametrize("name", ["forgotten conj in abs", "PyTorch's convention"])
def test_a_conjugated_pullback_is_diagnosed(name):
    result = GALLERY[name].run()["fd.dot_product"]
    assert result.status == "fail" and result.numbers["conjugated"]
    assert "conjugate of the right cotangent" in result.message


def test_a_real_cotangent_for_a_complex_input_points_at_the_imaginary_parts():
    result = GALLERY["real cotangent for a complex input"].run()["fd.dot_product"]
    jac = result.numbers["jacobian"]
    assert jac["shape"] == [8, 8]                                  # 4 complex elements, both ways
    assert {w["input_part"] for w in jac["worst"]} == {"imag"}     # the rule has no Im column
    assert all(w["rule"] == 0 for w in jac["worst"])
    assert "Im in" in result.message
    assert "conjugate" not in result.message


def test_a_complex_linear_pullback_of_a_holomorphic_function_passes_the_holomorphic_check():
    """PyTorch's formula g * conj(f'(z)) is complex-linear: only finite differences catch it."""
    report = GALLERY["PyTorch's convention"].run()
    assert report["complex.holomorphic"].status == "pass"


# -- programs -----------------------------------------------------------------------------------------

def test_a_complex_program_passes():
    """imag's pullback -1j * g is a complex cotangent of a complex operand: no promotion."""
    report = check(lambda z: np.sum(np.real(z) * np.imag(z)), Z)
    assert report.ok and not report.warnings, str(report)
    assert report["program.dtype_flow"].status == "pass"


def test_holomorphic_programs(prims):
    exp, conj = prims["exp"], prims["conj"]
    report = check(lambda z: exp(exp(z)), Z, holomorphic=True)
    assert report.ok, str(report)
    assert "holomorphic, complex-linear" in report["program.holomorphic"].message
    report = check(lambda z: conj(exp(z)), Z)
    assert report.ok and "not holomorphic" in report["program.holomorphic"].message, str(report)
    assert check(lambda z: conj(exp(z)), Z, holomorphic=True)["program.holomorphic"].status == "fail"


def test_a_complex64_program_keeps_complex64(prims):
    report = check(lambda z: np.sum(np.real(prims["exp"](z))), Z.astype(np.complex64))
    assert report.ok and report["program.dtype_flow"].status == "pass", str(report)


# -- the library check ------------------------------------------------------------------------------

def test_the_library_check_runs_complex_samples(prims):
    reports = check_library(["test.cmul", "real", "imag"])
    titles = [r.title.removeprefix("check_rule ") for r in reports]
    for label in ("test.cmul vector complex128", "test.cmul matrix complex128", "test.cmul matrix complex64",
                  "test.cmul matrix mixed", "real matrix complex64"):
        assert label in titles, titles
    assert not any("imag" in t and "mixed" in t for t in titles)     # one operand: nothing to mix
    problems = [f"{r.title}: {c.name}: {c.message}" for r in reports for c in r.checks if c.status in ("fail", "warn")]
    assert not problems, "\n".join(problems)
    mixed = next(r for r in reports if r.title.endswith("test.cmul matrix mixed"))
    assert mixed["cotangent.dtype"].numbers["operands"] == ["complex128", "float64"]


def test_a_complex_operand_declared_no_tangent_is_caught(prims):
    mul = prims["mul"]

    def drops(a, b):
        return mul.bind(a, b), lambda dy: (dy * b, ad.NoTangent())
    result = check_rule(mul, Z, W, rule=drops)["cotangent.no_tangent"]
    assert result.status == "fail" and result.numbers["operands"] == [1]


def test_output_rows_of_a_complex_jacobian_name_their_part():
    from ad.checks.derivatives import _output_coordinate
    y0 = [np.ones(2), Z]                     # rows: 2 real, then 3 real parts, then 3 imaginary parts
    assert [_output_coordinate(r, y0) for r in (1, 2, 4, 5, 7)] == [
        (1, None), (2, "real"), (4, "real"), (2, "imag"), (4, "imag")]


def test_a_candidate_complex_rule_is_checked_before_it_is_declared():
    """Without complex_rule, differentiating refuses (registration.fires says why), but every
    other check runs on the rule: an author checks it before declaring complex_rule=True."""
    @ad.primitive(name="test.undeclared_exp")
    def undeclared(z):
        return np.exp(z)

    def rule(z):
        y = undeclared(z)
        return y, lambda dy: (dy * y,)
    try:
        report = check_rule(undeclared, Z, rule=rule)
    finally:
        _remove(undeclared.primitive)
    fires = report["registration.fires"]
    assert fires.status == "fail" and "complex values" in fires.message
    assert [c.name for c in report.failures] == ["registration.fires"]
    assert report["fd.dot_product"].status == "pass" and report["complex.holomorphic"].status == "pass"


def test_a_pullback_refusing_random_cotangents_on_purpose():
    """A rule that refuses gauge-dependent cotangents (as eigh's refuses phase-dependent ones):
    in a program, at the cotangent the program records, it is checked; the checks drawing random
    cotangents are skipped with the reason. Alone, at a random cotangent, it fails."""
    @ad.primitive(name="test.gauge", complex_rule=True)
    def gauge(z):
        return z * 1.0

    def rule(z):
        def pullback(dy):
            if np.any(np.imag(dy) != 0):
                raise ad.NonDifferentiableError("this loss depends on the gauge")
            return (dy,)
        return gauge(z), pullback
    try:
        with ad.using_rule(gauge, rule):
            report = check(lambda z: np.sum(np.real(gauge(z))), Z)
            alone = check_rule(gauge, Z)
    finally:
        _remove(gauge.primitive)
    assert report.ok, str(report)
    eqn = next(r for r in report.equations if r.primitive == "test.gauge")
    assert eqn["algebra.linearity"].status == "skipped" and "refuses the random" in eqn["algebra.linearity"].reason
    assert eqn["structure.arity"].status == "pass" and eqn["algebra.zero"].status == "pass"
    assert alone["structure.arity"].status == "fail"
