"""Where a gradient's time goes, line by line: our compiled source beside the hand-written gradient.

The workloads and hand-written gradients are those of the independent baselines
(``../shared/bench/bench_peers.py``, never edited here). ``line_profiler`` (the ``bench`` extra)
times every line of both functions over the same calls::

    python -m bench.profile_lines W4                 # numpy backend
    python -m bench.profile_lines W2 --backend fused
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import os
import tempfile

from bench import common  # noqa: F401  (one BLAS thread before numpy loads)

import ad
from line_profiler import LineProfiler

PEERS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "bench", "bench_peers.py")


def peer_cases(path: str = PEERS) -> dict:
    """The workloads of bench_peers.py by name (W1-f64, W2, ...)."""
    spec = importlib.util.spec_from_file_location("bench_peers", path)
    peers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peers)
    peers._early_process_setup(["--threads", "1"])     # its malloc policy and one core
    return {case.name: case for case in peers.build_cases()}


def compiled_gradient(case, backend: str):
    tape = ad.optimize(ad.grad_tape(case.np_fn, *case.args, argnums=case.argnums))
    compiled = ad.compile(tape, backend=backend)
    return compiled, _from_file(compiled.source, compiled.fn)


def _from_file(source: str, fn):
    """``fn`` defined again from a real file, which line_profiler needs to show the lines."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    namespace = dict(fn.__globals__)
    exec(compile(source, file.name, "exec"), namespace)
    return namespace[fn.__name__]


def hand_written(case):
    """(the function to profile, how to call it): bench_peers wraps some hand-written gradients
    in ``lambda *a: g(*a)`` or ``functools.partial(g, n=...)``."""
    fn = case.manual_grad
    inner = getattr(fn, "func", fn)
    if inner.__name__ == "<lambda>" and inner.__code__.co_names:
        inner = inner.__globals__[inner.__code__.co_names[0]]
    return inner, fn


def profile(fn, call, args, calls: int) -> str:
    """Line times of ``fn`` over ``calls`` calls of ``call(*args)`` (which runs ``fn``)."""
    profiler = LineProfiler(fn)
    profiler.enable_by_count()
    for _ in range(calls):
        call(*args)
    profiler.disable_by_count()
    out = io.StringIO()
    profiler.print_stats(stream=out, output_unit=1e-6, stripzeros=True)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", help="W1-f64, W1-f32, W2, W3, W4, W5-2000, W5-20000")
    parser.add_argument("--backend", default="numpy", help="numpy or fused")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--peers", default=PEERS, help="path of bench_peers.py")
    options = parser.parse_args()
    case = peer_cases(options.peers)[options.workload]
    compiled, fn = compiled_gradient(case, options.backend)
    print(profile(*hand_written(case), case.args, options.calls))
    print(profile(fn, fn, case.args, options.calls))
    if options.backend == "fused":
        print(compiled.kernel_source)


if __name__ == "__main__":
    main()
