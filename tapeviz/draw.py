"""Drawing the graph model with Graphviz: forward on the left, backward (or tangent) on the right.

In the joint view the forward pass runs down the left column and the backward pass runs *up* the
right one, so each pullback block (a cluster labelled with its rule) sits beside the forward
equation it differentiates (``newrank`` lets a rank constraint span the two clusters) and the
gradients come out at the top, level with the parameters. Residual edges (forward values the
backward pass reads) cross the middle dashed and do not constrain the layout. An equation with
one result is drawn as one node with its variable; literal operands are written inside it.
A forward-mode tape (``ad.linearize``) draws its tangent phase in a column of its own, running
down beside the forward one, each pushforward block a cluster level with the primal equation it
pushes forward.

Scopes (``Eqn.scope``, the user's calls) are nested clusters inside each column, one level per
path component: the forward equations of ``layer#1`` in a cluster labelled ``layer#1``, its
backward equations (its pullback blocks, inside it) in one labelled ``pullback of layer#1``,
its pushforward blocks in ``pushforward of layer#1``. A scope's name is the user's text: it is
only ever a label, escaped as labels are; the clusters' ids are numbers.

What the nodes say and their colours are in ``labels``. The same input gives byte-identical
DOT: everything is emitted in tape order and nothing depends on ``id()`` or set order.
"""
from __future__ import annotations

import graphviz
import networkx as nx

from . import labels as lb
from .escaping import dot_text, dot_value
from .grouping import BY, collapse as collapse_graph
from .graph import (BACKWARD_BLOCK, EQUATION_KINDS, PUSHFORWARD_BLOCK, gc_paused, neighbourhood,
                    resolve_node, to_networkx)

VIEWS = ("joint", "forward", "backward", "tangent")
CLUSTER_COLOURS = {"forward": "#fcfcfd", "backward": "#fdfbff", "tangent": "#f5feff"}
SCOPE_LOOKS = {   # phase -> (frame and label colour, fill at odd depth, fill at even depth)
    "forward": ("#475569", "#f1f5f9", "#fcfcfd"), "backward": ("#6d28d9", "#f3effe", "#fdfbff"),
    "tangent": ("#0e7490", "#e6fafc", "#f5feff")}
FONT = "Helvetica,Arial,sans-serif"


def to_graphviz(obj, view: str = "joint", *, window=None, collapse=False, depth: int = 1, current=None,
                tint=(), values=None, checks=None, legend: bool = True, title: str | None = None,
                labels: str = "html", scopes: bool | None = None) -> graphviz.Digraph:
    """A ``graphviz.Digraph`` of a tape, gradient tape or graph from ``to_networkx``.

    view: "joint" (forward left, backward or tangent right), "forward", "backward" or "tangent".
    window: ``(node, k)`` or ``"node:k"``: only the nodes within k steps of a node ("%7").
    collapse: True (or "rule") for one node per rule instance, repeated identical instances
        folded with a count; "source" or "scope" to group as ``tapeviz.collapse(by=...)`` does.
    depth: the scope depth ``collapse="scope"`` groups at (``tapeviz.collapse``'s ``depth``).
    scopes: draw the user's calls (``Eqn.scope``) as nested clusters; default: when a drawn node
        has a scope.
    current: a node to frame as the current step; tint: nodes to tint (an iterable of names,
        or a mapping from name to colour).
    values, checks: attached when ``obj`` is a tape (see ``to_networkx``).
    labels: "html" (tables with a coloured header per primitive) or "text" (for Graphviz builds
        without HTML-like labels, such as the WebAssembly one).

    A widget redraws a step cheaply from a graph built once:
    ``to_graphviz(graph, window=("%9", 2), current="%9", tint={"%7", "%8"})``.

    >>> dot = tapeviz.to_graphviz(ad.trace(lambda x: np.sum(np.sin(x)), np.ones(3)))
    >>> dot.source.splitlines()[0], '"%0" -> "%1"' in dot.source      # x flows into sin
    ('digraph tape {', True)
    """
    graph, nodes = scene(obj, view, window=window, collapse=collapse, depth=depth, values=values, checks=checks)
    return draw(graph, nodes, view, current=current, tint=tint, legend=legend, title=title,
                labels=labels, scopes=scopes)


