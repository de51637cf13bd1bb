"""One drawing of the graph pane's calls view (``calls_pane``), the Graphviz source written from
the tables (``calls_tables.calls_data``) by a pure function, ``calls_dot``, that
``static/debugger.js`` ports byte for byte (``CallsSource``). In the forward column each call of
the user's that is not opened is one node (its name, equations, the residual bytes it keeps,
its worst check), beside it in the backward column its pullback (in forward mode, in the
tangent column its pushforward); an opened call is a cluster holding its own level: its own
equations, drawn as the neighbourhood view draws them, and its calls. Calls the outline folds
(``cell ×40``) are one node until the group is opened; an opened group draws a window of
``WINDOW`` calls (around the cursor's call, else its first opened one), the calls before and
after it summed up in a node each, so a loop of 3,334 calls never reaches Graphviz whole.

Edges are the data flow between what is drawn: an operand made inside a closed call comes from
that call's node, one edge per pair of nodes and kind. No edge runs from one column to another:
a forward value a pullback reads (a residual) is drawn as a stub beside its reader (its name
only, in its look, the edge dashed), and not at all between two calls' nodes (a pullback's
node says how much its call keeps); that keeps the forward column on the left. The tape's
inputs are drawn where they are read, but a value read by more than a few drawn nodes (an
RNN's weights) is drawn as a stub beside each of its readers in another cluster, as Netron
draws a layer's weights: no long edges cross the drawing. An input read by one closed call
alone (an imported network's weights, each read by its layer) is not drawn at all: the call's
node says how many it reads (``reads 4 parameters``), its pullback's how many gradients it
gives, and the sums that make those gradients out of the pullback's parts are drawn in it.
"""
from __future__ import annotations

from .calls_tables import EDGE_KINDS, LETTERS, NODE_STYLES
from .graph_pane import PHASES, STYLES, equation_look, label_cells

CLOSED = ("call", "group", "more")     # the kinds of node standing for calls


# -- one drawing ----------------------------------------------------------------------------------

def calls_dot(data: dict, shown: dict, equations) -> str:
    """The Graphviz source of one drawing: ``shown`` says what is opened (``calls``: scope
    numbers, the top level always; ``groups``: group numbers; ``windows``: an opened group's
    number, as a string -> the slot of its first drawn call) and ``cursor``, the equation
    framed as the current one (or the drawn node holding it). ``equations`` names and writes
    the equations' nodes (``EquationNodes``)."""
    return Drawing(data, shown, equations, loose_index(data)).source()


def loose_index(data: dict) -> dict:
    """Equation -> (group, slot) of the equations groups took from their level."""
    gr = data["groups"]
    return {x: (g, slot) for g, xs in enumerate(gr["loose"]) for x, slot in zip(xs, gr["looseSlot"][g])}


