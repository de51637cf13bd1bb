"""The fused backend's large matrix products whose result only leaves the program (a weight's
gradient): each runs as ``a @ b`` or as ``(b.T @ a.T).T``, whichever the machine's BLAS runs
faster at these shapes, measured in its first calls as the loops are (``calls``).

Both ask BLAS for the same sums of the same products; the second returns the transpose of a
C-ordered array (a Fortran-ordered array of the same numbers), which is why a product that
another equation reads stays ``a @ b``: the loops read C order. Measured on this project's
benchmark machine (OpenBLAS, SkylakeX, one thread): the MLP's first-layer weight gradient
``X.T @ da`` (784x256 by 256x512) takes 3.06 ms written so, 2.83 ms as ``(da.T @ X).T``, bit
for bit the same result; the whole gradient 2.7 % faster (docs/fused.md).
"""
from __future__ import annotations

import numpy as np

from . import calls
from ..tape import Var

SMALLEST = 1 << 22     # multiply-adds below which a product is written a @ b, unmeasured (~1 ms)


def as_written(a, b):
    return a @ b


def transposed(a, b):
    """``a @ b`` as the transpose of ``b.T @ a.T``: BLAS runs the other orientation."""
    return (b.T @ a.T).T


WAYS = {"a @ b": as_written, "(b.T @ a.T).T": transposed}


def measured(e, read: set) -> bool:
    """Is the matmul ``e`` one to measure: two float matrices, a result no equation reads
    (``read``), at least ``SMALLEST`` multiply-adds?"""
    a, b = e.inputs
    if type(a) is not Var or type(b) is not Var or e.outputs[0] in read \
            or len(a.aval.shape) != 2 or len(b.aval.shape) != 2:
        return False
    (m, k), n = a.aval.shape, b.aval.shape[1]
    return a.aval.dtype == b.aval.dtype and a.aval.dtype in (np.float32, np.float64) and m * k * n >= SMALLEST


class Product:
    """A product the driver calls by ``name`` (in its ``namespace``): each of the first
    ``calls.MEASURED_CALLS`` calls times both ways (each first in turn: neither warms the
    caches for the other alone) and returns ``a @ b``; then the faster is bound in its place."""

    def __init__(self, name: str, namespace: dict):
        self.name, self._namespace = name, namespace
        self.runs, self.times = None, {way: [] for way in WAYS}

    def __call__(self, a, b):
        ways = list(WAYS.items())
        if len(self.times["a @ b"]) % 2:
            ways.reverse()
        for way, product in ways:
            start = calls.CLOCK()
            y = product(a, b)
            self.times[way].append(calls.CLOCK() - start)
            if product is as_written:
                out = y
        if len(self.times["a @ b"]) >= calls.MEASURED_CALLS:
            self.runs = min(self.times, key=lambda way: min(self.times[way]))
            self._namespace[self.name] = WAYS[self.runs]
        return out

    def choice(self) -> str:
        """How the product runs, and the measurement that chose it."""
        if self.runs is None:
            return f"{self.name}: not yet measured (its first {calls.MEASURED_CALLS} calls time a @ b and (b.T @ a.T).T)"
        times = ", ".join(f"{way} {min(t) * 1e3:.3g} ms" for way, t in self.times.items())
        return f"{self.name} runs as {self.runs}: {times} (best of {calls.MEASURED_CALLS} calls)"
