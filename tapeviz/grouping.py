"""The collapsed view: one node per rule instance (or per source), runs of identical ones folded.

``collapse(graph)`` groups the detail graph's equations: a rule instance's forward body becomes
one ``rule/%n`` node, its pullback block (pullback and projection equations) one
``pullback/%n`` node (in forward mode, its pushforward block one ``pushforward/%n`` node), and
fan-in sums, seeds and structural zeros stay single nodes (``eq/%n``).
``collapse(graph, by="source")`` groups by where the equations come from instead: a run of
consecutive equations of one phase with one ``source`` (an imported model's ONNX node,
``"Conv (/conv/Conv)"``, or a line of traced Python) becomes one ``node/%n`` node labelled with
that source (``kind`` "node", ``rule`` and ``of`` the source, ``provenance`` the primitives it
holds); equations without a source stay single nodes. This is the view of an imported model:
one node per ONNX node, and its pullback beside it.
``collapse(graph, by="scope", depth=k)`` groups by the user's calls (``Eqn.scope``, cut to its
first ``k`` components): each call at depth ``k`` becomes one ``scope/%n`` node (``kind``
"scope", ``path`` its scope, ``name`` the path written ``"head/Layer.forward"``, ``rule`` that
name without the sibling numbers, ``"cell"`` for ``cell#3``), and its backward equations (its
pullback blocks, and fan-in sums of the variables it made) another one, drawn beside it, as are
its pushforward blocks in forward mode. A call with a shorter scope that made no calls
of its own is grouped the same way (so a deeper ``depth`` never splits a call without
sub-calls). The lines of a scope that made calls (the traced function's own lines, scope ``()``;
or, at depth 2, those of ``head`` around its calls of ``Layer.forward``) are grouped per run of
consecutive equations of one phase and one scope (``name`` that scope, ``rule`` their
primitives): each keeps its place between the calls it surrounds.
Inputs keep their ids. Then, as TensorBoard folds a series of same-shaped layers, a run of
``min_repeats`` or more consecutive repeats of one motif (up to ``max_period`` groups long) with
identical structure (primitives, params, literals, avals, internal wiring) folds into one
``fold/<first>`` node with a ``count``: a 10,000-step loop draws as a handful of nodes. By scope,
sibling calls of one function fold when their equations match in primitives, avals and wiring
(the values of params and literals may differ: a loop's index, a constant first state), so a
40-step loop of ``cell`` calls folds into one node labelled ``\u00d740 getitem > cell``.

Nodes carry ``kind`` (input kinds, or rule, pullback, pushforward, node, scope, accumulate, seed, zeros,
fold), ``phase``, ``scope`` (where the node sits in the user's calls: the common prefix of its
equations' scopes; of a scope node, the scope it was called in), ``head`` (of a fold whose motif
holds calls: the first call's ``rule``),
``order``, ``rule``, ``of``, ``members`` (detail equation ids), ``n_eqns``, ``output`` labels,
``aval`` and ``value`` of the instance's first output (of a forward source node, its last),
``failures`` and, for folds, ``count``,
``motif`` (rule names) and ``groups``. Edges have a ``kind`` (data, residual, accumulate) and
list the ``vars`` they carry (a kind per pair of nodes: fan-in sums read only cotangents,
and a forward node feeds a backward one only through residuals). ``graph.graph["group_of"]``
maps every detail node to its node
here, ``graph.graph["align"]`` pairs each forward node with the pullback (or pushforward) drawn
beside it, and ``graph.graph["by"]`` says how it was grouped.
"""
from __future__ import annotations

import re

import networkx as nx

from ad.scopes import common_prefix

from .graph import BACKWARD_BLOCK, EQUATION_KINDS, PUSHFORWARD_BLOCK, gc_paused

MAX_PERIOD = 8
MIN_REPEATS = 3     # two of a kind stay apart: folding them hides more than it saves
BY = ("rule", "source", "scope")
GROUP_KINDS = ("node", "scope")      # groups named by where their equations come from, not by a rule


