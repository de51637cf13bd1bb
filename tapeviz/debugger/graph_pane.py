"""The debugger's graph pane: the Graphviz source of the neighbourhood of the cursor (never the
whole tape), the current equation framed, what the step wrote and failed checks tinted; the
browser lays it out, the kernel's long-lived ``dot`` draws it when the browser cannot.

A static page embeds no DOT per step: ``pane_data`` gives what every drawing is made of, once
(each node's label rows and tooltip, escaped here, its cluster and its look; the constant
statements), and the view writes the source of any step's neighbourhood from it
(``static/debugger.js``, ``PaneSource``): the same text ``GraphPane.dot`` gives, byte for byte
(``tapeviz.draw``'s ``_Canvas`` for a window of the detail graph, ported)."""
from __future__ import annotations

import contextlib
import re
import warnings
from collections import OrderedDict

import graphviz

from .. import labels
from ..draw import CLUSTER_COLOURS, FONT, SCOPE_LOOKS, draw, select
from ..escaping import dot_text, dot_value, html_attr, html_text
from ..graph import BACKWARD_BLOCK, EQUATION_KINDS, PUSHFORWARD_BLOCK, SHARED_LIMIT, left_out
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
            graph = self.model.graph
            nodes = select(graph, "joint", window)
            digraph = draw(graph, nodes, "joint", current=current, tint=tint, legend=False, labels=labels_kind)
            digraph.body.extend(more_notes(graph, nodes, labels_kind))
            source = self._cache[key] = digraph.source
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


# -- shared values: the window stops at them, a note says how much it left out --------------------

MORE_COLOUR = "#6b7280"
MORE_EDGE = ' [style=dotted arrowhead=none color="#9ca3af"]'
MORE_TIP = "not drawn: the window does not spread through a shared value (tapeviz.graph.SHARED_LIMIT)"


def more_notes(graph, nodes: list[str], labels_kind: str = "html") -> list[str]:
    """The statements of the notes beside the shared nodes of a window (``graph.left_out``): a
    small "+38 more readers" node, ``more/`` and the node's name, joined to the node's DOT node
    by a dotted line (the operands' note of an equation above it, the readers' below); after
    everything else, as ``PaneSource`` writes them."""
    out = []
    for n, (count, what) in left_out(graph, nodes).items():
        d = graph.nodes[n]
        shown = d["outputs"][0] if d["kind"] in EQUATION_KINDS and len(d["outputs"]) == 1 else n
        note = f"more/{n}"
        label = dot_value(labels.plain(f"+{count} more {what}", labels_kind))
        out.append(f'\t"{note}" [label={label}{_more_attrs()} id={dot_value("tvm_" + n)}]\n')
        tail, head = (note, shown) if what == "operands" else (shown, note)
        out.append(f'\t"{tail}" -> "{head}"{MORE_EDGE}\n')
    return out


def _more_attrs() -> str:
    """A note's attributes between its label and its id."""
    return " " + attr_list({"fontsize": "8", "fontcolor": MORE_COLOUR, "tooltip": MORE_TIP})[1:-1]


# -- the pane's source, written by the browser -----------------------------------------------------

PHASES = ("forward", "backward", "tangent")
STYLES = tuple(labels.KINDS)
_ROW = re.compile(r"<TR>.*?</TR>", re.S)
_SCOPE_LABELS = {"forward": "{}", "backward": "pullback of {}", "tangent": "pushforward of {}"}


def attr_list(attrs: dict) -> str:
    """``[k=v ...]`` as ``tapeviz.draw`` writes attribute lists."""
    return "[" + " ".join(f"{k}={dot_value(v)}" for k, v in attrs.items()) + "]"


def tip_text(text: str) -> str:
    """A tooltip's text as it stands between the quotes of ``tooltip="..."`` (``dot_text`` then
    ``dot_value``, character by character: its lines are interned apart and joined again)."""
    return dot_value(dot_text(text))[1:-1]


def label_cells(rows, style: str, failed: bool) -> list[str]:
    """A node's label rows as ``labels.node_attrs`` writes them (HTML), without the table around
    them, which depends on the node's marks (current, tint): ``PaneSource`` puts it back."""
    label = labels.node_attrs(rows, style, failed=failed, current=False, tint=None, labels="html")["label"]
    inner = label[label.index(">", 2) + 1:-len("</TABLE>>")]
    parts = _ROW.findall(inner)
    assert "".join(parts) == inner, "a label row holds a row"
    return parts


