"""Every primitive of the registry at its declared samples, and every composition of the spec
tables (tests/cases.py): finite differences (dot-product test with a converged 5-point stencil),
the closure / lifted / compiled forms agreeing, float32 kept float32."""
import subprocess
import sys
import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import dot_product_test
from ad.checks.settings import fd_rtol
from ad.samples import F32, F64, declared_domains
from cases import CASES, floats, leaves, weighted, weights

GRADIENT_CASES = [pytest.param(c, shape, id=f"{c.name}-{shape}") for c in CASES for shape in c.sample.shapes
                  if any(i.kind == "float" for i in c.sample.inputs)]
FLOAT32_CASES = [p for p in GRADIENT_CASES if F32 in p.values[0].sample.dtypes and F64 in p.values[0].sample.dtypes]


def test_every_library_primitive_declares_samples():
    """Every primitive ``import ad, ad.nn`` registers (the opaque fallback pair aside) declares
    the samples the checker and these tests run; a fresh interpreter, so that the primitives
    tests register themselves do not count."""
    code = ("import ad, ad.nn\n"
            "print(sorted(n for n, p in ad.REGISTRY.items() if p.kind != 'opaque' and not p.samples))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"primitives without samples (declare Primitive(samples=...)): {out}"


def test_the_samples_of_a_primitive_agree_on_its_domains():
    """The checker reads a primitive's operand domains from its first sample (ad.samples.declared_domains)."""
    for p in ad.REGISTRY.values():
        for s in p.samples:
            doms = [i.domain for i in s.inputs]
            n = min(len(doms), len(p.samples[0].inputs))
            assert doms[:n] == declared_domains(p, n), f"{p.name}: its samples disagree on the operand domains"


@pytest.mark.parametrize("case,shape", GRADIENT_CASES)
def test_gradient_matches_finite_differences(case, shape):
    rng = np.random.default_rng(zlib.crc32(f"{case.name}/{shape}".encode()))
    xs = case.inputs(shape, rng, case.sample.dtypes[0])
    y, pullback = ad.vjp(case.fn, *xs)
    rtol = fd_rtol([np.result_type(v) for v in (*xs, *leaves(y))])    # float32 outputs round
    for lhs, rhs, est in dot_product_test(case.fn, pullback, xs, rng=rng, domains=case.domains):
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= rtol * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("case,shape", GRADIENT_CASES)
def test_forms_agree(case, shape):
    """closure, lifted, lifted without passes and compiled give the same gradient."""
    rng = np.random.default_rng(1)
    xs = case.inputs(shape, rng, case.sample.dtypes[0])
    loss = weighted(case.fn, weights(case.fn(*xs), rng))
    argnums = floats(xs)
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(loss, argnums, form=form, optimize=optimize)(*xs)
        for r, g in zip(ref, got):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")


@pytest.mark.parametrize("case,shape", FLOAT32_CASES)
def test_float32(case, shape):
    """float32 in, float32 gradients out, close to the float64 gradient."""
    rng = np.random.default_rng(2)
    xs64 = case.inputs(shape, rng)
    argnums = floats(xs64)
    xs32 = [np.float32(x) if np.ndim(x) == 0 else x.astype(np.float32) if i in argnums else x
            for i, x in enumerate(xs64)]
    ws = weights(case.fn(*xs64), rng)
    g64 = ad.grad(weighted(case.fn, ws), argnums)(*xs64)
    g32 = ad.grad(weighted(case.fn, [w.astype(np.float32) for w in ws]), argnums)(*xs32)
    for a, b in zip(g32, g64):
        assert np.result_type(a) == np.float32
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3)
