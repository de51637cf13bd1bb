"""Lowerings of the ad.nn primitives (registered into the same table, by the primitive objects).

Windows have static geometry, so ``im2col``/``col2im`` and the pooling primitives are each a
Gather (reading windows) or a ScatterND with reduction "add" (writing them back) through an
index map computed at export time from element numbers: for im2col by running the primitive
itself on them, for pooling with numpy's sliding windows. 0 marks padding, read from a constant
put in front of the flattened input. The softmax family mirrors the stable numpy
implementations.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..nn.normalization import standardize_p
from ..nn.pool import max_pool_p, max_select_p, max_unpool_p, mean_pool_p, mean_unpool_p
from ..nn.softmax_family import log_softmax_p, logsumexp_p, softmax_p
from ..nn.special import erf_p, relu_p, sigmoid_p
from ..nn.windows import col2im_p, im2col_p
from .lowering import elementwise, lowers, out_aval


def _window_map(shape, params) -> np.ndarray:
    """For each element of im2col's result, 1 + the flat index it reads (0: padding)."""
    geometry = {k: v for k, v in params.items() if k != "shape"}
    return im2col_p.impl(np.arange(1, math.prod(shape) + 1, dtype=np.int64).reshape(shape), **geometry)


def _pool_map(shape, params) -> np.ndarray:
    """For each window element, 1 + the flat index it reads (0: padding), shaped
    ``(N, C, *positions, window size)`` with the window's elements in row-major order."""
    nd = len(shape) - 2
    index = np.pad(np.arange(1, math.prod(shape) + 1, dtype=np.int64).reshape(shape),
                   ((0, 0), (0, 0)) + tuple(params["padding"]))
    extent = tuple(d * (k - 1) + 1 for k, d in zip(params["window"], params["dilation"]))
    view = sliding_window_view(index, extent, axis=tuple(range(2, 2 + nd)))
    view = view[(slice(None),) * 2 + tuple(slice(None, None, s) for s in params["stride"])
                + tuple(slice(None, None, d) for d in params["dilation"])]
    return view.reshape(view.shape[:2 + nd] + (-1,))


def gather_windows(g, x: str, dt, index: np.ndarray, pad_value: float = 0.0) -> str:
    """The elements of ``x`` that ``index`` names (``pad_value`` where it is 0)."""
    flat = g.op("Reshape", x, g.ints([-1]))
    padded = g.op("Concat", g.const(np.full(1, pad_value, dt)), flat, axis=0)
    return g.op("Gather", padded, g.const(index), axis=0)


def scatter_windows(g, updates: str, shape, dt, index: np.ndarray) -> str:
    """Add ``updates`` (shaped like ``index``) into zeros of ``shape`` at the mapped elements."""
    size = math.prod(shape)
    summed = g.op("ScatterND", g.const(np.zeros(size + 1, dt)), g.const(index[..., None]), updates,
                  reduction="add")
    return g.reshape(g.op("Slice", summed, g.ints([1]), g.ints([size + 1]), g.ints([0])), shape)


@lowers(im2col_p)
def _im2col(g, e):
    x = e.inputs[0]
    return gather_windows(g, g.x(x), x.aval.dtype, _window_map(x.aval.shape, e.kwargs))


@lowers(col2im_p)
def _col2im(g, e):
    shape, dt = e.kwargs["shape"], out_aval(e).dtype
    return scatter_windows(g, g.x(e.inputs[0], dt), shape, dt, _window_map(shape, e.kwargs))


@lowers(max_pool_p)
def _max_pool(g, e):
    x, dt = e.inputs[0], out_aval(e).dtype
    windows = gather_windows(g, g.x(x, dt), dt, _pool_map(x.aval.shape, e.kwargs), -np.inf)
    return g.op("ReduceMax", windows, g.ints([-1]), keepdims=0)


@lowers(mean_pool_p)
def _mean_pool(g, e):
    x, dt = e.inputs[0], out_aval(e).dtype
    index = _pool_map(x.aval.shape, e.kwargs)
    total = g.op("ReduceSum", gather_windows(g, g.x(x, dt), dt, index), g.ints([-1]), keepdims=0)
    return g.op("Mul", total, g.const(np.asarray(1 / index.shape[-1], dt)))


