"""The multivariate distributions: ``dirichlet``, and ``multivariate_normal`` (its density by
Cholesky or scipy's pseudo-inverse, its cdf by the primitive of ``mvn_cdf``).
"""
from __future__ import annotations

import numpy as np
import scipy.special as sp
import scipy.stats as st

from ...errors import NonDifferentiableError
from ...trace_state import Traced
from ..linalg import solve_triangular
from .distribution import LOG_2PI, Distribution, log_probability
from .mvn_cdf import box_probability


class dirichlet_gen(Distribution):
    """``x`` holds the K components on its first axis (scipy's layout), or K - 1 of them."""
    name = "dirichlet"

    def _components(self, x, alpha):
        if np.ndim(alpha) != 1:
            raise ValueError("Parameter vector 'a' must be one dimensional")
        if np.shape(x)[0] == np.shape(alpha)[0] - 1:
            x = np.concatenate([x, 1 - np.sum(x, axis=0, keepdims=True)], axis=0)
        if np.shape(x)[0] != np.shape(alpha)[0]:
            raise ValueError(f"x's first axis has {np.shape(x)[0]} components, alpha {np.shape(alpha)[0]}")
        return x

    def _lnB(self, alpha):
        return np.sum(sp.gammaln(alpha)) - sp.gammaln(np.sum(alpha))

    def logpdf(self, x, alpha):
        x = self._components(x, alpha)
        a = np.reshape(alpha, (-1,) + (1,) * (np.ndim(x) - 1))
        return np.sum(sp.xlogy(a - 1, x), axis=0) - self._lnB(alpha)

    def pdf(self, x, alpha):
        return np.exp(self.logpdf(x, alpha))

    def mean(self, alpha):
        return alpha / np.sum(alpha)

    def var(self, alpha):
        a0 = np.sum(alpha)
        return alpha * (a0 - alpha) / (a0 * a0 * (a0 + 1))

    def entropy(self, alpha):
        a0, k = np.sum(alpha), np.shape(alpha)[0]
        return self._lnB(alpha) + (a0 - k) * sp.psi(a0) - np.sum((alpha - 1) * sp.psi(alpha))


def _seed(rng) -> int:
    """The int seed of scipy's ``rng`` (see ``multivariate_normal.cdf``)."""
    if rng is None:
        return 0
    if isinstance(rng, int | np.integer):
        return int(rng)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(2 ** 32))
    if isinstance(rng, np.random.RandomState):
        return int(rng.randint(2 ** 32, dtype=np.int64))
    raise TypeError(f"rng={rng!r}: pass None, an int, a numpy Generator or RandomState")


