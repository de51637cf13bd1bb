"""Spec lines for ad.lib.numeric, statistics, selection, values and arrays (joined into the table
through tests/specs_linalg.py). Order statistics keep their inputs apart (no ties); nan-ignoring
functions put their nans at fixed positions inside the spec function, so finite differences
perturb finite values only."""
import warnings

import numpy as np

from specs import ELEMENTWISE, ONE, Arg, Spec

F = Arg()
POS = Arg(lo=0.2, hi=2.0)
NAN = np.where(np.arange(12).reshape(3, 4) % 5 == 1, np.nan, 0.0)    # nans at 1, 6, 11


def with_nans(x):
    return x + NAN.astype(x.dtype)


def _cross_2d(a, b):
    with warnings.catch_warnings():      # numpy 2 deprecates 2-d vectors; ad still supports them
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.cross(a, b)


def _put(x):
    z = x * 1.0
    np.put(z, [0, 5, -1], x[1, :2] * 3)
    return z


def _place(x):
    z = x * 1.0
    np.place(z, np.arange(12).reshape(3, 4) % 3 == 0, x[0] * 2)
    return z


def _copyto(x):
    z = x * 1.0
    np.copyto(z, x[0] ** 2, where=np.arange(4) % 2 == 0)
    return z


def _fill_diagonal(x):
    z = x * 1.0
    np.fill_diagonal(z, x[0, :2], wrap=True)
    return z


NUMERIC_SPECS = [
    Spec("argpartition", lambda x: x * np.argpartition(x, 1, axis=-1), (F,), ("vector", "matrix"), apart=True),
    Spec("searchsorted", lambda x: x * np.searchsorted(np.array([-1.0, 1.0]), x), (Arg(lo=-0.8, hi=0.8),),
         ELEMENTWISE),
    Spec("round", lambda x: x * np.round(x), (Arg(lo=0.6, hi=1.4),), ELEMENTWISE),
]