def _failure_lines(*ds) -> list[str]:
    return [f"{name}: {message}" for d in ds if d for name, message in d.get("failures", ())]


def equation_look(graph, eid: str) -> tuple[list, str, bool, str]:
    """How equation node ``eid`` is drawn: its label rows, its style (a key of ``labels.KINDS``),
    whether a check failed on it, and its tooltip (``tip_text``: provenance, scope, source,
    failures)."""
    nodes = graph.nodes
    d = nodes[eid]
    out = nodes[d["outputs"][0]] if len(d["outputs"]) == 1 else None
    style = labels.style_of(d if d["kind"] == "guard" else out or d)
    failures = _failure_lines(d, out)
    scope = d.get("scope") or ()
    tip = "\n".join(filter(None, [d["provenance"], scope and "in " + "/".join(scope), d["source"],
                                  d["source_line"]]))
    return labels.equation_rows(d, out), style, bool(failures), tip_text("\n".join([tip, *failures]))


def pane_data(model: DebugModel, k: int, fragment, scope_ids: dict) -> dict:
    """What the view needs to write the pane's source at any step (see the module): ``fragment``
    interns a string (a label row, a tooltip line) and returns its index; ``scope_ids`` numbers
    the scope paths (``frames.tape_part``'s ``scopes``). Per equation ``eq``
    and per variable ``var`` (drawn apart from its equation): ``cells`` (label rows), ``style``
    (an index of ``STYLES``), ``failed``, ``tip`` (tooltip lines; a variable's are its name
    and these); per equation ``block`` (its pullback, pushforward or rule cluster, an index of
    ``blocks``: name and attributes) and ``align`` (the variable it is put level with, -1:
    none); ``scopeAttrs``: per phase, scope number -> the attributes of its cluster."""
    g = model.graph
    nodes = g.nodes
    index = {n: i for i, n in enumerate(model.var_attrs)}
    upward = bool(g.graph["gradient"])
    style_code = {s: i for i, s in enumerate(STYLES)}

    def cells(rows, style: str, failed: bool) -> list[int]:
        return [fragment(r) for r in label_cells(rows, style, failed)]

    eq = {"cells": [], "style": [], "failed": [], "tip": [], "block": [], "align": []}
    blocks: dict[tuple, int] = {}
    scopes_used: set = set()
    origins = PUSHFORWARD_BLOCK + (BACKWARD_BLOCK if upward else ())
    firsts = {**g.graph.get("pushforwards", {}), **(g.graph["blocks"] if upward else {})}
    for e in model.eqns:
        eid = "eq/" + repr(e.outputs[0])
        d = nodes[eid]
        rows, style, failed, tip = equation_look(g, eid)
        eq["cells"].append(cells(rows, style, failed))
        eq["style"].append(style_code[style])
        eq["failed"].append(int(failed))
        eq["tip"].append([fragment(t) for t in tip.split("\n")])
        phase, of = d["phase"], d["of"]
        name = label = None
        if of is not None and phase == "backward" and d["origin"] in BACKWARD_BLOCK:
            name, label = f"cluster_pullback_{of}", f"pullback of {of} ({d['rule']})"
        elif of is not None and phase == "tangent" and d["origin"] in PUSHFORWARD_BLOCK:
            name, label = f"cluster_pushforward_{of}", f"pushforward of {of} ({d['rule']})"
        elif of is not None and phase == "forward" and len(g.graph["instances"].get(of, ())) > 1:
            name, label = f"cluster_rule_{of}", f"rule {d['rule']} \u2192 {of}"
        block = -1
        if name is not None:
            attrs = attr_list({"label": labels.plain(label, "html"), "style": "rounded,dashed",
                               "color": "#22d3ee" if phase == "tangent" else "#a78bfa", "fontsize": "9",
                               "labeljust": "l"})
            block = blocks.setdefault((name, attrs), len(blocks))
        eq["block"].append(block)
        aligned = of is not None and d["origin"] in origins and firsts[of][0] == eid
        eq["align"].append(index.get(of, -1) if aligned else -1)
        scopes_used.add((phase, tuple(d.get("scope") or ())))
    var = {"cells": [], "style": [], "failed": [], "tip": {}}
    for n, d in model.var_attrs.items():
        producer = nodes[d["producer"]] if d.get("producer") else None
        style = labels.style_of(d)
        failures = _failure_lines(d)
        var["cells"].append(cells(labels.variable_rows(d, producer), style, bool(failures)))
        var["style"].append(style_code[style])
        var["failed"].append(int(bool(failures)))
        if failures:
            var["tip"][str(index[n])] = [fragment(t) for t in tip_text("\n".join([n, *failures])).split("\n")]
    fail_tint = sorted({index[repr(v)] for i, marks in model.marks.items()
                        if any(m.status == "fail" for m in marks) for v in model.eqns[i].outputs})
    return {"head": dot_head(), "k": k, "hops": g.graph.get("hops_per_step", 1), "upward": upward,
            "styles": list(STYLES), "looks": [_look(labels.KINDS[s]) for s in STYLES],
            "failedLook": _look(labels.FAILED), "currentLook": _look(labels.CURRENT),
            "tint": labels.TINT, "failTint": FAILED_TINT, "failTinted": fail_tint,
            "rounded": ["input", "parameter"], "edges": edge_attrs(upward),
            "tops": tops(),
            "scopeAttrs": _scope_attrs(scopes_used, scope_ids),
            "blocks": [[name, attrs] for name, attrs in blocks], "eq": eq, "var": var,
            "shared": SHARED_LIMIT, "more": [_more_attrs(), MORE_EDGE]}