class Drawing:
    """The nodes, clusters and edges of one open set, every node's statement kept apart so that
    the frame of the current node (``cursor``'s) moves without drawing again (``source``)."""

    def __init__(self, data: dict, shown: dict, equations, loose: dict):
        self.d, self.sc, self.gr = data, data["scopes"], data["groups"]
        self.calls = set(shown["calls"]) | {0}
        self.groups = set(shown["groups"])
        self.windows = {int(g): a for g, a in shown["windows"].items()}
        self.cursor = shown["cursor"]
        self.equations = equations
        self.loose = loose
        self.clusters: dict = {}             # name -> [parent, attributes, statements], in the order made
        self.nodes: dict = {}                # node name -> (cluster name, position in its statements, kind, ...)
        self.ranks: list = []
        self.heads: dict = {}                # cluster -> its nodes written first
        self.levels: list = []               # ("level", scope), ("window", group): whose edges to draw
        self.inputs: set = set()
        self.folded: dict = {}               # a node drawn in a closed call's -> that node
        self.reads: dict = {}                # (kind, number) of a closed call -> the inputs drawn in it
        self._visit(0)
        self.edges = self._edges()
        for j in sorted(self.inputs):        # the tape's inputs, first in the column of their phase
            name, *_, phase, _ = data["inputs"][j]
            self._node(self._cluster(0, phase), name, ("input", j), first=True)

    # -- structure ---------------------------------------------------------------------------
    def _cluster(self, k: int, phase: int, group: bool = False) -> str:
        """The cluster of opened call ``k`` (or opened group ``k``) in a phase's column, made
        (with the clusters around it) when first needed."""
        letter = LETTERS[phase]
        sc, gr = self.sc, self.gr
        if group:
            name, outer = f"cluster_group_{letter}{k}", self._cluster(gr["parent"][k], phase)
            attrs = self._attrs(gr["cluster"][k][phase], phase, sc["depth"][gr["parent"][k]] + 1, f"g{letter}{k}")
        elif k == 0:
            name, attrs, outer = f"cluster_{PHASES[phase]}", self.d["tops"][PHASES[phase]], None
        else:
            g = sc["group"][k]
            name, outer = f"cluster_call_{letter}{k}", self._cluster(g, phase, True) if g >= 0 else \
                self._cluster(sc["parent"][k], phase)
            attrs = self._attrs(sc["cluster"][k][phase], phase, sc["depth"][k], f"c{letter}{k}")
        if name not in self.clusters:
            self.clusters[name] = [outer, attrs, []]
        return name

    def _attrs(self, label: str, phase: int, depth: int, element: str) -> str:
        """An opened call's (or group's) cluster attributes: its SVG id (``tvo_`` and the
        kind, "c" or "g", the phase's letter and its number) is what a click on its title
        closes."""
        return (f"[label={label} {self.d['clusterLooks'][phase][depth % 2]} tooltip=\"{self.d['closeTip']}\" "
                f'id="tvo_{element}"]')

    def _node(self, cluster: str, name: str, what: tuple, first: bool = False) -> None:
        """A node's place in its cluster's statements (written by ``source``); ``first``: before
        the others (the inputs, placed once the edges found them)."""
        statements = self.clusters[cluster][2]
        if first:
            self.heads.setdefault(cluster, []).append(name)
        self.nodes[name] = (cluster, len(statements), what)
        statements.append(None)

    def _visit(self, k: int) -> None:
        """Opened scope ``k``'s level: its own equations and its calls, merged in tape order."""
        self.levels.append(("level", k))
        sc, gr = self.sc, self.gr
        own, items = sc["own"][k], sc["items"][k]
        i = j = 0
        while i < len(own) or j < len(items):
            item = items[j] if j < len(items) else None
            at = None if item is None else sc["first"][item] if item >= 0 else gr["first"][-1 - item]
            if item is None or (i < len(own) and own[i] < at):
                e = own[i]
                self._node(self._cluster(k, self.d["eqPhase"][e]), self.equations.name(e), ("eq", e))
                i += 1
                continue
            j += 1
            if item >= 0:
                self._call(item)
            elif -1 - item in self.groups:
                self._group(-1 - item)
            else:
                g = -1 - item
                self._closed("group", g, gr["count"][g], lambda p, g=g: self._cluster(gr["parent"][g], p))

    def _call(self, c: int) -> None:
        if c in self.calls:
            self._visit(c)
            return
        g = self.sc["group"][c]
        outer = (lambda p: self._cluster(g, p, True)) if g >= 0 else (lambda p: self._cluster(self.sc["parent"][c], p))
        self._closed("call", c, self.sc["count"][c], outer)

    def _closed(self, kind: str, k: int, counts: list, cluster) -> None:
        """One node per phase for a closed call or group, level with each other."""
        names = []
        for p, n in enumerate(counts):
            if n:
                name = f"{kind}/{LETTERS[p]}/{k}"
                self._node(cluster(p), name, (kind, k, p))
                names.append(name)
        if len(names) > 1:
            self.ranks.append(names)

    def _group(self, g: int) -> None:
        """An opened group: the calls of its window, the others summed up before and after."""
        self.levels.append(("window", g))
        calls, counts = self.gr["calls"][g], self.gr["count"][g]
        a, b = self.window(g)
        between: dict = {}
        for x, slot in zip(self.gr["loose"][g], self.gr["looseSlot"][g]):
            if a <= slot < b:
                between.setdefault(slot, []).append(x)
        for side, (lo, hi) in enumerate(((0, a), (b, len(calls)))):
            if side == 1:
                for slot in range(a, b):
                    for x in between.get(slot, ()):
                        self._node(self._cluster(g, self.d["eqPhase"][x], True), self.equations.name(x), ("eq", x))
                    self._call(calls[slot])
            if lo < hi:
                self._closed("more", f"{g}/{side}", counts, lambda p: self._cluster(g, p, True))

    def window(self, g: int) -> tuple[int, int]:
        calls = self.gr["calls"][g]
        a = min(max(self.windows.get(g, 0), 0), max(len(calls) - self.d["window"], 0))
        return a, min(a + self.d["window"], len(calls))

    # -- edges -------------------------------------------------------------------------------
    def holder(self, x: int) -> str:
        """The drawn node that stands for equation (or, below 0, input) ``x``."""
        if x < 0:
            return self.d["inputs"][-1 - x][0]
        sc = self.sc
        s, phase = self.d["eqScope"][x], self.d["eqPhase"][x]
        chain = [s]
        while chain[-1]:
            chain.append(sc["parent"][chain[-1]])
        for c in reversed(chain[:-1]):       # from the outermost call in
            g = sc["group"][c]
            if g >= 0:
                if g not in self.groups:
                    return f"group/{LETTERS[phase]}/{g}"
                a, b = self.window(g)
                if not a <= sc["slot"][c] < b:
                    return f"more/{LETTERS[phase]}/{g}/{int(sc['slot'][c] >= b)}"
            if c not in self.calls:
                return f"call/{LETTERS[phase]}/{c}"
        taken = self.loose.get(x)
        if taken is not None:
            g, slot = taken
            if g not in self.groups:
                return f"group/{LETTERS[phase]}/{g}"
            a, b = self.window(g)
            if not a <= slot < b:
                return f"more/{LETTERS[phase]}/{g}/{int(slot >= b)}"
        return self.equations.name(x)

    def _edges(self) -> list[str]:
        """The edges of the drawn levels and of the opened groups' windows, each pair of nodes
        and kind once, in the order drawn. No edge runs from one column to another (so Graphviz
        keeps them in their order, the forward one on the left): a residual (a forward value a
        pullback reads) between two calls' nodes is left out (the pullback's label says how
        much it reads), any other is drawn from a stub of the value beside its reader
        (``_stub``); so is a value read by more than ``stubReaders`` drawn nodes, at each
        reader in another cluster than its own."""
        flows: dict = {}                     # (tail, head, kind, backward) -> the tail's equation or input
        for kind, k in self.levels:
            if kind == "level":
                tables = [self.sc["edges"][k]]
            else:
                a, b = self.window(k)
                tables = self.gr["edges"][k][a:b]
            for flat in tables:
                self._flows_of(flat, flows)
        flows = self._fold(flows)
        readers: dict = {}
        for tail, head, _, _ in flows:
            readers.setdefault(tail, set()).add(head)
        out, stubs = [], {}
        for (tail, head, kind, backward), x in flows.items():
            if kind == "residual" or (len(readers[tail]) > self.d["stubReaders"] and self._apart(tail, x, head)):
                if (tail, head) not in stubs:
                    stubs[tail, head] = self._stub(x, head, len(stubs))
                tail = stubs[tail, head]
            elif x < 0:
                self.inputs.add(-1 - x)
            if backward and self.d["upward"]:
                tail, head = head, tail
            out.append(f'\t"{tail}" -> "{head}"{self.d["edges"][kind][int(backward)]}\n')
        return out

    def _flows_of(self, flat: list, flows: dict) -> None:
        phases = self.d["eqPhase"]
        for n in range(0, len(flat), 3):
            tail, head = self.holder(flat[n]), self.holder(flat[n + 1])
            if tail == head:
                continue
            phase = PHASES[phases[flat[n + 1]]]
            kind = EDGE_KINDS[flat[n + 2]]
            if kind == "residual" and self._closed_node(tail) and self._closed_node(head):
                continue
            backward = phase == "backward" and kind != "residual"
            if kind == "data" and phase != "forward":
                kind = phase
            flows.setdefault((tail, head, kind, backward), flat[n])

    def _fold(self, flows: dict) -> dict:
        """The flows, without the inputs whose every reader is a node of one closed call (and
        that pass their checks): each is drawn in that call's nodes, and so are the sums of its
        gradient drawn at a level (``sums``), in the node of their phase (the pullback's)."""
        readers: dict = {}
        for (_, head, _, _), x in flows.items():
            if x < 0:
                readers.setdefault(-1 - x, set()).add(self.nodes[head][2][:2])
        inputs = self.d["inputs"]
        for j, owners in readers.items():
            kind, k = next(iter(owners))
            target = f"{kind}/{LETTERS[inputs[j][5]]}/{k}"
            if len(owners) > 1 or kind not in CLOSED or inputs[j][3] or target not in self.nodes:
                continue
            self.folded[inputs[j][0]] = target
            self.reads.setdefault((kind, k), []).append(j)
            for x in self.d["sums"][j]:          # those drawn as nodes of their own
                name, into = self.equations.name(x), f"{kind}/{LETTERS[self.d['eqPhase'][x]]}/{k}"
                node = self.nodes.get(name)
                if node is not None and node[2] == ("eq", x) and into in self.nodes:
                    self.folded[name] = into
        if not self.folded:
            return flows
        out: dict = {}
        for (tail, head, kind, backward), x in flows.items():
            tail, head = self.folded.get(tail, tail), self.folded.get(head, head)
            if tail != head and not (x < 0 and inputs[-1 - x][0] in self.folded):
                out.setdefault((tail, head, kind, backward), x)
        return out

    def _closed_node(self, name: str) -> bool:
        node = self.nodes.get(name)
        return node is not None and node[2][0] in CLOSED

    def _apart(self, tail: str, x: int, head: str) -> bool:
        """Whether the edge from ``tail`` (an input's node or equation ``x``'s) to ``head``
        leaves its cluster."""
        if x < 0:
            cluster = f"cluster_{PHASES[self.d['inputs'][-1 - x][5]]}"
        elif self.nodes[tail][2][0] == "eq":
            cluster = self.nodes[tail][0]
        else:
            return False                     # a call's node: drawn once
        return cluster != self.nodes[head][0]

    def _stub(self, x: int, head: str, n: int) -> str:
        """The node of input (or equation) ``x``'s value beside ``head``, one of its readers: its
        name only, in its look, level with the reader, in its cluster."""
        name = f"stub/{self.value(x)}/{head}"
        self._node(self.nodes[head][0], name, ("stub", x, n))
        self.ranks.append([name, head])
        return name

    def value(self, x: int) -> str:
        """The name of input (or equation) ``x``'s value (an equation's first)."""
        return self.d["inputs"][-1 - x][0] if x < 0 else self.equations.name(x).removeprefix("eq/")

    # -- text --------------------------------------------------------------------------------
    def source(self) -> str:
        """The text, the node holding the cursor's equation framed."""
        current = self.holder(self.cursor)
        current = self.folded.get(current, current)
        for name, (cluster, at, what) in self.nodes.items():
            self.clusters[cluster][2][at] = "" if name in self.folded else self.statement(name, what, name == current)
        children: dict = {}
        for name, (parent, _, _) in self.clusters.items():
            children.setdefault(parent, []).append(name)
        body = [self.d["head"]]

        def emit(name: str, indent: str) -> None:
            _, attrs, statements = self.clusters[name]
            n = len(self.heads.get(name, ()))
            if n:
                statements = statements[-n:] + statements[:-n]
            body.append(f'{indent}subgraph "{name}" {{\n{indent}\tgraph {attrs}\n')
            body.extend(indent + s for s in statements if s)
            for child in children.get(name, ()):
                emit(child, indent + "\t")
            body.append(f"{indent}}}\n")
        for name in ("cluster_forward", "cluster_tangent", "cluster_backward"):
            if name in self.clusters:
                emit(name, "\t")
        body += self.edges
        body += ["\t{rank=same; " + " ".join(f'"{n}";' for n in names) + "}\n" for names in self.ranks]
        return "".join(body) + "}\n"

    def statement(self, name: str, what: tuple, current: bool) -> str:
        kind = what[0]
        if kind == "eq":
            return self.equations.statement(what[1], current)
        if kind == "input":
            _, cells, style, failed, tip, _, _ = self.d["inputs"][what[1]]
            return node_line(name, label(self.d, cells, style, failed, current), tip, f"tvn_{name}", current)
        if kind == "stub":
            x, n = what[1], what[2]
            if x < 0:
                _, _, style, failed, tip, _, cells = self.d["inputs"][-1 - x]
            else:
                style, failed, tip = self.equations.look(x)[1:]
                cells = self.value(x).join(self.d["stubRow"])
            return node_line(name, label(self.d, cells, style, failed, current), tip, f"tvu_{n}_{self.value(x)}",
                             current)
        k, phase = what[1], what[2]
        style = STYLES.index(NODE_STYLES[phase])
        if kind == "more":
            g, side = (int(x) for x in k.split("/"))
            calls = self.gr["calls"][g]
            a, b = self.window(g)
            lo, hi = (0, a) if side == 0 else (b, len(calls))
            parts = self.d["summary"][phase]
            names = self.sc["name"]
            cells = f"{parts[0]}{hi - lo}{parts[1]}{names[calls[lo]]}{parts[2]}{names[calls[hi - 1]]}{parts[3]}"
            return node_line(name, label(self.d, cells, style, 0, current), self.d["summaryTip"],
                             f"tvs_{LETTERS[phase]}{g}_{side}", current)
        table = self.sc if kind == "call" else self.gr
        head, note, status = table["node"][k][phase]
        rows = self.d["nodeRows"]
        cells = (f"{rows[0]}{table['colour'][k]}{rows[1]}{head}{rows[2]}{note}{rows[3]}"
                 f"{self.fold_rows(kind, k, phase)}{self.d['statusRows'][status] if status else ''}")
        return node_line(name, label(self.d, cells, style, status == "fail", current), self.d["openTip"],
                         f"tv{kind[0]}_{LETTERS[phase]}{k}", current)

    def fold_rows(self, kind: str, k, phase: int) -> str:
        """The rows of a closed call's node that say what is drawn in it: the inputs of its
        column it reads (``reads 1 input and 4 parameters``), in the pullback's the gradients
        it gives of the parameters among them."""
        inputs, styles = self.d["inputs"], self.d["styles"]
        folded = self.reads.get((kind, k), ())
        counts: dict = {}
        for j in folded:
            if inputs[j][5] == phase:
                counts[inputs[j][2]] = counts.get(inputs[j][2], 0) + 1
        texts = []
        if counts:
            texts.append("reads " + " and ".join(f"{n} {styles[s]}{'s' if n != 1 else ''}"
                                                 for s, n in sorted(counts.items())))
        n = sum(1 for j in folded if styles[inputs[j][2]] == "parameter")
        if n and PHASES[phase] == "backward":
            texts.append(f"gives {n} gradient{'s' if n != 1 else ''}")
        return "".join(text.join(self.d["foldRow"]) for text in texts)


