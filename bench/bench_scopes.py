"""Issue 29: the cost of recording scopes. ``ad.trace`` and ``ad.grad_tape`` (trace + lifted
backward, no optimisation) with scopes (this tree) against the same calls without them (the tree
at ``BASELINE``, the commit before scopes, extracted with ``git archive``).

Both trees are the package ``ad``, so each side runs in its own long-lived worker process (that
tree first on ``sys.path``) which receives "run workload W at stage S, n times" over a pipe and
answers with the CPU time per call. The commands alternate between the two workers round by
round (A B, then B A), so machine noise hits both sides alike; the ratio of each round is with /
without, and the table gives the median over rounds. Both workers run the very same programs:
this tree's ``ad/examples/programs.py`` and ``bench/workloads.py``, loaded by path (the baseline's
own MLP has no ``layer`` helper).

Goal (issue 29): the 20,000-op chain and the MLP at most 10 % slower (ratio <= 1.10), a program
with no helper functions not slower at all (ratio ~1.00).
"""
from __future__ import annotations

from bench.common import format_time

import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

BASELINE = "32f023f"            # the commit before issue 29 (scopes)
REPO = pathlib.Path(__file__).resolve().parents[1]
STAGES = ("trace", "grad_tape")

# name -> (title, goal for the ratio with / without)
WORKLOADS = {
    "chain": ("20,000-op chain, length 16 (bench_chain; inline, no helper)", 1.00),
    "vector": ("240 elementwise ops, length-16 vector (inline, no helper)", 1.00),
    "mlp": ("MLP 784-512-512-10, b=256 (`layer` x3, `log_softmax`)", 1.10),
    "mlp_small": ("MLP 4-8-3, b=8 (mlp_example's default; same helpers)", 1.10),
    "rnn": ("RNN, 40 steps, b=4, 3->8 (`cell` x40)", None),
}


def workloads(programs, bench_workloads, small: bool = False) -> dict:
    """name -> (function, args). ``programs`` and ``bench_workloads``: the modules
    ``ad.examples.programs`` and ``bench.workloads`` (however loaded). ``small``: tiny sizes,
    for a quick check."""
    import numpy as np
    chain_ops = 200 if small else 20_000
    return {
        "chain": (bench_workloads.chain_loss_for(np, chain_ops), (np.linspace(-1, 1, 16),)),
        "vector": (bench_workloads.VECTOR.loss, bench_workloads.VECTOR.args()),
        "mlp": (programs.mlp_loss, programs.mlp_example(*((8, (4, 8, 3)) if small else
                                                          (bench_workloads.BATCH, bench_workloads.SIZES)))),
        "mlp_small": (programs.mlp_loss, programs.mlp_example()),
        "rnn": (programs.rnn_loss, programs.rnn_example(steps=4 if small else 40)),
    }


def run_stage(ad, stage: str, fn, args):
    """One call of ``stage`` ("trace" or "grad_tape") of ``fn`` at ``args``."""
    return ad.trace(fn, *args) if stage == "trace" else ad.grad_tape(fn, *args)


# The worker: one per tree. argv: the tree (its ``ad`` is imported), this repository (whose
# programs both sides run). Reads one JSON command per line, answers one JSON line.
_WORKER = r'''
import importlib.util, json, sys, time
tree, repo = sys.argv[1], sys.argv[2]
sys.path.insert(0, tree)
import numpy as np
import ad
assert ad.__file__.startswith(tree), (ad.__file__, tree)

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

programs = load("_scopes_bench_programs", repo + "/ad/examples/programs.py")
workloads_module = load("_scopes_bench_workloads", repo + "/bench/workloads.py")
sys.path.insert(1, repo)
bench = load("_scopes_bench", repo + "/bench/bench_scopes.py")
small = len(sys.argv) > 3 and sys.argv[3] == "small"
work = bench.workloads(programs, workloads_module, small=small)

for line in sys.stdin:
    cmd = json.loads(line)
    fn, args = work[cmd["workload"]]
    if cmd["op"] == "info":
        tape = bench.run_stage(ad, cmd["stage"], fn, args)
        eqns = tape.eqns
        scopes = len({e.scope for e in eqns}) if eqns and hasattr(eqns[0], "scope") else None
        reply = {"eqns": len(eqns), "scopes": scopes}
    else:
        n = cmd["n"]           # no gc.collect() first: a side's garbage is its own cost
        t0 = time.process_time()
        for _ in range(n):
            bench.run_stage(ad, cmd["stage"], fn, args)
        reply = {"t": (time.process_time() - t0) / n}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
'''


