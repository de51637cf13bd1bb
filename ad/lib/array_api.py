"""The array API standard's namespace of traced values: what ``x.__array_namespace__()`` and
``array_api_compat.array_namespace(x)`` return for a tracer, so code written against the standard
(scipy's, with ``SCIPY_ARRAY_API=1``, or the user's own) traces.

numpy 2 names its functions as the standard does and gives them its signatures, and on traced
values they already end in primitives (``ad.dispatch``): the namespace is numpy's functions under
the standard's names, and its own functions only where numpy's would convert a traced value to a
plain array (``asarray``, ``from_dlpack``, the ``unique_*`` functions), ignore ``device=`` for one
(the ``*_like`` functions, ``astype``), or lacks a keyword of the standard (``sort`` and
``argsort``'s ``descending``; ``vecdot``'s ``axis``, which numpy.linalg's takes). What has no rule
is refused as in plain numpy code, naming the function and the user's line.

The arrays it creates while a trace is under way (``zeros``, ``arange``, ``asarray`` of constants...)
are traced constants of the innermost trace, as jax.numpy's are jax arrays: array-API code asks
``array_namespace`` again of the arrays it made, next to the traced ones. A plain numpy array of
the user's next to a traced one is refused by array_api_compat ("Multiple namespaces for array
inputs"): the list it prints shows this namespace's advice, to trace the array too (an argument
of the function ad traces, ``argnums`` saying what is differentiated, or ``xp.asarray(a)``) or to
ask for the namespace of the traced arrays only (its functions take numpy arrays as constants).

>>> def loss(w):                           # the standard's names only
...     xp = w.__array_namespace__()       # array_api_compat.array_namespace(w) returns the same
...     return xp.sum(xp.tanh(w) ** 2)
>>> ad.grad(loss)(np.array([0.0, 1.0]))
array([0.        , 0.63970001])
"""
from __future__ import annotations

import functools
import types
from typing import NamedTuple

import numpy as np

from .. import dispatch
from ..errors import UnsupportedFunctionError
from ..pytree import flatten
from ..trace_state import ACTIVE, Traced
from .creation import array_p

VERSION = "2024.12"    # numpy 2.4's: the namespace is its functions (with 2025.12's isin, broadcast_shapes)

