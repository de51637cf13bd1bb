"""np.fft: three primitives and every transform of numpy written with them.

* ``fftn`` (params ``s``, ``axes``, ``norm``, ``inverse``): the complex DFT over some axes, after
  numpy's zero padding / truncation of each axis to ``s``. fft, ifft, fft2, ifft2, fftn, ifftn.
* ``rfftn``: real input, the half spectrum (``s[-1] // 2 + 1`` bins along the last axis).
* ``irfftn``: a half spectrum to its real signal of sizes ``s``. rfft, irfft, rfft2, irfft2.
* hfft and ihfft are numpy's own compositions: ``irfft(conj(a))`` and ``conj(rfft(a))`` with the
  norm's direction swapped. fftshift / ifftshift are rolls (``ad.lib.numeric``); fftfreq and
  rfftfreq are plain Python over numpy and run on a traced ``d`` as they are.

The rules, in the convention of docs/complex.md (the pullback of a linear map is its plain
transpose). The DFT matrix is symmetric, so fftn's pullback is the same transform of the
cotangent, then the transpose of the resize to ``s``: the resize back to the input's sizes
(truncation and zero padding at the end transpose to each other). For the real transforms let
``w`` weigh the half spectrum's bins by how often they occur in the full one: 1 for the DC bin and
(for an even length) the Nyquist bin, 2 for the others. Then

* rfftn ``y = K F x`` (``K`` keeps the first bins): ``x_bar = Re(F^T K^T g)
  = irfftn(conj(g) / w)``, with the norm's direction swapped (irfftn rebuilds ``Re`` of the full
  inverse transform from the half spectrum, doubling every bin but DC and Nyquist);
* irfftn ``y = Re(F^-1 K^T (w c))``: ``c_bar = w * K conj(F g) = w * conj(rfftn(g))``, again with
  the norm's direction swapped; the imaginary parts of the DC and Nyquist bins, which numpy
  ignores, get a real cotangent (``rfftn`` of a real ``g`` is real there), so no gradient.

The pullbacks call np.fft on their arguments, so they lift into the backward tape and have
rules themselves (second derivatives).
"""
from __future__ import annotations

import numpy as np

from ..dispatch import implements, write_out
from ..primitives import Primitive
from ..batching.derived import shifted_axes
from ..rules import batch_rule, rrule
from ..samples import MATRIX, In, Sample
from .numeric import as_array
from .reductions import normalize_axis

NORMS = {None: "backward", "backward": "backward", "ortho": "ortho", "forward": "forward"}
SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}   # numpy's _swap_direction


def _norm(norm) -> str:
    if norm not in NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')
    return NORMS[norm]


def _cook(shape, s, axes, inverse_real: bool = False):
    """numpy's (s, axes) of an n-d transform: axes non-negative, every size an int (numpy 2:
    -1 is the input's size, None the 1-d default; the last size of an inverse real transform
    defaults to ``2 (m - 1)``)."""
    if axes is None:
        axes = range(len(shape)) if s is None else range(-len(s), 0)
    axes = tuple(normalize_axis(int(ax), len(shape))[0] for ax in axes)
    shapeless = s is None
    s = [shape[ax] for ax in axes] if shapeless else list(s)
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if inverse_real and axes and (shapeless or s[-1] is None):
        s[-1] = 2 * (shape[axes[-1]] - 1)
    s = [shape[ax] if n is None or n == -1 else int(n) for n, ax in zip(s, axes)]
    return tuple(s), axes


def resize(x, axes, sizes):
    """``x`` truncated or zero padded at the end of each of ``axes`` to ``sizes`` (numpy's
    ``n`` / ``s``): its own transpose maps the other way."""
    index, pad = [slice(None)] * np.ndim(x), [(0, 0)] * np.ndim(x)
    for ax, n in zip(axes, sizes):
        index[ax] = slice(0, n)
        pad[ax] = (0, max(n - np.shape(x)[ax], 0))
    if any(np.shape(x)[ax] > n for ax, n in zip(axes, sizes)):
        x = x[tuple(index)]
    return np.pad(x, pad) if any(after for _, after in pad) else x


