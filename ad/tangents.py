"""Tangent vocabulary (ChainRulesCore's): NoTangent, ZeroTangent, thunks.

* ``NoTangent``: the argument has no tangent space (integers, booleans, indices).
* ``ZeroTangent``: the cotangent is structurally zero; cheaper than an array of zeros.
* ``Thunk``: a cotangent computed only when needed. Lifting forces every thunk once, while
  tracing; the ones nobody reads are then removed by dead-code elimination, so a lifted tape
  never pays for them at run time.
"""
from __future__ import annotations


class _Singleton:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __reduce__(self):
        return (type(self), ())


class NoTangent(_Singleton):
    """This argument has no tangent (integer, boolean, index)."""


class ZeroTangent(_Singleton):
    """A structurally zero cotangent."""


def is_zero(ct) -> bool:
    """A cotangent that carries nothing: None, NoTangent or ZeroTangent."""
    return isinstance(ct, (NoTangent, ZeroTangent)) or ct is None


class Thunk:
    """A delayed cotangent: ``Thunk(lambda: dy @ B.T)``; force it with ``unthunk``."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self):
        return unthunk(self.fn())

    def __repr__(self) -> str:
        return f"Thunk({getattr(self.fn, '__qualname__', self.fn)})"


def thunk(fn) -> Thunk:
    """``ad.thunk(lambda: expensive(dy))``: ChainRules' ``@thunk``."""
    return Thunk(fn)


def unthunk(x):
    return x() if isinstance(x, Thunk) else x