NUMERIC_COMPOSITIONS = [
    # differences, integrals, signals
    Spec("np.diff", lambda x: np.diff(x, n=2, axis=0, prepend=1.0, append=x[:1]), (F,), ONE),
    Spec("np.ediff1d", lambda x: np.ediff1d(x, to_begin=x[0, :2], to_end=-1.0), (F,), ONE),
    Spec("np.gradient", lambda x: np.stack(np.gradient(x, 0.5, [0.0, 1.0, 1.5, 3.0])), (F,), ONE),
    Spec("np.gradient edge_order=2", lambda x: np.gradient(x, [0.0, 0.5, 1.5], axis=0, edge_order=2), (F,), ONE),
    Spec("np.gradient uniform", lambda x: np.gradient(x[0], edge_order=2), (F,), ONE),
    Spec("np.trapezoid", lambda x, y: np.trapezoid(x, y[0]) + np.trapezoid(x, dx=0.5, axis=0).sum(), (F, F), ONE),
    Spec("np.cross", lambda a, b: np.cross(a, b, axisa=0, axisb=0), (Arg((3, 4)), Arg((3, 4))), ONE),
    Spec("np.cross mixed", lambda a, b: _cross_2d(a, b), (Arg((4, 2)), Arg((4, 3))), ONE),
    *(Spec(f"np.{f.__name__} {mode} {n}x{m}", lambda a, v, f=f, mode=mode: f(a, v, mode),
           (Arg((n,)), Arg((m,))), ONE)
      for f in (np.convolve, np.correlate) for mode in ("full", "same", "valid") for n, m in ((5, 3), (2, 4))),
    Spec("np.interp", lambda x, fp: np.interp(x, np.array([-1.5, -0.2, 0.3, 1.5]), fp, right=fp[0] * 2),
         (Arg((3, 4), -1.9, 1.9), Arg((4,))), ONE, apart=False),
    Spec("np.cumulative_sum", lambda x: np.cumulative_sum(x, axis=1, include_initial=True), (F,), ONE),
    Spec("np.cumulative_prod", lambda x: np.cumulative_prod(x[0], include_initial=True), (POS,), ONE),
    Spec("np.logaddexp.reduce", lambda x: np.logaddexp.reduce(x, axis=1) + np.logaddexp2.reduce(x, axis=None),
         (F,), ONE),
    Spec("ufunc.outer", lambda x, y: np.multiply.outer(x, y[0]) + np.arctan2.outer(x[:, 0], y[0])[:, None],
         (F, F), ONE),
    Spec("np.polyval", lambda p, x: np.polyval(p, x) + np.polyval([1.0, -2.0, 0.5], x), (Arg((4,)), F), ONE),
    Spec("np.vander", lambda x: np.vander(x, 4) + np.vander(x, increasing=True), (Arg((4,)),), ONE),
    Spec("np.linspace traced", lambda a, b: np.linspace(a, b, 5, axis=-1), (Arg((3,)), Arg((3,))), ONE),
    Spec("np.meshgrid", lambda x, y: np.stack(np.meshgrid(x, y)) * np.meshgrid(x, y, indexing="ij", sparse=True)[0].T,
         (Arg((3,)), Arg((4,))), ONE),
    Spec("np.fft.fftshift", lambda x: np.fft.fftshift(x) * np.fft.ifftshift(x, axes=1), (F,), ONE),
    # statistics
    Spec("np.nan_to_num", lambda x: np.nan_to_num(with_nans(x), nan=2.0), (F,), ONE),
    Spec("np.nanmax", lambda x: np.nanmax(with_nans(x), axis=0) + np.nanmin(with_nans(x)), (F,), ONE, apart=True),
    Spec("np.nanprod", lambda x: np.nanprod(with_nans(x), axis=1), (F,), ONE),
    Spec("np.nancumsum", lambda x: np.nancumsum(with_nans(x), axis=1) * np.nancumprod(with_nans(x)).sum(), (F,), ONE),
    Spec("np.nanvar", lambda x: np.nanvar(with_nans(x), axis=1, ddof=1), (F,), ONE),
    Spec("np.nanstd", lambda x: np.nanstd(with_nans(x)), (F,), ONE),
    Spec("np.nanargmax", lambda x: x * np.nanargmax(with_nans(x), axis=0) * np.nanargmin(with_nans(x)), (F,), ONE,
         apart=True),
    Spec("np.median", lambda x: np.median(x, axis=1, keepdims=True) + np.median(x), (F,), ONE, apart=True),
    Spec("np.quantile", lambda x: np.quantile(x, [0.1, 0.55], axis=0), (F,), ONE, apart=True),
    Spec("np.quantile scalar", lambda x: np.quantile(x, 0.3) + np.quantile(x, 1.0), (F,), ONE, apart=True),
    *(Spec(f"np.quantile {m}", lambda x, m=m: np.quantile(x, [0.2, 0.5], axis=1, method=m), (F,), ONE, apart=True)
      for m in ("lower", "higher", "midpoint", "nearest")),
    # a traced q in (0.31, 0.39): 7 q stays inside (2, 3), between two order statistics of 8 values
    Spec("np.quantile traced q", lambda x: np.quantile(x[1:], 0.35 + 0.04 * np.tanh(x[0, 0])), (F,), ONE, apart=True),
    Spec("np.percentile", lambda x: np.percentile(x, 35.0, axis=(0, 1)), (F,), ONE, apart=True),
    Spec("np.nanmedian", lambda x: np.nanmedian(with_nans(x), axis=0), (F,), ONE, apart=True),
    Spec("np.nanquantile", lambda x: np.nanquantile(with_nans(x), [0.3, 0.8], axis=1), (F,), ONE, apart=True),
    Spec("np.nanpercentile", lambda x: np.nanpercentile(with_nans(x), 60), (F,), ONE, apart=True),
    Spec("np.cov", lambda x, y: np.concatenate([np.ravel(np.cov(x, y[0])),
                                                np.ravel(np.cov(x.T, rowvar=False, bias=True))]), (F, F), ONE),
    Spec("np.corrcoef", lambda x: np.corrcoef(x), (F,), ONE),
    # selection
    Spec("np.partition", lambda x: np.partition(x, (1, 2), axis=1), (F,), ONE, apart=True),
    Spec("np.argwhere", lambda x: x[tuple(np.argwhere(x > 0.5).T)], (F,), ONE, apart=True),
    Spec("np.compress", lambda x: np.compress([True, False, True], x, axis=0) * np.extract(x[0] > 0.5, x[0]).sum(),
         (F,), ONE, apart=True),
    Spec("np.choose", lambda x: np.choose(np.array([[0, 1, 2, 0]]), [x[0], x[1], x[2] * 2]), (F,), ONE),
    Spec("np.delete", lambda x: np.delete(x, [0, 2], axis=1) * np.delete(x, 1).sum(), (F,), ONE),
    # values
    Spec("np.isclose", lambda x: x * np.isclose(x, 0.0, atol=0.5) + x * np.allclose(x, x), (F,), ONE, apart=True),
    Spec("np.imag", lambda x: x + np.imag(x) + np.angle(x) * np.isreal(x) + np.real_if_close(x) * ~np.iscomplex(x),
         (Arg(lo=0.1, hi=2.0),), ONE),
    # arrays
    Spec("np.concat", lambda x: np.concat([x, x[:1]]) * 1.0, (F,), ONE),
    Spec("np.permute_dims", lambda x: np.permute_dims(x[None], (2, 0, 1)), (F,), ONE),
    Spec("np.unstack", lambda x: np.unstack(x, axis=1)[2] * np.unstack(x)[0][:3], (F,), ONE),
    Spec("np.astype", lambda x: np.astype(x, np.float64) * 2, (F,), ONE),
    Spec("np.block", lambda x, y: np.block([[x, y], [y[:1], x[:1]]]), (F, F), ONE),
    Spec("np.put", _put, (F,), ONE),
    Spec("np.place", _place, (F,), ONE),
    Spec("np.copyto", _copyto, (F,), ONE),
    Spec("np.fill_diagonal", _fill_diagonal, (Arg((5, 2)),), ONE),
]
