"""Errors that name the cause, the user's line and the fix.

Every error a user can trigger while tracing subclasses a builtin so ``except TypeError`` keeps
working, and carries the user's source location found by walking the stack out of this package
and numpy.
"""
from __future__ import annotations

import linecache
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIP = (_PKG_DIR + os.sep, os.path.dirname(os.path.abspath(__import__("numpy").__file__)) + os.sep)


def user_frame():
    """The innermost frame outside ``ad`` and numpy (the user's code), or None."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_SKIP) and not fn.startswith("<__array_function__"):
            return f
        f = f.f_back
    return None


def user_location() -> str | None:
    """``"file.py:12 in fn"`` for the user's innermost frame."""
    f = user_frame()
    if f is None:
        return None
    return f"{f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}"


def source_line(location: str | None) -> str:
    """The text of the line a location points at (empty when unknown)."""
    if not location:
        return ""
    path, _, rest = location.rpartition(":")
    try:
        lineno = int(rest.split(" ", 1)[0])
    except ValueError:
        return ""
    return linecache.getline(path, lineno).strip()


def _with_location(message: str, location: str | None) -> str:
    if location is None:
        return message
    line = source_line(location)
    return f"{message}\n  at {location}" + (f"\n    {line}" if line else "")


class TraceError(Exception):
    """Base of the errors raised while tracing; ``location`` is the user's line."""

    def __init__(self, message: str, location: str | None = None):
        self.location = location if location is not None else user_location()
        self.reason = message
        super().__init__(_with_location(message, self.location))


class ConcretizationError(TraceError, TypeError):
    """A traced value was asked for a concrete Python or numpy value (float(), bool(), asarray).

    Writing a 0-d tracer into a plain ndarray (``a[i] = t``) reaches the user as numpy's
    "setting an array element with a sequence" ValueError, raised *from* this error (numpy
    catches the conversion error and tries the sequence protocol); the traceback shows both."""


class UnsupportedFunctionError(TraceError, NotImplementedError):
    """A numpy function or ufunc method has no rule or decomposition."""


class MutationError(TraceError, ValueError):
    """An in-place write that cannot be functionalized (into a plain ndarray, or through a view)."""


class NonDifferentiableError(TraceError, TypeError):
    """A gradient was asked of something that has none (non-scalar output for grad, opaque tape)."""
