"""The tables the graph pane's calls view draws from (``calls_pane``, ``calls_drawing``), made in
one pass over the equations of a ``DebugModel`` and JSON-ready, so that a static page embeds
them once and draws the view itself (``static/debugger.js``, ``CallsSource``): the scopes
(numbered as ``frames.tape_part`` numbers them), each one's own equations, calls and folded
groups (the outline's), the data flow between what its level draws, and the labels of the
calls' nodes and clusters, escaped here (``calls_data``).
"""
from __future__ import annotations

import bisect
import re

from ad.origins import OriginKind
from ad.tape import Var

from .. import labels
from ..draw import SCOPE_LOOKS
from ..labels import Row
from .graph_pane import PHASES, STYLES, attr_list, dot_head, edge_attrs, label_cells, tip_text, tops
from .model import built_in_one_go
from .navigation import NUMBERED

WINDOW = 9                   # calls of an opened group drawn at most: the anchor's and 3 or more each side
STUB_READERS = 3             # a value read by more drawn nodes: a stub beside each reader in another cluster
EDGE_KINDS = ("data", "residual", "accumulate")
GRADIENT_KINDS = (OriginKind.ACCUMULATE, OriginKind.ZEROS)     # an input's gradient made outside the calls
LETTERS = "fbt"              # a phase's letter in node names and ids
HEADS = ("{}", "pullback of {}", "pushforward of {}")
NODE_STYLES = ("intermediate", "cotangent", "tangent")     # a call's node, by phase
STATUS_ROWS = {"fail": Row("fail", "\u2717 a check failed"), "warn": Row("note", "\u26a0 a check warned"),
               "pass": Row("note", "\u2713 checks pass")}
OPEN_TIP = "click to open this call (its equations and calls)"
CLOSE_TIP = "click the title to close this call"
SUMMARY_TIP = "calls not drawn: open one in the outline to draw the calls around it"


def human_bytes(n: int) -> str:
    """``1.5 kB`` (the outline's ``humanBytes``)."""
    if not n:
        return "0 B"
    units, k, x = ("B", "kB", "MB", "GB", "TB"), 0, float(n)
    while x >= 999.5 and k < len(units) - 1:
        x, k = x / 1000, k + 1
    return f"{n} B" if k == 0 else f"{x:.1f} {units[k]}" if x < 9.95 else f"{round(x)} {units[k]}"


# -- the tables, in one pass ----------------------------------------------------------------------