@gc_paused
def collapse(graph: nx.DiGraph, *, by: str = "rule", depth: int = 1, max_period: int = MAX_PERIOD,
             min_repeats: int = MIN_REPEATS) -> nx.DiGraph:
    """The collapsed graph of a detail graph from ``to_networkx`` (schema above): one node per
    rule instance (``by="rule"``), per run of equations of one source (``by="source"``) or per
    call of the user's at ``depth`` (``by="scope"``), each with its pullback beside it.

    >>> from ad.examples.programs import rnn_example, rnn_loss
    >>> graph = tapeviz.to_networkx(ad.grad_tape(rnn_loss, *rnn_example()))   # 40 calls of cell
    >>> folded = tapeviz.collapse(graph, by="scope")
    >>> [(d["rule"], d["count"]) for _, d in folded.nodes(data=True) if d["kind"] == "fold"]
    [('getitem > cell', 40), ('cell > add > add > add', 38)]
    >>> [d["name"] for _, d in folded.nodes(data=True) if d["kind"] == "scope" and d["phase"] == "backward"]
    ['', 'cell#40', 'cell#1', '', '', '']
    """
    if by not in BY:
        raise ValueError(f"by={by!r}; choose one of {BY}")
    if type(depth) is not int or depth < 1:
        raise ValueError(f"depth={depth!r}: the number of scope components kept, 1 or more")
    if graph.graph.get("group_of") is not None:
        raise ValueError("this graph is collapsed already")
    group_of: dict = {}
    groups: dict = {}
    run = None                     # by source or scope: (phase, source or scope, group id) of the last equation
    calls: dict = {}               # by scope: (phase, scope) -> the group of that call at depth k
    parents = _parents(graph) if by == "scope" else set()
    for n, d in graph.nodes(data=True):
        kind = d["kind"]
        if kind == "constant":
            continue
        if kind in EQUATION_KINDS:
            if by == "rule":
                gid, attrs = _group_key(n, d)
            elif by == "source":
                gid, attrs = _source_key(n, d, run)
                run = (d["phase"], d["source"], gid)
            else:
                gid, attrs = _scope_key(n, d, depth, parents, run, calls)
                run = (d["phase"], d["scope"][:depth], gid)
            group = groups.get(gid)
            if group is None:
                group = groups[gid] = attrs
            group["scope"] = common_prefix(group["scope"], d["scope"])
            group["members"].append(n)
            group["n_eqns"] += 1
            group["failures"] += d.get("failures", [])
        elif d["producer"] is None:
            gid = n
            groups[gid] = {k: v for k, v in d.items() if k != "failures"}
            groups[gid].update(members=[], n_eqns=0, failures=list(d.get("failures", [])),
                               output=[d["output"]] if d["output"] else [])
        else:
            gid = group_of[d["producer"]]
            group = groups[gid]
            if d["output"]:
                group["output"].append(d["output"])
            if _shows(group, d):
                group["aval"], group["value"] = d["aval"], d["value"]
            group["failures"] += d.get("failures", [])
        group_of[n] = gid
        if d.get("residual"):
            groups[gid]["residual"] = True

    for g in groups.values():
        if g["kind"] in GROUP_KINDS:
            g["provenance"] = _primitives(graph, g)
        if g["kind"] == "scope":
            _name_scope(graph, g, group_of)
    fold_of = _fold(graph, groups, max_period, min_repeats, by)
    for n, gid in group_of.items():
        group_of[n] = fold_of.get(gid, gid)

    edges: dict = {}               # (source, target) -> (kind, the variables carried)
    for u, v, d in graph.edges(data=True):
        if d["kind"] == "result" or u not in group_of:
            continue
        src, dst = group_of[u], group_of[v]
        if src != dst:
            edges.setdefault((src, dst), (d["kind"], {}))[1][u] = None

    out = nx.DiGraph(group_of=group_of, failures=list(graph.graph["failures"]), hops_per_step=1,
                     gradient=graph.graph["gradient"], align=_align(groups, fold_of), by=by)
    out.add_nodes_from(sorted(((gid, attrs) for gid, attrs in groups.items() if gid not in fold_of),
                              key=lambda item: item[1]["order"]))
    out.add_edges_from((s, t, {"kind": kind, "vars": list(carried)})
                       for (s, t), (kind, carried) in edges.items())
    return out


def _group_key(n: str, d: dict) -> tuple[str, dict]:
    of, origin = d["of"], d["origin"]
    if d["phase"] == "forward":
        gid, kind = (f"rule/{of}" if of is not None else n), "rule"
        of = of or d["outputs"][0]          # a plain tape's equation stands for itself
    elif origin in BACKWARD_BLOCK and of is not None:
        gid, kind = f"pullback/{of}", "pullback"
    elif origin in PUSHFORWARD_BLOCK and of is not None:
        gid, kind = f"pushforward/{of}", "pushforward"
    else:
        gid, kind = n, origin
    rule = d["rule"] or d["primitive"]
    return gid, _group(kind, d, rule, of, d["provenance"])


