"""What an equation in a file may claim about its primitive: that the primitive is registered,
which params it holds (their names and, by name, their types), how many operands it takes, and
which avals its implementation computes on operands of the declared avals.

Primitives are looked up by name in ``ad.primitives.REGISTRY``: names are how files refer to
primitives, and nothing named in a file is ever imported. The one exception is ad's own: a
name of the rule modules ``import ad`` defers (``ad.primitives.defer``: ad.scipy's, because scipy
takes a quarter second to import) loads them, so a saved tape of scipy code loads in a fresh process.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import math
import re

import numpy as np

from ..primitives import REGISTRY, Primitive, load_deferred
from ..tape import Aval, Eqn, Lit, Tape
from .codec import TapeFormatError, short


def primitive(name, where: str) -> Primitive:
    """The registered, non-opaque primitive called ``name``; the error says how to register one."""
    if not isinstance(name, str):
        raise TapeFormatError(f"{where}.prim: expected a primitive name, got {short(name)}")
    if name not in REGISTRY:
        load_deferred(name)
    prim = REGISTRY.get(name)
    how = ("Primitives are looked up by name in ad.primitives.REGISTRY; nothing named in a file is "
           "imported. If the tape uses your own primitive, import the module that defines it "
           "(@ad.primitive / ad.Primitive(...)) before loading.")
    if prim is None:
        if re.search(r"[./:\\]|^_|\s", name):
            raise TapeFormatError(f"{where}.prim: {name!r} looks like a Python path, not a registered "
                                  f"primitive. {how}")
        close = difflib.get_close_matches(name, list(REGISTRY), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise TapeFormatError(f"{where}.prim: unknown primitive {name!r}{hint}. {how}")
    if prim.kind == "opaque":
        raise TapeFormatError(f"{where}.prim: {name!r} runs a Python closure and cannot be loaded")
    return prim


# -- params and arity ---------------------------------------------------------------------------

def _ints(v, nonneg=False) -> bool:
    return type(v) is tuple and all(type(x) is int and (x >= 0 or not nonneg) for x in v)


def _index_item(x) -> bool:
    if x is None or x == "..." or type(x) is int:
        return True
    if type(x) is tuple and len(x) == 4 and x[0] == "slice":
        return all(y is None or type(y) is int for y in x[1:]) and x[3] != 0
    return type(x) is tuple and len(x) == 2 and x[0] == "array" and type(x[1]) is int and x[1] >= 0


PARAM_TYPES = {   # param name -> (check, description); other names get the generic decoding only
    "shape": (lambda v: _ints(v, nonneg=True), "a tuple of non-negative ints"),
    "axes": (_ints, "a tuple of ints"),
    "axis": (lambda v: v is None or type(v) is int or _ints(v), "None, an int or a tuple of ints"),
    "shift": (_ints, "a tuple of ints"),
    "keepdims": (lambda v: type(v) is bool, "a bool"),
    "dtype": (lambda v: isinstance(v, np.dtype), "a dtype"),
    "subscripts": (lambda v: type(v) is str and re.fullmatch(r"[A-Za-z,]*->[A-Za-z]*", v) is not None,
                   "an explicit einsum string like 'ij,jk->ik'"),
    "fill_value": (lambda v: isinstance(v, (bool, int, float, complex, np.generic)), "a number"),
    "index": (lambda v: type(v) is tuple and all(map(_index_item, v)) and list(v).count("...") <= 1,
              "an index spec: a tuple of ints, None, '...', ('slice', start, stop, step) and "
              "('array', k)"),
}


def check_params(prim: Primitive, params: dict, n_in: int, where: str, max_elements: int) -> None:
    """Declared names only, values of the expected types, and operands and params that bind the
    primitive's implementation (so that no call can fail on a missing or extra argument)."""
    declared = prim.params
    unknown = sorted(set(params) - set(declared)) if declared or isinstance(prim.impl, np.ufunc) else []
    if unknown:
        raise TapeFormatError(f"{where}.params: {prim.name} has no params {unknown} (its params are "
                              f"{list(declared) or 'none'})")
    for k, v in params.items():
        check, what = PARAM_TYPES.get(k, (None, None))
        if check is not None and not check(v):
            raise TapeFormatError(f"{where}.params.{k}: {prim.name} expects {what}, got {v!r:.60}")
        if k == "shape" and math.prod(v) > max_elements:
            raise TapeFormatError(f"{where}.params.shape: {v} has more than max_elements="
                                  f"{max_elements} elements")
    if isinstance(prim.impl, np.ufunc):
        if n_in != prim.impl.nin:
            raise TapeFormatError(f"{where}: {prim.name} takes {prim.impl.nin} operand(s), the file "
                                  f"gives {n_in}")
        return
    sig = _signature(prim.impl)
    if sig is None:
        return
    try:
        sig.bind(*range(n_in), **params)
    except TypeError as exc:
        raise TapeFormatError(f"{where}: {prim.name} cannot take {n_in} operand(s) and params "
                              f"{sorted(params)}: {exc}") from None


