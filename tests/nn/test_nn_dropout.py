"""dropout: keyword arguments, explicit randomness (a key operand), the mask as a forward
residual, reproducibility by key, agreement of the gradient forms, and the refusals."""
import numpy as np
import pytest
import torch

import ad
import ad.nn as nn
from ad.gradtape import residuals

X = np.random.default_rng(0).standard_normal((4, 3, 5, 5))


def loss(x, key):
    return np.sum(nn.dropout(x, 0.4, rng=key) * np.cos(x))


def test_the_mask_is_a_forward_residual_drawn_from_the_key():
    gt = ad.grad_tape(loss, X, np.int64(7))
    masks = [e for e in gt.eqns[:gt.n_forward] if e.prim.name == "dropout_mask"]
    assert len(masks) == 1 and masks[0].prim.kind == "random"
    assert masks[0].inputs[0] is gt.inputs[1], "the key is the mask's operand"
    assert masks[0].outputs[0] in residuals(gt), "the backward reads the forward's mask"
    assert not any(e.prim.name == "dropout_mask" for e in gt.eqns[gt.n_forward:])


def test_same_key_same_mask_new_key_new_mask():
    gt = ad.grad_tape(loss, X, np.int64(7))
    first, again = gt(X, np.int64(7)), gt(X, np.int64(7))
    np.testing.assert_array_equal(first[1], again[1])
    other = gt(X, np.int64(8))[1]
    assert not np.array_equal(first[1], other)
    mask = nn.dropout(np.ones_like(X), 0.4, rng=7)          # eager code draws the same mask
    np.testing.assert_allclose(first[1], mask * (np.cos(X) - X * np.sin(X)), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("form", ["lifted", "compiled"])
def test_forms_agree_and_a_cached_gradient_draws_per_key(form):
    closure = ad.grad(loss, form="closure")
    other = ad.grad(loss, form=form)
    for key in (np.int64(1), np.int64(2), np.array([5, 6])):
        np.testing.assert_array_equal(other(X, key), closure(X, key))
    assert not np.array_equal(other(X, np.int64(1)), other(X, np.int64(2)))


def test_constant_keys_are_recorded_and_never_merged():
    def two(x):
        return np.sum(nn.dropout(x, 0.5, rng=3) + nn.dropout(x, 0.5, rng=3))
    gt = ad.passes.optimize(ad.grad_tape(two, X))
    assert sum(e.prim.name == "dropout_mask" for e in gt.eqns) == 2


def test_scaling_and_rate():
    x = np.ones((200, 500))
    y = nn.dropout(x, 0.3, rng=0)
    assert set(np.unique(y)) == {0.0, 1 / 0.7}
    assert abs(np.mean(y == 0) - 0.3) < 0.01
    t = torch.nn.functional.dropout(torch.ones(200, 500, dtype=torch.float64), 0.3)
    assert set(np.unique(t.numpy())) == {0.0, 1 / 0.7}    # PyTorch scales the same way


def test_dims_share_the_mask_along_the_other_axes():
    y = nn.dropout(np.ones((8, 16, 4, 4)), 0.5, rng=1, dims=(0, 1))
    per_channel = y.reshape(8, 16, -1)
    assert np.all(per_channel == per_channel[:, :, :1])
    assert 0 < np.mean(y == 0) < 1


def test_off_switches_and_extremes():
    assert nn.dropout(X, 0.5, rng=0, training=False) is X
    assert nn.dropout(X, 0.0, rng=0) is X
    assert not np.any(nn.dropout(X, 1.0, rng=0))
    assert nn.dropout(X.astype(np.float32), 0.5, rng=0).dtype == np.float32


def test_generator_in_eager_code_draws_fresh_masks():
    rng = np.random.default_rng(0)
    a, b = nn.dropout(X, 0.5, rng=rng), nn.dropout(X, 0.5, rng=rng)
    assert not np.array_equal(a, b)
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(nn.dropout(X, 0.5, rng=rng), a)


def test_generator_inside_a_trace_is_refused_with_the_fix():
    gen = np.random.default_rng(0)
    with pytest.raises(TypeError, match="key=np.int64"):
        ad.grad(lambda x: np.sum(nn.dropout(x, 0.5, rng=gen)))(X)


@pytest.mark.parametrize("kwargs,error", [({"p": 1.5, "rng": 0}, ValueError), ({"p": 0.5, "rng": -1}, ValueError),
                                          ({"p": 0.5, "rng": 0.5}, TypeError)])
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        nn.dropout(X, **kwargs)
