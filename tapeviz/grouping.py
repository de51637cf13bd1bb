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
Inputs keep their ids. Then, as TensorBoard folds a series of same-shaped layers, a run of
``min_repeats`` or more consecutive repeats of one motif (up to ``max_period`` groups long) with
identical structure (primitives, params, literals, avals, internal wiring) folds into one
``fold/<first>`` node with a ``count``: a 10,000-step loop draws as a handful of nodes.

Nodes carry ``kind`` (input kinds, or rule, pullback, pushforward, node, accumulate, seed, zeros, fold),
``phase``,
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

import networkx as nx

from .graph import BACKWARD_BLOCK, EQUATION_KINDS, PUSHFORWARD_BLOCK, gc_paused

MAX_PERIOD = 8
MIN_REPEATS = 3     # two of a kind stay apart: folding them hides more than it saves
BY = ("rule", "source")


@gc_paused
def collapse(graph: nx.DiGraph, *, by: str = "rule", max_period: int = MAX_PERIOD,
             min_repeats: int = MIN_REPEATS) -> nx.DiGraph:
    """The collapsed graph of a detail graph from ``to_networkx`` (schema above): one node per
    rule instance (``by="rule"``) or per run of equations of one source (``by="source"``)."""
    if by not in BY:
        raise ValueError(f"by={by!r}; choose one of {BY}")
    if graph.graph.get("group_of") is not None:
        raise ValueError("this graph is collapsed already")
    group_of: dict = {}
    groups: dict = {}
    run = None                     # by="source": (phase, source, group id) of the last equation
    for n, d in graph.nodes(data=True):
        kind = d["kind"]
        if kind == "constant":
            continue
        if kind in EQUATION_KINDS:
            if by == "rule":
                gid, attrs = _group_key(n, d)
            else:
                gid, attrs = _source_key(n, d, run)
                run = (d["phase"], d["source"], gid)
            group = groups.get(gid)
            if group is None:
                group = groups[gid] = attrs
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
        if g["kind"] == "node":
            g["provenance"] = _primitives(graph, g)
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


def _group(kind: str, d: dict, rule: str, of, provenance: str) -> dict:
    return {"kind": kind, "phase": d["phase"], "order": d["order"], "rule": rule, "of": of,
            "members": [], "n_eqns": 0, "failures": [], "output": [], "aval": "", "value": None,
            "provenance": provenance, "residual": False}


def _primitives(graph, group: dict) -> str:
    """What a source node became: its primitives in order, each once ("pullback: ..." behind)."""
    names = dict.fromkeys(graph.nodes[m]["primitive"] for m in group["members"])
    phase = {"backward": "pullback: ", "tangent": "pushforward: "}.get(group["phase"], "")
    return phase + ", ".join(names)


def _shows(group: dict, d: dict) -> bool:
    """Whether a variable's aval and value label its group: a rule instance's result, a forward
    source node's last value; not a pullback's cotangents."""
    if group["kind"] == "node":
        return group["phase"] == "forward"
    return group["kind"] not in ("pullback", "pushforward") and (not group["aval"] or d["name"] == group["of"])


# -- folding -----------------------------------------------------------------------------------

def _signature(graph, group: dict, local: dict, by: str) -> tuple:
    """The structure of a group, independent of its variables' names (and, by source, of the
    source: layers of one shape from different ONNX nodes fold)."""
    parts = [group["kind"], group["rule"] if by == "rule" or group["kind"] != "node" else None]
    for eid in group["members"]:
        d = graph.nodes[eid]
        refs = []
        for u, e in graph.pred[eid].items():
            refs.append((e["positions"], local[u]) if u in local else (e["positions"], graph.nodes[u]["aval"]))
        for name in d["outputs"]:
            local[name] = len(local)
        parts.append((d["primitive"], d["params"], tuple(d["literals"]),
                      tuple(graph.nodes[v]["aval"] for v in d["outputs"]), tuple(refs)))
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
    first, last = groups[run[0]], groups[run[-1]]
    return {"kind": "fold", "phase": first["phase"], "order": first["order"],
            "rule": " > ".join(groups[g]["rule"] for g in run[:period]), "motif":
            [groups[g]["rule"] for g in run[:period]], "count": count, "groups": run,
            "of": first["of"], "last": last["of"],
            "members": [m for g in run for m in groups[g]["members"]],
            "n_eqns": sum(groups[g]["n_eqns"] for g in run),
            "failures": [f for g in run for f in groups[g]["failures"]],
            "output": [o for g in run for o in groups[g]["output"]],
            "aval": last["aval"], "value": last["value"], "provenance": "",
            "residual": any(groups[g]["residual"] for g in run)}


def _align(groups: dict, fold_of: dict) -> list[tuple[str, str]]:
    """Each forward node beside the first pullback (or pushforward) node of its instances, or of
    its source (each node once)."""
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
        else:
            continue
        bwd = fold_of.get(gid, gid)
        fwd = fold_of.get(fwd, fwd)
        if fwd in groups and fwd not in used and bwd not in used:
            used.update((fwd, bwd))
            pairs.append((fwd, bwd))
    return pairs
