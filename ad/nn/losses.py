"""Losses ``loss(prediction, target)``, compositions of primitives with rules.

Targets are one-hot or probability vectors with the class axis last (integer class labels are
accepted too and one-hot encoded); per-example losses sum over the class axis and the result is
the mean over all other axes, so ``logitcrossentropy(logits, onehot)`` equals PyTorch's
``cross_entropy(logits, labels)``. Elementwise losses (mse, mae, huber, the binary ones) are the
mean over all elements. ``eps`` (default: the dtype's machine epsilon, as Flux) keeps ``log``
away from zero.
"""
from __future__ import annotations

import numpy as np

from .layout import one_hot
from .softmax_family import log_softmax, logsigmoid


def _targets(pred, y, label_smoothing=0.0):
    y = y if hasattr(y, "dtype") else np.asarray(y)
    if np.issubdtype(y.dtype, np.integer):
        y = one_hot(y, np.shape(pred)[-1], dtype=pred.dtype)
    elif y.dtype != pred.dtype:
        y = y.astype(pred.dtype)          # targets take the prediction's precision
    if np.shape(y) != np.shape(pred):
        raise ValueError(f"target shape {np.shape(y)} does not match the prediction's {np.shape(pred)} "
                         "(one-hot or probability targets, class axis last)")
    if label_smoothing:
        y = y * (1 - label_smoothing) + label_smoothing / np.shape(pred)[-1]
    return y


def _eps(pred, eps):
    return float(np.finfo(pred.dtype).eps) if eps is None else eps


def _class_mean(per_class):
    """Sum over the class axis, mean over the rest."""
    return np.mean(np.sum(per_class, axis=-1))


def mse(pred, y):
    """Mean squared error."""
    return np.mean(np.square(pred - y))


def mae(pred, y):
    """Mean absolute error."""
    return np.mean(np.abs(pred - y))


def huber(pred, y, delta=1.0):
    """Mean of ``0.5 e^2`` where ``|e| < delta``, else ``delta (|e| - 0.5 delta)``."""
    e = np.abs(pred - y)
    return np.mean(np.where(e < delta, 0.5 * e * e, delta * (e - 0.5 * delta)))


def crossentropy(pred, y, *, eps=None, label_smoothing=0.0):
    """``-sum(y * log(pred + eps))`` over classes, mean over the rest; ``pred`` are probabilities."""
    y = _targets(pred, y, label_smoothing)
    return -_class_mean(y * np.log(pred + _eps(pred, eps)))


def logitcrossentropy(logits, y, *, label_smoothing=0.0):
    """``crossentropy(softmax(logits), y)`` computed stably through ``log_softmax``. With
    ``label_smoothing=a`` the target is ``(1 - a) y + a / classes`` (PyTorch's definition)."""
    y = _targets(logits, y, label_smoothing)
    return -_class_mean(y * log_softmax(logits, axis=-1))


def nll(logp, y):
    """Negative log-likelihood of log-probabilities: ``-sum(y * logp)`` over classes, mean over
    the rest (``torch.nn.functional.nll_loss``)."""
    return -_class_mean(_targets(logp, y) * logp)


def binary_crossentropy(pred, y, *, eps=None):
    """Mean of ``-y log(pred + eps) - (1 - y) log(1 - pred + eps)``; ``pred`` are probabilities."""
    eps = _eps(pred, eps)
    return np.mean(-y * np.log(pred + eps) - (1 - y) * np.log(1 - pred + eps))


def logitbinarycrossentropy(logits, y):
    """``binary_crossentropy(sigmoid(logits), y)`` computed stably: mean of
    ``(1 - y) logits - logsigmoid(logits)``."""
    return np.mean((1 - y) * logits - logsigmoid(logits))


def kldivergence(pred, y, *, eps=None):
    """``sum(y * (log y - log(pred + eps)))`` over classes, mean over the rest (zero-probability
    targets contribute nothing); ``torch.nn.functional.kl_div(log pred, y, "batchmean")`` for 2-D."""
    eps = _eps(pred, eps)
    y = _targets(pred, y)
    positive = y > 0
    entropy = np.where(positive, y * np.log(np.where(positive, y, 1)), 0)
    return _class_mean(entropy - y * np.log(pred + eps))
