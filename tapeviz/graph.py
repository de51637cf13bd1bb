"""The graph model: a tape as a networkx graph. Every picture (DOT, SVG, the widget) is drawn
from it, so it names things exactly as the text listing does.

Schema of ``to_networkx(tape)`` (a ``networkx.DiGraph``)
--------------------------------------------------------
Node ids are the tape's own names, stable across runs (never ``id()``), and are the DOT node
names too (no ``:``, which DOT reads as a port):

==============  ======================================================================
``"%n"``        a variable
``"eq/%n"``     an equation, named by its first output
``"lit/%n.i"``  a literal operand: operand ``i`` of equation ``eq/%n``
``"lit/out.i"`` a literal returned as output ``i``
==============  ======================================================================

Every node has ``kind``, ``phase`` ("forward", "backward" or "tangent"), ``order`` (its
position in the tape, for stable sorting) and ``scope`` (``Eqn.scope``: the user's calls it was
recorded in, outermost first, ``("layer#1",)``; an equation's own, a variable its producer's, a
literal operand its reader's, an input and a returned literal ``()``). The tangent phase is
forward mode's (``ad.linearize``): the equations of the pushforwards (``Origin`` kinds in
``TANGENT_KINDS``) and the tangents they compute; a tape's trailing ``tape.meta["n_tangents"]``
inputs are its tangent inputs (and ``tape.meta["output_names"]``, if given, names its outputs). ``kind`` is one of

* ``input``: a traced argument; ``parameter``: an input the gradient is taken with respect to;
* ``constant``: a literal; ``equation``: an equation; ``guard``: a guard equation (an
  assumption the trace made about a value: a branch taken, an integer used; its literal is
  the value assumed) — ``EQUATION_KINDS`` holds both;
* ``output``: a value, gradient or tangent the tape returns;
* ``residual``: a forward value read by a backward (or tangent) equation;
* ``intermediate``: any other forward value; ``cotangent``: any other backward value (a
  cotangent or a pullback's temporary); ``tangent``: any other tangent value (a tangent
  input, a tangent or a pushforward's temporary).

Variables carry ``name`` ("%n"), ``shape``, ``dtype`` ("f64"), ``aval`` ("f64[8,3]"),
``label`` (the argument name or pytree path of an input, e.g. ``params['W1']``), ``output``
(what the tape returns it as: ``out``, ``grad params['W1']``; else ""), ``residual`` (bool),
``cotangent_of`` ("%n" when the variable is exactly the cotangent of a forward variable: seeds,
fan-in sums, structural zeros and the gradients; else None), ``tangent_of`` ("%n" when the
variable is the tangent of a forward variable: a tangent input, a pushforward block's result;
else None), ``producer`` ("eq/%n" or None)
and ``value`` (a one-line summary when ``values`` were given; else None).

Equations carry ``primitive``, ``params`` (text), ``literals`` ((position, text) pairs),
``outputs`` (names), ``source`` ("file.py:12 in f"), ``source_line`` (that line's text),
``origin`` (the ``Origin`` kind: primal, pullback, project, accumulate, seed, zeros, and forward
mode's pushforward, pushforward_vjp, pushforward_frule, tangent_zeros), ``of`` (backward: the
forward variable whose pullback, fan-in or seed this is; tangent: the primal variable whose
pushforward this is; forward: the rule instance's first output; or None), ``rule`` and
``provenance`` ("pullback of %9 (matmul)").
Constants carry ``value`` (the literal's text) and ``aval``.

Edges run from a variable or constant into the equation reading it, and from an equation to
its results. They carry ``positions`` (the operand or result indices: ``(0, 1)`` when ``x * x``
reads one value twice) and ``kind``:

* ``data``: a value read by an equation of its own phase;
* ``residual``: a forward value read by a backward or tangent equation;
* ``accumulate``: a cotangent summed by a fan-in ``add``;
* ``result``: an equation defining a variable.

Check results (``checks=`` or ``annotate``) add ``failures``, a list of (check, message), to
the nodes they name; ``graph.graph["failures"]`` lists all of them as (node or None, check,
message). Graph attributes also hold ``blocks`` (forward variable -> the equation ids of its
pullback block), ``pushforwards`` (primal variable -> the equation ids of its pushforward
block, in forward order), ``instances`` (rule instance -> its forward equation ids), ``gradient``
(whether the tape has a backward section) and ``hops_per_step`` (2: a step is one equation).

Queries: ``forward``/``backward`` (subgraph views; the backward one with the residuals it
reads), ``pullback_block(graph, "%9")``, ``pushforward_block(graph, "%9")``, ``residuals`` (with
producers and consumers), ``neighbourhood(graph, "%9", k)``; ``tapeviz.collapse`` gives the
collapsed view. All traversals are iterative: deep tapes never hit the recursion limit.
"""
from __future__ import annotations

