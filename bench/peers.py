"""Our rows in the independent baselines of ``../shared/bench/bench_peers.py``, and its summary.

That script was written outside this project and is not ours to tune: five workloads in plain
numpy, each with a gradient written by hand in numpy (the ratio every table quotes), the same
code run by HIPS autograd and JAX, a torch port. It times ``ad.grad`` closure/lifted/compiled;
passing this module as ``--ad-module bench.peers`` adds the fused form as one more row and
forwards every other name to ``ad``::

    PYTHONPATH=. python ../shared/bench/bench_peers.py --ad-module bench.peers --frameworks numpy,ours,jax

``python -m bench.run peers`` (or ``python -m bench.peers``) runs it that way with every
framework and writes the summary into bench/RESULTS.md.
"""
import json
import os
import subprocess
import sys
import tempfile

import ad
from bench.common import format_time

_ROWS = sys.modules["__main__"].__dict__.get("OURS_VARIANTS")
if _ROWS is not None and all("fused" not in label for label, _ in _ROWS):
    _ROWS.append(("ours: ad.grad fused",
                  lambda lib, f, argnums: lib.grad(f, argnums=argnums, form="fused")))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "..", "shared", "bench", "bench_peers.py")
COLUMNS = {"compiled": "ours: ad.grad compiled", "fused": "ours: ad.grad fused", "lifted": "ours: ad.grad lifted",
           "closure": "ours: ad.grad closure", "HIPS autograd": "autograd", "torch eager": "torch eager",
           "jax jit": "jax jit"}
FIRST_CALLS = ("compiled", "fused", "jax jit")


def __getattr__(name):
    return getattr(ad, name)


def measure(*options: str) -> dict:
    """Run bench_peers.py with our rows and ``options``; its JSON report."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "peers.json")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH"))))}
        subprocess.run([sys.executable, SCRIPT, "--ad-module", "bench.peers", "--json", out, *options],
                       cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        with open(out) as file:
            return json.load(file)


def summary(report: dict) -> str:
    """Ratios of each form and peer to the hand-written numpy gradient, and first calls."""
    rows: dict = {}
    for r in report["rows"]:
        rows.setdefault(r["case"], {})[r["label"]] = r
    lines = ["### Gradients against the independent baselines (../shared/bench/bench_peers.py)", "",
             f"{report['env']['cpu']}, numpy {report['env']['numpy']}, one thread, CPU-time medians, "
             f"interleaved; 1-minute load at each workload's start/end: "
             + ", ".join(f"{case} {a:.2f}/{b:.2f}" for case, (a, b, _) in report["loads"].items()) + ".", "",
             "| workload | hand-written | " + " | ".join(COLUMNS) + " |",
             "| --- | ---: |" + " ---: |" * len(COLUMNS)]
    for case, by_label in rows.items():
        hand = next(r for label, r in by_label.items() if label.startswith("numpy hand-written"))["grad"]["median"]
        cells = []
        for label in COLUMNS.values():      # "torch eager (im2col port)": the op-for-op port
            r = by_label.get(label) or next((r for k, r in by_label.items() if k.startswith(label + " (")), None)
            cells.append(f"{r['grad']['median'] / hand:.2f}" if r and "grad" in r else "-")
        lines.append(f"| {case} | {format_time(hand)} | " + " | ".join(cells) + " |")
    lines += ["", "First call minus a steady one (trace, lift, optimise, compile or jit), wall clock:", "",
              "| workload | " + " | ".join(FIRST_CALLS) + " |", "| --- |" + " ---: |" * len(FIRST_CALLS)]
    for case, by_label in rows.items():
        cells = [format_time(by_label[COLUMNS[c]]["compile_grad"]) if "compile_grad" in by_label.get(COLUMNS[c], {}) else "-"
                 for c in FIRST_CALLS]
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def run() -> str:
    if not os.path.exists(SCRIPT):
        return f"### Independent baselines: not measured ({SCRIPT} is not on this machine)\n"
    return summary(measure())


if __name__ == "__main__":
    print(run())
