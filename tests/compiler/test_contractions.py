"""Small matrix products unrolled into the fused loops (ad/compiler/contractions.py), and views
read where their base holds them (ad/compiler/views.py): the fused backend gives
the numpy backend's results to rounding, and the loops take in what the docs say they do.

Cost: ~3 s (a few C compiler runs)."""
import math

import numpy as np
import pytest

import ad
from ad.compiler import contractions, kernels, views
from ad.lib.contraction import matmul_p
from tests.support.numeric import assert_fused_agrees


@pytest.fixture(autouse=True, scope="module")
def kernel_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path_factory.mktemp("fused")))
        yield


def _agree(tape, args, rtol=1e-12):
    assert_fused_agrees(tape, ad.compile(tape, backend="fused"), args, rtol)


def conv(Wc, bc, X):
    """A 3x3 conv of 4 channels as im2col and a matmul, relu, 2x2 mean-pool: the CNN's layer."""
    n = X.shape[0]
    cols = np.stack([X[:, 0, i:i + 6, j:j + 6] for i in range(3) for j in range(3)], axis=-1)
    a = np.reshape(cols, (n * 36, 9)) @ Wc + bc
    r = np.maximum(a, 0.0)
    return np.sum(np.mean(np.reshape(r, (n, 3, 2, 3, 2, 4)), axis=(2, 4)) ** 2)


def conv_args(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((9, 4)), rng.standard_normal(4), rng.standard_normal((5, 1, 8, 8))


def test_the_conv_layer_is_two_loops_that_read_the_image():
    """Forward: one loop reads the image (no stack, no matmul), the weight and the bias; backward:
    one loop sums the weight's 9 rows and the bias gradient where it makes the relu's cotangent
    (``cols.T @ da`` is not a BLAS call). Gradients: the numpy backend's, and jax's."""
    args = conv_args()
    tape = ad.optimize(ad.grad_tape(conv, *args, argnums=(0, 1)))
    compiled = ad.compile(tape, backend="fused")
    assert "@" not in compiled.source and "np.stack" not in compiled.source and "concatenate((v" in compiled.source
    assert compiled.source.count("_loop") >= 2
    big = [k for k in compiled.kernels if math.prod(k.group.shape) == 5 * 36 * 4]
    assert len(big) == 2 and all(k._operands[0] is tape.inputs[2] or tape.inputs[2] in k._operands for k in big)
    _agree(tape, args)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp      # the oracle runs the same function on jax.numpy
    want = jax.grad(lambda *a: _on(jnp, conv, *a), argnums=(0, 1))(*args)
    for g, w in zip(compiled.fn(*args)[1:], want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12)


def _on(xp, fn, *args):
    """``fn`` run with ``np`` bound to ``xp`` (the oracle's numpy)."""
    return type(fn)(fn.__code__, {**fn.__globals__, "np": xp})(*args)


def test_the_unrolled_tape_keeps_its_forward_and_backward():
    """The products replacing a forward matmul stay in the forward section (the driver's
    comments and a GradTape's ``n_forward`` move with them)."""
    args = conv_args(1)
    tape = ad.optimize(ad.grad_tape(conv, *args, argnums=(0,)))
    unrolled = contractions.unroll_small_matmuls(tape)
    assert not any(e.prim is matmul_p for e in unrolled.eqns)
    forward = unrolled.eqns[:unrolled.n_forward]
    assert all(not e.origin.is_backward for e in forward) and all(e.origin.is_backward for e in unrolled.eqns[unrolled.n_forward:])


@pytest.mark.parametrize("shapes, unrolled", [
    (((30, 5), (5, 7)), True),          # a short contraction
    (((30, 16), (16, 3)), True),
    (((30, 17), (17, 3)), False),       # too long
    (((3, 40), (40, 6)), False),        # few rows, but its second operand is an input, not a loop's
])
def test_which_products_are_unrolled(shapes, unrolled):
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s) for s in shapes)
    tape = ad.trace(lambda a, b: np.tanh(a @ b + 1.0), a, b)
    assert any(e.prim is matmul_p for e in contractions.unroll_small_matmuls(tape).eqns) is not unrolled
    _agree(tape, (a, b))


def test_a_transposed_weight_stays_a_blas_call_and_float32_rows_are_not_unrolled():
    """``dz @ W.T`` (the dense layer's input gradient) reads W's rows at a stride: BLAS. The
    row form sums along axes, which the loops do in float64 only."""
    rng = np.random.default_rng(3)
    dz, W = rng.standard_normal((32, 10)), rng.standard_normal((50, 10))
    tape = ad.trace(lambda dz, W: np.tanh(dz @ W.T), dz, W)
    assert any(e.prim is matmul_p for e in contractions.unroll_small_matmuls(tape).eqns)
    x, d = rng.standard_normal((40, 3)).astype(np.float32), rng.standard_normal((40, 6)).astype(np.float32)
    tape = ad.trace(lambda x, d: np.transpose(x) @ np.tanh(d), x, d)
    assert any(e.prim is matmul_p for e in contractions.unroll_small_matmuls(tape).eqns)
    x64, d64 = x.astype(np.float64), d.astype(np.float64)
    tape = ad.trace(lambda x, d: np.transpose(x) @ np.tanh(d), x64, d64)
    assert not any(e.prim is matmul_p for e in contractions.unroll_small_matmuls(tape).eqns)
    _agree(tape, (x64, d64))


