"""Sliding windows as a matrix: ``im2col`` and its transpose ``col2im``, the two primitives that
convolution is written with.

``im2col(x)`` for ``x: (N, C, *S)`` lays every window out as a column: shape
``(G, C/G * prod(K), prod(P) * N)`` for ``G`` channel groups, kernel ``K`` and output positions
``P``. A convolution is then one batched ``matmul`` with the weights reshaped to
``(G, O/G, C/G * prod(K))``, and its gradients come from ``matmul``'s rule (the weight gradient
reuses the forward's columns, a residual) plus ``col2im`` for the input gradient. Both maps are
linear and each is the other's transpose, so their rules are one line each.

Layout: the batch axis is innermost (columns ordered position-major, then batch). Each kernel
offset is then one strided copy (``im2col``) or add (``col2im``) whose inner loops run over
``width * N`` contiguous elements; with the batch outermost they run over one image row.
Measured for 3x3 kernels on float32 (64, 8, 4, 4): im2col 68 us instead of 260-310 us, col2im
84 us instead of 570 us; on (64, 16, 28, 28) 3.5 ms instead of 4.7-28 ms and 7.4 ms instead of
10-54 ms.

A network keeps that layout end to end without a pass that cancels conversions: the layout is a
property of memory, not of the tape. ``batch_first`` is a view, ``batch_last`` of such a view
costs nothing, and numpy's elementwise operations lay their result out like their operands
(``order="K"``), so conv, bias, relu and pooling hand each other batch-last memory and the
conversions inside the primitives are views (tests/nn/test_nn_cnn.py checks this on the compiled
gradient). What is copied: the input once (with its padding), and cotangents that arrive
batch-first (from a dense layer, from ``col2im``'s cropped padding), as a hand-written gradient
does. An elementwise operation on two operands of different layouts (a residual ``x + conv(x)``)
falls back to batch-first memory, and the next pooling copies once.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ..primitives import Primitive
from ..rules import batch_rule, linear_rule, to_front
from ..samples import IMAGES, MATRIX, In, Sample
from .geometry import out_shape

PARAMS = ("kernel", "stride", "padding", "dilation", "groups")


def batch_last(x, padding=None, fill=0.0):
    """``(N, C, *S) -> (C, *padded S, N)``: one contiguous copy (none if ``x`` is already laid
    out that way), padding included."""
    x = np.asarray(x)
    moved = x.transpose(tuple(range(1, x.ndim)) + (0,))
    if not padding or not any(lo or hi for lo, hi in padding):
        return np.ascontiguousarray(moved)
    out = np.full(padded_shape(x.shape, padding), fill, dtype=x.dtype)
    out[(slice(None),) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], padding))] = moved
    return out


def batch_first(y):
    """``(C, *P, N) -> (N, C, *P)`` as a view."""
    return y.transpose((y.ndim - 1,) + tuple(range(y.ndim - 1)))


def padded_shape(shape, padding) -> tuple[int, ...]:
    """The shape ``batch_last`` gives an ``(N, C, *S)`` array."""
    return (shape[1],) + tuple(s + lo + hi for s, (lo, hi) in zip(shape[2:], padding)) + (shape[0],)


def crop(padded, padding):
    """The unpadded part of a ``(C, *padded S, N)`` array, as a view (any namespace's: the index
    names every axis, as the array API standard asks)."""
    return padded[(slice(None),) + tuple(slice(lo, n - hi) for n, (lo, hi) in zip(padded.shape[1:], padding)) + (...,)]


@functools.lru_cache(maxsize=512)
def offsets(kernel, stride, dilation, positions) -> tuple:
    """Per kernel offset, two indices of ``(C, ...)`` arrays: ``(every channel, offset)`` into
    the columns and ``(every channel, the window it reads)`` into the padded input (cached, index
    tuples ready-made: the primitives run once per call of a compiled gradient, so their Python
    overhead counts)."""
    every = (slice(None),)
    return tuple((every + offset, every + tuple(slice(k * d, k * d + s * (p - 1) + 1, s)
                                                for k, d, s, p in zip(offset, dilation, stride, positions)))
                 for offset in itertools.product(*map(range, kernel)))


# -- the same over an array namespace ``xp`` (compiled array code, ``array_api_impl``): no
# in-place writes (JAX's arrays have none). Padding is concatenated; a window's share of an
# array is placed by interleaving and concatenating zeros, and the shares are summed in the
# order numpy's loops add them, so the sums are numpy's.

def padded_over(x, padding, fill, xp):
    """``batch_last`` over ``xp``: ``(N, C, *S) -> (C, *padded S, N)``."""
    out = xp.permute_dims(x, tuple(range(1, x.ndim)) + (0,))
    for axis, (lo, hi) in enumerate(padding or (), start=1):
        out = _between(_filled(out, axis, lo, fill, xp), out, _filled(out, axis, hi, fill, xp), axis, xp)
    return out


def first_over(y, xp):
    """``batch_first`` over ``xp``: ``(C, *P, N) -> (N, C, *P)``."""
    return xp.permute_dims(y, (y.ndim - 1,) + tuple(range(y.ndim - 1)))


def placed(block, window, shape, xp):
    """Zeros of ``shape`` ``(C, *padded S, N)`` holding ``block`` at ``window`` (its strided
    slices of the spatial axes, as ``offsets`` gives them): what ``zeros[window] = block`` writes."""
    for axis, part in enumerate(window[1:], start=1):
        n = block.shape[axis]
        if part.step > 1 and n > 1:            # the step's gaps: zeros after each element, the last dropped
            gaps = xp.zeros(block.shape, dtype=block.dtype, device=block.device)
            spread = xp.stack([block] + [gaps] * (part.step - 1), axis=axis + 1)
            block = xp.reshape(spread, block.shape[:axis] + (n * part.step,) + block.shape[axis + 1:])
            block = block[(slice(None),) * axis + (slice(0, (n - 1) * part.step + 1), ...)]
        after = shape[axis] - part.start - block.shape[axis]
        block = _between(_filled(block, axis, part.start, 0, xp), block, _filled(block, axis, after, 0, xp), axis, xp)
    return block


def _filled(x, axis: int, size: int, fill, xp):
    """``x``'s shape but ``size`` along ``axis``, filled with ``fill`` (None if empty)."""
    if not size:
        return None
    return xp.full(x.shape[:axis] + (size,) + x.shape[axis + 1:], fill, dtype=x.dtype, device=x.device)


