"""A small convolutional network on scikit-learn's 8x8 digits (shipped with scikit-learn, no
download), reused by the tests, the benchmark and the teaching notebooks.

>>> model = ad.examples.networks.digits_cnn()
>>> grads = ad.grad(model.loss)(model.params, model.x[:64], model.y[:64])
>>> params, losses = ad.examples.networks.train(model, steps=20)
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ..transforms.gradients import value_and_grad
from ..nn.activations import relu
from ..nn.convolution import conv
from ..nn.layout import flatten, one_hot
from ..nn.losses import logitcrossentropy
from ..nn.pool import max_pool


class DigitsCNN(NamedTuple):
    params: dict           # w1, b1, w2, b2, w3, b3
    loss: Callable         # loss(params, x, y) -> mean cross-entropy
    predict: Callable      # predict(params, x) -> logits (N, 10)
    x: np.ndarray          # images (N, 1, 8, 8) in [0, 1]
    y: np.ndarray          # one-hot labels (N, 10)


def load_digits_data(dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """The 1797 digits as ``(N, 1, 8, 8)`` images in [0, 1] and one-hot labels ``(N, 10)``."""
    from sklearn.datasets import load_digits   # optional: only this example needs scikit-learn
    digits = load_digits()
    x = (digits.images[:, None] / 16.0).astype(dtype)
    return x, one_hot(digits.target, 10, dtype=dtype)


def init_params(rng: np.random.Generator, channels=(8, 16), dtype=np.float64) -> dict:
    """He-initialised weights for ``conv3x3(1->c1) relu pool2 conv3x3(c1->c2) relu pool2 dense(4*c2->10)``."""
    c1, c2 = channels

    def normal(shape, fan_in, gain=2.0):
        return (rng.standard_normal(shape) * np.sqrt(gain / fan_in)).astype(dtype)
    return {"w1": normal((c1, 1, 3, 3), 9), "b1": np.zeros(c1, dtype),
            "w2": normal((c2, c1, 3, 3), 9 * c1), "b2": np.zeros(c2, dtype),
            "w3": normal((4 * c2, 10), 4 * c2, gain=1.0), "b3": np.zeros(10, dtype)}


def predict(params, x):
    """Logits of the CNN for images ``x: (N, 1, 8, 8)``."""
    h = relu(conv(x, params["w1"], padding=1) + np.reshape(params["b1"], (-1, 1, 1)))
    h = max_pool(h, 2)                                                    # (N, c1, 4, 4)
    h = relu(conv(h, params["w2"], padding=1) + np.reshape(params["b2"], (-1, 1, 1)))
    h = max_pool(h, 2)                                                    # (N, c2, 2, 2)
    return flatten(h) @ params["w3"] + params["b3"]


def loss(params, x, y):
    """Mean cross-entropy of the CNN's logits against one-hot labels."""
    return logitcrossentropy(predict(params, x), y)


def digits_cnn(seed: int = 0, channels=(8, 16), dtype=np.float64) -> DigitsCNN:
    """Fresh parameters, the loss and the data."""
    x, y = load_digits_data(dtype)
    return DigitsCNN(init_params(np.random.default_rng(seed), channels, dtype), loss, predict, x, y)


def train(model: DigitsCNN, steps: int = 20, lr: float = 0.1, batch: int = 64, seed: int = 0,
          form: str = "compiled"):
    """Plain SGD with ``ad.grad`` on random minibatches; returns (params, per-step losses)."""
    step = value_and_grad(model.loss, form=form)
    rng = np.random.default_rng(seed)
    params, losses = dict(model.params), []
    for _ in range(steps):
        idx = rng.choice(len(model.x), size=batch, replace=False)
        value, grads = step(params, model.x[idx], model.y[idx])
        params = {k: params[k] - lr * grads[k] for k in params}
        losses.append(float(value))
    return params, losses
