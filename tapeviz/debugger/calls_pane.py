"""The graph pane by call (the "calls" view, beside the neighbourhood "around the cursor"): the
program as the outline lists it, each call one node beside its pullback until opened
(``calls_drawing`` draws it). The cursor's chain of calls is opened by itself and its equation
(or the innermost drawn node holding it) framed as the current one; the user's opens and
closes (clicks in the graph and in the outline, ``TapeDebugger.open_call``) are kept on top of
it.

A drawing is made in two steps, so that a page with no kernel can make it too (``CallsSource``
in ``static/debugger.js``, the same text byte for byte): ``calls_tables.calls_data(model)``
gives, in one pass over the equations, the tables every drawing reads, as JSON (labels escaped
there); ``calls_drawing.calls_dot(data, shown, equations)`` writes the source of one drawing
from them, reading only what it draws (its levels' nodes and edges, an opened group's
window's). ``CallsPane`` keeps the open set (no tables needed: the outline opens and closes
calls in a session that never draws this view) and caches the drawing per open set: a step
that stays in it only moves the frame. ``CallsMode`` is what ``TapeDebugger`` gains.
"""
from __future__ import annotations

from collections import OrderedDict

from ..escaping import html_text
from ..renderer import RenderError, render
from .calls_drawing import Drawing, EquationNodes, loose_index
from .calls_tables import WINDOW, calls_data
from .dot import DOT
from .graph_pane import graphviz_quiet
from .navigation import NUMBERED, parse_target

DOT_CACHE = 16               # drawings (open sets) kept


# -- the pane -------------------------------------------------------------------------------------

