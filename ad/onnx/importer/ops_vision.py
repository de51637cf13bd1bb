"""Sampling ops of vision models: GridSample, AffineGrid, RoiAlign, MaxRoiPool, DeformConv; the
window and crop ops Col2Im and CenterCropPad; NonMaxSuppression.

The samplers read an image at fractional positions: per spatial axis each position becomes a few
taps (an integer index and a weight: 1 for nearest, 2 for linear, 4 for cubic), and ``sample``
gathers every combination of taps (``np.take_along_axis``) and sums them weighted. The indices
are integers computed from the positions (no gradient); the weights are computed from them, so
the result differentiates with respect to the image and to the positions (a grid, offsets, rois).
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ...nn.windows import col2im
from .nodes import const, op, resolve_axis
from .ops_resample import keys_cubic


def sample(x, taps, reduce=np.add):
    """``x`` (B, C, *S) read at positions given per spatial axis as taps: ``taps[a]`` is a list of
    (index, weight) pairs of arrays broadcastable to (B, *P), indices inside the axis, weights 0
    for taps that read nothing (None: 1). Returns (B, C, *P): per position, the taps' weighted
    values combined by ``reduce`` (a sum interpolates; RoiAlign's max mode takes the largest)."""
    b, c, *spatial = np.shape(x)
    points = np.broadcast_shapes(*(np.shape(t) for axis in taps for pair in axis for t in pair if t is not None))[1:]
    flat = np.reshape(x, (b, c, -1))
    strides = [math.prod(spatial[a + 1:]) for a in range(len(spatial))]
    out = None
    for combo in itertools.product(*taps):
        index = functools.reduce(np.add, [i * s for (i, _), s in zip(combo, strides)])
        weights = [w for _, w in combo if w is not None]
        value = np.take_along_axis(flat, np.reshape(np.broadcast_to(index, (b,) + points), (b, 1, -1)), axis=2)
        if weights:
            w = functools.reduce(np.multiply, weights)
            value = value * np.reshape(np.broadcast_to(w, (b,) + points), (b, 1, -1)).astype(np.result_type(x))
        out = value if out is None else reduce(out, value)
    return np.reshape(out, (b, c) + points)


def _zeros_outside(index, weight, size: int):
    """A tap outside ``[0, size)`` reads 0: its weight masked, its index clamped."""
    inside = (index >= 0) & (index < size)
    weight = inside if weight is None else np.where(inside, weight, const(0, weight))
    return np.clip(index, 0, size - 1), weight


def _linear_taps(pos):
    """The two taps around ``pos`` (floor and the next), weighted by distance."""
    low = np.floor(pos)
    frac = pos - low
    low = low.astype(np.int64)
    return [(low, 1 - frac), (low + 1, frac)]


def _cubic_taps(pos):
    """The four taps around ``pos``, weighted by Keys' cubic kernel (a = -0.75)."""
    low = np.floor(pos)
    frac = pos - low
    low = low.astype(np.int64)
    kernel = keys_cubic(-0.75)
    return [(low + k, kernel(frac - k).astype(np.result_type(pos))) for k in (-1, 0, 1, 2)]


def _reflect(v, lo: float, hi: float):
    """``v`` reflected at ``lo`` and ``hi`` until it lies between them (a piecewise identity or
    mirror, so it differentiates)."""
    if hi <= lo:
        return np.zeros_like(v) + const(lo, v)
    span = hi - lo
    below, above = v < lo, v > hi
    out_by = np.where(below, lo - v, v - hi)
    folds = np.floor(out_by / span)
    rest = out_by - folds * span
    even = np.fmod(folds, 2) == 0
    from_lo, from_hi = rest + const(lo, v), const(hi, v) - rest
    return np.where(below, np.where(even, from_lo, from_hi), np.where(above, np.where(even, from_hi, from_lo), v))


#: GridSample's interpolations: the taps of a position (nearest: the position rounded, alone)
_GRID_TAPS = {"linear": _linear_taps, "cubic": _cubic_taps,
              "nearest": lambda pos: [(np.trunc(pos).astype(np.int64), None)]}


@op("GridSample", since=16)
def _grid_sample(n, x, grid):
    """The image read at the grid's positions (``grid[..., 0]`` is the last axis), in [-1, 1]
    across the image: nearest (half to even, as PyTorch), linear or cubic, with zeros, border or
    reflection padding."""
    names = {m: m for m in _GRID_TAPS} if n.opset >= 20 else {"bilinear": "linear", "nearest": "nearest",
                                                                 "bicubic": "cubic"}
    mode = n.attr("mode", next(iter(names)))
    if mode not in names:
        raise n.error(f"mode={mode!r} is not supported ({', '.join(names)})")
    mode = names[mode]
    padding, align = n.attr("padding_mode", "zeros"), n.attr("align_corners", 0)
    if padding not in ("zeros", "border", "reflection"):
        raise n.error(f"padding_mode={padding!r} is not supported (zeros, border, reflection)")
    spatial = np.shape(x)[2:]
    if np.shape(grid)[-1] != len(spatial):
        raise n.error(f"the grid's last axis has {np.shape(grid)[-1]} coordinates for {len(spatial)} spatial axes")
    n.check_size(np.shape(x)[:2] + np.shape(grid)[1:-1], "output", np.result_type(x))
    taps = []
    for a, size in enumerate(spatial):
        g = grid[..., len(spatial) - 1 - a]
        pos = (g + 1) / 2 * (size - 1) if align else ((g + 1) * size - 1) / 2
        lo, hi = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
        if mode == "nearest":
            pos = np.rint(pos)
        if padding == "border" and mode != "cubic":      # cubic clamps its taps alone, as PyTorch and
            pos = np.where((pos < lo) | (pos > hi), np.clip(pos, 0, size - 1), pos)   # onnxruntime do
        elif padding == "reflection":
            pos = _reflect(pos, lo, hi)
        taps.append([_pad_tap(i, w, size, padding, lo, hi) for i, w in _GRID_TAPS[mode](pos)])
    return sample(x, taps)


def _pad_tap(index, weight, size: int, padding: str, lo: float, hi: float):
    """A tap's index brought inside the axis as ``padding`` says (zeros: the tap reads 0)."""
    if padding == "zeros":
        return _zeros_outside(index, weight, size)
    if padding == "reflection":
        index = np.trunc(_reflect(index.astype(np.float64), lo, hi)).astype(np.int64)
    return np.clip(index, 0, size - 1), weight


@op("AffineGrid", since=20)
def _affine_grid(n, theta, size):
    """The grid (N, *S, ndim) of ``theta`` (N, ndim, ndim + 1) applied to the image's normalized
    coordinates (x first), for GridSample."""
    _, _, *spatial = n.ints(size, "size")
    align = n.attr("align_corners", 0)
    n.check_size((np.shape(theta)[0], *spatial, len(spatial)), "output", np.result_type(theta))
    dt = np.result_type(theta)
    axes = [np.linspace(-1, 1, s) if align else (2 * np.arange(s) + 1) / s - 1 for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([m.reshape(-1) for m in mesh[::-1]] + [np.ones(math.prod(spatial))]).astype(dt)
    grid = np.matmul(theta, base)                       # (N, ndim, positions)
    return np.reshape(np.swapaxes(grid, 1, 2), (np.shape(theta)[0], *spatial, len(spatial)))


def _roi_taps(pos, size: int, valid):
    """RoiAlign's two taps along an axis: a position outside [-1, size] reads nothing, one below
    0 reads the edge, one at or past the last pixel reads the last pixel alone."""
    inside = (pos >= -1) & (pos <= size) & valid
    pos = np.maximum(pos, 0)
    low = np.floor(pos)
    edge = low >= size - 1
    low = np.where(edge, const(size - 1, low), low)
    frac = np.where(edge, const(0, pos), pos - low)
    low = low.astype(np.int64)
    high = np.where(edge, low, low + 1)
    zero = const(0, frac)
    return [(low, np.where(inside, 1 - frac, zero)), (high, np.where(inside, frac, zero))]


@op("RoiAlign", since=10)
def _roi_align(n, x, rois, batch_indices):
    """Per region, the bilinear samples of a regular grid in each output bin, averaged (or their
    largest weighted tap, ``mode="max"``). With ``sampling_ratio=0`` the grid's size depends on
    the region's size, so the regions are read while tracing."""
    mode = n.attr("mode", "avg")
    if mode not in ("avg", "max"):
        raise n.error(f"mode={mode!r} is not supported (avg, max)")
    height, width = n.attr("output_height", 1), n.attr("output_width", 1)
    ratio, scale = n.attr("sampling_ratio", 0), n.attr("spatial_scale", 1.0)
    transform = n.attr("coordinate_transformation_mode", "half_pixel") if n.opset >= 16 else "output_half_pixel"
    if transform not in ("half_pixel", "output_half_pixel"):
        raise n.error(f"coordinate_transformation_mode={transform!r} is not supported (half_pixel, output_half_pixel)")
    half_pixel = transform == "half_pixel"
    count = np.shape(rois)[0]
    n.check_size((count, np.shape(x)[1], height, width), "output", np.result_type(x))
    shift = const(0.5 if half_pixel else 0.0, rois)
    start = rois[:, :2] * const(scale, rois) - shift              # (x, y) of each region
    extent = rois[:, 2:] * const(scale, rois) - shift - start
    if not half_pixel:
        extent = np.maximum(extent, const(1, extent))
    bins = extent / np.array([width, height], np.result_type(rois))
    if ratio > 0:
        grids = np.full((count, 2), ratio)
    else:
        grids = np.maximum(np.ceil(n.static(extent, "rois (sampling_ratio=0: the sampling grid's size)")
                                   / np.array([width, height])).astype(np.int64), 1)
    most = grids.max(axis=0) if count else np.ones(2, np.int64)
    image = np.take(x, batch_indices, axis=0)
    taps = []
    for axis, (cells, size) in enumerate([(height, np.shape(x)[2]), (width, np.shape(x)[3])]):
        c = 1 - axis                                                # rois hold (x, y): y is column 1
        step = np.arange(most[c])
        cell = bins[:, c].reshape(-1, 1, 1)
        pos = (start[:, c].reshape(-1, 1, 1) + np.arange(cells).reshape(1, -1, 1) * cell
               + (step + 0.5).reshape(1, 1, -1) * cell / grids[:, c].reshape(-1, 1, 1).astype(np.result_type(rois)))
        valid = step.reshape(1, 1, -1) < grids[:, c].reshape(-1, 1, 1)
        shape = (count, cells, int(most[c]), 1, 1) if axis == 0 else (count, 1, 1, cells, int(most[c]))
        taps.append([(np.reshape(i, shape), np.reshape(w, shape)) for i, w in _roi_taps(pos, size, valid)])
    if mode == "avg":
        total = np.sum(sample(image, taps), axis=(3, 5))
        return total / np.reshape(np.prod(grids, axis=1), (-1, 1, 1, 1)).astype(np.result_type(x))
    samples = sample(image, taps, reduce=np.maximum)            # (R, C, out h, grid h, out w, grid w)
    used_h = np.arange(most[1]).reshape(1, -1) < grids[:, 1:]
    used_w = np.arange(most[0]).reshape(1, -1) < grids[:, :1]
    used = used_h.reshape(count, 1, 1, -1, 1, 1) & used_w.reshape(count, 1, 1, 1, 1, -1)
    return np.max(np.where(used, samples, const(-np.inf, samples)), axis=(3, 5))


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


@op("MaxRoiPool")
def _max_roi_pool(n, x, rois):
    """Per region (``[batch, x1, y1, x2, y2]``, rounded to pixels), the maximum of each of the
    ``pooled_shape`` bins (0 for an empty bin); the regions are read while tracing, as they decide
    the bins."""
    pooled_h, pooled_w = n.attr("pooled_shape")
    scale = n.attr("spatial_scale", 1.0)
    boxes = n.static(rois, "rois (they decide the pooled windows)")
    _, c, height, width = np.shape(x)
    n.check_size((len(boxes), c, pooled_h, pooled_w), "output", np.result_type(x))
    low = const(-np.inf, x)
    out = []
    for box in boxes:
        x1, y1, x2, y2 = (int(v) for v in _round_half_away(box[1:] * scale))
        rows = _bins(y1, max(y2 - y1 + 1, 1), pooled_h, height)        # (pooled h, H)
        cols = _bins(x1, max(x2 - x1 + 1, 1), pooled_w, width)         # (pooled w, W)
        image = x[int(box[0])]                                         # (C, H, W)
        per_col = np.max(np.where(cols[None, None], image[:, :, None, :], low), axis=-1)        # (C, H, pw)
        pooled = np.max(np.where(rows[None, :, :, None], per_col[:, None], low), axis=2)        # (C, ph, pw)
        empty = ~(rows.any(axis=1)[:, None] & cols.any(axis=1)[None, :])
        out.append(np.where(empty, const(0, x), pooled))
    return np.stack(out) if out else np.zeros((0, c, pooled_h, pooled_w), np.result_type(x))


def _bins(start: int, length: int, count: int, size: int) -> np.ndarray:
    """(count, size): which pixels of an axis each of ``count`` bins over ``length`` pixels from
    ``start`` covers (clipped to the image)."""
    step = length / count
    i = np.arange(count)
    lo = np.clip(np.floor(i * step).astype(np.int64) + start, 0, size)
    hi = np.clip(np.ceil((i + 1) * step).astype(np.int64) + start, 0, size)
    pixels = np.arange(size)
    return (pixels >= lo[:, None]) & (pixels < hi[:, None])


@op("DeformConv", since=19)
def _deform_conv(n, x, w, offset, b=None, mask=None):
    """A convolution whose kernel taps are moved by ``offset`` (per output position, per offset
    group of channels) and read bilinearly (0 outside), each tap scaled by ``mask``."""
    nd = np.ndim(x) - 2
    kernel = tuple(n.attr("kernel_shape", None) or np.shape(w)[2:])
    stride, dilation = n.attr("strides", (1,) * nd), n.attr("dilations", (1,) * nd)
    pads = n.attr("pads", (0,) * (2 * nd))
    groups, offset_groups = n.attr("group", 1), n.attr("offset_group", 1)
    batch, channels, *spatial = np.shape(x)
    out = tuple((s + pads[a] + pads[a + nd] - dilation[a] * (kernel[a] - 1) - 1) // stride[a] + 1
                for a, s in enumerate(spatial))
    taps = math.prod(kernel)
    if np.shape(offset) != (batch, offset_groups * taps * nd) + out:
        raise n.error(f"offset has shape {np.shape(offset)}, expected {(batch, offset_groups * taps * nd) + out}")
    n.check_size((batch, np.shape(w)[0]) + out, "output", np.result_type(x))
    n.check_size((batch, channels, taps) + out, "sampled columns", np.result_type(x))
    offset = np.reshape(offset, (batch * offset_groups, taps, nd) + out)
    grid = np.meshgrid(*(np.arange(k) for k in kernel), indexing="ij")
    positions = []
    for a in range(nd):
        base = (np.reshape(grid[a], (-1,) + (1,) * nd) * dilation[a] - pads[a]
                + np.reshape(np.arange(out[a]) * stride[a], (-1,) + (1,) * (nd - 1 - a)))
        pos = offset[:, :, a] + base.astype(np.result_type(offset))                 # (B * groups, taps, *out)
        positions.append([_zeros_outside(i, wt, spatial[a]) for i, wt in _linear_taps(pos)])
    images = np.reshape(x, (batch * offset_groups, channels // offset_groups) + tuple(spatial))
    cols = sample(images, positions)                                                 # (B * og, C / og, taps, *out)
    cols = np.reshape(cols, (batch, offset_groups, channels // offset_groups, taps, math.prod(out)))
    if mask is not None:
        cols = cols * np.reshape(mask, (batch, offset_groups, 1, taps, math.prod(out)))
    cols = np.reshape(cols, (batch, groups, channels // groups * taps, math.prod(out)))
    weights = np.reshape(w, (groups, np.shape(w)[0] // groups, -1))
    y = np.reshape(np.einsum("gok,ngkp->ngop", weights, cols), (batch, np.shape(w)[0]) + out)
    return y if b is None else y + np.reshape(b, (-1,) + (1,) * nd)


@op("Col2Im", since=18)
def _col2im(n, cols, image_shape, block_shape):
    """Columns (N, C * prod(block), L) added back into images (N, C, *image_shape): ad.nn's
    ``col2im``, the transpose of the windows a convolution reads."""
    image, block = n.ints(image_shape, "image_shape"), n.ints(block_shape, "block_shape")
    nd = len(image)
    dilation, stride = n.attr("dilations", (1,) * nd), n.attr("strides", (1,) * nd)
    pads = n.attr("pads", (0,) * (2 * nd))
    batch, rows, length = np.shape(cols)
    channels = rows // math.prod(block)
    positions = math.prod((s + pads[a] + pads[a + nd] - dilation[a] * (block[a] - 1) - 1) // stride[a] + 1
                          for a, s in enumerate(image))
    if channels * math.prod(block) != rows or positions != length:
        raise n.error(f"input of shape {np.shape(cols)} does not hold the {positions} windows of block {block} "
                      f"over an image {image}")
    n.check_size((batch, channels) + image, "output", np.result_type(cols))
    flat = np.reshape(np.transpose(cols, (1, 2, 0)), (1, rows, length * batch))      # ad.nn's batch-last layout
    return col2im(flat, (batch, channels) + image, block, stride,
                  tuple((pads[a], pads[a + nd]) for a in range(nd)), dilation)


@op("CenterCropPad", since=18)
def _center_crop_pad(n, x, shape):
    """Each axis cropped or zero-padded to the given size, centred (the odd one at the end)."""
    sizes = n.ints(shape, "shape")
    ndim = np.ndim(x)
    axes = [resolve_axis(a, ndim) for a in n.attr("axes", range(ndim))]
    index, widths = [slice(None)] * ndim, [(0, 0)] * ndim
    for a, size in zip(axes, sizes):
        dim = np.shape(x)[a]
        if size < dim:
            lo = (dim - size) // 2
            index[a] = slice(lo, lo + size)
        elif size > dim:
            lo = (size - dim) // 2
            widths[a] = (lo, size - dim - lo)
    n.check_size(tuple(dict(zip(axes, sizes)).get(a, d) for a, d in enumerate(np.shape(x))), "output",
                 np.result_type(x))
    y = x[tuple(index)]
    return np.pad(y, widths) if any(lo or hi for lo, hi in widths) else y


def _corners(boxes: np.ndarray, center: bool) -> np.ndarray:
    """(..., 4) boxes as (y_min, x_min, y_max, x_max): from two corners in any order, or from
    (x_center, y_center, width, height)."""
    if center:
        x, y, w, h = np.moveaxis(boxes, -1, 0)
        return np.stack([y - h / 2, x - w / 2, y + h / 2, x + w / 2], axis=-1)
    return np.concatenate([np.minimum(boxes[..., :2], boxes[..., 2:]), np.maximum(boxes[..., :2], boxes[..., 2:])], -1)


def _optional_scalar(n, x, what: str, default):
    """An optional scalar input read while tracing (missing or empty: ``default``)."""
    return default if x is None or np.size(x) == 0 else n.static(x, what).reshape(-1)[0].item()


@op("NonMaxSuppression", since=10, static=(0, 1, 3, 4))
def _non_max_suppression(n, boxes, scores, max_per_class=None, iou_threshold=None, score_threshold=None):
    """Per batch entry and class, the boxes kept greedily by score (above ``score_threshold``),
    each dropped if it overlaps a kept one by more than ``iou_threshold``: (selected, 3) indices
    [batch, class, box]. Its output's size depends on the values, so they are read while tracing."""
    boxes = _corners(n.static(boxes, "boxes").astype(np.float64), n.attr("center_point_box", 0))
    scores = n.static(scores, "scores")
    limit = max(int(_optional_scalar(n, max_per_class, "max_output_boxes_per_class", 0)), 0)
    iou_limit = _optional_scalar(n, iou_threshold, "iou_threshold", 0.0)
    floor = _optional_scalar(n, score_threshold, "score_threshold", None)
    area = np.prod(boxes[..., 2:] - boxes[..., :2], axis=-1)
    selected = []
    for b, c in itertools.product(range(np.shape(scores)[0]), range(np.shape(scores)[1])):
        s = scores[b, c]
        order = [i for i in np.argsort(-s, kind="stable") if floor is None or s[i] > floor]
        kept = []
        for i in order:
            if len(kept) == limit:
                break
            low, high = np.maximum(boxes[b, i, :2], boxes[b, kept, :2]), np.minimum(boxes[b, i, 2:], boxes[b, kept, 2:])
            inter = np.prod(np.maximum(high - low, 0), axis=-1)
            union = area[b, i] + area[b, kept] - inter
            with np.errstate(divide="ignore", invalid="ignore"):
                overlap = (inter > 0) & (area[b, i] > 0) & (area[b, kept] > 0) & (inter / union > iou_limit)
            if not overlap.any():
                kept.append(i)
                selected.append((b, c, i))
    return np.array(selected, np.int64).reshape(-1, 3)
