"""What the debugger's view reads, as JSON-ready dicts made from a ``DebugModel``: the parts of a
*frame* (the ``_frame`` trait of the widget), shared by the live widget, which sends the current
one after every action, and by static pages, which embed every step's and every variable's part
so the same view can answer clicks without a kernel (``page``).

A frame is ``{"eqns", "pane", "mode", "granularity", "step", "selected", "sel", "closure",
"message", "checks"}`` (``mode``: "reverse", or "forward" for a linearization): ``step`` (``step_part``) depends on the cursor alone, ``sel`` (``sel_part``) on the
selection alone, ``checks`` (``checks_part``) on the last report. The outline pane reads the
program's scope tree (``outline_part``) once, and again after checks (its status marks).

A static page embeds no frame per step: ``steps_part`` (each step's place, phase line and scope)
and ``tape_part`` (the equations' operands, results, rows, phases and scopes) let the view derive
``step`` and ``sel`` for any cursor and selection itself (``static/debugger.js``, ``Session``),
and with ``navigation_part`` step by call, run to a target, a breakpoint, a NaN or a failing
check as ``navigation.Navigation`` does (``static/debugger.js``, ``Navigation``).
"""
from __future__ import annotations

from .listing import writes_text
from .model import DebugModel

NO_CHECKS = {"state": "none", "summary": "", "done": 0, "total": 0, "what": "", "alerts": [],
             "current": None}


def step_part(model: DebugModel) -> dict:
    """The cursor's step: its place, its phase line, what it writes and its scope (the outline
    pane highlights it)."""
    step = model.step
    return {"index": model.index, "n": model.n_steps, "phase": step.phase, "text": model.phase_line(),
            "writes": writes_text(model), "written": model.written(), "current": model.current,
            "start": step.start, "stop": step.stop, "row": model.row_of_eqn[step.start],
            "scope": list(model.nav.scope_of())}


MOVES = ("step_into", "step_over", "step_out")         # the moves by call (``navigation.Navigation``)


def moves_part(model: DebugModel) -> dict:
    """Where each move by call goes from the cursor's step, ``{"step_over": [forwards,
    backwards], ...}``, each a step index, or None where the widget does not move there (at the
    edge of the tape; a step over or out that runs off it, which the kernel reports): the steps
    sent ahead carry it, so the view paints these moves at once, as it does *next*."""
    nav = model.nav
    return {move: [getattr(nav, move)(False), getattr(nav, move)(True)] for move in MOVES}


PHASES = ("forward", "backward", "tangent")         # phase codes of tape_part
EDGE_KINDS = ("data", "residual", "accumulate")       # an operand's edge kind (``tapeviz.graph``)


def steps_part(model: DebugModel) -> dict:
    """Every step at both granularities, as ``step_part`` gives the parts that need the model
    (the phase line, the scope); the view derives the rest (``Session.stepPart``)."""
    out = {}
    saved = model.granularity, model.index
    try:
        for g, steps in model.steps.items():
            model.granularity = g
            scopes = model.nav.layout(g).scopes
            out[g] = []
            for k, s in enumerate(steps):
                model.index = k
                out[g].append({"start": s.start, "stop": s.stop, "phase": s.phase, "text": model.phase_line(),
                               "scope": list(scopes[k])})
    finally:
        model.granularity, model.index = saved
    return out


