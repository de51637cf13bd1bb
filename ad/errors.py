"""Errors that name the cause, the user's line and the fix.

Every error a user can trigger while tracing subclasses a builtin so ``except TypeError`` keeps
working, and carries the user's source location found by walking the stack out of this package
and numpy.
"""
from __future__ import annotations

import contextlib
import dis
import functools
import importlib.util
import linecache
import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
def _package_dir(name: str) -> str | None:
    """Where a package lives, found without importing it (scipy costs a quarter second)."""
    spec = importlib.util.find_spec(name)
    return os.path.dirname(os.path.abspath(spec.origin)) + os.sep if spec and spec.origin else None


# frames in ad, numpy and scipy are not the user's (a scipy function calling ad's rules)
_SKIP = tuple(d for d in (_PKG_DIR + os.sep, _package_dir("numpy"), _package_dir("scipy")) if d)
# the example programs shipped in ad are user code: their lines are the ones to show
_EXAMPLES = frozenset(os.path.join(_PKG_DIR, "examples", p) for p in ("programs.py", "networks.py"))


@functools.lru_cache(maxsize=4096)
def is_users_file(filename: str) -> bool:
    """Whether code in ``filename`` is the user's. Asked once per file, not once per frame:
    every recorded equation walks the stack (its source is the user's line)."""
    return filename in _EXAMPLES or not filename.startswith(_SKIP) \
        and not filename.startswith("<__array_function__")


def user_site(ad_frames: int = 1) -> tuple:
    """(the user's innermost frame, outside ``ad``, numpy and scipy, or None; its
    ``"file.py:12 in fn"``).

    ``ad_frames``: how many frames, the caller's and up, are known to be ad's own; the walk
    starts past them. Every recorded equation asks, and each frame the walk looks at costs
    about 3% of recording one: a frame running the code found last time is taken at once, and
    the text is made again only when the line is not the last one asked for (a traced line
    records several equations, a loop the same lines again)."""
    global _last_location
    try:
        f = sys._getframe(1 + ad_frames)
    except ValueError:       # called near the top level: no frame that far up
        return None, None
    last = _last_location
    while f is not None and f.f_code is not last[0] and not is_users_file(f.f_code.co_filename):
        f = f.f_back
    if f is None:
        return None, None
    code, line = f.f_code, f.f_lineno
    if code is last[0] and line == last[1]:
        return f, last[2]
    text = f"{code.co_filename}:{line} in {code.co_name}"
    _last_location = (code, line, text)      # one tuple, replaced whole: safe across threads
    return f, text


def user_location(ad_frames: int = 1) -> str | None:
    """``"file.py:12 in fn"`` for the user's innermost frame (``user_site``)."""
    return user_site(ad_frames + 1)[1]


_last_location: tuple = (None, None, None)     # (code object, line, its text)


def _public(module: str) -> str:
    """scipy's public module of a private one: ``scipy.stats._distn_infrastructure`` -> ``scipy.stats``."""
    return ".".join(part for part in module.split(".") if not part.startswith("_"))


def _scipy_name(frame) -> str | None:
    """The public name of the scipy function a frame runs (``scipy.stats.norm.logpdf``): a
    distribution's method by its instance, a function wrapped by scipy's private decorators by
    the function they close over."""
    module, name = frame.f_globals.get("__name__", ""), frame.f_code.co_name
    if module.startswith("scipy._lib"):
        inner = [v for v in frame.f_locals.values() if callable(v)
                 and (getattr(v, "__module__", None) or "").startswith("scipy.")
                 and not v.__module__.startswith("scipy._lib")]
        return f"{_public(inner[0].__module__)}.{inner[0].__name__}" if inner else None
    owner = frame.f_locals.get("self")
    if owner is not None and type(owner).__module__.startswith("scipy."):
        owner = getattr(owner, "dist", owner)        # a frozen distribution: its family
        dist = getattr(owner, "name", None) or type(owner).__name__.removesuffix("_gen")
        return f"{_public(module)}.{dist}.{name}"
    return f"{_public(module)}.{name}"


def _mirrored(module: str, path: list) -> bool | None:
    """Whether ``module`` (an ad.scipy module) defines ``path`` itself (not by forwarding to
    scipy); None when it is not loaded: unknown without importing it."""
    if importlib.util.find_spec(module) is None:
        return False
    loaded = sys.modules.get(module)
    if loaded is None:
        return None
    obj = vars(loaded).get(path[0])
    return obj is not None and all(hasattr(type(obj), attr) for attr in path[1:])


