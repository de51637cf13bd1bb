"""The debugger's graph pane: the Graphviz drawing of the neighbourhood of the cursor (never
the whole tape), the current equation framed, what the step wrote tinted, the selection and
failed checks tinted, drawn by a long-lived ``dot`` and cached per view."""
from __future__ import annotations

import contextlib
import warnings
from collections import OrderedDict

from .. import labels
from ..draw import to_graphviz
from ..export import export_bytes
from ..render import RenderError, RenderWarning, choose, render
from .dot import DOT
from .markup import GRAPH_PICK_JS, attr, esc, onclick
from .model import DebugModel

SELECTED_TINT = "#bfdbfe"
FAILED_TINT = "#fecaca"
SVG_CACHE = 64


def _swatch(frame: str, fill: str, width: int, text: str) -> str:
    return (f'<span class="tv-swatch" style="border:{min(width, 3)}px solid {frame};background:{fill}"></span>'
            f'{esc(text)}')


LEGEND = '<div class="tv-legend">' + " ".join(
    [_swatch(look.frame, look.background, look.width, look.text) for look in labels.KINDS.values()]
    + [_swatch(labels.CURRENT.frame, "#fff", 3, "current step"),
       _swatch("#9ca3af", labels.TINT, 1, "written by this step"),
       _swatch("#9ca3af", SELECTED_TINT, 1, "selected"),
       _swatch(labels.FAILED.frame, labels.FAILED.background, 3, "failed check")]) + "</div>"


class GraphPane:
    """Draws a model's current view; ``k`` is the window's radius in equations."""

    def __init__(self, model: DebugModel, k: int = 2):
        self.model = model
        self.k = k
        self.svg = ""
        self._cache: OrderedDict = OrderedDict()

    def view(self):
        """(window, current node, tints) of the cursor's view."""
        m = self.model
        current = "eq/" + m.current
        tint = {repr(v): FAILED_TINT for i, marks in m.marks.items() if any(k.status == "fail" for k in marks)
                for v in m.eqns[i].outputs}
        tint.update(dict.fromkeys(m.written(), labels.TINT))
        if m.selected:
            tint[m.selected] = SELECTED_TINT
        return (current, self.k), current, tint

    def draw(self) -> str:
        """The pane's HTML for the cursor (the SVG in ``self.svg``)."""
        m = self.model
        window, current, tint = self.view()
        key = (current, tuple(tint.items()), m.checks_version)
        svg = self._cache.get(key)
        if svg is None:
            svg = self._cache[key] = self._render(window, current, tint)
            while len(self._cache) > SVG_CACHE:
                self._cache.popitem(last=False)
        self.svg = svg
        return (f'<div class="tv-graph-pane"{attr("data-focus", m.current)}{attr("data-step", m.index)}>'
                f'<div class="tv-caption">equations within {self.k} steps of #{m.step.start}; click a node '
                f'to inspect it</div>{LEGEND}<div class="tv-graph-svg"{onclick(GRAPH_PICK_JS)}>{svg}</div></div>')

    def _render(self, window, current, tint) -> str:
        kind = "html" if choose() == "dot" else "text"      # the WebAssembly Graphviz: text labels
        source = to_graphviz(self.model.graph, window=window, current=current, tint=tint,
                             legend=False, labels=kind).source
        try:
            with graphviz_quiet():
                text = DOT.svg(source) or render(source).decode()
        except RenderError as exc:
            return f'<pre class="tv-message">{esc(exc)}</pre>'
        return text[text.find("<svg"):]

    def export(self, format: str, title: str) -> bytes:
        """The pane's view as a file's bytes (with a legend and a title)."""
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