@functools.lru_cache(maxsize=None)
def _signature(impl):
    try:
        return inspect.signature(impl)
    except (TypeError, ValueError):
        return None


# -- the shape check ----------------------------------------------------------------------------

def check_avals(tape: Tape) -> Tape:
    """Evaluate each equation once on stand-ins of its declared operands and compare what it
    computes with the avals it declares; raises TapeFormatError naming the equation.

    This runs the registered primitives' own implementations on arrays made here, never
    anything from the file.
    """
    for i, e in enumerate(tape.eqns):
        problem = _eqn_problem(e)
        if problem:
            raise TapeFormatError(f"eqns[{i}] ({e}): {problem}")
    return tape


GUARD_AVAL = Aval((), np.dtype(bool))


def _stand_in(aval: Aval, eye: bool):
    """Zeros (valid indices, cheap), or on a retry identity matrices / ones (for operations that
    refuse singular or zero inputs, like a Cholesky factorisation)."""
    if not eye or not aval.is_float:
        return np.zeros(aval.shape, aval.dtype)
    if aval.ndim >= 2 and aval.shape[-1] == aval.shape[-2]:
        return np.broadcast_to(np.eye(aval.shape[-1], dtype=aval.dtype), aval.shape).copy()
    return np.ones(aval.shape, aval.dtype)


def _eqn_problem(e: Eqn) -> str | None:
    if e.prim.kind == "guard":      # checks values, which stand-ins do not have; yields bool[]
        ok = len(e.inputs) == 2 and len(e.outputs) == 1 and e.outputs[0].aval == GUARD_AVAL
        return None if ok else f"a guard reads two operands and yields {GUARD_AVAL}"
    if isinstance(e.prim.impl, np.ufunc) and e.prim.impl.signature is None:
        try:    # elementwise: the result's shape is known before computing it
            shape = np.broadcast_shapes(*(x.aval.shape for x in e.inputs))
        except ValueError:
            return f"operand shapes {[x.aval.shape for x in e.inputs]} do not broadcast"
        for v in e.outputs:
            if v.aval.shape != shape:
                return f"declares {v!r}:{v.aval} but its operands broadcast to shape {shape}"
    for eye in (False, True):
        args = [x.value if type(x) is Lit else _stand_in(x.aval, eye) for x in e.inputs]
        try:
            with np.errstate(all="ignore"):
                out = e.prim.impl(*args, **e.kwargs)
            break
        except (ValueError, TypeError, IndexError, ArithmeticError, MemoryError) as exc:
            error = exc     # (np.linalg.LinAlgError is a ValueError)
    else:
        return f"fails on operands of the declared shapes: {type(error).__name__}: {error}"
    outs = tuple(out) if e.prim.multiple_results else (out,)
    if len(outs) != len(e.outputs):
        return f"declares {len(e.outputs)} outputs, computes {len(outs)}"
    for v, o in zip(e.outputs, outs):
        got = Aval.of(o)
        if got.dtype != v.aval.dtype or got.ndim != v.aval.ndim or (
                got.shape != v.aval.shape and not e.prim.value_dependent_shape):
            return f"declares {v!r}:{v.aval} but computes {got}"
    return None
