"""Scopes: the user's own calls an equation was recorded in, outermost first (``eqn.scope``).

A trace knows the frame that called the traced function (its root). The scope of an equation
is the chain of user frames between that root and the operation, the traced function itself
left out (its own lines have scope ``()``): functions by name (``"cell"``), methods as
``"Class.method"``; comprehensions are not calls of their own. Sibling calls of one name are
numbered in call order (``"cell#1"``, ``"cell#2"``: a loop's iterations), a name called once
keeps it plain; frames in ad, numpy and scipy never appear. ``ad.scope`` names a block or a
function explicitly, as ``jax.named_scope`` does.

Recording is cheap: a trace keeps the chain of the last equation's innermost frame and walks
the stack again only when that frame changes; the numbering is settled when the trace ends.
The scope tree of a tape (``Tape.scopes``) groups its equations by these paths.
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field

from .errors import is_users_file
from .trace_state import ACTIVE

_TRANSPARENT = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})
_LASTING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

NAMED: dict = {}         # code object -> the name ``@ad.scope`` gave its function
OPEN: dict = {}          # frame -> the explicit scopes open in it, in order
VERSION = 0              # bumped whenever an explicit scope opens or closes


class _Opened:
    """One entry into a ``with ad.scope(name)`` block: a call of its own."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class scope:  # noqa: N801  (used like a function: ``with ad.scope("encoder")``)
    """A named scope: ``with ad.scope("encoder"): ...`` puts the equations recorded in the block
    in a scope of that name; ``@ad.scope("name")`` names every call of a function (the function
    is returned unchanged), and bare ``@ad.scope`` uses its own name. A decorated function
    appears even when it is the traced function itself. Outside a trace it costs nothing.

    >>> def f(x):
    ...     with ad.scope("encoder"):
    ...         h = np.tanh(x)
    ...     return np.sum(h)
    >>> [e.scope for e in ad.trace(f, np.ones(2)).eqns]
    [('encoder',), ()]
    """

    def __new__(cls, name=None):
        if callable(name):              # bare @ad.scope
            return _mark(name, None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"ad.scope takes a non-empty name (a str), not {name!r}")
        self = super().__new__(cls)
        self.name, self._entered = name, []
        return self

    def __call__(self, fn):
        return _mark(fn, self.name)

    def __enter__(self):
        frame = sys._getframe(1)
        opened = _Opened(self.name)
        OPEN.setdefault(frame, []).append(opened)
        self._entered.append((frame, opened))
        _changed()
        return self

    def __exit__(self, *exc):
        frame, opened = self._entered.pop()
        entries = OPEN[frame]
        entries.remove(opened)
        if not entries:
            del OPEN[frame]
        _changed()

    def __repr__(self) -> str:
        return f"ad.scope({self.name!r})"


def _changed():
    """An explicit scope opened or closed: the active traces look their scope up again."""
    global VERSION
    VERSION += 1
    for rec in ACTIVE:
        rec.scope_changed()


