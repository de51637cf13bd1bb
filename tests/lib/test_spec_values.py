"""Every line of tests/support/cases.py traced equals its own value run eagerly (to rounding), in float64
and float32.

The gradient tests compare derivatives only; a composition that computed ``f + c`` or a
differently-ordered partition would pass them. Tracing runs the compositions of ad.lib (and
replays each primitive's equation from the tape), the reference call runs numpy."""
import zlib

import numpy as np
import pytest

import ad
from tests.support.cases import CASES, leaves

PARAMS = [pytest.param(c, shape, id=f"{c.name}-{shape}") for c in CASES for shape in c.sample.shapes]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case,shape", PARAMS)
def test_traced_value_matches_numpy(case, shape, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{case.name}/{shape}".encode()))
    xs = case.inputs(shape, rng, dtype)
    expected = case.fn(*xs)
    got = ad.trace(case.fn, *xs)(*xs)
    for g, e in zip(leaves(got), leaves(expected)):
        assert np.shape(g) == np.shape(e)
        assert np.result_type(g) == np.result_type(e)
        tol = 1e-12 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
