"""Every rule of the registry (ad.lib, ad.nn and ad.scipy) passes every check at its declared
samples, several shapes and dtypes, and at kinks where a subgradient applies: no false positives.
ad.scipy's modules are imported here, so the check covers them in any test order."""
import time
from collections import defaultdict

import numpy as np
import pytest

import ad
import ad.nn
import ad.scipy.integrate  # noqa: F401  (ad.scipy's primitives join the registry)
import ad.scipy.linalg  # noqa: F401
import ad.scipy.signal  # noqa: F401
import ad.scipy.special  # noqa: F401
import ad.scipy.stats  # noqa: F401
from ad.checks import ProgramReport, check_rule
from ad.checks.library import check_library, sampled


def test_the_library_check_reads_the_registry_at_call_time():
    """ad.nn registers its primitives after ad.lib: the library check covers them."""
    assert set(ad.nn.PRIMITIVES) <= set(sampled())
    assert {p.kind for p in sampled()} == {"pure", "random", "guard"}


# Warnings that say what a rule cannot do, by name (never a wrong result).
EXPECTED_WARNINGS = {("scipy.integrate.odeint", "fd.jvp"): "forward mode refuses odeint: its pullback "
                     "(the adjoint solve) has no transpose and no derivative, and it has no frule"}


@pytest.mark.timeout(120)      # the suite's budget for it; the measured duration is recorded
def test_every_library_rule_passes_every_check(record_property):
    start = time.perf_counter()
    reports = check_library()
    duration = time.perf_counter() - start
    record_property("library_check_seconds", round(duration, 2))
    print(f"\nwhole-library check: {len(reports)} cases in {duration:.1f} s")
    problems = [f"{r.title}: {c.name}: {c.message}" for r in reports for c in r.checks
                if c.status == "fail" or c.status == "warn" and (getattr(r, "primitive", None), c.name) not in EXPECTED_WARNINGS]
    assert not problems, "\n".join(problems)
    labels = defaultdict(set)
    for r in reports:
        name, *rest = r.title.split(" ", 1)[1].split(" ")       # "check_rule sin ..." or "check svd ..."
        labels[name].add(" ".join(rest))
    assert set(labels) == {p.name for p in sampled()}
    compositions = [r for r in reports if isinstance(r, ProgramReport)]
    assert all(r.title.startswith("check ") and r.equations for r in compositions)
    rules = [e for r in reports for e in (r.equations if isinstance(r, ProgramReport) else [r])]
    transposed = {r.primitive for r in rules if r["forward.transpose"].status == "pass"}
    assert {p.name for p in sampled() if p.linear is not None} <= transposed   # every declared transpose
    for name in ("sin", "add", "maximum", "sum", "clip"):     # several shapes, both dtypes
        shapes = {label.split()[-2] for label in labels[name] if "float" in label}
        assert len(shapes) >= 3 and any("float32" in label for label in labels[name]), labels[name]


def _fd(report):
    result = report["fd.dot_product"]
    assert report.ok and not report.warnings, str(report)
    return result


def test_abs_at_zero():
    _fd(check_rule(np.abs, np.array([0.0, 1.5, -0.5, 0.0])))
    _fd(check_rule(np.abs, 0.0))


def test_relu_like_maximum_at_zero():
    _fd(check_rule(lambda x: np.maximum(x, 0.0), np.array([0.0, 0.5, -0.5, 0.0])))


def test_clip_at_its_bounds_uses_the_subgradient_bracket():
    result = _fd(check_rule(lambda x: np.clip(x, -0.5, 0.5), np.array([-0.5, 0.5, 0.0, 0.9])))
    assert "kink" in [d["point"] for d in result.numbers["directions"]]


def test_max_with_ties():
    _fd(check_rule(np.max, np.array([1.0, 1.0, 0.3, -2.0])))


relu = ad.primitive(name="test.relu")(lambda x: np.maximum(x, 0.0))


@pytest.mark.parametrize("choice", [0.0, 1.0, 0.5])
def test_every_subgradient_of_relu_passes(choice):
    def rule(x):
        return relu(x), lambda dy: (dy * np.where(x > 0, 1.0, np.where(x == 0, choice, 0.0)),)
    _fd(check_rule(relu, np.array([0.0, 1.0, -1.0, 0.0]), rule=rule))
