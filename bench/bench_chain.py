"""Tape-length scaling: chains of 2,000 and 20,000 elementwise ops (bench.workloads' chain). The
cost of trace + lift + optimise + compile must grow linearly; bench_workloads compares the
compiled gradient of the 20,000-op chain with a hand-written one."""
from __future__ import annotations

from bench.common import format_time

import time  # noqa: E402

import numpy as np  # noqa: E402

import ad  # noqa: E402
from ad.compiler.codegen import compile_tape  # noqa: E402
from ad.reverse_mode.lift import clear_cache  # noqa: E402
from ad.passes import optimize  # noqa: E402
from bench.workloads import chain_loss_for  # noqa: E402


def stages(n_ops: int, x) -> dict[str, float]:
    clear_cache()
    f = chain_loss_for(np, n_ops)
    t = {}
    t0 = time.process_time()
    primal = ad.trace(f, x)
    t["trace"] = time.process_time() - t0
    t0 = time.process_time()
    gt = ad.grad_tape(f, x)
    t["trace+lift"] = time.process_time() - t0
    t0 = time.process_time()
    opt = optimize(gt)
    t["optimise"] = time.process_time() - t0
    t0 = time.process_time()
    compiled = compile_tape(opt)
    t["compile"] = time.process_time() - t0
    t0 = time.process_time()
    compiled(x)
    t["run compiled"] = time.process_time() - t0
    t["equations"] = len(opt.eqns)
    del primal
    return t


def run() -> str:
    x = np.linspace(-1, 1, 16)
    sizes = (2_000, 20_000)
    results = {n: min((stages(n, x) for _ in range(3)), key=lambda r: r["trace+lift"]) for n in sizes}
    lines = ["### Tape-length scaling (best of 3)", "",
             "| stage | " + " | ".join(f"{n:,} ops" for n in sizes) + " | growth (10x ops) |",
             "| --- | " + " | ".join("---:" for _ in sizes) + " | ---: |"]
    for stage in ("trace", "trace+lift", "optimise", "compile", "run compiled"):
        a, b = (results[n][stage] for n in sizes)
        lines.append(f"| {stage} | {format_time(a)} | {format_time(b)} | {b / a:.1f}x |")
    lines.append(f"| optimised equations | {results[sizes[0]]['equations']:,} | "
                 f"{results[sizes[1]]['equations']:,} | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
