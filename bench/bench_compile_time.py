"""Compile time and the lifted interpreter (issue 19).

1. The first call's stages on the chain workload (``x = 0.5 tanh(x)``, bench.workloads) of 1,000
   to 20,000 ops: trace, lift (``grad_tape`` = trace + lift), optimise, compile. Each stage must
   grow linearly: its cost per op stays flat as the tape grows.
2. The first call of ``ad.grad(f, form="compiled")`` against the issue's two goals: trace +
   lift + optimise + compile of 10,000 ops under 1 s, the 20,000-op chain of length 1000
   (bench.workloads CHAIN) under 2 s, each stage timed inside the first call; the run measured
   apart (the next calls).
3. The lifted form (``ad.grad(form="lifted")``, the interpreter over pre-resolved equations)
   against the hand-written gradients of the vector and scalar workloads, side by side with
   the compiled form and PyTorch eager.
"""
from __future__ import annotations

from bench.common import format_time, measure, optional

import contextlib  # noqa: E402
import gc  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import ad  # noqa: E402
import ad.transforms.gradients  # noqa: E402
from ad.compiler.codegen import compile_tape  # noqa: E402
from ad.reverse_mode.lift import clear_cache  # noqa: E402
from ad.passes import optimize  # noqa: E402
from bench.workloads import CHAIN, SCALAR, VECTOR, chain_loss_for  # noqa: E402

SIZES = (1_000, 2_000, 5_000, 10_000, 20_000)
STAGES = ("trace", "lift", "optimise", "compile")


def stages(n_ops: int, x) -> dict[str, float]:
    """CPU seconds of each first-call stage for an ``n_ops`` chain (lift = grad_tape - trace)."""
    f = chain_loss_for(np, n_ops)
    clear_cache()
    t0 = time.process_time()
    ad.trace(f, x)
    trace = time.process_time() - t0
    clear_cache()
    t0 = time.process_time()
    gt = ad.grad_tape(f, x)
    t1 = time.process_time()
    opt = optimize(gt)
    t2 = time.process_time()
    compile_tape(opt)
    t3 = time.process_time()
    out = {"trace": trace, "lift": max(t1 - t0 - trace, 0.0), "optimise": t2 - t1, "compile": t3 - t2,
           "equations": len(gt.eqns)}
    del gt, opt
    gc.collect()
    return out


