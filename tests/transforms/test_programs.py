"""Property-based tests: random programs built by the library's generator (``ad.checktools.fuzz``,
real family, no registry steps). Their gradients agree across the closure, lifted,
lifted+passes and compiled forms and forward mode, and with finite differences (smooth
programs; tests/checktools/test_fuzz.py adds autograd, JSON, ONNX and registry steps); programs with kinks
re-run their lifted tape on new inputs; second derivatives agree with finite differences of the
first. Cost: ~20 s."""
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

import ad
from ad.checktools import fuzz
from ad.checks.fd import directional_derivative
from ad.passes import optimize
from ad.tape import validate

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FORMS_ONLY = fuzz.Oracles(onnx=False, autograd=False, second_order=False, json=False)   # test_fuzz runs those


@SETTINGS
@given(fuzz.programs("real", registry=0, kinks=False))
def test_random_programs_all_forms_and_finite_differences(program):
    forms = fuzz.run(program, FORMS_ONLY)
    assume(forms is not None)
    assert "finite differences" in forms or program.dtype == "float32"
    validate(ad.grad_tape(program.function(), *program.inputs(), argnums=(0, 1)))


@SETTINGS
@given(fuzz.programs("real", registry=0))
def test_random_programs_with_kinks_agree_across_forms(program):
    f, xs = program.function(), program.inputs()
    assume(fuzz.well_posed(program, xs))
    fuzz.run(program, FORMS_ONLY)
    gt = optimize(ad.grad_tape(f, *xs, argnums=(0, 1)))
    xs2 = replace(program, seed=program.seed + 1).inputs()      # re-run the lifted tape on new inputs
    assume(fuzz.well_posed(program, xs2))
    ref2 = ad.grad(f, (0, 1), form="closure")(*xs2)
    rtol = 1e-10 if program.dtype == "float64" else 1e-4
    for a, b in zip(gt(*xs2)[1], ref2):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fuzz.programs("real", registry=0, kinks=False))
def test_second_order_matches_finite_differences_of_first(program):
    assume(program.dtype == "float64")
    f, xs = program.function(), program.inputs()
    assume(fuzz.well_posed(program, xs))
    rng = np.random.default_rng(program.seed)
    v = rng.standard_normal(program.shape)
    g = ad.grad(f)

    def gv(x0):
        return np.sum(g(x0, xs[1]) * v)
    hvp = ad.grad(gv)(xs[0])
    u = rng.standard_normal(program.shape)
    est = directional_derivative(gv, [xs[0]], [u])
    want = float(est.value[0])
    got = float(np.sum(hvp * u))
    assert abs(got - want) <= 1e-5 * max(1.0, abs(want)) + 10 * est.error
