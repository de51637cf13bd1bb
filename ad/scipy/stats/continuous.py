"""The continuous distributions: location-scale families (``rv_continuous``) whose methods are
compositions of numpy and scipy.special functions of the standardized value and the shapes.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from .distribution import LOG2, LOG_2PI, LOG_PI, Distribution, log_probability, parse_parameters


class rv_continuous(Distribution):
    """A location-scale family: each method standardizes ``z = (x - loc) / scale`` and asks the
    family's ``_logpdf``, ``_cdf``... of z and the shape parameters. ``_support(z, *shapes)``
    (None for the whole line) masks where the density is zero; ``_safe`` is a value inside,
    evaluated in place of the outside ones so that no nan reaches a gradient."""
    _safe, _bounds = 0.5, (-np.inf, np.inf)

    def _support(self, z, *shapes):
        return None

    def _parse(self, args, kwds):
        vals = parse_parameters(self.name, args, kwds, self.shapes + ("loc", "scale"))
        missing = [s for s in self.shapes if s not in vals]
        if missing:
            raise TypeError(f"{self.name}: missing shape parameter(s) {', '.join(missing)}")
        return [vals[s] for s in self.shapes], vals.get("loc", 0.0), vals.get("scale", 1.0)

    def _standard(self, x, args, kwds):
        """(z with the outside values replaced by ``_safe``, the raw z, the support mask or None,
        the shapes, the scale)."""
        shapes, loc, scale = self._parse(args, kwds)
        z = (x - loc) / scale
        inside = self._support(z, *shapes)
        return (z if inside is None else np.where(inside, z, self._safe)), z, inside, shapes, scale

    def logpdf(self, x, *args, **kwds):
        z, _, inside, shapes, scale = self._standard(x, args, kwds)
        value = self._logpdf(z, *shapes) - np.log(scale)
        return value if inside is None else np.where(inside, value, -np.inf)

    def pdf(self, x, *args, **kwds):
        return np.exp(self.logpdf(x, *args, **kwds))

    def cdf(self, x, *args, **kwds):
        return self._outside_cdf(self._cdf, x, args, kwds, 0.0, 1.0)

    def sf(self, x, *args, **kwds):
        return self._outside_cdf(self._sf, x, args, kwds, 1.0, 0.0)

    def logcdf(self, x, *args, **kwds):
        return self._outside_cdf(self._logcdf, x, args, kwds, -np.inf, 0.0)

    def logsf(self, x, *args, **kwds):
        return self._outside_cdf(self._logsf, x, args, kwds, 0.0, -np.inf)

    def _outside_cdf(self, method, x, args, kwds, below, above):
        """A distribution function: ``below`` left of the support, ``above`` right of it."""
        z, raw, inside, shapes, _ = self._standard(x, args, kwds)
        value = method(z, *shapes)
        if inside is None:
            return value
        return np.where(inside, value, np.where(raw < self._bounds[0], below, above))

    # defaults from the others
    def _sf(self, z, *shapes):
        return 1 - self._cdf(z, *shapes)

    def _logcdf(self, z, *shapes):
        return log_probability(self._cdf(z, *shapes))

    def _logsf(self, z, *shapes):
        return log_probability(self._sf(z, *shapes))

    def entropy(self, *args, **kwds):
        shapes, _, scale = self._parse(args, kwds)
        return self._entropy(*shapes) + np.log(scale)


class norm_gen(rv_continuous):
    name = "norm"

    def _logpdf(self, z):
        return -z * z / 2 - LOG_2PI / 2

    def _cdf(self, z):
        return sp.ndtr(z)

    def _sf(self, z):
        return sp.ndtr(-z)

    def _logcdf(self, z):
        return sp.log_ndtr(z)

    def _logsf(self, z):
        return sp.log_ndtr(-z)

    def _entropy(self):
        return (1 + LOG_2PI) / 2


class t_gen(rv_continuous):
    name, shapes = "t", ("df",)

    def _logpdf(self, z, df):
        return (sp.gammaln((df + 1) / 2) - sp.gammaln(df / 2) - (np.log(df) + LOG_PI) / 2
                - (df + 1) / 2 * np.log1p(z * z / df))

    def _cdf(self, z, df):
        return sp.stdtr(df, z)

    def _sf(self, z, df):
        return sp.stdtr(df, -z)

    def _entropy(self, df):
        half = (df + 1) / 2
        return half * (sp.psi(half) - sp.psi(df / 2)) + np.log(df) / 2 + sp.betaln(df / 2, 0.5)


class cauchy_gen(rv_continuous):
    name = "cauchy"

    def _logpdf(self, z):
        return -LOG_PI - np.log1p(z * z)

    def _cdf(self, z):
        return 0.5 + np.arctan(z) / math.pi

    def _sf(self, z):
        return 0.5 - np.arctan(z) / math.pi

    def _entropy(self):
        return math.log(4 * math.pi)


class laplace_gen(rv_continuous):
    """Its density has a kink at loc (|z|): the gradient there is a subgradient."""
    name = "laplace"

    def _logpdf(self, z):
        return -np.abs(z) - LOG2

    def _cdf(self, z):
        half = np.exp(-np.abs(z)) / 2
        return np.where(z < 0, half, 1 - half)

    def _sf(self, z):
        return self._cdf(-z)

    def _logcdf(self, z):
        return np.where(z < 0, -np.abs(z) - LOG2, np.log1p(-np.exp(-np.abs(z)) / 2))

    def _logsf(self, z):
        return self._logcdf(-z)

    def _entropy(self):
        return 1 + LOG2


class logistic_gen(rv_continuous):
    name = "logistic"

    def _logpdf(self, z):
        return sp.log_expit(z) + sp.log_expit(-z)

    def _cdf(self, z):
        return sp.expit(z)

    def _sf(self, z):
        return sp.expit(-z)

    def _logcdf(self, z):
        return sp.log_expit(z)

    def _logsf(self, z):
        return sp.log_expit(-z)

    def _entropy(self):
        return 2.0


class _positive(rv_continuous):
    """Supported on z >= 0."""
    _bounds, _safe = (0.0, np.inf), 1.0

    def _support(self, z, *shapes):
        return z >= 0


class gamma_gen(_positive):
    name, shapes = "gamma", ("a",)

    def _logpdf(self, z, a):
        return sp.xlogy(a - 1, z) - z - sp.gammaln(a)

    def _cdf(self, z, a):
        return sp.gammainc(a, z)

    def _sf(self, z, a):
        return sp.gammaincc(a, z)

    def _entropy(self, a):
        return a + sp.gammaln(a) + (1 - a) * sp.psi(a)


class chi2_gen(_positive):
    name, shapes = "chi2", ("df",)

    def _logpdf(self, z, df):
        return sp.xlogy(df / 2 - 1, z) - z / 2 - sp.gammaln(df / 2) - df / 2 * LOG2

    def _cdf(self, z, df):
        return sp.gammainc(df / 2, z / 2)

    def _sf(self, z, df):
        return sp.gammaincc(df / 2, z / 2)

    def _entropy(self, df):
        return gamma._entropy(df / 2) + LOG2


class expon_gen(_positive):
    name = "expon"

    def _logpdf(self, z):
        return -z

    def _cdf(self, z):
        return -np.expm1(-z)

    def _sf(self, z):
        return np.exp(-z)

    def _logcdf(self, z):
        return log_probability(-np.expm1(-z))

    def _logsf(self, z):
        return -z

    def _entropy(self):
        return 1.0


class beta_gen(rv_continuous):
    name, shapes = "beta", ("a", "b")
    _bounds = (0.0, 1.0)

    def _support(self, z, a, b):
        return (z >= 0) & (z <= 1)

    def _logpdf(self, z, a, b):
        return sp.xlogy(a - 1, z) + sp.xlog1py(b - 1, -z) - sp.betaln(a, b)

    def _cdf(self, z, a, b):
        return sp.betainc(a, b, z)

    def _sf(self, z, a, b):
        return sp.betaincc(a, b, z)

    def _entropy(self, a, b):
        return (sp.betaln(a, b) - (a - 1) * sp.psi(a) - (b - 1) * sp.psi(b)
                + (a + b - 2) * sp.psi(a + b))


norm, t, cauchy, laplace, logistic = norm_gen(), t_gen(), cauchy_gen(), laplace_gen(), logistic_gen()
gamma, chi2, expon, beta = gamma_gen(), chi2_gen(), expon_gen(), beta_gen()
