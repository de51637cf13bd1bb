"""The fused backend (``ad.compile(tape, backend="fused")``, ad/compiler/fused.py) against the numpy backend:
every gradient case of the spec table (tests/support/cases.py) and hypothesis-generated programs (mixing
the shapes a loop broadcasts, sums that end a loop, a matmul between loops, views read where
their base holds them, a stack's small matmul unrolled into a loop) give
the same results to rounding; the loops follow numpy at NaN, inf and zero, built for every vector
width the machine runs; long loops split into functions give the unsplit loop's results; each loop
runs in C or as numpy lines, whichever measured faster; what cannot be fused stays a numpy line;
bad arguments and a missing compiler are refused by name.

Cost: ~18 s of CPU for the file (1,762 tests, today's idle 2-core machine): collecting and tracing
the spec table, one C compiler run at -O0 for its 2,161 loops, one optimised per generated program
(20) and per split-loop case."""
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad
from ad.compiler import calls, clib, fused, kernels
from ad.samples import F32, F64
from tests.support.cases import floats, weighted, weights
from tests.support.numeric import assert_fused_agrees
from tests.support.rule_checks import GRADIENT_CASES


@pytest.fixture(autouse=True, scope="module")
def kernel_cache(tmp_path_factory):
    """A fresh kernel cache: the tests compile, and leave the user's cache alone."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path_factory.mktemp("fused")))
        yield


def _table():
    """(id, gradient tape, arguments) per gradient case, float64 and (where declared) float32 at
    the case's first shape."""
    out = []
    for param in GRADIENT_CASES:
        case, shape = param.values
        for dtype in (F64, F32):
            if dtype not in case.sample.dtypes or (dtype == F32 and shape != case.sample.shapes[0]):
                continue
            rng = np.random.default_rng(1)
            xs = case.inputs(shape, rng, dtype)
            loss = weighted(case.fn, weights(case.fn(*xs), rng, dtype))
            argnums = floats(xs)
            if not argnums:
                continue
            try:
                tape = ad.optimize(ad.grad_tape(loss, *xs, argnums=argnums))
            except Exception:      # cases ad.grad traces per call (guards) are covered by test_rules
                continue
            out.append((f"{param.id}-{np.dtype(dtype).name}", tape, xs))
    return out


TABLE = _table()


@pytest.fixture(scope="module")
def compiled_table():
    """One compiler run at -O0 for all (the optimised loops are checked by the other tests)."""
    return dict(zip((i for i, _, _ in TABLE), fused.compile_all([t for _, t, _ in TABLE], optimise=False)))


@pytest.mark.parametrize("key,tape,xs", TABLE, ids=[i for i, _, _ in TABLE])
def test_spec_table_agrees_with_the_numpy_backend(key, tape, xs, compiled_table):
    assert_fused_agrees(tape, compiled_table[key], xs, 1e-12)


def test_the_spec_table_is_fused_not_just_run():
    """Most elementwise cases fuse their pullback with their primal: the test above checks
    kernels, not only numpy lines."""
    n = sum(isinstance(item, fused.Group) for _, tape, _ in TABLE for item in fused.fuse(tape))
    assert n >= 100, n


W = np.random.default_rng(0).standard_normal((4, 4)) / 2
STEPS = {   # name -> (arity, fn): smooth, safe domains built in
    "sin": (1, np.sin), "tanh": (1, np.tanh), "exp_tanh": (1, lambda x: np.exp(np.tanh(x))),
    "log1p_sq": (1, lambda x: np.log1p(x * x)), "sqrt1": (1, lambda x: np.sqrt(1.0 + x * x)),
    "square": (1, np.square), "neg": (1, np.negative), "scale": (1, lambda x: 0.5 * x - 1.0),
    "add": (2, np.add), "mul": (2, np.multiply), "div": (2, lambda x, y: x / (1.0 + y * y)),
    "hypot1": (2, lambda x, y: np.hypot(x, 1.0 + y * y)), "arctan2": (2, lambda x, y: np.arctan2(x, 2.0 + y * y)),
    "maximum": (2, np.maximum), "where": (2, lambda x, y: np.where(x > y, x, y * 2.0)),
    "sigmoid": (1, ad.nn.sigmoid), "relu": (1, ad.nn.relu), "f32_round_trip": (1, lambda x: x.astype(np.float32) * 1.0),
    "sum_back": (1, lambda x: x - np.sum(x) / 16.0), "matmul": (1, lambda x: x @ W if np.shape(x)[-1:] == (4,) else x),
    "row": (1, lambda x: x[0] if np.ndim(x) else x), "corner": (1, lambda x: x[(slice(1),) * np.ndim(x)]),
    "column": (1, lambda x: x[:, 1:2] if np.ndim(x) == 2 else x),
    "reversed": (1, lambda x: x[::-1] if np.ndim(x) else x), "transposed": (1, np.transpose),
    "stacked_matmul": (1, lambda x: np.reshape(np.reshape(np.stack([x, x[::-1]], axis=-1), (-1, 2)) @ W[:2, :1], np.shape(x))
                       if np.ndim(x) else x),
    "softmax": (1, lambda x: np.exp(x - np.max(x, axis=-1, keepdims=True)) / np.sum(np.exp(x), axis=-1, keepdims=True)),
}
NAMES = sorted(STEPS)


