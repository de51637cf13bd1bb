"""The differential fuzzer (``ad.checktools.fuzz``) in CI: 1,000 generated programs per run, every
form of their gradients compared (closure, lifted, lifted+passes, compiled, finite differences,
forward mode, per-example gradients (vmap), grad of grad, HIPS autograd, JSON round trip, ONNX in onnxruntime; the fused
backend on a quarter of them: each new kernel is a C compiler run).

The seed is fixed so CI is reproducible; set ``AD_FUZZ_SEED`` to explore others (the seed is
printed, and a failure names it). ``make fuzz`` runs the fuzzer for hours. Cost: 103 s of wall
time, 110 s of CPU with the C compiler's, for the 1,000 programs on this machine lightly loaded
(bench/bench_fuzz.py measures the throughput per form).
"""
import os

import numpy as np
import pytest

import ad
from ad.checktools import fuzz
from ad.checks.library import sampled

SEED = int(os.environ.get("AD_FUZZ_SEED", "20"))
PROGRAMS = int(os.environ.get("AD_FUZZ_PROGRAMS", "1000"))


def test_a_thousand_programs_agree_in_every_form():
    print(f"\nfuzzing {PROGRAMS} programs, seed {SEED} (replay: AD_FUZZ_SEED={SEED})")
    tally = fuzz.Tally()
    compared = fuzz.fuzz(PROGRAMS, SEED, tally=tally)
    print({form: n for form, n in sorted(tally.counts.items())}, dict(tally.skipped))
    assert compared >= PROGRAMS
    for form in ("closure", "lifted", "lifted+passes", "compiled", "vmap", "jvp", "json", "finite differences",
                 "grad of grad", "autograd", "onnx", "control", "fused"):
        assert tally.counts[form] >= PROGRAMS // 50, f"{form} compared too few programs: {tally.counts}"


def test_registry_steps_draw_every_sampled_primitive():
    drawn = {name for name, *_ in fuzz.cases()}
    missing = {p.name for p in sampled()} - drawn - set(fuzz.NOT_DRAWN)
    assert not missing, f"primitives with samples that no registry step draws: {sorted(missing)}"
    complex_prims = {name for name, _, _, dtype in fuzz.cases() if dtype == "complex128"}
    assert complex_prims == {p.name for p in sampled() if p.complex_rule} - set(fuzz.NOT_DRAWN) - _no_complex_call()


def _no_complex_call():
    """complex_rule primitives none of whose samples numpy computes at complex128."""
    drawn = {name for name, _, _, dtype in fuzz.cases() if dtype == "complex128"}
    return {p.name for p in sampled() if p.complex_rule} - drawn


def test_a_wrong_rule_is_caught_shrunk_and_printed_as_a_test_that_fails():
    """A sin rule 1% off: found (by finite differences, autograd, or grad of grad through cos,
    whose rule calls sin), shrunk to a step or two, printed as a test that fails with the wrong
    rule and passes with the right one."""
    def wrong_sin(x):                                       # 1% off
        return np.sin(x), lambda dy: (dy * np.cos(x) * 1.01,)
    with ad.using_rule(np.sin, wrong_sin):
        with pytest.raises(fuzz.FuzzFailure) as caught:
            fuzz.fuzz(200, 1, family="real", registry=0, kinks=False)
        message = str(caught.value)
        assert "seed 1" in message and "def test_found_by_fuzzer" in message
        test_source = message.split("# a ready-to-paste test:\n", 1)[1]
        assert test_source.count(" = ") <= 4, f"not shrunk to a small program:\n{test_source}"
        namespace = {}
        exec(compile(test_source, "<printed test>", "exec"), namespace)
        with pytest.raises(fuzz.FuzzFailure):
            namespace["test_found_by_fuzzer"]()
    namespace["test_found_by_fuzzer"]()                    # the right rule passes it


def test_a_printed_program_replays_as_a_passing_test():
    program = fuzz.Program("real", (("sin", 0, 1), ("@", 2, 7, 0), ("view_write", 1, 2), ("reduce_axis", 3, 0)),
                           shape=(2, 3, fuzz.N))
    namespace = {}
    exec(compile(program.as_test("test_replayed"), "<printed test>", "exec"), namespace)
    namespace["test_replayed"]()
    assert fuzz.run(program)[:4] == ["closure", "lifted", "lifted+passes", "compiled"]
