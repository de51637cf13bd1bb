"""scipy.special for ad: rules for its ufuncs, and its other functions with scipy's signatures.

scipy.special's functions are numpy ufuncs: called on a tracer they reach ``__array_ufunc__``
and the dispatch table as ``np.sin`` does, so user code keeps ``from scipy.special import
gammaln``; importing this package gives them their rules (``ufuncs``, declared with
``declarations``). ``ad`` loads it the first time a scipy.special ufunc reaches a tracer:
importing scipy.special costs about as much as ``import ad`` itself.

scipy.special's Python functions (``logsumexp``, ``softmax``, ``polygamma``...) convert their
arguments to plain arrays; ``functions`` has them with scipy's signatures (``from
ad.scipy.special import logsumexp`` is the one change a user makes). The rest of scipy.special
is reachable here too.
"""
from __future__ import annotations

from ...dispatch import UFUNCS
from .declarations import Refused, elementwise_rule, not_differentiable, sp, ufunc, ufunc_outputs
from .functions import (comb, factorial, log_softmax, logsumexp, multigammaln, perm, polygamma,
                        polygamma_p, softmax)
from .ufuncs import MISSING  # noqa: F401  (importing ufuncs fills the dispatch tables)


def __getattr__(name):
    """The rest of ``scipy.special`` (its ufuncs have rules, also under ``SCIPY_ARRAY_API=1``):
    ``ad.scipy.special`` stands in for it."""
    try:
        return getattr(sp, name)
    except AttributeError:
        raise AttributeError(f"module 'ad.scipy.special' has no attribute {name!r}") from None


#: every primitive this package declares
PRIMITIVES = tuple(p for p in UFUNCS.values() if p.name.startswith("scipy.special.") and p.rule is not None
                   ) + (polygamma_p,)
