"""A differential fuzzer: random numpy programs, every form of their gradient compared.

A program is data (``Program``: a family, a shape, a dtype, steps, an input seed) that is turned
into the *source code* of a numpy function (``Program.source``), so a failure prints as a
ready-to-paste pytest test (``Program.as_test``) and hypothesis shrinks it step by step. Families:

- ``real``: elementwise functions, broadcasting between values of different shapes, reductions
  over axes, indexing, in-place writes through views, linalg, ``ad.nn`` functions, kinks, and
  *registry steps*: a call of any registered primitive (``ad.lib``, ``ad.nn``, ``ad.scipy``) on
  operands drawn from one of its declared ``samples`` (so domains and kinks are respected),
  complex128 for primitives that declare ``complex_rule``; its result is folded into the chain.
- ``complex``: chains of complex steps (holomorphic functions, conj, abs, angle, the FFT...)
  kept off branch cuts and poles.
- ``control``: Python ``if``/``while``/``int()`` on traced values (guards); run at three points
  that take other branches.

``compare(f, xs)`` runs every form that applies and raises ``FuzzFailure`` naming the forms that
disagree: closure, lifted, lifted+passes, compiled (numpy; the fused C backend on a quarter of
the programs, ``oracles_for``), finite differences (the dot-product test),
forward mode (``ad.jvp``: ``<J u, 1> == <u, grad>``), per-example gradients (``ad.vmap`` of the
gradient over a batch of 3 against the loop), the second derivative (grad of grad against
finite differences of grad), HIPS autograd (programs written with numpy functions only), the
JSON save/load round trip and the ONNX export run in onnxruntime (tapes that export).

Use it on your own rules with hypothesis::

    @hypothesis.given(ad.checktools.fuzz.programs(extra_steps=...))
    def test_my_rules(program):
        ad.checktools.fuzz.run(program)

or from the shell: ``python -m ad.checktools.fuzz --programs 1000 --seed 7 --workers 2 --out findings``.

The package: ``steps`` (the vocabulary), ``program`` (``Program``, the strategies), ``forms``
(``compare``, what a run covered: ``Tally``), ``runner`` (``run``, ``fuzz``), ``cli`` (the long
run). Their public names are re-exported here: printed tests import ``C, EYE, ...`` and
``compare, fold, registry_call`` from this module.
"""
from .cli import main
from .forms import EXACT, FuzzFailure, Oracles, Tally, compare, compare_control, cpu_time
from .program import NAMESPACE, Program, complex_steps, programs, well_posed
from .runner import FUZZ_SETTINGS, fuzz, oracles_for, run
from .steps import (C, COMPLEX, COMPLEX_LOSSES, CONTROL, CONTROL_ARMS, EYE, IDX, KINKED, LARGEST,
                    LOOKUP, LOWPASS, MARGIN, MASK, N, NN, NOT_AUTOGRAD, NOT_AUTOGRAD_ND, NOT_DRAWN,
                    SHAPES, SMOOTH, TABLE, W, WC, WEIGHTS, WELL, binary, block, cases, fold,
                    registry_call, registry_case, registry_cases, unary)

__all__ = [
    # the vocabulary (steps)
    "N", "W", "WC", "WELL", "EYE", "IDX", "MASK", "WEIGHTS", "C", "TABLE", "LOOKUP", "LOWPASS", "SHAPES",
    "unary", "binary", "block", "SMOOTH", "NN", "KINKED", "NOT_AUTOGRAD", "NOT_AUTOGRAD_ND", "COMPLEX",
    "COMPLEX_LOSSES", "MARGIN", "LARGEST", "CONTROL", "CONTROL_ARMS",
    "registry_call", "fold", "NOT_DRAWN", "registry_cases", "cases", "registry_case",
    # programs (program)
    "Program", "NAMESPACE", "programs", "complex_steps", "well_posed",
    # comparing the forms (forms)
    "EXACT", "FuzzFailure", "Oracles", "Tally", "cpu_time", "compare", "compare_control",
    # running (runner, cli)
    "run", "oracles_for", "FUZZ_SETTINGS", "fuzz", "main",
]
