"""Stepping through a tape as a source debugger steps through a program: by the user's calls
(``eqn.scope``, ``ad.scopes``), to a target, to a breakpoint, to the first NaN or Inf, to a
failing check; and the outline of the program (its scope tree as plain data).

Definitions, at the current granularity (a step is an instance body, a pullback block, or one
equation: ``model``), in each phase ("forward", "backward", or forward mode's "tangent"):

- the *scope* of a step is the scope of its equations (their common prefix when they differ);
- the *span* of a call in a phase is the range of steps from the first to the last one whose
  scope is inside the call (its own equations and its descendants'); the top level ``()`` spans
  the whole phase. In the backward phase a call's span is its pullback: calls run in reverse
  order, and a fan-in sum of an outer variable may run in the middle of it;
- the *frame* of a step is the innermost call whose span contains it: usually its scope, but a
  fan-in sum of a top-level parameter that runs in the middle of ``cell#2``'s pullback is in
  ``cell#2``'s frame (stepping out of it leaves ``cell#2``, not the whole phase).

From step ``k`` in frame ``F`` (forward, or with ``reverse=True`` backward in step order):

- **step into**: step ``k + 1`` (enters a call when the next step is in one);
- **step over**: the first step after ``k`` whose frame is not inside a call made from ``F``:
  every call made from ``F`` is skipped whole (its span: in the backward phase its whole pullback
  block, fan-in sums included), and consecutive calls together; the result is in ``F``, or
  outside it when ``F``'s span ends first;
- **step out**: the first step after ``F``'s span, i.e. the first step after leaving the call;
  at the top level, the first step of the next phase (the traced function returns).
- None when there is no such step (the end of the tape; the start, in reverse).

A *target* is an equation, named by its first output as ``select`` accepts (``"%12"``,
``"eq/%12"``), or a scope path: a tuple (``("cell#17",)``, ``()`` the top level) or a string
``"cell#17/sig"``. A scope target is *hit* at the first step of its span in each phase: where
the call's forward body begins, and where its pullback block begins.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import MutableSet
from typing import NamedTuple

import numpy as np

from ad.scopes import Scope, common_prefix, scope_tree

NUMBERED = re.compile(r"(.*)#(\d+)")
STATUS_RANK = {None: 0, "pass": 1, "warn": 2, "fail": 3}


class Layout(NamedTuple):
    """The scopes, spans and frames of the steps at one granularity."""
    scopes: list          # step -> its scope
    spans: dict           # (phase, path) -> [first step, last step]
    frames: list          # step -> (phase, path): its frame's span key


def parse_target(target):
    """A target in normal form: ``"%12"`` for an equation, a tuple for a scope path."""
    if isinstance(target, str):
        text = target.strip().removeprefix("eq/")
        if text.startswith("%"):
            return text
        return tuple(p for p in text.split("/") if p)
    if isinstance(target, (tuple, list)) and all(isinstance(p, str) for p in target):
        return tuple(target)
    raise TypeError(f"a target is an equation ('%12') or a scope path (('cell#17',) or "
                    f"'cell#17/sig'), not {target!r}")


def describe(target) -> str:
    """A target as the messages write it: ``%12``, ``cell#17/sig``, or ``the top level``."""
    if isinstance(target, str):
        return target
    return "/".join(target) or "the top level"


