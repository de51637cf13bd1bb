"""ad.nn beyond the spec table: extreme values (stability), erf's accuracy, max-pool ties as
PyTorch breaks them, one_hot, batch-norm running statistics, second derivatives through the NN
primitives, and errors that name the problem."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ad
import ad.nn as nn
from ad.primitives import ULPS
from ad.checks.fd import dot_product_test


def test_erf_to_a_few_ulps():
    x = np.concatenate([np.linspace(-7, 7, 4001), np.geomspace(1e-300, 30, 400), [0.0, 2.5, -2.5]])
    ref = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(nn.erf(x), ref, rtol=2e-15, atol=0)
    np.testing.assert_array_equal(nn.erf(np.array([np.inf, -np.inf])), [1.0, -1.0])
    assert np.isnan(nn.erf(np.array([np.nan])))[0]
    assert nn.erf(np.float32([0.5])).dtype == np.float32


def test_extreme_inputs_stay_finite_and_exact():
    big = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_allclose(nn.sigmoid(big), torch.sigmoid(torch.tensor(big)).numpy(), rtol=1e-15)
        np.testing.assert_allclose(nn.logsigmoid(big), F.logsigmoid(torch.tensor(big)).numpy(), rtol=1e-15)
        np.testing.assert_allclose(nn.softplus(big), np.logaddexp(0, big), rtol=1e-15)
        g = ad.grad(lambda x: np.sum(nn.sigmoid(x) + nn.logsigmoid(x) + nn.softplus(x)))(big)
    assert np.all(np.isfinite(g))
    assert nn.relu(np.array([-np.inf]))[0] == 0 and np.isnan(nn.relu(np.array([np.nan]))[0])
    assert nn.elu(np.array([1000.0]))[0] == 1000.0


def test_softmax_family_with_infinities():
    x = np.array([[1.0, -np.inf, 2.0], [-np.inf, -np.inf, -np.inf], [1e4, 1e4 + 1, -1e4]])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_allclose(nn.logsumexp(x), torch.logsumexp(torch.tensor(x), -1).numpy(),
                                   rtol=ULPS * np.finfo(float).eps)   # torch's exp and log: docs/numerics.md
    p = nn.softmax(x[[0, 2]])
    np.testing.assert_allclose(p, F.softmax(torch.tensor(x[[0, 2]]), -1).numpy(), rtol=1e-15)
    g = ad.grad(lambda z: np.sum(nn.softmax(z) * np.arange(3.0)))(x[[0, 2]])
    assert np.all(np.isfinite(g)) and g[0, 1] == 0
    np.testing.assert_allclose(nn.log_softmax(x[2:]), F.log_softmax(torch.tensor(x[2:]), -1).numpy())


@pytest.mark.parametrize("f", [nn.softmax, nn.log_softmax, lambda z: nn.logsumexp(z, keepdims=True)],
                         ids=["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_fully_masked_rows_differentiate_to_zero(f):
    """A fully masked row (every entry -inf, as attention makes it) whose outputs the caller
    replaces by 0, as it does the other non-finite ones: the gradient is finite and equals central
    differences (0 on that row); on the other rows it is torch's."""
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((4, 5))
    mask = np.ones((4, 5), bool)
    mask[1] = False                 # fully masked
    mask[2, :3] = False             # partly masked
    bias = np.where(mask, 0.0, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        keep = np.isfinite(f(scores + bias))
    w = rng.standard_normal(keep.shape)

    def loss(s):
        return np.sum(np.where(keep, f(s + bias), 0) * w)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = ad.grad(loss)(scores)
        fd = np.zeros_like(scores)
        for i in np.ndindex(scores.shape):
            e = np.zeros_like(scores)
            e[i] = 1e-6
            fd[i] = (loss(scores + e) - loss(scores - e)) / 2e-6
    assert np.all(np.isfinite(g)) and np.all(g[1] == 0)
    np.testing.assert_allclose(g, fd, atol=1e-8)
    live = [0, 2, 3]
    ts = torch.tensor(scores[live], requires_grad=True)
    torch_f = {nn.softmax: F.softmax, nn.log_softmax: F.log_softmax}.get(
        f, lambda z, dim: torch.logsumexp(z, dim, keepdim=True))
    y = torch_f(ts + torch.tensor(bias[live]), -1)
    torch.where(torch.tensor(keep[live]), y, 0).mul(torch.tensor(w[live])).sum().backward()
    np.testing.assert_allclose(g[live], ts.grad.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("window,kw", [(2, {}), (3, {"stride": 1, "padding": 1})])
def test_max_pool_ties_route_to_the_first_maximum_like_pytorch(window, kw):
    rng = np.random.default_rng(0)
    x = np.maximum(rng.integers(-2, 3, (2, 3, 6, 6)), 0).astype(float)     # many ties
    tx = torch.tensor(x, requires_grad=True)
    ty = F.max_pool2d(tx, window, **kw)
    w = rng.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(w)).sum().backward()
    got = ad.grad(lambda x: np.sum(nn.max_pool(x, window, **kw) * w))(x)
    np.testing.assert_array_equal(got != 0, tx.grad.numpy() != 0)     # the same elements chosen
    np.testing.assert_allclose(got, tx.grad.numpy(), rtol=1e-14, atol=1e-15)


def test_one_hot_and_integer_labels():
    labels = np.array([[1, 0], [3, 3]])
    y = nn.one_hot(labels, 4, dtype=np.float32)
    assert y.dtype == np.float32 and y.shape == (2, 2, 4)
    np.testing.assert_array_equal(np.argmax(y, -1), labels)
    logits = np.random.default_rng(0).standard_normal((2, 2, 4))
    ad_value = ad.value_and_grad(lambda z, l: nn.logitcrossentropy(z, l))(logits, labels)[0]
    np.testing.assert_allclose(ad_value, nn.logitcrossentropy(logits, nn.one_hot(labels, 4)), rtol=1e-15)


def test_batch_norm_update_matches_pytorch_running_statistics():
    rng = np.random.default_rng(0)
    x, mean, var = rng.standard_normal((5, 3, 4, 2)), rng.standard_normal(3), rng.uniform(0.5, 2, 3)
    tm, tv = torch.tensor(mean), torch.tensor(var)
    F.batch_norm(torch.tensor(x), tm, tv, training=True, momentum=0.2)
    new_mean, new_var = nn.batch_norm_update(mean, var, x, momentum=0.2)
    np.testing.assert_allclose(new_mean, tm.numpy(), rtol=1e-14)
    np.testing.assert_allclose(new_var, tv.numpy(), rtol=1e-14)


def test_second_derivatives_through_the_nn_primitives():
    """A gradient tape of a gradient: conv, mean_pool, gelu (erf), sigmoid and softmax rules
    lift their own pullbacks."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))

    def loss(x, w):
        h = nn.mean_pool(nn.gelu(nn.conv(x, w, padding=1)), 2)
        return np.sum(nn.softmax(nn.flatten(h)) ** 2) + np.sum(nn.sigmoid(h) * h)

    def grad_norm(x, w):
        gx, gw = ad.grad(loss, (0, 1))(x, w)
        return np.sum(gx * np.cos(x)) + np.sum(gw * gw)

    assert ad.grad_tape(grad_norm, x, w, argnums=(0, 1)).fallbacks == ()
    _, pullback = ad.vjp(grad_norm, x, w)
    for lhs, rhs, est in dot_product_test(grad_norm, pullback, [x, w], rng=rng):
        assert est.converged and abs(lhs - rhs) <= 1e-6 * max(1.0, abs(lhs)), (lhs, rhs)


X4 = np.zeros((2, 4, 6, 6))


@pytest.mark.parametrize("call,match", [
    (lambda: nn.conv(X4, np.zeros((3, 3, 3, 3))), "channels"),
    (lambda: nn.conv(X4, np.zeros((3, 4, 3))), "same number of spatial dims"),
    (lambda: nn.conv(X4, np.zeros((3, 4, 3, 3)), padding="full"), "'same' or 'valid'"),
    (lambda: nn.conv(X4, np.zeros((3, 4, 9, 3))), "does not fit"),
    (lambda: nn.conv(X4, np.zeros((3, 4, 3, 3)), stride=(1, 1, 1)), "stride"),
    (lambda: nn.conv_transpose(X4, np.zeros((4, 2, 3, 3)), stride=2, output_padding=2), "output_padding"),
    (lambda: nn.max_pool(X4, 7), "does not fit"),
    (lambda: nn.max_pool(np.zeros(4), 2), "(N, C, *spatial)"),
    (lambda: nn.gelu(X4, approximate="erf"), "'none' or 'tanh'"),
    (lambda: nn.pad(X4, 1, mode="mirror"), "choose one of"),
    (lambda: nn.upsample_bilinear(X4, 2, size=3), "exactly one"),
    (lambda: nn.pixel_shuffle(X4, 3), "divisible"),
    (lambda: nn.group_norm(X4, 3), "divisible"),
    (lambda: nn.batch_norm(X4, training=False), "running_mean"),
    (lambda: nn.logitcrossentropy(np.zeros((2, 3)), np.zeros((2, 4))), "class axis last"),
])
def test_errors_name_the_problem(call, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        call()
