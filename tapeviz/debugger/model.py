"""The debugger's state, without widgets: the steps of a gradient tape at two granularities, the
rows that pair each forward rule instance with its pullback block, the cursor, the selection,
check results, and everything derived from them (partners, what a step writes, the phase line).
In forward mode (``jvp_tape``) the tape is a linearization's and the rows pair each primal
equation with its pushforward block: the same model, the tangent phase on the right.

Everything per equation is computed in one pass when the model is built, or when first needed
(the steps of the "primitive" granularity, the steps' scopes and frames, the residuals table,
the scope tree); a step or a selection only moves indices, so the view can redraw a window of
a 100,000-equation tape in milliseconds.

Vocabulary: an *instance* is one firing of a rule, named by its first output (``%9``); its
forward *body* is the equations with ``Origin(OriginKind.PRIMAL, of=%9)`` and its pullback *block* those
with ``Origin(OriginKind.PULLBACK | "project", of=%9)``. A *step* is a run of equations the cursor moves
over at once: an instance body or a pullback block ("pullback" granularity), or one equation
("primitive" granularity); fan-in accumulation, the seed and structural zeros are steps of their
own at both. A *row* pairs an instance body (left) with the backward equations about its
outputs: its pullback block and the fan-in sums and zeros of its cotangents (right). In forward
mode a pushforward block (``Origin("pushforward*", of=%9)``) is a step like a pullback block,
and a row's right side is its pushforward block.
"""
from __future__ import annotations

import bisect
import functools
import gc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import ad
from ad import pytree
from ad.origins import OriginKind
from ad.tape import Eqn, InvalidTapeError, Tape, Var, eval_tape, gc_paused, validate

from ..graph import (BACKWARD_BLOCK, EQUATION_KINDS, PUSHFORWARD_BLOCK, TANGENT_KINDS, annotate,
                     node_of, to_networkx)
from ..values import values_of
from .navigation import Breakpoints, Navigation

GRANULARITIES = ("pullback", "primitive")


RIGHT_BLOCKS = BACKWARD_BLOCK + PUSHFORWARD_BLOCK    # origins of the blocks shown beside an instance
FORWARD_KIND = OriginKind.PRIMAL                   # the one origin of the forward phase
NOT_VARIABLES = EQUATION_KINDS | {"constant"}      # the graph's other node kinds


class Step(NamedTuple):
    phase: str            # "forward", "backward" or "tangent"
    kind: str             # the equations' origin: primal, pullback, pushforward, accumulate, seed, zeros,
                          # tangent_zeros
    start: int            # equation indices [start, stop)
    stop: int
    of: str | None        # the forward variable the step belongs to
    rule: str | None


class Mark(NamedTuple):
    """A check result pinned on an equation; ``partner`` when it is about equation ``eqn`` on
    the other side (a forward rule instance and its pullback block share their findings)."""
    status: str           # "fail" or "warn"
    check: str
    message: str
    partner: bool
    eqn: int              # the equation the check named


class Alert(NamedTuple):
    status: str
    check: str
    message: str
    eqn: int | None       # the first offending equation, if the check names one


def build_steps(gt, granularity: str) -> list[Step]:
    """The steps of a gradient tape at ``granularity`` (see the module docstring)."""
    if granularity not in GRANULARITIES:
        raise ValueError(f"granularity={granularity!r}; choose one of {GRANULARITIES}")
    runs: list[list] = []                  # [origin kind, start, stop, of (a Var), rule], Steps once whole
    append = runs.append
    primitive = granularity == "primitive"
    last_key = None
    for i, e in enumerate(gt.eqns):
        o = e.origin
        kind, of = o.kind, o.of
        if primitive or of is None:
            key = None
        elif kind is FORWARD_KIND:           # the forward phase
            key = ("body", of)
        elif kind in RIGHT_BLOCKS:
            key = ("block", of)
        else:
            key = None                     # fan-in, seed, zeros: a step each
        if key is not None and key == last_key:
            runs[-1][2] = i + 1
        else:
            append([kind, i, i + 1, of, o.rule or e.prim.name])
        last_key = key
    return [Step(kind.phase, kind.block or kind, start, stop, None if of is None else repr(of), rule)
            for kind, start, stop, of, rule in runs]


