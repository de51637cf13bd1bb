"""The fused backend (``ad.compile(tape, backend="fused")``, ad/compiler/fused.py) side by side with the
numpy backend, jax.jit and the hand-written gradients on issue 19's vector and scalar workloads
(bench.workloads): medians of CPU time per call, ratios to the hand-written numpy gradient; how
each fused loop runs (C or numpy lines, as measured on its first calls); then first calls (trace
+ lift + optimise + compile + run) with a cold kernel cache, a warm one, and jax.jit's. The C
compiler runs as a child process: its CPU time is counted too.

    python -m bench.bench_fused                # vector and scalar
    python -m bench.bench_fused mlp cnn        # any of bench.workloads.WORKLOADS
"""
from __future__ import annotations

from bench.common import format_time, machine, measure

import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import ad  # noqa: E402
from ad.reverse_mode.lift import clear_cache  # noqa: E402
from bench.bench_workloads import _cpu, _jax, _jax_args, check  # noqa: E402
from bench.workloads import WORKLOADS, Workload  # noqa: E402


def contenders(w: Workload, args, fused) -> dict:
    out = {"numpy by hand": lambda: w.by_hand(*args)}
    if w.by_math is not None:
        out["math by hand"] = lambda: w.by_math(*args)
    g = ad.grad(w.loss, form="compiled")
    out["ad.grad compiled"] = lambda: g(*args)
    numpy_backend = ad.compile(ad.optimize(ad.grad_tape(w.loss, *args)))
    out["ad.compile numpy"] = lambda: numpy_backend(*args)[1]
    out["ad.compile fused"] = lambda: fused(*args)[1]      # the gradient in the first argument
    jax = _jax()
    if jax is not None and not w.jax_jit:
        jit, jargs = jax.jit(jax.grad(w.loss_for(jax.numpy))), _jax_args(jax, args)
        out["jax jit"] = lambda: jax.block_until_ready(jit(*jargs))
    return out


def first_calls(w: Workload, args) -> dict[str, tuple[float, float]]:
    """(CPU, wall) seconds of a first call: fused with an empty kernel cache, then with the
    kernel cached (rule templates cleared both times), numpy backend, jax.jit."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TAPEVIZ_FUSED_CACHE"] = cache
        for name in ("fused, cold cache", "fused, warm cache", "numpy backend"):
            clear_cache()
            c0, t0 = _cpu(), time.perf_counter()
            tape = ad.optimize(ad.grad_tape(w.loss, *args))
            ad.compile(tape, backend="numpy" if name == "numpy backend" else "fused")(*args)
            out[name] = (_cpu() - c0, time.perf_counter() - t0)
        del os.environ["TAPEVIZ_FUSED_CACHE"]
    jax = _jax()
    if jax is not None and not w.jax_jit:
        jit, jargs = jax.jit(jax.grad(w.loss_for(jax.numpy))), _jax_args(jax, args)
        c0, t0 = _cpu(), time.perf_counter()
        jax.block_until_ready(jit(*jargs))
        out["jax jit"] = (_cpu() - c0, time.perf_counter() - t0)
    return out


def run(names=None, rounds: int = 9) -> str:
    lines = [f"Machine: {machine()}", ""]
    for name in names or ("vector", "scalar"):
        w = WORKLOADS[name]
        args = w.args()
        firsts = first_calls(w, args)
        fused = ad.compile(ad.optimize(ad.grad_tape(w.loss, *args)), backend="fused")
        calls = contenders(w, args, fused)
        check(w, args, calls)
        times = measure(calls, rounds=rounds)
        base = times["numpy by hand"]
        lines += [f"### {w.title}", "", "| contender | median per call | ratio to numpy by hand |",
                  "| --- | ---: | ---: |"]
        lines += [f"| {c} | {format_time(t)} | {t / base:.3f}x |" for c, t in times.items()]
        lines += ["", *(f"- {k.choice()}" for k in fused.kernels)]
        lines += ["", "| first call | CPU | wall |", "| --- | ---: | ---: |"]
        lines += [f"| {c} | {format_time(cpu)} | {format_time(wall)} |" for c, (cpu, wall) in firsts.items()]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run(sys.argv[1:] or None))