class CallsPane:
    """The calls view of a ``DebugModel``: which calls are opened, and the drawing (``dot``).

    A call is named by its scope path (``("cell#17",)``, ``"cell#17/sig"``), a folded group by
    its key, the parent's path and the function's name (``("cell",)``). ``open(target)`` opens
    it and what holds it; ``close(target)`` closes it, even on the cursor's chain, which is
    otherwise opened by itself; ``opened`` is what the drawing shows opened."""

    def __init__(self, model):
        self.model = model
        self.user_opened: set = set()        # ("scope", path) or ("group", key)
        self.user_closed: set = set()
        self.version = 0                     # bumped by every open and close
        self._data = None
        self._data_of = None
        self._numbers: dict = {}             # ("scope", path) -> scope number, ("group", key) -> group number
        self._drawings: OrderedDict = OrderedDict()

    @property
    def data(self) -> dict:
        """``calls_data`` of the model, made on first use and again after checks ran (the
        nodes' check marks)."""
        m = self.model
        if self._data is None or self._data_of != m.checks_version:
            self._data, self._data_of = calls_data(m), m.checks_version
            self.equations = EquationNodes(m, self._data)
            self._loose = loose_index(self._data)
            self._drawings.clear()
            sc, gr = self._data["scopes"], self._data["groups"]
            paths = [()]
            for k in range(1, len(sc["parent"])):
                paths.append(paths[sc["parent"][k]] + (sc["call"][k],))
            self._paths = paths
            self._numbers = {("scope", p): k for k, p in enumerate(paths)}
            self._numbers.update({("group", tuple(key)): g for g, key in enumerate(gr["key"])})
        return self._data

    # -- the open set: (kind, path) pairs, checked against the scope tree (no tables needed) -
    def _checked(self, target) -> tuple[str, tuple]:
        """("scope", path) of a call, ("group", key) of a folded group; KeyError naming what is
        wrong."""
        path = parse_target(target)
        if isinstance(path, str):
            raise KeyError(f"{path!r} is an equation; open a call (a scope path, ('cell#17',)) or a folded "
                           "group (('cell',))")
        if path and self._folded(path[:-1], path[-1]):
            return "group", path
        self.model.nav.target(path)           # an unknown scope: its error names the calls there are
        return "scope", path

    def _folded(self, parent: tuple, name: str) -> bool:
        """Whether ``name`` was called twice or more in ``parent`` (the outline folds them)."""
        try:
            children = self.model.nav.tree.find(parent).children
        except KeyError:
            return False
        return sum(1 for c in children if (hit := NUMBERED.fullmatch(c.name)) and hit.group(1) == name) >= 2

    def _holders(self, kind: str, path: tuple) -> list[tuple]:
        """A call or group and the calls and groups holding it, outermost first."""
        out = []
        for d in range(1, len(path) + (kind == "scope")):
            hit = NUMBERED.fullmatch(path[d - 1])
            if hit and self._folded(path[:d - 1], hit.group(1)):
                out.append(("group", path[:d - 1] + (hit.group(1),)))
            out.append(("scope", path[:d]))
        return out + ([(kind, path)] if kind == "group" else [])

    def number(self, target) -> int:
        """The number a call (or a folded group) goes by in the drawing: its nodes' and
        clusters' names and SVG ids (``tvc_f17``, ``tvo_cf17``; a group's ``tvg_f0``)."""
        self.data
        return self._numbers[self._checked(target)]

    def path(self, key: tuple) -> tuple:
        """The path of a call (``("call", scope number)``) or group (``("group", number)``)."""
        kind, k = key
        return self._paths[k] if kind == "call" else tuple(self.data["groups"]["key"][k])

    def open(self, target) -> None:
        """Open a call or a group, and the calls and groups that hold it."""
        for entry in self._holders(*self._checked(target)):
            self.user_opened.add(entry)
            self.user_closed.discard(entry)
        self.version += 1

    def close(self, target) -> None:
        """Close a call or a group (its node stands for it again); the top level stays."""
        entry = self._checked(target)
        if entry == ("scope", ()):
            raise ValueError("the top level is always drawn: close one of its calls")
        self.user_opened.discard(entry)
        self.user_closed.add(entry)
        self.version += 1

    def chain(self) -> list:
        """The calls and groups holding the cursor's equation, innermost first."""
        sc = self.data["scopes"]
        c = self.data["eqScope"][self.model.step.start]
        out = []
        while c:
            out.append(("call", c))
            if sc["group"][c] >= 0:
                out.append(("group", sc["group"][c]))
            c = sc["parent"][c]
        return out

    def _keys(self, entries) -> set:
        return {("call" if kind == "scope" else "group", self._numbers[kind, p])
                for kind, p in entries if (kind, p) in self._numbers}

    def shown(self) -> dict:
        """What ``calls_dot`` draws now: the cursor's chain and the user's opens, less the
        user's closes; each opened group's window, at a multiple of a third of its width that
        holds its anchor (the cursor's call in it, else its first opened call) a third of the
        width from its edges: the cursor moving from call to call draws again every third call."""
        chain = self.chain()
        opened = self._keys(self.user_opened)
        keys = (set(chain) | opened) - self._keys(self.user_closed)
        calls = sorted(k for kind, k in keys if kind == "call")
        groups = sorted(k for kind, k in keys if kind == "group")
        sc, width = self.data["scopes"], WINDOW
        windows = {}
        for g in groups:
            anchor = next((sc["slot"][c] for kind, c in chain if kind == "call" and sc["group"][c] == g), None)
            if anchor is None:
                anchor = min((sc["slot"][c] for kind, c in opened if kind == "call" and sc["group"][c] == g),
                             default=0)
            a = max((anchor - width // 3) // (width // 3) * (width // 3), 0)
            windows[str(g)] = min(a, max(len(self.data["groups"]["calls"][g]) - width, 0))
        return {"calls": calls, "groups": groups, "windows": windows, "cursor": self.model.step.start}

    @property
    def opened(self) -> frozenset:
        """The calls (scope paths) and folded groups (keys) the drawing shows opened."""
        shown = self.shown()
        return frozenset([self.path(("call", k)) for k in shown["calls"] if k]
                         + [self.path(("group", g)) for g in shown["groups"]])

    def part(self) -> dict:
        """The user's opens and closes as the outline reads them: [kind, path] pairs, kind
        "scope" or "group" as its entries say."""
        def pairs(entries):
            return sorted([kind, list(p)] for kind, p in entries)
        return {"opened": pairs(self.user_opened), "closed": pairs(self.user_closed)}

    # -- drawing -----------------------------------------------------------------------------
    def dot(self) -> str:
        """The pane's Graphviz source at the cursor: drawn again only when the open set (or a
        window) changed; a step inside it frames another node."""
        shown = self.shown()
        key = (tuple(shown["calls"]), tuple(shown["groups"]), tuple(shown["windows"].items()))
        drawing = self._drawings.get(key)
        if drawing is None:
            drawing = self._drawings[key] = Drawing(self.data, shown, self.equations, self._loose)
            while len(self._drawings) > DOT_CACHE:
                self._drawings.popitem(last=False)
        drawing.cursor = shown["cursor"]
        return drawing.source()

    def svg(self) -> str:
        """The pane drawn by the kernel's Graphviz (for a page that may not run WebAssembly)."""
        try:
            with graphviz_quiet():
                text = DOT.svg(self.dot()) or render(self.dot()).decode()
        except RenderError as exc:
            return f'<pre class="tv-message">{html_text(exc)}</pre>'
        return text[text.find("<svg"):]

    def export(self, format: str, title: str) -> bytes:
        """The pane's drawing as a file's bytes (``title`` is the file's business: unused)."""
        source = self.dot()
        if format == "dot":
            return source.encode()
        with graphviz_quiet():
            return render(source, format)


# -- what the debugger gains ----------------------------------------------------------------------

GRAPH_VIEWS = ("around", "calls")


class CallsMode:
    """What ``TapeDebugger`` gains: the graph pane's views (``graph_view``), and the open set of
    the calls view (``open_call``, ``close_call``, ``opened``). It keeps ``graph`` (the
    neighbourhood's ``GraphPane``), ``calls`` (a ``CallsPane``) and ``_graph_view``."""

    def _start_calls(self) -> dict:
        """The calls pane (its tables made when first needed) and the view's actions for it."""
        self.calls = CallsPane(self.model)
        self._graph_view = "around"
        return {"graph_view": lambda msg: self._from_view(setattr, self, "graph_view", msg.get("value")),
                "open_call": lambda msg: self._from_view(self.open_call, self._call_in(msg)),
                "close_call": lambda msg: self._from_view(self.close_call, self._call_in(msg))}

    @property
    def graph_view(self) -> str:
        """What the graph pane draws: "around" (the cursor's neighbourhood, ``graph``) or
        "calls" (the program's calls, ``calls``: the cursor's chain of calls opened, each other
        call one node beside its pullback, opened on a click)."""
        return self._graph_view

    @graph_view.setter
    def graph_view(self, view: str) -> None:
        if view not in GRAPH_VIEWS:
            raise ValueError(f"graph_view={view!r}; choose one of {GRAPH_VIEWS}")
        self._graph_view = view
        self._refresh()

    def open_call(self, target) -> None:
        """Open a call in the calls view (and in the outline): its equations and calls are
        drawn; ``target`` a scope path (``("cell#17",)``, ``"cell#17/sig"``) or a folded group's
        key (``("cell",)``). What holds it opens too. KeyError for an unknown one."""
        self.calls.open(target)
        self._refresh()

    def close_call(self, target) -> None:
        """Close a call or a group: one node stands for it again, even on the cursor's chain
        (which the calls view otherwise opens by itself)."""
        self.calls.close(target)
        self._refresh()

    @property
    def opened(self) -> frozenset:
        """The calls (scope paths) and folded groups (keys) the calls view shows opened: the
        cursor's chain and the ones opened, less the ones closed."""
        return self.calls.opened

    def _pane(self):
        return self.calls if self._graph_view == "calls" else self.graph

    def _call_in(self, msg: dict):
        """The call a view's message names: a node's scope or group number (``call``,
        ``group``), or an outline entry's path."""
        if "call" in msg or "group" in msg:
            kind = "call" if "call" in msg else "group"
            return self.calls.path((kind, int(msg[kind])))
        return msg.get("path")
