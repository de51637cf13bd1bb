"""The debugger's diff mode: the session's tape (``a``) compared with another (``b``) by
``tapeviz.diff``, shown in a pane beside the stepping: the summary, the entries (removed, added,
changed, coloured as the diff's graph colours them; a change with its reasons and value
differences) and the diff's union graph, whose DOT (``TapeDiff.to_graphviz``) the browser lays out
with the graph pane's Graphviz. An entry or a graph node that is an equation of the session's
tape (removed, changed, aligned) moves the debugger there; an added one is only in ``b``.

``DiffMode`` is what ``TapeDebugger`` gains: ``show_diff(other)``, ``diff``, ``hide_diff()``.
``b`` is ``ad.optimize`` of the session's tape by default (what the optimiser dropped, merged and
rewrote), a tape (a rule before and after an edit: ``ad.grad_tape`` with ``ad.using_rule``), or
another debugger's tape. Values are compared (``diff``'s ``args``) when ``b`` takes the session's
inputs, on the session's argument values. Forward mode (``JvpDebugger``) works the same: its tape
is the linearization's, run on its primal and tangent inputs.
"""
from __future__ import annotations

from typing import NamedTuple

import ad
from ad.tape import Tape

from ..diffing import LOOKS, TapeDiff, diff
from ..escaping import html_attr, html_text
from ..renderer import RenderError, choose, render
from .dot import DOT
from .graph_pane import graphviz_quiet
from .model import DebugModel

CONTEXT_FROM = 150          # equations in both tapes from which the graph draws only what differs ...
CONTEXT = 2                 # ... and the equations this many steps from it
OPTIMIZED = "ad.optimize of it"
KINDS = ("removed", "added", "changed", "values")
NO_DIFF = {"shown": False, "about": OPTIMIZED}      # what the toggle offers before any diff
NOT_ON_PAGE = ("no diff was shown when this page was written: call dbg.show_diff() before "
               "dbg.to_html(path) to embed one")
ZOOM_TITLE = "draw the graph at the readable scale, or fit it to the pane's width"
GO_TITLE = "click to go to this equation in the debugger"
ONLY_IN_B = "only in b: not an equation of this session's tape"


class Shown(NamedTuple):
    """A diff as the view has it: the diff, what b is (``about``) and the view's part."""
    diff: TapeDiff
    about: str
    part: dict


def other_tape(other) -> tuple[Tape, str]:
    """The tape ``show_diff`` compares with (``b``) and what it is, in words."""
    if isinstance(getattr(other, "model", None), DebugModel):
        return other.model.gt, "another debugger's tape"
    if isinstance(other, Tape):
        return other, f"the {type(other).__name__} passed to show_diff"
    raise TypeError(
        f"show_diff compares this session's tape with another; other is of type {type(other).__name__}: pass an "
        "ad.Tape or ad.GradTape (ad.grad_tape(f, *args), under ad.using_rule for a rule's other version), "
        "another debugger (tapeviz.debug(...)), or nothing for the tape after ad.optimize")


def shared_args(model: DebugModel, args: tuple, b: Tape):
    """The arguments both tapes run on to compare values: the session's (its primal and tangent
    input values for a tape without an argument structure, forward mode's), or None when ``b``
    does not take them (values are then not compared)."""
    a = model.gt
    if a.in_tree is None:
        args = tuple(model.values[repr(v)] for v in a.inputs[:len(a.inputs) - len(a.captures)])
    if [v.aval for v in a.inputs] != [v.aval for v in b.inputs]:
        return None
    try:
        leaves = b.flatten_args(args)
    except (TypeError, ValueError):
        return None
    return args if len(leaves) == len(b.inputs) else None


def compare(model: DebugModel, args: tuple, other, rtol: float | None) -> Shown:
    """The session's tape diffed with ``other`` (None: ``ad.optimize`` of it), ready to show."""
    if other is None:
        b, about = ad.optimize(model.gt), OPTIMIZED
    else:
        b, about = other_tape(other)
    d = diff(model.gt, b, shared_args(model, args, b), rtol=rtol)
    return Shown(d, about, view_part(d, about))


