"""Helpers of the complex-number tests (issue 14): a generator seeded from names, complex
cotangent weights, the real loss that pairs them with a case's outputs, and the positions of the
inexact operands (the ones differentiated). tests/lib/test_complex.py and
tests/lib/test_complex_structural.py share them."""
from __future__ import annotations

import zlib

import numpy as np

from tests.support.cases import leaves


def seed(*parts) -> np.random.Generator:
    """A generator seeded from ``parts`` (a case's name, its shape set, a label)."""
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def complex_weights(y, rng, dtype=np.complex128):
    """A weight per output of ``y``: complex (of ``dtype``) for a complex output, real for a real one."""
    return [(rng.standard_normal(np.shape(v)) + 1j * rng.standard_normal(np.shape(v))).astype(dtype)
            if np.iscomplexobj(v) else rng.standard_normal(np.shape(v)).astype(np.result_type(v))
            for v in leaves(y)]


def real_loss(fn, ws):
    """A real loss of a case's outputs: the real pairing Re(sum(w * y)) with each output."""
    def loss(*xs):
        return sum(np.sum(np.real(leaf * w)) for leaf, w in zip(leaves(fn(*xs)), ws))
    return loss


def inexact(xs):
    """The positions of the float and complex operands."""
    return tuple(i for i, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.inexact))