def scene(obj, view: str = "joint", *, window=None, collapse=False, depth: int = 1, values=None,
          checks=None) -> tuple[nx.MultiDiGraph, list[str]]:
    """The graph a drawing reads (collapsed if asked) and the nodes it shows, in tape order."""
    if view not in VIEWS:
        raise ValueError(f"view={view!r}; choose one of {VIEWS}")
    graph = as_graph(obj, values=values, checks=checks)
    if view == "backward" and not graph.graph["gradient"]:
        raise ValueError("this tape has no backward section to draw; make a gradient tape with "
                         "ad.grad_tape(f, *args), or draw view='forward'")
    if view == "tangent" and not graph.graph.get("pushforwards"):
        raise ValueError("this tape has no tangent section to draw; make one with ad.linearize(f, *args) "
                         "(its f_jvp.tape), or draw view='forward'")
    if collapse is not False and collapse is not None:
        if collapse is not True and collapse not in BY:
            raise ValueError(f"collapse={collapse!r}; pass True (by rule) or one of {BY}")
        graph = collapse_graph(graph, by="rule" if collapse is True else collapse, depth=depth)
    return graph, select(graph, view, window)


@gc_paused
def draw(graph, nodes: list[str], view: str = "joint", *, current=None, tint=(), legend: bool = True,
         title: str | None = None, labels: str = "html", scopes: bool | None = None) -> graphviz.Digraph:
    """Draw the given nodes of a (detail or collapsed) graph; see ``to_graphviz``."""
    if labels not in lb.LABELS:
        raise ValueError(f"labels={labels!r}; choose one of {lb.LABELS}")
    return _Canvas(graph, nodes, view, labels, scopes).draw(current=current, tint=tint, legend=legend,
                                                     title=title)


def as_graph(obj, *, values=None, checks=None) -> nx.MultiDiGraph:
    if isinstance(obj, nx.Graph):
        if values is not None or checks is not None:
            raise TypeError("this graph is built already: pass values= and checks= to "
                            "to_networkx(tape, ...), or call tapeviz.annotate(graph, report)")
        return obj
    return to_networkx(obj, values=values, checks=checks)


def parse_window(window) -> tuple[str, int]:
    """``("%7", 2)`` from ``("%7", 2)`` or ``"%7:2"``."""
    if isinstance(window, str):
        node, sep, k = window.rpartition(":")
        if not sep or not k.strip().isdigit():
            raise ValueError(f"window={window!r}; write NODE:K, e.g. '%12:2' (the nodes within 2 "
                             "steps of %12)")
        return node.strip(), int(k)
    node, k = window
    return node, int(k)


def _in_view(d: dict, view: str) -> bool:
    if view == "joint":
        return True
    if view == "forward":
        return d["phase"] == "forward"
    return d["phase"] == view or bool(d.get("residual"))


def select(graph, view: str, window=None) -> list[str]:
    """The nodes a view (and window) draws, in tape order."""
    if window is None:
        return [n for n, d in graph.nodes(data=True) if _in_view(d, view)]
    node, k = parse_window(window)
    return [n for n in neighbourhood(graph, node, k) if _in_view(graph.nodes[n], view)]


