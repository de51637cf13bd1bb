"""Sliding windows as a matrix: ``im2col`` and its transpose ``col2im``, the two primitives that
convolution and overlapping pooling are written with.

``im2col(x)`` for ``x: (N, C, *S)`` gathers every window into a row: shape
``(G, N * prod(P), C/G * prod(K))`` with ``G`` channel groups, ``P`` the output positions and ``K``
the kernel. A convolution is then one batched ``matmul`` with the reshaped weights, and its
gradients come from ``matmul``'s own rule (the weight gradient reuses the forward's windows, a
residual) plus ``col2im`` for the input gradient. Both maps are linear and each is the other's
transpose, so their rules are one line each and second derivatives close over the pair.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..primitives import Primitive
from ..rrule import linear_rule
from .geometry import out_shape

PARAMS = ("kernel", "stride", "padding", "dilation", "groups")


def _windows(x, kernel, stride, padding, dilation):
    """A strided view ``(N, C, *P, *K)`` of the (zero-)padded input: no copy but the padding."""
    nd = len(kernel)
    if any(lo or hi for lo, hi in padding):
        x = np.pad(x, ((0, 0), (0, 0)) + tuple(padding))
    extent = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    view = sliding_window_view(x, extent, axis=tuple(range(2, 2 + nd)))
    return view[(slice(None),) * 2 + tuple(slice(None, None, s) for s in stride)
                + tuple(slice(None, None, d) for d in dilation)]


def _group_order(nd: int) -> tuple[int, ...]:
    """Axes of ``(N, G, Cg, *P, *K)`` in the order ``(G, N, *P, Cg, *K)``."""
    return (1, 0, *range(3, 3 + nd), 2, *range(3 + nd, 3 + 2 * nd))


def _im2col(x, *, kernel, stride, padding, dilation, groups):
    nd = len(kernel)
    view = _windows(x, kernel, stride, padding, dilation)
    n, c = view.shape[:2]
    positions = view.shape[2:2 + nd]
    view = view.reshape((n, groups, c // groups) + positions + tuple(kernel))
    rows = (groups, n * math.prod(positions), c // groups * math.prod(kernel))
    return np.reshape(view.transpose(_group_order(nd)), rows, copy=True)


def _col2im(cols, *, shape, kernel, stride, padding, dilation, groups):
    """Scatter-add every window back to its place: a loop over the kernel offsets (a handful),
    each one strided add of all windows at once."""
    nd = len(kernel)
    n, c, *spatial = shape
    positions = out_shape(spatial, kernel, stride, padding, dilation)
    blocks = cols.reshape((groups, n) + positions + (c // groups,) + tuple(kernel))
    blocks = blocks.transpose(np.argsort(_group_order(nd)))          # (N, G, Cg, *P, *K)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    out = np.zeros((n, groups, c // groups) + padded, dtype=cols.dtype)
    for offset in itertools.product(*map(range, kernel)):
        target = tuple(slice(k * d, k * d + s * (p - 1) + 1, s)
                       for k, d, s, p in zip(offset, dilation, stride, positions))
        out[(slice(None),) * 3 + target] += blocks[(Ellipsis,) + offset]
    out = out.reshape((n, c) + padded)
    return out[(slice(None),) * 2 + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))]


im2col_p = Primitive("im2col", _im2col, params=PARAMS,
                     doc="The windows of x (N, C, *S) as rows: (groups, N*positions, C/groups*kernel).")
col2im_p = Primitive("col2im", _col2im, params=("shape",) + PARAMS,
                     doc="The transpose of im2col: adds each window row back into an array of `shape`.")

linear_rule(im2col_p, lambda dy, x, **geometry: col2im_p.bind(dy, shape=x.shape, **geometry))
linear_rule(col2im_p, lambda dy, cols, shape, **geometry: im2col_p.bind(dy, **geometry))


def im2col(x, kernel, stride, padding, dilation, groups=1):
    """Bind ``im2col`` with normalised (hashable) geometry."""
    return im2col_p.bind(x, kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                         dilation=tuple(dilation), groups=int(groups))


def col2im(cols, shape, kernel, stride, padding, dilation, groups=1):
    return col2im_p.bind(cols, shape=tuple(shape), kernel=tuple(kernel), stride=tuple(stride),
                         padding=tuple(padding), dilation=tuple(dilation), groups=int(groups))