class multivariate_normal_gen(Distribution):
    """``cov`` a matrix (its lower triangle is read, as scipy's eigh reads it), a vector (the
    diagonal) or a scalar (times the identity); x of shape (..., d), as scipy takes it. A
    positive definite cov is factorised by Cholesky; ``allow_singular=True`` takes scipy's
    pseudo-inverse and pseudo-determinant (eigh, eigenvalues above its cutoff), -inf off the
    support (whose covariance gradient needs distinct eigenvalues, as eigh's rule does)."""
    name = "multivariate_normal"

    def _dim(self, mean, cov):
        return np.size(mean) if mean is not None else np.shape(cov)[0] if np.ndim(cov) == 2 else 1

    def _whitening(self, dim, cov, allow_singular):
        """(W, log pseudo-determinant, rank, null-space basis or None, its cutoff): the
        squared norm of dev @ W is the Mahalanobis distance."""
        if not allow_singular:
            chol = np.linalg.cholesky(cov) if np.ndim(cov) == 2 else np.sqrt(cov) * np.eye(dim)
            return chol, 2 * np.sum(np.log(np.diagonal(chol))), dim, None, None
        full = cov if np.ndim(cov) == 2 else np.eye(dim) * cov
        s, u = np.linalg.eigh(full)
        eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))       # scipy's _eigvalsh_to_eps
        keep = s > eps
        safe = np.where(keep, s, 1.0)
        return (u * np.where(keep, 1 / np.sqrt(safe), 0.0), np.sum(np.where(keep, np.log(safe), 0.0)),
                np.sum(keep), u * ~keep, eps)

    def logpdf(self, x, mean=None, cov=1, allow_singular=False):
        dim = self._dim(mean, cov)
        mean = np.zeros(dim) if mean is None else np.broadcast_to(mean, (dim,))
        if np.ndim(x) == 0 or np.ndim(x) == 1 and dim == 1:
            x = np.reshape(x, (-1, 1))
        dev = np.reshape(x - mean, (-1, dim))
        w, logdet, rank, null, eps = self._whitening(dim, cov, allow_singular)
        white = dev @ w if allow_singular else solve_triangular(w, dev.T, lower=True).T
        out = -(rank * LOG_2PI + logdet + np.sum(white * white, axis=-1)) / 2
        if null is not None:        # off the support of a singular cov
            out = np.where(np.sqrt(np.sum((dev @ null) ** 2, axis=-1)) < eps, out, -np.inf)
        return np.reshape(out, np.shape(x)[:-1]) if np.ndim(x) > 2 else np.squeeze(out)

    def pdf(self, x, mean=None, cov=1, allow_singular=False):
        return np.exp(self.logpdf(x, mean, cov, allow_singular))

    def entropy(self, mean=None, cov=1):
        dim = self._dim(mean, cov)
        _, logdet, _, _, _ = self._whitening(dim, cov, False)
        return (dim * (1 + LOG_2PI) + logdet) / 2

    def cdf(self, x, mean=None, cov=1, allow_singular=False, maxpts=None, abseps=1e-5, releps=1e-5, *,
            lower_limit=None, rng=None):
        """P(lower_limit < X < x), scipy's oriented box probability and its values: ndtr in 1
        dimension, from 2 on the primitive ``mvn_cdf_p`` (scipy's integration: exact in 2-d,
        Genz's randomized lattice rule to ``abseps`` from 3-d on; its gradients: the rule
        in ``mvn_cdf``). ``rng`` seeds the lattice's shifts: an int as in scipy, None as 0 (scipy draws fresh shifts from numpy's
        global generator: a function ad differentiates must give one value each time it runs),
        a Generator or RandomState gives an int seed drawn from it."""
        dim = self._dim(mean, cov)
        mean = np.zeros(dim) if mean is None else np.broadcast_to(mean, (dim,))
        cov = cov if np.ndim(cov) == 2 else np.eye(dim) * cov       # a vector: its diagonal
        if np.ndim(x) == 0 or np.ndim(x) == 1 and dim == 1:          # scipy's _process_quantiles
            x = np.reshape(x, (-1, 1))
        traced = any(isinstance(v, Traced) for v in (x, mean, cov, lower_limit))
        seed = _seed(rng)
        if allow_singular and traced:
            raise NonDifferentiableError(
                "ad.scipy.stats.multivariate_normal.cdf(..., allow_singular=True) of traced values: its "
                "gradient conditions on each coordinate (dividing by the covariance's conditional "
                "variances), which a singular covariance does not allow; pass a positive definite cov "
                "and allow_singular=False")
        if allow_singular:
            return st.multivariate_normal.cdf(x, mean, cov, True, maxpts, abseps, releps,
                                              lower_limit=lower_limit, rng=seed)
        upper, lower = x - mean, None if lower_limit is None else lower_limit - mean
        if lower is not None:
            shape = np.broadcast_shapes(np.shape(upper), np.shape(lower))
            upper, lower = np.broadcast_to(upper, shape), np.broadcast_to(lower, shape)
        opts = {"maxpts": int(maxpts or 1000000 * dim), "abseps": float(abseps), "releps": float(releps),
                "seed": seed}
        return np.squeeze(box_probability(upper, cov, lower, opts))

    def logcdf(self, x, mean=None, cov=1, allow_singular=False, maxpts=None, abseps=1e-5, releps=1e-5, *,
               lower_limit=None, rng=None):
        """log of ``cdf``; complex where an odd number of lower limits lie above x (a negative
        oriented probability), as in scipy."""
        out = self.cdf(x, mean, cov, allow_singular, maxpts, abseps, releps, lower_limit=lower_limit, rng=rng)
        if np.any(out < 0):
            out = out + 0j
        return log_probability(out)


dirichlet, multivariate_normal = dirichlet_gen(), multivariate_normal_gen()
