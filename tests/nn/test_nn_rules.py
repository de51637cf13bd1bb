"""Every line of the ad.nn spec table (tests/support/nn_specs.py): finite differences, the closure /
lifted / compiled forms agreeing, no opaque fallback, float32 kept float32, PyTorch's forward
values and gradients (float64), and the program checker (ad.checks.check). Every ad.nn
primitive passes ad.checks.check_rule at its declared samples, second order included."""
import zlib

import numpy as np
import pytest
import torch

import ad
import ad.nn as nn
from ad.checks import check, check_rule
from ad.checks.fd import dot_product_test
from ad.samples import caller, draw, operands
from ad.tape import validate
from tests.support.nn_specs import CASES, ELSEWHERE

PARAMS = [pytest.param(c, id=c.id) for c in CASES]


def _rng(case, salt):
    return np.random.default_rng(zlib.crc32(f"{case.id}/{salt}".encode()))


def _weighted(case, w):
    """A scalar function of the case's inputs: <fn(*xs), w>."""
    return lambda *xs: np.sum(case.fn(*xs) * w)


def test_every_function_has_a_case():
    covered = {c.of for c in CASES}
    missing = sorted(set(nn.__all__) - covered - set(ELSEWHERE))
    assert not missing, f"ad.nn functions without a line in tests/support/nn_specs.py: {missing}"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if c.prims])
def test_case_exercises_its_primitives(case):
    xs = draw(case.args, _rng(case, "prims"))
    names = {e.prim.name for e in ad.trace(case.fn, *xs).eqns}
    assert set(case.prims) <= names, f"expected {case.prims} among {sorted(names)}"


@pytest.mark.parametrize("case", PARAMS)
def test_gradient_matches_finite_differences(case):
    rng = _rng(case, "fd")
    xs = draw(case.args, rng)
    _, pullback = ad.vjp(case.fn, *xs)
    for lhs, rhs, est in dot_product_test(case.fn, pullback, xs, rng=rng, domains=[a.domain for a in case.args]):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= 1e-6 * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("case", PARAMS)
def test_forms_agree_without_fallbacks(case):
    """closure, lifted (with and without passes) and compiled agree; the gradient tape lifts every
    rule (no opaque fallback) and passes validate()."""
    rng = _rng(case, "forms")
    xs = draw(case.args, rng)
    loss = _weighted(case, rng.standard_normal(np.shape(case.fn(*xs))))
    argnums = tuple(range(len(xs)))
    gt = ad.grad_tape(loss, *xs, argnums=argnums)
    assert gt.fallbacks == ()
    validate(gt)
    validate(ad.passes.optimize(gt))
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(loss, argnums, form=form, optimize=optimize)(*xs)
        for r, g in zip(ref, got):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-13, err_msg=f"{form} optimize={optimize}")


@pytest.mark.parametrize("case", PARAMS)
def test_float32(case):
    """float32 in: every float in the gradient tape is float32, and the gradient is close to
    the float64 one."""
    rng = _rng(case, "f32")
    xs64 = draw(case.args, rng)
    xs32 = [x.astype(np.float32) for x in xs64]
    w = rng.standard_normal(np.shape(case.fn(*xs64)))
    argnums = tuple(range(len(xs64)))
    gt = ad.grad_tape(_weighted(case, w.astype(np.float32)), *xs32, argnums=argnums)
    promoted = sorted({f"{v!r}:{v.aval}" for e in gt.eqns for v in e.outputs
                       if v.aval.is_float and v.aval.dtype != np.float32})
    assert not promoted, f"float32 promoted to float64 in {promoted[:5]}"
    g64 = ad.grad(_weighted(case, w), argnums)(*xs64)
    g32 = ad.grad(_weighted(case, w.astype(np.float32)), argnums)(*xs32)
    for a, b in zip(g32, g64):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * max(1.0, float(np.max(np.abs(b)))))


@pytest.mark.parametrize("case", PARAMS)
def test_matches_pytorch(case):
    """Forward values and gradients equal PyTorch's CPU implementation (float64)."""
    rng = _rng(case, "torch")
    xs = draw(case.args, rng)
    y = case.fn(*xs)
    tensors = [torch.tensor(x, requires_grad=True) for x in xs]
    ty = case.ref(*tensors)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=case.rtol, atol=case.rtol, err_msg="forward")
    w = rng.standard_normal(np.shape(y))
    (ty * torch.tensor(w)).sum().backward()
    grads = ad.grad(_weighted(case, w), tuple(range(len(xs))))(*xs)
    for i, (g, t) in enumerate(zip(grads, tensors)):
        scale = max(1.0, float(np.max(np.abs(g), initial=0.0)))
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=case.rtol, atol=case.rtol * scale,
                                   err_msg=f"gradient of argument {i}")


@pytest.mark.parametrize("case", PARAMS)
def test_passes_the_program_checker(case):
    """ad.checks.check on the composition: every recorded equation's rule at its recorded
    values, closure versus lifted, linearity, dtype flow, NaN, residual mutation."""
    rng = _rng(case, "check")
    xs = draw(case.args, rng)
    report = check(_weighted(case, rng.standard_normal(np.shape(case.fn(*xs)))), *xs)
    assert report.ok, str(report)


@pytest.mark.parametrize("prim,sample", [pytest.param(p, s, id=p.name) for p in nn.PRIMITIVES for s in p.samples])
def test_primitive_passes_the_rule_checker(prim, sample):
    """ad.checks.check_rule, all checks including second order (the rules of a primitive's
    pullback are exercised too)."""
    report = check_rule(caller(prim, sample), *operands(sample, np.random.default_rng(1)), second_order=True)
    assert report.ok, str(report)
