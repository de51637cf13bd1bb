"""(e) The tape debugger's responsiveness at 1,000 and 10,000 equations, measured on the widget
model in this process (no browser): what one click on *next* or one selection costs the kernel.

The tape is the gradient of a loop of elementwise steps (seven equations per step with its
pullbacks), as in ``bench_graph``. Per size, median wall time (the graph pane waits for the
``dot`` subprocess, which CPU time of this process would not count) of:

* step, views only: the phase line, the windowed listing, the value inspector and the residuals
  table redrawn (what every step costs; during Play the graph pane is deferred to the pause);
* step with the graph pane: the same plus the neighbourhood drawn by Graphviz (a long-lived
  ``dot``), for a step not seen before, and again for the same steps (drawings cached); and
  *next* clicked again and again from the middle of the tape;
* selection: a variable selected (partners, inspector, listing tints, graph tint);
* building the debugger, once per session (median of three).

Steps go to random places of the tape, each measure on a fresh debugger: stepping to the next
step, whose rows are mostly drawn already, is cheaper than this.

Goal: a step under 50 ms at 10,000 equations.
"""
from __future__ import annotations

from bench.common import format_time

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from tapeviz import debug  # noqa: E402

SIZES = (1_000, 10_000)
SAMPLES = 25


def loop(x, steps):
    for _ in range(steps):
        x = np.sin(x) * 1.01 + x
    return np.sum(x)


def _median(fn, args) -> float:
    samples = []
    for a in args:
        t0 = time.perf_counter()
        fn(a)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _build(n_eqns: int):
    t0 = time.perf_counter()
    dbg = debug(loop, np.ones(3), n_eqns // 7)   # seven equations per step, pullbacks included
    return dbg, time.perf_counter() - t0


def stages(n_eqns: int) -> dict:
    """Each measure starts from a fresh debugger, so no step finds its rows already drawn."""
    rng = np.random.default_rng(0)
    views, t_views = _build(n_eqns)
    spots = [int(i) for i in rng.choice(views.n_steps, size=SAMPLES, replace=False)]
    views.play.playing = True                   # as during Play: the graph pane waits
    out = {"equations": len(views.model.eqns), "steps": views.n_steps,
           "step, views only": _median(views.step_to, spots)}
    views.play.playing = False
    views.step_to(views.n_steps // 2)
    out["next (sequential) + graph"] = _median(lambda _: views.next(), range(SAMPLES))
    dbg, t_graph = _build(n_eqns)
    spots = [int(i) for i in rng.choice(dbg.n_steps, size=SAMPLES, replace=False)]
    out["step + graph (new)"] = _median(dbg.step_to, spots)
    out["step + graph (seen before)"] = _median(dbg.step_to, spots)
    names = [repr(dbg.model.eqns[int(i)].outputs[0]) for i in rng.choice(len(dbg.model.eqns), SAMPLES)]
    out["selection + graph"] = _median(dbg.select, names)
    out["build"] = statistics.median([t_views, t_graph, _build(n_eqns)[1]])
    out["sent per step"] = sum(len(w.value) for w in (dbg.phase, dbg.listing, dbg.inspector, dbg.residuals,
                                                       dbg.graph_pane))
    return out


def run() -> str:
    results = {n: stages(n) for n in SIZES}
    header = " | ".join(f"{r['equations']:,} eqns ({r['steps']:,} steps)" for r in results.values())
    lines = ["### Tape debugger: one click, in the kernel (median wall time)", "",
             f"| action | {header} |", "| --- | " + " | ".join("---:" for _ in SIZES) + " |"]
    for stage in ("step, views only", "step + graph (new)", "step + graph (seen before)",
                  "next (sequential) + graph", "selection + graph", "build"):
        lines.append(f"| {stage} | " + " | ".join(format_time(r[stage]) for r in results.values()) + " |")
    lines.append("| HTML sent per step | " + " | ".join(f"{r['sent per step'] / 1000:.0f} kB"
                                                       for r in results.values()) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