def scipy_escape() -> tuple[str, str | None] | None:
    """(hint, the user's line) when the conversion under way happens inside a scipy function
    the user called (the outermost scipy frame on the stack): it names that function and
    ad.scipy's of the same path, ad.scipy mirroring scipy's (``scipy.stats.norm.logpdf`` ->
    ``from ad.scipy.stats import norm``)."""
    f, outermost = sys._getframe(1), None
    while f is not None:
        module = f.f_globals.get("__name__", "")
        if module == "scipy" or module.startswith("scipy."):
            outermost = f
        elif module.startswith("ad.scipy."):      # scipy called by ad.scipy itself: not the user's call
            return None
        elif outermost is not None and not f.f_code.co_filename.startswith(_SKIP):
            break
        f = f.f_back
    name = outermost and _scipy_name(outermost)
    if not name or name.count(".") < 2:
        return None
    parts = name.split(".")
    module = "ad." + ".".join(parts[:2])
    where = f and f"{f.f_code.co_filename}:{f.f_lineno} in {f.f_code.co_name}"
    if parts[1] == "special" and os.environ.get("SCIPY_ARRAY_API"):
        return (f"with SCIPY_ARRAY_API set, scipy.special wraps its ufuncs in Python functions that "
                f"convert their arguments to numpy, so scipy.special.{parts[2]} cannot see a traced "
                f"value. Unset SCIPY_ARRAY_API (scipy.special's ufuncs then trace as plain scipy), or "
                f"call ad.scipy.special.{parts[2]} (the ufunc itself)"), where
    hint = (f"{name} converts its arguments to plain numpy arrays (scipy computes in compiled code), "
            f"which would drop the gradient of a traced value. ")
    has = _mirrored(module, parts[2:])
    if has is False:
        hint += f"ad.scipy has no {name} yet: write it with numpy and scipy.special functions, or as an @ad.primitive with a rule"
    else:
        hint += (f"Use ad.{name} instead" + ("" if has else " if ad has it") +
                 f" (ad.scipy mirrors scipy's module paths and signatures): from {module} import {parts[2]}")
    return hint, where


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


class ConcretizationError(TraceError, ValueError):
    """A traced value was asked for a concrete value that would lose its gradient (``float()``,
    ``.item()``, ``np.asarray`` of a differentiated value) or that it does not have yet (a
    pullback's cotangent while its rule is lifted).

    A ValueError, not a TypeError: numpy swallows TypeErrors raised while it converts an element
    (``buf[0] = t``); see also ``unwrapping_numpy``."""


@contextlib.contextmanager
def unwrapping_numpy():
    """numpy replaces an error raised while it converts an element (``buf[0] = t``) by its own
    "setting an array element with a sequence", raised *from* ours: give the user ours."""
    try:
        yield
    except ValueError as exc:
        if isinstance(exc.__cause__, TraceError):
            raise exc.__cause__ from None
        raise


# the instructions of ``buf[i] = v`` and (Python 3.12 on) ``buf[a:b] = v``
_STORES = frozenset(name for name in ("STORE_SUBSCR", "STORE_SLICE") if name in dis.opmap)


def storing_into_array(frame) -> bool:
    """Whether ``frame``, the one that asked a tracer for a plain number or array, is the user's
    and is running a subscript store: the conversion then comes from the C ``__setitem__`` of the
    container (numpy's ndarray converts the value it stores), which has no Python frame of its
    own. ``f_lasti`` is the offset of the instruction running (it stays on the store while the
    store's C code runs); ``dis`` reads the unspecialised instructions on every Python version."""
    if frame is None or frame.f_lasti < 0 or not is_users_file(frame.f_code.co_filename):
        return False
    return any(i.offset == frame.f_lasti and i.opname in _STORES for i in dis.get_instructions(frame.f_code))


class UnsupportedFunctionError(TraceError, NotImplementedError):
    """A numpy function or ufunc method has no rule or decomposition."""


class MutationError(TraceError, ValueError):
    """An in-place write that cannot be functionalized (into a plain ndarray, or through a view)."""


class PlainArrayWriteError(ConcretizationError, MutationError):
    """A traced value written into a plain numpy array (``buf[i, j] = t``): numpy would store its
    number and the gradient would be lost. A ConcretizationError, as the conversion numpy asks for
    raised before it had a message of its own, and a MutationError: an in-place write that cannot
    be functionalized. ``value`` describes the traced value (its variable and why it has to stay
    traced); ``location`` is the line of the write."""

    def __init__(self, value: str, location: str | None = None):
        super().__init__(
            f"a traced value ({value}) is being written into a plain numpy array: numpy would store "
            "its number, and the gradient would be lost. Fix: create the buffer from a traced value, "
            "np.zeros(shape, like=x) with x any traced array of the function (the buffer is then "
            "traced and every write into it is recorded), or collect the values in a list and stack "
            "them: ys.append(v) in the loop, then Y = np.stack(ys).", location)


class NonDifferentiableError(TraceError, TypeError):
    """A gradient was asked of something that has none (non-scalar output for grad, opaque tape)."""


class BatchedBranchError(TraceError, ValueError):
    """A branch, an integer or a conversion (a guard of the trace) on a value that differs
    across the batch of ``ad.vmap``: each example may take its own branch, so the batched
    program has no single answer; ``location`` is the line that branched."""


class GuardError(ValueError):
    """A tape was run on inputs that break an assumption its trace made (a branch taken, an
    integer value): re-trace the function for these inputs (``ad.grad`` does it by itself).

    ``guard`` names the guard equation, ``source`` the user's line that made the assumption,
    ``expected`` and ``got`` the two values."""

    def __init__(self, expected, got, guard: str = "guard", source: str | None = None):
        self.expected, self.got, self.guard, self.source = expected, got, guard, source
        super().__init__(self._message())

    def _message(self) -> str:
        return _with_location(
            f"{self.guard} failed: the trace assumed {_short(self.expected)}, this call gives "
            f"{_short(self.got)}. The tape holds the branch the trace took; trace the function "
            "again for these inputs (ad.grad, ad.value_and_grad and ad.vjp re-trace by themselves)",
            self.source)

    def at(self, guard: str, source: str | None) -> "GuardError":
        """The same failure, naming the guard equation and where it came from."""
        return GuardError(self.expected, self.got, guard, source)


def _short(value) -> str:
    text = repr(value.tolist() if hasattr(value, "tolist") else value)
    return text if len(text) <= 80 else text[:77] + "..."
