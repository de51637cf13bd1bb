"""What a rule's closures hold, and whether it changed: the arrays reachable from a function's
closure cells and the module globals it reads, content checksums, memory sharing, and the
source line of a function or of the frame that raised.

Two sets matter to the checker. ``captured(pullback)``: the arrays a pullback closed over
(residuals, operands, buffers), which it must not write into. ``external(rule)``: the arrays a
rule can reach *before* it is called (globals, enclosing scopes): state the program owns and may
mutate after the forward pass, which the lifted tape snapshots but the closure reads live.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import types

import numpy as np

from ..tangents import Thunk

_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_CHECKER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# the checker's own frames are never where a rule raised; the gallery's wrong rules are rules
_CHECKER_FILES = {os.path.join(_CHECKER_DIR, f) for f in os.listdir(_CHECKER_DIR)
                  if f.endswith(".py") and f != "gallery.py"}
_MAX_DEPTH = 6


def _walk(obj, name, out, seen, depth, with_globals):
    if id(obj) in seen or depth > _MAX_DEPTH:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype != object:
            out.setdefault(name, obj)
        return
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _walk(item, f"{name}[{i}]", out, seen, depth + 1, with_globals)
    elif isinstance(obj, dict):
        for k, item in obj.items():
            _walk(item, f"{name}[{k!r}]", out, seen, depth + 1, with_globals)
    elif isinstance(obj, Thunk):
        _walk(obj.fn, name, out, seen, depth + 1, with_globals)
    elif isinstance(obj, functools.partial):
        _walk(obj.func, name, out, seen, depth + 1, with_globals)
        _walk(obj.args, f"{name}.args", out, seen, depth + 1, with_globals)
        _walk(obj.keywords, f"{name}.keywords", out, seen, depth + 1, with_globals)
    elif isinstance(obj, types.MethodType):
        _walk(obj.__func__, name, out, seen, depth + 1, with_globals)
    elif isinstance(obj, types.FunctionType):
        for var, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:      # an empty cell (a variable not assigned yet)
                continue
            _walk(value, var, out, seen, depth + 1, with_globals)
        if with_globals:
            for gname in _global_names(obj.__code__):
                if gname in obj.__globals__:
                    _walk(obj.__globals__[gname], f"{obj.__module__}.{gname}", out, seen, depth + 1,
                          with_globals)


def _global_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def captured(fn) -> dict[str, np.ndarray]:
    """Arrays a closure holds (its cells, nested closures, thunks, partials), by variable name."""
    out: dict = {}
    _walk(fn, getattr(fn, "__name__", "closure"), out, set(), 0, with_globals=False)
    return out


def external(fn) -> dict[str, np.ndarray]:
    """Arrays a function can reach before it runs: its closure cells and the module globals its
    code (nested functions included) reads, by name (``module.NAME`` for globals)."""
    out: dict = {}
    _walk(fn, getattr(fn, "__name__", "rule"), out, set(), 0, with_globals=True)
    return out


def checksum(a) -> bytes:
    a = np.asarray(a)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    h.update(np.ascontiguousarray(a).view(np.uint8).tobytes())
    return h.digest()


def snapshot(arrays: dict) -> dict:
    return {name: checksum(a) for name, a in arrays.items()}


def changed(arrays: dict, before: dict, memo: dict | None = None) -> list[str]:
    """The names whose array's checksum is no longer the one in ``before``. ``memo`` (array id
    -> checksum) lets calls made at one moment checksum an array they share only once."""
    memo = {} if memo is None else memo
    moved = []
    for name, a in arrays.items():
        if name in before:
            if id(a) not in memo:
                memo[id(a)] = checksum(a)
            if memo[id(a)] != before[name]:
                moved.append(name)
    return moved


def shares(a, b) -> bool:
    return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.size > 0 and b.size > 0
            and np.shares_memory(a, b))


# -- source locations ------------------------------------------------------------------------------

def _unwrap(fn):
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__func__", fn)


def location(fn) -> str | None:
    """``file:line in name`` of a function (or the function a partial/method wraps)."""
    fn = _unwrap(fn)
    code = getattr(fn, "__code__", None)
    if code is None:
        try:
            return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]} in {fn.__qualname__}"
        except (TypeError, OSError, AttributeError):
            return None
    return f"{code.co_filename}:{code.co_firstlineno} in {getattr(fn, '__qualname__', code.co_name)}"


def raised_at(exc: BaseException, prefer=None) -> str | None:
    """Where an exception was raised: the innermost frame in ``prefer``'s file if any, else the
    innermost frame outside numpy and the checker."""
    code = getattr(_unwrap(prefer), "__code__", None)
    prefer_file = code.co_filename if code is not None else None
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    for fname, line, name in reversed(frames):
        if prefer_file and os.path.abspath(fname) == os.path.abspath(prefer_file):
            return f"{fname}:{line} in {name}"
    for fname, line, name in reversed(frames):
        absf = os.path.abspath(fname)
        if not absf.startswith(_NUMPY_DIR) and absf not in _CHECKER_FILES:
            return f"{fname}:{line} in {name}"
    return None


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
