"""Primitives: named operations with a numpy implementation and (optionally) an rrule.

Primitives are objects, never strings; ``REGISTRY`` maps names to them so a saved tape can be
loaded by looking names up (never by importing anything named in a file).
"""
from __future__ import annotations

from typing import Any, Callable

REGISTRY: dict[str, "Primitive"] = {}
BY_FUNCTION: dict[Any, "Primitive"] = {}   # numpy function / ufunc / user function -> primitive


class Primitive:
    """An operation ``outputs = impl(*operands, **params)``.

    multiple_results: impl returns a tuple of arrays.
    params: the names of the static parameters (validated when loading tapes).
    kind: "pure", "random" (never merged by CSE), or "opaque" (runs a Python closure).
    returns_view: set for operations numpy implements as views (reshape, transpose, basic
        indexing), so that writes through stale views are caught.
    rule: the rrule, set by ``@ad.rrule``.
    """

    def __init__(self, name: str, impl: Callable, *, params: tuple[str, ...] = (),
                 multiple_results: bool = False, kind: str = "pure", function: Any = None,
                 doc: str | None = None, replace: bool = False):
        if name in REGISTRY and not replace:
            raise ValueError(f"primitive {name!r} is already registered")
        self.name = name
        self.impl = impl
        self.params = tuple(params)
        self.multiple_results = multiple_results
        self.kind = kind
        self.function = function
        self.rule = None
        self.differentiable = True
        self.returns_view = None   # predicate on the operands: does numpy return a view?
        self.__doc__ = doc or getattr(function, "__doc__", None)
        REGISTRY[name] = self
        if function is not None:
            BY_FUNCTION[function] = self

    def bind(self, *operands, **params):
        """Apply to operands: records an equation if any operand is traced, else computes."""
        rec = find_recorder(operands)
        if rec is None:
            return self.impl(*operands, **params)
        return rec.record(self, operands, params)

    def __repr__(self) -> str:
        return self.name


def find_recorder(operands):
    """Set by ad.tracer (which imports this module): the active recorder among the operands."""
    raise RuntimeError("ad.tracer is not loaded")


def lookup(f) -> Primitive:
    """The primitive of a numpy function, a user ``@primitive`` function or a primitive itself."""
    if isinstance(f, Primitive):
        return f
    prim = getattr(f, "primitive", None) or BY_FUNCTION.get(f)
    if prim is None:
        name = getattr(f, "__name__", repr(f))
        raise KeyError(f"{name} is not a primitive; mark your own functions with @ad.primitive, "
                       f"or see ad.rules for the numpy functions that have rules")
    return prim