def _program(steps):
    def f(x0, x1):
        pool = [x0, x1]
        for name, i, j in steps:
            arity, fn = STEPS[name]
            pool.append(fn(*(pool[i % len(pool)], pool[j % len(pool)])[:arity]))
        return np.sum(pool[-1] * pool[-1]) + 0.1 * np.sum(pool[-2])
    return f


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 99), st.integers(0, 99)), min_size=1, max_size=10),
       st.integers(0, 2**16))
def test_generated_programs_agree_with_the_numpy_backend(steps, seed):
    """On a (4, 4) matrix and a (4,) vector: elementwise steps broadcast the vector (read with
    ``i % 4``) and columns (``i / 4``), rows and corners make loops over other shapes (a 1x1
    corner is read with ``0``), reductions along an axis are numpy lines between loops."""
    rng = np.random.default_rng(seed)
    x0, x1 = rng.standard_normal((4, 4)), rng.standard_normal(4)
    tape = ad.optimize(ad.grad_tape(_program(steps), x0, x1, argnums=(0, 1)))
    assert_fused_agrees(tape, ad.compile(tape, backend="fused"), (x0, x1), 1e-12)


def test_empty_arrays_are_not_fused():
    """A loop over no elements is numpy's: a kernel of an empty (4, 0) slice read its first
    element (past the end) and summed it into the loss (found by the generated programs above)."""
    rng = np.random.default_rng(0)
    x0, x1 = rng.standard_normal((4, 4)), rng.standard_normal(4)
    f = _program([("column", 0, 0), ("column", 2, 0)])        # x[:, 1:2][:, 1:2] is (4, 0)
    tape = ad.optimize(ad.grad_tape(f, x0, x1, argnums=(0, 1)))
    fused = ad.compile(tape, backend="fused")
    assert fused.kernels and all(math.prod(k.group.shape) > 0 for k in fused.kernels)
    assert_fused_agrees(tape, fused, (x0, x1), 1e-12)
    np.testing.assert_allclose(fused(x0, x1)[0], f(x0, x1), rtol=1e-12)


EDGES = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3.0, np.inf, -np.inf, np.nan, 1e-310, 1e300])


def _isas():
    """The vector widths this machine's loops can be built for (``clib.vector_flags``): its own
    flags, and each narrower x86 one it also runs (AVX2, SSE2), or only its own elsewhere."""
    own = clib.vector_flags()
    narrower = [clib.vector_flags(cpu=cpu) for cpu in ({"avx2"}, set())] if "-mavx512f" in own else \
        [clib.vector_flags(cpu=set())] if "-mavx2" in own else []
    return [own, *narrower]


