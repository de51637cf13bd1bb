"""Resize and Upsample: each output position a weighted sum of input positions, the indices
and weights computed at import."""
from __future__ import annotations

import functools

import numpy as np

from .nodes import const, op, resolve_axis


def _triangle(d):
    return np.maximum(1 - np.abs(d), 0.0)


def keys_cubic(a: float):
    """Keys' cubic convolution kernel with coefficient ``a`` (ONNX's ``cubic_coeff_a``)."""
    def kernel(d):
        d = np.abs(d)
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return np.where(d <= 1, near, np.where(d < 2, far, 0.0))
    return kernel


#: coordinate_transformation_mode -> the input coordinate of output positions ``x`` along an axis
#: of ``n_in`` positions resized by ``s`` to ``n_out`` (``s * n_in``, the length before rounding
#: down, is ONNX's ``length_resized``; ``roi``: the axis' (start, end))
_RESIZE_COORDINATES = {
    "half_pixel": lambda x, s, n_in, n_out, roi: (x + 0.5) / s - 0.5,
    "half_pixel_symmetric": lambda x, s, n_in, n_out, roi:
        n_in / 2 * (1 - n_out / (s * n_in)) + (x + 0.5) / s - 0.5,
    "pytorch_half_pixel": lambda x, s, n_in, n_out, roi: (x + 0.5) / s - 0.5 if s * n_in > 1 else 0 * x,
    "align_corners": lambda x, s, n_in, n_out, roi: x * (n_in - 1) / (s * n_in - 1) if s * n_in > 1 else 0 * x,
    "asymmetric": lambda x, s, n_in, n_out, roi: x / s,
    "tf_half_pixel_for_nn": lambda x, s, n_in, n_out, roi: (x + 0.5) / s,
    "tf_crop_and_resize": lambda x, s, n_in, n_out, roi:
        roi[0] * (n_in - 1) + x * (roi[1] - roi[0]) * (n_in - 1) / (s * n_in - 1) if s * n_in > 1
        else 0.5 * (roi[0] + roi[1]) * (n_in - 1) + 0 * x,
}
_NEAREST = {"round_prefer_floor": lambda c: np.ceil(c - 0.5), "round_prefer_ceil": lambda c: np.floor(c + 0.5),
            "floor": np.floor, "ceil": np.ceil}


def _resize_taps(n, mode: str, coords, n_in: int, scale: float, options: dict):
    """(positions, weights), each (n_out, taps): the input positions each output position reads
    along one axis, and their weights (a row sums to 1). Positions outside the axis are clamped
    to its edge, or dropped with ``exclude_outside``; ``antialias`` stretches the kernel by
    1/scale when downsampling."""
    if mode == "nearest":
        nearest = options["nearest_mode"]
        if nearest not in _NEAREST:
            raise n.error(f"nearest_mode={nearest!r} is not supported ({', '.join(_NEAREST)})")
        return np.clip(_NEAREST[nearest](coords), 0, n_in - 1).astype(np.int64)[:, None], np.ones((len(coords), 1))
    if mode == "linear":
        kernel, support = _triangle, 1
    else:
        kernel, support = keys_cubic(options["cubic_coeff_a"]), 2
    stretch = 1 / scale if options["antialias"] and scale < 1 else 1.0
    first = np.floor(coords - support * stretch) + 1
    pos = first[:, None] + np.arange(int(np.ceil(2 * support * stretch)) + 1)
    weights = kernel((pos - coords[:, None]) / stretch)
    if options["exclude_outside"]:
        weights = np.where((pos >= 0) & (pos < n_in), weights, 0.0)
    weights = weights / np.sum(weights, axis=1, keepdims=True)
    used = np.any(weights != 0, axis=0)
    return np.clip(pos[:, used], 0, n_in - 1).astype(np.int64), weights[:, used]