class Worker:
    """A Python process that imports ``ad`` from ``tree`` and times calls on request."""

    def __init__(self, tree: pathlib.Path, small: bool = False):
        self.tree = tree
        argv = [sys.executable, "-c", _WORKER, str(tree), str(REPO)] + (["small"] if small else [])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     cwd=str(tree), text=True, env=dict(os.environ))

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker on {self.tree} died (exit code {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def baseline_tree(dest: pathlib.Path) -> str | None:
    """Extract ``ad/`` at ``BASELINE`` into ``dest``; None if done, else why not."""
    probe = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{BASELINE}^{{commit}}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return (f"the baseline commit {BASELINE} is not in this clone (shallow?): "
                f"{probe.stderr.strip() or 'git failed'}")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BASELINE, "ad"], capture_output=True)
    if archive.returncode != 0:
        return f"git archive {BASELINE} failed: {archive.stderr.decode().strip()}"
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return None


def describe_tree() -> str:
    """This tree's commit, and whether ``ad/`` has uncommitted changes."""
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown commit"
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "ad"],
                           capture_output=True, text=True).stdout.strip()
    return head + (" + uncommitted changes in ad/" if dirty else "")


def measure(names=tuple(WORKLOADS), rounds: int = 15, min_time: float = 0.1,
            small: bool = False) -> dict:
    """{(workload, stage): {"with": [...], "without": [...], "info": ...}} per-call CPU seconds per
    round, interleaved; or {"skipped": reason}."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="bench_scopes_"))
    try:
        why = baseline_tree(tmp)
        if why is not None:
            return {"skipped": why}
        sides = {"with": Worker(REPO, small), "without": Worker(tmp, small)}
        try:
            return _measure(sides, names, rounds, min_time)
        finally:
            for w in sides.values():
                w.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(sides: dict, names, rounds: int, min_time: float) -> dict:
    keys = [(w, s) for w in names for s in STAGES]
    out, reps = {}, {}
    for key in keys:
        w, s = key
        info = {side: worker.ask(op="info", workload=w, stage=s) for side, worker in sides.items()}
        if info["with"]["eqns"] != info["without"]["eqns"]:
            raise AssertionError(f"{w} {s}: the two trees record different tapes: {info}")
        one = max(sides["with"].ask(op="time", workload=w, stage=s, n=1)["t"],
                  sides["without"].ask(op="time", workload=w, stage=s, n=1)["t"])
        reps[key] = max(1, round(min_time / max(one, 1e-6)))
        out[key] = {"with": [], "without": [], "info": info, "n": reps[key]}
    order = list(sides)
    for r in range(rounds):
        for key in keys:
            w, s = key
            for side in (order if r % 2 == 0 else order[::-1]):
                out[key][side].append(sides[side].ask(op="time", workload=w, stage=s, n=reps[key])["t"])
    return out


def report(results: dict, rounds: int, seconds: float) -> str:
    lines = ["### Issue 29: the cost of recording scopes (with / without, interleaved)", ""]
    if "skipped" in results:
        lines.append(f"Comparison skipped: {results['skipped']}.")
        return "\n".join(lines) + "\n"
    lines += [f"`ad.trace` and `ad.grad_tape` (trace + lifted backward, no optimisation) of the same "
              f"programs, this tree ({describe_tree()}, with scopes) against commit {BASELINE} (before "
              f"scopes), each in its own worker process, commands alternated A B / B A over {rounds} "
              f"rounds; CPU time per "
              f"call, ratio = with / without per round, median over rounds (interquartile range in "
              f"brackets). Goal: <= 1.10 for the chain and the MLP, ~1.00 (not slower) for a "
              f"program with no helper functions.", "",
              "| workload | stage | equations | scopes | without | with | ratio | goal |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for (w, s), d in results.items():
        title, goal = WORKLOADS[w]
        ratios = sorted(a / b for a, b in zip(d["with"], d["without"]))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        ratio = statistics.median(ratios)
        mark = "" if goal is None else (f"<= {goal:.2f}" + (" (over)" if ratio > goal + 0.02 else ""))
        info = d["info"]["with"]
        lines.append(f"| {title} | {s} | {info['eqns']:,} | {info['scopes']} | "
                     f"{format_time(statistics.median(d['without']))} | "
                     f"{format_time(statistics.median(d['with']))} | "
                     f"{ratio:.3f} [{q[0]:.3f}-{q[2]:.3f}] | {mark} |")
    lines += ["", f"\"(over)\" marks a median ratio more than 0.02 above its goal (two copies of the "
              f"baseline measured this way give 0.97-1.01). The RNN has no goal of its own (40 helper calls, the most scope "
              f"changes per equation). Whole run: {seconds:.0f} s."]
    return "\n".join(lines) + "\n"


def run(rounds: int = 15) -> str:
    t0 = time.perf_counter()
    results = measure(rounds=rounds)
    return report(results, rounds, time.perf_counter() - t0)


if __name__ == "__main__":
    print(run())
