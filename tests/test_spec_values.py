"""Every spec line's traced value equals numpy's own (to rounding), in float64 and float32.

The gradient tests compare derivatives only; a composition that computed ``f + c`` or a
differently-ordered partition would pass them. Tracing runs the compositions of ad.lib, the
reference call runs numpy."""
import zlib

import numpy as np
import pytest

import ad
from specs import COMPOSITIONS, SPECS, make_inputs

CASES = [pytest.param(s, shape, id=f"{s.prim}-{shape}") for s in SPECS + COMPOSITIONS for shape in s.shapes]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("spec,shape", CASES)
def test_traced_value_matches_numpy(spec, shape, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{spec.prim}/{shape}".encode()))
    xs = make_inputs(spec, shape, rng, dtype)
    expected = spec.fn(*xs)
    got = ad.trace(spec.fn, *xs)(*xs)
    assert np.shape(got) == np.shape(expected)
    assert np.result_type(got) == np.result_type(expected)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)