def _mark(fn, name: str | None):
    """``fn``, its calls named ``name`` (None: its own name) in every trace from now on."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"@ad.scope decorates Python functions; {fn!r} has no code of its own "
                        "(wrap the call in `with ad.scope(name):` instead)")
    NAMED[code] = name if name is not None else call_name(code, named=False)
    _CODES.pop(code, None)
    return fn


_NAMES: dict = {}


def call_name(code, named: bool = True) -> str:
    """A frame's scope name: the one ``@ad.scope`` gave its function, else its qualified name
    without the enclosing functions (``Layer.forward``, ``cell``, ``<lambda>``)."""
    if named and code in NAMED:
        return NAMED[code]
    name = _NAMES.get(code)
    if name is None:
        name = _NAMES[code] = code.co_qualname.rpartition(".<locals>.")[2]
    return name


_CODES: dict = {}       # code object -> (whether its frames are calls of the user's, scope name, lasting)


def code_info(code) -> tuple:
    """(whether a frame running ``code`` is a call of the user's, its scope name, whether the
    call lasts past its first return: a generator's or a coroutine's), once per code object."""
    info = _CODES.get(code)
    if info is None:
        call = is_users_file(code.co_filename) and code.co_name not in _TRANSPARENT
        info = _CODES[code] = (call, call_name(code), bool(code.co_flags & _LASTING))
    return info


class CallScopes:
    """The scopes of one trace, from the frame ``root`` that calls the traced function.

    ``stack`` is the chain of the last equation's innermost frame, as (key, path) pairs,
    outermost first: a key is a frame (a call) or an ``_Opened`` block; ``known`` maps the
    user frames of that chain (the traced function's among them) to (how many entries of
    ``stack`` are theirs and their ancestors', the path there). A new innermost frame is looked
    up by walking up to the nearest known frame (a return: none to walk; a call: the new
    frames alone); the whole stack is walked again only when an explicit scope opened or closed.
    Frames of generators and explicit blocks are remembered for the whole trace (they are
    resumed, or re-entered after calls in between); other calls are alive only while on the
    stack. Paths are provisional while recording: a name's first call is plain until a second
    call of it comes, and ``final`` numbers it then."""

    def __init__(self, root):
        self.root = root
        self.stack: list = []
        self.known: dict = {}
        self.version = VERSION               # VERSION when ``known`` was made
        self.calls: dict = {}                # provisional parent path -> {name: calls so far}
        self.lasting: dict = {}              # (parent path, key) -> path, for generators and blocks
        self.firsts: set = set()             # provisional paths of first calls that got a second
        self.made: list = []                 # every provisional path, in the order made

    def of(self, frame) -> tuple:
        """The (provisional) scope of an equation recorded with ``frame`` the innermost user's
        (the recorder asks when that frame is not the last equation's)."""
        known = self.known
        if self.version == VERSION:
            new, f = [], frame
            while f not in known:
                if f is None or f is self.root:
                    if f is not None and not known:     # the first equation: nothing to keep
                        return self._below((), new, first=True)
                    break
                new.append(f)
                f = f.f_back
            else:
                depth, path = known[f]
                stack = self.stack
                if len(stack) > depth:          # the calls it returned from
                    for key, _ in stack[depth:]:
                        known.pop(key, None)
                    del stack[depth:]
                return self._below(path, new) if new else path
        path = self._rebuild(frame)
        self.version = VERSION
        return path

    def _below(self, path: tuple, new: list, first: bool = False) -> tuple:
        """The path of the frames ``new`` (innermost first), called below the end of ``stack``
        (``first``: below the root; the outermost user frame runs the traced function)."""
        stack, known = self.stack, self.known
        for fr in reversed(new):
            call, name, lasting = code_info(fr.f_code)
            if call and first:      # the traced function: a call only when @ad.scope named it
                first, call = False, fr.f_code in NAMED
                if not call:
                    known[fr] = (len(stack), path)
            if call:
                path = self._enter(path, fr, name, lasting)
                stack.append((fr, path))
            opened = OPEN.get(fr)
            if opened:
                for block in opened:
                    path = self._enter(path, block, block.name, True)
                    stack.append((block, path))
            if call or opened:
                known[fr] = (len(stack), path)
        return path

    def _rebuild(self, frame) -> tuple:
        """The path of ``frame`` from the whole stack up to the root (the calls already on
        ``stack`` keep their paths); ``known`` made again."""
        chain, f = [], frame
        while f is not None and f is not self.root:
            chain.append(f)
            f = f.f_back
        if f is None:           # not below the root (a value computed outside the traced call)
            return ()
        entries, traced = [], True     # the outermost user frame runs the traced function
        for fr in reversed(chain):
            call = code_info(fr.f_code)[0]
            keys = [fr] if call and (not traced or fr.f_code in NAMED) else []
            traced = traced and not call
            keys += OPEN.get(fr, ())
            if call or keys:
                entries.append((fr, keys))
        flat = [k for _, keys in entries for k in keys]
        stack = self.stack
        i, n = 0, min(len(flat), len(stack))
        while i < n and stack[i][0] is flat[i]:
            i += 1
        path = stack[i - 1][1] if i else ()
        del stack[i:]
        for key in flat[i:]:
            if type(key) is _Opened:
                path = self._enter(path, key, key.name, True)
            else:
                path = self._enter(path, key, *code_info(key.f_code)[1:])
            stack.append((key, path))
        known, depth = self.known, 0
        known.clear()
        for fr, keys in entries:
            depth += len(keys)
            known[fr] = (depth, stack[depth - 1][1] if depth else ())
        return path

    def _enter(self, parent: tuple, key, name: str, lasting: bool) -> tuple:
        """The path of a call ``key`` (a frame or a block) of ``name`` made in ``parent``: a new
        one, numbered, but a lasting call's own again."""
        if lasting:
            hit = self.lasting.get((parent, key))
            if hit is not None:
                return hit
        calls = self.calls.setdefault(parent, {})
        k = calls[name] = calls.get(name, 0) + 1
        if k == 1:
            path = parent + (name,)
        else:
            if k == 2:
                self.firsts.add(parent + (name,))
            path = parent + (f"{name}#{k}",)
        if lasting:
            self.lasting[(parent, key)] = path
        self.made.append(path)
        return path

    def finish(self) -> dict:
        """``final``, once the trace ended: the frames held (the user's, and the root's, whose
        locals hold the recorder) are let go first."""
        self.root = None
        self.stack.clear()
        self.known.clear()
        self.lasting.clear()
        return self.final()

    def final(self) -> dict:
        """Provisional path -> final path, for the paths a later call renumbered (empty when no
        name was called twice)."""
        if not self.firsts:
            return {}
        renamed: dict = {}
        for path in self.made:
            self._final(path, renamed)
        return {k: v for k, v in renamed.items() if k != v}

    def _final(self, path: tuple, renamed: dict) -> tuple:
        if not path:
            return path
        hit = renamed.get(path)
        if hit is None:
            head = self._final(path[:-1], renamed)
            tail = path[-1] + "#1" if path in self.firsts else path[-1]
            hit = renamed[path] = head + (tail,)
        return hit


def renumbered(eqns: list, renamed: dict) -> list:
    """``eqns`` with their provisional scopes made final (``renamed``: ``CallScopes.finish``);
    the same list when none changed."""
    if not renamed:
        return eqns
    return [e if e.scope not in renamed else e.with_scope(renamed[e.scope]) for e in eqns]


def common_prefix(a: tuple, b: tuple) -> tuple:
    """The scope both ``a`` and ``b`` are inside (an equation shared by two scopes lives there)."""
    if a == b:
        return a
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


# -- the scope tree of a tape --------------------------------------------------------------

@dataclass(eq=False)
class Scope:
    """A node of a tape's scope tree. ``forward``, ``backward`` and ``tangent`` are the positions
    in ``tape.eqns`` of the equations in this scope and in its descendants, by phase
    (``OriginKind.phase``), in tape order; ``residual_bytes`` what the forward equations of this
    scope and its descendants keep for the backward section; ``children`` the calls it made,
    in call order."""
    path: tuple
    forward: list = field(default_factory=list)
    backward: list = field(default_factory=list)
    tangent: list = field(default_factory=list)
    residual_bytes: int = 0
    children: list = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path[-1] if self.path else ""

    @property
    def equations(self) -> list:
        """Every equation position in this scope and below, in tape order."""
        return sorted(self.forward + self.backward + self.tangent)

    def walk(self):
        """This scope and its descendants, depth first in call order."""
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, path) -> "Scope":
        """The descendant at ``path`` (a tuple, or a string ``"cell#3/dense"``)."""
        parts = tuple(path.split("/")) if isinstance(path, str) else tuple(path)
        node = self
        for i in range(len(self.path), len(parts)):
            node = next((c for c in node.children if c.path == parts[:i + 1]), None)
            if node is None:
                raise KeyError(f"no scope {'/'.join(parts)!r}: {'/'.join(parts[:i + 1])!r} is not a "
                               f"call made in {'/'.join(parts[:i]) or 'the traced function'!r}")
        return node

    def __repr__(self) -> str:
        return (f"Scope({'/'.join(self.path) or '<root>'}: {len(self.forward)} forward, "
                f"{len(self.backward)} backward, {len(self.tangent)} tangent, "
                f"{len(self.children)} children)")


def scope_tree(eqns, residual_bytes: dict | None = None) -> Scope:
    """The tree of the scopes of ``eqns``. ``residual_bytes``: equation position -> bytes of its
    outputs the backward section reads."""
    root = Scope(())
    nodes = {(): root}
    for i, e in enumerate(eqns):
        path = e.scope
        node = nodes.get(path)
        if node is None:
            node = _add_path(nodes, path)
        phase = e.origin.kind.phase
        kept = residual_bytes.get(i, 0) if residual_bytes else 0
        for k in range(len(path), -1, -1):
            owner = nodes[path[:k]]
            getattr(owner, phase).append(i)
            owner.residual_bytes += kept
    return root


def _add_path(nodes: dict, path: tuple) -> Scope:
    parent = nodes.get(path[:-1]) or _add_path(nodes, path[:-1])
    node = nodes[path] = Scope(path)
    parent.children.append(node)
    return node
