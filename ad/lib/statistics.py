"""Statistics written with the core primitives: the nan-ignoring reductions, order statistics
(median, quantile, percentile and their nan versions, through sort and a gather: the gradient
goes to the selected elements), cov, corrcoef, nan_to_num."""
from __future__ import annotations

import numpy as np

from ..dispatch import implements, unsupported, write_out
from ..tracer import Tracer
from .numeric import as_array
from .reductions import axes_to_front


def _abs2(d):
    """|d|^2: d * d, or Re(d conj(d)) for complex d (numpy's var and std)."""
    return np.real(d * np.conj(d)) if np.iscomplexobj(d) else d * d


def _nan_filled(a, value):
    a = as_array(a)
    return np.where(np.isnan(a), value, a)


@implements(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = as_array(x)
    if not np.issubdtype(x.dtype, np.inexact):
        return np.copy(x)
    if np.iscomplexobj(x):     # numpy replaces in the real and imaginary parts separately
        re, im = (_nan_to_num(part, True, nan, posinf, neginf) for part in (np.real(x), np.imag(x)))
        y = re + 1j * im
        return y if copy else write_out(x, y, "np.nan_to_num")
    info = np.finfo(x.dtype)
    y = np.where(np.isnan(x), nan, x)
    y = np.where(np.isposinf(y), info.max if posinf is None else posinf, y)
    y = np.where(np.isneginf(y), info.min if neginf is None else neginf, y)
    return y if copy else write_out(x, y, "np.nan_to_num")     # copy=False replaces x in place


def _no_extras(name, out=None, where=np._NoValue, initial=np._NoValue):
    if out is not None or where is not np._NoValue or initial is not np._NoValue:
        raise unsupported(f"np.{name}(..., out=/where=/initial=)")


def _nan_extremum(name, reduce, fill):
    def handler(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        _no_extras(name, out, where, initial)
        a = as_array(a)
        m = reduce(np.where(np.isnan(a), fill, a), axis=axis, keepdims=keepdims)
        return np.where(np.all(np.isnan(a), axis=axis, keepdims=keepdims), np.nan, m)
    return handler


implements(np.nanmax)(_nan_extremum("nanmax", np.max, -np.inf))
implements(np.nanmin)(_nan_extremum("nanmin", np.min, np.inf))


def _nan_arg(name, arg, fill):
    def handler(a, axis=None, out=None, *, keepdims=False):
        """All-nan slices give -1 (numpy raises, which would need a value-dependent branch)."""
        _no_extras(name, out)
        a = as_array(a)
        i = arg(np.where(np.isnan(a), fill, a), axis=axis, keepdims=keepdims)
        return np.where(np.all(np.isnan(a), axis=axis, keepdims=keepdims), -1, i)
    return handler


implements(np.nanargmax)(_nan_arg("nanargmax", np.argmax, -np.inf))
implements(np.nanargmin)(_nan_arg("nanargmin", np.argmin, np.inf))


@implements(np.nanprod)
def _nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
    _no_extras("nanprod", out, where, initial)
    return np.prod(_nan_filled(a, 1), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nancumsum)
def _nancumsum(a, axis=None, dtype=None, out=None):
    _no_extras("nancumsum", out)
    return np.cumsum(_nan_filled(a, 0), axis=axis, dtype=dtype)


@implements(np.nancumprod)
def _nancumprod(a, axis=None, dtype=None, out=None):
    _no_extras("nancumprod", out)
    return np.cumprod(_nan_filled(a, 1), axis=axis, dtype=dtype)


@implements(np.nanvar)
def _nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue,
            mean=np._NoValue, correction=np._NoValue):
    _no_extras("nanvar", out, where)
    if mean is not np._NoValue:
        raise unsupported("np.nanvar(..., mean=)")
    ddof = ddof if correction is np._NoValue else correction
    a = as_array(a) if dtype is None else as_array(a).astype(dtype)
    if not np.issubdtype(a.dtype, np.inexact):
        return np.var(a, axis=axis, ddof=ddof, keepdims=keepdims)
    ok = ~np.isnan(a)
    zeroed = np.where(ok, a, 0)
    avg = np.sum(zeroed, axis=axis, keepdims=True) / np.sum(ok, axis=axis, keepdims=True).astype(a.dtype)
    d = np.where(ok, zeroed - avg, 0)
    dof = np.sum(ok, axis=axis, keepdims=keepdims) - ddof
    real = np.finfo(a.dtype).dtype      # a complex variance is real: the mean of |d|^2
    return np.where(dof > 0, np.sum(_abs2(d), axis=axis, keepdims=keepdims) / np.maximum(dof, 1).astype(real),
                    np.nan)


@implements(np.nanstd)
def _nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    return np.sqrt(_nanvar(a, axis, dtype, out, ddof, keepdims, **kwargs))


# -- order statistics ----------------------------------------------------------------------------

def _gather(s, index):
    """s[index[q, ...], ...] along axis 0 for an index shaped (k,) + s.shape[1:] (or broadcastable)."""
    index = np.broadcast_to(index, (np.shape(index)[0],) + np.shape(s)[1:])
    return np.take_along_axis(s, index, axis=0)


def _lerp(a, b, t):
    """numpy's monotone interpolation (the form it switches to at t >= 0.5)."""
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantiles(s, q, count, method, weak):
    """Quantiles ``q`` (any shape) of ``s`` sorted along axis 0 with ``count`` valid values per
    slice (an int, or an array shaped ``s.shape[1:]`` for the nan versions)."""
    if method not in _METHODS:
        raise unsupported(f"np.quantile(..., method={method!r})", f"Use one of {_METHODS}.")
    qshape = np.shape(q)
    qk = np.reshape(q, (-1,) + (1,) * (np.ndim(s) - 1))
    last = count - 1
    v = last * qk
    if method in ("lower", "higher", "nearest"):
        fn = {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method]
        out = _gather(s, fn(v).astype(np.intp))
    else:
        prev = np.floor(v)
        above = v >= last
        prev = np.where(above, last, prev)
        nxt = np.where(above, last, prev + 1)
        gamma = v - prev if method == "linear" else np.where(v % 1 == 0, 0.0, 0.5)
        if weak and np.issubdtype(s.dtype, np.inexact):     # a Python q keeps float32 data float32
            gamma = gamma.astype(s.dtype)
        out = _lerp(_gather(s, prev.astype(np.intp)), _gather(s, nxt.astype(np.intp)), gamma)
    return np.reshape(out, qshape + np.shape(out)[1:])


def _check_q(q):
    if not isinstance(q, Tracer) and not np.all((0 <= np.asarray(q)) & (np.asarray(q) <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")


def _quantile_impl(a, q, axis, method, keepdims, skip_nan, weak):
    if np.iscomplexobj(a):
        raise TypeError("a must be an array of real numbers")     # numpy's refusal (median sorts complex)
    data, kept = axes_to_front(as_array(a), axis)
    s = np.sort(data, axis=0)
    if skip_nan:
        count = np.sum(~np.isnan(data), axis=0)
        out = _quantiles(s, q, count, method, weak)
        out = np.where(count == 0, np.nan, out)
    else:
        out = _quantiles(s, q, np.shape(s)[0], method, weak)
        out = np.where(np.isnan(s[-1]), s[-1], out) if np.issubdtype(s.dtype, np.inexact) else out
    return np.reshape(out, np.shape(q) + kept) if keepdims else out


def _quantile_handler(name, scale, skip_nan):
    def handler(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
        if out is not None or weights is not None or interpolation is not None:
            raise unsupported(f"np.{name}(..., out=/weights=/interpolation=)")
        weak = type(q) in (int, float)
        q = as_array(q) if scale == 1 else np.true_divide(as_array(q), scale)
        _check_q(q)
        return _quantile_impl(a, q, axis, method, keepdims, skip_nan, weak)
    return handler


implements(np.quantile)(_quantile_handler("quantile", 1, False))
implements(np.percentile)(_quantile_handler("percentile", 100, False))
implements(np.nanquantile)(_quantile_handler("nanquantile", 1, True))
implements(np.nanpercentile)(_quantile_handler("nanpercentile", 100, True))


@implements(np.median)
def _median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        raise unsupported("np.median(..., out=)")
    data, kept = axes_to_front(as_array(a), axis)
    s = np.sort(data, axis=0)
    n = np.shape(s)[0]
    mid = np.mean(s[(n - 1) // 2:n // 2 + 1], axis=0)     # the middle one or two, as numpy
    if np.issubdtype(s.dtype, np.inexact):
        mid = np.where(np.isnan(s[-1]), s[-1], mid)
    return np.reshape(mid, kept) if keepdims else mid


@implements(np.nanmedian)
def _nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        raise unsupported("np.nanmedian(..., out=)")
    data, kept = axes_to_front(as_array(a), axis)
    s = np.sort(data, axis=0)
    count = np.sum(~np.isnan(data), axis=0)
    lo = _gather(s, ((count - 1) // 2)[None])[0]
    hi = _gather(s, (count // 2)[None])[0]
    mid = np.where(count == 0, np.nan, (lo + hi) / 2)
    return np.reshape(mid, kept) if keepdims else mid


# -- covariance ----------------------------------------------------------------------------------

@implements(np.cov)
def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    if fweights is not None or aweights is not None:
        raise unsupported("np.cov(..., fweights=/aweights=)", "Weight the centred data yourself: "
                           "(x * w) @ x.T / w.sum().")
    m = as_array(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m, np.float64) if y is None else np.result_type(m, y, np.float64)
    X = np.atleast_2d(m).astype(dtype)
    if not rowvar and m.ndim != 1:
        X = X.T
    if y is not None:
        y = np.atleast_2d(as_array(y)).astype(dtype)
        X = np.concatenate((X, y.T if not rowvar and y.shape[0] != 1 else y), axis=0)
    ddof = (0 if bias else 1) if ddof is None else ddof
    fact = max(X.shape[1] - ddof, 0.0)
    X = X - np.mean(X, axis=1)[:, None]
    c = np.dot(X, np.conj(X.T) if np.iscomplexobj(X) else X.T) * np.true_divide(1, fact)
    return np.squeeze(c)


@implements(np.corrcoef)
def _corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = np.cov(x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 0:
        return c / c
    std = np.sqrt(np.real(np.diagonal(c)))
    r = c / std[:, None] / std[None, :]
    if np.iscomplexobj(r):     # numpy clips the real and imaginary parts
        return np.clip(np.real(r), -1, 1) + 1j * np.clip(np.imag(r), -1, 1)
    return np.clip(r, -1, 1)