def view_part(d: TapeDiff, about: str) -> dict:
    """What the view shows (the ``_diff`` trait, and what a static page embeds): the pane's HTML,
    the graph's DOT, and the session's equation each graph node stands for."""
    nodes = {f"a{i}": i for _, aligned in d.blocks for i, j in aligned if j is None}
    nodes.update((f"b{j}", i) for i, j in d.pairs)
    return {"shown": True, "about": about, "summary": d.summary(), "html": pane_html(d, about),
            "dot": graph(d).source, "nodes": nodes}


def large(d: TapeDiff) -> bool:
    """The graph of a diff this large draws only what differs and what is near it."""
    return len(d.a.eqns) + len(d.b.eqns) >= CONTEXT_FROM


def graph(d: TapeDiff, labels: str = "html"):
    return d.to_graphviz(context=CONTEXT if large(d) else None, labels=labels)


def svg(d: TapeDiff) -> str:
    """The graph drawn by the kernel's Graphviz, for a view that cannot run it (as
    ``GraphPane.svg``)."""
    source = graph(d, "html" if choose() == "dot" else "text").source
    try:
        with graphviz_quiet():
            text = DOT.svg(source) or render(source).decode()
    except RenderError as exc:
        return f'<pre class="tv-message">{html_text(exc)}</pre>'
    return text[text.find("<svg"):]


def page_part(dbg) -> dict:
    """What a static page of ``dbg`` embeds: the diff its pane shows (its HTML and DOT, once),
    or why the page has none to show."""
    return dbg._diff if dbg._diff.get("shown") else {"offline": NOT_ON_PAGE}


# -- the pane's markup ---------------------------------------------------------------------------

def pane_html(d: TapeDiff, about: str) -> str:
    counts = "".join(html_attr(f"data-{kind}", n) for kind, n in
                     (("removed", len(d.removed)), ("added", len(d.added)), ("changed", len(d.changed)),
                      ("same", d.same)))
    values = ("values compared on this session's arguments" if d.compared_values
              else "values not compared: b takes other inputs")
    head = (f'<div class="tv-diff-head"{counts}><b>diff</b> of this tape (a, {len(d.a.eqns)} equations) and '
            f'{html_text(about)} (b, {len(d.b.eqns)}): {html_text(d.summary())} ({values})</div>')
    key = "".join(f'<span class="tv-diff-key"{_look(kind)}>{html_text(LOOKS[kind][3])}</span>' for kind in KINDS)
    notes = "".join(f'<div class="tv-diff-note">{html_text(n)}</div>' for n in d.notes)
    caption = ("the union graph: b's equations and a's removed ones (dashed)"
               + (f", only what differs and {CONTEXT} steps around it" if large(d) else "")
               + "; click an equation of this tape to go to it")
    return (f'<div class="tv-diff">{head}<div class="tv-diff-keys">{key}</div>{notes}<div class="tv-diff-body">'
            f'<div class="tv-diff-entries">{entries_html(d)}</div><div class="tv-diff-graph-w">'
            f'<div class="tv-caption">{html_text(caption)} <button class="tv-button tv-diff-zoom" type="button"'
            f'{html_attr("title", ZOOM_TITLE)}>1:1</button></div><div class="tv-diff-graph" data-state="waiting">'
            f'laying out the graph\u2026</div></div></div></div>')


def entries_html(d: TapeDiff) -> str:
    """``TapeDiff.entries`` as rows, each of a's equation (``data-diff-eqn``) when it has one:
    the rows that differ follow the scope's aligned pairs that differ, in order."""
    if d.empty:
        return '<div class="tv-caption">the two tapes are the same</div>'
    changes = {c.at for c in d.changed}
    aligned = dict(d.blocks)
    out = []
    for scope, rows in d.entries():
        differing = iter([p for p in aligned[scope] if None in p or p in changes])
        out.append(f'<div class="tv-diff-scope">@@ {html_text("/".join(scope) or "top level")} @@</div>')
        for kind, lines, details in rows:
            eqn = None if kind == "same" else next(differing)[0]
            out.append(_row(kind, lines, details, eqn))
    return "".join(out)