import re
from collections import deque
from typing import NamedTuple

import networkx as nx

from ad import pytree
from ad.errors import source_line
from ad.origins import OriginKind
from ad.tape import Eqn, Lit, Tape, Var, format_literal, format_param, gc_paused, short_dtype

from .values import summaries

EQUATION_KINDS = frozenset({"equation", "guard"})
BACKWARD_BLOCK = tuple(k for k in OriginKind if k.block == "pullback")   # a rule's pullback block
PUSHFORWARD_BLOCK = tuple(k for k in OriginKind if k.block == "pushforward")   # ... its pushforward block
TANGENT_KINDS = frozenset(k for k in OriginKind if k.phase == "tangent")


@gc_paused
def to_networkx(tape: Tape, *, values=None, checks=None) -> nx.DiGraph:
    """The graph of a tape or gradient tape (schema in this module's docstring).

    values: optional mapping from variables (or their ``%n`` names) to arrays, e.g. from
        ``values_of(tape, *args)``; each becomes a one-line ``value`` summary.
    checks: optional check report (anything with ``.failures``), attached with ``annotate``.

    A ``ValueError`` names a variable defined twice (an invalid tape: ``ad.validate`` says more).

    >>> tape = ad.trace(lambda x: np.sum(np.sin(x) * x), np.ones(3))
    >>> graph = tapeviz.to_networkx(tape)
    >>> graph.nodes["eq/%1"]["primitive"], sorted(graph.succ["%0"])
    ('sin', ['eq/%1', 'eq/%2'])
    """
    if not isinstance(tape, Tape):
        raise TypeError(f"to_networkx takes an ad.Tape or ad.GradTape, not {type(tape).__name__}; "
                        "make one with ad.trace(f, *args) or ad.grad_tape(f, *args)")
    # Lean for 100,000 equations: one flat loop; what depends only on an origin, (primitive, params), aval,
    # literal value or source computed once (keyed by id(): the tape keeps them alive); networkx's own dicts
    # filled in the loop as add_nodes_from and add_edges_from would fill them, in the same order, with no copies.
    summary = summaries(values).get
    n_seeds = getattr(tape, "n_seeds", 0)
    wrt = set(getattr(tape, "wrt", ())) | {tape.inputs.index(p) for p in tape.meta.get("tangents", {}).values()}
    out_names = _output_names(tape)
    returned: dict = {}
    for x, label in zip(tape.outputs, out_names):
        if type(x) is Var:
            returned[x] = f"{returned[x]}, {label}" if x in returned else label
    output_of, cotangent_of, tangent_of = returned.get, _exact_cotangents(tape).get, _exact_tangents(tape).get
    n_tangents = tape.meta.get("n_tangents", 0)

    node, succ, pred = {}, {}, {}  # a DiGraph's _node, _succ, _pred: name -> attributes, -> {name: edge attributes}
    var_attrs: dict = {}          # Var -> its attribute dict (kind decided last)
    avals: dict = {}              # id(Aval) -> (text, dtype text), by aval_text: numpy's dtype names are slow

    def aval_text(aval) -> tuple[str, str]:
        text = avals[id(aval)] = (str(aval), short_dtype(aval.dtype))
        return text

    n_primal = len(tape.inputs) - n_seeds - n_tangents
    extra_phase = "backward" if n_seeds else "tangent"
    for i, (v, label) in enumerate(zip(tape.inputs, tape.input_names)):
        name, text = repr(v), avals.get(id(v.aval)) or aval_text(v.aval)
        var_attrs[v] = attrs = {
            "kind": ({"backward": "cotangent", "tangent": "tangent"}[extra_phase] if i >= n_primal
                     else "parameter" if i in wrt else "input"),
            "phase": "forward" if i < n_primal else extra_phase, "order": len(node), "scope": (), "name": name,
            "shape": v.aval.shape, "dtype": text[1], "aval": text[0], "label": label, "output": output_of(v, ""),
            "residual": False, "cotangent_of": cotangent_of(v), "tangent_of": tangent_of(v), "producer": None,
            "value": summary(name)}
        if name in node:
            raise _defined_twice(name)
        node[name], succ[name], pred[name] = attrs, {}, {}

    # texts by source, by (primitive, params) (kind, name, params), by id(literal value); by id(Origin)
    lines, prims, lit_texts, origins = {}, {}, {}, {}
    blocks, pushforwards, instances = {}, {}, {}
    by_kind = {k: (k.phase, blocks if k in BACKWARD_BLOCK else pushforwards if k in PUSHFORWARD_BLOCK
                   else instances if k.phase == "forward" else None, k.phase != "forward",
                   "accumulate" if k is OriginKind.ACCUMULATE else "data") for k in OriginKind}
    for index, e in enumerate(tape.eqns):
        outputs, origin = e.outputs, e.origin
        out0 = repr(outputs[0])
        eid = "eq/" + out0
        o = origins.get(id(origin))
        if o is None:
            kind, of = origin.kind, origin.of
            phase, group, reads_fwd, data_kind = by_kind[kind]
            of = None if of is None else repr(of)
            group = None if of is None or group is None else group.setdefault(of, [])
            o = origins[id(origin)] = (phase, of, group, kind, origin.rule, origin.describe(), reads_fwd, data_kind)
        phase, of, group, kind, rule, provenance, reads_fwd, data_kind = o
        if group is not None:
            group.append(eid)
        scope = e.scope
        literals = []
        into: dict = {}                    # the equation's operands' edges, by name
        for pos, x in enumerate(e.inputs):
            if type(x) is Var:
                src = var_attrs[x]
                if reads_fwd and src["phase"] == "forward":
                    edge_kind = "residual"
                    src["residual"] = True
                else:
                    edge_kind = data_kind
                u = src["name"]
                had = into.get(u)              # not None: one value read twice, as in x * x
                if had is None:
                    succ[u][eid] = into[u] = {"kind": edge_kind, "positions": (pos,)}
                else:
                    had["positions"] += (pos,)
            else:
                text = lit_texts.get(id(x.value)) or lit_texts.setdefault(id(x.value), format_literal(x.value))
                literals.append((pos, text))
                lid = f"lit/{out0}.{pos}"
                node[lid] = {"kind": "constant", "phase": phase, "order": len(node), "scope": scope,
                             "value": text, "aval": (avals.get(id(x.aval)) or aval_text(x.aval))[0]}
                into[lid] = d = {"kind": "data", "positions": (pos,)}
                succ[lid], pred[lid] = {eid: d}, {}
        source = e.source
        line = lines[source] if source in lines else lines.setdefault(source, source_line(source))
        try:
            prim = prims[e.prim, e.params]
        except KeyError:
            prim = prims[e.prim, e.params] = _prim_texts(e)
        except TypeError:                  # unhashable params
            prim = _prim_texts(e)
        node[eid] = {
            "kind": prim[0], "phase": phase, "order": len(node), "scope": scope, "index": index,
            "primitive": prim[1], "params": prim[2], "literals": literals,
            "outputs": [out0] if len(outputs) == 1 else [repr(v) for v in outputs], "source": source,
            "source_line": line, "origin": kind, "of": of, "rule": rule, "provenance": provenance}
        succ[eid] = out = {}
        pred[eid] = into
        for pos, v in enumerate(outputs):
            name = out0 if pos == 0 else repr(v)
            aval = v.aval
            text = avals.get(id(aval)) or aval_text(aval)
            var_attrs[v] = attrs = {
                "kind": None, "phase": phase, "order": len(node), "scope": scope, "name": name,
                "shape": aval.shape, "dtype": text[1], "aval": text[0], "label": "", "output": output_of(v, ""),
                "residual": False, "cotangent_of": cotangent_of(v), "tangent_of": tangent_of(v), "producer": eid,
                "value": summary(name)}
            if name in node:
                raise _defined_twice(name)
            node[name] = attrs
            out[name] = d = {"kind": "result", "positions": (pos,)}
            succ[name], pred[name] = {}, {eid: d}

    for pos, x in enumerate(tape.outputs):
        if type(x) is Lit:
            lid = f"lit/out.{pos}"
            node[lid] = {"kind": "constant", "phase": "forward", "order": len(node), "scope": (),
                         "value": format_literal(x.value), "aval": str(x.aval), "output": out_names[pos]}
            succ[lid], pred[lid] = {}, {}
    for attrs in var_attrs.values():
        if attrs["kind"] is None:
            attrs["kind"] = ("output" if attrs["output"] else "residual" if attrs["residual"]
                             else "intermediate" if attrs["phase"] == "forward"
                             else "tangent" if attrs["phase"] == "tangent" else "cotangent")

    gradient = any(o[3] is not OriginKind.PRIMAL for o in origins.values())
    graph = nx.DiGraph(blocks=blocks, pushforwards=pushforwards, instances=instances, failures=[], hops_per_step=2,
                       gradient=gradient)
    graph._node.update(node)
    graph._succ.update(succ)
    graph._pred.update(pred)
    if checks is not None:
        annotate(graph, checks)
    return graph