@built_in_one_go         # a 100,000-equation tape's tables are a few hundred thousand small objects
def calls_data(model) -> dict:
    """What every drawing of ``model``'s calls reads (see the module), JSON-ready. Scopes are
    numbered in the order the tape first reaches them, parents first (0: the top level), as
    ``frames.tape_part`` numbers them; ``eqScope`` and ``eqPhase`` give each equation's scope
    and phase (an index of ``PHASES``). Per scope (``scopes``, column by column): ``parent``,
    ``depth``, ``group`` (the folded group it is a call of, -1: none) and ``slot`` (its place
    in it), ``first`` (its first equation), ``own`` (the equations drawn at its level),
    ``items`` (its calls in call order: a scope's number, or ``-1 - g`` for group ``g``),
    ``edges`` (``[tail, head, kind]`` flattened: the operands whose producer and reader meet at
    its level, an end ``-1 - j`` being input ``j``, kind an index of ``EDGE_KINDS``), ``count``
    (equations by phase), ``name`` (escaped) and ``call`` (as the tape spells it), ``colour``,
    ``node`` and ``cluster`` (per phase: its node's head, note and worst check, written into
    ``nodeRows`` and ``statusRows``; its cluster's label, the rest of its attributes being
    ``clusterLooks``' by phase and depth).
    Per group (``groups``): ``parent``, ``calls``, ``first``, ``count``, ``key`` (the outline's:
    the parent's path and the function's name), ``node``, ``cluster``, ``loose`` and
    ``looseSlot`` (the level's equations it holds, ``_loose``), ``edges``
    (``_edges_within_groups``). Per input (``inputs``): its node and its stub's label rows;
    ``sums``: the equations that make its gradient out of the pullbacks' parts (fan-in sums, in
    the input's scope, the top level; a gradient no path reaches), drawn in the pullback of the
    call that reads the input when only one does. And the looks and attributes a drawing writes
    (``head``, ``tops``, ``edges``, ``stubRow``, ``foldRow``...)."""
    g = model.graph
    eqns, gt = model.eqns, model.gt
    ids: dict = {(): 0}
    parent, depth, first, own, edges = [-1], [0], [0], [[]], [[]]
    spans: list = [[None, None, None]]     # per scope and phase: [first, last] equation in it and below
    made = {v: -1 - j for j, v in enumerate(gt.inputs)}
    input_phase = [PHASES.index(g.nodes[repr(v)]["phase"]) for v in gt.inputs]
    eq_scope, eq_phase = [], []
    sums: list = [[] for _ in gt.inputs]
    phase_code = {k: PHASES.index(k.phase) for k in OriginKind}

    def scope_id(path: tuple, i: int) -> int:
        k = ids.get(path)
        if k is None:
            p = scope_id(path[:-1], i)
            k = ids[path] = len(parent)
            parent.append(p)
            depth.append(len(path))
            first.append(i)
            own.append([])
            edges.append([])
            spans.append([None, None, None])
        return k

    def meet(a: int, b: int) -> int:
        while depth[a] > depth[b]:
            a = parent[a]
        while depth[b] > depth[a]:
            b = parent[b]
        while a != b:
            a, b = parent[a], parent[b]
        return a

    last_path, k = None, 0
    for i, e in enumerate(eqns):
        if e.scope is not last_path:
            last_path, k = e.scope, scope_id(e.scope, i)
        kind = e.origin.kind
        ph = phase_code[kind]
        eq_scope.append(k)
        eq_phase.append(ph)
        own[k].append(i)
        c = k
        while c:
            span = spans[c][ph]
            if span is None:
                spans[c][ph] = [i, i]
            else:
                span[1] = i
            c = parent[c]
        read: set = set()
        for x in e.inputs:
            if type(x) is not Var or x in read:
                continue
            read.add(x)
            p = made[x]
            pk, pph = (eq_scope[p], eq_phase[p]) if p >= 0 else (0, input_phase[-1 - p])
            edge = 1 if ph and not pph else 2 if kind is OriginKind.ACCUMULATE else 0
            edges[k if pk == k else meet(pk, k)] += [p, i, edge]
        if kind in GRADIENT_KINDS and made.get(e.origin.of, 0) < 0:
            sums[-1 - made[e.origin.of]].append(i)
        for v in e.outputs:
            made[v] = i
    data = {"upward": bool(g.graph["gradient"]), "head": dot_head(), "tops": tops(),
            "edges": edge_attrs(bool(g.graph["gradient"])), "styles": list(STYLES),
            "looks": [_look(labels.KINDS[s]) for s in STYLES], "failedLook": _look(labels.FAILED),
            "currentLook": _look(labels.CURRENT), "window": WINDOW, "stubReaders": STUB_READERS,
            "eqScope": eq_scope, "eqPhase": eq_phase,
            "inputs": [_input(g, v, input_phase[j]) for j, v in enumerate(gt.inputs)], "sums": sums,
            "foldRow": label_cells([Row("note", "\x00")], "intermediate", False)[0].split("\x00"),
            "summary": [_summary_parts(p) for p in range(len(PHASES))], "summaryTip": tip_text(SUMMARY_TIP),
            "stubRow": label_cells([Row("head", "\x00")], "input", False)[0].split("\x00"),
            "openTip": tip_text(OPEN_TIP), "closeTip": tip_text(CLOSE_TIP),
            "clusterLooks": [_CLUSTER_LOOKS[phase] for phase in PHASES], "nodeRows": _node_rows(),
            "statusRows": {status: f"<TR>{labels.html_row(row)}</TR>" for status, row in STATUS_ROWS.items()}}
    scopes = {"parent": parent, "depth": depth, "first": first, "own": own, "edges": edges,
              "group": [-1] * len(parent), "slot": [0] * len(parent), "items": [[] for _ in parent],
              "count": [[0, 0, 0] for _ in parent], "name": [""] * len(parent), "call": [""] * len(parent),
              "colour": [""] * len(parent),
              "node": [None] * len(parent),
              "cluster": [None] * len(parent)}
    groups = {"parent": [], "calls": [], "first": [], "count": [], "key": [], "colour": [], "node": [], "cluster": [],
              "loose": [], "looseSlot": [], "edges": []}
    entries: list = []
    _fill(model.nav.outline(), ids, scopes, groups, entries)
    for gi, entry in enumerate(entries):
        loose = _loose(gi, scopes, groups, spans, eq_phase)
        _describe(groups, gi, entry, f"{entry['name']} \u00d7{entry['calls']}", f"{entry['calls']} calls", loose)
    _edges_within_groups(scopes, groups, eq_scope)
    return {**data, "scopes": scopes, "groups": groups}


