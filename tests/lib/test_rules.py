"""Every primitive of the registry at its declared samples, and every composition of the spec
tables (tests/support/cases.py): finite differences (dot-product test with a converged 5-point stencil),
the closure / lifted / compiled forms agreeing, float32 kept float32. The checks themselves are in
tests/support/rule_checks.py."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ad
from ad.samples import declared_domains
from tests.support.rule_checks import (FLOAT32_CASES, GRADIENT_CASES, float32_gradients, forms_agree,
                                       gradient_matches_finite_differences)


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
    gradient_matches_finite_differences(case, shape)


@pytest.mark.parametrize("case,shape", GRADIENT_CASES)
def test_forms_agree(case, shape):
    """closure, lifted, lifted without passes and compiled give the same gradient."""
    forms_agree(case, shape)


@pytest.mark.parametrize("case,shape", FLOAT32_CASES)
def test_float32(case, shape):
    """float32 in, float32 gradients out, close to the float64 gradient."""
    float32_gradients(case, shape)


def test_clip_with_bounds_crossed_gives_hi_and_its_gradient():
    """numpy's clip is minimum(maximum(x, lo), hi): where lo > hi every element is hi, and the
    gradient goes to hi there (it went to lo for x < lo); compared with finite differences and
    with torch.clamp, which defines it the same way."""
    x = np.array([-3.0, 0.5, 2.5, 4.0])
    lo = np.array([1.0, 3.0, 0.0, 5.0])      # crossed at 1 and 3
    hi = np.array([2.0, 2.0, 3.0, 4.5])
    gs = ad.grad(lambda x, lo, hi: np.sum(np.clip(x, lo, hi) * np.arange(1.0, 5.0)), argnums=(0, 1, 2))(x, lo, hi)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, lo, hi)]
    (torch.clamp(*ts) * torch.arange(1.0, 5.0, dtype=torch.float64)).sum().backward()
    for g, t in zip(gs, ts):
        np.testing.assert_array_equal(g, t.grad.numpy())
    np.testing.assert_array_equal(gs[2], [0.0, 2.0, 0.0, 4.0])