def _defined_twice(name: str) -> ValueError:
    return ValueError(f"{name} is defined twice in this tape, which to_networkx cannot draw: a "
                      "variable has one definition (ad.validate(tape) says where it is not so)")


def _prim_texts(e: Eqn) -> tuple[str, str, str]:
    """An equation's node kind, primitive name and params text (``axis=(1,) keepdims=True``)."""
    return ("guard" if e.prim.kind == "guard" else "equation", e.prim.name,
            " ".join(f"{k}={format_param(v)}" for k, v in e.params))


def _output_names(tape: Tape) -> list[str]:
    if "output_names" in tape.meta:        # a tape assembled for showing names its outputs itself
        return list(tape.meta["output_names"])
    n_values = getattr(tape, "n_values", len(tape.outputs))
    if tape.out_tree is not None:
        names = pytree.leaf_paths(tape.out_tree, "out")
    else:
        names = [f"out[{i}]" for i in range(n_values)]
    wrt = getattr(tape, "wrt", ())
    grads = [f"grad {tape.input_names[i]}" for i in wrt]
    grads += [f"grad[{i}]" for i in range(len(grads), len(tape.outputs) - n_values)]
    return names[:n_values] + grads


def _exact_cotangents(tape: Tape) -> dict:
    """Variables that are exactly the cotangent of a forward variable (seeds, fan-in sums,
    structural zeros, the returned gradients). Pullback outputs are contributions, not totals."""
    out = {}
    for e in tape.eqns:
        if e.origin.kind in (OriginKind.SEED, OriginKind.ACCUMULATE, OriginKind.ZEROS) and e.origin.of is not None:
            out[e.outputs[0]] = repr(e.origin.of)
    n_values = getattr(tape, "n_values", len(tape.outputs))
    for i, g in zip(getattr(tape, "wrt", ()), tape.outputs[n_values:]):
        if type(g) is Var and g not in tape.inputs:
            out[g] = repr(tape.inputs[i])
    return out


