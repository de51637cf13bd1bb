"""Running programs: one program through every form (``run``), and ``n`` of them drawn and shrunk
by hypothesis from one seed (``fuzz``), each counted in the caller's ``Tally``."""
from __future__ import annotations

import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, assume, given, seed as hypothesis_seed, settings

from .forms import FuzzFailure, Oracles, Tally, compare
from .program import Program, programs, well_posed


def run(program: Program, oracles: Oracles | None = None, tally: Tally | None = None) -> list[str] | None:
    """Compare every form of ``program``'s gradient; None if the program is ill-posed (a value
    not finite, a complex step near a cut). On a disagreement, FuzzFailure whose message is the
    program as a ready-to-paste pytest test. ``tally``: where to count (a fresh one if None)."""
    tally = Tally() if tally is None else tally
    xs = program.inputs()
    if not well_posed(program, xs):
        return None
    f = program.function()
    tally.counts["programs"] += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)   # astype's complex -> real
            return compare(f, xs, smooth=program.smooth, numpy_only=program.numpy_only, family=program.family,
                           domains=program.domains(), oracles=oracles,
                           rng=np.random.default_rng(program.seed), tally=tally)
    except Exception as exc:       # every exception is a finding: programs are well-posed
        raise FuzzFailure(f"{type(exc).__name__}: {exc}\n\n# a ready-to-paste test:\n{program.as_test()}") from exc


def oracles_for(program: Program, fraction: float) -> Oracles:
    """The expensive oracles (ONNX, autograd, grad of grad) on about ``fraction`` of the
    programs (chosen by the program's seed), the cheap forms on all; the fused backend on a
    quarter of that (each new kernel is a C compiler run, ~0.1 s)."""
    on = (program.seed % 1000) < fraction * 1000
    return Oracles(onnx=on, autograd=on, second_order=on, json=True, fused=on and program.seed % 4 == 0)


FUZZ_SETTINGS = dict(deadline=None, database=None, derandomize=False, report_multiple_bugs=False,
                     phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def fuzz(n: int, seed: int, *, fraction: float = 1.0, family: str | None = None, tally: Tally | None = None,
         **strategy) -> int:
    """Run ``n`` well-posed programs under hypothesis, seeded (``strategy``: options of
    ``programs``; ``tally``: where to count what they covered); returns how many were compared,
    raises the shrunk FuzzFailure, which names the seed that replays it."""
    tally = Tally() if tally is None else tally
    compared = 0

    @hypothesis_seed(seed)
    @settings(max_examples=n, **FUZZ_SETTINGS)
    @given(programs(family, **strategy))
    def one(program):
        nonlocal compared
        assume(run(program, oracles_for(program, fraction), tally) is not None)
        compared += 1
    try:
        one()
    except FuzzFailure as exc:
        raise FuzzFailure(f"seed {seed}: replay with AD_FUZZ_SEED={seed} (tests/checktools/test_fuzz.py) or "
                          f"python -m ad.checktools.fuzz --seed {seed} --programs {n}\n{exc}") from None
    return compared