def _between(before, x, after, axis: int, xp):
    """``x`` with ``before`` and ``after`` (None: nothing) concatenated along ``axis``."""
    if before is None and after is None:
        return x
    return xp.concat([part for part in (before, x, after) if part is not None], axis=axis)


def _im2col_over(x, *, kernel, stride, padding, dilation, groups, xp):
    n, c, *spatial = x.shape
    positions = out_shape(spatial, kernel, stride, padding, dilation)
    padded = padded_over(x, padding, 0, xp)
    cols = xp.stack([padded[window + (...,)] for _, window in offsets(kernel, stride, dilation, positions)], axis=1)
    return xp.reshape(cols, (groups, c // groups * math.prod(kernel), math.prod(positions) * n))


def _col2im_over(cols, *, shape, kernel, stride, padding, dilation, groups, xp):
    n, c, *spatial = shape
    positions = out_shape(spatial, kernel, stride, padding, dilation)
    blocks = xp.reshape(cols, (c, math.prod(kernel)) + positions + (n,))
    size, total = padded_shape(shape, padding), None
    for k, (_, window) in enumerate(offsets(kernel, stride, dilation, positions)):
        part = placed(blocks[:, k, ...], window, size, xp)
        total = part if total is None else total + part
    return first_over(crop(total, padding), xp)


def _im2col(x, *, kernel, stride, padding, dilation, groups):
    n, c, *spatial = np.shape(x)
    positions = out_shape(spatial, kernel, stride, padding, dilation)
    padded = batch_last(x, padding)
    cols = np.empty((c,) + tuple(kernel) + positions + (n,), dtype=padded.dtype)
    for block, window in offsets(kernel, stride, dilation, positions):
        cols[block] = padded[window]
    return cols.reshape(groups, c // groups * math.prod(kernel), math.prod(positions) * n)


def _col2im(cols, *, shape, kernel, stride, padding, dilation, groups):
    n, c, *spatial = shape
    positions = out_shape(spatial, kernel, stride, padding, dilation)
    blocks = cols.reshape((c,) + tuple(kernel) + positions + (n,))
    padded = np.zeros(padded_shape(shape, padding), dtype=cols.dtype)
    for block, window in offsets(kernel, stride, dilation, positions):
        padded[window] += blocks[block]
    return batch_first(crop(padded, padding))


GEOMETRY = dict(kernel=(3, 2), stride=(2, 1), padding=((1, 1), (0, 1)), dilation=(1, 2), groups=3)
im2col_p = Primitive("im2col", _im2col, params=PARAMS, linear_in=(0,), array_api_impl=_im2col_over,
                     doc="The windows of x (N, C, *S) as columns: (groups, C/groups*kernel, positions*N).",
                     samples=(Sample((IMAGES,), GEOMETRY, MATRIX),))
col2im_p = Primitive("col2im", _col2im, params=("shape",) + PARAMS, linear_in=(0,), array_api_impl=_col2im_over,
                     doc="The transpose of im2col: adds each window column back into an array of `shape`.",
                     samples=(Sample((In((3, 6, 18)),), dict(shape=IMAGES.shape, **GEOMETRY), MATRIX),))

linear_rule(im2col_p, lambda dy, x, **geometry: col2im_p.bind(dy, shape=x.shape, **geometry))
linear_rule(col2im_p, lambda dy, cols, shape, **geometry: im2col_p.bind(dy, **geometry))


@batch_rule(im2col_p)
def _im2col_batched(args, dims, **geometry):
    """The batch folded into N: its columns, ordered position-major, then (batch, N), are
    regrouped per example."""
    x = to_front(args[0], dims[0])
    b, n = np.shape(x)[:2]
    cols = im2col_p.bind(np.reshape(x, (b * n,) + np.shape(x)[2:]), **geometry)
    g, ck, columns = np.shape(cols)
    per_example = np.transpose(np.reshape(cols, (g, ck, columns // (b * n), b, n)), (3, 0, 1, 2, 4))
    return np.reshape(per_example, (b, g, ck, columns // b)), 0


@batch_rule(col2im_p)
def _col2im_batched(args, dims, shape, **geometry):
    """im2col's, transposed: each example's columns interleaved into one array of (batch, N) images."""
    cols = to_front(args[0], dims[0])
    b, g, ck, columns = np.shape(cols)
    n = shape[0]
    joint = np.transpose(np.reshape(cols, (b, g, ck, columns // n, n)), (1, 2, 3, 0, 4))
    x = col2im_p.bind(np.reshape(joint, (g, ck, columns * b)), shape=(b * n,) + tuple(shape[1:]), **geometry)
    return np.reshape(x, (b, n) + tuple(shape[1:])), 0


def im2col(x, kernel, stride, padding, dilation, groups=1):
    """Bind ``im2col`` with normalised (hashable) geometry."""
    return im2col_p.bind(x, kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                         dilation=tuple(dilation), groups=int(groups))


def col2im(cols, shape, kernel, stride, padding, dilation, groups=1):
    return col2im_p.bind(cols, shape=tuple(shape), kernel=tuple(kernel), stride=tuple(stride),
                         padding=tuple(padding), dilation=tuple(dilation), groups=int(groups))