def _exact_tangents(tape: Tape) -> dict:
    """Variables that are the tangent of a forward variable: ``tape.meta["tangents"]`` (tangent
    variable -> primal variable, for the tangent inputs), and the one result of each pushforward
    block that is read after it (or returned) and has its primal's aval. A block whose tangents
    cannot be told apart that way (several such results) names none."""
    out = {t: repr(p) for t, p in tape.meta.get("tangents", {}).items()}
    blocks: dict = {}
    for e in tape.eqns:
        if e.origin.kind in PUSHFORWARD_BLOCK and e.origin.of is not None:
            blocks.setdefault(e.origin.of, set()).update(e.outputs)
    if not blocks:
        return out
    used_after: dict = {}             # variable -> the blocks (or None: other equations) reading it
    for e in tape.eqns:
        of = e.origin.of if e.origin.kind in PUSHFORWARD_BLOCK else None
        for x in e.inputs:
            if type(x) is Var:
                used_after.setdefault(x, set()).add(of)
    returned = set(tape.outputs)
    for of, defined in blocks.items():
        found = [v for v in defined if v.aval == of.aval
                 and (v in returned or any(b != of for b in used_after.get(v, ())))]
        if len(found) == 1:
            out[found[0]] = repr(of)
    return out


# -- check results ---------------------------------------------------------------------------

