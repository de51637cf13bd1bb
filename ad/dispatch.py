"""From numpy's dispatch protocols to primitives.

Three tables, filled by the modules of ``ad.lib`` next to the primitives they use:

* ``UFUNCS``: ufunc -> primitive, for ``np.sin(t)``, ``t + 1``...
* ``UFUNC_METHODS``: (ufunc, method) -> handler, for ``np.add.reduce``, ``np.multiply.outer``...
* ``FUNCTIONS``: numpy function -> handler with numpy's signature, for ``np.sum(t, axis=0)``...

and ``ARRAY_API``, the array API standard's namespace of traced values (``x.__array_namespace__()``).

A numpy function missing from ``FUNCTIONS`` runs numpy's own Python implementation on the tracers
when it has one (it often calls supported functions); if that implementation coerces a tracer, the
error says the function has no rule.

scipy.special's functions are ufuncs too: the first one to reach a tracer loads their rules
(``ad.scipy.special``, which imports scipy.special, too slow to import with ``ad``).
"""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from .core_prims import astype_p, getitem_p, parse_index, setitem_p
from .errors import ConcretizationError, MutationError, UnsupportedFunctionError
from .primitives import Primitive, load_deferred
from .trace_state import Traced, find_recorder

UFUNCS: dict[np.ufunc, Primitive] = {}
UFUNC_METHODS: dict[tuple[np.ufunc, str], Callable] = {}
FUNCTIONS: dict[Callable, Callable] = {}
# ufuncs known to have no rule, and why (ad.scipy.special fills it); errors name ufuncs that are
# not numpy's by UFUNC_NAMES when their own name is not their public one
UNSUPPORTED_UFUNCS: dict[np.ufunc, str] = {}
UFUNC_NAMES: dict[np.ufunc, str] = {}
# the array API standard's namespace of traced values, by version of the standard
# (``ad.lib.array_api`` fills it, ``Tracer.__array_namespace__`` reads it)
ARRAY_API: dict[str, object] = {}


def implements(*funcs):
    """Register a handler (with numpy's signature) for numpy functions."""
    def register(handler):
        for f in funcs:
            FUNCTIONS[f] = handler
        return handler
    return register


def public_name(f) -> str:
    """How errors name a numpy or scipy function: ``np.linalg.inv``, ``scipy.special.gammaln``."""
    if isinstance(f, np.ufunc):
        return _ufunc_name(f)
    mod = getattr(f, "__module__", None) or "numpy"
    mod = mod.replace("numpy.linalg._linalg", "numpy.linalg").replace("numpy._core", "numpy")
    return f"{'np' + mod[5:] if mod.startswith('numpy') else mod}.{getattr(f, '__name__', f)}"


def _ufunc_name(uf: np.ufunc) -> str:
    """ufuncs have no ``__module__``: look for them in numpy's and scipy.special's namespaces."""
    name = uf.__name__
    if getattr(np, name, None) is uf:
        return f"np.{name}"
    if uf in UFUNC_NAMES:
        return UFUNC_NAMES[uf]
    for module in ("scipy.special", "scipy.special._ufuncs"):     # (the private ones scipy calls)
        if getattr(sys.modules.get(module), name, None) is uf:
            return f"{module}.{name}"
    return f"the ufunc {name}"


def unsupported(what: str, hint: str = "") -> UnsupportedFunctionError:
    """The error for a numpy function (or a use of one) that has no rule."""
    return UnsupportedFunctionError(
        f"{what} has no rule in ad. "
        + (hint or "Write it with functions that have rules, or mark your own function with "
           "@ad.primitive and register its rule with @ad.rrule(your_function); a rule for a numpy "
           "function is registered with @ad.rrule on an ad.Primitive (see ad.lib for examples)."))


def array_namespace(api_version: str | None):
    """The namespace of a version of the array API standard (None: the newest) for traced values."""
    version = max(ARRAY_API) if api_version is None else api_version
    if version not in ARRAY_API:
        raise ValueError(f"traced values follow versions {', '.join(sorted(ARRAY_API))} of the array API "
                         f"standard, not {api_version!r}: ask for one of them, or api_version=None")
    return ARRAY_API[version]


# -- ufuncs --------------------------------------------------------------------------------

