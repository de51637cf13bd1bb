"""A diff of two tapes (``tapeviz.diff``): a tape before and after ``ad.optimize``, a gradient
tape before and after a rule was edited, two versions of a program.

Variables are numbered afresh in every tape, so equations are aligned by structure, never by
number. Per scope (``Eqn.scope``: the user's calls), the equations' keys (primitive, params,
origin kind and rule) are aligned by ``difflib.SequenceMatcher``; in a stretch it finds
replaced, equations of the same primitive and origin are aligned again without their params
(a changed param is a change, not a removal and an addition). Inputs correspond by position,
and every aligned pair's outputs correspond, so an aligned pair is *changed* when its params,
literals or result avals differ or when an operand is not the counterpart of the other's
(same place, different operands). Equations left over on both sides that compute the same
thing from corresponding operands (an equation CSE moved to a common scope, a reordered line)
are aligned last, as moved. With ``args``, both tapes run on them and each aligned pair whose
values differ (beyond a relative tolerance: ``rtol``, by default the checker's ``exact_rtol``
of the dtypes) is listed in ``changed`` too, with the largest absolute and relative difference,
even when the two equations read the same: one of their inputs differs.

>>> gt = ad.grad_tape(lambda x: np.sum(np.exp(x) * 2.0), np.ones(3))
>>> d = diff(gt, ad.optimize(gt), args=(np.ones(3),))
>>> d
<TapeDiff: 2 removed, 0 added, 1 changed, 5 same>
>>> [e.prim.name for e in d.removed]            # the seed, folded into a literal
['full', 'reshape']
>>> ea, eb = d.changed[0]
>>> print(ea, "|", eb, "|", *d.changed[0].reasons)
%6:f64[3] = broadcast_to shape=(3,) %5 | %6:f64[3] = broadcast_to shape=(3,) [1.] | operand 0: %5 -> [1.]
>>> for line in str(d).splitlines()[3:7]:
...     print(line)
@@ top level @@
  (3 same)
- a %4:f64[] = full dtype=f64 fill_value=1 shape=()    # output cotangent
- a %5:f64[1] = reshape shape=(1,) %4    # pullback of %3 (sum)
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import NamedTuple

import graphviz
import numpy as np

from ad.checks.settings import exact_rtol
from ad.tape import Eqn, Lit, Tape, Var, eval_tape, format_eqn, format_literal, format_param

from . import labels as lb
from .draw import FONT
from .escaping import dot_html_text, dot_text, dot_value, html_attr, html_text

# how each kind of line looks: mark, frame, background, what the legend says
LOOKS = {
    "added": ("+", "#15803d", "#dcfce7", "added (only in b)"),
    "removed": ("-", "#dc2626", "#fee2e2", "removed (only in a)"),
    "changed": ("~", "#d97706", "#fef3c7", "changed (aligned, operands or params differ)"),
    "values": ("~", "#7c3aed", "#f3e8ff", "values differ (aligned, same equation)"),
    "same": (" ", "#9ca3af", "#ffffff", "unchanged"),
}


class ValueDiff(NamedTuple):
    """One output of an aligned pair whose values differ: its names in a and b, the largest
    absolute difference and the largest relative one (``|x - y| / max(|x|, |y|, 1)``, as the
    checker's); both None when the shapes differ."""
    a: str
    b: str
    max_abs: float | None
    max_rel: float | None

    def __str__(self) -> str:
        if self.max_abs is None:
            return f"values of {self.a} -> {self.b}: shapes differ"
        return f"values of {self.a} -> {self.b}: max |diff| {self.max_abs:.3g}, max rel {self.max_rel:.3g}"


class Change(tuple):
    """An aligned pair that differs, the pair ``(ea, eb)`` itself (``ea, eb = change``), with
    ``at`` (their positions in a and b), ``reasons`` (how the equations differ, as text; empty
    when only values do) and ``values`` (``ValueDiff``s of the outputs that differ)."""

    def __new__(cls, ea: Eqn, eb: Eqn, at: tuple[int, int], reasons=(), values=()):
        self = super().__new__(cls, (ea, eb))
        self.at, self.reasons, self.values = at, tuple(reasons), tuple(values)
        return self

    @property
    def kind(self) -> str:
        """The kind of change: "changed", or "values" when the equations agree and only their
        values differ."""
        return "changed" if self.reasons else "values"


@dataclass
class TapeDiff:
    """What ``diff(a, b)`` found: ``removed`` (equations only in a, in a's order), ``added``
    (only in b, in b's order), ``changed`` (``Change`` pairs ``(ea, eb)``, in b's order),
    ``same`` (how many aligned pairs agree), ``notes`` (inputs and outputs that do not
    correspond) and ``pairs`` (every aligned ``(i, j)``: equation i of a is equation j of b).
    ``str(d)`` is a listing grouped by scope, ``d._repr_html_()`` the same for a notebook,
    ``d.to_graphviz()`` the union graph."""
    a: Tape
    b: Tape
    removed: list = field(default_factory=list)
    added: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    same: int = 0
    notes: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    compared_values: bool = False
    blocks: list = field(default_factory=list, repr=False)   # (scope, [(i, j), ...]) in listing order

    @property
    def empty(self) -> bool:
        """Nothing removed, added or changed, and no input or output note."""
        return not (self.removed or self.added or self.changed or self.notes)

    def __bool__(self) -> bool:
        return not self.empty

    def summary(self) -> str:
        return (f"{len(self.removed)} removed, {len(self.added)} added, {len(self.changed)} changed, "
                f"{self.same} same")

    def __repr__(self) -> str:
        return f"<TapeDiff: {self.summary()}>"

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    # -- listings ------------------------------------------------------------------------
    def entries(self):
        """The listing, grouped by scope (scopes with no difference left out): ``(scope,
        rows)``, each row ``(kind, lines, details)``: kind "removed", "added", "changed",
        "values" (only values differ) or "same" (a run of aligned equations that agree, counted);
        lines the equations as printed, marked ``a`` or ``b``; details the reasons and values."""
        changes = {c.at: c for c in self.changed}
        for scope, aligned in self.blocks:
            rows, same = [], 0
            for i, j in [*aligned, (None, None)]:
                if i is not None and j is not None and (i, j) not in changes:
                    same += 1
                    continue
                if same:
                    rows.append(("same", [f"({same} same)"], ()))
                    same = 0
                if j is None and i is not None:
                    rows.append(("removed", [f"a {_line(self.a.eqns[i])}"], ()))
                elif i is None and j is not None:
                    rows.append(("added", [f"b {_line(self.b.eqns[j])}"], ()))
                elif i is not None:
                    c = changes[i, j]
                    rows.append((c.kind, [f"a {_line(c[0])}", f"b {_line(c[1])}"],
                                 tuple(str(w) for w in (*c.reasons, *c.values))))
            if any(kind != "same" for kind, _, _ in rows):
                yield scope, rows

    def __str__(self) -> str:
        lines = [f"--- a: {len(self.a.eqns)} equations", f"+++ b: {len(self.b.eqns)} equations",
                 self.summary() + (" (values compared)" if self.compared_values else "")]
        lines += [f"! {note}" for note in self.notes]
        for scope, rows in self.entries():
            lines.append(f"@@ {scope_name(scope)} @@")
            for kind, text, details in rows:
                lines += [f"{LOOKS[kind][0]} {text[0]}", *(f"  {t}" for t in text[1:]), *(f"    {w}" for w in details)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        out = [f'<div class="tv-diff" style="font-family:monospace;font-size:12px">'
               f'<div class="tv-diff-summary"><b>tape diff</b>: {html_text(self.summary())} '
               f'(a: {len(self.a.eqns)} equations, b: {len(self.b.eqns)})</div>']
        out += [f'<div class="tv-diff-note" style="color:#b91c1c">{html_text(n)}</div>' for n in self.notes]
        for scope, rows in self.entries():
            out.append(f'<details open class="tv-diff-scope"{html_attr("data-scope", scope_name(scope))}>'
                       f'<summary>{html_text(scope_name(scope))}</summary>')
            for kind, text, details in rows:
                mark, frame, background, _ = LOOKS[kind]
                why = "".join(f'<div class="tv-diff-why" style="color:#374151">    {html_text(w)}</div>' for w in details)
                out.append(f'<div class="tv-diff-row tv-{kind}" style="white-space:pre;background:{background};'
                           f'border-left:3px solid {frame}">{mark} {html_text(chr(10).join(text))}{why}</div>')
            out.append("</details>")
        return "".join(out) + "</div>"

    # -- the union graph -------------------------------------------------------------------
    def to_graphviz(self, *, context: int | None = None, labels: str = "html",
                    title: str | None = None) -> graphviz.Digraph:
        """The union of both tapes as a ``graphviz.Digraph``: b's equations (added ones green,
        changed ones amber, those whose values alone differ purple) and a's removed ones (red,
        dashed, wired to the counterparts of their operands), one cluster per scope, a legend.
        ``context=k`` draws only what differs and the equations within k steps of it (a large
        tape's changes); ``labels="text"`` for Graphviz builds without HTML-like labels.
        ``tapeviz.render(d.to_graphviz(), "svg")`` renders it."""
        if labels not in lb.LABELS:
            raise ValueError(f"labels={labels!r}; choose one of {lb.LABELS}")
        return _Union(self, labels).draw(context, title or f"tape diff: {self.summary()}")


def scope_name(scope: tuple) -> str:
    return "/".join(scope) if scope else "top level"


def _line(e: Eqn) -> str:
    return format_eqn(e, with_origin=True)


# -- alignment -------------------------------------------------------------------------------

def diff(a: Tape, b: Tape, args=None, *, rtol: float | None = None) -> TapeDiff:
    """Align tapes ``a`` and ``b`` (the module's docstring says how) and say what differs:
    a ``TapeDiff`` with ``removed``, ``added``, ``changed`` and ``same``. ``args``: a tuple of
    arguments both tapes run on (``tape(*args)``); then aligned pairs whose values differ by
    more than ``rtol`` are changes too."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, Tape):
            raise TypeError(f"diff compares two ad.Tape or ad.GradTape objects; {name} is a {type(t).__name__} "
                            "(make tapes with ad.trace(f, *args) or ad.grad_tape(f, *args))")
    texts: dict = {}
    ka, kb = [_key(texts, e) for e in a.eqns], [_key(texts, e) for e in b.eqns]
    blocks = {}
    for scope, (ia, jb) in _by_scope(a.eqns, b.eqns).items():
        blocks[scope] = [(None if x is None else ia[x], None if y is None else jb[y])
                         for x, y in _align([ka[i] for i in ia], [kb[j] for j in jb])]
    fwd = dict(zip(a.inputs, b.inputs))
    for i, j in (p for aligned in blocks.values() for p in aligned if None not in p):
        fwd.update(zip(a.eqns[i].outputs, b.eqns[j].outputs))
    moved = _moves(a, b, blocks, ka, kb, fwd)
    gone = set(moved.values())
    for scope, aligned in blocks.items():      # a moved pair is listed where b has it
        blocks[scope] = [(moved.get(j, i), j) for i, j in aligned if j is not None or i not in gone]
    flat = [p for aligned in blocks.values() for p in aligned]
    result = TapeDiff(a, b, removed=[a.eqns[i] for i in sorted(i for i, j in flat if j is None)],
                      added=[b.eqns[j] for j in sorted(j for i, j in flat if i is None)],
                      pairs=sorted((p for p in flat if None not in p), key=lambda p: p[1]),
                      notes=_notes(a, b, fwd), compared_values=args is not None, blocks=list(blocks.items()))
    values = _run(a, b, args) if args is not None else None
    for i, j in result.pairs:
        ea, eb = a.eqns[i], b.eqns[j]
        reasons = _reasons(ea, eb, fwd, ka[i][3], kb[j][3])
        found = _value_diffs(ea, eb, values, rtol) if values is not None else []
        if reasons or found:
            result.changed.append(Change(ea, eb, (i, j), reasons, found))
        else:
            result.same += 1
    return result


def _key(texts: dict, e: Eqn) -> tuple:
    """An equation's alignment key: primitive, origin kind, origin rule, its params as text
    (formatted once per distinct primitive and params)."""
    try:
        params = texts.get((e.prim, e.params))
    except TypeError:                  # unhashable params
        params = None
    if params is None:
        params = " ".join(f"{k}={format_param(v)}" for k, v in e.params)
        try:
            texts[e.prim, e.params] = params
        except TypeError:
            pass
    return (e.prim.name, e.origin.kind.value, e.origin.rule, params)


def _by_scope(ea: tuple, eb: tuple) -> dict:
    """Per scope, the positions of its equations in a and in b; scopes in listing order: a's
    in order of first appearance, each scope only b has after the scope b lists before it."""
    out: dict = {}
    for side, eqns in ((0, ea), (1, eb)):
        for k, e in enumerate(eqns):
            out.setdefault(e.scope, ([], []))[side].append(k)
    order = list(dict.fromkeys(e.scope for e in ea))
    previous = None
    for s in dict.fromkeys(e.scope for e in eb):
        if s not in order:
            order.insert(0 if previous is None else order.index(previous) + 1, s)
        previous = s
    return {s: out[s] for s in order}


def _align(ka: list, kb: list) -> list[tuple]:
    """(x, y) index pairs into ``ka``/``kb``: aligned, or one side None (removed, added)."""
    start = 0
    while start < min(len(ka), len(kb)) and ka[start] == kb[start]:
        start += 1
    end = 0
    while end < min(len(ka), len(kb)) - start and ka[-1 - end] == kb[-1 - end]:
        end += 1
    out = [(k, k) for k in range(start)]
    middle_a, middle_b = ka[start:len(ka) - end], kb[start:len(kb) - end]
    for x, y in _match(middle_a, middle_b, coarse=False):
        out.append((None if x is None else x + start, None if y is None else y + start))
    return out + [(len(ka) - end + k, len(kb) - end + k) for k in range(end)]


def _match(ka: list, kb: list, coarse: bool) -> list[tuple]:
    """``SequenceMatcher``'s alignment; a replaced stretch aligned again by primitive and origin
    alone (``coarse``), so that equations whose params changed stay aligned."""
    out: list = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if tag == "equal":
            out += zip(range(i1, i2), range(j1, j2))
        elif tag == "replace" and not coarse:
            inner = _match([k[:3] for k in ka[i1:i2]], [k[:3] for k in kb[j1:j2]], coarse=True)
            out += [(None if x is None else x + i1, None if y is None else y + j1) for x, y in inner]
        else:
            out += [(i, None) for i in range(i1, i2)] + [(None, j) for j in range(j1, j2)]
    return out


def _moves(a: Tape, b: Tape, blocks: dict, ka: list, kb: list, fwd: dict) -> dict:
    """Left-over equations of b matched to left-over equations of a with the same key whose
    operands are the counterparts of theirs (j -> i); ``fwd`` grows with their outputs."""
    removed = sorted(i for aligned in blocks.values() for i, j in aligned if j is None)
    added = sorted(j for aligned in blocks.values() for i, j in aligned if i is None)
    if not removed or not added:
        return {}
    back = {v: k for k, v in fwd.items()}
    index: dict = {}
    for i in removed:
        index.setdefault((ka[i], _signature(a.eqns[i].inputs, None)), []).append(i)
    moved = {}
    for j in added:
        eb = b.eqns[j]
        if any(type(x) is Var and x not in back for x in eb.inputs):
            continue
        found = index.get((kb[j], _signature(eb.inputs, back)))
        if found:
            i = moved[j] = found.pop(0)
            for va, vb in zip(a.eqns[i].outputs, eb.outputs):
                fwd[va], back[vb] = vb, va
    return moved


def _signature(operands, back) -> tuple:
    return tuple(("lit", format_literal(x.value), str(x.aval)) if type(x) is Lit
                 else (x if back is None else back[x]) for x in operands)


def _reasons(ea: Eqn, eb: Eqn, fwd: dict, pa: str, pb: str) -> list[str]:
    """How an aligned pair differs (``pa``, ``pb``: their params' text), as text (empty: it agrees)."""
    out = []
    if ea.scope != eb.scope:
        out.append(f"moved from {scope_name(ea.scope)} to {scope_name(eb.scope)}")
    if pa != pb:
        out.append(f"params: {pa or '(none)'} -> {pb or '(none)'}")
    if len(ea.inputs) != len(eb.inputs):
        out.append(f"{len(ea.inputs)} operands -> {len(eb.inputs)}")
    for k, (x, y) in enumerate(zip(ea.inputs, eb.inputs)):
        if type(x) is Var and type(y) is Var:
            there = fwd.get(x)
            if there is not y:
                out.append(f"operand {k}: {x!r} -> {y!r} ({x!r} is {there!r} in b)" if there is not None
                           else f"operand {k}: {x!r} -> {y!r} ({x!r} has no counterpart in b)")
        elif type(x) is not Lit or type(y) is not Lit or not _same_literal(x, y):
            out.append(f"operand {k}: {x!r} -> {y!r}")
    avals_a, avals_b = [v.aval for v in ea.outputs], [v.aval for v in eb.outputs]
    if avals_a != avals_b:
        out.append(f"result: {', '.join(map(str, avals_a))} -> {', '.join(map(str, avals_b))}")
    return out


def _same_literal(x: Lit, y: Lit) -> bool:
    if x.aval != y.aval:
        return False
    try:
        return bool(np.array_equal(np.asarray(x.value), np.asarray(y.value), equal_nan=True))
    except TypeError:                      # not numbers: equal_nan cannot be asked
        return bool(np.array_equal(np.asarray(x.value), np.asarray(y.value)))


def _notes(a: Tape, b: Tape, fwd: dict) -> list[str]:
    """Inputs and outputs that do not correspond."""
    out = []
    if len(a.inputs) != len(b.inputs):
        out.append(f"inputs: a takes {len(a.inputs)}, b takes {len(b.inputs)}")
    for k, (x, y) in enumerate(zip(a.inputs, b.inputs)):
        if x.aval != y.aval:
            out.append(f"input {k}: {x!r}:{x.aval} -> {y!r}:{y.aval}")
    if len(a.outputs) != len(b.outputs):
        out.append(f"outputs: a returns {len(a.outputs)}, b returns {len(b.outputs)}")
    for k, (x, y) in enumerate(zip(a.outputs, b.outputs)):
        same = (fwd.get(x) is y if type(x) is Var and type(y) is Var
                else type(x) is Lit and type(y) is Lit and _same_literal(x, y))
        if not same:
            out.append(f"output {k}: {x!r} -> {y!r} do not correspond")
    return out


# -- values ----------------------------------------------------------------------------------

def _run(a: Tape, b: Tape, args) -> tuple[dict, dict]:
    """Every variable's value in each tape run on ``args``."""
    args = tuple(args)
    out = []
    for t in (a, b):
        env: dict = {}
        eval_tape(t, t.flatten_args(args), env)
        out.append(env)
    return out[0], out[1]


def _value_diffs(ea: Eqn, eb: Eqn, values: tuple[dict, dict], rtol: float | None) -> list[ValueDiff]:
    out = []
    for va, vb in zip(ea.outputs, eb.outputs):
        found = compare_values(values[0].get(va), values[1].get(vb), rtol)
        if found is not None:
            out.append(ValueDiff(repr(va), repr(vb), *found))
    return out


def compare_values(x, y, rtol: float | None = None):
    """None when ``x`` and ``y`` agree (within ``rtol``; default ``exact_rtol`` of their dtypes),
    else (max abs, max rel) difference, (None, None) when their shapes differ. Values that are
    not numbers (a closure's handle) are not compared.

    >>> compare_values(np.ones(3), np.ones(3) + 1e-15), compare_values(np.ones(2), np.array([1.0, 1.5]))
    (None, (0.5, 0.3333333333333333))
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind not in "biufc" or y.dtype.kind not in "biufc":
        return None
    if x.shape != y.shape:
        return None, None
    tol = exact_rtol([x.dtype, y.dtype]) if rtol is None else rtol
    kind = np.complex128 if "c" in (x.dtype.kind, y.dtype.kind) else np.float64
    x, y = x.astype(kind), y.astype(kind)
    with np.errstate(all="ignore"):
        diff = np.where((x == y) | (np.isnan(x) & np.isnan(y)), 0.0, np.abs(x - y))
        rel = np.where(diff == 0, 0.0, diff / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1.0))
    max_abs = float(np.max(np.nan_to_num(diff, nan=np.inf), initial=0.0))
    max_rel = float(np.max(np.nan_to_num(rel, nan=np.inf), initial=0.0))
    return None if max_rel <= tol else (max_abs, max_rel)


# -- drawing ---------------------------------------------------------------------------------

class _Union:
    """The union graph's DOT: b's equations, a's removed ones, the inputs, by index (node ids
    never hold the user's text: ``a3`` is a's equation 3, ``b7`` b's, ``in2`` b's input 2,
    ``ina2`` an input only a has)."""

    def __init__(self, d: TapeDiff, labels: str):
        self.d, self.labels, self.texts = d, labels, {}
        self.added = {j for _, aligned in d.blocks for i, j in aligned if i is None}
        self.changes = {f"b{c.at[1]}": c for c in d.changed}
        a, b = d.a, d.b
        self.producer = {v: f"in{k}" for k, v in enumerate(b.inputs)}
        self.producer.update((v, f"b{j}") for j, e in enumerate(b.eqns) for v in e.outputs)
        pair = {i: j for i, j in d.pairs}
        self.a_producer = {v: f"in{k}" if k < len(b.inputs) else f"ina{k}" for k, v in enumerate(a.inputs)}
        for i, e in enumerate(a.eqns):
            self.a_producer.update((v, f"b{pair[i]}" if i in pair else f"a{i}") for v in e.outputs)
        self.nodes = [(f"b{j}", "b", j) for j in range(len(b.eqns))]
        self.nodes += [(f"a{i}", "a", i) for i in sorted(i for _, aligned in d.blocks for i, j in aligned if j is None)]
        self.edges: dict = {}              # node -> [(source, style)]
        for node, side, k in self.nodes:
            e = (a if side == "a" else b).eqns[k]
            producers = self.a_producer if side == "a" else self.producer
            style = "removed" if side == "a" else "added" if k in self.added else "same"
            self.edges[node] = [(producers[x], style) for x in e.inputs if type(x) is Var]
        for i, j in d.pairs:           # a's edges from removed equations into aligned ones
            self.edges[f"b{j}"] += [(self.a_producer[x], "removed") for x in a.eqns[i].inputs
                                    if type(x) is Var and self.a_producer[x].startswith("a")]
        self.edges = {node: list(dict.fromkeys(srcs)) for node, srcs in self.edges.items()}

    def look(self, node: str) -> str:
        if node.startswith("a"):
            return "removed"
        if node in self.changes:
            return self.changes[node].kind
        return "added" if int(node[1:]) in self.added else "same"

    def draw(self, context: int | None, title: str) -> graphviz.Digraph:
        shown = self._shown(context)
        clusters: dict = {(): []}
        inputs = {}
        for node, side, k in self.nodes:
            if node not in shown:
                continue
            e = (self.d.a if side == "a" else self.d.b).eqns[k]
            for path in (e.scope[:n] for n in range(1, len(e.scope) + 1)):
                clusters.setdefault(path, [])
            clusters[e.scope].append(self._node(node, e))
            inputs.update((src, None) for src, _ in self.edges[node] if src.startswith("in"))
        top = [self._input(n) for n in sorted(inputs, key=lambda n: (len(n), n))]
        body = top + self._clusters((), clusters)
        for node, _, _ in self.nodes:
            if node in shown:
                for src, style in self.edges[node]:
                    if src in shown or src in inputs:
                        attrs = {} if style == "same" else {"color": LOOKS[style][1]}
                        if style == "removed":
                            attrs["style"] = "dashed"
                        body.append(f'\t"{src}" -> "{node}"{" " + _attrs(attrs) if attrs else ""}\n')
        graph_attr = {"rankdir": "TB", "nodesep": "0.3", "ranksep": "0.3", "fontname": FONT, "fontsize": "11",
                      "label": self._legend(title), "labelloc": "t", "labeljust": "l"}
        return graphviz.Digraph("diff", graph_attr=graph_attr, body=body,
                                node_attr={"shape": "plain", "fontname": FONT, "fontsize": "10"},
                                edge_attr={"arrowsize": "0.6", "color": "#6b7280"})

    def _shown(self, context: int | None) -> set:
        if context is None:
            return {node for node, _, _ in self.nodes}
        near: dict = {}
        for node, srcs in self.edges.items():
            for src, _ in srcs:
                near.setdefault(node, []).append(src)
                near.setdefault(src, []).append(node)
        shown = {node for node, _, _ in self.nodes if self.look(node) != "same"}
        frontier = set(shown)
        for _ in range(context):
            frontier = {m for n in frontier for m in near.get(n, ()) if m not in shown and not m.startswith("in")}
            shown |= frontier
        return shown

    def _clusters(self, path: tuple, clusters: dict, children: dict | None = None) -> list:
        """A scope's nodes, then its child scopes as nested clusters (numbered, never named by
        the user's text)."""
        if children is None:
            children = {}
            for k, p in enumerate(clusters):
                if p:
                    children.setdefault(p[:-1], []).append((k, p))
        out = list(clusters[path])
        for k, child in children.get(path, ()):
            name = f"cluster_{k}"
            attrs = {"label": lb.plain(child[-1], self.labels), "style": "rounded", "color": "#cbd5e1",
                     "fontsize": "10", "labeljust": "l"}
            out.append(f'\tsubgraph "{name}" {{\n\tgraph {_attrs(attrs)}\n')
            out += self._clusters(child, clusters, children) + ["\t}\n"]
        return out

    def _node(self, node: str, e: Eqn) -> str:
        look = self.look(node)
        rows = [lb.Row("head", e.prim.name, _key(self.texts, e)[3], lb.primitive_colour(e.prim.name))]
        names = ", ".join(f"{v!r} : {v.aval}" for v in e.outputs)
        tooltip = [f"{'a' if look == 'removed' else 'b'}: {_line(e)}"]
        change = self.changes.get(node)
        if change is not None:
            rows.append(lb.Row("name", f"a {', '.join(map(repr, change[0].outputs))} \u2192 b {names}"))
            tooltip = [f"a: {_line(change[0])}", f"b: {_line(e)}"]
        else:
            rows.append(lb.Row("name", f"{'a' if look == 'removed' else 'b'} {names}"))
        literals = [repr(x) for x in e.inputs if type(x) is Lit]
        if literals:
            rows.append(lb.Row("note", "with " + ", ".join(literals)))
        if e.origin.is_backward:
            rows.append(lb.Row("prov", e.origin.describe()))
        if change is not None:
            rows += [lb.Row("fail", str(w)) for w in (*change.reasons, *change.values)]
            tooltip += [str(w) for w in (*change.reasons, *change.values)]
        tooltip += [e.source] if e.source else []
        return f'\t"{node}" {_attrs(self._look_attrs(rows, look) | {"tooltip": dot_text(chr(10).join(tooltip))})}\n'

    def _input(self, node: str) -> str:
        k = int(node[3:] if node.startswith("ina") else node[2:])
        tape = self.d.a if node.startswith("ina") else self.d.b
        v = tape.inputs[k]
        rows = [lb.Row("head", tape.input_names[k]), lb.Row("name", f"{v!r} : {v.aval}")]
        return f'\t"{node}" {_attrs(self._look_attrs(rows, "removed" if node.startswith("ina") else "input"))}\n'

    def _look_attrs(self, rows: list, look: str) -> dict:
        _, frame, background, _ = LOOKS.get(look, ("", "#6b7280", "#f3f4f6", ""))
        width = 1 if look in ("same", "input") else 2
        dashed = look == "removed"
        if self.labels == "text":
            return {"label": lb.text_label(rows), "shape": "box", "color": frame, "penwidth": str(width),
                    "style": "filled,dashed" if dashed else "filled", "fillcolor": background}
        cells = "".join(f"<TR>{_html_row(r)}</TR>" for r in rows)
        style = ' STYLE="dashed"' if dashed else ""
        return {"label": (f'<<TABLE BORDER="{width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" '
                          f'COLOR="{frame}" BGCOLOR="{background}"{style}>{cells}</TABLE>>')}

    def _legend(self, title: str):
        entries = [(key, LOOKS[key]) for key in ("added", "removed", "changed", "values", "same")]
        if self.labels == "text":
            lines = [title] + ["; ".join(f"{look[3]}: {look[1]} frame" for _, look in entries)]
            return graphviz.nohtml("".join(dot_text(line) + "\\l" for line in lines))
        cells = "".join(f'<TD BORDER="2" COLOR="{frame}" BGCOLOR="{background}" WIDTH="16"> </TD>'
                        f'<TD ALIGN="LEFT">{lb.cell_text(text, None)}</TD>'
                        for _, (_, frame, background, text) in entries)
        return (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="2"><TR><TD COLSPAN="10" '
                f'ALIGN="LEFT"><B>{lb.cell_text(title, None)}</B></TD></TR><TR>{cells}</TR></TABLE>>')


def _html_row(r: lb.Row) -> str:
    if r.role == "head":
        small = f' <FONT POINT-SIZE="8">{lb.cell_text(r.extra)}</FONT>' if r.extra else ""
        colour = f' BGCOLOR="{dot_html_text(r.colour)}"' if r.colour else ""
        return f'<TD ALIGN="LEFT"{colour}><B>{lb.cell_text(r.text)}</B>{small}</TD>'
    if r.role == "name":
        return f'<TD ALIGN="LEFT">{lb.cell_text(r.text)}</TD>'
    return (f'<TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="{lb.ROW_COLOURS[r.role]}">'
            f'{lb.cell_text(r.text, 64)}</FONT></TD>')


def _attrs(attrs: dict) -> str:
    return "[" + " ".join(f"{k}={dot_value(v)}" for k, v in attrs.items()) + "]"