@lowers(mean_unpool_p)
def _mean_unpool(g, e):
    shape, dt = e.kwargs["shape"], out_aval(e).dtype
    index = _pool_map(shape, e.kwargs)
    share = g.op("Mul", g.x(e.inputs[0], dt), g.const(np.asarray(1 / index.shape[-1], dt)))
    spread = g.op("Expand", g.op("Unsqueeze", share, g.ints([-1])), g.ints(index.shape))
    return scatter_windows(g, spread, shape, dt, index)


def _first_maxima(g, x, y, index) -> str:
    """Per window element: is it the window's first element equal to the window's maximum?"""
    dt = x.aval.dtype
    windows = gather_windows(g, g.x(x), dt, index, -np.inf)
    hit = g.op("Equal", windows, g.op("Unsqueeze", g.x(y, dt), g.ints([-1])))
    seen = g.op("CumSum", g.cast(hit, bool, np.int64), g.const(np.int64(-1)))
    return g.op("And", hit, g.op("Equal", seen, g.const(np.int64(1))))


@lowers(max_unpool_p)
def _max_unpool(g, e):
    dy, x, y = e.inputs
    dt = out_aval(e).dtype
    index = _pool_map(x.aval.shape, e.kwargs)
    routed = g.op("Where", _first_maxima(g, x, y, index), g.op("Unsqueeze", g.x(dy, dt), g.ints([-1])),
                  g.const(np.zeros((), dt)))
    return scatter_windows(g, routed, x.aval.shape, dt, index)


@lowers(max_select_p)
def _max_select(g, e):
    dx, x, y = e.inputs
    dt = out_aval(e).dtype
    index = _pool_map(x.aval.shape, e.kwargs)
    read = gather_windows(g, g.x(dx, dt), dt, index)
    picked = g.op("Where", _first_maxima(g, x, y, index), read, g.const(np.zeros((), dt)))
    return g.op("ReduceSum", picked, g.ints([-1]), keepdims=0)


def _shift(g, x: str, axes, dt) -> str:
    """``max(x)`` over ``axes`` (kept), replaced by 0 where it is not finite (as in ad.nn)."""
    m = g.op("ReduceMax", x, g.ints(axes), keepdims=1)
    finite = g.op("Not", g.op("Or", g.op("IsNaN", m), g.op("IsInf", m)))
    return g.op("Where", finite, m, g.const(np.zeros((), dt)))


def _shifted_exp_sum(g, e):
    """(the shift ``m``, ``s = x - m``, ``sum(exp(s))`` over the axes, kept) for the softmax family."""
    dt, ndim, axis = out_aval(e).dtype, e.inputs[0].aval.ndim, e.kwargs["axis"]
    axes = list(range(ndim)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    x = g.x(e.inputs[0], dt)
    m = _shift(g, x, axes, dt)
    s = g.op("Sub", x, m)
    return m, s, g.op("ReduceSum", g.op("Exp", s), g.ints(axes), keepdims=1)


@lowers(softmax_p)
def _softmax(g, e):
    _, s, total = _shifted_exp_sum(g, e)
    return g.op("Div", g.op("Exp", s), total)


@lowers(log_softmax_p)
def _log_softmax(g, e):
    _, s, total = _shifted_exp_sum(g, e)
    return g.op("Sub", s, g.op("Log", total))


@lowers(logsumexp_p)
def _logsumexp(g, e):
    m, _, total = _shifted_exp_sum(g, e)
    out = g.op("Add", g.op("Log", total), m)
    return out if e.kwargs["keepdims"] else g.reshape(out, out_aval(e).shape)


@lowers(standardize_p)
def _standardize(g, e):
    """``(x - mean) / sqrt(var + eps)``, computed as ad.nn computes it."""
    dt, axes = out_aval(e).dtype, g.ints(e.kwargs["axes"])
    x = g.x(e.inputs[0], dt)
    centered = g.op("Sub", x, g.op("ReduceMean", x, axes, keepdims=1))
    var = g.op("ReduceMean", g.op("Mul", centered, centered), axes, keepdims=1)
    eps = g.const(np.asarray(e.kwargs["eps"], dt))
    inv = g.op("Div", g.const(np.ones((), dt)), g.op("Sqrt", g.op("Add", var, eps)))
    return g.op("Mul", centered, inv)


for _prim, _op in ((relu_p, "Relu"), (sigmoid_p, "Sigmoid"), (erf_p, "Erf")):
    lowers(_prim)(elementwise(_op, "out"))