def test_constant_operands_and_float32():
    """A constant matrix (a Lit of the tape) on either side; float32 products."""
    rng = np.random.default_rng(4)
    W = rng.standard_normal((6, 5))
    x = rng.standard_normal((20, 6))
    tape = ad.trace(lambda x: np.sin(x @ W) ** 2, x)
    assert not any(e.prim is matmul_p for e in contractions.unroll_small_matmuls(tape).eqns)
    _agree(tape, (x,))
    _agree(ad.optimize(ad.grad_tape(lambda x: np.sum(np.sin(x @ W) ** 2), x)), (x,))
    x32 = x.astype(np.float32)
    tape = ad.trace(lambda x: np.tanh(x @ W.astype(np.float32)) * 2.0, x32)
    got, want = ad.compile(tape, backend="fused")(x32)[0], ad.compile(tape)(x32)[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)


VIEWS = {   # name -> a view of x (5, 6) a loop reads
    "reversed": lambda x: x[::-1],
    "every other column": lambda x: x[:, ::2],
    "reversed columns, stepped": lambda x: x[1:, ::-2],
    "transposed": lambda x: np.transpose(x),
    "row": lambda x: x[2],
    "element": lambda x: x[1, 3],
    "broadcast row": lambda x: np.broadcast_to(x[:1], (4, 6)),
    "slice reshaped": lambda x: np.reshape(x[1:3, 1:5], (8,)),       # numpy copies: not one stride
    "transposed and reshaped": lambda x: np.reshape(np.transpose(x), (3, 10)),
}


@pytest.mark.parametrize("split", [False, True], ids=["one function", "split"])
@pytest.mark.parametrize("name", VIEWS)
def test_views_give_the_numpy_backends_results(name, split, monkeypatch):
    """Each view read by a loop (``tanh(view) * view + 1``, and its gradient): read where its
    base holds it where its elements step evenly along the loop's axes, else passed as made;
    also in a loop split into functions, which reads over flat blocks."""
    if split:
        monkeypatch.setattr(kernels, "PART", 2)
    x = np.random.default_rng(5).standard_normal((5, 6))
    view = VIEWS[name]

    def f(x):
        v = view(x)
        return np.sum(np.tanh(v) * v + 1.0) + np.sum(x * x)
    tape = ad.optimize(ad.grad_tape(f, x))
    _agree(tape, (x,))
    np.testing.assert_allclose(ad.compile(tape, backend="fused").fn(x)[0], f(x), rtol=1e-13)


def test_affine_finds_the_strides_or_refuses():
    at = np.arange(40).reshape(5, 8)[1:, ::-2]
    assert views.affine(at) == ((8, -2), 15)
    assert views.affine(np.broadcast_to(np.arange(3), (4, 3))) == ((0, 1), 0)
    assert views.affine(np.reshape(np.arange(40).reshape(5, 8)[:, 1:5], (20,))) is None
    assert views.affine(np.array(7)) == ((), 7)


def test_a_view_of_a_loops_output_is_read_not_copied_and_never_written_over():
    """The second loop reads the first loop's array through a transpose; that array is read at
    other positions than the second writes, so it is never the second loop's output buffer."""
    x = np.random.default_rng(6).standard_normal((6, 6))

    def f(x):
        a = np.sin(x) * 2.0
        return np.transpose(a - np.sum(a)) * a[0] + 1.0
    tape = ad.trace(f, x)
    compiled = ad.compile(tape, backend="fused")
    assert "np.transpose" not in compiled.source
    for k in compiled.kernels:
        k.runs = "C"
    for _ in range(2):
        np.testing.assert_allclose(compiled(x), f(x), rtol=1e-14)
    assert any(k.views for k in compiled.kernels)
    assert all(k._operands[j] not in {e.inputs[0] for e in k.views} for k in compiled.kernels for j in k.donors.values())


def test_a_constant_in_another_memory_order_is_copied_once():
    """A transposed, reversed weight the program does not differentiate is a constant view
    (tracing computes it): the loop takes a C-ordered copy made when compiling, so it runs in
    C on every call, not as numpy lines."""
    C = np.random.default_rng(7).standard_normal((4, 6))
    x = np.random.default_rng(8).standard_normal((6, 4))
    tape = ad.trace(lambda x: np.tanh(x) * np.transpose(C)[::-1], x)
    compiled = ad.compile(tape, backend="fused")
    assert "np.transpose" not in compiled.source and len(compiled.kernels) == 1
    compiled.kernels[0].runs = "C"
    np.testing.assert_allclose(compiled(x), np.tanh(x) * C.T[::-1], rtol=1e-14)
    assert compiled.kernels[0]._twin is None


def test_a_view_of_a_constant_is_read_in_place():
    """``X.T @ dy`` for a constant X (data the program does not differentiate): the pullback
    transposes the constant, and the loop that sums the weight gradient's rows reads the
    constant at the transpose's strides (in C on every call, not as numpy lines)."""
    rng = np.random.default_rng(9)
    X, W = rng.standard_normal((32, 5)), rng.standard_normal((5, 6))
    tape = ad.optimize(ad.grad_tape(lambda W: np.sum(np.tanh(X @ W) ** 2), W))
    compiled = ad.compile(tape, backend="fused")
    assert "np.transpose" not in compiled.source
    assert any(type(e.inputs[0]) is not ad.tape.Var for k in compiled.kernels for e in k.views)
    for k in compiled.kernels:
        k.runs = "C"
    assert_fused_agrees(tape, compiled, (W,), 1e-12)
    assert all(k._twin is None for k in compiled.kernels)
