"""What the debugger's view reads, as JSON-ready dicts made from a ``DebugModel``: the parts of a
*frame* (the ``_frame`` trait of the widget), shared by the live widget, which sends the current
one after every action, and by static pages, which embed every step's and every variable's part
so the same view can answer clicks without a kernel (``page``).

A frame is ``{"eqns", "pane", "mode", "granularity", "step", "selected", "sel", "closure",
"message", "checks"}`` (``mode``: "reverse", or "forward" for a linearization): ``step`` (``step_part``) depends on the cursor alone, ``sel`` (``sel_part``) on the
selection alone, ``checks`` (``checks_part``) on the last report. The outline pane reads the
program's scope tree (``outline_part``) once, and again after checks (its status marks).
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
