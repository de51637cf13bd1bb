"""What every ad.scipy.stats distribution shares: scipy's own object for the methods ad does
not write, freezing its parameters (``norm(0.0, 2.0).cdf(x)``), scipy's way of passing them, and
the constants and the log of the formulas.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.stats as st

LOG_2PI, LOG_PI, LOG2 = math.log(2 * math.pi), math.log(math.pi), math.log(2)


def log_probability(p):
    """log of a probability; log 0 is -inf without a warning, as in scipy."""
    with np.errstate(divide="ignore"):
        return np.log(p)


def parse_parameters(dist, args, kwds, names):
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


class Distribution:
    """What every distribution shares: scipy's object for what ad does not write, freezing."""
    name: str
    shapes: tuple = ()

    def __getattr__(self, name):
        return getattr(getattr(st, self.name), name)

    def __call__(self, *args, **kwds):
        return _Frozen(self, args, kwds)

    def __repr__(self):
        return f"ad.scipy.stats.{self.name}"
