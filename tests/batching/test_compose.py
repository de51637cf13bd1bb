"""``ad.vmap`` composed with the other transforms, both ways: per-example gradients
(``vmap(grad)``) of the MLP example equal the loop over examples; ``grad`` and ``jvp`` of a
function calling ``vmap``; ``vmap`` of ``jacrev``, ``jacfwd`` and ``hessian``; a primitive
without a batching rule differentiated through its loop; closures over an outer trace."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import ad
from ad.examples import mlp_example, mlp_loss
from ad.examples.networks import digits_cnn
from ad.scipy.linalg import expm

RNG = np.random.default_rng(1)
X = RNG.standard_normal((5, 3))
W = RNG.standard_normal((3, 2))


def loss(x, W):
    return np.sum(np.tanh(x @ W) ** 2)


@pytest.mark.parametrize("form", ["lifted", "compiled"])
def test_per_example_gradients_of_the_mlp_equal_the_loop(form):
    params, x, y = mlp_example(batch=6, sizes=(4, 8, 3))
    per_example = ad.vmap(ad.grad(mlp_loss), in_axes=(None, 0, 0), form=form)(params, x[:, None], y[:, None])
    for i in range(len(x)):
        g = ad.grad(mlp_loss)(params, x[i:i + 1], y[i:i + 1])
        for k in params:
            np.testing.assert_allclose(per_example[k][i], g[k], rtol=1e-12, atol=1e-14)
    # their mean is the gradient of the mean loss: the batch's gradient
    batch = ad.grad(mlp_loss)(params, x, y)
    for k in params:
        np.testing.assert_allclose(per_example[k].mean(axis=0), batch[k], rtol=1e-12, atol=1e-14)


def test_per_example_gradients_of_the_cnn_equal_the_loop():
    """Convolutions and pooling fold the batch into their images' N: no loop in the tape."""
    model = digits_cnn()
    x, y = model.x[:4, None], model.y[:4, None]          # each example a batch of one image
    per_example = ad.vmap(ad.grad(model.loss), in_axes=(None, 0, 0))(model.params, x, y)
    for i in range(len(x)):
        g = ad.grad(model.loss)(model.params, x[i], y[i])
        for k in g:
            np.testing.assert_allclose(per_example[k][i], g[k], rtol=1e-10, atol=1e-13)
    tape = ad.vmap_tape(ad.grad(model.loss), model.params, x, y, in_axes=(None, 0, 0))
    assert "fallback_loop" not in ad.op_counts(tape)


def test_the_per_example_gradient_tape_has_no_loop():
    params, x, y = mlp_example(batch=6, sizes=(4, 8, 3))
    tape = ad.optimize(ad.vmap_tape(ad.grad(mlp_loss), params, x[:, None], y[:, None], in_axes=(None, 0, 0)))
    assert "fallback_loop" not in ad.op_counts(tape)
    assert "f64[6,4,8]" in str(tape)           # the per-example gradients of W0


def test_grad_of_a_function_calling_vmap():
    g = ad.grad(lambda W: np.sum(ad.vmap(loss, in_axes=(0, None))(X, W)))(W)
    np.testing.assert_allclose(g, sum(ad.grad(loss, argnums=1)(x, W) for x in X))


def test_grad_of_vmap_closing_over_the_differentiated_value():
    g = ad.grad(lambda W: np.sum(ad.vmap(lambda x: loss(x, W))(X)))(W)
    np.testing.assert_allclose(g, sum(ad.grad(loss, argnums=1)(x, W) for x in X))


def test_jvp_of_vmap():
    batched = ad.vmap(loss, in_axes=(0, None))
    t = np.ones_like(W)
    _, ty = ad.jvp(lambda W: batched(X, W), (W,), (t,))
    np.testing.assert_allclose(ty, [ad.jvp(lambda W: loss(x, W), (W,), (t,))[1] for x in X])


def _wide(x):
    return np.sin(x @ W) * np.sum(x)


def _scalar(x):
    return np.sum(np.sin(x @ W)) * np.sum(x)


@pytest.mark.parametrize("jac,f", [(ad.jacrev, _wide), (ad.jacfwd, _wide), (ad.hessian, _scalar)])
def test_vmap_of_jacobians(jac, f):
    got = ad.vmap(jac(f))(X)
    np.testing.assert_allclose(got, np.stack([jac(f)(x) for x in X]), rtol=1e-12, atol=1e-14)


def test_a_primitive_without_a_batching_rule_differentiates_through_its_loop():
    A = RNG.standard_normal((3, 2, 2)) * 0.3
    g = ad.grad(lambda A: np.sum(ad.vmap(expm)(A) ** 2))(A)
    want = np.stack([ad.grad(lambda a: np.sum(expm(a) ** 2))(a) for a in A])
    np.testing.assert_allclose(g, want, rtol=1e-10)
    per_example = ad.vmap(ad.grad(lambda a: np.sum(expm(a) ** 2)))(A)
    np.testing.assert_allclose(per_example, want, rtol=1e-10)


def test_forward_mode_through_a_loop():
    A = RNG.standard_normal((3, 2, 2)) * 0.3
    T = RNG.standard_normal((3, 2, 2))
    _, t = ad.jvp(ad.vmap(expm), (A,), (T,))
    np.testing.assert_allclose(t, np.stack([ad.jvp(expm, (a,), (u,))[1] for a, u in zip(A, T)]), rtol=1e-10)


def test_a_loop_over_a_shared_operand_sums_its_cotangent():
    A = RNG.standard_normal((2, 2)) * 0.3
    s = RNG.standard_normal(3)
    g = ad.grad(lambda A: np.sum(ad.vmap(lambda s, A: expm(A * s), in_axes=(0, None))(s, A)))(A)
    want = sum(ad.grad(lambda A: np.sum(expm(A * k)))(A) for k in s)
    np.testing.assert_allclose(g, want, rtol=1e-10)
    np.testing.assert_allclose(ad.vmap(lambda s: expm(A * s))(s), np.stack([scipy.linalg.expm(A * k) for k in s]))


def test_vmap_of_vmap_of_grad():
    Y = RNG.standard_normal((2, 5, 3))
    got = ad.vmap(ad.vmap(ad.grad(loss), in_axes=(0, None)), in_axes=(0, None))(Y, W)
    np.testing.assert_allclose(got, np.stack([[ad.grad(loss)(y, W) for y in ys] for ys in Y]))


def test_hessian_of_vmap():
    h = ad.hessian(lambda w: np.sum(ad.vmap(lambda x: np.tanh(x @ w))(X)))(W[:, 0])
    want = sum(ad.hessian(lambda w: np.sum(np.tanh(x @ w)))(W[:, 0]) for x in X)
    np.testing.assert_allclose(h, want, rtol=1e-10, atol=1e-12)