def compile_table(rounds: int = 3) -> str:
    x = np.linspace(-1, 1, 16)
    results = {}
    for n in SIZES:
        runs = [stages(n, x) for _ in range(rounds)]
        results[n] = {k: sorted(r[k] for r in runs)[len(runs) // 2] for k in runs[0]}   # medians
    lines = [f"### First call on the chain: stages (median of {rounds}), and per op", "",
             "| ops | gradient equations | " + " | ".join(STAGES) + " | total | total per op |",
             "| ---: | ---: | " + " | ".join("---:" for _ in STAGES) + " | ---: | ---: |"]
    for n, r in results.items():
        total = sum(r[s] for s in STAGES)
        lines.append(f"| {n:,} | {r['equations']:,} | " + " | ".join(format_time(r[s]) for s in STAGES)
                     + f" | {format_time(total)} | {format_time(total / n)} |")
    small, large = SIZES[0], SIZES[-1]
    growth = {s: (results[large][s] / large) / (results[small][s] / small) for s in STAGES}
    lines += ["", f"Cost per op at {large:,} ops over that at {small:,} (1.0 = linear): "
              + ", ".join(f"{s} {g:.2f}" for s, g in growth.items()) + "."]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def timed_stages(stages: dict):
    """Time the stages of ``ad.grad``'s first call inside it: the functions ``ad.transforms.gradients`` calls for
    trace + lift (``_grad_tape``), optimise and compile, wrapped while the block runs."""
    def timing(name, fn):
        def timed(*args, **kwargs):
            t0 = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                stages[name] = stages.get(name, 0.0) + time.process_time() - t0
        return timed
    wrapped = {"_grad_tape": "trace + lift", "run_passes": "optimise", "compile_tape": "compile"}
    saved = {attr: getattr(ad.transforms.gradients, attr) for attr in wrapped}
    for attr, name in wrapped.items():
        setattr(ad.transforms.gradients, attr, timing(name, saved[attr]))
    try:
        yield stages
    finally:
        for attr, fn in saved.items():
            setattr(ad.transforms.gradients, attr, fn)


FIRST_CALL = ("trace + lift", "optimise", "compile")


def first_call(f, args) -> dict:
    """CPU seconds of the first call of ``ad.grad(f, form="compiled")``, of its stages (timed
    inside it), and the median of the next calls (the run alone: a cached tape, compiled)."""
    clear_cache()
    g = ad.grad(f, form="compiled")
    with timed_stages({}) as stages:
        t0 = time.process_time()
        g(*args)
        stages["first call"] = time.process_time() - t0
    runs = []
    for _ in range(5):
        t0 = time.process_time()
        g(*args)
        runs.append(time.process_time() - t0)
    stages["run"] = sorted(runs)[len(runs) // 2]
    del g
    gc.collect()
    return stages


def first_call_table(rounds: int = 5) -> str:
    """The first call against the issue's goals (medians of ``rounds`` fresh functions): the
    goal is trace + lift + optimise + compile, timed inside the first call; the first call also
    runs the gradient once (on fresh memory: slower than the next runs)."""
    cases = [("10,000-op chain, length 16", chain_loss_for(np, 10_000), (np.linspace(-1, 1, 16),), 1.0),
             (CHAIN.title, CHAIN.loss, CHAIN.args(), 2.0)]
    lines = [f"### First call of ad.grad(f, form=\"compiled\") (CPU time, median of {rounds})", "",
             "| workload | first call | " + " | ".join(FIRST_CALL) + " | trace + lift + optimise + compile | goal | "
             "next calls (the run) |", "| --- | ---: | " + " | ".join("---:" for _ in FIRST_CALL) + " | ---: | ---: | ---: |"]
    for title, f, args, goal in cases:
        runs = [first_call(f, args) for _ in range(rounds)]
        med = {k: sorted(r[k] for r in runs)[rounds // 2] for k in runs[0]}
        total = sorted(sum(r[k] for k in FIRST_CALL) for r in runs)[rounds // 2]
        lines.append(f"| {title} | {format_time(med['first call'])} | "
                     + " | ".join(format_time(med[k]) for k in FIRST_CALL)
                     + f" | {format_time(total)} | < {goal:g} s | {format_time(med['run'])} |")
    return "\n".join(lines) + "\n"


def lifted_table(rounds: int = 9) -> str:
    """The lifted form's ratios to the hand-written gradients, in one interleaved run."""
    contenders, baselines = {}, {}
    for w in (VECTOR, SCALAR):
        args = w.args()
        by_hand = w.by_hand
        contenders[f"{w.name}: numpy by hand"] = lambda a=args, h=by_hand: h(*a)
        baselines[w.name] = f"{w.name}: numpy by hand"
        if w.by_math is not None:
            contenders[f"{w.name}: math by hand"] = lambda a=args, h=w.by_math: h(*a)
        for form in ("lifted", "compiled"):
            g = ad.grad(w.loss, form=form)
            assert np.allclose(g(*args), by_hand(*args), rtol=1e-10)
            contenders[f"{w.name}: ad.grad {form}"] = lambda a=args, g=g: g(*a)
        torch = optional("torch")
        if torch is not None:
            torch.set_num_threads(1)
            contenders[f"{w.name}: PyTorch eager"] = w.torch_grad(torch, args)
    times = measure(contenders, rounds=rounds)
    lines = ["### The lifted interpreter against hand-written gradients (CPU-time medians)", "",
             "| contender | median per call | ratio to numpy by hand |", "| --- | ---: | ---: |"]
    for name, t in times.items():
        base = times[baselines[name.split(":")[0]]]
        lines.append(f"| {name} | {format_time(t)} | {t / base:.2f}x |")
    return "\n".join(lines) + "\n"


def run() -> str:
    return compile_table() + "\n" + first_call_table() + "\n" + lifted_table()


if __name__ == "__main__":
    print(run())
