"""Differences, integrals, products and signals written with the core primitives: diff, ediff1d,
gradient, trapezoid, cross, convolve, correlate, interp, cumulative_sum/prod, logaddexp.reduce,
the ufuncs' outer method, polyval, vander, linspace with traced endpoints, meshgrid, fftshift.
Each follows numpy's own formula, so values agree to rounding and the gradients need no rule of
their own."""
from __future__ import annotations

import numpy as np

from ..dispatch import FUNCTIONS, LIKE_FUNCTIONS, UFUNC_METHODS, UFUNCS, implements, unsupported, write_out
from ..tracer import Tracer
from .reductions import normalize_axis


def as_array(x):
    """Tracers pass through; constants become ndarrays (numpy's asanyarray, minus coercion)."""
    return x if isinstance(x, Tracer) else np.asarray(x)


def traced_together(*xs):
    """When any of ``xs`` is traced, the constants among them become traced arrays too (a
    constant ndarray indexed by a traced index would otherwise coerce the index)."""
    like = next((x for x in xs if isinstance(x, Tracer)), None)
    return [x if like is None or isinstance(x, Tracer) else np.asarray(x, like=like) for x in xs]


def _along(nd: int, axis: int, index) -> tuple:
    return (slice(None),) * axis + (index,) + (slice(None),) * (nd - axis - 1)


# -- differences -------------------------------------------------------------------------------

@implements(np.diff)
def _diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    a = as_array(a)
    if n == 0:
        return a
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis(axis, a.ndim)[0]
    parts = []
    for extra in (prepend, a, append):
        if extra is np._NoValue:
            continue
        extra = as_array(extra)
        if extra.ndim == 0:
            extra = np.broadcast_to(extra, a.shape[:axis] + (1,) + a.shape[axis + 1:])
        parts.append(extra)
    a = np.concatenate(parts, axis) if len(parts) > 1 else a
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        a = op(a[_along(a.ndim, axis, slice(1, None))], a[_along(a.ndim, axis, slice(None, -1))])
    return a


@implements(np.ediff1d)
def _ediff1d(ary, to_end=None, to_begin=None):
    ary = np.ravel(ary)
    d = ary[1:] - ary[:-1]
    if to_begin is None and to_end is None:
        return d
    ends = [None if e is None else np.ravel(as_array(e)) for e in (to_begin, to_end)]
    if any(e is not None and not np.can_cast(e.dtype, ary.dtype, "same_kind") for e in ends):
        raise TypeError("dtype of `to_begin`/`to_end` must be compatible with input `ary` under the "
                        "`same_kind` rule (numpy's refusal: a complex end of a real ary)")
    ends = [None if e is None else e.astype(ary.dtype) for e in ends]
    return np.concatenate([p for p in (ends[0], d, ends[1]) if p is not None])


def _spacings(varargs, f, axes):
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    out = []
    for ax, d in zip(axes, varargs):
        d = as_array(d)
        if d.ndim == 0:
            out.append(d)
            continue
        if d.ndim != 1 or len(d) != f.shape[ax]:
            raise ValueError("distances must be scalars or 1d arrays as long as their dimension")
        d = np.diff(d.astype(np.float64) if np.issubdtype(d.dtype, np.integer) else d)
        if not isinstance(d, Tracer) and np.all(d == d[0]):
            d = d[0]     # constant distances: numpy's uniform formula
        out.append(d)
    return out


def _shaped(c, nd, axis):
    return np.reshape(c, tuple(-1 if i == axis else 1 for i in range(nd))) if np.ndim(c) else c


def _edge_weights(dx, uniform: bool, first: bool):
    """numpy's second-order one-sided weights for the three points at an edge."""
    if uniform:
        return (-1.5 / dx, 2.0 / dx, -0.5 / dx) if first else (0.5 / dx, -2.0 / dx, 1.5 / dx)
    if first:
        d1, d2 = dx[0], dx[1]
        return -(2.0 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
    d1, d2 = dx[-2], dx[-1]
    return d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2.0 * d2 + d1) / (d2 * (d1 + d2))


def _gradient_along(f, ax, dx, edge_order):
    def at(i):
        return f[_along(f.ndim, ax, i)]
    uniform = np.ndim(dx) == 0
    if uniform:
        inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * dx)
    else:
        d1, d2 = dx[:-1], dx[1:]
        a, b, c = (_shaped(w, f.ndim, ax) for w in (-d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2),
                                                     d1 / (d2 * (d1 + d2))))
        inner = a * at(slice(None, -2)) + b * at(slice(1, -1)) + c * at(slice(2, None))
    if edge_order == 1:
        first = (at(slice(1, 2)) - at(slice(0, 1))) / (dx if uniform else dx[0])
        last = (at(slice(-1, None)) - at(slice(-2, -1))) / (dx if uniform else dx[-1])
    else:
        a, b, c = _edge_weights(dx, uniform, True)
        first = a * at(slice(0, 1)) + b * at(slice(1, 2)) + c * at(slice(2, 3))
        a, b, c = _edge_weights(dx, uniform, False)
        last = a * at(slice(-3, -2)) + b * at(slice(-2, -1)) + c * at(slice(-1, None))
    # numpy stores the result into an array of f's dtype
    return np.concatenate([first, inner, last], axis=ax).astype(f.dtype)