def _source_key(n: str, d: dict, run) -> tuple[str, dict]:
    """The group of an equation by source: the run it continues (same phase and source as the
    equation before it), or a new ``node/%n`` named after its first result."""
    source = d["source"]
    if source is None:
        return n, _group(d["origin"], d, d["primitive"], None, d["provenance"])
    if run is not None and run[:2] == (d["phase"], source):
        return run[2], {}
    gid = f"node/{d['outputs'][0]}" if d["outputs"] else n
    return gid, _group("node", d, source, source, "")


def _parents(graph) -> set:
    """The scopes that made calls: every proper prefix of an equation's scope."""
    scopes = {d["scope"] for _, d in graph.nodes(data=True) if d["kind"] in EQUATION_KINDS}
    return {s[:i] for s in scopes for i in range(len(s))}


def _scope_key(n: str, d: dict, depth: int, parents: set, run, calls: dict) -> tuple[str, dict]:
    """The group of an equation by scope: its call at depth ``depth``, or at its own depth when
    it made no calls (one group per call and phase, wherever its equations lie); for the lines
    of a scope that made calls (the traced function's own, ``()``, among them), the run it
    continues (same phase and scope as the equation before it) or a new one. Named
    ``scope/%n`` after the first equation's result: a scope's name is the user's text, never
    part of an id."""
    path = d["scope"][:depth]
    key = (d["phase"], path)
    call = bool(path) and (len(path) == depth or path not in parents)
    if call:
        gid = calls.get(key)
        if gid is not None:
            return gid, {}
    elif run is not None and run[:2] == key:
        return run[2], {}
    gid = "scope/" + n.removeprefix("eq/")
    if call:
        calls[key] = gid
    group = _group("scope", d, "", "/".join(path) if call else None, "")
    group["path"] = path
    return gid, group


_SIBLING = re.compile(r"#\d+$")


def _name_scope(graph, group: dict, group_of: dict):
    """A scope group's ``name`` and ``rule``: a call is named by its path and its rule is the
    path without sibling numbers (``cell#3`` -> ``cell``: what repeats); a run of a shorter
    scope is named by that scope and its rule lists its primitives. Its drawing ``scope`` is
    the scope it lies in: a call's parent, a run's own. A backward (or tangent) group is drawn
    ``beside`` the forward group holding the first equation it differentiates."""
    path = group["path"]
    if group["phase"] != "forward":
        for m in group["members"]:
            d = graph.nodes[m]
            if d["of"] is not None and d["origin"] in BACKWARD_BLOCK + PUSHFORWARD_BLOCK:
                group["beside"] = group_of.get(d["of"])
                break
    if group["of"] is not None:
        group["name"] = group["of"]
        group["rule"] = "/".join(_SIBLING.sub("", part) for part in path)
        group["scope"] = path[:-1]
    else:
        group["name"] = "/".join(path)
        group["rule"] = ", ".join(dict.fromkeys(graph.nodes[m]["primitive"] for m in group["members"]))
        group["scope"] = path


def _group(kind: str, d: dict, rule: str, of, provenance: str) -> dict:
    return {"kind": kind, "phase": d["phase"], "order": d["order"], "scope": d["scope"], "rule": rule,
            "of": of, "members": [], "n_eqns": 0, "failures": [], "output": [], "aval": "", "value": None,
            "provenance": provenance, "residual": False}


def _primitives(graph, group: dict) -> str:
    """What a source or scope node became: its primitives in order, each once ("pullback: ..."
    behind)."""
    names = dict.fromkeys(graph.nodes[m]["primitive"] for m in group["members"])
    phase = {"backward": "pullback: ", "tangent": "pushforward: "}.get(group["phase"], "")
    return phase + ", ".join(names)


def _shows(group: dict, d: dict) -> bool:
    """Whether a variable's aval and value label its group: a rule instance's result, a forward
    source or scope node's last value; not a pullback's cotangents."""
    if group["kind"] in GROUP_KINDS:
        return group["phase"] == "forward"
    return group["kind"] not in ("pullback", "pushforward") and (not group["aval"] or d["name"] == group["of"])


# -- folding -----------------------------------------------------------------------------------

