"""Creating arrays inside traced code: ``np.zeros(n, like=x)``, ``np.zeros_like(x)``,
``np.array([...], like=x)``. The results are tracers (so later in-place writes into them are
recorded); filled arrays are a ``full`` equation, other constants an ``array`` equation."""
from __future__ import annotations

import numpy as np

from ..core_prims import full_p
from ..dispatch import LIKE_FUNCTIONS, copy, implements, unsupported
from ..primitives import Primitive
from ..batching.derived import elementwise
from ..rules import batch_rule, linear_rule
from ..samples import F, Sample
from ..tracer import Tracer

array_p = Primitive("array", lambda x: np.array(x, copy=True), doc="A constant as a traced array.",
                    linear_in=(0,), complex_rule=True, array_api_spelling="xp.asarray({0}, copy=True)",
                    samples=(Sample((F,)),))


linear_rule(array_p, lambda dy, x: dy)
batch_rule(array_p)(elementwise(array_p))     # a copy, element by element


def _recorder(like):
    return like._rec if isinstance(like, Tracer) else None


def _full(like, shape, dtype, fill_value):
    params = {"shape": tuple(int(s) for s in np.atleast_1d(shape)) if np.ndim(shape) else
              ((int(shape),) if shape != () else ()), "dtype": np.dtype(dtype),
              "fill_value": fill_value.item() if isinstance(fill_value, np.generic) else fill_value}
    rec = _recorder(like)
    return rec.record(full_p, (), params) if rec else full_p.impl(**params)


def _constant(like, value):
    rec = _recorder(like)
    return rec.record(array_p, (np.asarray(value),), {}) if rec else np.asarray(value)


def _like(*funcs):
    def register(handler):
        LIKE_FUNCTIONS.update(funcs)
        return implements(*funcs)(handler)
    return register


@_like(np.zeros)
def _zeros(shape, dtype=float, order="C", *, like=None, device=None):
    return _full(like, shape, dtype, 0)


@_like(np.ones)
def _ones(shape, dtype=float, order="C", *, like=None, device=None):
    return _full(like, shape, dtype, 1)


@_like(np.empty)
def _empty(shape, dtype=float, order="C", *, like=None, device=None):
    return _full(like, shape, dtype, 0)       # deterministic: an uninitialised buffer is zeros


@_like(np.full)
def _full_handler(shape, fill_value, dtype=None, order="C", *, like=None, device=None):
    if isinstance(fill_value, Tracer):
        return np.broadcast_to(fill_value, shape) + np.zeros(shape, fill_value.dtype, like=like)
    dtype = np.asarray(fill_value).dtype if dtype is None else dtype
    return _full(like, shape, dtype, fill_value)


def _fill_like(value):
    def handler(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        return _full(a, np.shape(a) if shape is None else shape, a.dtype if dtype is None else dtype, value)
    return handler


implements(np.zeros_like)(_fill_like(0))
implements(np.ones_like)(_fill_like(1))
implements(np.empty_like)(_fill_like(0))


@implements(np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return np.full(np.shape(a) if shape is None else shape, fill_value,
                   a.dtype if dtype is None else dtype, like=a)


@_like(np.array, np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray)
def _array(obj, dtype=None, *args, like=None, copy_=None, ndmin=0, **kwargs):
    out = _nested(obj, like)
    if dtype is not None:
        out = out.astype(dtype)
    if ndmin and np.ndim(out) < ndmin:
        out = np.reshape(out, (1,) * (ndmin - np.ndim(out)) + np.shape(out))
    return out


def _nested(obj, like):
    """Nested lists of tracers become a stack; constants become an ``array`` equation."""
    if isinstance(obj, Tracer):
        return copy(obj)
    if isinstance(obj, (list, tuple)) and _contains_tracer(obj):
        return np.stack([_nested(o, like) for o in obj])
    return _constant(like, obj)


def _contains_tracer(obj) -> bool:
    if isinstance(obj, Tracer):
        return True
    return isinstance(obj, (list, tuple)) and any(_contains_tracer(o) for o in obj)


@implements(np.copy)
def _copy(a, order="K", subok=False):
    return copy(a)


def _constant_like(fn):
    def handler(*args, like=None, **kwargs):
        if _contains_tracer(list(args) + list(kwargs.values())):
            raise unsupported(f"np.{fn.__name__} with traced arguments")
        return _constant(like, fn(*args, **kwargs))
    return handler


for _fn in (np.arange, np.eye, np.identity, np.linspace, np.tri):
    _like(_fn)(_constant_like(_fn))