def tape_part(model: DebugModel) -> dict:
    """The tape as the view reads it to derive a step's and a selection's parts: the variables
    by name (``vars``, the model's ``var_attrs`` order; everything else refers to them by
    position), each one's producing equation (-1: an input), phase and whether it is a residual;
    per equation its results, its operands (distinct variables, each with the kind of its edge
    in the graph, an index of ``EDGE_KINDS``), its phase (an index of ``PHASES``), its row, the
    variable its origin is about (-1: none) and its scope (an index of ``scopes``: pairs of
    parent index and name, the top level ``()`` first)."""
    g = model.graph
    names = list(model.var_attrs)
    index = {n: k for k, n in enumerate(names)}
    phase = {p: k for k, p in enumerate(PHASES)}
    kind = {k: n for n, k in enumerate(EDGE_KINDS)}
    scopes: dict[tuple, int] = {(): 0}
    table = [[-1, ""]]

    def scope_index(path: tuple) -> int:
        k = scopes.get(path)
        if k is None:
            parent = scope_index(path[:-1])
            k = scopes[path] = len(table)
            table.append([parent, path[-1]])
        return k

    outputs, inputs, phases, ofs, scope = [], [], [], [], []
    for e in model.eqns:
        eid = "eq/" + repr(e.outputs[0])
        outputs.append([index[repr(v)] for v in e.outputs])
        operands = []
        for u, edge in g.pred[eid].items():
            if u in index:
                operands += [index[u], kind[edge["kind"]]]
        inputs.append(operands)
        phases.append(phase[e.origin.kind.phase])
        ofs.append(index.get(repr(e.origin.of), -1) if e.origin.of is not None else -1)
        scope.append(scope_index(tuple(e.scope)))
    attrs = model.var_attrs
    return {"vars": names, "producer": [model.producer_index.get(n, -1) for n in names],
            "vphase": [phase[attrs[n]["phase"]] for n in names],
            "residual": [k for k, n in enumerate(names) if attrs[n].get("residual")],
            "outputs": outputs, "inputs": inputs, "phase": phases, "row": list(model.row_of_eqn), "of": ofs,
            "scope": scope, "scopes": table}


def navigation_part(model: DebugModel) -> dict:
    """What ``run_to_nonfinite`` and ``run_to_failure`` look for, for pages with no kernel (the
    view's ``Navigation`` derives the rest from ``steps_part`` and ``tape_part``): the equations
    with a NaN or an Inf in an output, and those a failing check marks (None: no checks ran),
    both in tape order."""
    failing = None if model.report is None else sorted(
        i for i, marks in model.marks.items() if any(mk.status == "fail" for mk in marks))
    return {"nonfinite": model.nav.nonfinite_eqns(), "failing": failing}


def outline_part(model: DebugModel) -> dict:
    """The outline pane's tree (``Navigation.outline``, repeated calls folded), as JSON: paths
    as lists."""
    return _json(model.nav.outline())


def _json(entry: dict) -> dict:
    return {k: [_json(c) for c in v] if k == "children" else list(v) if isinstance(v, tuple) else v
            for k, v in entry.items()}


def sel_part(model: DebugModel, name: str | None) -> dict | None:
    """A selected variable: the equation computing it and its partners on the other side."""
    if name is None:
        return None
    eqns, residuals = model.partners(name)
    return {"name": name, "producer": model.producer_index.get(name), "partners": sorted(eqns),
            "vars": sorted(residuals)}


def alert_label(alert) -> str:
    sign = "\u2717" if alert.status == "fail" else "\u26a0"
    text = f"{sign} {alert.check}: {' '.join(alert.message.split())}"
    return text if len(text) <= 150 else text[:149] + "\u2026"


def checks_part(model: DebugModel, current: int | None = None) -> dict:
    """The last report's verdict and alerts; each alert's target is where ``jump_to_alert`` goes
    (the step at both granularities and the variable it selects), for pages with no kernel."""
    report = model.report
    if report is None:
        return dict(NO_CHECKS)
    alerts = []
    for a in model.alerts:
        target = None
        if a.eqn is not None:
            eqn = model.target_of(a.eqn)
            target = {g: model.step_of(eqn, g) for g in model.steps}
            target["select"] = repr(model.eqns[a.eqn].outputs[0])
        alerts.append({"status": a.status, "check": a.check, "label": alert_label(a), "message": a.message,
                       "target": target})
    n = len(getattr(report, "equations", ())) or 1
    return {"state": "pass" if report.ok else "fail", "summary": report.summary(), "done": n, "total": n,
            "what": "", "alerts": alerts, "current": current}