def ufunc(_tracer, uf: np.ufunc, method: str, *inputs, **kwargs):
    """``Tracer.__array_ufunc__``: numpy hands it every ufunc call that has a tracer among its
    operands (``_tracer`` is one of them)."""
    if method == "__call__" and not kwargs:     # the common case (np.sin(t), t * 2), first
        prim = UFUNCS.get(uf)
        if prim is not None:        # prim.bind(*inputs), one call less: a tracer is among them
            return find_recorder(inputs).record(prim, inputs, {})
    out = kwargs.pop("out", None)
    dtype = kwargs.pop("dtype", None)
    where = kwargs.pop("where", True)
    name = public_name(uf)
    if method == "__call__" and where is not True:
        raise unsupported(f"{name}(..., where=...)", f"Use np.where(cond, {name}(...), other) instead.")
    for ignored in ("casting", "order", "subok"):
        kwargs.pop(ignored, None)
    if method == "__call__":
        if kwargs:
            raise unsupported(f"{name} with keyword arguments {sorted(kwargs)}")
        prim = UFUNCS.get(uf) or _scipy_rule(uf)
        if prim is None:
            reason = UNSUPPORTED_UFUNCS.get(uf)
            raise unsupported(name, f"{reason[0].upper()}{reason[1:]}." if reason else "")
        if dtype is not None:
            inputs = [astype(x, dtype) for x in inputs]
        result = prim.bind(*inputs)
    else:
        handler = UFUNC_METHODS.get((uf, method))
        if handler is None:
            raise unsupported(f"{name}.{method}")
        if where is not True:     # the reductions take it (np.add.reduce(a, where=m))
            kwargs["where"] = where
        if method == "at":
            target = inputs[0]
            if not isinstance(target, Traced):
                raise MutationError(f"{name}.at writes traced values into a plain ndarray; "
                                    "create the target with np.zeros(shape, like=x) instead")
            target._assign(handler(*inputs, **kwargs))
            return None
        result = handler(*inputs, dtype=dtype, **kwargs) if dtype is not None else handler(*inputs, **kwargs)
    if out is not None:
        return write_out(out, result, name)
    return result


def _scipy_rule(uf: np.ufunc):
    """The primitive of a scipy.special ufunc, loading their rules the first time one is met
    (scipy.special is imported by then: the ufunc came from it)."""
    if "scipy.special" not in sys.modules or getattr(np, uf.__name__, None) is uf:
        return None
    load_deferred(f"scipy.special.{uf.__name__}")      # fills UFUNCS
    return UFUNCS.get(uf)


def write_out(out, result, what: str):
    """Functionalize ``out=``: rebind traced targets; refuse plain ndarrays."""
    targets = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    for target, res in zip(targets, results):
        if not isinstance(target, Traced):
            raise MutationError(
                f"{what}(..., out=ndarray) would write a traced value into a plain ndarray, losing "
                "its gradient. Fix: drop out= and assign the result, or create the buffer with "
                "np.zeros(shape, like=x)")
        if isinstance(res, Traced) and res.shape == target.shape and res.dtype == target.dtype:
            target._assign(res)
        else:
            target._assign(setitem(target, Ellipsis, res))
    return out if isinstance(out, tuple) and len(out) > 1 else targets[0]


# -- functions ---------------------------------------------------------------------------

LIKE_FUNCTIONS: set = set()   # creation functions whose handler takes the ``like=`` tracer


def function(func, args, kwargs, like=None):
    handler = FUNCTIONS.get(func)
    if handler is not None:
        if func in LIKE_FUNCTIONS:
            return handler(*args, like=like, **kwargs)
        return handler(*args, **kwargs)
    implementation = getattr(func, "_implementation", None)
    if implementation is None:
        raise unsupported(public_name(func))
    try:
        return implementation(*args, **kwargs)
    except ConcretizationError as exc:
        raise unsupported(public_name(func), "numpy's implementation of it converts its argument to a "
                           "plain array. Write it with functions that have rules, or mark a function "
                           "of yours as @ad.primitive and give it a rule with @ad.rrule.") from exc


# -- indexing and casts (the tracer's own operations) ---------------------------------------

def getitem(x, index):
    spec, arrays = parse_index(index)
    return getitem_p.bind(x, *arrays, index=spec)


def setitem(x, index, value):
    spec, arrays = parse_index(index)
    return setitem_p.bind(x, value, *arrays, index=spec)


def astype(x, dtype):
    dtype = np.dtype(dtype)
    if isinstance(x, Traced) and x.dtype == dtype:
        return copy(x)
    return astype_p.bind(x, dtype=dtype)


def copy(x):
    """A fresh tracer for the same value: in SSA a copy needs no equation."""
    if not isinstance(x, Traced):
        return np.array(x, copy=True)
    x._check_fresh()
    return type(x)(x._rec, x.variable, x.value)