def _weights(n: int, axis: int, ndim: int, dtype, dc_nyquist: float, others: float):
    """A constant over the half spectrum of length ``n`` along ``axis``: ``dc_nyquist`` at the DC
    bin (and the Nyquist bin of an even ``n``), ``others`` elsewhere."""
    w = np.full(n // 2 + 1, others, dtype=dtype)
    w[0] = dc_nyquist
    if n % 2 == 0:
        w[-1] = dc_nyquist
    return np.reshape(w, [-1 if i == axis else 1 for i in range(ndim)])


def _real_dtype(x):
    return np.finfo(np.result_type(x)).dtype


# -- primitives --------------------------------------------------------------------------------

def _fftn(a, s, axes, norm, inverse):
    return (np.fft.ifftn if inverse else np.fft.fftn)(a, s=s, axes=axes, norm=norm)


def _fftn_spelling(args, params) -> str:
    name = "ifftn" if params["inverse"] else "fftn"
    return f"np.fft.{name}({args[0]}, s={params['s']}, axes={params['axes']}, norm={params['norm']!r})"


# numpy's fftn, ifftn and irfftn over an array namespace (compiled array code): a real input is
# complex with no imaginary part, as numpy takes it (the standard's take complex input only)

def _complex_over(a, xp):
    if xp.isdtype(a.dtype, "complex floating"):
        return a
    return xp.astype(a, xp.complex64 if a.dtype == xp.float32 else xp.complex128)


def _fftn_over(a, *, s, axes, norm, inverse, xp):
    return (xp.fft.ifftn if inverse else xp.fft.fftn)(_complex_over(a, xp), s=s, axes=axes, norm=norm)


def _irfftn_over(a, *, s, axes, norm, xp):
    return xp.fft.irfftn(_complex_over(a, xp), s=s, axes=axes, norm=norm)


def _samples(*calls, real: bool = False):
    """One sample per (input shape, params): literal shapes, since s and axes depend on them;
    ``real``: the input stays real at complex dtypes (rfftn's)."""
    return tuple(Sample((In(shape, real=real),), params, MATRIX) for shape, params in calls)


fftn_p = Primitive(
    "fftn", _fftn, params=("s", "axes", "norm", "inverse"), function=np.fft.fftn, linear_in=(0,),
    complex_rule=True, spelling=_fftn_spelling, array_api_impl=_fftn_over,
    doc="The complex DFT (inverse: numpy's ifftn) over axes, after resizing them to s.",
    samples=_samples(((4,), dict(s=(4,), axes=(0,), norm="backward", inverse=False)),
                     ((3, 4), dict(s=(5, 3), axes=(0, 1), norm="ortho", inverse=False)),
                     ((3, 4), dict(s=(4,), axes=(1,), norm="forward", inverse=True)),
                     ((2, 3, 4), dict(s=(2, 6), axes=(0, 2), norm="backward", inverse=True))))
rfftn_p = Primitive(
    "rfftn", lambda a, s, axes, norm: np.fft.rfftn(a, s=s, axes=axes, norm=norm),
    params=("s", "axes", "norm"), function=np.fft.rfftn, linear_in=(0,), complex_rule=True,
    doc="The half spectrum of a real array (numpy's rfftn; it refuses complex input).",
    samples=_samples(((5,), dict(s=(5,), axes=(0,), norm="backward")),
                     ((3, 4), dict(s=(3, 4), axes=(0, 1), norm="ortho")),
                     ((3, 4), dict(s=(4, 6), axes=(0, 1), norm="forward")),
                     ((3, 5), dict(s=(4,), axes=(1,), norm="backward")), real=True))
irfftn_p = Primitive(
    "irfftn", lambda a, s, axes, norm: np.fft.irfftn(a, s=s, axes=axes, norm=norm),
    params=("s", "axes", "norm"), function=np.fft.irfftn, linear_in=(0,), complex_rule=True,
    array_api_impl=_irfftn_over,
    doc="The real signal of sizes s of a half spectrum (numpy's irfftn).",
    samples=_samples(((3,), dict(s=(4,), axes=(0,), norm="backward")),
                     ((3,), dict(s=(5,), axes=(0,), norm="ortho")),
                     ((3, 4), dict(s=(3, 6), axes=(0, 1), norm="forward")),
                     ((3, 4), dict(s=(2, 4), axes=(0, 1), norm="ortho")),
                     ((4, 3), dict(s=(8,), axes=(0,), norm="backward"))))


# -- rules -------------------------------------------------------------------------------------

@rrule(fftn_p)
def _fftn_rule(a, s, axes, norm, inverse):
    """The DFT matrix is symmetric: transform the cotangent alike, then undo the resize."""
    def pullback(g):
        back = (np.fft.ifftn if inverse else np.fft.fftn)(g, axes=axes, norm=norm)
        return (resize(back, axes, [np.shape(a)[ax] for ax in axes]),)
    return fftn_p.bind(a, s=s, axes=axes, norm=norm, inverse=inverse), pullback


@rrule(rfftn_p)
def _rfftn_rule(a, s, axes, norm):
    """x_bar = Re(F^T K^T g) = irfftn(conj(g) / w), a real cotangent (module docstring)."""
    def pullback(g):
        half = _weights(s[-1], axes[-1], np.ndim(g), _real_dtype(g), 1.0, 0.5)
        x = np.fft.irfftn(np.conj(g) * half, s=s, axes=axes, norm=SWAP[norm])
        return (resize(x, axes, [np.shape(a)[ax] for ax in axes]),)
    return rfftn_p.bind(a, s=s, axes=axes, norm=norm), pullback


@rrule(irfftn_p)
def _irfftn_rule(a, s, axes, norm):
    """c_bar = w * conj(rfftn(g)): numpy's irfftn reads each bin but DC and Nyquist twice."""
    def pullback(g):
        spectrum = np.conj(np.fft.rfftn(g, axes=axes, norm=SWAP[norm]))
        double = _weights(s[-1], axes[-1], np.ndim(g), _real_dtype(g), 1.0, 2.0)
        return (resize(spectrum * double, axes, [np.shape(a)[ax] for ax in axes]),)
    return irfftn_p.bind(a, s=s, axes=axes, norm=norm), pullback


for _prim in (fftn_p, rfftn_p, irfftn_p):
    batch_rule(_prim)(shifted_axes(_prim, "axes", none_is_all=False))


# -- numpy's functions -------------------------------------------------------------------------

def _complex(a, s, axes, norm, inverse):
    if len(set(axes)) < len(axes):     # numpy transforms a repeated axis again, last one first
        for n, ax in reversed(list(zip(s, axes))):
            a = fftn_p.bind(a, s=(n,), axes=(ax,), norm=norm, inverse=inverse)
        return a
    return fftn_p.bind(a, s=s, axes=axes, norm=norm, inverse=inverse) if axes else a


def _real(a, s, axes, norm):
    if len(set(axes)) < len(axes):     # numpy's order: rfft of the last axis, then the others
        return _complex(rfftn_p.bind(a, s=s[-1:], axes=axes[-1:], norm=norm), s[:-1], axes[:-1], norm, False)
    return rfftn_p.bind(a, s=s, axes=axes, norm=norm)


def _inverse_real(a, s, axes, norm):
    if len(set(axes)) < len(axes):     # numpy's order: ifft of the other axes, first one first
        for n, ax in zip(s[:-1], axes[:-1]):
            a = fftn_p.bind(a, s=(n,), axes=(ax,), norm=norm, inverse=True)
        return irfftn_p.bind(a, s=s[-1:], axes=axes[-1:], norm=norm)
    return irfftn_p.bind(a, s=s, axes=axes, norm=norm)


def _finish(result, out, name):
    return result if out is None else write_out(out, result, f"np.fft.{name}")


def _nd(name, transform, default_axes=None, **kind):
    """The handler of an n-d transform (fftn, ifft2...), numpy's signature."""
    def handler(a, s=None, axes=default_axes, norm=None, out=None):
        a = as_array(a)
        s, axes = _cook(np.shape(a), s, axes, inverse_real=transform is _inverse_real)
        return _finish(transform(a, s, axes, _norm(norm), **kind), out, name)
    handler.__name__ = name
    return handler


def _one(name, transform, **kind):
    """The handler of a 1-d transform (fft, irfft...): an n-d one over one axis."""
    def handler(a, n=None, axis=-1, norm=None, out=None):
        a = as_array(a)
        s, axes = _cook(np.shape(a), None if n is None else (n,), (axis,),
                        inverse_real=transform is _inverse_real)
        return _finish(transform(a, s, axes, _norm(norm), **kind), out, name)
    handler.__name__ = name
    return handler


implements(np.fft.fft)(_one("fft", _complex, inverse=False))
implements(np.fft.ifft)(_one("ifft", _complex, inverse=True))
implements(np.fft.rfft)(_one("rfft", _real))
implements(np.fft.irfft)(_one("irfft", _inverse_real))
implements(np.fft.fftn)(_nd("fftn", _complex, inverse=False))
implements(np.fft.ifftn)(_nd("ifftn", _complex, inverse=True))
implements(np.fft.rfftn)(_nd("rfftn", _real))
implements(np.fft.irfftn)(_nd("irfftn", _inverse_real))
implements(np.fft.fft2)(_nd("fft2", _complex, (-2, -1), inverse=False))
implements(np.fft.ifft2)(_nd("ifft2", _complex, (-2, -1), inverse=True))
implements(np.fft.rfft2)(_nd("rfft2", _real, (-2, -1)))
implements(np.fft.irfft2)(_nd("irfft2", _inverse_real, (-2, -1)))


@implements(np.fft.hfft)
def _hfft(a, n=None, axis=-1, norm=None, out=None):
    """numpy's definition: the real spectrum of a Hermitian signal given by its first half."""
    result = np.fft.irfft(np.conj(as_array(a)), n, axis, norm=SWAP[_norm(norm)])
    return _finish(result, out, "hfft")


@implements(np.fft.ihfft)
def _ihfft(a, n=None, axis=-1, norm=None, out=None):
    """numpy's definition: the inverse of hfft, for a real signal."""
    result = np.conj(np.fft.rfft(as_array(a), n, axis, norm=SWAP[_norm(norm)]))
    return _finish(result, out, "ihfft")