# the standard's names whose function (constant, dtype) is numpy's own, by section of the standard
NUMPY_NAMES = """
    meshgrid tril triu
    broadcast_arrays broadcast_shapes can_cast finfo iinfo isdtype result_type
    abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_invert bitwise_left_shift
    bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1
    floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log10
    log1p log2 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative
    nextafter not_equal positive pow real reciprocal remainder round sign signbit sin sinh sqrt square
    subtract tan tanh trunc
    take take_along_axis
    matmul matrix_transpose tensordot
    broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll squeeze stack tile unstack
    argmax argmin count_nonzero nonzero searchsorted where
    isin
    cumulative_prod cumulative_sum max mean min prod std sum var
    all any diff
    e inf nan newaxis pi
    bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
    __array_namespace_info__
""".split()
LINALG_NAMES = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank
    matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm""".split()
FFT_NAMES = "fft fftn fftshift hfft ifft ifftn ifftshift ihfft irfft irfftn rfft rfftn".split()


class ArrayNamespace(types.ModuleType):
    """A namespace of the standard (a module object, as the standard's namespaces are)."""

    def __init__(self, name: str, functions: dict):
        super().__init__(name, "The array API standard's namespace of ad's traced values (ad.lib.array_api).")
        vars(self).update(functions)

    def __repr__(self) -> str:
        # array_api_compat's refusal of a tracer next to a plain numpy array prints the namespaces
        return (f"<{self.__name__}, the array API namespace of ad's traced values: next to a plain numpy "
                "array, trace it too (pass it to the function ad traces, argnums= saying what is "
                "differentiated, or make it xp.asarray(a)), or take the namespace of the traced arrays "
                "only (its functions take numpy arrays as constants)>")


def _traced(out):
    """An array the namespace made, as a traced constant of the innermost trace under way (as
    jax.numpy's arrays are jax's): array-API code asks ``array_namespace`` again of the arrays it
    made, next to the traced ones (scipy's ``xpx.at(buffer)[...].set(x)``)."""
    return ACTIVE[-1].record(array_p, (out,), {}) if ACTIVE and not isinstance(out, Traced) else out


def _made(f):
    """numpy's creation function ``f``, its arrays ``_traced``."""
    @functools.wraps(f)
    def made(*args, **kwargs):
        return _traced(f(*args, **kwargs))
    return made


def _device_checked(f):
    """numpy's ``f(x, ...)``, refusing ``device=`` of another device for a traced ``x`` (numpy
    checks it for plain arrays; ad's handlers of traced values ignore it)."""
    @functools.wraps(f)
    def checked(x, /, *args, device=None, **kwargs):
        if device is not None and isinstance(x, Traced):
            x.to_device(device)
        return f(x, *args, device=device, **kwargs)
    return checked


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """The standard's asarray: a traced value stays traced (numpy's would convert it), a nested
    list of them is stacked (``np.asarray(obj, like=t)``)."""
    like = next((x for x in flatten(obj)[0] if isinstance(x, Traced)), None)
    if like is None:
        return _traced(np.asarray(obj, dtype=dtype, device=device, copy=copy))
    if device is not None:
        like.to_device(device)
    if obj is like and not copy and (dtype is None or np.dtype(dtype) == like.dtype):
        return like
    if copy is False:
        raise ValueError(f"asarray(..., copy=False) of {like!r}: it needs a copy (a cast or a stack); "
                         "pass copy=None")
    return np.asarray(obj, dtype=dtype, like=like)


def from_dlpack(x, /, *, device=None, copy=None):
    """The standard's from_dlpack, refused for a traced value: DLPack hands over memory."""
    if isinstance(x, Traced):
        raise UnsupportedFunctionError(
            f"from_dlpack of {x!r}: DLPack hands over a block of memory, and a traced value has none. "
            "Use xp.asarray(x) (the same traced value)")
    return np.from_dlpack(x, device=device, copy=copy)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """The standard's sort: numpy's, reversed when ``descending``."""
    out = np.sort(x, axis=axis, stable=stable)
    return np.flip(out, axis=axis) if descending else out


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The standard's argsort. Descending: the ascending order of the reversed array, reversed
    and mapped back to the original positions (so ties keep their order, as a stable sort must)."""
    if not descending:
        return np.argsort(x, axis=axis, stable=stable)
    reversed_order = np.argsort(np.flip(x, axis=axis), axis=axis, stable=stable)
    return (np.shape(x)[axis] - 1) - np.flip(reversed_order, axis=axis)


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _unique(x) -> UniqueAllResult:
    """The unique values of a traced array, from a stable sort (numpy's np.unique converts its
    argument): the first of each run of equal values, its first position in ``x``, where each
    element of ``x`` went and how many there are of each. NaNs differ from every value, as the
    standard asks. The values carry a gradient (to the first of their equal elements)."""
    flat = np.reshape(x, (-1,))
    order = np.argsort(flat, stable=True)
    ordered = flat[order]
    starts = np.concat([np.ones(min(flat.size, 1), dtype=bool), ordered[1:] != ordered[:-1]])
    first = np.nonzero(starts)[0]
    inverse = (np.cumsum(starts) - 1)[np.argsort(order)]
    return UniqueAllResult(ordered[first], order[first], np.reshape(inverse, np.shape(x)),
                           np.diff(first, append=flat.size))


def unique_all(x, /):
    """The standard's unique_all: numpy's for plain arrays, ``_unique`` for traced ones (and so below)."""
    if not isinstance(x, Traced):
        return np.unique_all(x)
    return _unique(x)


def unique_counts(x, /):
    if not isinstance(x, Traced):
        return np.unique_counts(x)
    u = _unique(x)
    return UniqueCountsResult(u.values, u.counts)


def unique_inverse(x, /):
    if not isinstance(x, Traced):
        return np.unique_inverse(x)
    u = _unique(x)
    return UniqueInverseResult(u.values, u.inverse_indices)


def unique_values(x, /):
    return _unique(x).values if isinstance(x, Traced) else np.unique_values(x)


linalg = ArrayNamespace("ad.lib.array_api.linalg", {name: getattr(np.linalg, name) for name in LINALG_NAMES})
fft = ArrayNamespace("ad.lib.array_api.fft", {
    **{name: getattr(np.fft, name) for name in FFT_NAMES},
    **{f.__name__: _made(f) for f in (np.fft.fftfreq, np.fft.rfftfreq)}})
NAMESPACE = ArrayNamespace("ad.lib.array_api", {
    **{name: getattr(np, name) for name in NUMPY_NAMES},
    **{f.__name__: _made(f) for f in (np.arange, np.empty, np.eye, np.full, np.linspace, np.ones, np.zeros)},
    **{f.__name__: _device_checked(f) for f in (np.astype, np.empty_like, np.full_like, np.ones_like, np.zeros_like)},
    "asarray": asarray, "from_dlpack": from_dlpack, "sort": sort, "argsort": argsort,
    "vecdot": np.linalg.vecdot, "unique_all": unique_all, "unique_counts": unique_counts,
    "unique_inverse": unique_inverse, "unique_values": unique_values,
    "linalg": linalg, "fft": fft, "__array_api_version__": VERSION})
dispatch.ARRAY_API.update((version, NAMESPACE) for version in ("2021.12", "2022.12", "2023.12", VERSION))