class Navigation:
    """Where the debugger's moves go (module docstring), for a ``DebugModel``: every method
    returns a step index at the model's granularity and leaves the cursor where it is."""

    def __init__(self, model):
        self.model = model
        self._layouts: dict[str, Layout] = {}
        self._tree: Scope | None = None
        self._nonfinite: list[int] | None = None

    # -- structure -------------------------------------------------------------------------
    @property
    def tree(self) -> Scope:
        """The scope tree (``ad.scopes.Scope``), residual bytes from the residuals table (the
        forward values the backward pass, or in forward mode the tangent pass, reads)."""
        if self._tree is None:
            sizes: dict[int, int] = {}
            for r in self.model.residual_table():
                if r["producer"] is not None:
                    sizes[r["producer"]] = sizes.get(r["producer"], 0) + r["bytes"]
            self._tree = scope_tree(self.model.eqns, sizes)
        return self._tree

    def layout(self, granularity: str | None = None) -> Layout:
        g = granularity or self.model.granularity
        if g not in self._layouts:
            self._layouts[g] = self._layout(self.model.steps[g])
        return self._layouts[g]

    def _layout(self, steps) -> Layout:
        eqns = self.model.eqns
        scopes = []
        spans: dict = {}
        for k, s in enumerate(steps):
            path = _step_scope(eqns, s.start, s.stop)
            scopes.append(path)
            for d in range(len(path) + 1):
                span = spans.get((s.phase, path[:d]))
                if span is None:
                    spans[(s.phase, path[:d])] = [k, k]
                else:
                    span[1] = k
        # the frame of each step: the span opened last among those still open (spans nest:
        # outer ones first when two open at one step)
        order = sorted(spans.items(), key=lambda kv: (kv[1][0], -kv[1][1], len(kv[0][1])))
        frames, stack, p = [], [], 0
        for k in range(len(steps)):
            while p < len(order) and order[p][1][0] == k:
                stack.append(order[p])
                p += 1
            while stack[-1][1][1] < k:
                stack.pop()
            frames.append(stack[-1][0])
        return Layout(scopes, spans, frames)

    def scope_of(self, index: int | None = None) -> tuple:
        """The scope of step ``index`` (default: the cursor's)."""
        m = self.model
        k = m.index if index is None else index
        lay = self._layouts.get(m.granularity)
        if lay is not None:
            return lay.scopes[k]
        s = m.step_list[k]                 # one step's, without laying out every step
        return _step_scope(m.eqns, s.start, s.stop)

    def frame_of(self, index: int | None = None) -> tuple:
        """The frame of step ``index`` (default: the cursor's): the innermost call whose span
        contains it."""
        return self.layout().frames[self.model.index if index is None else index][1]

    # -- stepping --------------------------------------------------------------------------
    def step_into(self, reverse: bool = False) -> int | None:
        k = self.model.index + (-1 if reverse else 1)
        return k if 0 <= k < self.model.n_steps else None

    def step_over(self, reverse: bool = False) -> int | None:
        lay, n = self.layout(), self.model.n_steps
        k = self.model.index
        frame = lay.frames[k][1]
        depth = len(frame)
        j = k - 1 if reverse else k + 1
        while 0 <= j < n:
            phase, path = lay.frames[j]
            if len(path) <= depth or path[:depth] != frame:
                return j
            first, last = lay.spans[(phase, path[:depth + 1])]      # the call made from the frame
            j = first - 1 if reverse else last + 1
        return None

    def step_out(self, reverse: bool = False) -> int | None:
        lay = self.layout()
        first, last = lay.spans[lay.frames[self.model.index]]
        j = first - 1 if reverse else last + 1
        return j if 0 <= j < self.model.n_steps else None

    # -- targets ---------------------------------------------------------------------------
    def target(self, target):
        """``target`` in normal form (``parse_target``), checked against the tape: a KeyError
        names an unknown equation or scope."""
        t = parse_target(target)
        m = self.model
        if isinstance(t, str):
            if t not in m.var_attrs:
                raise KeyError(f"{t!r} is not a variable of this tape; equations are named by their "
                               f"first output, '%0' to '%{len(m.var_attrs) - 1}' as in the listing")
            if t not in m.producer_index:
                raise KeyError(f"{t!r} is an input of the tape: no equation computes it")
            return t
        try:
            self.tree.find(t)
        except KeyError as exc:
            hint = self._group_hint(t)
            raise KeyError(exc.args[0] + hint) from None
        return t

    def _group_hint(self, path: tuple) -> str:
        try:
            parent = self.tree.find(path[:-1])
        except KeyError:
            return ""
        calls = [c.name for c in parent.children if _base(c.name) == path[-1] and c.name != path[-1]]
        if not calls:
            return ""
        return f" ({path[-1]!r} was called {len(calls)} times: name one call, {calls[0]!r} to {calls[-1]!r})"

    def hits(self, target) -> list[int]:
        """The steps where ``target`` is hit, in order: an equation's step; a scope's first step
        in each phase."""
        t = self.target(target)
        m = self.model
        if isinstance(t, str):
            return [m.step_of(m.producer_index[t])]
        node = self.tree.find(t)
        firsts = [getattr(node, phase)[0] for phase in ("forward", "backward", "tangent") if getattr(node, phase)]
        return sorted({m.step_of(i) for i in firsts})

    def run_to(self, target) -> int:
        """The step ``run_to(target)`` goes to: an equation's; a scope's first step in the
        cursor's phase if it has steps there, else its first step anywhere."""
        hits = self.hits(target)
        m = self.model
        phase = m.step.phase
        return next((k for k in hits if m.step_list[k].phase == phase), hits[0])

    def next_hit(self, targets, reverse: bool = False) -> tuple[int, list] | None:
        """The first step after the cursor (before it, with ``reverse``) where one of
        ``targets`` is hit, with the targets hit there; None when none is."""
        k = self.model.index
        at: dict[int, list] = {}
        for t in targets:
            for j in self.hits(t):
                if (j < k) if reverse else (j > k):
                    at.setdefault(j, []).append(t)
        if not at:
            return None
        j = max(at) if reverse else min(at)
        return j, at[j]

    def nonfinite_eqns(self) -> list[int]:
        """The equations (positions) with a NaN or an Inf in an output, in tape order."""
        if self._nonfinite is None:
            values, out = self.model.values, []
            for i, e in enumerate(self.model.eqns):
                for v in e.outputs:
                    x = values.get(repr(v))
                    if x is None:
                        continue
                    a = np.asarray(x)
                    if a.dtype.kind in "fc" and not np.isfinite(a).all():
                        out.append(i)
                        break
            self._nonfinite = out
        return self._nonfinite

    def nonfinite_step(self, from_cursor: bool = False) -> int | None:
        """The first step whose outputs contain NaN or Inf (after the cursor's step, with
        ``from_cursor``); None when there is none."""
        eqns = self.nonfinite_eqns()
        after = self.model.step.stop if from_cursor else 0
        p = bisect.bisect_left(eqns, after)
        return self.model.step_of(eqns[p]) if p < len(eqns) else None

    def failure_step(self, reverse: bool = False) -> int | None:
        """The next step (the previous, with ``reverse``) with a failing check mark on one of
        its equations (``run_checks``; on a rule instance and on its pullback block)."""
        m = self.model
        failing = sorted(i for i, marks in m.marks.items() if any(mk.status == "fail" for mk in marks))
        if reverse:
            p = bisect.bisect_left(failing, m.step.start)
            return m.step_of(failing[p - 1]) if p else None
        p = bisect.bisect_left(failing, m.step.stop)
        return m.step_of(failing[p]) if p < len(failing) else None

    # -- the outline -----------------------------------------------------------------------
    def outline(self, fold: int | None = 2) -> dict:
        """The scope tree as plain data. Every entry is a dict:

        a call ``{"kind": "scope", "path": ("cell#17",), "name": "cell#17", "forward": 5,
        "backward": 10, "tangent": 0, "residual_bytes": 256, "status": "fail" | "warn" |
        "pass" | None, "children": [...]}``; the root has ``path`` ``()`` and ``name`` "";
        counts are equations, the call's own and its descendants'; ``status`` is the worst
        check mark on those equations after ``run_checks`` (None before); ``children`` are
        entries in call order.

        With ``fold`` (default 2), a name called ``fold`` times or more among siblings
        (``cell#1`` ... ``cell#40``) is one entry, at its first call's place: ``{"kind":
        "group", "path": ("cell",) (its key, not a scope), "name": "cell", "calls": 40,
        "first": ("cell#1",), forward/backward/tangent/residual_bytes summed over its calls,
        "status": the worst, "children": [the 40 calls' entries]}``. ``fold=None`` folds nothing.
        """
        m = self.model
        worst: dict[tuple, str] = {}
        if m.report is not None:
            for i, marks in m.marks.items():
                status = max((mk.status for mk in marks), key=STATUS_RANK.__getitem__)
                path = m.eqns[i].scope
                for d in range(len(path) + 1):
                    if STATUS_RANK[status] > STATUS_RANK[worst.get(path[:d])]:
                        worst[path[:d]] = status
        default = "pass" if m.report is not None else None
        return self._entry(self.tree, worst, default, fold)

    def _entry(self, node: Scope, worst: dict, default, fold) -> dict:
        children = [self._entry(c, worst, default, fold) for c in node.children]
        return {"kind": "scope", "path": node.path, "name": node.name, "forward": len(node.forward),
                "backward": len(node.backward), "tangent": len(node.tangent),
                "residual_bytes": node.residual_bytes, "status": worst.get(node.path, default),
                "children": _folded(node.path, children, fold) if fold else children}


