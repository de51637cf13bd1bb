"""scipy.stats for ad: the distributions real models use, with scipy's names and signatures.

scipy's distribution methods convert their arguments with ``np.asarray`` before computing (also
under ``SCIPY_ARRAY_API=1``: docs/scipy.md), which a traced value cannot pass; here each
method is a composition of numpy and scipy.special functions (ad.scipy.special gives those
their rules), so it is differentiable in the value and in every parameter (``loc``, ``scale``,
the shapes) and it lifts. ``from ad.scipy.stats import norm`` is the one change a user makes.

Values outside a distribution's support are scipy's (``-inf`` log densities, 0 or 1
probabilities); parameters outside their domain give ``nan`` as the formulas do. Derivatives
that scipy.special has no closed form for (``gamma.cdf`` in its shape ``a``, ``t.cdf`` in
``df``...) raise ``NonDifferentiableError`` when asked for, never a silent zero. Methods that
ad does not write (``rvs``, ``ppf``, ``fit``, ...) are scipy's own, for plain arrays.

One exception to compositions: ``multivariate_normal.cdf`` is a primitive whose impl is scipy's
integration (Genz's from 3 dimensions on) and whose rule conditions on one coordinate (the
gradient in the bounds) or two (Plackett's identity, the covariance), with the same primitive a
dimension or two lower (docs/scipy.md).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.special as sp
import scipy.stats as st

from ..errors import NonDifferentiableError
from ..primitives import Primitive
from ..rrule import rrule
from ..samples import MATRIX, In, Sample, matrix
from ..trace_state import Traced
from .linalg import solve_triangular

LOG_2PI, LOG_PI, LOG2 = math.log(2 * math.pi), math.log(math.pi), math.log(2)


def _log(p):
    """log of a probability; log 0 is -inf without a warning, as in scipy."""
    with np.errstate(divide="ignore"):
        return np.log(p)


def _args(dist, args, kwds, names):
    """scipy's way of passing parameters: positionally after the value, or by keyword."""
    if len(args) > len(names):
        raise TypeError(f"{dist}: too many positional parameters (it takes {', '.join(names)})")
    vals = dict(zip(names, args))
    for k, v in kwds.items():
        if k not in names:
            raise TypeError(f"{dist}: unexpected parameter {k!r} (it takes {', '.join(names)})")
        if k in vals:
            raise TypeError(f"{dist}: got multiple values for parameter {k!r}")
        vals[k] = v
    return vals


class _Frozen:
    """``dist(*params)``: the distribution with its parameters fixed, as scipy's frozen ones."""
    OF_A_VALUE = {"logpdf", "pdf", "cdf", "sf", "logcdf", "logsf", "pmf", "logpmf", "ppf", "isf"}

    def __init__(self, dist, args, kwds):
        self.dist, self.args, self.kwds = dist, args, kwds

    def __getattr__(self, name):
        method = getattr(self.dist, name)
        if not callable(method):
            return method
        if name in self.OF_A_VALUE:
            return lambda x, *a, **k: method(x, *self.args, *a, **self.kwds, **k)
        return lambda *a, **k: method(*self.args, *a, **self.kwds, **k)     # entropy, mean, rvs, ...


class _Distribution:
    """What every distribution shares: scipy's object for what ad does not write, freezing."""
    name: str
    shapes: tuple = ()

    def __getattr__(self, name):
        return getattr(getattr(st, self.name), name)

    def __call__(self, *args, **kwds):
        return _Frozen(self, args, kwds)

    def __repr__(self):
        return f"ad.scipy.stats.{self.name}"


class rv_continuous(_Distribution):
    """A location-scale family: each method standardizes ``z = (x - loc) / scale`` and asks the
    family's ``_logpdf``, ``_cdf``... of z and the shape parameters. ``_support(z, *shapes)``
    (None for the whole line) masks where the density is zero; ``_safe`` is a value inside,
    evaluated in place of the outside ones so that no nan reaches a gradient."""
    _safe, _bounds = 0.5, (-np.inf, np.inf)

    def _support(self, z, *shapes):
        return None

    def _parse(self, args, kwds):
        vals = _args(self.name, args, kwds, self.shapes + ("loc", "scale"))
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
        return _log(self._cdf(z, *shapes))

    def _logsf(self, z, *shapes):
        return _log(self._sf(z, *shapes))

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
        return _log(-np.expm1(-z))

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


class rv_discrete(_Distribution):
    """A discrete family on the integers, shifted by ``loc``: the mass is zero off the integers
    of its support, as in scipy; differentiable in the parameters (k is data)."""

    def _parse(self, args, kwds):
        vals = _args(self.name, args, kwds, self.shapes + ("loc",))
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
        return _log(self.cdf(k, *args, **kwds))

    def logsf(self, k, *args, **kwds):
        return _log(self.sf(k, *args, **kwds))

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


norm, t, cauchy, laplace, logistic = norm_gen(), t_gen(), cauchy_gen(), laplace_gen(), logistic_gen()
gamma, chi2, expon, beta = gamma_gen(), chi2_gen(), expon_gen(), beta_gen()
poisson, binom = poisson_gen(), binom_gen()


# -- multivariate ------------------------------------------------------------------------------

class dirichlet_gen(_Distribution):
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


class multivariate_normal_gen(_Distribution):
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
        Genz's randomized lattice rule to ``abseps`` from 3-d on; its gradients:
        ``_mvn_cdf_rule``). ``rng`` seeds the
        lattice's shifts: an int as in scipy, None as 0 (scipy draws fresh shifts from numpy's
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
        return np.squeeze(_box(upper, cov, lower, opts))

    def logcdf(self, x, mean=None, cov=1, allow_singular=False, maxpts=None, abseps=1e-5, releps=1e-5, *,
               lower_limit=None, rng=None):
        """log of ``cdf``; complex where an odd number of lower limits lie above x (a negative
        oriented probability), as in scipy."""
        out = self.cdf(x, mean, cov, allow_singular, maxpts, abseps, releps, lower_limit=lower_limit, rng=rng)
        if np.any(out < 0):
            out = out + 0j
        return _log(out)


dirichlet, multivariate_normal = dirichlet_gen(), multivariate_normal_gen()


# -- multivariate_normal.cdf: scipy's integration as a primitive ---------------------------------

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


def _box(upper, cov, lower, opts):
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
    box = _box(upper[..., others] - shift, cond, None if lower is None else lower[..., others] - shift, opts)
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
        density = density * _box(upper[..., others] - shift, cond,
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


PRIMITIVES = (mvn_cdf_p,)
