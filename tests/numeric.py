"""Central differences for tests that compare a gradient with the numbers (the library's own
finite differences, ad.checks.fd, are for rules and report their error; this is the plain one)."""
from __future__ import annotations

import numpy as np


def fd_grad(f, x, eps=1e-6):
    """d f / d x by central differences, shaped like ``x`` (a float, 0-d or n-d array)."""
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g