@pytest.mark.parametrize("isa", _isas(), ids=lambda flags: next((f for f in flags if f.startswith("-mavx")), "base"))
def test_loops_follow_numpy_at_nan_inf_and_zero(isa, monkeypatch):
    """Every fused spelling on values where C and numpy could differ: division by zero,
    NaN through maximum and minimum, sign of NaN, integer powers, comparisons with NaN; built
    for every vector width the machine runs (glibc's vector sin, exp... differ from its scalar
    ones in the last bits: within the promise, and alike at the edges)."""
    monkeypatch.setattr(clib, "_VECTOR_FLAGS", [isa])
    def f(x, y):
        with np.errstate(all="ignore"):
            outs = [x / y, np.maximum(x, y), np.minimum(x, y), np.sign(x), x ** 2, x ** y, np.sqrt(x),
                    np.log(x), np.exp(x), np.tanh(x), np.arctan2(x, y), np.hypot(x, y), np.floor(x),
                    np.where(x > y, x, y), np.fmax(x, y), np.abs(x), np.reciprocal(x), np.square(x),
                    np.log1p(x), np.expm1(x), np.cbrt(x), np.arcsin(x), np.arccosh(x), np.rint(x),
                    (x <= y) & ~np.isnan(y), ad.nn.relu(x), ad.nn.sigmoid(x), x.astype(np.float32)]
        return tuple(outs)
    x = np.repeat(EDGES, EDGES.size)
    y = np.tile(EDGES, EDGES.size)
    tape = ad.trace(f, x, y)
    got = ad.compile(tape, backend="fused")
    assert len(got.kernels) == 1
    with np.errstate(all="ignore"):
        ref = ad.compile(tape)(x, y)
    for k, (g, r) in enumerate(zip(got(x, y), ref)):
        assert g.dtype == r.dtype, k
        np.testing.assert_allclose(g, r, rtol=1e-14, atol=0, equal_nan=True, err_msg=f"output {k}")


def test_float32_loops_take_python_numbers_as_float32():
    """numpy compares float32 values with float32(0.1) (a Python number is weak): so do the
    loops (``0.1f``), exactly."""
    def f(x):
        return np.where(x > 0.1, x * 0.1, x / 3.0) + (x == 0.1)
    x = np.array([0.1, 0.2, 0.3, -1.0], np.float32)
    compiled = ad.compile(ad.trace(f, x), backend="fused")
    assert "0.10000000149011612f" in compiled.kernel_source
    np.testing.assert_array_equal(compiled(x), f(x))
    assert compiled(x).dtype == np.float32


def test_one_loop_for_an_elementwise_gradient_and_numpy_for_blas():
    """The forward chain, its sum and the whole backward pass of an elementwise function run in
    one loop; a matmul stays a numpy call between two loops, read in the driver."""
    def f(x):
        for _ in range(3):
            x = np.sin(x) * 0.9 + 0.1 * x
        return np.sum(x)
    c = ad.compile(ad.optimize(ad.grad_tape(f, np.ones(16))), backend="fused")
    assert len(c.kernels) == 1 and "for (long i = 0; i < n; i++)" in repr(c)
    assert "double v1 = sin(v0);" in c.kernel_source
    assert "f_loop0(v0)" in c.source and "loop over 16 elements" in c.source
    assert c._repr_markdown_().count("```") == 4

    W = np.random.default_rng(0).standard_normal((4, 4))
    mlp = ad.optimize(ad.grad_tape(lambda x: np.sum(np.tanh(np.tanh(x) @ W) ** 2), np.ones((3, 4))))
    c = ad.compile(mlp, backend="fused")
    assert "@" in c.source or "matmul" in c.source
    assert len(c.kernels) >= 2
    np.testing.assert_allclose(c(np.ones((3, 4)))[1], ad.compile(mlp)(np.ones((3, 4)))[1], rtol=1e-12)


def test_a_loop_reads_broadcast_operands_by_index():
    """Against a (2, 3, 4) loop, nested loops over the three axes: a row is read at ``[i2]``, a
    (2, 3, 1) column at ``[i0 * 3 + i1]``, a (3, 1) middle block at ``[i1]``, a 1x1 once before
    the loops; all in one loop nest, its innermost loop vectorisable."""
    def f(x, r, col, mid, c):
        return np.tanh(x * r + c) * r - col + mid
    args = (np.ones((2, 3, 4)), np.arange(4.0), np.arange(6.0).reshape(2, 3, 1), np.arange(3.0).reshape(3, 1),
            np.full((1, 1), 0.5))
    compiled = ad.compile(ad.trace(f, *args), backend="fused")
    src = compiled.kernel_source
    assert len(compiled.kernels) == 1
    for read in ("p0[i]", "p1[i2]", "p2[i0 * 3 + i1]", "p3[i1]", "double v4 = p4[0];",
                 "for (long i0 = 0; i0 < n / 12; i0++)", "long i = i0 * 12 + i1 * 4 + i2;"):
        assert read in src, read
    np.testing.assert_allclose(compiled(*args), f(*args), rtol=1e-15, atol=1e-15)   # tanh: libmvec's