def _edges_within_groups(scopes: dict, groups: dict, eq_scope: list) -> None:
    """The edges of a level between two calls of one group (a loop's value carried from call to
    call), moved to the group's table by slot (``edges``), each under the slots of its two
    ends: an opened group draws those of its window's slots; a closed one none (they join its
    node to itself, or to its pullback's, whose label says what it reads). So a
    drawing reads a loop of 3,334 calls' edges a window at a time."""
    loose = {x: (g, slot) for g, xs in enumerate(groups["loose"]) for x, slot in zip(xs, groups["looseSlot"][g])}
    parent, depth, group, slot = scopes["parent"], scopes["depth"], scopes["group"], scopes["slot"]
    for g, calls in enumerate(groups["calls"]):
        groups["edges"][g] = [[] for _ in calls]
    for level in sorted(set(groups["parent"])):

        def at(x: int):
            """The (group, slot) the end ``x`` of an edge at ``level`` is in, if any."""
            if x < 0:
                return None
            c = eq_scope[x]
            if c == level:
                return loose.get(x)
            while depth[c] > depth[level] + 1:
                c = parent[c]
            return (group[c], slot[c]) if group[c] >= 0 else None

        kept, flat = [], scopes["edges"][level]
        for n in range(0, len(flat), 3):
            tail, head = at(flat[n]), at(flat[n + 1])
            if tail is not None and head is not None and tail[0] == head[0]:
                g = tail[0]
                table = groups["edges"][g]
                table[tail[1]] += flat[n:n + 3]
                if head[1] != tail[1]:
                    table[head[1]] += flat[n:n + 3]
            else:
                kept += flat[n:n + 3]
        scopes["edges"][level] = kept


def _loose(g: int, scopes: dict, groups: dict, spans: list, eq_phase: list) -> list[int]:
    """The equations of a group's level that run between its calls (in each phase: after its
    first call starts, before its last one ends: a loop's own lines, the fan-in sums of a
    parameter the calls share) taken out of the level into the group, each at the call it
    runs before (in that phase; the last call, after all of them); their count per phase."""
    calls, parent = groups["calls"][g], groups["parent"][g]
    own = scopes["own"][parent]
    taken, at, counts = [], {}, [0, 0, 0]
    for p in range(len(PHASES)):
        starts = sorted((spans[c][p][0], slot) for slot, c in enumerate(calls) if spans[c][p] is not None)
        if not starts:
            continue
        lo, hi = starts[0][0], max(spans[c][p][1] for c in calls if spans[c][p] is not None)
        for x in own[bisect.bisect_left(own, lo):bisect.bisect_right(own, hi)]:
            if eq_phase[x] == p:
                k = bisect.bisect_left(starts, (x,))
                taken.append(x)
                at[x] = starts[k][1] if k < len(starts) else starts[-1][1]
                counts[p] += 1
    taken.sort()
    if taken:
        gone = set(taken)
        scopes["own"][parent] = [x for x in own if x not in gone]
        groups["first"][g] = min(groups["first"][g], taken[0])
    groups["loose"][g] = taken
    groups["looseSlot"][g] = [at[x] for x in taken]
    return counts


def _look(look) -> list:
    return [look.frame, look.background, look.width]


def _input(g, v, phase: int) -> list:
    """An input's node: [name, label rows, style, failed, tooltip, phase, its stub's label rows
    (its head: its name)]."""
    name = repr(v)
    d = g.nodes[name]
    failures = [f"{c}: {message}" for c, message in d.get("failures", ())]
    style = labels.style_of(d)
    rows = labels.variable_rows(d)
    return [name, "".join(label_cells(rows, style, bool(failures))), STYLES.index(style),
            int(bool(failures)), tip_text("\n".join([name, *failures])), phase,
            label_cells(rows[:1], style, bool(failures))[0]]


