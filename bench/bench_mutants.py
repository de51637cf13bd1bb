"""Mutation testing's cost: the wall time of ``ad-check --mutants`` over the whole registry
(ad.lib, ad.nn, ad.scipy), its CPU time, mutants checked per CPU second, and the primitives
whose mutants cost most. One run, not a median: it takes minutes.

    python -m bench.bench_mutants              # the whole registry, 2 worker processes
    python -m bench.bench_mutants 1 sin matmul # 1 process, some primitives
"""
from __future__ import annotations

import sys
import time

from bench.common import machine

import ad.nn  # noqa: E402,F401  (the registry: ad.lib, ad.nn and ad.scipy's modules)
import ad.scipy.integrate  # noqa: E402,F401
import ad.scipy.linalg  # noqa: E402,F401
import ad.scipy.signal  # noqa: E402,F401
import ad.scipy.special  # noqa: E402,F401
import ad.scipy.stats  # noqa: E402,F401
from ad.checktools import mutants  # noqa: E402


def run(names=None, workers: int = 2) -> str:
    start = time.process_time()
    report = mutants.run(names, workers=workers)
    parent = time.process_time() - start
    cpu = sum(report.cpu.values())
    s = report.by_status()
    checked = s["caught"] + s["survived"]
    slowest = sorted(report.cpu.items(), key=lambda kv: -kv[1])[:5]
    return "\n".join([
        "### Mutation testing (ad-check --mutants)", "",
        f"{machine()}; {workers} worker process(es).", "",
        "| figure | value |", "| --- | ---: |",
        f"| primitives with a template | {len(report.cpu)} |",
        f"| mutants (checked / equivalent / stillborn) | {checked} / {s['equivalent']} / {s['stillborn']} |",
        f"| score | {100 * report.score:.2f}% |",
        f"| wall time | {report.seconds:.0f} s |",
        f"| CPU time in the workers (parent) | {cpu:.0f} s ({parent:.0f} s) |",
        f"| mutants checked per CPU second | {checked / max(cpu, 1e-9):.1f} |",
        "", "Costliest primitives (CPU s): " + ", ".join(f"{n} {t:.1f}" for n, t in slowest), ""])


if __name__ == "__main__":
    args = sys.argv[1:]
    print(run(args[1:] or None, workers=int(args[0]) if args else 2))