class _Canvas:
    """One drawing: which model node is which DOT node, in which cluster, and what the legend
    must explain. Reads only the drawn nodes and their edges, so a window of a huge graph is
    as cheap as a small graph. Writes DOT statements itself: the ``graphviz`` package's
    per-statement quoting costs more than the whole model for ten thousand equations."""

    def __init__(self, graph, nodes: list[str], view: str, labels: str, scopes: bool | None = None):
        self.graph = graph
        self.nodes = nodes
        self.view = view
        self.labels = labels
        self.upward = view == "joint" and graph.graph["gradient"]
        self.collapsed = graph.graph.get("group_of") is not None
        attrs = graph.nodes
        self.data = {n: attrs[n] for n in nodes}     # the drawn nodes' attributes, looked up once
        self.scopes = (any(d.get("scope") for d in self.data.values()) if scopes is None else bool(scopes))
        self.scope_clusters: dict = {}               # (phase, scope) -> its cluster's name
        self.ids: dict = {}                          # model node -> DOT node
        for n, d in self.data.items():
            if d["kind"] == "constant":
                continue
            if d["kind"] in EQUATION_KINDS and len(d["outputs"]) == 1 and d["outputs"][0] in self.data:
                self.ids[n] = d["outputs"][0]        # drawn together with its only result
            else:
                self.ids[n] = n
        self.clusters: dict = {None: (None, {}, [])}  # name -> (parent, attributes, statements)
        self.edges: list = []
        self.edge_attrs: dict = {}                   # (kind, backward, carried) -> attribute text
        self.kinds: set = set()
        self.edge_kinds: set = set()
        self.primitives: set = set()

    def draw(self, *, current, tint, legend: bool, title) -> graphviz.Digraph:
        marks = self._marks(current, tint)
        for n in self.nodes:
            if n in self.ids and not self._merged_away(n):
                self._node(n, marks.get(self.ids[n], {}))
        for n in self.nodes:
            self._edges(n)
        body = []
        children: dict = {}
        for name, (parent, _, _) in self.clusters.items():
            children.setdefault(parent, []).append(name)
        for name in ("cluster_forward", "cluster_tangent", "cluster_backward"):     # forward first: on the left
            if name in self.clusters:
                self._emit(name, children, body, "\t")
        body += self.clusters[None][2]
        body += self.edges                 # at the top level: an edge never pulls a node into a cluster
        body += [f'\t{{rank=same; "{f}"; "{b}";}}\n' for f, b in self._aligned()]
        graph_attr = {"rankdir": "TB", "newrank": "true", "nodesep": "0.3", "ranksep": "0.3",
                      "fontname": FONT, "fontsize": "11"}
        if legend or title:
            graph_attr.update(label=lb.legend(title, self.kinds if legend else set(),
                                              self.edge_kinds if legend else set(),
                                              self.primitives if legend else set(), self.labels),
                              labelloc="t", labeljust="l")
        return graphviz.Digraph("tape", graph_attr=graph_attr, body=body,
                                node_attr={"shape": "plain", "fontname": FONT, "fontsize": "10"},
                                edge_attr={"arrowsize": "0.6", "color": "#6b7280"})

    def _emit(self, name: str, children: dict, body: list, indent: str):
        """A cluster, its statements, then the clusters inside it (scopes, nested per path
        component, and pullback blocks), in the order they were first used."""
        _, attrs, statements = self.clusters[name]
        body.append(f'{indent}subgraph "{name}" {{\n{indent}\tgraph {_attr_list(attrs)}\n')
        body.extend(indent + stmt for stmt in statements)
        for child in children.get(name, ()):
            self._emit(child, children, body, indent + "\t")
        body.append(f"{indent}}}\n")

    def _merged_away(self, n: str) -> bool:
        producer = self.data[n].get("producer")
        return producer is not None and self.ids.get(producer) == n

    def _marks(self, current, tint) -> dict:
        marks: dict = {}
        colours = tint if isinstance(tint, dict) else dict.fromkeys(tint, lb.TINT)
        for ref, colour in colours.items():
            dot_id = self._dot_id(ref)
            if dot_id is not None:
                marks.setdefault(dot_id, {})["tint"] = colour
        if current is not None:
            dot_id = self._dot_id(current)
            if dot_id is not None:
                marks.setdefault(dot_id, {})["current"] = True
        return marks

    def _dot_id(self, ref):
        """The DOT node showing a model node (None when it is not drawn)."""
        try:
            node = resolve_node(self.graph, ref)
        except KeyError:
            return None
        if node not in self.ids:
            node = self.graph.nodes[node].get("producer") or node
        return self.ids.get(node)

    # -- nodes ---------------------------------------------------------------------------
    def _node(self, n: str, mark: dict):
        g = self.graph
        d = self.data[n]
        out = None
        if self.collapsed:
            rows, style = lb.group_rows(d), lb.group_style(d)
            tooltip = (f"{d['name'] or 'top level'}: {d['provenance']}" if d["kind"] == "scope"
                       else d.get("provenance") or d.get("rule") or d["name"])
        elif d["kind"] in EQUATION_KINDS:
            out = self.data[self.ids[n]] if self.ids[n] != n else None
            rows, style = lb.equation_rows(d, out), lb.style_of(d if d["kind"] == "guard" else out or d)
            scope = d.get("scope")
            tooltip = "\n".join(filter(None, [d["provenance"], scope and "in " + "/".join(scope), d["source"],
                                              d["source_line"]]))
        else:
            producer = g.nodes[d["producer"]] if d.get("producer") else None
            rows, style, tooltip = lb.variable_rows(d, producer), lb.style_of(d), d["name"]
        failures = d.get("failures", []) + (out or {}).get("failures", [])
        failed = bool(failures)
        self.kinds.add(style)
        if failed:
            self.kinds.add("failed")
            tooltip = "\n".join([tooltip] + [f"{name}: {message}" for name, message in failures])
        if mark.get("current"):
            self.kinds.add("current")
        if rows[0].colour and rows[0].role == "head":     # a primitive's colour (a call's is not in the legend)
            self.primitives.add(rows[0].text)
        attrs = lb.node_attrs(rows, style, failed=failed, current=bool(mark.get("current")),
                              tint=mark.get("tint"), labels=self.labels)
        attrs["tooltip"] = dot_text(tooltip)
        # Graphviz reads names starting with "%" as its own anonymous ids and renumbers them in
        # the SVG's <title>s; the element id keeps the tape's name (for links, clicks, tests)
        attrs["id"] = f"tvn_{self.ids[n]}"
        self._cluster_of(n).append(f'\t"{self.ids[n]}" {_attr_list(attrs)}\n')

    def _cluster_of(self, n: str) -> list:
        d = self.data[n]
        phase = d["phase"]
        if self.view in ("backward", "tangent") and phase == "forward":
            return self.clusters[None][2]    # residuals: beside what reads them, in no cluster
        if not self.collapsed and d["kind"] not in EQUATION_KINDS and d.get("producer") in self.ids:
            d = self.data[d["producer"]]
        parent = self._scope_cluster(phase, d.get("scope", ()) if self.scopes else ())
        if not self.collapsed and d["kind"] in EQUATION_KINDS and d["of"] is not None:
            if phase == "backward" and d["origin"] in BACKWARD_BLOCK:
                return self._cluster(f"cluster_pullback_{d['of']}", f"pullback of {d['of']} ({d['rule']})", parent)
            if phase == "tangent" and d["origin"] in PUSHFORWARD_BLOCK:
                return self._cluster(f"cluster_pushforward_{d['of']}", f"pushforward of {d['of']} ({d['rule']})",
                                     parent)
            if phase == "forward" and len(self.graph.graph["instances"].get(d["of"], ())) > 1:
                return self._cluster(f"cluster_rule_{d['of']}", f"rule {d['rule']} \u2192 {d['of']}", parent)
        return self.clusters[parent][2]

    def _top(self, phase: str) -> str:
        """The column of a phase, made on first use."""
        name = f"cluster_{phase}"
        if name not in self.clusters:
            self.clusters[name] = (None, {"label": lb.plain(phase, self.labels, bold=True), "style": "rounded",
                                          "color": "#cbd5e1", "fontsize": "12", "labeljust": "l",
                                          "bgcolor": CLUSTER_COLOURS[phase]}, [])
        return name

    def _scope_cluster(self, phase: str, scope: tuple) -> str:
        """The cluster of a scope in a phase's column, inside those of its parents (made on
        first use, numbered in that order: a name is the user's text, never part of an id)."""
        if not scope:
            return self._top(phase)
        name = self.scope_clusters.get((phase, scope))
        if name is None:
            parent = self._scope_cluster(phase, scope[:-1])
            name = self.scope_clusters[phase, scope] = f"cluster_scope_{phase}_{len(self.scope_clusters)}"
            label = {"forward": "{}", "backward": "pullback of {}", "tangent": "pushforward of {}"}[phase]
            look = SCOPE_LOOKS[phase]
            self.clusters[name] = (parent, {"label": lb.plain(label.format(scope[-1]), self.labels),
                                            "style": "rounded,filled", "color": look[0],
                                            "fillcolor": look[2 - len(scope) % 2], "fontcolor": look[0],
                                            "fontsize": "10", "labeljust": "l"}, [])
        return name

    def _cluster(self, name: str, label: str, parent: str) -> list:
        """The statements of a block's cluster inside ``parent``, made on first use."""
        if name not in self.clusters:
            tangent = parent == "cluster_tangent" or parent.startswith("cluster_scope_tangent")
            self.clusters[name] = (parent, {"label": lb.plain(label, self.labels), "style": "rounded,dashed",
                                            "color": "#22d3ee" if tangent else "#a78bfa", "fontsize": "9",
                                            "labeljust": "l"}, [])
        return self.clusters[name][2]

    # -- edges ---------------------------------------------------------------------------
    def _edges(self, n: str):
        g = self.graph
        if not self.collapsed and self.data[n]["kind"] not in EQUATION_KINDS:
            return
        for u, e in g.pred[n].items():
            if u in self.ids:
                self._edge(u, n, e["kind"], len(e.get("vars", ())))
        if not self.collapsed and self.ids.get(n) == n:      # results drawn apart
            for v in g.succ[n]:
                if v in self.ids:
                    self._edge(n, v, "data", 0)

    def _edge(self, u: str, v: str, kind: str, carried: int):
        tail, head = self.ids[u], self.ids[v]
        backward = self.data[v]["phase"] == "backward" and kind != "residual"
        if kind == "data" and self.data[v]["phase"] != "forward":
            kind = self.data[v]["phase"]
        key = (kind, backward, carried if carried > 1 else 0)
        attrs = self.edge_attrs.get(key)
        if attrs is None:                     # a handful of styles: each formatted once
            self.edge_kinds.add(kind)
            d = dict(lb.EDGES[kind][0])
            if self.view in ("backward", "tangent"):
                d.pop("constraint", None)     # residuals sit next to what reads them
            if key[2]:
                d.update(label=str(carried), fontsize="8")
            if backward and self.upward:      # the backward column runs upwards
                d["dir"] = "back"
            attrs = self.edge_attrs[key] = " " + _attr_list(d) if d else ""
        if backward and self.upward:
            tail, head = head, tail
        self.edges.append(f'\t"{tail}" -> "{head}"{attrs}\n')

    def _aligned(self) -> list[tuple[str, str]]:
        """(forward node, pullback or pushforward node) pairs to put on one rank."""
        g = self.graph
        if self.view != "joint":
            return []
        if self.collapsed:
            pairs = g.graph["align"]
        else:
            blocks = {**g.graph.get("pushforwards", {}), **(g.graph["blocks"] if self.upward else {})}
            origins = PUSHFORWARD_BLOCK + (BACKWARD_BLOCK if self.upward else ())
            pairs = [(d["of"], n) for n, d in self.data.items()
                     if d["kind"] in EQUATION_KINDS and d["origin"] in origins and blocks[d["of"]][0] == n]
        return [(self.ids[f], self.ids[b]) for f, b in pairs if f in self.ids and b in self.ids]


def _attr_list(attrs: dict) -> str:
    """``[k=v ...]``, each value written by ``dot_value``: HTML-like labels as they are, strings
    quoted."""
    return "[" + " ".join(f"{k}={dot_value(v)}" for k, v in attrs.items()) + "]"
