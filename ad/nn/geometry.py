"""Static window geometry shared by convolution and pooling: keyword arguments normalised to
hashable tuples (they become equation params, so equal calls must give equal params), padding
resolved to explicit (low, high) pairs, and output sizes."""
from __future__ import annotations

import numpy as np


def ntuple(value, n: int, name: str) -> tuple[int, ...]:
    """``2`` -> ``(2, 2)``; a sequence must have ``n`` entries."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    out = tuple(int(v) for v in value)
    if len(out) != n:
        raise ValueError(f"{name}={value!r} has {len(out)} entries for {n} spatial dimensions")
    return out


def padding_pairs(padding, kernel, dilation) -> tuple[tuple[int, int], ...]:
    """Padding as (low, high) per spatial dimension.

    Accepts an int, one int per dimension, one (low, high) pair per dimension, ``"valid"`` (no
    padding) or ``"same"`` (total ``dilation * (kernel - 1)``, the odd one on the high side, as
    PyTorch and NNlib do; with stride 1 the output keeps the input's size).
    """
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding != "same":
            raise ValueError(f"padding={padding!r}; use an int, a tuple, 'same' or 'valid'")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    if isinstance(padding, (int, np.integer)):
        return ((int(padding), int(padding)),) * n
    items = tuple(padding)
    if len(items) != n:
        raise ValueError(f"padding={padding!r} has {len(items)} entries for {n} spatial dimensions")
    pairs = tuple((int(p), int(p)) if np.ndim(p) == 0 else tuple(int(q) for q in p) for p in items)
    if any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise ValueError(f"padding={padding!r}: each entry is an int or a (low, high) pair of ints >= 0")
    return pairs


def out_size(n: int, kernel: int, stride: int, pad: tuple[int, int], dilation: int) -> int:
    return (n + pad[0] + pad[1] - dilation * (kernel - 1) - 1) // stride + 1


def out_shape(spatial, kernel, stride, padding, dilation) -> tuple[int, ...]:
    shape = tuple(out_size(*a) for a in zip(spatial, kernel, stride, padding, dilation))
    if min(shape, default=1) < 1:
        raise ValueError(f"the window (kernel {tuple(kernel)}, dilation {tuple(dilation)}) does not fit "
                         f"the padded input {tuple(spatial)} with padding {tuple(padding)}")
    return shape