def annotate(graph: nx.DiGraph, report) -> nx.DiGraph:
    """Attach a check report's failures to the nodes they name (in place; returns the graph).

    ``report`` is anything with ``.failures``, each having ``.name``, ``.message`` and
    ``.equation``: an ``Eqn``, a ``Var``, a name ("%n" or "eq/%n") or None (a failure of the
    whole program, kept only in ``graph.graph["failures"]``).
    """
    failures = getattr(report, "failures", None)
    if failures is None:
        raise TypeError(f"annotate takes a check report with .failures, not {type(report).__name__}")
    for f in failures:
        node = node_of(graph, getattr(f, "equation", None))
        entry = (str(f.name), str(f.message))
        if node is not None:
            graph.nodes[node].setdefault("failures", []).append(entry)
        graph.graph["failures"].append((node, *entry))
    return graph


def node_of(graph, ref) -> str | None:
    """The node an ``Eqn``, ``Var`` or name refers to: a variable's producing equation when it
    has one (a failure belongs to the equation), else the node itself; None when absent. Names
    may be "%n", "eq/%n" or a printed equation ("%9:f64[8,3] = matmul %8 %2", as the checker
    reports them)."""
    if ref is None:
        return None
    if isinstance(ref, Eqn):
        ref = "eq/" + repr(ref.outputs[0])
    elif not isinstance(ref, str):
        ref = repr(ref)
    if ref in graph and not graph.nodes[ref].get("producer"):
        return ref
    name = _FIRST_NAME.match(ref)
    if name and "eq/" + name.group(1) in graph:
        return "eq/" + name.group(1)
    return ref if ref in graph else None


_FIRST_NAME = re.compile(r"\s*(?:eq/)?(%\d+)")


# -- queries ---------------------------------------------------------------------------------

def forward(graph: nx.DiGraph):
    """The forward section: inputs, forward equations and their values (a subgraph view)."""
    return graph.subgraph([n for n, d in graph.nodes(data=True) if d["phase"] == "forward"])


def backward(graph: nx.DiGraph):
    """The backward section plus the residuals it reads (as the backward tape's inputs)."""
    return graph.subgraph(backward_nodes(graph))


def backward_nodes(graph) -> list[str]:
    keep = []
    for n, d in graph.nodes(data=True):
        if d["phase"] == "backward" or d.get("residual"):
            keep.append(n)
    return keep


def pullback_block(graph: nx.DiGraph, var) -> list[str]:
    """The equations of the pullback of forward variable ``var`` (the rule instance whose first
    output it is), and the variables they define, in tape order.

    >>> graph = tapeviz.to_networkx(ad.grad_tape(lambda x: np.sum(np.sin(x) * x), np.ones(3)))
    >>> [graph.nodes[n]["primitive"] for n in tapeviz.pullback_block(graph, "%1") if n.startswith("eq/")]
    ['cos', 'multiply']
    """
    name = var if isinstance(var, str) else repr(var)
    out = []
    for eid in graph.graph["blocks"].get(name, ()):
        out.append(eid)
        out.extend(graph.nodes[eid]["outputs"])
    return out


def pushforward_block(graph: nx.DiGraph, var) -> list[str]:
    """The equations of the pushforward of primal variable ``var`` (forward mode's mirror of
    ``pullback_block``), and the variables they define, in tape order."""
    name = var if isinstance(var, str) else repr(var)
    out = []
    for eid in graph.graph["pushforwards"].get(name, ()):
        out.append(eid)
        out.extend(graph.nodes[eid]["outputs"])
    return out


class Residual(NamedTuple):
    var: str                 # the forward variable
    producer: str | None     # its equation (None for an input)
    consumers: list[str]     # the backward equations that read it


def residuals(graph: nx.DiGraph) -> list[Residual]:
    """Every forward value the backward pass reads, with where it is made and read.

    >>> graph = tapeviz.to_networkx(ad.grad_tape(lambda x: np.sum(np.sin(x) * x), np.ones(3)))
    >>> [(r.var, r.producer) for r in tapeviz.residuals(graph)]       # x and sin(x)
    [('%0', None), ('%1', 'eq/%1')]
    """
    out = []
    for n, d in graph.nodes(data=True):
        if d.get("residual"):
            consumers = sorted((v for v, e in graph.succ[n].items() if e["kind"] == "residual"),
                               key=lambda v: graph.nodes[v]["order"])
            out.append(Residual(n, d.get("producer"), consumers))
    return out


