"""Moving values around, all compositions of shape and indexing primitives: batched matrix
products, flatten, pixel_shuffle, pad, nearest and (multi)linear upsampling, embedding and
one_hot. Gradients come from the primitives' rules (a reshape's is a reshape, a gather's a
scatter-add, a broadcast's a sum)."""
from __future__ import annotations

import numpy as np

from .geometry import ntuple, padding_pairs

PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def batched_mul(a, b):
    """Matrix products over leading batch axes: ``(B, n, k) @ (B, k, m) -> (B, n, m)`` (batch
    first, as ``torch.bmm``; NNlib puts it last)."""
    return np.matmul(a, b)


def batched_transpose(x):
    """Swap the last two axes of a batch of matrices."""
    return np.swapaxes(x, -1, -2)


def batched_adjoint(x):
    """The conjugate transpose of a batch of matrices (the transpose, for real arrays)."""
    return np.conj(batched_transpose(x)) if np.iscomplexobj(x) else batched_transpose(x)


def flatten(x):
    """``(N, ...) -> (N, prod(...))``: everything but the batch axis in one."""
    return np.reshape(x, (np.shape(x)[0], -1))


def pixel_shuffle(x, r):
    """``(N, C * r^d, *S) -> (N, C, *(S * r))``: channels become r x ... x r blocks of pixels
    (``torch.nn.functional.pixel_shuffle`` for d = 2, any d here)."""
    n, c, *spatial = np.shape(x)
    d = len(spatial)
    if c % r ** d:
        raise ValueError(f"pixel_shuffle: {c} channels are not divisible by r^{d} = {r ** d}")
    y = np.reshape(x, (n, c // r ** d) + (r,) * d + tuple(spatial))
    order = (0, 1) + tuple(a for i in range(d) for a in (2 + d + i, 2 + i))   # (S1, r, S2, r, ...)
    return np.reshape(np.transpose(y, order), (n, c // r ** d) + tuple(s * r for s in spatial))


def pad(x, padding, mode="constant", value=0.0):
    """Pad the spatial axes of ``x: (N, C, *S)``. ``padding``: an int, one int per spatial axis,
    or one (low, high) pair per axis; ``mode``: "constant" (with ``value``), "reflect" (mirror
    without repeating the edge), "replicate" (repeat the edge) or "circular"."""
    if mode not in PAD_MODES:
        raise ValueError(f"pad(mode={mode!r}); choose one of {sorted(PAD_MODES)}")
    if isinstance(padding, str):
        raise ValueError(f"pad(padding={padding!r}) needs explicit sizes (ints or (low, high) pairs)")
    nd = np.ndim(x) - 2
    pairs = ((0, 0), (0, 0)) + padding_pairs(padding, (1,) * nd, (1,) * nd)
    if mode == "constant":
        return np.pad(x, pairs, constant_values=value)
    return np.pad(x, pairs, mode=PAD_MODES[mode])


def upsample_nearest(x, scale):
    """Repeat each pixel ``scale`` times along each spatial axis (an int or one per axis): a
    broadcast, whose gradient is a sum over the copies."""
    n, c, *spatial = np.shape(x)
    scale = ntuple(scale, len(spatial), "scale")
    wide = np.reshape(x, (n, c) + tuple(v for s in spatial for v in (s, 1)))
    wide = np.broadcast_to(wide, (n, c) + tuple(v for s, k in zip(spatial, scale) for v in (s, k)))
    return np.reshape(wide, (n, c) + tuple(s * k for s, k in zip(spatial, scale)))


def _linear_weights(size: int, out: int, ratio: float, align_corners: bool, dtype) -> np.ndarray:
    """The (out, size) matrix of linear interpolation along one axis in PyTorch's coordinates
    (``ratio`` is input/output size, or 1/scale when a scale was given)."""
    dst = np.arange(out, dtype=np.float64)
    if align_corners:
        src = dst * ((size - 1) / (out - 1) if out > 1 else 0.0)
    else:
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(int), size - 1)
    hi = np.minimum(lo + 1, size - 1)
    frac = src - lo
    m = np.zeros((out, size))
    np.add.at(m, (np.arange(out), lo), 1 - frac)
    np.add.at(m, (np.arange(out), hi), frac)
    return m.astype(dtype)


def per_axis(x, mats):
    """Apply one (out, in) matrix to each spatial axis of ``x: (N, C, *S)`` with one einsum."""
    nd = len(mats)
    ins, outs = "abcdefgh"[:nd], "ABCDEFGH"[:nd]
    spec = f"nz{ins}," + ",".join(f"{o}{i}" for o, i in zip(outs, ins)) + f"->nz{outs}"
    return np.einsum(spec, x, *mats)


def upsample_bilinear(x, scale=None, *, size=None, align_corners=False):
    """Linear interpolation along every spatial axis (bilinear for 2-D, trilinear for 3-D) to
    ``size`` or ``scale`` times the input's, as ``torch.nn.functional.interpolate`` with
    ``mode="bilinear"`` (or "linear"/"trilinear"). A fixed matrix per axis, applied by einsum."""
    spatial = np.shape(x)[2:]
    if (scale is None) == (size is None):
        raise ValueError("upsample_bilinear needs exactly one of scale= and size=")
    if size is not None:
        size = ntuple(size, len(spatial), "size")
        ratios = [s / o for s, o in zip(spatial, size)]
    else:
        scale = (scale,) * len(spatial) if np.ndim(scale) == 0 else tuple(scale)
        size = tuple(int(s * k) for s, k in zip(spatial, scale))
        ratios = [1 / k for k in scale]
    return per_axis(x, [_linear_weights(s, o, r, align_corners, x.dtype)
                        for s, o, r in zip(spatial, size, ratios)])


def embedding(indices, weight):
    """Rows of ``weight`` picked by integer ``indices`` (``torch.nn.functional.embedding``): a
    gather, whose gradient scatter-adds into the rows (repeated indices accumulate)."""
    return np.take(weight, indices, axis=0)


def one_hot(labels, num_classes: int, dtype=np.float64):
    """``labels (...) -> (..., num_classes)`` with a 1 at each label (no gradient)."""
    return (np.expand_dims(labels, -1) == np.arange(num_classes)).astype(dtype)
