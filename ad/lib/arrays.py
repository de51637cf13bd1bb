"""Array-building and in-place functions written with the core primitives: numpy 2's unstack
and astype (its concat and permute_dims are concatenate and transpose), block, and the in-place
writers put, place, copyto, fill_diagonal, functionalized like ``t[i] = v`` (the traced target is
rebound to a new value; a plain ndarray target is refused: it would silently drop the gradient)."""
from __future__ import annotations

import numpy as np

from ..dispatch import astype, implements, setitem, unsupported
from ..errors import MutationError
from ..tracer import Tracer
from .numeric import as_array


@implements(np.unstack)
def _unstack(x, /, *, axis=0):
    return tuple(np.moveaxis(x, axis, 0))


@implements(np.astype)
def _astype(x, dtype, /, *, copy=True, device=None):
    return astype(x, dtype)


@implements(np.block)
def _block(arrays):
    """numpy's block: the innermost lists concatenate along the last axis, the outer ones along
    the axes before it; leaves are promoted to the result's number of dimensions."""
    def depth(x):
        if isinstance(x, tuple):
            raise TypeError("np.block: tuples are not allowed, use lists")
        return 1 + depth(x[0]) if isinstance(x, list) else 0

    def leaves(x):
        return [leaf for e in x for leaf in leaves(e)] if isinstance(x, list) else [as_array(x)]

    d = depth(arrays)
    nd = max([d] + [leaf.ndim for leaf in leaves(arrays)])

    def build(x, level):
        if isinstance(x, list):
            return np.concatenate([build(e, level + 1) for e in x], axis=-(d - level))
        x = as_array(x)
        return np.reshape(x, (1,) * (nd - x.ndim) + x.shape)
    return build(arrays, 0)


# -- in-place writers ------------------------------------------------------------------------------

def _check_target(target, what: str):
    if not isinstance(target, Tracer):
        raise MutationError(f"{what} would write traced values into a plain ndarray, losing their "
                            "gradient. Fix: create the target from a traced value (np.zeros(shape, "
                            "like=x), or x.copy() of a traced x).")


def _write(target, new):
    target._assign(new if new.dtype == target.dtype else astype(new, target.dtype))


def _cycled(v, k: int):
    """numpy's put/place rule: the values repeat to cover k positions."""
    flat = np.ravel(as_array(v))
    return flat if flat.shape == (k,) else np.take(flat, np.arange(k) % max(flat.shape[0], 1))


@implements(np.put)
def _put(a, ind, v, mode="raise"):
    if mode != "raise":
        raise unsupported(f"np.put(..., mode={mode!r})", "Clip or wrap the indices yourself.")
    _check_target(a, "np.put")
    ind = np.ravel(as_array(ind))
    _write(a, np.reshape(setitem(np.ravel(a), ind, _cycled(v, ind.shape[0])), np.shape(a)))


@implements(np.place)
def _place(arr, mask, vals):
    _check_target(arr, "np.place")
    _put(arr, np.nonzero(np.ravel(as_array(mask)))[0], vals)


@implements(np.copyto)
def _copyto(dst, src, casting="same_kind", where=True):
    _check_target(dst, "np.copyto")
    src = as_array(src)
    if not np.can_cast(src.dtype, np.result_type(dst), casting):
        raise TypeError(f"Cannot cast array data from {src.dtype} to {np.result_type(dst)} "
                        f"according to the rule {casting!r}")
    new = np.broadcast_to(src, np.shape(dst)) if where is True else np.where(where, src, dst)
    _write(dst, new if isinstance(new, Tracer) else new + np.zeros_like(dst))


@implements(np.fill_diagonal)
def _fill_diagonal(a, val, wrap=False):
    _check_target(a, "np.fill_diagonal")
    shape = np.shape(a)
    if len(shape) < 2:
        raise ValueError("array must be at least 2-d")
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
    _put(a, np.arange(int(np.prod(shape)))[:end:step], val)
