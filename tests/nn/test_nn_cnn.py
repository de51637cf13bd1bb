"""The digits CNN of ad.examples.networks: it trains (the loss decreases), its gradient tape lifts
every rule, and its gradient agrees with PyTorch's, max-pool ties included."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ad
from ad.examples import networks as examples
from ad.nn import pool
from ad.nn.windows import batch_last


@pytest.fixture(scope="module")
def model():
    return examples.digits_cnn(seed=0)


def test_the_data(model):
    assert model.x.shape == (1797, 1, 8, 8) and model.y.shape == (1797, 10)
    assert 0 <= model.x.min() and model.x.max() <= 1
    np.testing.assert_array_equal(model.y.sum(axis=1), 1)


def test_training_decreases_the_loss(model):
    params, losses = examples.train(model, steps=40, lr=0.1, batch=64)
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5]), losses
    full_before = model.loss(model.params, model.x, model.y)
    full_after = model.loss(params, model.x, model.y)
    assert full_after < 0.7 * full_before


def test_gradient_tape_lifts_and_forms_agree(model):
    x, y = model.x[:32], model.y[:32]
    gt = ad.grad_tape(model.loss, model.params, x, y)
    assert gt.fallbacks == ()
    ref = ad.grad(model.loss, form="closure")(model.params, x, y)
    for form in ("lifted", "compiled"):
        got = ad.grad(model.loss, form=form)(model.params, x, y)
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-12, atol=1e-14, err_msg=f"{form} {k}")


def test_gradient_matches_pytorch_on_real_digits(model):
    """The digits have flat regions, so max-pool windows tie; both route to the first maximum."""
    x, y = model.x[:64], model.y[:64]
    value, grads = ad.value_and_grad(model.loss)(model.params, x, y)
    p = {k: torch.tensor(v, requires_grad=True) for k, v in model.params.items()}
    h = F.max_pool2d(F.relu(F.conv2d(torch.tensor(x), p["w1"], p["b1"], padding=1)), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["w2"], p["b2"], padding=1)), 2)
    loss = F.cross_entropy(h.flatten(1) @ p["w3"] + p["b3"], torch.tensor(np.argmax(y, axis=1)))
    loss.backward()
    np.testing.assert_allclose(value, loss.item(), rtol=1e-12)
    for k in grads:
        np.testing.assert_allclose(grads[k], p[k].grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)


def test_compiled_gradient_frees_large_temporaries(model):
    """Generated code deletes big intermediates right after their last use (else every new array
    lands in fresh memory: 2.7x slower at batch 512); the im2col columns live until the weight
    gradient has read them."""
    gt = ad.passes.optimize(ad.grad_tape(model.loss, model.params, model.x[:256], model.y[:256]))
    lines = ad.compiler.codegen.compile_tape(gt).source.splitlines()
    columns = next(re.match(r"\s*(v\d+) = im2col\(", line).group(1) for line in lines if "= im2col(" in line)
    uses = [i for i, line in enumerate(lines) if re.search(rf"\b{columns}\b", line)]
    assert lines[uses[-1]].strip().startswith("del ")
    assert not lines[uses[-2]].strip().startswith("del ") and uses[-1] == uses[-2] + 1
    assert re.search(rf"\b{columns}\b", lines[uses[-2]].split(" = ", 1)[1])    # read there, by a matmul


def test_the_network_keeps_one_layout_end_to_end(model, monkeypatch):
    """conv, bias, relu and pooling hand each other batch-last memory, so the layout conversions
    inside the pooling primitives are views in the compiled gradient: no activation is copied
    (ad/nn/windows.py, "Layout"). Only cotangents arriving batch-first (from the dense layer, from
    col2im's cropped padding) are made contiguous, which is what the hand-written gradient
    does too."""
    copied = []

    def spy(x, padding=None, fill=0.0):
        out = batch_last(x, padding, fill)
        if not np.shares_memory(out, x):
            copied.append(np.shape(x))
        return out

    monkeypatch.setattr(pool, "batch_last", spy)
    x, y = model.x[:64], model.y[:64]
    grads = ad.grad(model.loss, form="compiled")(model.params, x, y)
    assert copied
    activations = {(64, 8, 8, 8), (64, 16, 4, 4)}            # the two conv layers' outputs
    assert activations.isdisjoint(copied), copied
    assert set(copied) <= {(64, 8, 4, 4), (64, 16, 2, 2)}   # pooled-size cotangents only
    ref = ad.grad(model.loss, form="closure")(model.params, x, y)
    for k in ref:
        np.testing.assert_allclose(grads[k], ref[k], rtol=1e-12, atol=1e-14, err_msg=k)