def _step_scope(eqns, start: int, stop: int) -> tuple:
    """The scope of the equations [start, stop): their common prefix."""
    path = eqns[start].scope
    for i in range(start + 1, stop):
        if eqns[i].scope != path:
            path = common_prefix(path, eqns[i].scope)
    return path


def _base(name: str) -> str:
    hit = NUMBERED.fullmatch(name)
    return hit.group(1) if hit else name


def _folded(parent: tuple, children: list, fold: int) -> list:
    """Siblings numbered ``name#k`` folded into one group per name called ``fold`` times or more."""
    groups: dict[str, list] = {}
    for c in children:
        if NUMBERED.fullmatch(c["name"]):
            groups.setdefault(_base(c["name"]), []).append(c)
    out = []
    for c in children:
        base = _base(c["name"])
        calls = groups.get(base, ())
        if len(calls) < fold or c["name"] == base:
            out.append(c)
        elif c is calls[0]:
            out.append({"kind": "group", "path": parent + (base,), "name": base, "calls": len(calls),
                        "first": calls[0]["path"],
                        **{k: sum(x[k] for x in calls) for k in ("forward", "backward", "tangent", "residual_bytes")},
                        "status": max((x["status"] for x in calls), key=STATUS_RANK.__getitem__),
                        "children": calls})
    return out


class Breakpoints(MutableSet):
    """The debugger's breakpoints: a set of targets (module docstring), each checked when added
    and kept in normal form (``"%12"``, ``("cell#17",)``): ``dbg.breakpoints.add("cell#17/sig")``
    holds ``("cell#17", "sig")``; an unknown target raises KeyError. ``changed`` is called after
    every change."""

    def __init__(self, check, changed=None):
        self._check = check
        self._items: dict = {}
        self.changed = changed

    def __contains__(self, target) -> bool:
        try:
            return parse_target(target) in self._items
        except TypeError:
            return False

    def __iter__(self):
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def add(self, target) -> None:
        self._items[self._check(target)] = None
        if self.changed:
            self.changed()

    def discard(self, target) -> None:
        try:
            key = parse_target(target)
        except TypeError:
            return
        if key in self._items:
            del self._items[key]
            if self.changed:
                self.changed()

    def __repr__(self) -> str:
        return f"Breakpoints({set(self._items)!r})"
