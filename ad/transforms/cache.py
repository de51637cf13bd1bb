"""The tape cache of ``ad.grad``: per argument signature, the tapes traced so far, each valid
under the guards its trace recorded (TorchDynamo's guarded re-compilation, done for tapes).

A call runs the most recently successful tape first; one whose guards break raises GuardError
partway and the next is tried; when none holds, the function is traced again for these inputs.
So every call gets the eager answer, and ``cache_info()`` counts what that cost.

One-shot transforms (``ad.jvp``, ``ad.linearize``, ``ad.hvp``) trace on every call, as JAX's do:
a cache kept across calls of a call that looks stateless would hold the arrays ``f`` reads from
outside its arguments as stale constants (a silently wrong answer once they change). Keep a
transform object (``ad.jacfwd(f)``, ``ad.grad(f)``) or ``f_jvp`` to reuse tapes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import pytree
from ..errors import GuardError
from ..tape import Tape
from ..tracer import Tracer


@dataclass
class Entry:
    tape: Any
    compiled: Any = None          # the compiled form, made on first use


@dataclass(frozen=True)
class Traced:
    """What a transform keeps of one trace of ``f`` (a subclass adds the tapes it built from
    it): the primal tape, whose captures (values of an enclosing trace, ``TapeCache.call``)
    belong to that trace alone, and the rules its tapes inlined (``rules_of``)."""
    primal: Tape
    rules: tuple

    @property
    def captures(self):
        return self.primal.captures


@dataclass(frozen=True)
class CacheInfo:
    """``traces``: how often the function was traced; ``hits``: calls served by a cached tape;
    ``guard_failures``: cached tapes whose guards a call broke; ``signatures``/``tapes``: what the
    cache holds; ``reasons``: the last guard failures (which guard, which line, which values)."""
    traces: int
    hits: int
    guard_failures: int
    signatures: int
    tapes: int
    reasons: tuple[str, ...]


def signature(leaves) -> tuple:
    """What a traced tape depends on besides guarded values: shapes, dtypes, static leaves."""
    return tuple(map(_leaf_signature, leaves))


_PYTHON_SCALARS = {float: ((), np.dtype(np.float64)), complex: ((), np.dtype(np.complex128))}


def _leaf_signature(x) -> tuple:
    """(shape, dtype) of a traced leaf, (type, value) of a static one; arrays and scalars
    first, they are checked on every call."""
    if type(x) is np.ndarray:
        return x.shape, x.dtype
    key = _PYTHON_SCALARS.get(type(x))
    if key is not None:
        return key
    if isinstance(x, np.generic):
        return (), x.dtype
    if pytree.is_traceable_leaf(x):
        return np.shape(x), np.result_type(x.value if isinstance(x, Tracer) else x)
    return type(x), x


def rules_of(tape) -> tuple:
    """The rules a transform of the primal ``tape`` was built with: (primitive, rrule, frule,
    overloads of its pullback) per primitive. Its cached tapes inline them, so they are stale
    once one is registered, or an overload removed (``ad.backpropagate``)."""
    prims = dict.fromkeys(e.prim for e in tape.eqns)
    return tuple((p, p.rule, p.frule, dict(p.overloads)) for p in prims)


def rules_current(rules: tuple) -> bool:
    """No rule, frule or overload of ``rules_of``'s primitives changed since: a cached tape holds."""
    return all(p.rule is r and p.frule is fr and p.overloads == o for p, r, fr, o in rules)


class TapeCache:
    """Tapes per signature, most recently successful first, at most ``max_traces`` each."""

    def __init__(self, max_traces: int = 8):
        self.max_traces = max_traces
        self.entries: dict[tuple, list[Entry]] = {}
        self.traces = self.hits = self.guard_failures = 0
        self.reasons: list[str] = []
        self._warned = False

    def __len__(self) -> int:
        return len(self.entries)

    def call(self, args, new_tape: Callable, run: Callable):
        """``run(entry, args, leaves)`` with the first cached tape whose guards hold, else with a
        tape ``new_tape(args)`` traced now (kept unless it captured values of an enclosing trace,
        which belong to that trace alone)."""
        leaves, structure = pytree.flatten(args)
        entries = self.entries.setdefault((structure,) + signature(leaves), [])
        for entry in entries:        # changed only right before returning
            try:
                out = run(entry, args, leaves)
            except GuardError as exc:
                self.guard_failures += 1
                self.reasons = (self.reasons + [f"{exc.guard} at {exc.source}: assumed "
                                                f"{exc.expected!r}, got {exc.got!r}"])[-5:]
                continue
            self.hits += 1
            if entries[0] is not entry:
                entries.remove(entry)
                entries.insert(0, entry)
            return out
        entry = Entry(new_tape(args))
        self.traces += 1
        if not entry.tape.captures:
            entries.insert(0, entry)
            if len(entries) > self.max_traces:
                entries.pop()
                self._warn()
        return run(entry, args, leaves)

    def _warn(self):
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"a function re-traced more than {self.max_traces} times for one argument "
                f"signature because its guards keep failing (last: {self.reasons[-1] if self.reasons else '?'}); "
                "data-dependent control flow such as an integer computed from the input re-traces "
                "on every change. It still gives the right answer; cache_info() counts the cost.",
                stacklevel=4)

    def info(self) -> CacheInfo:
        return CacheInfo(self.traces, self.hits, self.guard_failures, len(self.entries),
                         sum(map(len, self.entries.values())), tuple(self.reasons))

