"""scipy.signal for ad: ``convolve`` and ``correlate`` (n-d, modes full/same/valid), with scipy's
names and signatures.

scipy's convolve converts its arguments (``np.asarray``; under ``SCIPY_ARRAY_API=1`` too,
docs/scipy.md). Here ``convolve`` is one primitive whose impl is scipy's own (``method``
direct, fft or auto as asked), and ``correlate(a, v)`` is ``convolve(a, flip(v))`` (scipy's
identity for real arrays). Every mode is a centred window of the full convolution, so the rule
pads the cotangent back to the full shape and correlates it with the other operand ("valid"):
``dx = convolve(g_full, flip(h), "valid")``, ``dh = convolve(g_full, flip(x), "valid")``, with
the same primitive (it lifts and differentiates again). Real arrays.
"""
from __future__ import annotations

import numpy as np
import scipy.signal as ss

from ..errors import UnsupportedFunctionError
from ..primitives import Primitive
from ..rules import rrule
from ..samples import MATRIX, In, Sample

MODES, METHODS = ("full", "same", "valid"), ("auto", "direct", "fft")


def _window(n1, n2, mode):
    """(start, length) of a mode's output inside the full convolution, along one axis (scipy
    centres it: ``(full - length) // 2``)."""
    full = n1 + n2 - 1
    length = {"full": full, "same": n1, "valid": abs(n1 - n2) + 1}[mode]
    return (full - length) // 2, length


def _convolve(in1, in2, mode, method):
    """scipy's convolve in the float dtype of the operands (fft may upcast float32)."""
    return np.asarray(ss.convolve(in1, in2, mode=mode, method=method)).astype(np.result_type(in1, in2), copy=False)


convolve_p = Primitive(
    "scipy.signal.convolve", _convolve, params=("mode", "method"), multilinear_in=(0, 1),
    doc="The n-d convolution of two arrays of the same number of dimensions.",
    samples=tuple(Sample((In(s1), In(s2)), {"mode": mode, "method": method}, MATRIX)
                  for s1, s2, mode, method in (((6,), (3,), "full", "direct"), ((6,), (3,), "same", "direct"),
                                               ((6,), (3,), "valid", "direct"), ((3,), (6,), "valid", "direct"),
                                               ((4, 5), (2, 3), "full", "direct"), ((4, 5), (2, 3), "same", "direct"),
                                               ((2, 3), (4, 5), "valid", "direct"), ((3,), (6,), "same", "fft"))))


@rrule(convolve_p)
def _convolve_rule(x, h, mode, method):
    y = convolve_p.bind(x, h, mode=mode, method=method)

    def pullback(g):
        pads = []
        for n1, n2 in zip(np.shape(x), np.shape(h)):
            start, length = _window(n1, n2, mode)
            pads.append((start, n1 + n2 - 1 - start - length))
        full = np.pad(g, pads)
        return (convolve_p.bind(full, np.flip(h), mode="valid", method=method),
                convolve_p.bind(full, np.flip(x), mode="valid", method=method))
    return y, pullback


def _check(name, in1, in2, mode, method):
    if mode not in MODES:
        raise ValueError(f"acceptable mode flags are 'valid', 'same', or 'full', not {mode!r}")
    if method not in METHODS:
        raise ValueError(f"acceptable method flags are 'auto', 'direct', or 'fft', not {method!r}")
    if np.ndim(in1) != np.ndim(in2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if np.iscomplexobj(in1) or np.iscomplexobj(in2):
        raise UnsupportedFunctionError(f"ad.scipy.signal.{name} of complex arrays: its rule is written for real ones")
    if mode == "valid":
        s1, s2 = np.shape(in1), np.shape(in2)
        if not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
            raise ValueError("For 'valid' mode, one must be at least as large as the other in every dimension")


def convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve``: the n-d convolution of in1 and in2 (real arrays)."""
    _check("convolve", in1, in2, mode, method)
    return convolve_p.bind(in1, in2, mode=mode, method=method)


def correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate``: the n-d cross-correlation, ``convolve(in1, flip(in2))``."""
    _check("correlate", in1, in2, mode, method)
    return convolve_p.bind(in1, np.flip(in2), mode=mode, method=method)


PRIMITIVES = (convolve_p,)
