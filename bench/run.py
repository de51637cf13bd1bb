"""Run every benchmark and write bench/RESULTS.md (date, machine, tables).

    python -m bench.run            # all
    python -m bench.run mlp chain  # some
"""
from __future__ import annotations

import datetime
import importlib
import pathlib
import sys

from bench.common import machine

BENCHES = {"workloads": "bench.bench_workloads", "mlp": "bench.bench_mlp", "chain": "bench.bench_chain",
           "cnn": "bench.bench_cnn", "graph": "bench.bench_graph", "widget": "bench.bench_widget",
           "guards": "bench.bench_guards", "fft": "bench.bench_fft",
           "forward": "bench.bench_forward", "onnx_import": "bench.bench_onnx_import",
           "fused": "bench.bench_fused", "compile_time": "bench.bench_compile_time",
           "fuzz": "bench.bench_fuzz", "mutants": "bench.bench_mutants", "scopes": "bench.bench_scopes",
           "batching": "bench.bench_batching", "dask": "bench.bench_dask", "peers": "bench.peers"}


def main(argv: list[str]) -> None:
    names = argv or list(BENCHES)
    parts = [f"# Benchmark results\n\n{datetime.date.today()} on {machine()}.\n"
             "Medians of CPU time per call, contenders interleaved in one process, one BLAS thread.\n"]
    for name in names:
        try:
            module = importlib.import_module(BENCHES[name])
        except ModuleNotFoundError as exc:
            print(f"skipping {name}: {exc}", file=sys.stderr)
            continue
        text = module.run()
        print(text, flush=True)
        parts.append(text)
    out = pathlib.Path(__file__).with_name("RESULTS.md")
    out.write_text("\n".join(parts))
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
