"""The debugger's graph pane: the Graphviz source of the neighbourhood of the cursor (never the
whole tape), the current equation framed, what the step wrote and failed checks tinted; the
browser lays it out, the kernel's long-lived ``dot`` draws it when the browser cannot."""
from __future__ import annotations

import contextlib
import warnings
from collections import OrderedDict

from .. import labels
from ..draw import to_graphviz
from ..escaping import html_attr, html_text
from ..figures import export_bytes
from ..renderer import RenderError, RenderWarning, choose, render
from .dot import DOT
from .model import DebugModel

SELECTED_TINT = "#bfdbfe"
FAILED_TINT = "#fecaca"
DOT_CACHE = 64


def _swatch(frame: str, fill: str, width: int, text: str) -> str:
    style = html_attr("style", f"border:{min(width, 3)}px solid {frame};background:{fill}")
    return f'<span class="tv-swatch"{style}></span>{html_text(text)}'


ABSENT = {"reverse": {"tangent"}, "forward": {"cotangent"}}     # value kinds a mode's tape never has


def legend(mode: str) -> str:
    """The graph pane's key for a tape of ``mode`` ("reverse" or "forward"): the kinds of value
    it can draw, the cursor's and the checks' marks."""
    kinds = [look for kind, look in labels.KINDS.items() if kind not in ABSENT[mode]]
    return '<div class="tv-legend">' + " ".join(
        [_swatch(look.frame, look.background, look.width, look.text) for look in kinds]
        + [_swatch(labels.CURRENT.frame, "#fff", 3, "current step"),
           _swatch("#9ca3af", labels.TINT, 1, "written by this step"),
           _swatch("#9ca3af", SELECTED_TINT, 1, "selected"),
           _swatch(labels.FAILED.frame, labels.FAILED.background, 3, "failed check")]) + "</div>"


class GraphPane:
    """A model's current view as Graphviz source; ``k`` is the window's radius in equations.

    The browser lays the source out (Graphviz in WebAssembly) and tints the selection itself, so
    the source depends on the step alone and a static page needs one per step. ``svg()`` draws it
    in the kernel, for a page that may not run WebAssembly; ``export()`` writes files."""

    def __init__(self, model: DebugModel, k: int = 2):
        self.model = model
        self.k = k
        self._cache: OrderedDict = OrderedDict()

    def view(self, selection: bool = True):
        """(window, current node, tints) of the cursor's view."""
        m = self.model
        current = "eq/" + m.current
        tint = {repr(v): FAILED_TINT for i, marks in m.marks.items() if any(k.status == "fail" for k in marks)
                for v in m.eqns[i].outputs}
        tint.update(dict.fromkeys(m.written(), labels.TINT))
        if selection and m.selected:
            tint[m.selected] = SELECTED_TINT
        return (current, self.k), current, tint

    def dot(self, labels_kind: str = "html") -> str:
        """The pane's Graphviz source at the cursor (cached per view)."""
        window, current, tint = self.view(selection=False)
        key = (current, tuple(tint.items()), self.model.checks_version, labels_kind)
        source = self._cache.get(key)
        if source is None:
            source = self._cache[key] = to_graphviz(self.model.graph, window=window, current=current, tint=tint,
                                                    legend=False, labels=labels_kind).source
            while len(self._cache) > DOT_CACHE:
                self._cache.popitem(last=False)
        return source

    def svg(self) -> str:
        """The pane drawn by the kernel's Graphviz (the WebAssembly one has no HTML labels)."""
        source = self.dot("html" if choose() == "dot" else "text")
        try:
            with graphviz_quiet():
                text = DOT.svg(source) or render(source).decode()
        except RenderError as exc:
            return f'<pre class="tv-message">{html_text(exc)}</pre>'
        return text[text.find("<svg"):]

    def export(self, format: str, title: str) -> bytes:
        """The pane's view as a file's bytes (with a legend, a title and the selection)."""
        window, current, tint = self.view()
        with graphviz_quiet():
            return export_bytes(self.model.graph, format, window=window, current=current, tint=tint,
                                title=title)


@contextlib.contextmanager
def graphviz_quiet():
    """Graphviz's complaints about edge routing would land in a widget's output area as noise;
    the drawing is complete."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenderWarning)
        yield