def label(data: dict, cells: str, style: int, failed, current: bool) -> str:
    """An HTML-like label around label rows, as ``labels.node_attrs`` writes it (``PaneSource``'s
    ``label``): the frame and fill of its style (an index of ``STYLES``), failed or current."""
    frame, background, width = data["failedLook"] if failed else data["looks"][style]
    if current:
        frame, width = data["currentLook"][0], data["currentLook"][2]
    rounded = ' STYLE="rounded"' if data["styles"][style] in ("input", "parameter") else ""
    return (f'<<TABLE BORDER="{width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" COLOR="{frame}" '
            f'BGCOLOR="{background}"{rounded}>{cells}</TABLE>>')


def node_line(name: str, label_text: str, tip: str, element_id: str, current: bool) -> str:
    """A node's statement (``tip`` as ``tip_text`` gives it); the current one's SVG element has
    the class ``tv-current`` (the view centres the drawing on it)."""
    mark = ' class="tv-current"' if current else ""
    return f'\t"{name}" [label={label_text} tooltip="{tip}" id="{element_id}"{mark}]\n'


class EquationNodes:
    """The equations' nodes as the neighbourhood view draws them (``graph_pane.equation_look``):
    named by their only result (``%7``), or ``eq/%7`` with several; each made when first drawn."""

    def __init__(self, model, data: dict):
        self.model, self.data = model, data
        self._looks: dict = {}

    def name(self, i: int) -> str:
        outputs = self.model.eqns[i].outputs
        return repr(outputs[0]) if len(outputs) == 1 else f"eq/{outputs[0]!r}"

    def look(self, i: int) -> tuple:
        """(label rows, style, failed, tooltip) of equation ``i``'s node."""
        look = self._looks.get(i)
        if look is None:
            rows, style, failed, tip = equation_look(self.model.graph, "eq/" + repr(self.model.eqns[i].outputs[0]))
            look = self._looks[i] = ("".join(label_cells(rows, style, failed)), STYLES.index(style), failed, tip)
        return look

    def statement(self, i: int, current: bool) -> str:
        cells, style, failed, tip = self.look(i)
        name = self.name(i)
        return node_line(name, label(self.data, cells, style, failed, current), tip, f"tvn_{name}", current)