SHARED_LIMIT = 8
"""A window does not spread through a *shared* node of the detail graph: a variable read by more
than this many equations (a weight every step of a loop reads, an RNN's ``Wh``; a forward value
every pullback reads as a residual) or an equation with more than this many operand variables (a
fan-in sum). Such a node is in a window when it is within reach, but its other readers (or
operands) are not pulled in through it; ``left_out`` counts them, for a note beside it. Without
the limit the window of any step of a 100,000-equation loop sharing one weight is the whole tape."""


def shared_fan(graph, n) -> tuple[int, str] | None:
    """(its readers, "readers") of a variable read by more than ``SHARED_LIMIT`` equations,
    (its operand variables, "operands") of an equation with more than that many; else None.
    Collapsed graphs have no shared nodes."""
    if graph.graph.get("group_of") is not None:
        return None
    d = graph.nodes[n]
    if d["kind"] in EQUATION_KINDS:
        nodes = graph.nodes
        operands = [u for u in graph.pred[n] if nodes[u]["kind"] != "constant"]
        return (operands, "operands") if len(operands) > SHARED_LIMIT else None
    if d["kind"] == "constant":
        return None
    readers = graph.succ[n]
    return (list(readers), "readers") if len(readers) > SHARED_LIMIT else None


def left_out(graph, nodes) -> dict[str, tuple[int, str]]:
    """Per shared node among ``nodes`` (a window), in their order: how many of its readers (or
    operands) the window leaves out, and which ("readers" or "operands"); only those leaving
    some out."""
    drawn = set(nodes)
    out = {}
    for n in nodes:
        fan = shared_fan(graph, n)
        if fan is not None:
            missing = sum(1 for m in fan[0] if m not in drawn)
            if missing:
                out[n] = (missing, fan[1])
    return out


def neighbourhood(graph, node, k: int) -> list[str]:
    """The nodes within ``k`` steps of ``node`` (either direction), in tape order. A step is one
    equation: in the detail graph a variable, its equations and their other operands and results
    are one step apart. Accepts a variable name for its equation and vice versa. The window does
    not spread through a shared node other than ``node`` (``SHARED_LIMIT``: a variable with many
    readers, an equation with many operands): it is in the window, its other neighbours are not
    reached through it (``left_out`` counts them).

    >>> graph = tapeviz.to_networkx(ad.trace(lambda x: np.sum(np.sin(x) * x), np.ones(3)))
    >>> tapeviz.neighbourhood(graph, "%2", 1)
    ['%0', '%1', 'eq/%2', '%2', 'eq/%3', '%3']
    """
    start = resolve_node(graph, node)
    if k < 0:
        raise ValueError(f"k={k}: the window needs k >= 0 steps")
    hops = k * graph.graph.get("hops_per_step", 1)
    seen = {start: 0}
    todo = deque([start])
    while todo:
        n = todo.popleft()
        d = seen[n]
        if d == hops or (n != start and shared_fan(graph, n) is not None):
            continue
        for m in _adjacent(graph, n):
            if m not in seen:
                seen[m] = d + 1
                todo.append(m)
    window = set(seen)
    for n in seen:             # an equation comes with its results, so it can be drawn whole
        if graph.nodes[n]["kind"] in EQUATION_KINDS:
            window.update(graph.nodes[n]["outputs"])
    return sorted(window, key=lambda n: graph.nodes[n]["order"])


def _adjacent(graph, n):
    yield from graph.succ[n]
    yield from graph.pred[n]


def resolve_node(graph, node) -> str:
    """The node of ``graph`` that ``node`` (an ``Eqn``, a ``Var`` or a name) refers to: the node
    itself, the group holding it in a collapsed graph, or the equation of a name ("%7" for
    "eq/%7") when only that is a node; a ``KeyError`` that says how nodes are named otherwise.
    Unlike ``node_of``, a variable drawn on its own is itself, not its producing equation."""
    ref = node if isinstance(node, str) else ("eq/" + repr(node.outputs[0]) if isinstance(node, Eqn)
                                             else repr(node))
    if ref in graph:
        return ref
    group = graph.graph.get("group_of", {}).get(ref)
    if group is not None:
        return group
    if "eq/" + ref in graph:
        return "eq/" + ref
    raise KeyError(f"{ref!r} is not a node of this graph; nodes are named like '%7' (variables) "
                   f"and 'eq/%7' (equations), as in the text listing")