def _signature(graph, group: dict, local: dict, by: str) -> tuple:
    """The structure of a group, independent of its variables' names (and, by source, of the
    source: layers of one shape from different ONNX nodes fold; by scope, of the values of
    params and literals: calls of one function fold, ``rule`` names the function)."""
    parts = [group["kind"], group["rule"] if by != "source" or group["kind"] != "node" else None]
    for eid in group["members"]:
        d = graph.nodes[eid]
        refs = []
        for u, e in graph.pred[eid].items():
            refs.append((e["positions"], local[u]) if u in local else (e["positions"], graph.nodes[u]["aval"]))
        for name in d["outputs"]:
            local[name] = len(local)
        avals = tuple(graph.nodes[v]["aval"] for v in d["outputs"])
        if by == "scope":
            parts.append((d["primitive"], avals, tuple(refs)))
        else:
            parts.append((d["primitive"], d["params"], tuple(d["literals"]), avals, tuple(refs)))
    return tuple(parts)


def _fold(graph, groups: dict, max_period: int, min_repeats: int, by: str) -> dict:
    """Fold runs of a repeated motif of groups, per phase; returns group id -> fold id."""
    fold_of: dict = {}
    for phase in ("forward", "backward", "tangent"):
        seq = [gid for gid, g in groups.items() if g["phase"] == phase and g["members"]]
        codes: dict = {}
        sig = [codes.setdefault(_signature(graph, groups[gid], {}, by), len(codes)) for gid in seq]
        i = 0
        while i < len(seq):
            period, count = _best_run(sig, i, max_period, min_repeats)
            if count < min_repeats:
                i += 1
                continue
            run = seq[i:i + period * count]
            fid = f"fold/{run[0]}"
            groups[fid] = _fold_node(groups, run, period, count)
            fold_of.update((gid, fid) for gid in run)
            i += period * count
    return fold_of


def _best_run(sig: list, i: int, max_period: int, min_repeats: int) -> tuple[int, int]:
    """(period, repeats) of the longest run of at least ``min_repeats`` starting at ``i`` (the
    shortest period wins ties), or (1, 1)."""
    best = (1, 1)
    for p in range(1, max_period + 1):
        if i + min_repeats * p > len(sig):
            break
        m = 0
        while i + m + p < len(sig) and sig[i + m] == sig[i + m + p]:
            m += 1
        count = (m + p) // p
        if count >= min_repeats and count * p > best[0] * best[1]:
            best = (p, count)
    return best


def _fold_node(groups: dict, run: list, period: int, count: int) -> dict:
    first = groups[run[0]]
    named = [groups[g]["of"] for g in run if groups[g]["of"] is not None] or [None]
    scope = first["scope"]
    for g in run:
        scope = common_prefix(scope, groups[g]["scope"])
    calls = [groups[g]["rule"] for g in run[:period] if groups[g]["kind"] == "scope" and groups[g]["of"]]
    last = groups[run[-1]]
    return {"kind": "fold", "phase": first["phase"], "order": first["order"], "scope": scope,
            "rule": " > ".join(groups[g]["rule"] for g in run[:period]), "motif":
            [groups[g]["rule"] for g in run[:period]], "count": count, "groups": run,
            "head": calls[0] if calls else None, "of": named[0], "last": named[-1],
            "members": [m for g in run for m in groups[g]["members"]],
            "n_eqns": sum(groups[g]["n_eqns"] for g in run),
            "failures": [f for g in run for f in groups[g]["failures"]],
            "output": [o for g in run for o in groups[g]["output"]],
            "aval": last["aval"], "value": last["value"], "provenance": "",
            "residual": any(groups[g]["residual"] for g in run)}


def _align(groups: dict, fold_of: dict) -> list[tuple[str, str]]:
    """Each forward node beside the first pullback (or pushforward) node of its instances, of
    its source, or of its scope (each node once)."""
    pairs, used = [], set()
    forward_of_source: dict = {}
    for gid, g in groups.items():
        if g["kind"] == "node" and g["phase"] == "forward":
            forward_of_source.setdefault(g["of"], gid)
    for gid, g in groups.items():
        if g["kind"] in ("pullback", "pushforward") and g["of"] is not None:
            fwd = f"rule/{g['of']}"
        elif g["kind"] == "node" and g["phase"] != "forward" and g["of"] in forward_of_source:
            fwd = forward_of_source[g["of"]]
        elif g.get("beside") is not None:
            fwd = g["beside"]
        else:
            continue
        bwd = fold_of.get(gid, gid)
        fwd = fold_of.get(fwd, fwd)
        if fwd in groups and fwd not in used and bwd not in used:
            used.update((fwd, bwd))
            pairs.append((fwd, bwd))
    return pairs
