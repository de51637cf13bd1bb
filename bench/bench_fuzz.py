"""The differential fuzzer's throughput: programs per second in all, and per form (each form's
CPU time over the programs it compared), over one seeded run of ``ad.checktools.fuzz.fuzz``
(generation included; a passing run, so no shrinking). CPU time with the C compiler's (the fused
backend), one BLAS thread (bench.common)."""
from __future__ import annotations

import bench.common  # noqa: F401  (one BLAS thread, before numpy loads)

from ad.checktools import fuzz  # noqa: E402

PROGRAMS, SEED = 400, 5


def run(programs: int = PROGRAMS, seed: int = SEED) -> str:
    tally = fuzz.Tally()
    fuzz.cases()                                   # the registry's cases, drawn once per process
    t0 = fuzz.cpu_time()
    compared = fuzz.fuzz(programs, seed, tally=tally)
    total = fuzz.cpu_time() - t0
    lines = ["### Differential fuzzer throughput", "",
             f"{compared} programs (seed {seed}) in {total:.1f} s of CPU: {compared / total:.1f} programs/s "
             "in all (generation and every form)", "",
             "| form | programs compared | CPU s | programs/s |", "| --- | ---: | ---: | ---: |"]
    for form in sorted(tally.times, key=tally.times.get, reverse=True):
        n, t = tally.counts[form], tally.times[form]
        lines.append(f"| {form} | {n} | {t:.2f} | {n / t if t else float('inf'):.0f} |")
    skipped = ", ".join(f"{why}: {n}" for why, n in tally.skipped.most_common())
    lines += ["", f"did not apply: {skipped or 'none'}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
