"""Losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (class axis 1, integer targets,
optional class weights and an ignored target value)."""
from __future__ import annotations

import numpy as np

from ... import nn
from .nodes import op

_REDUCTIONS = ("none", "sum", "mean")


def _nll(n, logp, target, weight):
    """``-logp`` at each target class, weighted; an ignored target counts for nothing, in the
    sum and in the mean's weight."""
    reduction, ignore = n.attr("reduction", "mean"), n.attr("ignore_index", None)
    if reduction not in _REDUCTIONS:
        raise n.error(f"reduction={reduction!r} is not supported ({', '.join(_REDUCTIONS)})")
    ignored = None if ignore is None else target == ignore
    target = target if ignored is None else np.where(ignored, 0, target)
    loss = -np.take_along_axis(logp, np.expand_dims(target, 1), axis=1)[:, 0]
    w = None if weight is None else np.take(weight, target)
    if ignored is not None:
        w = np.where(ignored, np.zeros((), np.result_type(logp)), np.ones((), np.result_type(logp)) if w is None else w)
    if w is not None:
        loss = loss * w
    if reduction == "none":
        return loss
    total = np.sum(loss)
    if reduction == "sum":
        return total
    return total / np.sum(w) if w is not None else total / np.asarray(np.size(loss), np.result_type(logp))


@op("NegativeLogLikelihoodLoss", since=12)
def _negative_log_likelihood(n, logp, target, weight=None):
    return _nll(n, logp, target, weight)


@op("SoftmaxCrossEntropyLoss", since=12)
def _softmax_cross_entropy(n, scores, labels, weight=None):
    """The NLL of ``log_softmax`` over the classes (axis 1); the log-probabilities are the second
    output."""
    logp = nn.log_softmax(scores, axis=1)
    return _nll(n, logp, labels, weight), logp
