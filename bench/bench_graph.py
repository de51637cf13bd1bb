"""(d) The graph model and DOT generation at 1,000, 10,000 and 100,000 equations.

The tape is the gradient of a loop of elementwise steps (``x = sin(x) * 1.01 + x``: eight
equations per step with its pullbacks), the shape of the long tapes users draw. Measured per
size: the networkx model (``to_networkx``), the DOT source of the whole joint view, and the two
views meant for big tapes: collapsed (folded) and a window of 3 steps around the middle. Goal:
model + DOT for 10,000 equations under 1 s, per-equation cost flat (linear growth).
"""
from __future__ import annotations

from bench.common import format_time

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import ad  # noqa: E402
from tapeviz import to_graphviz, to_networkx  # noqa: E402

SIZES = (1_000, 10_000, 100_000)


def loop(x, steps):
    for _ in range(steps):
        x = np.sin(x) * 1.01 + x
    return np.sum(x)


def median_cpu(fn, rounds: int) -> tuple[float, object]:
    samples, out = [], None
    for _ in range(rounds):
        t0 = time.process_time()
        out = fn()
        samples.append(time.process_time() - t0)
    return statistics.median(samples), out


def stages(n_eqns: int) -> dict:
    gt = ad.grad_tape(loop, np.ones(3), n_eqns // 7)   # seven equations per step
    rounds = 3 if n_eqns > 20_000 else 7
    t = {"equations": len(gt.eqns)}
    t["model"], graph = median_cpu(lambda: to_networkx(gt), rounds)
    t["DOT"], source = median_cpu(lambda: to_graphviz(graph).source, rounds)
    t["model + DOT"] = t["model"] + t["DOT"]
    t["collapsed DOT"], folded = median_cpu(lambda: to_graphviz(graph, collapse=True).source, rounds)
    middle = f"%{len(gt.eqns) // 2}"
    t["window DOT"], window = median_cpu(lambda: to_graphviz(graph, window=(middle, 3)).source, rounds)
    t["sizes"] = (len(source), len(folded), len(window))
    return t


def run() -> str:
    results = {n: stages(n) for n in SIZES}
    header = " | ".join(f"{r['equations']:,} eqns" for r in results.values())
    lines = ["### Graph model and DOT (median CPU time)", "",
             f"| stage | {header} | per equation at 10k | at 100k |",
             "| --- | " + " | ".join("---:" for _ in SIZES) + " | ---: | ---: |"]
    for stage in ("model", "DOT", "model + DOT", "collapsed DOT", "window DOT"):
        cells = " | ".join(format_time(r[stage]) for r in results.values())
        if stage == "window DOT":            # a window's cost does not grow with the tape
            lines.append(f"| {stage} | {cells} | (constant) | (constant) |")
            continue
        per = [results[n][stage] / results[n]["equations"] for n in SIZES[1:]]
        lines.append(f"| {stage} | {cells} | {format_time(per[0])} | {format_time(per[1])} |")
    sizes = " | ".join(f"{a:,} / {b:,} / {c:,}" for a, b, c in (r["sizes"] for r in results.values()))
    lines.append(f"| DOT chars (whole / collapsed / window) | {sizes} | | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