#: Resize's options from opset 11 on (each read whatever the mode, which uses only some), and
#: what Upsample and Resize-10 do: ``asymmetric`` coordinates, ``floor`` rounding
_RESIZE_OPTIONS = {"coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor",
                   "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0}
_RESIZE_OPTIONS_18 = {"antialias": 0, "keep_aspect_ratio_policy": "stretch"}
_UPSAMPLE_OPTIONS = {**_RESIZE_OPTIONS, **_RESIZE_OPTIONS_18, "coordinate_transformation_mode": "asymmetric",
                     "nearest_mode": "floor"}


@op("Resize", "Upsample", static=(1, 2, 3))
def _resize(n, x, *operands):
    """Resampling, one axis after the other: each output position is a weighted sum of input
    positions (``np.take`` with indices and weights computed at import), so it differentiates.
    Upsample and Resize-10 are Resize with ``asymmetric`` coordinates and ``floor`` rounding."""
    modern = n.op_type == "Resize" and n.opset >= 11
    if not modern:
        roi, sizes = None, None
        scales = n.attr("scales") if n.op_type == "Upsample" and n.opset < 9 else operands[0]
    else:
        roi, scales, sizes = (operands + (None,) * 3)[:3]
    roi, scales, sizes = (None if v is None or np.size(v) == 0 else n.static(v, what).reshape(-1)
                          for v, what in ((roi, "roi"), (scales, "scales"), (sizes, "sizes")))
    mode = n.attr("mode", "nearest")
    if mode == "bilinear" and n.op_type == "Upsample":
        mode = "linear"
    if mode not in ("nearest", "linear", "cubic") or (mode == "cubic" and not modern):
        raise n.error(f"mode={mode!r} is not supported (nearest, linear{', cubic' if modern else ''})")
    if np.issubdtype(np.result_type(x), np.integer) and mode != "nearest":
        raise n.error(f"mode={mode!r} on integers (it rounds) is not supported: only nearest")
    options = dict(_UPSAMPLE_OPTIONS)
    if modern:
        options.update((k, n.attr(k, v)) for k, v in _RESIZE_OPTIONS.items())
        if n.opset >= 18:
            options.update((k, n.attr(k, v)) for k, v in _RESIZE_OPTIONS_18.items())
    coordinate, policy = options["coordinate_transformation_mode"], options["keep_aspect_ratio_policy"]
    if coordinate not in _RESIZE_COORDINATES:
        raise n.error(f"coordinate_transformation_mode={coordinate!r} is not supported "
                      f"({', '.join(_RESIZE_COORDINATES)})")
    ndim = np.ndim(x)
    axes = [resolve_axis(a, ndim) for a in n.attr("axes", range(ndim))] if n.opset >= 18 else list(range(ndim))
    shape = np.shape(x)
    if (scales is None) == (sizes is None):
        raise n.error("exactly one of scales and sizes must be given")
    if sizes is not None:
        ratios = [int(s) / shape[a] for s, a in zip(sizes, axes)]
        if policy in ("not_larger", "not_smaller"):
            common = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [common] * len(axes)
            sizes = [int(np.floor(common * shape[a] + 0.5)) for a in axes]
        elif policy != "stretch":
            raise n.error(f"keep_aspect_ratio_policy={policy!r} is not supported (stretch, not_larger, not_smaller)")
    else:
        ratios = [float(s) for s in scales]
        if any(r <= 0 for r in ratios):
            raise n.error(f"scales {tuple(ratios)} must be positive")
        sizes = [int(np.floor(shape[a] * r)) for a, r in zip(axes, ratios)]
    n.check_size(tuple(dict(zip(axes, sizes)).get(a, d) for a, d in enumerate(shape)), "output", np.result_type(x))
    dt = np.result_type(x)
    for i, (a, size, scale) in enumerate(zip(axes, sizes, ratios)):
        n_in = shape[a]
        if size == n_in and scale == 1 and coordinate != "tf_crop_and_resize":
            continue
        span = None if roi is None else (float(roi[i]), float(roi[i + len(axes)]))
        coords = _RESIZE_COORDINATES[coordinate](np.arange(size, dtype=np.float64), scale, n_in, size, span)
        pos, weights = _resize_taps(n, mode, coords, n_in, scale, options)
        bcast = [1] * ndim
        bcast[a] = size
        if pos.shape[1] == 1:
            x = np.take(x, pos[:, 0], axis=a)
        else:
            x = functools.reduce(np.add, [np.take(x, pos[:, k], axis=a) * weights[:, k].reshape(bcast).astype(dt)
                                          for k in range(pos.shape[1])])
        outside = (coords < 0) | (coords > n_in - 1)
        if coordinate == "tf_crop_and_resize" and np.any(outside):
            x = np.where(outside.reshape(bcast), const(options["extrapolation_value"], x), x)
    return x
