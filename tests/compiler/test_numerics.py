"""The forms' numerical promise (docs/numerics.md), whatever SIMD paths numpy takes on the machine:
each equation gives numpy's bits for a correctly rounded primitive and stays within
``ad.primitives.ULPS`` of numpy otherwise, in the scalar code (``math``) and in the fused
backend's C loops (the C library), on many operands of every spelling; and the suite's
floating-point comparisons pass again in a subprocess with numpy's AVX-512 paths disabled, so
the suite shows it passes on machines with and without them.

Cost: ~2 s for the spellings (one C compiler run), ~15-20 s for the subprocess (its files,
run again).
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

import ad
from ad.compiler.codegen import compile_tape
from ad.compiler.fused import SPELLINGS
from ad.compiler.kernels import FLOAT32_SPELLINGS
from ad.primitives import REGISTRY
from tests.support.numeric import assert_as_promised, ulps
from tests.support import ROOT

# The suite's comparisons of a form with numpy or with another form, on floating-point values.
COMPARISONS = ("tests/compiler/test_numerics.py", "tests/compiler/test_codegen_scalar.py", "tests/compiler/test_codegen.py",
               "tests/compiler/test_fused.py", "tests/compiler/test_fused_form.py", "tests/compiler/test_reroll.py",
               "tests/passes/test_passes_factor.py", "tests/nn/test_nn_functions.py")
# numpy's dispatch targets that hold its AVX-512 code (numpy 2.4: X86_V4, AVX512_ICL, AVX512_SPR;
# older releases name AVX512F, AVX512_SKX...)
AVX512 = tuple(t for t in __cpu_dispatch__ if t.startswith("AVX512") or t == "X86_V4")
EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, 710.0)


def _operands(n: int, seed: int) -> np.ndarray:
    """Where the elementary functions differ: around 0 and 1, inside (-1, 1), over many binades."""
    rng = np.random.default_rng(seed)
    spread = np.exp(rng.uniform(-30.0, 6.0, n)) * rng.choice((-1.0, 1.0), n)
    return np.concatenate([rng.uniform(-3.0, 3.0, n), rng.uniform(-1.0, 1.0, n), spread, EDGES])


def _arity(prim) -> int:
    return getattr(prim.function, "nin", 0)


UNARY = [p for p in REGISTRY.values() if p.scalar_spelling and _arity(p) == 1]
BINARY = [p for p in REGISTRY.values() if p.scalar_spelling and _arity(p) == 2]


@pytest.mark.parametrize("prim", UNARY + BINARY, ids=lambda p: p.name)
def test_each_scalar_spelling_keeps_the_promise(prim):
    """``math`` and Python arithmetic against numpy, one value at a time (where ``math``
    refuses a value, the compiled code answers with numpy's, as it does in a program)."""
    x = _operands(700, 1)
    args = [x] if _arity(prim) == 1 else [x, np.random.default_rng(2).permutation(x)]
    code = compile_tape(ad.trace(prim.bind, *(float(a[0]) for a in args)))
    assert code.scalar, code.source
    with np.errstate(all="ignore"):
        want = prim.impl(*args)
    got = np.array([code.run([float(a[i]) for a in args])[0] for i in range(x.size)])
    assert_as_promised(got, want, prim, prim.name)


@pytest.fixture(scope="module")
def loops(tmp_path_factory):
    """Every fused spelling of a one-primitive equation, in one loop, on the same operands."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path_factory.mktemp("fused")))
        prims = [p for p in SPELLINGS if _arity(p) in (1, 2) or p.name in ("erf", "relu", "sigmoid")]
        x = _operands(1000, 3)
        y = np.random.default_rng(4).permutation(x)

        def f(x, y):
            return tuple(p.bind(*(x, y)[:_arity(p) or 1]) for p in prims)
        tape = ad.trace(f, x, y)
        compiled = ad.compile(tape, backend="fused")
        assert len(compiled.kernels) == 1
        with np.errstate(all="ignore"):
            yield prims, compiled(x, y), ad.compile(tape)(x, y)


@pytest.mark.parametrize("name", [p.name for p in SPELLINGS if _arity(p) in (1, 2)] + ["erf", "relu", "sigmoid"])
def test_each_fused_spelling_keeps_the_promise(loops, name):
    prims, got, want = loops
    k = [p.name for p in prims].index(name)
    assert_as_promised(got[k], want[k], prims[k], name)


@pytest.fixture(scope="module")
def single_loops(tmp_path_factory):
    """The functions a float32 loop computes in single precision (``sinf``...), on float32
    operands, in one loop."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path_factory.mktemp("fused32")))
        prims = list(FLOAT32_SPELLINGS)
        with np.errstate(over="ignore"):
            x = _operands(5000, 6).astype(np.float32)
        tape = ad.trace(lambda x: tuple(p.bind(x) for p in prims), x)
        compiled = ad.compile(tape, backend="fused")
        assert "tanhf(" in compiled.kernel_source
        with np.errstate(all="ignore"):
            yield prims, compiled(x), ad.compile(tape)(x)


@pytest.mark.parametrize("name", [p.name for p in FLOAT32_SPELLINGS])
def test_each_single_precision_spelling_keeps_the_promise(single_loops, name):
    prims, got, want = single_loops
    k = [p.name for p in prims].index(name)
    assert got[k].dtype == want[k].dtype == np.float32
    assert_as_promised(got[k], want[k], prims[k], name)


def test_the_promise_is_what_tells_apart_the_functions_that_differ():
    """The comparison is not vacuous: on this machine some function of the C library differs
    from numpy's in the last bits (on every x86 machine numpy's tanh does), within the promise."""
    x = _operands(2000, 5)
    with np.errstate(all="ignore"):
        want = np.tanh(x)
    got = np.array([math.tanh(v) if math.isfinite(v) else np.tanh(v) for v in x])
    assert 0 < np.max(ulps(got, want)) <= ad.primitives.ULPS


@pytest.mark.skipif(not AVX512, reason="this numpy build dispatches no AVX-512 code")
def test_the_comparisons_pass_with_numpys_avx512_paths_disabled():
    """The files of COMPARISONS in a subprocess with ``NPY_DISABLE_CPU_FEATURES`` naming numpy's
    AVX-512 targets: on an AVX-512 machine this is the other kind of machine; elsewhere it is the
    same run again (numpy then has no such paths to take)."""
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(AVX512)}
    probe = ("from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__; "
             f"print(sorted(t for t in {AVX512!r} if __cpu_features__.get(t)))")
    assert subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                          "--deselect", f"tests/compiler/test_numerics.py::{test_the_comparisons_pass_with_numpys_avx512_paths_disabled.__name__}",
                          *COMPARISONS], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    enabled = [t for t in AVX512 if __cpu_features__.get(t)]
    print(f"AVX-512 targets on this machine: {enabled or 'none'}; the subprocess ran without them: "
          + run.stdout.strip().splitlines()[-1])