def _row(kind: str, lines: list, details: tuple, eqn: int | None) -> str:
    attrs = html_attr("class", f"tv-diff-row tv-diff-{kind}") + html_attr("data-kind", kind) + _look(kind)
    if eqn is not None:
        attrs += html_attr("data-diff-eqn", eqn) + html_attr("title", GO_TITLE)
    elif kind == "added":
        attrs += html_attr("title", ONLY_IN_B)
    mark = LOOKS[kind][0]
    text = "".join(f'<div class="tv-diff-line">{html_text(mark if k == 0 else " ")} {html_text(line)}</div>'
                   for k, line in enumerate(lines))
    why = "".join(f'<div class="tv-diff-why">{html_text(w)}</div>' for w in details)
    return f"<div{attrs}>{text}{why}</div>"


def _look(kind: str) -> str:
    _, frame, background, _ = LOOKS[kind]
    return html_attr("style", f"border-color:{frame};background:{background}")


# -- what TapeDebugger gains ---------------------------------------------------------------------

class DiffMode:
    """The diff mode of ``TapeDebugger`` (see the module): ``show_diff``, ``diff``, ``hide_diff``,
    and the view's toggle and clicks. The host has ``model``, ``args``, the ``_diff`` trait,
    ``step_to`` and ``_say``."""

    _shown: Shown | None = None         # the diff the pane shows
    _kept: Shown | None = None          # the last one shown: the view's toggle shows it again

    @property
    def diff(self) -> TapeDiff | None:
        """The diff the pane shows (``show_diff``), None when it shows none."""
        return self._shown.diff if self._shown is not None else None

    def show_diff(self, other=None, *, rtol: float | None = None) -> TapeDiff:
        """Compare this session's tape (a) with ``other`` (b) and show the diff in the pane:
        ``other`` an ``ad.Tape`` or ``ad.GradTape``, another debugger, or None for ``ad.optimize``
        of this tape. Values are compared on the session's arguments when b takes them (``rtol``:
        ``tapeviz.diff``'s). Returns the ``TapeDiff`` (also ``dbg.diff``)."""
        self._shown = self._kept = compare(self.model, self.args, other, rtol)
        self._diff = self._shown.part
        return self._shown.diff

    def hide_diff(self) -> None:
        """Close the diff pane (``diff`` is then None; the view's toggle shows it again)."""
        self._shown = None
        self._diff = {**NO_DIFF, "about": self._kept.about} if self._kept is not None else NO_DIFF

    def _diff_from_view(self, on: bool) -> None:
        """The view's toggle: the last diff again, else the one with ``ad.optimize``; a diff
        that fails is said in the view, not raised into the kernel's log."""
        if not on:
            self.hide_diff()
            return
        if self._kept is not None:
            self._shown = self._kept
            self._diff = self._kept.part
            return
        try:
            self.show_diff()
        except Exception as exc:       # noqa: BLE001: whatever the optimiser or the diff raised
            self._say(f"the diff failed: {type(exc).__name__}: {exc}")

    def _go_to_diff_entry(self, eqn: int) -> None:
        """An entry or graph node of the session's tape clicked: the cursor to its step, its
        first output selected."""
        m = self.model
        if not 0 <= eqn < len(m.eqns):
            self._say(f"equation {eqn} is not in this session's tape")
            return
        m.select(repr(m.eqns[eqn].outputs[0]))
        self.step_to(m.step_of(eqn))

    def _svg_of(self, dot: str | None) -> str:
        """The kernel's drawing of a DOT the view cannot lay out: the diff's or the graph pane's."""
        if self._shown is not None and dot == self._shown.part["dot"]:
            return svg(self._shown.diff)
        return self.graph_svg
