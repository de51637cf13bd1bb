"""``ad.vmap`` and ``ad.vmap_tape`` (ad/transforms/vectorize.py): in_axes and out_axes over
pytrees, shared arguments, nested vmap, the batched tape (printed, validated, optimised,
compiled, saved), the cache under guards, and the errors a wrong call gets."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg

import ad
from ad.batching import RaggedBatchError
from ad.scipy.linalg import expm
from tests.support import ROOT

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3))
W = RNG.standard_normal((3, 2))


def layer(x, W):
    return np.tanh(x @ W)


def test_a_shared_argument_and_the_loop():
    np.testing.assert_allclose(ad.vmap(layer, in_axes=(0, None))(X, W), np.stack([layer(x, W) for x in X]))


def test_in_axes_1_and_out_axes_1():
    got = ad.vmap(layer, in_axes=(1, None), out_axes=1)(X.T, W)
    np.testing.assert_allclose(got, np.stack([layer(x, W) for x in X], axis=1))


def test_pytrees_in_and_out():
    def f(p, x):
        return {"y": x @ p["W"] + p["b"], "n": np.sum(x * x)}
    p = {"W": W, "b": np.ones(2)}
    got = ad.vmap(f, in_axes=({"W": None, "b": None}, 0), out_axes={"y": 0, "n": 0})(p, X)
    np.testing.assert_allclose(got["y"], X @ W + 1)
    np.testing.assert_allclose(got["n"], np.sum(X * X, axis=1))


def test_an_output_shared_by_the_batch_is_broadcast_or_kept():
    f = lambda x, W: (x @ W, np.sum(W))     # noqa: E731
    y, s = ad.vmap(f, in_axes=(0, None))(X, W)
    np.testing.assert_allclose(s, np.full(4, np.sum(W)))
    y, s = ad.vmap(f, in_axes=(0, None), out_axes=(0, None))(X, W)
    assert np.ndim(s) == 0 and np.isclose(s, np.sum(W))


def test_nested_vmap_is_the_double_loop():
    Y = RNG.standard_normal((2, 4, 3))
    got = ad.vmap(ad.vmap(layer, in_axes=(0, None)), in_axes=(0, None))(Y, W)
    np.testing.assert_allclose(got, np.stack([[layer(y, W) for y in ys] for ys in Y]))
    got = ad.vmap(ad.vmap(layer, in_axes=(0, None)), in_axes=(1, None), out_axes=1)(Y, W)
    np.testing.assert_allclose(got, np.stack([[layer(y, W) for y in ys] for ys in Y]))


def test_the_batched_tape_prints_validates_optimises_compiles_and_saves(tmp_path):
    def f(x, W):
        h = layer(x, W)
        return np.sum(h * h) / np.max(np.abs(x))
    tape = ad.validate(ad.vmap_tape(f, X, W, in_axes=(0, None)))
    assert "%0:f64[4,3] %1:f64[3,2]" in str(tape) and "f64[4,2] = tanh" in str(tape)
    want = np.array([f(x, W) for x in X])
    np.testing.assert_allclose(tape(X, W), want)
    optimised = ad.validate(ad.optimize(tape))
    np.testing.assert_allclose(optimised(X, W), want)
    np.testing.assert_allclose(ad.compile(optimised)(X, W), want)
    np.testing.assert_allclose(ad.compile(optimised, backend="fused")(X, W), want)
    np.testing.assert_allclose(ad.vmap(f, in_axes=(0, None), form="compiled")(X, W), want)
    ad.save(optimised, tmp_path / "batched.json")
    np.testing.assert_allclose(ad.load(tmp_path / "batched.json")(X, W), want)
    assert [e.source for e in tape.eqns if e.prim.name == "tanh"][0].endswith("in layer")   # the user's line


def test_a_loop_fallback_is_one_equation_named_so_and_it_saves(tmp_path):
    A = RNG.standard_normal((3, 2, 2)) * 0.3
    tape = ad.vmap_tape(expm, A)
    assert ad.op_counts(tape) == {"fallback_loop": 1}
    assert "primitive='scipy.linalg.expm'" in str(tape)
    np.testing.assert_allclose(tape(A), np.stack([scipy.linalg.expm(a) for a in A]))
    ad.save(tape, tmp_path / "loop.json")
    np.testing.assert_allclose(ad.load(tmp_path / "loop.json")(A), tape(A))


def test_ragged_outputs_of_a_loop_refuse():
    with pytest.raises(RaggedBatchError, match="nonzero gave outputs of shapes"):
        ad.vmap(lambda x: np.nonzero(x)[0])(np.array([[1.0, 0.0], [1.0, 1.0]]))


def test_the_cache_keeps_one_tape_per_signature():
    f = ad.vmap(layer, in_axes=(0, None))
    f(X, W)
    f(X * 2, W)
    f(X[:2], W)
    info = f.cache_info()
    assert (info.traces, info.hits) == (2, 1)


@pytest.mark.parametrize("call,message", [
    (lambda: ad.vmap(layer, in_axes=(None, None))(X, W), "at least one batched argument"),
    (lambda: ad.vmap(layer, in_axes=(0, 0))(X, W), "batch sizes that differ"),
    (lambda: ad.vmap(layer, in_axes=(0, None))(X[:0], W), "an empty batch"),
    (lambda: ad.vmap(layer, in_axes=(0,))(X, W), "does not match the structure of the arguments"),
    (lambda: ad.vmap(layer, in_axes=(0, None), out_axes=(0, 0))(X, W), "where the result has one array"),
    (lambda: ad.vmap(layer, in_axes=(2, None))(X, W), "along axis 2, which it does not have"),
    (lambda: ad.vmap(lambda x, s: x * s, in_axes=(0, 0))(X, 2.0), "only arrays of rank 1 or more"),
    (lambda: ad.vmap(layer, in_axes=(0, None), out_axes=None)(X, W), "differs across the batch"),
    (lambda: ad.vmap(layer, form="closure"), "choose one of"),
])
def test_wrong_calls_say_what_to_do(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_negative_axes_and_python_scalars():
    got = ad.vmap(lambda x, s: x * s + 1.0, in_axes=(-1, None), out_axes=-1)(X, 2.0)
    np.testing.assert_allclose(got, X * 2.0 + 1.0)


def test_an_inner_vmap_closing_over_the_outer_example():
    xs, ys = np.arange(3.0), np.arange(4.0) + 1
    got = ad.vmap(lambda x: ad.vmap(lambda y: x * y + np.sin(x))(ys))(xs)
    np.testing.assert_allclose(got, xs[:, None] * ys + np.sin(xs)[:, None])
    g = ad.grad(lambda w: np.sum(ad.vmap(lambda x: ad.vmap(lambda y: w * x * y)(ys))(xs)))(2.0)
    assert g == np.sum(xs[:, None] * ys)


@pytest.mark.parametrize("f", [
    lambda x: x[0, :, [1, 2]],             # an int and an array apart: numpy puts the indexed axes first
    lambda x: x[[0, 1], :, [1, 1]],
    lambda x: x[..., [2, 0]][:, None],
    lambda x: x[1:, None, ::2],
    lambda x: np.where(x > 0, x, 0.0)[np.array([[0, 1], [1, 0]])],
], ids=["int-slice-array", "array-slice-array", "ellipsis-array", "basic", "2d-index"])
def test_indexing_equals_the_loop(f):
    xs = RNG.standard_normal((4, 2, 3, 4))
    tape = ad.vmap_tape(f, xs)
    np.testing.assert_allclose(tape(xs), np.stack([f(x) for x in xs]))
    assert "fallback_loop" not in ad.op_counts(tape)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_writes_into_an_array_equal_the_loop(in_axes):
    def write(x, v):
        y = x.copy()
        y[1, :2] = v
        y[:, 0] += v[0]
        return y
    xs, vs = RNG.standard_normal((4, 3, 4)), RNG.standard_normal((4, 2))
    args = [a if k is not None else a[0] for a, k in zip((xs, vs), in_axes)]
    examples = [[a[i] if k is not None else a for a, k in zip(args, in_axes)] for i in range(4)]
    got = ad.vmap(write, in_axes=in_axes)(*args)
    np.testing.assert_allclose(got, np.stack([write(*e) for e in examples]))


def test_a_saved_loop_loads_the_rule_module_it_names(tmp_path):
    """A fresh interpreter loads and runs a tape looping a scipy primitive: the loop loads ad.scipy's
    rules, which ``import ad`` leaves to the first use (ad.primitives.defer)."""
    A = RNG.standard_normal((3, 2, 2)) * 0.3
    ad.save(ad.vmap_tape(expm, A), tmp_path / "loop.json")
    np.save(tmp_path / "a.npy", A)
    code = (f"import numpy as np, ad; t = ad.load({str(tmp_path / 'loop.json')!r}); "
            f"print(t(np.load({str(tmp_path / 'a.npy')!r})).sum())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert np.isclose(float(out), np.stack([scipy.linalg.expm(a) for a in A]).sum())


def test_the_gradient_of_a_looped_primitive_without_a_rule_refuses_naming_it():
    """A user primitive with no rule and no batching rule runs in a ``fallback_loop``; its
    gradient has nothing to loop over, and says so, naming the primitive."""
    sort_rows = ad.primitive(lambda x: np.sort(x), name="sort_rows_without_a_rule")
    loss = lambda x: np.sum(ad.vmap(sort_rows)(x))            # noqa: E731
    assert np.allclose(loss(np.arange(6.0).reshape(2, 3)), 15.0)
    with pytest.raises(ad.UnsupportedFunctionError, match="sort_rows_without_a_rule has no rule.*@ad.rrule"):
        ad.grad(loss)(np.arange(6.0).reshape(2, 3))
