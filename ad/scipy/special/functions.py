"""scipy.special's functions that are not ufuncs, with scipy's signatures.

``polygamma``, ``multigammaln``, ``logsumexp``, ``softmax``, ``log_softmax``, ``factorial``,
``comb``, ``perm`` are Python functions in scipy that convert their arguments to plain arrays
(``np.asarray``), which a traced value cannot pass; here they have scipy's signatures (``from
ad.scipy.special import logsumexp`` is the one change a user makes), as compositions of the
primitives (polygamma is one).
"""
from __future__ import annotations

import numpy as np

from ...lib.reductions import normalize_axis
from ...nn.softmax_family import (log_softmax as nn_log_softmax, logsumexp as nn_logsumexp,
                                  softmax as nn_softmax)
from ...primitives import Primitive
from ...samples import In, Sample, literal
from ...trace_state import Traced
from .declarations import POS, Refused, elementwise_rule, sp


# -- polygamma: a primitive of its own (scipy's is a Python function) ---------------------------

def _polygamma(n, x):
    """scipy's polygamma in the float dtype of ``x`` (scipy computes float32 in float64)."""
    return np.asarray(sp.polygamma(n, x), dtype=np.result_type(np.asarray(x), 1.0))


polygamma_p = Primitive(
    "scipy.special.polygamma", _polygamma, function=sp.polygamma, elementwise=True,
    doc="The n-th derivative of the digamma function (n a non-negative integer).",
    samples=(Sample((In(kind="int", lo=0, hi=4), POS)), Sample((literal(1), POS))))
elementwise_rule(polygamma_p, Refused("scipy.special.polygamma(n, x) in its order n (an integer)"),
                 lambda n, x, y: polygamma(n + 1, x))


def polygamma(n, x):
    """``scipy.special.polygamma``: the n-th derivative of digamma at x."""
    return polygamma_p.bind(n, x)


# -- compositions of the ufuncs' primitives ------------------------------------------------------

def multigammaln(a, d):
    """``scipy.special.multigammaln``: log of the multivariate gamma function of dimension d,
    ``d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2)`` (a composition)."""
    if not isinstance(a, Traced):
        a = np.asarray(a)
    d = np.asarray(d)[()]
    if not np.isscalar(d) or np.floor(d) != d:
        raise ValueError("d should be a positive integer (dimension)")
    if np.any(a <= 0.5 * (d - 1)):
        raise ValueError(f"condition a > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    res = (d * (d - 1) * 0.25) * np.log(np.pi)
    return res + sum(sp.gammaln(a - j / 2) for j in range(int(d)))


def _masked(cond, fn, *args):
    """``fn(*args)`` where ``cond``, else 0; the arguments are replaced by 1 where not ``cond``,
    so that no pole there turns the zero cotangent of the unselected branch into nan."""
    safe = [np.where(cond, x, 1.0) for x in args]
    return np.where(cond, fn(*safe), 0.0)


def factorial(n, exact=False, extend="zero"):
    """``scipy.special.factorial``: ``gamma(n + 1)``, 0 for negative n (``extend="zero"``).
    ``exact=True`` counts integers (no gradient): scipy's own."""
    if exact or extend != "zero":
        return sp.factorial(n, exact=exact, extend=extend)
    out = _masked(n >= 0, lambda m: sp.gamma(m + 1), n)
    return out.astype(np.float64) if np.ndim(n) else out     # as scipy: arrays in float64


def comb(N, k, *, exact=False, repetition=False):
    """``scipy.special.comb``: ``binom(N, k)`` for ``0 <= k <= N``, else 0 (with repetition:
    ``comb(N + k - 1, k)``, 1 for ``k == 0``). ``exact=True``: scipy's own (integers)."""
    if exact:
        return sp.comb(N, k, exact=True, repetition=repetition)
    if repetition:
        return np.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
    return _masked((k <= N) & (N >= 0) & (k >= 0), sp.binom, N, k)


def perm(N, k, exact=False):
    """``scipy.special.perm``: ``N! / (N - k)!`` = ``poch(N - k + 1, k)`` for ``0 <= k <= N``,
    else 0. ``exact=True``: scipy's own (integers)."""
    if exact:
        return sp.perm(N, k, exact=True)
    return _masked((k <= N) & (N >= 0) & (k >= 0), lambda n, m: sp.poch(n - m + 1, m), N, k)


def _axes(x, axis):
    return tuple(range(np.ndim(x))) if axis is None else normalize_axis(axis, np.ndim(x))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp``: ``log(sum(b * exp(a)))`` over ``axis``, stable; with
    ``return_sign`` the log of its absolute value and its sign. Without ``b`` it is ad.nn's
    logsumexp primitive; with ``b`` a composition shifted by the maximum."""
    if b is None and not return_sign:
        return nn_logsumexp(a, axis=axis, keepdims=keepdims)
    if b is not None:
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        a = np.broadcast_to(a, shape)
    axes = _axes(a, axis)
    m = np.max(a, axis=axes, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0)
    e = np.exp(a - shift)
    total = np.sum(e if b is None else b * e, axis=axes, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):     # log of 0 is -inf, as in scipy
        out = np.log(np.abs(total) if return_sign else total) + shift
    sign = np.sign(total)
    if not keepdims:
        out, sign = np.squeeze(out, axis=axes), np.squeeze(sign, axis=axes)
    return (out, sign) if return_sign else out


def softmax(x, axis=None):
    """``scipy.special.softmax``: ``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default),
    ad.nn's softmax primitive."""
    return nn_softmax(x, axis=_axes(x, axis))


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: ``x - logsumexp(x)`` over ``axis`` (all by default)."""
    return nn_log_softmax(x, axis=_axes(x, axis))