@implements(np.gradient)
def _gradient(f, *varargs, axis=None, edge_order=1):
    """numpy's second-order central differences with first- or second-order edges."""
    f = as_array(f)
    if not np.issubdtype(f.dtype, np.inexact):
        f = f.astype(np.float64)
    axes = tuple(range(f.ndim)) if axis is None else \
        tuple(normalize_axis(a, f.ndim)[0] for a in (axis if np.ndim(axis) else (axis,)))
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    if any(f.shape[ax] < edge_order + 1 for ax in axes):
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "(edge_order + 1) elements are required.")
    outs = [_gradient_along(f, ax, dx, edge_order) for ax, dx in zip(axes, _spacings(varargs, f, axes))]
    return outs[0] if len(outs) == 1 else tuple(outs)


@implements(np.trapezoid)
def _trapezoid(y, x=None, dx=1.0, axis=-1):
    y = as_array(y)
    axis = normalize_axis(axis, y.ndim)[0]
    if x is None:
        d = dx
    else:
        x = as_array(x)
        d = _shaped(np.diff(x), y.ndim, axis) if x.ndim == 1 else np.diff(x, axis=axis)
    nd = y.ndim
    return np.sum(d * (y[_along(nd, axis, slice(1, None))] + y[_along(nd, axis, slice(None, -1))]) / 2.0,
                  axis=axis)


