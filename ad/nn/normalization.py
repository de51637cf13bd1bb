"""Normalisation layers. Their shared core, ``standardize`` (subtract the mean, divide by the
standard deviation over some axes), is a primitive with a dedicated rule: the pullback
``inv * (dy - mean(dy) - y * mean(dy * y))`` reuses the forward's output and inverse
deviation. Measured on a (64, 64, 256) layer norm with scale and bias against a hand-written
gradient: differentiating the composition costs 1.7x, this rule 1.3x (27 equations instead of
38). Scale, bias and the per-channel plumbing are compositions around it."""
from __future__ import annotations

import numpy as np

from ..lib.reductions import normalize_axis
from ..primitives import Primitive
from ..batching.derived import shifted_axes
from ..rules import batch_rule, rrule
from ..samples import IMAGES, MATRIX, Sample


def _moments(x, axes, eps, xp=np):
    """``(x - mean, 1 / sqrt(var + eps))`` over ``axes`` (biased variance, as every framework);
    written with primitives, so the rule body below records it in the forward pass. Over the
    array namespace ``xp``: the impl is compiled array code's too (``array_api_impl``)."""
    centered = x - xp.mean(x, axis=axes, keepdims=True)
    return centered, 1 / xp.sqrt(xp.mean(centered * centered, axis=axes, keepdims=True) + eps)


def _standardize(x, *, axes, eps, xp=np):
    centered, inv = _moments(x, axes, eps, xp)
    return centered * inv


standardize_p = Primitive("standardize", _standardize, params=("axes", "eps"), array_api_impl=_standardize,
                          doc="(x - mean) / sqrt(var + eps) over `axes`.",
                          samples=(Sample((IMAGES,), {"axes": (0, 2), "eps": 1e-3}, MATRIX),))


batch_rule(standardize_p)(shifted_axes(standardize_p, "axes"))


@rrule(standardize_p)
def _standardize_rule(x, axes, eps):
    centered, inv = _moments(x, axes, eps)
    y = centered * inv

    def pullback(dy):
        mean_dy = np.mean(dy, axis=axes, keepdims=True)
        return (inv * (dy - mean_dy - y * np.mean(dy * y, axis=axes, keepdims=True)),)
    return y, pullback


def _standardize_over(x, axes, eps):
    return standardize_p.bind(x, axes=tuple(axes), eps=float(eps))


def _affine(y, scale, bias, shape):
    if scale is not None:
        y = y * np.reshape(scale, shape)
    if bias is not None:
        y = y + np.reshape(bias, shape)
    return y


def _channel_shape(x):
    """Shape that broadcasts a per-channel vector over ``(N, C, *S)``."""
    return (-1,) + (1,) * (np.ndim(x) - 2)


def layer_norm(x, axis=-1, eps=1e-5, scale=None, bias=None):
    """Standardise over ``axis`` (an int or a tuple), then ``* scale + bias`` (shaped like the
    normalised axes). ``torch.nn.functional.layer_norm`` normalises the trailing axes."""
    axes = normalize_axis(axis, np.ndim(x))
    shape = tuple(np.shape(x)[a] if a in axes else 1 for a in range(np.ndim(x)))
    return _affine(_standardize_over(x, axes, eps), scale, bias, shape)


def batch_norm(x, scale=None, bias=None, *, running_mean=None, running_var=None, training=True,
               eps=1e-5):
    """Per-channel normalisation of ``x: (N, C, *S)``. Training uses the batch's statistics
    (over N and the spatial axes); inference (``training=False``) uses ``running_mean`` and
    ``running_var`` (arrays, used in ``x``'s dtype). Update those with ``batch_norm_update``
    (functional: nothing is mutated)."""
    if training:
        axes = (0,) + tuple(range(2, np.ndim(x)))
        y = _standardize_over(x, axes, eps)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm(training=False) needs running_mean= and running_var=")
        shape = _channel_shape(x)
        mean, var = (np.reshape(s.astype(x.dtype), shape) for s in (running_mean, running_var))
        y = (x - mean) * (1 / np.sqrt(var + eps))
    return _affine(y, scale, bias, _channel_shape(x))


def batch_norm_update(running_mean, running_var, x, momentum=0.1):
    """The running statistics after one training batch, as PyTorch updates them in place:
    ``(1 - momentum) * old + momentum * batch`` with the batch's unbiased variance."""
    axes = (0,) + tuple(range(2, np.ndim(x)))
    count = np.size(x) // np.shape(x)[1]
    mean = np.mean(x, axis=axes)
    var = np.var(x, axis=axes) * (count / max(count - 1, 1))
    return ((1 - momentum) * running_mean + momentum * mean,
            (1 - momentum) * running_var + momentum * var)


def group_norm(x, groups, scale=None, bias=None, eps=1e-5):
    """Standardise each group of ``C / groups`` channels of ``x: (N, C, *S)`` (over the group's
    channels and all spatial positions), then per-channel ``scale``/``bias``
    (``torch.nn.functional.group_norm``)."""
    n, c, *spatial = np.shape(x)
    if c % groups:
        raise ValueError(f"group_norm: {c} channels are not divisible by groups={groups}")
    grouped = np.reshape(x, (n, groups, c // groups) + tuple(spatial))
    y = np.reshape(_standardize_over(grouped, range(2, np.ndim(grouped)), eps), np.shape(x))
    return _affine(y, scale, bias, _channel_shape(x))
