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
ad does not write (``rvs``, ``ppf``, ``fit``, ...) are scipy's own, for plain arrays
(``distribution``).

The families are in ``continuous``, ``discrete`` and ``multivariate``. One exception to
compositions: ``multivariate_normal.cdf`` is a primitive (``mvn_cdf``) whose impl is scipy's
integration and whose rule conditions on one or two coordinates (docs/scipy.md).
"""
from __future__ import annotations

from .continuous import (beta, beta_gen, cauchy, cauchy_gen, chi2, chi2_gen, expon, expon_gen, gamma,
                         gamma_gen, laplace, laplace_gen, logistic, logistic_gen, norm, norm_gen,
                         rv_continuous, t, t_gen)
from .discrete import binom, binom_gen, poisson, poisson_gen, rv_discrete  # noqa: F401
from .multivariate import dirichlet, dirichlet_gen, multivariate_normal, multivariate_normal_gen
from .mvn_cdf import EXACT, mvn_cdf_p  # noqa: F401

#: every primitive this package declares
PRIMITIVES = (mvn_cdf_p,)