def _cumulative(fn, initial):
    def handler(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        x = as_array(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError("axis must be specified for multi-dimensional arrays")
            axis = 0
        axis = normalize_axis(axis, max(x.ndim, 1))[0]
        y = fn(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = y.shape[:axis] + (1,) + y.shape[axis + 1:]
            y = np.concatenate([np.full(shape, initial, dtype=y.dtype, like=y), y], axis=axis)
        return y if out is None else write_out(out, y, f"np.{fn.__name__}")
    return handler


implements(np.cumulative_sum)(_cumulative(np.cumsum, 0))
implements(np.cumulative_prod)(_cumulative(np.cumprod, 1))


def _log_reduce(name, exp, log):
    """logaddexp.reduce as a shifted log-sum-exp (the shift cancels in value and gradient)."""
    def reduce(a, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
        if out is not None or kwargs:
            raise unsupported(f"np.{name}.reduce(..., out=/initial=/where=)")
        a = as_array(a) if dtype is None else as_array(a).astype(dtype)
        if np.iscomplexobj(a):
            raise TypeError(f"ufunc '{name}' not supported for complex input (numpy refuses it too)")
        shift = np.max(a, axis=axis, keepdims=True)
        shift = np.where(np.isfinite(shift), shift, 0)
        total = log(np.sum(exp(a - shift), axis=axis, keepdims=True)) + shift
        if keepdims:
            return total
        return np.squeeze(total, axis=axis) if axis is not None else np.reshape(total, ())
    return reduce


UFUNC_METHODS[(np.logaddexp, "reduce")] = _log_reduce("logaddexp", np.exp, np.log)
UFUNC_METHODS[(np.logaddexp2, "reduce")] = _log_reduce("logaddexp2", np.exp2, np.log2)


def _outer(uf):
    """``np.multiply.outer(a, b)`` and friends: the ufunc on a reshaped to broadcast against b."""
    def outer(a, b, **kwargs):
        if kwargs:
            raise unsupported(f"np.{uf.__name__}.outer(..., {', '.join(kwargs)}=)")
        a, b = as_array(a), as_array(b)
        return uf(np.reshape(a, a.shape + (1,) * b.ndim), b)
    return outer


for _uf in [u for u in UFUNCS if u.nin == 2 and u.nout == 1 and u.signature is None]:
    UFUNC_METHODS.setdefault((_uf, "outer"), _outer(_uf))


# -- products and signals -----------------------------------------------------------------------

@implements(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = np.moveaxis(as_array(a), axisa, -1), np.moveaxis(as_array(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    comps_a = [a[..., i] for i in range(a.shape[-1])] + [0.0] * (3 - a.shape[-1])
    comps_b = [b[..., i] for i in range(b.shape[-1])] + [0.0] * (3 - b.shape[-1])
    (a0, a1, a2), (b0, b1, b2) = comps_a, comps_b
    cp = np.stack(np.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)
    return np.moveaxis(cp, -1, axisc)


def _correlate_full(a, v):
    """z[j] = sum_n a[j + n - (len(v) - 1)] v[n]: a gather of windows and one matrix product."""
    n, m = len(a), len(v)
    pad = np.zeros(m - 1, dtype=np.result_type(a, v))
    windows = np.concatenate([pad, a, pad])[np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]]
    return windows @ v


def _vectors(a, v):
    a, v = np.ravel(as_array(a)), np.ravel(as_array(v))
    if len(a) == 0 or len(v) == 0:
        raise ValueError("a and v must be non-empty")
    return a, v


def _mode_slice(mode, n, m, reverse):
    """The part of the full correlation numpy returns in ``mode`` (n >= m after its swap)."""
    if mode == "full":
        return slice(None)
    if mode == "same":
        start = m // 2 if reverse else (m - 1) - m // 2
        return slice(start, start + n)
    if mode == "valid":
        return slice(m - 1, n)
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")


@implements(np.convolve)
def _convolve(a, v, mode="full"):
    a, v = _vectors(a, v)
    if len(v) > len(a):
        a, v = v, a
    return _correlate_full(a, v[::-1])[_mode_slice(mode, len(a), len(v), False)]


@implements(np.correlate)
def _correlate(a, v, mode="valid"):
    """numpy's correlate conjugates v (convolve does not)."""
    a, v = _vectors(a, v)
    v = np.conj(v) if np.iscomplexobj(v) else v
    swapped = len(v) > len(a)
    n, m = max(len(a), len(v)), min(len(a), len(v))
    return _correlate_full(a, v)[_mode_slice(mode, n, m, swapped)]


@implements(np.interp)
def _interp(x, xp, fp, left=None, right=None, period=None):
    if period is not None:
        raise unsupported("np.interp(..., period=)", "Wrap x into the period with np.remainder first.")
    x, xp, fp = traced_together(as_array(x), as_array(xp), as_array(fp))
    if np.iscomplexobj(x) or np.iscomplexobj(xp):     # numpy refuses them; fp may be complex
        raise TypeError("np.interp of complex x or xp: numpy refuses them too (complex fp is supported)")
    x, xp = x.astype(np.float64), xp.astype(np.float64)                 # as numpy: float64
    fp = fp.astype(np.result_type(fp, np.float64))                      # or complex128
    i = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, len(xp) - 2)
    x0, x1, f0, f1 = xp[i], xp[i + 1], fp[i], fp[i + 1]
    y = (f1 - f0) / (x1 - x0) * (x - x0) + f0
    y = np.where(x == xp[-1], fp[-1], y)
    y = np.where(x > xp[-1], fp[-1] if right is None else right, y)
    return np.where(x < xp[0], fp[0] if left is None else left, y)


# -- polynomials ---------------------------------------------------------------------------------

@implements(np.polyval)
def _polyval(p, x):
    """Horner's scheme, in numpy's order."""
    p, x = as_array(p), as_array(x)
    y = np.zeros_like(x)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


@implements(np.vander)
def _vander(x, N=None, increasing=False):
    x = as_array(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = len(x) if N is None else int(N)
    dtype = np.promote_types(x.dtype, int)
    ones = np.ones((len(x), min(n, 1)), dtype=dtype, like=x)
    powers = np.cumprod(np.broadcast_to(x[:, None], (len(x), max(n - 1, 0))).astype(dtype), axis=1)
    v = np.concatenate([ones, powers], axis=1)
    return v if increasing else v[:, ::-1]


# -- grids ----------------------------------------------------------------------------------------

_linspace_constant = FUNCTIONS[np.linspace]


@implements(np.linspace)
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, like=None,
              device=None):
    """Traced endpoints: numpy's formula start + arange(num) * step; constants stay constants."""
    if not isinstance(start, Tracer) and not isinstance(stop, Tracer):
        return _linspace_constant(start, stop, num, endpoint, retstep, dtype, axis, like=like)
    start, stop = as_array(start), as_array(stop)
    dt = np.result_type(start, stop, 1.0)
    div = (num - 1) if endpoint else num
    delta = (stop - start).astype(dt)
    y = np.reshape(np.arange(num, dtype=dt), (-1,) + (1,) * delta.ndim)
    step = delta / div if div > 0 else delta * np.nan
    y = (y * step if div > 0 else y * delta) + start
    if endpoint and num > 1:
        y[-1, ...] = stop
    y = np.moveaxis(y, 0, axis) if axis != 0 else y
    if dtype is not None and np.issubdtype(dtype, np.integer):
        y = np.floor(y)
    y = y.astype(dtype) if dtype is not None else y
    return (y, step) if retstep else y


LIKE_FUNCTIONS.add(np.linspace)    # the handler takes the like= tracer


@implements(np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    out = [np.reshape(as_array(x), (1,) * i + (-1,) + (1,) * (nd - i - 1)) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = np.reshape(out[0], (1, -1) + (1,) * (nd - 2))
        out[1] = np.reshape(out[1], (-1, 1) + (1,) * (nd - 2))
    if not sparse:
        out = np.broadcast_arrays(*out)
    return tuple(np.copy(o) for o in out) if copy else tuple(out)


def _fft_shift(sign):
    def shift(x, axes=None):
        x = as_array(x)
        axes = tuple(range(x.ndim)) if axes is None else normalize_axis(axes, x.ndim)
        return np.roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axes)
    return shift


implements(np.fft.fftshift)(_fft_shift(1))
implements(np.fft.ifftshift)(_fft_shift(-1))
