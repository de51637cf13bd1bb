"""Pooling. ``max_pool`` and ``mean_pool`` are primitives with dedicated rules; adaptive and
global pooling are compositions.

Why primitives: written as a reshape plus ``np.max``/``np.mean`` over the window axes, pooling
is a numpy reduction over short strided axes, 10-30x slower than one elementwise
``np.maximum``/``np.add`` per window offset (measured for 2x2 windows on (64, 8, 8, 8) and
(64, 16, 28, 28) float32). The rules are written with primitives of the same family, so they
lift and differentiate again:

* ``mean_pool`` and ``mean_unpool`` are linear and each other's transpose (up to the 1/K).
* ``max_pool``'s pullback is ``max_unpool(dy, x, y)``, which sends each window's cotangent to
  the *first* element equal to the window's maximum (PyTorch's choice, so gradients agree even
  at ties: common after relu and on images with flat regions). It is linear in ``dy``; its
  transpose ``max_select(dx, x, y)`` reads ``dx`` at those same elements. ``x`` and ``y`` only
  locate the maxima (the derivative in them is zero almost everywhere).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..primitives import Primitive
from ..batching.derived import folded
from ..rules import batch_rule, linear_rule, rrule
from ..samples import IMAGES, MATRIX, In, Sample
from .geometry import ntuple, out_shape, padding_pairs
from .layout import per_axis
from .windows import batch_first, batch_last, crop, first_over, offsets, padded_over, padded_shape, placed

PARAMS = ("window", "stride", "padding", "dilation")


@functools.lru_cache(maxsize=512)
def _windows(shape, window, stride, padding, dilation):
    return offsets(window, stride, dilation, out_shape(shape[2:], window, stride, padding, dilation))


def _max_pool(x, *, window, stride, padding, dilation):
    padded = batch_last(x, padding, -np.inf)
    y = None
    for _, w in _windows(np.shape(x), window, stride, padding, dilation):
        view = padded[w]
        y = view.copy() if y is None else np.maximum(y, view, out=y)
    return batch_first(y)


def _first_maxima(padded, target, windows):
    """Per window offset: (slices, mask of the windows whose first maximum sits at this offset),
    of the batch-last padded ``x`` and ``y = max_pool(x)`` (numpy's arrays or any namespace's)."""
    unclaimed = None
    for k, (_, w) in enumerate(windows):
        hit = padded[w + (...,)] == target          # (the standard's index names every axis)
        if unclaimed is None:
            unclaimed = ~hit
        else:
            hit = hit & unclaimed
            if k < len(windows) - 1:
                unclaimed = unclaimed ^ hit
        yield w, hit


def _maxima(x, y, window, stride, padding, dilation):
    """``_first_maxima`` of numpy arrays."""
    windows = _windows(np.shape(x), window, stride, padding, dilation)
    return _first_maxima(batch_last(x, padding, -np.inf), batch_last(y), windows)


def _disjoint(window, stride, padding, dilation) -> bool:
    """Windows that never overlap and cover no padding: each input element is in one window."""
    return all(s >= d * (k - 1) + 1 for k, s, d in zip(window, stride, dilation)) and not any(map(any, padding))


def _max_unpool(dy, x, y, *, window, stride, padding, dilation):
    dy_t = batch_last(dy)
    padded = np.zeros(padded_shape(np.shape(x), padding), dtype=np.result_type(dy))
    disjoint = _disjoint(window, stride, padding, dilation)
    for w, hit in _maxima(x, y, window, stride, padding, dilation):
        target = padded[w]
        if disjoint:
            np.multiply(dy_t, hit, out=target)
        else:
            target += dy_t * hit
    return batch_first(crop(padded, padding))


def _max_select(dx, x, y, *, window, stride, padding, dilation):
    dx_t = batch_last(dx, padding)
    out = np.zeros(np.shape(y)[1:] + np.shape(y)[:1], dtype=np.result_type(dx))
    for w, hit in _maxima(x, y, window, stride, padding, dilation):
        out += dx_t[w] * hit
    return batch_first(out)


def _mean_pool(x, *, window, stride, padding, dilation):
    padded = batch_last(x, padding)
    total = None
    for _, w in _windows(np.shape(x), window, stride, padding, dilation):
        view = padded[w]
        total = view.copy() if total is None else np.add(total, view, out=total)
    return batch_first(total * np.asarray(1 / math.prod(window), dtype=total.dtype))


def _mean_unpool(dy, *, shape, window, stride, padding, dilation):
    share = batch_last(dy) * np.asarray(1 / math.prod(window), dtype=np.result_type(dy))
    padded = np.zeros(padded_shape(shape, padding), dtype=share.dtype)
    for _, w in _windows(shape, window, stride, padding, dilation):
        padded[w] += share
    return batch_first(crop(padded, padding))


# -- the same over an array namespace ``xp`` (compiled array code, ``array_api_impl``), written
# as ad.nn.windows writes im2col's: no in-place writes, sums in numpy's order

def _maxima_over(x, y, window, stride, padding, dilation, xp):
    windows = _windows(tuple(x.shape), window, stride, padding, dilation)
    return _first_maxima(padded_over(x, padding, -math.inf, xp), padded_over(y, None, 0, xp), windows)


def _summed(parts):
    """The parts added in order (a window offset's share each)."""
    total = None
    for part in parts:
        total = part if total is None else total + part
    return total


def _max_pool_over(x, *, window, stride, padding, dilation, xp):
    padded = padded_over(x, padding, -math.inf, xp)
    views = [padded[w + (...,)] for _, w in _windows(tuple(x.shape), window, stride, padding, dilation)]
    return first_over(functools.reduce(xp.maximum, views), xp)


def _max_unpool_over(dy, x, y, *, window, stride, padding, dilation, xp):
    dy_t, size = padded_over(dy, None, 0, xp), padded_shape(tuple(x.shape), padding)
    total = _summed(placed(dy_t * xp.astype(hit, dy_t.dtype), w, size, xp)
                    for w, hit in _maxima_over(x, y, window, stride, padding, dilation, xp))
    return first_over(crop(total, padding), xp)


def _max_select_over(dx, x, y, *, window, stride, padding, dilation, xp):
    dx_t = padded_over(dx, padding, 0, xp)
    return first_over(_summed(dx_t[w + (...,)] * xp.astype(hit, dx_t.dtype)
                              for w, hit in _maxima_over(x, y, window, stride, padding, dilation, xp)), xp)


def _mean_pool_over(x, *, window, stride, padding, dilation, xp):
    padded = padded_over(x, padding, 0, xp)
    total = _summed(padded[w + (...,)] for _, w in _windows(tuple(x.shape), window, stride, padding, dilation))
    return first_over(total * (1 / math.prod(window)), xp)


def _mean_unpool_over(dy, *, shape, window, stride, padding, dilation, xp):
    share, size = padded_over(dy, None, 0, xp) * (1 / math.prod(window)), padded_shape(shape, padding)
    total = _summed(placed(share, w, size, xp) for _, w in _windows(shape, window, stride, padding, dilation))
    return first_over(crop(total, padding), xp)


GEOMETRY = dict(window=(2, 2), stride=(1, 2), padding=((1, 0), (0, 0)), dilation=(1, 1))
DISTINCT_IMAGES = In(IMAGES.shape, -4.0, 4.0, apart=True)     # no window ties
POOLED = In((2, 3, 5, 2))                                      # IMAGES pooled with GEOMETRY


def _with_maxima(d, x, _):
    """The operands of max_unpool and max_select: y = max_pool(x) follows from x."""
    return d, x, max_pool_p.bind(x, **GEOMETRY)


max_pool_p = Primitive("max_pool", _max_pool, params=PARAMS, doc="The maximum of each window.",
                       array_api_impl=_max_pool_over,
                       samples=(Sample((DISTINCT_IMAGES,), GEOMETRY, MATRIX),))
max_unpool_p = Primitive("max_unpool", _max_unpool, params=PARAMS, linear_in=(0,), array_api_impl=_max_unpool_over,
                         doc="dy routed to the first maximum of each window of x (y = max_pool(x)).",
                         samples=(Sample((POOLED, DISTINCT_IMAGES, POOLED), GEOMETRY, MATRIX, derive=_with_maxima),))
max_select_p = Primitive("max_select", _max_select, params=PARAMS, linear_in=(0,), array_api_impl=_max_select_over,
                         doc="dx read at the first maximum of each window of x: max_unpool's transpose.",
                         samples=(Sample((IMAGES, DISTINCT_IMAGES, POOLED), GEOMETRY, MATRIX, derive=_with_maxima),))
mean_pool_p = Primitive("mean_pool", _mean_pool, params=PARAMS, linear_in=(0,), doc="The mean of each window.",
                        array_api_impl=_mean_pool_over,
                        samples=(Sample((IMAGES,), GEOMETRY, MATRIX),))
mean_unpool_p = Primitive("mean_unpool", _mean_unpool, params=("shape",) + PARAMS, linear_in=(0,),
                          array_api_impl=_mean_unpool_over,
                          doc="dy spread evenly over each window: mean_pool's transpose.",
                          samples=(Sample((POOLED,), dict(shape=IMAGES.shape, **GEOMETRY), MATRIX),))


@rrule(max_pool_p)
def _max_pool_rule(x, **geometry):
    y = max_pool_p.bind(x, **geometry)
    return y, lambda dy: (max_unpool_p.bind(dy, x, y, **geometry),)


linear_rule(max_unpool_p, lambda ct, dy, x, y, **geometry: max_select_p.bind(ct, x, y, **geometry))
for _prim in (max_pool_p, max_unpool_p, max_select_p, mean_pool_p):
    batch_rule(_prim)(folded(_prim))
batch_rule(mean_unpool_p)(folded(mean_unpool_p, "shape"))
linear_rule(max_select_p, lambda ct, dx, x, y, **geometry: max_unpool_p.bind(ct, x, y, **geometry))
linear_rule(mean_pool_p, lambda dy, x, **geometry: mean_unpool_p.bind(dy, shape=x.shape, **geometry))
linear_rule(mean_unpool_p, lambda dx, dy, shape, **geometry: mean_pool_p.bind(dx, **geometry))


def _geometry(x, window, stride, padding, dilation) -> dict:
    nd = np.ndim(x) - 2
    if nd < 1:
        raise ValueError(f"pooling needs x of shape (N, C, *spatial), got {tuple(np.shape(x))}")
    window = ntuple(window, nd, "window")
    dilation = ntuple(dilation, nd, "dilation")
    stride = window if stride is None else ntuple(stride, nd, "stride")
    padding = padding_pairs(padding, window, dilation)
    out_shape(np.shape(x)[2:], window, stride, padding, dilation)    # raises if the window does not fit
    return {"window": window, "stride": stride, "padding": padding, "dilation": dilation}


def max_pool(x, window, *, stride=None, padding=0, dilation=1):
    """Max over windows of ``x: (N, C, *S)``; ``stride`` defaults to ``window``; padding counts
    as ``-inf`` (``torch.nn.functional.max_pool{1,2,3}d``)."""
    return max_pool_p.bind(x, **_geometry(x, window, stride, padding, dilation))


def mean_pool(x, window, *, stride=None, padding=0):
    """Mean over windows; padded zeros are counted (PyTorch's ``avg_pool`` default,
    ``count_include_pad=True``, and NNlib's ``meanpool``)."""
    return mean_pool_p.bind(x, **_geometry(x, window, stride, padding, 1))


def _adaptive_bounds(size: int, out: int):
    """PyTorch's adaptive windows: ``[floor(i*size/out), ceil((i+1)*size/out))``."""
    starts = [(i * size) // out for i in range(out)]
    ends = [-((-(i + 1) * size) // out) for i in range(out)]
    return starts, ends


def adaptive_mean_pool(x, output_size):
    """Mean over the adaptive windows giving ``output_size`` positions per spatial dimension
    (``torch.nn.functional.adaptive_avg_pool{1,2,3}d``): one averaging matrix per dimension,
    applied with ``einsum``."""
    nd = np.ndim(x) - 2
    output_size = ntuple(output_size, nd, "output_size")
    spatial = np.shape(x)[2:]
    if all(s % o == 0 for s, o in zip(spatial, output_size)):
        return mean_pool(x, tuple(s // o for s, o in zip(spatial, output_size)))
    mats = []
    for size, out in zip(spatial, output_size):
        starts, ends = _adaptive_bounds(size, out)
        m = np.zeros((out, size), dtype=x.dtype)
        for i, (a, b) in enumerate(zip(starts, ends)):
            m[i, a:b] = 1.0 / (b - a)
        mats.append(m)
    return per_axis(x, mats)


def adaptive_max_pool(x, output_size):
    """Max over the adaptive windows (``torch.nn.functional.adaptive_max_pool{1,2,3}d``): the
    windows are gathered side by side with a static index, then max-pooled. Short windows repeat
    their last element; a repeat is never a window's first maximum, so the gradient is PyTorch's."""
    nd = np.ndim(x) - 2
    output_size = ntuple(output_size, nd, "output_size")
    spatial = np.shape(x)[2:]
    if all(s % o == 0 for s, o in zip(spatial, output_size)):
        return max_pool(x, tuple(s // o for s, o in zip(spatial, output_size)))
    index, widths = [], []
    for axis, (size, out) in enumerate(zip(spatial, output_size)):
        starts, ends = _adaptive_bounds(size, out)
        widths.append(max(b - a for a, b in zip(starts, ends)))
        idx = np.minimum(np.add.outer(starts, np.arange(widths[-1])), np.array(ends)[:, None] - 1)
        index.append(np.reshape(idx, (1,) * axis + (-1,) + (1,) * (nd - axis - 1)))
    windows = x[(slice(None), slice(None)) + tuple(index)]          # (N, C, o1*k1, o2*k2, ...)
    return max_pool(windows, tuple(widths))


def global_max_pool(x):
    """Max over all spatial positions, keeping them as size-1 axes (NNlib's ``GlobalMaxPool``)."""
    return np.max(x, axis=tuple(range(2, np.ndim(x))), keepdims=True)


def global_mean_pool(x):
    """Mean over all spatial positions, keeping them as size-1 axes."""
    return np.mean(x, axis=tuple(range(2, np.ndim(x))), keepdims=True)
