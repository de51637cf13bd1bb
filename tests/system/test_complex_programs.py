"""Property-based tests: random programs over complex numbers (issue 14), drawn by the library's
generator (``ad.checktools.fuzz``, complex family).

Chains of complex-supporting steps (holomorphic elementwise functions, the non-holomorphic abs,
conj, real, imag and angle, broadcasting, reductions, matmul, einsum, solve, the FFT), fed a
complex and a real input, end in a real loss. Each program is differentiated by ad in every form
(closure, lifted with and without passes, compiled, forward mode, the JSON round trip) and by
HIPS autograd, the oracle; finite differences (the dot-product test with the real pairing) check
the closure form.

Only steps whose primitives all declare ``complex_rule`` are drawn (``fuzz.complex_steps``: a
step's primitives are read off its trace), so the programs grow as rules land. Values stay off
branch cuts, poles and kinks (``fuzz.well_posed``).
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings

import ad
from ad.checktools import fuzz
from tests.support.needs import module

autograd = module("autograd")

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@SETTINGS
@given(fuzz.programs("complex"))
def test_complex_programs_agree_with_autograd_and_finite_differences(program):
    forms = fuzz.run(program)
    assume(forms is not None)
    assert {"autograd", "finite differences", "compiled", "jvp"} <= set(forms), forms
    ref = ad.grad(program.function(), (0, 1), form="closure")(*program.inputs())
    assert np.iscomplexobj(ref[0]) and not np.iscomplexobj(ref[1]), "a real input gets a real gradient"


def test_the_programs_draw_from_every_kind_of_step():
    """The steps that trace and have complex rules now; a step that does not trace says so with
    ad's own errors (never a crash), and the drawn set covers each kind named in the issue."""
    drawn = fuzz.complex_steps()
    print(f"\n{len(drawn)} of {len(fuzz.COMPLEX)} steps drawn: {', '.join(drawn)}")
    assert {"abs", "conj", "real", "imag", "angle"} <= set(drawn), drawn
    assert {"fft", "solve", "einsum", "log", "sqrt"} <= set(drawn), drawn