class Steps(Mapping):
    """The steps of a tape at each granularity (``GRANULARITIES``), each list built when first
    read: a session that never switches to "primitive" never makes a step per equation."""

    def __init__(self, gt):
        self.gt = gt
        self._lists: dict[str, list[Step]] = {}

    def __getitem__(self, granularity: str) -> list[Step]:
        steps = self._lists.get(granularity)
        if steps is None:
            if granularity not in GRANULARITIES:
                raise KeyError(granularity)
            steps = self._lists[granularity] = build_steps(self.gt, granularity)
        return steps

    def __iter__(self):
        return iter(GRANULARITIES)

    def __len__(self) -> int:
        return len(GRANULARITIES)

    def starts(self, granularity: str):
        """The first equations of the steps, ascending (at "primitive", every equation)."""
        if granularity == "primitive":
            return range(len(self.gt.eqns))
        return [s.start for s in self[granularity]]


def built_in_one_go(fn):
    """``fn`` (a session's construction) run with the cyclic garbage collector paused, as
    ``ad.tape.gc_paused`` does: a 100,000-equation session is two million small objects, and
    every collection meanwhile would scan those made so far again. What was made is then moved
    to the collector's oldest generation without a scan (``gc.freeze``, ``gc.unfreeze``), where
    the next full collection finds it: left young, it would be scanned by the first collections
    after (on the first clicks), young, middle-aged and old in turn. A process that froze
    objects itself keeps them frozen: the move is skipped."""
    paused = gc_paused(fn)

    @functools.wraps(fn)
    def built(*args, **kwargs):
        collecting = gc.isenabled()
        try:
            return paused(*args, **kwargs)
        finally:
            if collecting and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
    return built


@dataclass
class Row:
    key: str | None       # the instance's first output; None for the inputs' row
    forward: list[int]
    backward: list[int]   # the right side: pullback block and fan-ins, or (forward mode) pushforward block