def test_axes_collapse_where_every_operand_is_contiguous_or_broadcast_alike():
    """Same-shape operands make one flat loop; a bias makes rows and columns; axes of length 1
    drop out; strides are element strides, 0 where an operand broadcasts."""
    assert kernels.strides((3, 1), (2, 3, 4)) == (0, 1, 0)
    assert kernels.strides((3, 2), (2, 3, 4)) is None and kernels.strides((2, 3, 4), (3, 4)) is None
    same = kernels.strides((4, 5, 6), (4, 5, 6))
    assert kernels.collapse((4, 5, 6), [same, same]) == ((120,), [(1,), (1,)])
    bias = kernels.strides((6,), (4, 5, 6))
    assert kernels.collapse((4, 5, 6), [same, bias]) == ((20, 6), [(6, 1), (0, 1)])
    pool = kernels.strides((2, 3, 1, 3, 1, 4), (2, 3, 2, 3, 2, 4))
    dims, (read,) = kernels.collapse((2, 3, 2, 3, 2, 4), [pool])
    assert dims == (6, 2, 3, 2, 4) and read == (12, 0, 4, 0, 1)
    assert kernels.at(read, dims, False) == "i0 * 12 + i2 * 4 + i4"
    assert kernels.at(read, dims, True) == "(i / 48) * 12 + (i / 8 % 3) * 4 + i % 4"
    assert kernels.collapse((1, 7, 1), [(0, 1, 0)]) == ((7,), [(1,)])


