"""Timing helpers shared by the benchmarks.

Honest benchmarking on a shared small machine: one BLAS thread (set before numpy loads, by
``bench.run`` or the ``python -m bench.X`` entry points), all contenders interleaved in one
process round by round, medians of per-call CPU time, results as ratios to a baseline.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS"):
    os.environ.setdefault(_var, "1" if _var != "XLA_FLAGS" else
                          "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from typing import Callable  # noqa: E402


def measure(contenders: dict[str, Callable[[], object]], *, rounds: int = 15,
            min_time: float = 0.02) -> dict[str, float]:
    """Median CPU seconds per call of each contender, interleaved round by round."""
    reps = {}
    for name, fn in contenders.items():       # warm up, and pick a repetition count
        fn()
        t0 = time.process_time()
        n = 0
        while time.process_time() - t0 < min_time or n == 0:
            fn()
            n += 1
        reps[name] = n
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            n = reps[name]
            t0 = time.process_time()
            for _ in range(n):
                fn()
            samples[name].append((time.process_time() - t0) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def table(title: str, times: dict[str, float], baseline: str) -> str:
    """A markdown table of medians and ratios to ``baseline``."""
    base = times[baseline]
    lines = [f"### {title}", "", f"| contender | median per call | ratio to {baseline} |",
             "| --- | ---: | ---: |"]
    for name, t in times.items():
        lines.append(f"| {name} | {format_time(t)} | {t / base:.2f}x |")
    return "\n".join(lines) + "\n"


def format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def machine() -> str:
    import numpy as np
    return (f"{_cpu_model()} ({platform.machine()}), {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, numpy {np.__version__}, "
            f"BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS')}")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def optional(module: str):
    """Import an optional competitor, or None."""
    try:
        return __import__(module)
    except ImportError:
        return None
