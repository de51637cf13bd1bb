"""Composition lines for ad.lib.numeric, statistics, selection, values and arrays. Order
statistics keep their inputs apart (no ties); nan-ignoring functions put their nans at fixed
positions inside the composition, so finite differences perturb finite values only."""
import warnings

import numpy as np

from ad.samples import DISTINCT, F, In, Y
from tests.support.specs import spec

APART_FROM_HALF = In(apart=True, avoid=(-0.5, 0.5))     # for thresholds at +-0.5
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


NUMERIC = {
    # differences, integrals, signals
    "np.diff": spec(lambda x: np.diff(x, n=2, axis=0, prepend=1.0, append=x[:1]), F),
    "np.ediff1d": spec(lambda x: np.ediff1d(x, to_begin=x[0, :2], to_end=-1.0), F),
    "np.gradient": spec(lambda x: np.stack(np.gradient(x, 0.5, [0.0, 1.0, 1.5, 3.0])), F),
    "np.gradient edge_order=2": spec(lambda x: np.gradient(x, [0.0, 0.5, 1.5], axis=0, edge_order=2), F),
    "np.gradient uniform": spec(lambda x: np.gradient(x[0], edge_order=2), F),
    "np.trapezoid": spec(lambda x, y: np.trapezoid(x, y[0]) + np.trapezoid(x, dx=0.5, axis=0).sum(), F, F),
    "np.cross": spec(lambda a, b: np.cross(a, b, axisa=0, axisb=0), In((3, 4)), In((3, 4))),
    "np.cross mixed": spec(_cross_2d, In((4, 2)), In((4, 3))),
    **{f"np.{f.__name__} {mode} {n}x{m}": spec(lambda a, v, f=f, mode=mode: f(a, v, mode), In((n,)), In((m,)))
       for f in (np.convolve, np.correlate) for mode in ("full", "same", "valid") for n, m in ((5, 3), (2, 4))},
    "np.interp": spec(lambda x, fp: np.interp(x, np.array([-1.5, -0.2, 0.3, 1.5]), fp, right=fp[0] * 2),
                      In((3, 4), -1.9, 1.9), In((4,))),
    "np.cumulative_sum": spec(lambda x: np.cumulative_sum(x, axis=1, include_initial=True), F),
    "np.cumulative_prod": spec(lambda x: np.cumulative_prod(x[0], include_initial=True), In(lo=0.2, hi=2.0)),
    "np.logaddexp.reduce": spec(lambda x: np.logaddexp.reduce(x, axis=1) + np.logaddexp2.reduce(x, axis=None), F),
    "ufunc.outer": spec(lambda x, y: np.multiply.outer(x, y[0]) + np.arctan2.outer(x[:, 0], y[0])[:, None], F, F),
    "np.polyval": spec(lambda p, x: np.polyval(p, x) + np.polyval([1.0, -2.0, 0.5], x), In((4,)), F),
    "np.vander": spec(lambda x: np.vander(x, 4) + np.vander(x, increasing=True), In((4,))),
    "np.linspace traced": spec(lambda a, b: np.linspace(a, b, 5, axis=-1), In((3,)), In((3,))),
    "np.meshgrid": spec(lambda x, y: np.stack(np.meshgrid(x, y)) * np.meshgrid(x, y, indexing="ij", sparse=True)[0].T,
                        In((3,)), In((4,))),
    "np.fft.fftshift": spec(lambda x: np.fft.fftshift(x) * np.fft.ifftshift(x, axes=1), F),
    # statistics
    "np.nan_to_num": spec(lambda x: np.nan_to_num(with_nans(x), nan=2.0), F),
    "np.nanmax": spec(lambda x: np.nanmax(with_nans(x), axis=0) + np.nanmin(with_nans(x)), DISTINCT),
    "np.nanprod": spec(lambda x: np.nanprod(with_nans(x), axis=1), F),
    "np.nancumsum": spec(lambda x: np.nancumsum(with_nans(x), axis=1) * np.nancumprod(with_nans(x)).sum(), F),
    "np.nanvar": spec(lambda x: np.nanvar(with_nans(x), axis=1, ddof=1), F),
    "np.nanstd": spec(lambda x: np.nanstd(with_nans(x)), F),
    "np.nanargmax": spec(lambda x: x * np.nanargmax(with_nans(x), axis=0) * np.nanargmin(with_nans(x)), DISTINCT),
    "np.median": spec(lambda x: np.median(x, axis=1, keepdims=True) + np.median(x), DISTINCT),
    "np.quantile": spec(lambda x: np.quantile(x, [0.1, 0.55], axis=0), DISTINCT),
    "np.quantile scalar": spec(lambda x: np.quantile(x, 0.3) + np.quantile(x, 1.0), DISTINCT),
    **{f"np.quantile {m}": spec(lambda x, m=m: np.quantile(x, [0.2, 0.5], axis=1, method=m), DISTINCT)
       for m in ("lower", "higher", "midpoint", "nearest")},
    # a traced q in (0.31, 0.39): 7 q stays inside (2, 3), between two order statistics of 8 values
    "np.quantile traced q": spec(lambda x: np.quantile(x[1:], 0.35 + 0.04 * np.tanh(x[0, 0])), DISTINCT),
    "np.percentile": spec(lambda x: np.percentile(x, 35.0, axis=(0, 1)), DISTINCT),
    "np.nanmedian": spec(lambda x: np.nanmedian(with_nans(x), axis=0), DISTINCT),
    "np.nanquantile": spec(lambda x: np.nanquantile(with_nans(x), [0.3, 0.8], axis=1), DISTINCT),
    "np.nanpercentile": spec(lambda x: np.nanpercentile(with_nans(x), 60), DISTINCT),
    "np.cov": spec(lambda x, y: np.concatenate([np.ravel(np.cov(x, y[0])),
                                                np.ravel(np.cov(x.T, rowvar=False, bias=True))]), F, F),
    "np.corrcoef": spec(lambda x: np.corrcoef(x), F),
    # selection
    "np.partition": spec(lambda x: np.partition(x, (1, 2), axis=1), DISTINCT),
    "np.argwhere": spec(lambda x: x[tuple(np.argwhere(x > 0.5).T)], APART_FROM_HALF),
    "np.compress": spec(lambda x: np.compress([True, False, True], x, axis=0) * np.extract(x[0] > 0.5, x[0]).sum(),
                        APART_FROM_HALF),
    "np.choose": spec(lambda x: np.choose(np.array([[0, 1, 2, 0]]), [x[0], x[1], x[2] * 2]), F),
    "np.delete": spec(lambda x: np.delete(x, [0, 2], axis=1) * np.delete(x, 1).sum(), F),
    # np.insert: a scalar position (values along the axis, numpy's broadcasting), flattened with
    # repeated and negative positions, a slice and a negative axis, a one-element list (a block of
    # columns), a traced block into a constant array
    "np.insert": spec(lambda x, y: np.insert(x, 1, y[:, 0], axis=1) * np.insert(x, -1, y[0], axis=0)[1:].sum(), F, Y),
    "np.insert flat": spec(lambda x, y: np.insert(x, [0, 5, 5, -1], y[0] * 2), F, Y),
    "np.insert slice": spec(lambda x: np.insert(x, slice(0, 4, 2), 1.5, axis=-1) * np.insert(x, 3, x[0], -2).sum(), F),
    "np.insert block": spec(lambda x, y: np.insert(x, [2], y[:, :2], axis=1), F, Y),
    "np.insert into a constant": spec(lambda y: np.insert(np.ones((3, 4)), np.array([3, 0]), y[:, 1:3], axis=1), Y),
    # values
    "np.isclose": spec(lambda x: x * np.isclose(x, 0.0, atol=0.5) + x * np.allclose(x, x), APART_FROM_HALF),
    "np.imag": spec(lambda x: x + np.imag(x) + np.angle(x) * np.isreal(x) + np.real_if_close(x) * ~np.iscomplex(x),
                    In(lo=0.1, hi=2.0)),
    # arrays
    "np.concat": spec(lambda x: np.concat([x, x[:1]]) * 1.0, F),
    "np.permute_dims": spec(lambda x: np.permute_dims(x[None], (2, 0, 1)), F),
    "np.unstack": spec(lambda x: np.unstack(x, axis=1)[2] * np.unstack(x)[0][:3], F),
    "np.astype": spec(lambda x: np.astype(x, np.float64) * 2, F),
    "np.block": spec(lambda x, y: np.block([[x, y], [y[:1], x[:1]]]), F, F),
    "np.put": spec(_put, F),
    "np.place": spec(_place, F),
    "np.copyto": spec(_copyto, F),
    "np.fill_diagonal": spec(_fill_diagonal, In((5, 2))),
}