@pytest.mark.parametrize("split", [False, True], ids=["nested", "split"])
def test_any_broadcast_fuses_into_one_loop(split, monkeypatch):
    """A 2x2 pool's pullback broadcast (2, 3, 1, 3, 1, 4) -> (2, 3, 2, 3, 2, 4), a bias along
    the last axis and a per-channel column, nested or split into flat blocks (indices by
    division), give numpy's results to tanh's rounding (libmvec's against numpy's)."""
    if split:
        monkeypatch.setattr(kernels, "PART", 2)
    rng = np.random.default_rng(1)
    def f(x, d, b, c):
        return np.tanh(x * np.broadcast_to(d, x.shape) + b) * c
    args = (rng.standard_normal((2, 3, 2, 3, 2, 4)), rng.standard_normal((2, 3, 1, 3, 1, 4)),
            rng.standard_normal(4), rng.standard_normal((3, 1, 1, 1, 1)))
    tape = ad.trace(f, *args)
    compiled = ad.compile(tape, backend="fused")
    assert len(compiled.kernels) == 1 and (compiled.kernels[0].scratch is not None) == split
    np.testing.assert_allclose(compiled(*args), ad.compile(tape)(*args), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(compiled(*args), f(*args), rtol=1e-15, atol=1e-15)


def test_reshapes_are_free_in_a_loop():
    """A reshape keeps the flat order: a loop continues across it, over the finer of the two
    shapes (``refine``), and an operand read through it keeps its strides: the pool pullback's
    ``reshape(broadcast_to(reshape(dp)))`` times a share is one loop reading ``dp`` itself (no
    copy of the broadcast). Reshapes that do not refine each other start a new loop."""
    assert kernels.refine((12, 4), (2, 3, 2, 4)) == (2, 3, 2, 4)
    assert kernels.refine((6, 1, 4), (24,)) == (6, 4) and kernels.refine((2, 3), (3, 2)) is None
    assert kernels.restride((4, 1), (12, 4), (2, 3, 2, 4)) == (24, 8, 4, 1)

    def pool_pullback(dp, share, x):
        wide = np.reshape(np.broadcast_to(np.reshape(dp * 0.25, (2, 3, 1, 3, 1, 4)), (2, 3, 2, 3, 2, 4)), (72, 4))
        h = np.reshape(np.tanh(x) + 1.0, (2, 3, 2, 3, 2, 4))
        return wide * share, np.reshape(h * 2.0, (72, 4)) - share, np.reshape(h * 3.0, (12, 24))
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((2, 3, 3, 4)), rng.standard_normal((72, 4)), rng.standard_normal((72, 4)))
    tape = ad.trace(pool_pullback, *args)
    compiled = ad.compile(tape, backend="fused")
    assert "np.broadcast_to" not in compiled.source and "np.reshape" not in compiled.source
    assert "p4[i0 * 12 + i2 * 4 + i4]" in compiled.kernel_source     # dp * 0.25, read where it broadcasts
    for got, want in zip(compiled(*args), pool_pullback(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)

    def unrelated(x):       # (2, 3) -> (3, 2): two loops, the second reads the first's array as it lies
        return np.reshape(np.sin(x) * 2.0, (3, 2)) * np.arange(2.0) + 1.0
    compiled = ad.compile(ad.trace(unrelated, np.ones((2, 3))), backend="fused")
    assert len(compiled.kernels) == 2 and "np.reshape" not in compiled.source
    np.testing.assert_allclose(compiled(np.ones((2, 3))), unrelated(np.ones((2, 3))), rtol=1e-15)


@pytest.mark.parametrize("split", [False, True], ids=["nested", "split"])
def test_axis_sums_add_into_their_output_in_the_loop(split, monkeypatch):
    """The 2x2 mean-pool of a relu, a bias gradient (``sum_to`` over the leading axes) and a sum
    along axis 0 run in the loop that makes their operand (the relu's values are never written:
    only the pool is); a row sum stays a numpy line. Results, with inf and nan in a column, are
    the numpy backend's to rounding (sums add in loop order), nested or split into blocks (the
    last overlapping: 288 elements)."""
    if split:
        monkeypatch.setattr(kernels, "PART", 2)
    def f(x, b):
        pooled = np.mean(np.reshape(np.maximum(x + b, 0.0), (2, 3, 2, 3, 2, 4)), axis=(2, 4))
        return pooled, ad.core_prims.sum_to(x * b, (4,)), np.sum(np.tanh(x), axis=0), np.sum(x * 2.0, axis=1)
    rng = np.random.default_rng(3)
    x, b = rng.standard_normal((72, 4)), rng.standard_normal(4)
    x[5, 1], x[9, 2] = np.inf, np.nan
    tape = ad.trace(f, x, b)
    compiled = ad.compile(tape, backend="fused")
    assert "np.mean" not in compiled.source and "sum_to" not in compiled.source
    assert "np.add.reduce(" in compiled.source          # the row sum
    assert ("not vectorised" in compiled.kernel_source) == split     # lanes of a block share columns
    relu = next(e.outputs[0] for e in tape.eqns if e.prim.name == "maximum")
    assert relu not in {y for y, _, _ in compiled.kernels[0].outputs}
    with np.errstate(invalid="ignore"):
        for got, want in zip(compiled(x, b), ad.compile(tape)(x, b)):
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


def test_a_loop_writes_over_a_new_array_no_one_reads_after_it():
    """``tanh(x @ W + b)``: the matmul's result is read by the loop alone, which (once measured)
    writes its output into it; a tape input, a value also read elsewhere, a split loop's operand
    and a view are never written over. Every call gives the numpy backend's results."""
    rng = np.random.default_rng(4)
    x, W, b = rng.standard_normal((6, 20)), rng.standard_normal((20, 8)), rng.standard_normal(8)   # not unrolled

    def f(x, W, b):
        g = x @ W
        return np.tanh(x @ W + b) * 2.0, np.sin(x) + 1.0, np.exp(g) * 3.0 + g[0]
    tape = ad.trace(f, x, W, b)
    compiled = ad.compile(tape, backend="fused")
    first, inputs_only, read_twice = compiled.kernels
    assert first.donors == {0: 0} and not inputs_only.donors and not read_twice.donors
    for k in compiled.kernels:
        k.runs = "C"
    for _ in range(3):
        for got, want in zip(compiled(x, W, b), f(x, W, b)):
            np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)
    h = x @ W
    assert first(h, b)[0] is h and first(h[:, :], b)[0] is not h     # a view is not written over
    with pytest.MonkeyPatch.context() as m:
        m.setattr(kernels, "PART", 1)
        assert not any(k.donors for k in ad.compile(tape, backend="fused").kernels)

    def g(x):       # a loop's value, read by the next loop alone, is written over; a reshape's is not
        a = np.tanh(x) * 2.0
        r = np.reshape(np.sin(x) * 2.0, (120,))
        return (a - np.sum(a)) * 3.0, np.cos(r - np.sum(r)) + 1.0
    compiled = ad.compile(ad.trace(g, x), backend="fused")
    assert [bool(k.donors) for k in compiled.kernels] == [False, True, False]
    for runs in ("C", "numpy"):     # numpy lines return a reshape as a view
        for k in compiled.kernels:
            k.runs = runs
        for _ in range(2):
            for got, want in zip(compiled(x), g(x)):
                np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)


