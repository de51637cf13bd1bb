"""Signal processing ops: DFT and STFT through ``np.fft`` (ad's fft primitives, so they
differentiate), the window functions and the mel filter bank (constants of their sizes).

ONNX writes a complex tensor as a real one with a last axis of 2 (real, imaginary); a real
signal has a last axis of 1.
"""
from __future__ import annotations

import math

import numpy as np

from .files import dtype_of
from .nodes import op, resolve_axis


def _signal(n, x):
    """The complex (or real) signal an ONNX tensor (..., 1 or 2) holds."""
    parts = np.shape(x)[-1]
    if parts == 1:
        return x[..., 0]
    if parts == 2:
        return x[..., 0] + 1j * x[..., 1]
    raise n.error(f"the last axis holds {parts} values: 1 (real) or 2 (real, imaginary)")


def _pairs(y, dtype):
    """A complex result as ONNX writes it, (..., 2), in ``dtype``."""
    return np.stack([np.real(y), np.imag(y)], axis=-1).astype(dtype)


def _spectrum(signal, length: int, axis: int, onesided: bool):
    """The DFT of ``length`` points along ``axis`` (zero-padded or cut), the first
    ``length // 2 + 1`` bins if ``onesided`` (rfft for a real signal: the same values)."""
    if onesided and not np.iscomplexobj(signal):
        return np.fft.rfft(signal, n=length, axis=axis)
    y = np.fft.fft(signal, n=length, axis=axis)
    return np.take(y, np.arange(length // 2 + 1), axis=axis) if onesided else y


@op("DFT", since=17)
def _dft(n, x, dft_length=None, axis=None):
    """The discrete Fourier transform along one axis, or its inverse (``inverse``; with
    ``onesided``, from half a spectrum to a real signal)."""
    inverse, onesided = n.attr("inverse", 0), n.attr("onesided", 0)
    axis = n.attr("axis", 1) if n.opset < 20 else (-2 if axis is None else n.ints(axis, "axis")[0])
    axis = resolve_axis(axis, np.ndim(x))
    if axis >= np.ndim(x) - 1:
        raise n.error(f"axis {axis} is the (real, imaginary) axis of a rank-{np.ndim(x)} input")
    size = np.shape(x)[axis]
    if dft_length is not None:
        length = n.ints(dft_length, "dft_length")[0]
    else:
        length = 2 * (size - 1) if inverse and onesided else size
    out = list(np.shape(x))
    out[axis] = length // 2 + 1 if onesided and not inverse else length
    out[-1] = 1 if inverse and onesided else 2
    n.check_size(out, "output", np.result_type(x))
    signal = _signal(n, x)
    dt = np.result_type(x)
    if inverse and onesided:
        return np.fft.irfft(signal, n=length, axis=axis)[..., None].astype(dt)
    if inverse:
        return _pairs(np.fft.ifft(signal, n=length, axis=axis), dt)
    return _pairs(_spectrum(signal, length, axis, onesided), dt)


@op("STFT", since=17)
def _stft(n, x, frame_step, window=None, frame_length=None):
    """Frames of ``frame_length`` every ``frame_step`` samples, each multiplied by the window and
    transformed: (batch, frames, bins, 2)."""
    step = n.ints(frame_step, "frame_step")[0]
    if frame_length is not None:
        length = n.ints(frame_length, "frame_length")[0]
    else:
        length = np.shape(window)[0] if window is not None else np.shape(x)[1]
    if window is not None and np.shape(window) != (length,):
        raise n.error(f"the window has shape {np.shape(window)} for frames of {length}")
    onesided = n.attr("onesided", 1)
    if step < 1 or not 0 < length <= np.shape(x)[1]:
        raise n.error(f"frames of {length} every {step} samples do not fit a signal of {np.shape(x)[1]}")
    frames = 1 + (np.shape(x)[1] - length) // step
    bins = length // 2 + 1 if onesided else length
    n.check_size((np.shape(x)[0], frames, bins, 2), "output", np.result_type(x))
    n.check_size((np.shape(x)[0], frames, length, np.shape(x)[2]), "frames", np.result_type(x))
    framed = np.take(x, np.arange(frames)[:, None] * step + np.arange(length), axis=1)   # (B, frames, length, 1|2)
    if window is not None:
        framed = framed * np.reshape(window, (1, 1, length, 1))
    return _pairs(_spectrum(_signal(n, framed), length, -1, onesided), np.result_type(x))


#: the windows as functions of the phase 2 pi n / N
_WINDOWS = {"HannWindow": lambda t: 0.5 - 0.5 * np.cos(t),
            "HammingWindow": lambda t: 25 / 46 - 21 / 46 * np.cos(t),
            "BlackmanWindow": lambda t: 0.42 - 0.5 * np.cos(t) + 0.08 * np.cos(2 * t)}


def _window(f):
    def run(n, size):
        size = n.ints(size, "size")[0]
        dtype = dtype_of(n.attr("output_datatype", 1), f"node {n.name!r} output_datatype")
        n.check_size((size,), "output", dtype)
        period = size if n.attr("periodic", 1) else size - 1
        return f(2 * np.pi * np.arange(size) / max(period, 1)).astype(dtype)
    return run


for _name, _f in _WINDOWS.items():
    op(_name, since=17)(_window(_f))


@op("MelWeightMatrix", since=17, static=(0, 1, 2, 3, 4))
def _mel_weight_matrix(n, num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    """The triangular mel filter bank, (dft_length // 2 + 1, num_mel_bins): a constant."""
    mels, length, rate = (n.ints(v, w)[0] for v, w in ((num_mel_bins, "num_mel_bins"), (dft_length, "dft_length"),
                                                       (sample_rate, "sample_rate")))
    lo, hi = (float(n.static(v, w).reshape(-1)[0]) for v, w in ((lower_edge_hertz, "lower_edge_hertz"),
                                                                 (upper_edge_hertz, "upper_edge_hertz")))
    dtype = dtype_of(n.attr("output_datatype", 1), f"node {n.name!r} output_datatype")
    bins = length // 2 + 1
    n.check_size((bins, mels), "output", dtype)
    low_mel, high_mel = (2595 * math.log10(1 + hz / 700) for hz in (lo, hi))
    mel = np.arange(mels + 2) * ((high_mel - low_mel) / (mels + 2)) + low_mel     # ONNX divides by mels + 2
    points = np.floor((length + 1) * (700 * (10 ** (mel / 2595) - 1)) / rate).astype(np.int64)
    lower, center, upper = points[:-2], points[1:-1], points[2:]
    j = np.arange(bins)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        rising = np.where(center > lower, (j - lower) / (center - lower), 1.0)
        falling = (upper - j) / (upper - center)
    weights = np.where((j >= lower) & (j <= center), rising, 0.0)
    weights = np.where((j >= center) & (j < upper), falling, weights)
    return weights.astype(dtype)
