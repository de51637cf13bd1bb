"""softmax, log_softmax and logsumexp: primitives with dedicated rules. Written as compositions
they differentiate through the ``max`` that keeps them stable (a tie split, a sum and a divide
whose contributions cancel exactly: 23-32 equations against 7-12) and an all ``-inf`` slice
gives nan. The rules use ``d softmax = y * (dy - <dy, y>)`` on the forward output, and the
log-domain ones reuse the forward's ``exp`` (one ``exp`` per call, forward and backward
together). An all ``-inf`` slice (a fully masked row) has a nan (softmax, log_softmax) or ``-inf``
(logsumexp) output and a finite gradient, so a caller that replaces the row (attention's fully
masked rows are 0) differentiates to 0 there, as finite differences do: softmax's rule sends 0 to
every ``-inf`` input (a finite step leaves it at ``-inf``; its ``y`` is nan on such a row, a
``where`` that costs its pullback a third more), the log-domain rules divide by a total of 1 there
(a row-sized ``where``). logsigmoid is a composition (``-logaddexp(0, -x)`` is already stable)."""
from __future__ import annotations

import numpy as np

from ..lib.reductions import expand_to, normalize_axis
from ..primitives import Primitive, binds
from ..batching.derived import shifted_axes
from ..rules import batch_rule, rrule
from ..samples import IMAGES, MATRIX, Sample


def _shifted_exp(x, axis, xp=np):
    """``(shift, x - shift, exp(x - shift), its sum)`` with the stabilising shift ``max(x)``,
    written with primitives: in a rule body they are recorded once, in the forward pass, and
    the pullback reuses ``exp`` instead of computing it again. Over the array namespace ``xp``:
    the impls below are compiled array code's too (``array_api_impl``)."""
    m = xp.max(x, axis=axis, keepdims=True)
    shift = xp.where(xp.isfinite(m), m, 0)
    s = x - shift
    e = xp.exp(s)
    return shift, s, e, xp.sum(e, axis=axis, keepdims=True)


def _nonzero(total):
    """The sum of exps with 1 for an all ``-inf`` slice's 0: ``e / total`` is then 0, not nan."""
    return np.where(total == 0, 1, total)


def _softmax(x, axis, xp=np):
    _, _, e, total = _shifted_exp(x, axis, xp)
    return e / total


def _log_softmax(x, axis, xp=np):
    _, s, _, total = _shifted_exp(x, axis, xp)
    return s - xp.log(total)


def _logsumexp(x, axis, keepdims, xp=np):
    shift, _, _, total = _shifted_exp(x, axis, xp)
    with np.errstate(divide="ignore"):          # an all -inf slice: log(0) = -inf is the answer
        out = xp.log(total) + shift
    return out if keepdims else xp.squeeze(out, axis=axis)


softmax_p = Primitive("softmax", _softmax, params=("axis",), doc="exp(x) / sum(exp(x), axis)",
                     array_api_impl=_softmax, samples=(Sample((IMAGES,), {"axis": (1, 3)}, MATRIX),))
log_softmax_p = Primitive("log_softmax", _log_softmax, params=("axis",), doc="x - logsumexp(x, axis)",
                          array_api_impl=_log_softmax, samples=(Sample((IMAGES,), {"axis": (3,)}, MATRIX),))
logsumexp_p = Primitive("logsumexp", _logsumexp, params=("axis", "keepdims"), doc="log(sum(exp(x), axis))",
                        array_api_impl=_logsumexp,
                        samples=(Sample((IMAGES,), {"axis": (2,), "keepdims": False}, MATRIX),))


for _prim in (softmax_p, log_softmax_p, logsumexp_p):
    batch_rule(_prim)(shifted_axes(_prim, "axis"))


@rrule(softmax_p)
def _softmax_rule(x, axis):
    y = softmax_p.bind(x, axis=axis)
    return y, lambda dy: (np.where(x == -np.inf, 0, y * (dy - np.sum(dy * y, axis=axis, keepdims=True))),)


@rrule(log_softmax_p)
def _log_softmax_rule(x, axis):
    _, s, e, total = _shifted_exp(x, axis)
    y = s - np.log(total)
    p = e / _nonzero(total)
    return y, lambda dy: (dy - p * np.sum(dy, axis=axis, keepdims=True),)


@rrule(logsumexp_p)
def _logsumexp_rule(x, axis, keepdims):
    shift, _, e, total = _shifted_exp(x, axis)
    y = np.log(total) + shift
    y = y if keepdims else np.squeeze(y, axis=axis)
    p = e / _nonzero(total)
    return y, lambda dy: (expand_to(dy, x.shape, axis, keepdims) * p,)


@binds(softmax_p)
def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int or a tuple), stable for large inputs."""
    return softmax_p.bind(x, axis=normalize_axis(axis, np.ndim(x)))


@binds(log_softmax_p)
def log_softmax(x, axis=-1):
    """``x - logsumexp(x, axis, keepdims=True)``, stable."""
    return log_softmax_p.bind(x, axis=normalize_axis(axis, np.ndim(x)))


@binds(logsumexp_p)
def logsumexp(x, axis=-1, keepdims=False):
    """``log(sum(exp(x), axis))`` without overflow; ``axis=None`` reduces everything."""
    axis = tuple(range(np.ndim(x))) if axis is None else normalize_axis(axis, np.ndim(x))
    return logsumexp_p.bind(x, axis=axis, keepdims=bool(keepdims))


def logsigmoid(x):
    """``log(sigmoid(x)) = -log(1 + exp(-x))``, stable for large ``|x|``."""
    return -np.logaddexp(0, -x)
