"""Convolution (cross-correlation, channels first, as PyTorch) and its transpose, written as
``im2col`` + ``matmul``: compositions, so they need no rule of their own. The tape shows what a
convolution is: weights times windows. Its pullback is ``matmul``'s: the weight gradient is
``dy @ windows.T`` (the windows are a forward residual, not recomputed) and the input gradient
is ``col2im(W.T @ dy)``, which is exactly ``conv_transpose``.
"""
from __future__ import annotations

import math

import numpy as np

from .geometry import ntuple, out_shape, padding_pairs
from .windows import col2im, im2col


def _check(x, w, what):
    nd = np.ndim(w) - 2
    if nd < 1 or np.ndim(x) != nd + 2:
        raise ValueError(f"{what}: x{tuple(np.shape(x))} and w{tuple(np.shape(w))} must be "
                         f"(N, C, *spatial) and (out, in, *kernel) with the same number of spatial dims")
    return nd


def conv(x, w, *, stride=1, padding=0, dilation=1, groups=1):
    """N-d cross-correlation of ``x: (N, C, *S)`` with ``w: (O, C/groups, *K)``, like
    ``torch.nn.functional.conv{1,2,3}d`` (no bias: add it). ``padding`` is an int, a tuple
    (ints or (low, high) pairs), ``"same"`` or ``"valid"``.

    >>> ad.nn.conv(np.ones((1, 1, 4, 4)), np.ones((2, 1, 3, 3)), padding=1).shape
    (1, 2, 4, 4)
    """
    nd = _check(x, w, "conv")
    n, c, *spatial = np.shape(x)
    o, cg, *kernel = np.shape(w)
    if c != cg * groups or o % groups:
        raise ValueError(f"conv: x has {c} channels and w is {tuple(np.shape(w))} with groups={groups}; "
                         "need C == w.shape[1] * groups and w.shape[0] divisible by groups")
    stride, dilation = ntuple(stride, nd, "stride"), ntuple(dilation, nd, "dilation")
    padding = padding_pairs(padding, kernel, dilation)
    positions = out_shape(spatial, kernel, stride, padding, dilation)
    cols = im2col(x, kernel, stride, padding, dilation, groups)              # (G, Cg*K, P*N)
    weights = np.reshape(w, (groups, o // groups, cg * math.prod(kernel)))   # (G, Og, Cg*K)
    y = np.reshape(weights @ cols, (o, *positions, n))                       # (O, *P, N)
    return np.moveaxis(y, -1, 0)


def conv_transpose(x, w, *, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """The transpose (adjoint in ``x``) of ``conv``, like ``torch.nn.functional.conv_transpose{1,2,3}d``:
    ``x: (N, C, *S)``, ``w: (C, O/groups, *K)``, output size
    ``(S - 1) * stride - pad_low - pad_high + dilation * (K - 1) + output_padding + 1``."""
    nd = _check(x, w, "conv_transpose")
    n, c, *spatial = np.shape(x)
    ci, og, *kernel = np.shape(w)
    if c != ci or c % groups:
        raise ValueError(f"conv_transpose: x has {c} channels and w is {tuple(np.shape(w))} with "
                         f"groups={groups}; need C == w.shape[0], divisible by groups")
    stride, dilation = ntuple(stride, nd, "stride"), ntuple(dilation, nd, "dilation")
    extra = ntuple(output_padding, nd, "output_padding")
    padding = padding_pairs(padding, kernel, dilation)
    if any(e >= s for e, s in zip(extra, stride)):
        raise ValueError(f"output_padding={output_padding} must be smaller than stride={stride}")
    size = tuple((s - 1) * st - lo - hi + d * (k - 1) + e + 1
                 for s, st, (lo, hi), d, k, e in zip(spatial, stride, padding, dilation, kernel, extra))
    rows = np.reshape(np.moveaxis(x, 0, -1), (groups, c // groups, -1))     # (G, Cg, S*N)
    weights = np.reshape(w, (groups, c // groups, og * math.prod(kernel)))   # (G, Cg, Og*K)
    cols = np.swapaxes(weights, 1, 2) @ rows                                 # (G, Og*K, S*N)
    return col2im(cols, (n, og * groups, *size), kernel, stride, padding, dilation, groups)