def test_views_are_read_where_their_base_holds_them():
    """A transposed view reaches the loop: the loop reads its base at the view's strides (no
    copy, no numpy line); a base in another memory order when called (a Fortran-ordered input)
    runs the loop's numpy lines, the view's equation among them."""
    def f(x):
        y = np.transpose(x)
        return np.sin(y) * y + 1.0
    x = np.random.default_rng(0).standard_normal((3, 4))
    compiled = ad.compile(ad.trace(f, x), backend="fused")
    assert "np.transpose" not in compiled.source and "p0[i0 + i1 * 4]" in compiled.kernel_source
    compiled.kernels[0].runs = "C"
    np.testing.assert_allclose(compiled(x), f(x), rtol=1e-15)
    assert compiled.kernels[0]._twin is None
    np.testing.assert_allclose(compiled(np.asfortranarray(x)), f(x), rtol=1e-15)
    assert compiled.kernels[0]._twin is not None


def test_scalar_tapes_take_python_floats():
    def f(a, b):
        return np.sin(a) * b + a / b
    tape = ad.optimize(ad.grad_tape(f, 1.5, 2.0, argnums=(0, 1)))
    value, grads = ad.compile(tape, backend="fused")(1.5, 2.0)
    ref_value, ref_grads = ad.compile(tape)(1.5, 2.0)
    assert type(value) is type(ref_value) and value == pytest.approx(ref_value, rel=1e-15)
    np.testing.assert_allclose(grads, ref_grads, rtol=1e-15)


def test_a_wrong_size_is_refused_before_the_loop_reads_past_the_end():
    c = ad.compile(ad.trace(lambda x: np.sin(x) * x, np.ones(8)), backend="fused")
    with pytest.raises(ValueError, match=r"has shape \(4,\), the tape was traced at \(8,\)"):
        c(np.ones(4))


def test_kernels_are_cached_by_their_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path))
    tape = ad.trace(lambda x: np.cos(x) * x + 1.0, np.ones(5))
    ad.compile(tape, backend="fused")
    ad.compile(tape, backend="fused")
    assert len(list(tmp_path.glob("*.so"))) == 1
    ad.compile(ad.trace(lambda x: np.cos(x) * x + 2.0, np.ones(5)), backend="fused")
    assert len(list(tmp_path.glob("*.so"))) == 2


def test_a_missing_compiler_and_an_unknown_backend_are_named(monkeypatch):
    monkeypatch.setenv("CC", "no-such-cc")
    monkeypatch.setattr(clib, "_COMPILER", [])
    tape = ad.trace(lambda x: np.cos(x) * x, np.ones(3))
    with pytest.raises(clib.FusedUnavailable, match="backend='numpy'"):
        ad.compile(tape, backend="fused")
    with pytest.raises(ValueError, match="choose one of"):
        ad.compile(tape, backend="numba")


def test_the_kernel_cache_drops_the_least_recently_used_past_its_bound(tmp_path, monkeypatch):
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path))
    tapes = [ad.trace(lambda x, c=c: np.cos(x) * x + c, np.ones(5)) for c in (1.0, 2.0, 3.0)]
    first = ad.compile(tapes[0], backend="fused")
    [first_library] = tmp_path.glob("*.so")
    second = ad.compile(tapes[1], backend="fused")
    [second_library] = set(tmp_path.glob("*.so")) - {first_library}
    for library in (first_library, second_library):
        os.utime(library, (1, 1))               # both unused for a long time...
    ad.compile(tapes[0], backend="fused")       # ...until a cache hit marks the first as used now
    size = first_library.stat().st_size
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE_MB", str(2.5 * size / 2**20))   # room for two
    ad.compile(tapes[2], backend="fused")
    kept = set(tmp_path.glob("*.so"))
    assert first_library in kept and second_library not in kept and len(kept) == 2
    np.testing.assert_allclose(first(np.ones(5)), second(np.ones(5)) - 1.0)   # loaded ones still run


def _chain(x, w):
    """A long elementwise chain with what a split loop carries between its functions: values
    read several parts later, a bool, a float32 round trip, a broadcast row, a sum inside."""
    y, sums = x, []
    for k in range(12):
        y = np.sin(y) * w + np.where(y > 0.1 * k, y, 0.5 * x)
        sums.append(np.sum(np.tanh(y)))
        y = y.astype(np.float32).astype(np.float64) if k == 5 else y
    return sum(sums) + np.sum(y * x)


