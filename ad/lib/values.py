"""Rounding, comparisons and the parts of complex numbers: round/around (a non-differentiable
primitive, like rint), isclose/allclose, array_equal/array_equiv, real and imag (primitives, with
rules for complex operands), angle, real_if_close, isreal, iscomplex."""
from __future__ import annotations

import numpy as np

from ..dispatch import copy, implements, write_out
from ..errors import UnsupportedFunctionError
from ..primitives import Primitive
from ..batching.derived import elementwise
from ..rules import batch_rule, non_differentiable, rrule
from ..samples import F, In, Sample
from ..tangents import NoTangent
from .numeric import as_array

round_p = Primitive("round", lambda x, decimals: np.round(x, decimals), params=("decimals",),
                    array_api_spelling=lambda args, params: f"xp.round({args[0]})" if params["decimals"] == 0 else None,
                    function=np.round, samples=(Sample((In(avoid=(-1.5, -0.5, 0.5, 1.5)),), {"decimals": 0}),))
non_differentiable(round_p)
batch_rule(round_p)(elementwise(round_p))     # elementwise, with a param


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


real_p = Primitive("real", np.real, function=np.real, elementwise=True, linear_in=(0,),
                   complex_rule=True, samples=(Sample((F,)),))
def _imag_over(z, xp):
    """numpy's imag over an array namespace: zeros for a real array (the standard's imag takes
    complex arrays only)."""
    return xp.imag(z) if xp.isdtype(z.dtype, "complex floating") else xp.zeros_like(z)


imag_p = Primitive("imag", np.imag, function=np.imag, elementwise=True, linear_in=(0,),
                   complex_rule=True, array_api_impl=_imag_over, samples=(Sample((F,)),))


@rrule(real_p)
def _real_rule(z):
    """Re z = x: its cotangent g becomes dL/dx - i dL/dy = g (made complex by the driver)."""
    return real_p.bind(z), lambda dy: (dy,)


@rrule(imag_p)
def _imag_rule(z):
    """Im z = y: dL/dx - i dL/dy = -i g."""
    return imag_p.bind(z), lambda dy: (-1j * dy if np.iscomplexobj(z) else NoTangent(),)


@implements(np.real)
def _real(val):
    val = as_array(val)
    return real_p.bind(val) if np.iscomplexobj(val) else copy(val)


@implements(np.imag)
def _imag(val):
    val = as_array(val)
    return imag_p.bind(val) if np.iscomplexobj(val) else np.zeros_like(val)


@implements(np.angle)
def _angle(z, deg=False):
    z = as_array(z)
    # numpy's formula; for real z it is pi for negative values, 0 otherwise
    a = np.arctan2(np.imag(z), np.real(z)) if np.iscomplexobj(z) else np.arctan2(np.zeros_like(z), z)
    return a * (180 / np.pi) if deg else a


@implements(np.real_if_close)
def _real_if_close(a, tol=100):
    a = as_array(a)
    if np.iscomplexobj(a):
        raise UnsupportedFunctionError(
            "np.real_if_close of a complex traced value: its result's dtype depends on the values, "
            "which a tape cannot follow. Use np.real(a) when the imaginary part is negligible.")
    return copy(a)


@implements(np.isreal)
def _isreal(x):
    x = as_array(x)
    return np.imag(x) == 0 if np.iscomplexobj(x) else np.ones(np.shape(x), dtype=bool, like=x)


@implements(np.iscomplex)
def _iscomplex(x):
    x = as_array(x)
    return np.imag(x) != 0 if np.iscomplexobj(x) else np.zeros(np.shape(x), dtype=bool, like=x)
