"""Rounding, comparisons and the complex-part functions of real arrays: round/around (a
non-differentiable primitive, like rint), isclose/allclose, array_equal/array_equiv, imag, angle,
real_if_close, isreal, iscomplex. Traced values are real (complex tracing is not supported); these give numpy's answers
for real input and refuse complex input loudly."""
from __future__ import annotations

import numpy as np

from ..dispatch import copy, implements, write_out
from ..errors import UnsupportedFunctionError
from ..primitives import Primitive
from ..rrule import non_differentiable
from ..samples import In, Sample
from .numeric import as_array

round_p = Primitive("round", lambda x, decimals: np.round(x, decimals), params=("decimals",),
                    function=np.round, samples=(Sample((In(avoid=(-1.5, -0.5, 0.5, 1.5)),), {"decimals": 0}),))
non_differentiable(round_p)


@implements(np.round, np.around)
def _round(a, decimals=0, out=None):
    result = round_p.bind(a, decimals=int(decimals))
    if out is not None:
        return write_out(out, result, "np.round")
    return result


@implements(np.isclose)
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    x, y = as_array(a), as_array(b)
    if not np.issubdtype(y.dtype, np.inexact):
        y = y.astype(np.result_type(y, 1.0))
    close = (np.abs(x - y) <= atol + rtol * np.abs(y)) & np.isfinite(y) | (x == y)
    return close | (np.isnan(x) & np.isnan(y)) if equal_nan else close


@implements(np.allclose)
def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A traced 0-d bool (numpy returns a Python bool, which would bake the trace-time answer)."""
    return np.all(_isclose(a, b, rtol, atol, equal_nan))


@implements(np.array_equal)
def _array_equal(a1, a2, equal_nan=False):
    """numpy's implementation catches the error of converting a tracer and answers False."""
    a1, a2 = as_array(a1), as_array(a2)
    if a1.shape != a2.shape:
        return False
    same = a1 == a2
    return np.all(same | (np.isnan(a1) & np.isnan(a2)) if equal_nan else same)


@implements(np.array_equiv)
def _array_equiv(a1, a2):
    a1, a2 = as_array(a1), as_array(a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return False
    return np.all(a1 == a2)


def _real_only(what, val):
    val = as_array(val)
    if np.iscomplexobj(val):
        raise UnsupportedFunctionError(f"{what} of a complex traced value: complex numbers are not "
                                       "supported yet")
    return val


@implements(np.imag)
def _imag(val):
    return np.zeros_like(_real_only("np.imag", val))


@implements(np.angle)
def _angle(z, deg=False):
    z = _real_only("np.angle", z)
    a = np.arctan2(np.zeros_like(z), z)      # numpy's formula: pi for negative reals, 0 otherwise
    return a * (180 / np.pi) if deg else a


@implements(np.real_if_close)
def _real_if_close(a, tol=100):
    return copy(_real_only("np.real_if_close", a))


@implements(np.isreal)
def _isreal(x):
    return np.ones(np.shape(x), dtype=bool, like=_real_only("np.isreal", x))


@implements(np.iscomplex)
def _iscomplex(x):
    return np.zeros(np.shape(x), dtype=bool, like=_real_only("np.iscomplex", x))
