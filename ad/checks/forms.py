"""Closure versus lifted for one rule instance: the closure form's cotangents, and the one
comparison (one tolerance rule) that the checker and the debugger both judge the two forms by.

Two forms agree on an operand when both give no cotangent (None, NoTangent, ZeroTangent and
all-zeros are the same), or when ``|closure - lifted| / max(|closure|, |lifted|, 1)`` is at most
``settings.exact_rtol`` of the dtypes involved everywhere (NaN where both are NaN counts as equal).

>>> x = np.linspace(0.0, 1.0, 3)
>>> closure = closure_cotangents(ad.primitives.lookup(np.sin), {}, [x], (True,), (np.ones(3),))
>>> [c.ok for c in compare_cotangents(closure, [np.cos(x)], (True,), [x.dtype])]
[True]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core_prims import project
from ..tangents import is_zero, unthunk
from ..tape import Aval
from .settings import exact_rtol


@dataclass(frozen=True)
class CotangentComparison:
    """One operand's cotangents in the two forms (None: no cotangent), their largest absolute
    and relative differences (None when the shapes differ), and the verdict."""
    index: int
    closure: np.ndarray | None
    lifted: np.ndarray | None
    max_abs: float | None
    max_rel: float | None
    ok: bool


def closure_cotangents(prim, params: dict, operands: list, needs: tuple[bool, ...], cotangents: tuple,
                       rule=None) -> list:
    """Run ``rule`` (default: the registered one) on copies of ``operands`` and its pullback at
    ``cotangents`` (one per output); each needed cotangent projected onto its operand.

    Returns one entry per operand: an array, or None (not needed, NoTangent, ZeroTangent).
    Whatever the rule or its pullback raises propagates."""
    rule = rule or prim.rule
    fresh = [_copy(v) for v in operands]
    cts = [_copy(c) for c in cotangents]
    with np.errstate(all="ignore"):
        _, pullback = rule(*fresh, **dict(params))
        raw = pullback(tuple(cts) if prim.multiple_results else cts[0])
    raw = raw if isinstance(raw, tuple) else (raw,)
    if len(raw) != len(operands):
        raise ValueError(f"the pullback of {prim.name} returned {len(raw)} cotangent(s) for "
                         f"{len(operands)} operand(s)")
    return [_array(project(Aval.of(v), unthunk(g))) if need else None
            for v, g, need in zip(operands, raw, needs)]


def compare_cotangents(closure: list, lifted: list, needs, dtypes) -> list[CotangentComparison]:
    """One comparison per needed operand, at ``exact_rtol(dtypes)``."""
    tol = exact_rtol(dtypes)
    return [_compare(i, _array(c), _array(t), tol)
            for i, (c, t, need) in enumerate(zip(closure, lifted, needs)) if need]


def _compare(i, closure, lifted, tol) -> CotangentComparison:
    a, b = _nonzero(closure), _nonzero(lifted)
    if a is None and b is None:
        return CotangentComparison(i, closure, lifted, 0.0, 0.0, True)
    a = np.zeros(np.shape(b)) if a is None else a
    b = np.zeros(np.shape(a)) if b is None else b
    if np.shape(a) != np.shape(b):       # that is the finding
        return CotangentComparison(i, closure, lifted, None, None, False)
    a, b = _exact(a), _exact(b)
    with np.errstate(all="ignore"):
        diff = np.abs(a - b)
        rel = diff / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)
    both_nan = np.isnan(a) & np.isnan(b)
    max_abs = float(np.max(np.nan_to_num(np.where(both_nan, 0.0, diff), nan=np.inf), initial=0.0))
    max_rel = float(np.max(np.nan_to_num(np.where(both_nan, 0.0, rel), nan=np.inf), initial=0.0))
    return CotangentComparison(i, closure, lifted, max_abs, max_rel, bool(max_rel <= tol))


def _copy(v):
    return np.array(v, copy=True) if isinstance(v, np.ndarray) else v


def _array(g) -> np.ndarray | None:
    return None if is_zero(g) else np.asarray(g)


def _nonzero(g):
    return None if g is None or not np.any(g) else g


def _exact(a: np.ndarray) -> np.ndarray:
    """float64 (complex128 for complex), so the difference itself does not round."""
    return np.asarray(a, dtype=np.complex128 if np.iscomplexobj(a) else np.float64)