def jvp_tape(f, primals, tangents) -> tuple[Tape, dict]:
    """The tape the forward-mode debugger steps through, and every variable's value by name:
    ``ad.linearize``'s forward section, then its tangent tape (its residual inputs read as the
    forward values they are), with the pushforward equations that the linearization hoisted into
    the forward section (what a pushforward computes from the primals alone, ``cos x`` for
    ``sin``: run once, with the forward pass) shown in their pushforward block. ``meta`` holds
    ``n_tangents`` (the trailing tangent inputs), ``tangents`` (tangent input -> its primal),
    ``hoisted`` (those equations' first outputs), ``fallbacks`` and ``output_names``.

    ``primals`` and ``tangents`` are as ``ad.jvp``'s: a None tangent leaves that argument constant.
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("debug_jvp takes primals and tangents as tuples, as ad.jvp does: "
                        "tapeviz.debug_jvp(f, (x,), (t,))")
    if len(primals) != len(tangents):
        raise TypeError(f"{len(primals)} primals and {len(tangents)} tangents")
    argnums = tuple(i for i, t in enumerate(tangents) if t is not None)
    if not argnums:
        raise ValueError("every tangent is None: give a tangent for at least one argument")
    primal = ad.trace(f, *primals)
    _, f_jvp = ad.linearize(f, *primals, argnums=argnums)
    expected = f_jvp(*(tangents[i] for i in argnums))        # checks the tangents' shapes and dtypes
    fwd, tan = f_jvp.forward, f_jvp.tape
    n_res = len(f_jvp.residuals)
    n_values = len(fwd.outputs) - n_res
    sub: dict = dict(zip(tan.inputs[:n_res], fwd.outputs[n_values:]))
    taken = {v.n for v in fwd.inputs} | {v.n for e in fwd.eqns for v in e.outputs}
    fresh = iter(range(max(taken | {v.n for v in tan.vars.values()}) + 1, 1 << 62))

    def new(v: Var) -> Var:
        out = sub[v] = v if v.n not in taken else Var(next(fresh), v.aval)
        return out

    def renamed(x):
        return sub.get(x, x) if type(x) is Var else x

    tangent_inputs = [new(v) for v in tan.inputs[n_res:]]
    tangent_eqns = [Eqn(e.prim, tuple(map(renamed, e.inputs)), e.params, tuple(map(new, e.outputs)), e.source,
                        e.origin, e.scope) for e in tan.eqns]
    primal_eqns = [e for e in fwd.eqns if e.origin.kind not in TANGENT_KINDS]
    hoisted = [e for e in fwd.eqns if e.origin.kind in TANGENT_KINDS]
    made_at = {v: i for i, e in enumerate(primal_eqns) for v in e.outputs}
    by_instance = sorted(hoisted + tangent_eqns, key=lambda e: made_at.get(e.origin.of, -1))
    by_name = {name: v for v, name in zip(fwd.inputs, fwd.input_names)}
    meta = {"mode": "forward", "n_tangents": len(tangent_inputs),
            "tangents": {t: by_name[name.removeprefix("t_")]        # linearize names them t_<input>
                         for t, name in zip(tangent_inputs, tan.input_names[n_res:])},
            "hoisted": {repr(e.outputs[0]) for e in hoisted}, "fallbacks": f_jvp.fallbacks}
    out_names = pytree.leaf_paths(primal.out_tree, "out")
    meta["output_names"] = out_names + [f"tangent {name}" for name, x in zip(out_names, fwd.outputs)
                                        if x.aval.is_float]

    def make(eqns) -> Tape:
        return Tape(tuple(fwd.inputs) + tuple(tangent_inputs), tuple(primal_eqns + eqns),
                    tuple(fwd.outputs[:n_values]) + tuple(map(renamed, tan.outputs)),
                    input_names=tuple(fwd.input_names) + tuple(tan.input_names[n_res:]), meta=meta)
    try:
        tape = validate(make(by_instance))
    except InvalidTapeError:       # a block reads a later one's value: show them as the linearization runs them
        tape = make(hoisted + tangent_eqns)
    position = {v: i for i, v in enumerate(fwd.inputs)}
    leaves = primal.flatten_args(tuple(p if t is None else t for p, t in zip(primals, tangents)))
    ts = [np.asarray(leaves[position[meta["tangents"][t]]], t.aval.dtype) for t in tangent_inputs]
    env: dict = {}
    with np.errstate(all="ignore"):          # NaN and Inf are shown, not warned about
        eval_tape(tape, primal.flatten_args(tuple(primals)) + ts, env)
    values = {repr(v): x for v, x in env.items()}
    got = [env[x] if type(x) is Var else x.value for x in tape.outputs[n_values:]]
    # the linearization's own tapes run as the debugger's does: the rules' primal bodies give the
    # residuals (ad.linearize takes the traced values, which differ where a rule's primal is wrong)
    with np.errstate(all="ignore"):
        residuals = eval_tape(fwd, primal.flatten_args(tuple(primals)))[n_values:]
        want = eval_tape(tan, list(residuals) + ts)
    if not all(np.allclose(g, w, equal_nan=True) for g, w in zip(got, want)):
        raise RuntimeError("the debugger's tape disagrees with ad.linearize's tangents (a bug in "
                           "tapeviz.debugger.model.jvp_tape: please report it with the function)")
    return tape, values


class DebugModel:
    """State and precomputed structure of one debugging session (no widgets here).

    gt: the gradient tape (``ad.grad_tape``), or in forward mode the tape of ``jvp_tape``;
    args: the arguments it was built at. ``values`` holds every variable's value by name,
    evaluated once (given, in forward mode: ``jvp_tape``'s). ``nav`` (``navigation.Navigation``)
    says where stepping by call, run-to and breakpoints go; ``breakpoints`` holds the targets.
    """

    def __init__(self, gt, args, values=None):
        self.gt = gt
        self.eqns = gt.eqns
        self.mode = gt.meta.get("mode", "reverse")
        self.other_pass = "tangent pass" if self.mode == "forward" else "backward pass"
        self.fallbacks = getattr(gt, "fallbacks", None) or gt.meta.get("fallbacks", ())
        if values is None:
            with np.errstate(all="ignore"):          # NaN and Inf are shown, not warned about
                values = values_of(gt, *args)
        self.values = values
        self.graph = to_networkx(gt, values=self.values)
        self.var_attrs = {n: d for n, d in self.graph.nodes(data=True) if d["kind"] not in NOT_VARIABLES}
        self.steps = Steps(gt)
        self._starts: dict = {}
        self.rows, self.row_of_eqn, self.producer_index = self._rows()
        # one pass over the variables: tangents, residuals (in tape order), exact cotangents
        self.tangents, residuals, exact = {}, [], []
        for n, d in self.var_attrs.items():
            if d.get("tangent_of"):
                self.tangents[d["tangent_of"]] = n
            if d.get("residual"):
                residuals.append(n)
            if d.get("cotangent_of") is not None:
                exact.append((d["cotangent_of"], n))
        self.residual_order = {r: k for k, r in enumerate(residuals)}
        self.cotangents = self._cotangents(exact)
        self.granularity = "pullback"
        self.index = 0
        self.selected: str | None = None
        self.report = None
        self.marks: dict[int, list[Mark]] = {}
        self.alerts: list[Alert] = []
        self.checks_version = 0
        self._residual_table: list[dict] | None = None
        self.nav = Navigation(self)
        self.breakpoints = Breakpoints(self.nav.target)

    # -- structure -------------------------------------------------------------------------
    def _rows(self) -> tuple[list[Row], list[int], dict[str, int]]:
        """The rows, each equation's row, and each variable's producing equation, in one pass."""
        rows = [Row(None, [], [])]
        row_of_var = {repr(v): 0 for v in self.gt.inputs}
        row_of_eqn = [0] * len(self.eqns)
        producer: dict[str, int] = {}
        for i, e in enumerate(self.eqns):
            o = e.origin
            if o.kind is not FORWARD_KIND:       # o.is_backward, without a call per equation
                r = row_of_var.get(repr(o.of), 0) if o.of is not None else 0
                rows[r].backward.append(i)
                for v in e.outputs:
                    producer[repr(v)] = i
            else:
                key = repr(o.of) if o.of is not None else repr(e.outputs[0])
                r = row_of_var.get(key)
                if r is None or rows[r].key != key:
                    r = len(rows)
                    rows.append(Row(key, [], []))
                    row_of_var[key] = r
                rows[r].forward.append(i)
                for v in e.outputs:
                    name = repr(v)
                    producer[name] = i
                    row_of_var.setdefault(name, r)
            row_of_eqn[i] = r
        return rows, row_of_eqn, producer

    def _cotangents(self, exact: list[tuple[str, str]]) -> dict[str, str]:
        """Forward variable -> the variable holding its total cotangent (absent: none flows);
        ``exact``: (forward variable, variable) of the variables that are exactly a cotangent."""
        out = {}
        for v, c in self.gt.meta.get("cotangents", {}).items():
            if type(c) is Var:
                out[repr(v)] = repr(c)
        for of, n in exact:                          # structural zeros, returned gradients
            if of not in out:
                out[of] = n
        return out

    # -- cursor ----------------------------------------------------------------------------
    @property
    def step_list(self) -> list[Step]:
        return self.steps[self.granularity]

    @property
    def step(self) -> Step:
        return self.step_list[self.index]

    @property
    def n_steps(self) -> int:
        return len(self.step_list)

    def step_of(self, eqn: int, granularity: str | None = None) -> int:
        """The step (at ``granularity``, default the current one) that runs equation ``eqn``."""
        g = granularity or self.granularity
        starts = self._starts.get(g)
        if starts is None:
            starts = self._starts[g] = self.steps.starts(g)
        return bisect.bisect_right(starts, eqn) - 1

    def step_to(self, i: int) -> int:
        n = self.n_steps
        if not -n <= i < n:
            raise IndexError(f"step {i} is out of range: this tape has {n} steps at "
                             f"{self.granularity!r} granularity (0 to {n - 1})")
        self.index = i % n
        return self.index

    def set_granularity(self, granularity: str) -> None:
        """Switch granularity, keeping the cursor on the equation it is at."""
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity={granularity!r}; choose one of {GRANULARITIES}")
        eqn = self.step.start
        self.granularity = granularity
        self.index = self.step_of(eqn)

    @property
    def current(self) -> str:
        """The ``%n`` name of the current step's first equation's first output."""
        return repr(self.eqns[self.step.start].outputs[0])

    def written(self, step: Step | None = None) -> list[str]:
        """The variables a step writes: what changed since the previous step."""
        step = step or self.step
        return [repr(v) for e in self.eqns[step.start:step.stop] for v in e.outputs]

    def title(self, step: Step | None = None) -> str:
        """What a step does, in words: "pullback of %9 (matmul)"."""
        step = step or self.step
        e = self.eqns[step.start]
        n = step.stop - step.start
        if e.prim.kind == "guard":      # its outcome: these arguments are the ones it was traced on
            x, expected = e.inputs
            return f"guard {x!r} == {expected!r} holds: the branch the trace took at {e.source}"
        if step.phase == "forward":
            body = self.rows[self.row_of_eqn[step.start]]
            out = step.of or repr(e.outputs[0])
            text = f"{step.rule} \u2192 {out}"
            if len(body.forward) > 1:
                text = f"rule {text}"
                if n == 1:
                    k = body.forward.index(step.start) + 1
                    text += f", equation {k} of {len(body.forward)}: {e.prim.name}"
            return text + (f" ({n} equations)" if n > 1 else "")
        if step.kind in (OriginKind.PULLBACK, OriginKind.PUSHFORWARD):
            derived = e.origin.kind not in (OriginKind.PUSHFORWARD_VJP, OriginKind.PUSHFORWARD_FRULE)   # else say which
            text = f"{step.kind} of {step.of} ({step.rule})" if derived else e.origin.describe()
            if n == 1:
                block = [i for i in self.rows[self.row_of_eqn[step.start]].backward
                         if self.eqns[i].origin.kind in RIGHT_BLOCKS]
                if len(block) > 1:
                    text += f", equation {block.index(step.start) + 1} of {len(block)}: {e.prim.name}"
            return text + (f" ({n} equations)" if n > 1 else "")
        if step.kind is OriginKind.ACCUMULATE:
            return f"fan-in: accumulate cotangent of {step.of}"
        return e.origin.describe()

    def phase_line(self) -> str:
        """"backward, step 14 of 52: pullback of %9 (matmul)"."""
        return f"{self.step.phase}, step {self.index + 1} of {self.n_steps}: {self.title()}"

    # -- selection -------------------------------------------------------------------------
    def select(self, name: str | None) -> str | None:
        """Select a variable by name ("%7"; "eq/%7" names its equation's first output)."""
        if name is None:
            self.selected = None
            return None
        name = str(name).strip().removeprefix("eq/")
        if name not in self.var_attrs:
            raise KeyError(f"{name!r} is not a variable of this tape; variables are named "
                           f"'%0' to '%{len(self.var_attrs) - 1}' as in the listing")
        self.selected = name
        return name

    @property
    def focus(self) -> str:
        """What the inspector shows: the selection, else the current step's first result."""
        return self.selected or self.current

    def partners(self, name: str | None = None) -> tuple[set[int], set[str]]:
        """The equations (and residual variables) on the other side of a variable's equation:
        a forward equation's pullback block and fan-ins; a backward equation's forward origin
        and the residuals it reads; an input's gradient equations and readers."""
        name = name or self.selected
        if name is None:
            return set(), set()
        p = self.producer_index.get(name)
        if p is None:                                    # an input
            readers = {self.graph.nodes[s]["index"] for s, e in self.graph.succ[name].items()
                       if e["kind"] == "residual"}
            own = {i for i in self.rows[0].backward if repr(self.eqns[i].origin.of) == name}
            return readers | own, set()
        row = self.rows[self.row_of_eqn[p]]
        if not self.eqns[p].origin.is_backward:
            return set(row.backward), set()
        reads = {repr(x) for x in self.eqns[p].inputs if type(x) is Var}
        residuals = {r for r in reads if self.var_attrs[r].get("residual")
                     and self.var_attrs[r]["phase"] == "forward"}
        eqns = set(row.forward) | {self.producer_index[r] for r in residuals if r in self.producer_index}
        return eqns, residuals

    def instance_of(self, name: str) -> str | None:
        """The rule instance (its first output) a variable's equation belongs to."""
        p = self.producer_index.get(name)
        if p is None:
            return None
        o = self.eqns[p].origin
        if o.of is not None:
            return repr(o.of)
        return name if not o.is_backward else None

    # -- checks ----------------------------------------------------------------------------
    def set_report(self, report) -> None:
        """Pin a check report on the tape: marks on equations (both sides), alerts, graph colours."""
        for node, *_ in self.graph.graph["failures"]:
            if node is not None:
                self.graph.nodes[node].pop("failures", None)
        self.graph.graph["failures"] = []
        annotate(self.graph, report)
        self.report = report
        self.marks, self.alerts = {}, []
        results = [c for c in report.checks if c.status in ("fail", "warn")]
        for r in getattr(report, "equations", ()):
            results += [c for c in r.checks if c.status in ("fail", "warn")]
        culprit = getattr(getattr(report, "culprit", None), "equation", None)
        culprit_eqn = self.eqn_named(culprit)
        for c in sorted(results, key=lambda c: c.status != "fail"):
            eqn = self.eqn_named(c.equation)
            if eqn is not None:
                self._mark(eqn, c)
            self.alerts.append(Alert(c.status, c.name, c.message, eqn if eqn is not None else culprit_eqn))
        self.checks_version += 1

    def _mark(self, eqn: int, c) -> None:
        self.marks.setdefault(eqn, []).append(Mark(c.status, c.name, c.message, False, eqn))
        row = self.rows[self.row_of_eqn[eqn]]
        other = row.backward if not self.eqns[eqn].origin.is_backward else row.forward
        if other:
            self.marks.setdefault(other[0], []).append(Mark(c.status, c.name, c.message, True, eqn))

    def eqn_named(self, ref) -> int | None:
        """The index of the equation a check names ("%9:f64[8,3] = matmul %8 %2"), if any."""
        node = node_of(self.graph, ref) if ref else None
        if node is None:
            return None
        d = self.graph.nodes[node]
        return d["index"] if d["kind"] in EQUATION_KINDS else None

    def target_of(self, eqn: int) -> int:
        """Where an alert about equation ``eqn`` takes the cursor: a forward rule instance's
        pullback block (where its wrong cotangents are made), else the equation itself."""
        row = self.rows[self.row_of_eqn[eqn]]
        if not self.eqns[eqn].origin.is_backward:
            block = [i for i in row.backward if self.eqns[i].origin.kind in RIGHT_BLOCKS]
            if block:
                return block[0]
        return eqn

    # -- residuals -------------------------------------------------------------------------
    def residual_table(self) -> list[dict]:
        """Every forward value the backward pass reads: shape, bytes, producer, consumers and the
        equations between which it must be kept (its lifetime). Built once."""
        if self._residual_table is not None:
            return self._residual_table
        out = self._residual_table = []
        consumers: dict[str, list[int]] = {name: [] for name in self.residual_order}
        for i, e in enumerate(self.eqns):     # the graph's "residual" edges, in one pass
            if e.origin.kind is FORWARD_KIND:
                continue
            for x in e.inputs:
                if type(x) is Var:
                    readers = consumers.get(repr(x))
                    if readers is not None and (not readers or readers[-1] != i):
                        readers.append(i)
        for name, readers in consumers.items():
            d = self.var_attrs[name]
            producer = self.producer_index.get(name)
            value = self.values.get(name)
            nbytes = value.nbytes if isinstance(value, np.ndarray) else np.asarray(value).nbytes
            out.append({"name": name, "label": d["label"], "aval": d["aval"], "bytes": int(nbytes),
                        "producer": producer, "consumers": readers,
                        "first": producer if producer is not None else -1,
                        "last": readers[-1] if readers else -1})
        self.residual_firsts = [r["first"] for r in out]     # ascending: residuals in tape order
        self.residual_bytes = sum(r["bytes"] for r in out)
        return out
