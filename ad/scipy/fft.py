"""scipy.fft on traced arrays, through scipy's own dispatch.

scipy.fft's functions are uarray multimethods: a call goes to the first backend that takes it
(``scipy.fft.set_backend``, ``register_backend``; scipy's own comes last). ``tracing()`` sets
``Backend`` while a trace runs the user's function (``ad.primitives.plug_in``: every trace once
scipy is imported) and registers nothing with scipy: outside a trace scipy.fft runs exactly as it
did, and a user's own backends keep their order. ``Backend`` takes the calls with a traced
argument and gives every other one back to scipy (``NotImplemented``: a constant, computed by
scipy as usual):

* the transforms np.fft has (fft, ifft, fft2, ifft2, fftn, ifftn, rfft, irfft, rfft2, irfft2,
  rfftn, irfftn, hfft, ihfft) are np.fft's, so they record what ``np.fft.fft(x)`` records
  (``ad.lib.fft``'s primitives); hfft2/hfftn and ihfft2/ihfftn are scipy's definitions over them:
  irfftn of the conjugate, and the conjugate of rfftn, with the norm's direction swapped;
* scipy's conventions that numpy lacks hold: an int for ``s`` or ``axes``, repeated axes refused
  (numpy would transform twice), float16 computed in float32, complex input refused by the
  transforms of real input; ``overwrite_x`` and ``workers`` change no value (accepted, unchecked);
  a ``plan`` is refused, as scipy refuses one;
* the DCTs, DSTs and fast Hankel transforms (dct, idct, dctn, idctn, dst, idst, dstn, idstn,
  fht, ifht) have no primitive: they raise UnsupportedFunctionError naming the function and the
  user's line.

>>> import scipy.fft
>>> ad.grad(lambda x: np.sum(np.abs(scipy.fft.fft(x, norm="ortho")) ** 2))(np.array([1.0, 2.0, 3.0]))
array([2., 4., 6.])

(``fft`` with ``norm="ortho"`` keeps the sum of squares: the gradient is ``2 x``.)
"""
from __future__ import annotations

import contextlib
import inspect
import numbers

import numpy as np
import scipy.fft

from ..dispatch import unsupported
from ..lib.fft import NORMS, SWAP
from ..trace_state import Traced


def _swapped(norm):
    """The norm of the other direction (one numpy does not know is left for numpy to refuse)."""
    return SWAP[NORMS[norm]] if norm in NORMS else norm


def _hfftn(x, s, axes, norm):
    """scipy's n-d hfft: the real spectrum of a Hermitian signal given by its half."""
    return np.fft.irfftn(np.conj(x), s, axes, norm=_swapped(norm))


def _ihfftn(x, s, axes, norm):
    """scipy's n-d ihfft: the half spectrum of a real signal, inverse of hfftn."""
    return np.conj(np.fft.rfftn(x, s, axes, norm=_swapped(norm)))


# scipy.fft's name -> the function of (x, n or s, axis or axes, norm) that records it
TRANSFORMS = {name: getattr(np.fft, name) for name in (
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
    "fftn", "ifftn", "rfftn", "irfftn")}
TRANSFORMS.update(hfft2=_hfftn, hfftn=_hfftn, ihfft2=_ihfftn, ihfftn=_ihfftn)
SIGNATURES = {name: inspect.signature(getattr(scipy.fft, name)) for name in TRANSFORMS}
REAL_INPUT = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
ONE_AXIS = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}
COMPLEX_ND = {"fft2", "ifft2", "fftn", "ifftn"}      # over no axis: the input, as in scipy
NO_PRIMITIVE = ("scipy.fft's DCTs, DSTs and fast Hankel transforms have no primitive in ad. Write "
                "the transform with np.fft (or scipy.fft's fft family), or make your function an "
                "@ad.primitive and give it a rule with @ad.rrule.")


def _ints(v):
    """scipy's ``s`` or ``axes``: an int stands for a 1-tuple."""
    return (v,) if isinstance(v, numbers.Number) else tuple(v)


def _transform(name: str, args: tuple, kwargs: dict):
    """scipy.fft's ``name`` on a traced array, as np.fft's transforms."""
    bound = SIGNATURES[name].bind(*args, **kwargs)
    bound.apply_defaults()
    x, size, axes, norm, _overwrite_x, _workers, plan = bound.arguments.values()
    if plan is not None:
        raise unsupported(f"scipy.fft.{name}(..., plan=...)", "scipy.fft uses no plans yet (scipy refuses "
                          "one too): drop plan=.")
    if name in REAL_INPUT and np.iscomplexobj(x):
        raise TypeError(f"scipy.fft.{name}: x must be a real sequence (scipy's transforms of real input "
                        f"refuse {x.dtype}); take the real part, or use the complex transform")
    if getattr(x, "dtype", None) == np.float16:
        x = x.astype(np.float32)      # scipy computes half precision in single
    if name not in ONE_AXIS:
        size = None if size is None else _ints(size)
        if axes is not None:
            axes = _ints(axes)
            if len({ax + np.ndim(x) if ax < 0 else ax for ax in axes}) < len(axes):
                raise ValueError(f"scipy.fft.{name}: all axes must be unique (got axes={axes})")
        if axes == () and name not in COMPLEX_ND:
            raise ValueError(f"scipy.fft.{name}: at least 1 axis must be transformed")
    return TRANSFORMS[name](x, size, axes, norm)


class Backend:
    """scipy.fft's backend for traced arrays (the module's docstring says what it takes)."""
    __ua_domain__ = "numpy.scipy.fft"

    @staticmethod
    def __ua_function__(method, args, kwargs):
        if not any(isinstance(v, Traced) for v in (*args, *kwargs.values())):
            return NotImplemented
        if method.__name__ not in TRANSFORMS:
            raise unsupported(f"scipy.fft.{method.__name__}", NO_PRIMITIVE)
        return _transform(method.__name__, args, kwargs)


def tracing() -> contextlib.AbstractContextManager:
    """``Backend`` first among scipy.fft's backends for the block (this thread only)."""
    return scipy.fft.set_backend(Backend)
