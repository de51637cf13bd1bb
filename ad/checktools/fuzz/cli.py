"""The long run, ``python -m ad.checktools.fuzz``: seeds in chunks of ``--programs`` over worker
processes until ``--seeds`` or ``--hours`` run out; each failing seed's shrunk program is written
to ``--out``, every chunk to ``--out``/log.jsonl."""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path

from .forms import FuzzFailure
from .runner import fuzz

DESCRIPTION = "A differential fuzzer: random numpy programs, every form of their gradient compared."


def _worker(args):
    worker, seeds, n, out, fraction, deadline = args
    found = []
    for s in seeds:
        if time.time() > deadline:
            break
        start = time.time()
        try:
            fuzz(n, s, fraction=fraction)
            status = "ok"
        except FuzzFailure as exc:
            status = "failed"
            path = Path(out) / f"seed{s}.txt"
            path.write_text(f"# python -m ad.checktools.fuzz --seed {s} --programs {n}\n{exc}\n")
            found.append(str(path))
        line = {"worker": worker, "seed": s, "programs": n, "status": status, "seconds": round(time.time() - start, 1)}
        with open(Path(out) / "log.jsonl", "a") as log:
            log.write(json.dumps(line) + "\n")
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ad.checktools.fuzz", description=DESCRIPTION)
    p.add_argument("--seed", type=int, default=int(os.environ.get("AD_FUZZ_SEED", "0")),
                   help="first seed (env AD_FUZZ_SEED); each chunk of --programs uses the next one")
    p.add_argument("--programs", type=int, default=200, help="programs per seed (per hypothesis run)")
    p.add_argument("--seeds", type=int, default=1, help="how many seeds (chunks) in all")
    p.add_argument("--hours", type=float, default=None, help="stop starting chunks after this long")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--fraction", type=float, default=1.0, help="share of programs the expensive oracles see")
    p.add_argument("--out", default="fuzz-findings")
    a = p.parse_args(argv)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    deadline = time.time() + (a.hours * 3600 if a.hours else 10**9)
    seeds = list(range(a.seed, a.seed + (a.seeds if not a.hours else 10**6)))
    jobs = [(w, seeds[w::a.workers], a.programs, a.out, a.fraction, deadline) for w in range(a.workers)]
    print(f"fuzzing: seeds from {a.seed}, {a.programs} programs each, {a.workers} worker(s), findings in {a.out}")
    if a.workers == 1:
        found = _worker(jobs[0])
    else:
        with multiprocessing.Pool(a.workers) as pool:
            found = [f for fs in pool.map(_worker, jobs) for f in fs]
    print(f"{len(found)} finding(s)" + "".join(f"\n  {f}" for f in found))
    return 1 if found else 0

