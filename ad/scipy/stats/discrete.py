"""The discrete distributions (``rv_discrete``): masses on the integers as compositions of
scipy.special functions, differentiable in the parameters.
"""
from __future__ import annotations

import numpy as np
import scipy.special as sp

from .distribution import Distribution, log_probability, parse_parameters


class rv_discrete(Distribution):
    """A discrete family on the integers, shifted by ``loc``: the mass is zero off the integers
    of its support, as in scipy; differentiable in the parameters (k is data)."""

    def _parse(self, args, kwds):
        vals = parse_parameters(self.name, args, kwds, self.shapes + ("loc",))
        missing = [s for s in self.shapes if s not in vals]
        if missing:
            raise TypeError(f"{self.name}: missing shape parameter(s) {', '.join(missing)}")
        return [vals[s] for s in self.shapes], vals.get("loc", 0)

    def _standard(self, k, args, kwds):
        shapes, loc = self._parse(args, kwds)
        k = k - loc
        inside = (k >= 0) & (k == np.floor(k)) & self._within(k, *shapes)
        return np.where(inside, k, 0), inside, shapes

    def _within(self, k, *shapes):
        return True

    def logpmf(self, k, *args, **kwds):
        k, inside, shapes = self._standard(k, args, kwds)
        return np.where(inside, self._logpmf(k, *shapes), -np.inf)

    def pmf(self, k, *args, **kwds):
        return np.exp(self.logpmf(k, *args, **kwds))

    def cdf(self, k, *args, **kwds):
        shapes, loc = self._parse(args, kwds)
        k = np.floor(k - loc)
        inside = k >= 0
        return np.where(inside, self._cdf(np.where(inside, k, 0), *shapes), 0.0)

    def sf(self, k, *args, **kwds):
        shapes, loc = self._parse(args, kwds)
        k = np.floor(k - loc)
        inside = k >= 0
        return np.where(inside, self._sf(np.where(inside, k, 0), *shapes), 1.0)

    def logcdf(self, k, *args, **kwds):
        return log_probability(self.cdf(k, *args, **kwds))

    def logsf(self, k, *args, **kwds):
        return log_probability(self.sf(k, *args, **kwds))

    def entropy(self, *args, **kwds):
        """-sum of pmf log pmf over the support points ``_points`` names (a new last axis),
        with log pmf the formula (no ``0 * log 0``: pmf is its exponential)."""
        shapes, _ = self._parse(args, kwds)
        k, inside = self._points(*shapes)
        expanded = [np.expand_dims(s, -1) for s in shapes]
        logpmf = self._logpmf(np.where(inside, k, 0), *expanded)
        return -np.sum(np.where(inside, np.exp(logpmf) * logpmf, 0.0), axis=-1)


class poisson_gen(rv_discrete):
    name, shapes = "poisson", ("mu",)

    def _logpmf(self, k, mu):
        return sp.xlogy(k, mu) - sp.gammaln(k + 1) - mu

    def _cdf(self, k, mu):
        return sp.pdtr(k, mu)

    def _sf(self, k, mu):
        return sp.pdtrc(k, mu)

    def _points(self, mu):
        """k within ``10 sqrt(mu) + 40`` of mu, the range read from the concrete mu (a guard
        when it is traced). The terms left out sum to less than 1e-30 for every mu > 0 (a
        Poisson's tail beyond mu + t is below exp(-t^2 / (2 (mu + t / 3))): exp(-50) or less)."""
        reach = 10 * np.sqrt(mu) + 40
        lo = max(int(np.min(np.floor(mu - reach))), 0)
        k = np.arange(lo, int(np.max(np.ceil(mu + reach))) + 1, dtype=np.float64)
        return k, True


class binom_gen(rv_discrete):
    name, shapes = "binom", ("n", "p")

    def _within(self, k, n, p):
        return k <= n

    def _logpmf(self, k, n, p):
        return (sp.gammaln(n + 1) - sp.gammaln(k + 1) - sp.gammaln(n - k + 1)
                + sp.xlogy(k, p) + sp.xlog1py(n - k, -p))

    def _cdf(self, k, n, p):
        return sp.bdtr(np.minimum(k, n), n, p)

    def _sf(self, k, n, p):
        return sp.bdtrc(np.minimum(k, n), n, p)

    def _points(self, n, p):
        """k = 0..n: the exact sum (n read from its concrete value, a guard when it is traced)."""
        k = np.arange(int(np.max(n)) + 1, dtype=np.float64)
        return k, k <= np.expand_dims(n, -1)


poisson, binom = poisson_gen(), binom_gen()