def tops() -> dict:
    """The attributes of the forward, backward and tangent columns' clusters."""
    return {p: attr_list({"label": labels.plain(p, "html", bold=True), "style": "rounded", "color": "#cbd5e1",
                          "fontsize": "12", "labeljust": "l", "bgcolor": CLUSTER_COLOURS[p]}) for p in PHASES}


def _look(look) -> list:
    return [look.frame, look.background, look.width]


def dot_head() -> str:
    """The statements before the body: graph, node and edge attributes (``tapeviz.draw``'s,
    with no legend and no title)."""
    graph_attr = {"rankdir": "TB", "newrank": "true", "nodesep": "0.3", "ranksep": "0.3", "fontname": FONT,
                  "fontsize": "11"}
    source = graphviz.Digraph("tape", graph_attr=graph_attr, body=[],
                              node_attr={"shape": "plain", "fontname": FONT, "fontsize": "10"},
                              edge_attr={"arrowsize": "0.6", "color": "#6b7280"}).source
    assert source.endswith("}\n")
    return source[:-2]


def edge_attrs(upward: bool) -> dict:
    """An edge's attribute list by kind, [in the forward or tangent column, in the backward
    column] (drawn upwards there in the joint view of a gradient)."""
    out = {}
    for kind, (attrs, _) in labels.EDGES.items():
        pair = []
        for backward in (False, True):
            d = dict(attrs)
            if backward and upward:
                d["dir"] = "back"
            pair.append(" " + attr_list(d) if d else "")
        out[kind] = pair
    return out


def _scope_attrs(used: set, scope_ids: dict) -> dict:
    """The attributes of the scope clusters a drawing may make: per phase, a scope's number ->
    its attribute list, for every scope an equation of that phase is in and their parents."""
    out: dict = {p: {} for p in PHASES}
    for phase, scope in used:
        for depth in range(1, len(scope) + 1):
            path, look = scope[:depth], SCOPE_LOOKS[phase]
            label = labels.plain(_SCOPE_LABELS[phase].format(path[-1]), "html")
            out[phase][str(scope_ids[path])] = attr_list({"label": label, "style": "rounded,filled",
                                                          "color": look[0], "fillcolor": look[2 - len(path) % 2],
                                                          "fontcolor": look[0], "fontsize": "10", "labeljust": "l"})
    return out


@contextlib.contextmanager
def graphviz_quiet():
    """Graphviz's complaints about edge routing would land in a widget's output area as noise;
    the drawing is complete."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RenderWarning)
        yield
