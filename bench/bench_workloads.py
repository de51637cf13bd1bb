"""Issue 19's table: the five workloads of ``bench.workloads``, each gradient side by side in one
run (medians of CPU time per call, one thread, contenders interleaved), as ratios to the
hand-written numpy gradient (and, for the Python floats, to the hand-written ``math`` one);
then the first call (trace + lift + optimise + compile + run) of ``ad.grad(form="compiled")``
and of ``jax.jit(jax.grad(f))``. Every contender's gradient is checked against the hand one
before it is timed.

    python -m bench.bench_workloads            # all five
    python -m bench.bench_workloads mlp scalar
"""
from __future__ import annotations

from bench.common import format_time, measure, optional

import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)

import ad  # noqa: E402
from ad.reverse_mode.lift import clear_cache  # noqa: E402
from bench.workloads import WORKLOADS, Workload  # noqa: E402

COLUMNS = ("compiled", "fused", "lifted", "closure", "autograd", "torch eager", "jax jit")


def _jax():
    jax = optional("jax")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    return jax


def _jax_args(jax, args):
    return jax.tree_util.tree_map(lambda v: jax.numpy.asarray(v) if isinstance(v, np.ndarray) else v, args)


def contenders(w: Workload, args) -> dict:
    """name -> a zero-argument call computing the gradient of ``args[0]``."""
    out = {"numpy by hand": lambda: w.by_hand(*args)}
    if w.by_math is not None:
        out["math by hand"] = lambda: w.by_math(*args)
    for form in ("compiled", "lifted", "closure"):
        g = ad.grad(w.loss, form=form)
        out[form] = lambda g=g: g(*args)
    fused = ad.compile(ad.optimize(ad.grad_tape(w.loss, *args)), backend="fused")
    out["fused"] = lambda: fused(*args)[1]
    autograd = optional("autograd")
    if autograd is not None:
        import autograd.numpy as anp
        ag = autograd.grad(w.loss_for(anp))
        out["autograd"] = lambda: ag(*args)
    torch = optional("torch")
    if torch is not None:
        torch.set_num_threads(1)
        out["torch eager"] = w.torch_grad(torch, args)
    jax = _jax()
    if jax is not None and not w.jax_jit:
        jit, jargs = jax.jit(jax.grad(w.loss_for(jax.numpy))), _jax_args(jax, args)
        out["jax jit"] = lambda: jax.block_until_ready(jit(*jargs))
    return out


def _leaves(g, like) -> list[np.ndarray]:
    """A gradient as a list of arrays in the order of the argument ``like``."""
    if isinstance(like, dict):
        g = [g[k] for k in like] if isinstance(g, dict) else list(g)
    elif not isinstance(like, list):
        g = [g[0] if isinstance(g, tuple) else g]
    return [np.asarray(v.detach() if hasattr(v, "detach") else v) for v in g]


def check(w: Workload, args, calls: dict) -> None:
    ref = _leaves(w.by_hand(*args), args[0])
    for name, call in calls.items():
        got = _leaves(call(), args[0])
        assert len(got) == len(ref) and all(np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(got, ref)), \
            f"{w.name}: {name}'s gradient differs from the hand-written one"


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the fused backend's C compiler)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def first_calls(w: Workload, args) -> dict[str, float]:
    """CPU seconds of a fresh first call (no cached rule templates): ad.grad compiled, the fused
    backend with an empty kernel cache (the compiler's CPU time counted), and jax.jit."""
    clear_cache()
    g = ad.grad(w.loss, form="compiled")
    t0 = time.process_time()
    g(*args)
    out = {"ad compiled": time.process_time() - t0}
    clear_cache()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TAPEVIZ_FUSED_CACHE"] = cache
        c0 = _cpu()
        ad.compile(ad.optimize(ad.grad_tape(w.loss, *args)), backend="fused")(*args)
        out["ad fused"] = _cpu() - c0
        del os.environ["TAPEVIZ_FUSED_CACHE"]
    jax = _jax()
    if jax is not None and not w.jax_jit:
        jit, jargs = jax.jit(jax.grad(w.loss_for(jax.numpy))), _jax_args(jax, args)
        t0 = time.process_time()
        jax.block_until_ready(jit(*jargs))
        out["jax jit"] = time.process_time() - t0
    return out


def run(names=None, rounds: int = 9) -> str:
    rows, firsts = [], []
    for name in names or WORKLOADS:
        w = WORKLOADS[name]
        args = w.args()
        firsts.append((w, first_calls(w, args)))
        calls = contenders(w, args)
        check(w, args, calls)
        times = measure(calls, rounds=rounds)
        rows.append((w, times))
    return _tables(rows, firsts)


def _cell(w: Workload, column: str, times: dict, base: float) -> str:
    if column not in times:
        return w.jax_jit and "(not measured)" if column == "jax jit" else "-"
    text = f"{times[column] / base:.2f}"
    return text + " (native conv)" if w.name == "cnn" and column == "torch eager" else text


def _tables(rows, firsts) -> str:
    lines = ["### Issue 19: gradients of the five workloads, ratio to the hand-written numpy gradient", "",
             "| workload | hand numpy | " + " | ".join(COLUMNS) + " |",
             "| --- | ---: | " + " | ".join("---:" for _ in COLUMNS) + " |"]
    for w, times in rows:
        base = times["numpy by hand"]
        lines.append(f"| {w.title} | {format_time(base)} | "
                     + " | ".join(_cell(w, c, times, base) for c in COLUMNS) + " |")
        if "math by hand" in times:
            base = times["math by hand"]
            lines.append(f"| ... ratio to the hand-written `math` gradient | {format_time(base)} | "
                         + " | ".join(_cell(w, c, times, base) for c in COLUMNS) + " |")
    notes = [f"{w.name}: jax jit {w.jax_jit}" for w, _ in rows if w.jax_jit]
    lines += ["", *notes, "", "### Issue 19: first call (trace + lift + optimise + compile + run), CPU time", "",
              "| workload | ad compiled | ad fused (cold kernel cache) | jax jit |", "| --- | ---: | ---: | ---: |"]
    for w, t in firsts:
        lines.append(f"| {w.title} | {format_time(t['ad compiled'])} | {format_time(t['ad fused'])} | "
                     f"{format_time(t['jax jit']) if 'jax jit' in t else '-'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(sys.argv[1:] or None))