def _node_rows() -> list[str]:
    """A call's label rows, in four pieces around its colour, its head and its note (escaped);
    its worst check's row (``statusRows``) follows."""
    rows = [Row("scope", "\x00", "", "\x01"), Row("note", "\x02")]
    pieces = re.split("[\x00-\x02]", "".join(f"<TR>{labels.html_row(r)}</TR>" for r in rows))
    assert len(pieces) == 4, "the colour, the head and the note each once"
    return pieces


def _summary_parts(phase: int) -> list[str]:
    """A summary node's label rows, in four pieces around its count and the names (escaped) of
    the first and the last call it stands for."""
    rows = "".join(label_cells([Row("note", "\u2026 {N} more: {A} to {B}")], NODE_STYLES[phase], False))
    return re.split(r"\{[NAB]\}", rows)


def _fill(entry: dict, ids: dict, scopes: dict, groups: dict, entries: list) -> None:
    """The outline's tree (``Navigation.outline``: counts, bytes, status, folded groups) into the
    tables, depth first; the groups' entries into ``entries`` (described once their loose
    equations are known)."""
    k = ids[entry["path"]]
    _describe(scopes, k, entry, entry["name"])
    items = scopes["items"][k]
    for child in entry["children"]:
        if child["kind"] == "group":
            gi = len(groups["parent"])
            calls = [ids[c["path"]] for c in child["children"]]
            for slot, c in enumerate(calls):
                scopes["group"][c], scopes["slot"][c] = gi, slot
            groups["parent"].append(k)
            groups["calls"].append(calls)
            groups["first"].append(scopes["first"][calls[0]])
            groups["key"].append(list(child["path"]))
            for key in ("count", "colour", "node", "cluster", "loose", "looseSlot", "edges"):
                groups[key].append(None)
            entries.append(child)
            items.append(-1 - gi)
            for c in child["children"]:
                _fill(c, ids, scopes, groups, entries)
        else:
            items.append(ids[child["path"]])
            _fill(child, ids, scopes, groups, entries)


def _describe(table: dict, k: int, entry: dict, name: str, calls: str = "", loose=(0, 0, 0)) -> None:
    """Entry ``k`` of a table: its counts, its colour (its function's), and per phase where it
    has equations its node's head and note (escaped) and worst check, and its cluster's label
    when opened."""
    counts = [entry[phase] + loose[p] for p, phase in enumerate(PHASES)]
    table["count"][k] = counts
    if "name" in table:
        table["name"][k] = labels.cell_text(name)
        table["call"][k] = name
    status = entry["status"]
    base = NUMBERED.fullmatch(entry["name"])
    colour = labels.primitive_colour(base.group(1) if base else entry["name"]) if entry["path"] else ""
    table["colour"][k] = colour
    nodes, clusters = [], []
    for p, phase in enumerate(PHASES):
        if not counts[p] or not entry["path"]:
            nodes.append(None)
            clusters.append(None)
            continue
        head = HEADS[p].format(name)
        n = entry[PHASES[p]]
        note = f"{n} equation{'s' if n != 1 else ''}"
        if calls:
            note = f"{calls}, {note}" + (f" and {loose[p]} between them" if loose[p] else "")
        kept = human_bytes(entry["residual_bytes"]) if entry["residual_bytes"] else ""
        if kept and p == 0:
            note += f", keeps {kept}"
        elif kept and p == 1:                # no edge joins the two nodes: the label says it
            note += f", reads {kept} kept"
        nodes.append([labels.cell_text(head), labels.cell_text(note, None), status or ""])     # a note in full
        clusters.append(labels.plain(head, "html"))
    table["node"][k] = nodes
    table["cluster"][k] = clusters


_CLUSTER_LOOKS = {phase: [attr_list({"style": "rounded,filled", "color": look[0], "fillcolor": look[2 - parity],
                                     "fontcolor": look[0], "fontsize": "10", "labeljust": "l"})[1:-1]
                          for parity in (0, 1)] for phase, look in SCOPE_LOOKS.items()}