@pytest.mark.parametrize("shape", [(), (16,), (64,), (10, 13), (3, 200)], ids=str)
def test_long_loops_split_into_functions_give_the_same_results(shape, monkeypatch):
    """With ``PART`` small every loop is split: its parts pass values through the scratch array,
    blocks of ``BLOCK`` elements run through all of them (a last block overlapping the one before
    it: 130 and 600 elements), sums count each element once; 1-element loops (a Python float)
    split too. Results are the unsplit loop's, to rounding."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, shape)
    w = rng.uniform(0.5, 1.0, shape[-1:])
    tape = ad.optimize(ad.grad_tape(_chain, x, w, argnums=(0, 1)))
    whole = ad.compile(tape, backend="fused")
    monkeypatch.setattr(kernels, "PART", 7)
    split = ad.compile(tape, backend="fused")
    assert split.kernels[0].scratch is not None and whole.kernels[0].scratch is None
    assert "static __attribute__((noinline)) void f_loop0_3(" in split.kernel_source
    flat = tape.flatten_args((x, w))
    for got, want in zip(split.fn(*flat), whole.fn(*flat)):     # lanes differ: libmvec's or libm's rounding
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
    assert_fused_agrees(tape, split, (x, w), 1e-13)


def test_a_split_loop_reuses_the_scratch_of_values_no_part_reads_any_more(monkeypatch):
    """A chain where each value is read by the next equation only: one slot per part boundary
    would do, and the scratch holds a few slots of ``BLOCK`` elements, not one per value."""
    monkeypatch.setattr(kernels, "PART", 5)

    def f(x):
        for _ in range(40):
            x = np.sin(x) * 0.9
        return x
    c = ad.compile(ad.trace(f, np.ones(100)), backend="fused")
    [k] = c.kernels
    assert k.source.count("static __attribute__") == 16 and k.scratch <= 2 * kernels.BLOCK
    np.testing.assert_allclose(c(np.linspace(-1, 1, 100)), f(np.linspace(-1, 1, 100)), rtol=1e-14)


class _Clock:
    """A clock for the measurement: each C call takes ``c`` seconds, each run of the numpy lines
    ``numpy`` (the kernel reads the clock before and after each; the first call, too slow to skip
    the numpy lines, runs C twice)."""

    def __init__(self, c, numpy):
        self.ticks, self.now = iter([0, c] + [0, c, 0, numpy] * calls.MEASURED_CALLS), 0.0

    def __call__(self):
        self.now += next(self.ticks)
        return self.now


@pytest.mark.parametrize("faster", ["C", "numpy"])
def test_a_loop_runs_as_the_faster_of_c_and_numpy_lines(faster, monkeypatch):
    """The first calls time both ways and return the C loop's results; then the faster runs
    alone, and ``repr`` says which and the times."""
    monkeypatch.setattr(calls, "CLOCK", _Clock(1.0, 2.0) if faster == "C" else _Clock(2.0, 1.0))
    x = np.linspace(-1.0, 1.0, 50)
    c = ad.compile(ad.trace(lambda x: np.exp(np.sin(x)) * x, x), backend="fused")
    [k] = c.kernels
    for _ in range(calls.MEASURED_CALLS):
        assert k.runs is None
        np.testing.assert_array_equal(c(x), k._run((x,))[0])
    assert k.runs == faster and (k._twin is not None)
    assert (f"f_loop0 runs {'in C' if faster == 'C' else 'as numpy lines'}: C {'1' if faster == 'C' else '2'}e+03 ms, "
            f"numpy lines {'2' if faster == 'C' else '1'}e+03 ms (best of 3 calls)") in repr(c)
    want = k._run((x,))[0] if faster == "C" else k.numpy_twin()(x)[0]
    np.testing.assert_array_equal(c(x), want)


@pytest.mark.parametrize("faster", ["C", "numpy"])
def test_a_measured_loop_is_called_directly_and_anything_unusual_takes_the_generic_call(faster, monkeypatch):
    """Once measured, the driver calls the chosen way itself: the numpy lines, or a caller
    written for the loop (the generic call costs 3-4 us a loop). That caller passes C-ordered
    arrays of the loop's dtype and size, writes into a donated buffer as the generic call does,
    and gives anything else to the generic call: a strided view runs the numpy lines, a wrong
    size is refused."""
    monkeypatch.setattr(calls, "CLOCK", _Clock(1.0, 2.0) if faster == "C" else _Clock(2.0, 1.0))
    x, W, b = np.linspace(-1.0, 1.0, 60).reshape(3, 20), np.eye(20, 4) * 0.5, np.linspace(0, 1, 4)
    f = lambda x, W, b: np.tanh(x @ W + b) * 2.0     # noqa: E731     (a contraction of 20: BLAS's)
    c = ad.compile(ad.trace(f, x, W, b), backend="fused")
    [k] = c.kernels
    assert k.donors == {0: 0}
    for _ in range(calls.MEASURED_CALLS):
        assert c.fn.__globals__[k.name] is k
        c(x, W, b)
    called = c.fn.__globals__[k.name]
    assert k.runs == faster and called is not k
    for _ in range(2):
        np.testing.assert_allclose(c(x, W, b), f(x, W, b), rtol=1e-15)
    if faster == "numpy":
        assert called is k.numpy_twin()
        return
    h = x @ W
    want = k._run((h.copy(), b))[0]
    assert called(h, b)[0] is h and np.array_equal(h, want)             # written over, as donated
    wide = np.zeros((3, 8))
    wide[:, ::2] = x @ W
    np.testing.assert_allclose(called(wide[:, ::2], b)[0], f(x, W, b), rtol=1e-15)   # numpy lines
    with pytest.raises(ValueError, match="an operand of 8 elements"):
        called(np.ones((2, 4)), b)
    assert "@" in c.source


def test_a_loop_faster_than_numpy_could_call_its_lines_is_not_timed_against_them(monkeypatch):
    """The 240-op vector: a C call that takes less than numpy's per-line overhead times its
    lines (here a clock that says so: ~17 us against 561 x 0.2 us on the benchmarks' machine,
    but a test must not depend on the machine's load) runs in C from the first call, its numpy
    lines never made."""
    monkeypatch.setattr(calls, "CLOCK", _Clock(1e-9, 1.0))
    x = np.linspace(-1.0, 1.0, 16)

    def f(x):
        y = x
        for _ in range(40):
            y = np.sin(y) * x / np.exp(np.cos(y)) + x
        return np.sum(y)
    c = ad.compile(ad.optimize(ad.grad_tape(f, x)), backend="fused")
    c(x)
    [k] = c.kernels
    assert k.runs == "C" and k._twin is None and "not timed against them" in k.choice()


def test_measuring_keeps_the_numpy_lines_warnings_to_themselves(monkeypatch):
    """While measured, the numpy lines run on the real operands but their results are not the
    call's: log(0) warns only once they are what runs, as the numpy backend warns."""
    monkeypatch.setattr(calls, "CLOCK", _Clock(2.0, 1.0))
    x = np.array([0.0, 1.0, 2.0])
    with np.errstate(divide="ignore"):
        c = ad.compile(ad.trace(lambda x: np.log(x) + x * x, x), backend="fused")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(calls.MEASURED_CALLS):
            c(x)
    assert c.kernels[0].runs == "numpy"
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        c(x)


@pytest.mark.parametrize("machine, libc, cpu, widest", [
    ("x86_64", ("glibc", "2.36"), {"avx2", "avx512f"}, "-mavx512f"),
    ("x86_64", ("glibc", "2.36"), {"avx2"}, "-mavx2"),
    ("x86_64", ("glibc", "2.22"), set(), None),
    ("x86_64", ("glibc", "2.17"), {"avx2"}, "no libmvec"),
    ("x86_64", ("", ""), {"avx2"}, "no libmvec"),          # musl
    ("aarch64", ("glibc", "2.36"), set(), "no libmvec"),
])
def test_loops_vectorise_with_libmvec_where_glibc_has_it(machine, libc, cpu, widest):
    flags = clib.vector_flags(machine, libc, cpu)
    if widest == "no libmvec":
        assert flags == ()
        return
    assert "-lmvec" in flags and "-fopenmp-simd" in flags and "-ffast-math" not in flags
    assert [f for f in flags if f.startswith("-mavx")] == ([widest] if widest else [])


def test_long_libraries_build_at_a_cheaper_level_and_optimise_false_at_o0():
    assert clib.flags(clib.O2_UP_TO)[0] == "-O2"
    assert clib.flags(clib.O2_UP_TO + 1)[:2] == ("-O1", "-fno-tree-bit-ccp")
    assert clib.flags(10, optimise=False)[0] == "-O0"
    assert all("-ffp-contract=off" in clib.flags(n) for n in (1, 10**5))
