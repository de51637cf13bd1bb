"""``multivariate_normal.cdf`` as a primitive: its impl is scipy's integration (Genz's from 3
dimensions on), its rule conditions on one coordinate (the gradient in the bounds) or two
(Plackett's identity, the covariance), with the same primitive a dimension or two lower
(docs/scipy.md).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp
import scipy.stats as st

from ...primitives import Primitive
from ...rules import rrule
from ...samples import MATRIX, In, Sample, matrix


def _sym(cov):
    """The symmetric matrix of cov's lower triangle (scipy's 2-d integration reads the upper
    triangle, its n-d one the lower: they agree on a symmetric cov, as a covariance is)."""
    return np.tril(cov) + np.swapaxes(np.tril(cov, -1), -1, -2)


def _mvn_cdf(upper, cov, *lower, maxpts, abseps, releps, seed):
    """scipy's multivariate_normal.cdf of the deviations from the mean (scipy's own first
    step), in the operands' dtype, one value per point of the leading axes."""
    out = st.multivariate_normal.cdf(upper, np.zeros(np.shape(cov)[-1]), _sym(cov), maxpts=maxpts,
                                     abseps=abseps, releps=releps, lower_limit=lower[0] if lower else None,
                                     rng=seed)
    return np.reshape(out, np.shape(upper)[:-1]).astype(np.result_type(upper, cov, *lower), copy=False)


# 2 dimensions: scipy's integration is exact (1e-15), and so are the checks (3 and more: the
# tests, with tolerances that follow the integration's error)
EXACT = {"maxpts": 2000000, "abseps": 1e-5, "releps": 1e-5, "seed": 0}
mvn_cdf_p = Primitive(
    "scipy.stats.multivariate_normal.cdf", _mvn_cdf, params=("maxpts", "abseps", "releps", "seed"),
    doc="P(lower < X < upper) of X ~ N(0, cov) (cov's lower triangle), oriented as scipy's, at "
        "each point of the leading axes (2 dimensions and more; 1 is ndtr).",
    samples=(Sample((In((4, 2)), matrix((2, 2), "spd")), EXACT, MATRIX),
             Sample((In((3, 2), 0.0, 2.0), matrix((2, 2), "spd"), In((3, 2), -2.0, -0.5)), EXACT, MATRIX)))


def box_probability(upper, cov, lower, opts):
    """The oriented box probability of N(0, cov) (lower None: -inf); 1 dimension as ndtr."""
    if np.shape(cov)[-1] == 1:
        s = np.sqrt(cov[0, 0])
        out = sp.ndtr(upper[..., 0] / s)
        return out if lower is None else out - sp.ndtr(lower[..., 0] / s)
    return mvn_cdf_p.bind(upper, cov, *([] if lower is None else [lower]), **opts)


def _finite(c):
    """(where c is finite, c with 0 elsewhere): a bound at infinity moves nothing."""
    finite = np.isfinite(c)
    return finite, np.where(finite, c, 0.0)


def _face(i, c, upper, s, lower, opts):
    """The derivative of the box probability in a bound ``c`` of coordinate i: the density of
    x_i at c times the box probability of the others given x_i = c (the same primitive,
    one dimension fewer)."""
    n = s.shape[-1]
    others = [j for j in range(n) if j != i]
    finite, c = _finite(c)
    r = s[others, i] / s[i, i]
    shift = c[..., None] * r
    cond = s[others][:, others] - r[:, None] * s[i, others][None, :]
    density = np.exp(-c * c / (2 * s[i, i])) / np.sqrt(2 * math.pi * s[i, i])
    box = box_probability(upper[..., others] - shift, cond, None if lower is None else lower[..., others] - shift, opts)
    return np.where(finite, density * box, 0.0)


def _edge(i, j, ci, cj, upper, s, lower, opts):
    """d^2/dci dcj of the box probability at bounds ci, cj of coordinates i != j: their
    bivariate density times the box probability of the others given both."""
    n = s.shape[-1]
    fi, ci = _finite(ci)
    fj, cj = _finite(cj)
    sii, sjj, sij = s[i, i], s[j, j], s[i, j]
    det = sii * sjj - sij * sij
    density = np.exp(-(sjj * ci * ci - 2 * sij * ci * cj + sii * cj * cj) / (2 * det)) / (2 * math.pi * np.sqrt(det))
    if n > 2:
        others = [k for k in range(n) if k not in (i, j)]
        a = (s[others, i] * sjj - s[others, j] * sij) / det       # the regression on x_i, x_j
        b = (s[others, j] * sii - s[others, i] * sij) / det
        shift = ci[..., None] * a + cj[..., None] * b
        cond = s[others][:, others] - a[:, None] * s[i, others][None, :] - b[:, None] * s[j, others][None, :]
        density = density * box_probability(upper[..., others] - shift, cond,
                                 None if lower is None else lower[..., others] - shift, opts)
    return np.where(fi & fj, density, 0.0)


@rrule(mvn_cdf_p)
def _mvn_cdf_rule(upper, cov, *lower, **opts):
    """The gradient in a bound: ``_face``. In cov (Plackett's identity: d phi / d S_ij =
    d^2 phi / dx_i dx_j, i != j, and half that for i = j), H_ij = the sum over the corners
    of (i, j)'s bounds of +-``_edge``; its diagonal from the scale invariance
    F(D a, D b, D S D) = F(a, b, S): H_kk S_kk = -(a_k dF/da_k + b_k dF/db_k + sum_j H_kj S_kj).
    cov's lower triangle gets H_ij below the diagonal, H_kk / 2 on it."""
    y = mvn_cdf_p.bind(upper, cov, *lower, **opts)
    low = lower[0] if lower else None
    n = cov.shape[-1]

    def pullback(g):
        s = _sym(cov)
        d_up = [_face(i, upper[..., i], upper, s, low, opts) for i in range(n)]
        d_low = [] if low is None else [-_face(i, low[..., i], upper, s, low, opts) for i in range(n)]
        corners = [(upper, upper, 1.0)] if low is None else [(upper, upper, 1.0), (upper, low, -1.0),
                                                                (low, upper, -1.0), (low, low, 1.0)]
        h = [[None] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                h[i][j] = h[j][i] = sum(sign * _edge(i, j, ci[..., i], cj[..., j], upper, s, low, opts)
                                        for ci, cj, sign in corners)
        for k in range(n):
            moment = _finite(upper[..., k])[1] * d_up[k]
            if low is not None:
                moment = moment + _finite(low[..., k])[1] * d_low[k]
            h[k][k] = -(moment + sum(h[k][j] * s[k, j] for j in range(n) if j != k)) / s[k, k]
        hess = np.stack([np.stack(row, axis=-1) for row in h], axis=-2)
        weight = (np.tril(np.ones((n, n)), -1) + np.eye(n) / 2).astype(hess.dtype)
        batch = tuple(range(np.ndim(g)))
        d_cov = np.sum(g[..., None, None] * hess, axis=batch) * weight
        cotangents = (g[..., None] * np.stack(d_up, axis=-1), d_cov)
        return cotangents if low is None else (*cotangents, g[..., None] * np.stack(d_low, axis=-1))
    return y, pullback
