"""Dropout with explicit randomness.

How the randomness enters the tape: as an integer *key* operand of one ``dropout_mask``
equation, whose value is a pure function of the key (``np.random.default_rng(key)``). So

* the mask is a forward value, and the backward reads it as a residual (``dy * mask``): the
  closure, lifted and compiled forms see the same mask;
* re-running a tape with the same key reproduces the mask, and a new key gives a new one. Pass
  the key as an argument of the differentiated function (``loss(params, x, key)`` called with
  ``np.int64(step)``) and a cached ``ad.grad`` draws a fresh mask every step;
* the primitive is declared ``kind="random"``, so CSE and constant folding leave it alone (two
  dropouts are two draws in the listing, even when given the same key).

``rng`` may also be a ``np.random.Generator`` in eager (untraced) code: a key is drawn from it.
Inside a trace that is refused, because the key drawn at trace time would be baked into the
tape and every later run would reuse the same mask (silently, through ``ad.grad``'s cache).
"""
from __future__ import annotations

import numpy as np

from ..primitives import Primitive
from ..rules import non_differentiable
from ..samples import F64, MATRIX, In, Sample
from ..tracer import Tracer

KEY_BOUND = 2 ** 63


def _dropout_mask(key, *, shape, p, dtype):
    """Zeros with probability ``p``, else ``1 / (1 - p)`` (so the mean is unchanged)."""
    key = np.asarray(key)
    keep = np.random.default_rng(int(key) if key.ndim == 0 else key).random(shape) >= p
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
    return keep.astype(dtype) * np.asarray(scale, dtype=dtype)


dropout_mask_p = Primitive("dropout_mask", _dropout_mask, params=("shape", "p", "dtype"), kind="random",
                           doc="A dropout mask (0 or 1/(1-p)) drawn from an integer key.",
                           samples=(Sample((In((), 0, 2 ** 31, kind="int"),), dict(shape=(4, 5), p=0.5, dtype=F64),
                                           MATRIX, dtypes=(F64,)),))
non_differentiable(dropout_mask_p)


def _key(rng, x):
    if isinstance(rng, np.random.Generator):
        if isinstance(x, Tracer):
            raise TypeError(
                "dropout(..., rng=Generator) inside a traced function: the key drawn at trace time "
                "would be baked into the tape and reused on every run. Pass the randomness in as "
                "an argument instead: loss(params, x, key) with dropout(h, p, rng=key), called with "
                "key=np.int64(step) (or an integer array), so each call can get its own mask.")
        return np.int64(rng.integers(KEY_BOUND))
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"dropout(rng={rng}): an integer key must be >= 0")
        return np.int64(rng)
    if hasattr(rng, "dtype") and np.issubdtype(rng.dtype, np.integer):
        return rng
    raise TypeError(f"dropout(rng={rng!r}): pass a np.random.Generator, an int >= 0, or an integer "
                    "array (a key; traced keys make the mask an input of the tape)")


def dropout(x, p, *, rng, training=True, dims=None):
    """Zero each element of ``x`` with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    rng: a ``np.random.Generator`` (eager code), or an integer key (int or integer array,
        possibly traced); the same key gives the same mask.
    training: ``False`` returns ``x`` unchanged.
    dims: the axes along which the mask varies (int or tuple); it is shared along the others
        (``dims=(0, 1)`` drops whole channels of ``(N, C, H, W)``, like ``dropout2d``).
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability p={p} must be in [0, 1]")
    if not training or p == 0:
        return x
    ndim = np.ndim(x)
    axes = range(ndim) if dims is None else [int(d) % ndim for d in np.atleast_1d(dims)]
    shape = tuple(n if i in axes else 1 for i, n in enumerate(np.shape(x)))
    key = _key(rng, x)
    params = {"shape": shape, "p": float(p), "dtype": np.dtype(x.dtype)}
    if isinstance(x, Tracer) and not isinstance(key, Tracer):   # a constant key: still an equation
        mask = x._rec.record(dropout_mask_p, (key,), params)
    else:
        mask = dropout_mask_p.bind(key, **params)
    return x * mask
