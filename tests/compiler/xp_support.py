"""What the tests of compiled array code share (tests/compiler/test_compile_xp*.py): the
namespaces they run on (CuPy marked ``gpu``, skipped with the reason when no CUDA device is
present), moving test arrays there and back, counting what leaves array_api_strict's second
device, and comparing with the numpy compile."""
from __future__ import annotations

import importlib
import warnings
import zlib

import array_api_strict as xps
import numpy as np
import pytest

import ad
from ad.compiler.array_api import namespace, to_host
from tests.support.cases import floats, leaves


def _cuda() -> str | None:
    """Why CuPy cannot run here (None: it can)."""
    try:
        cupy = importlib.import_module("cupy")
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no GPU: CUDA reports no device"
    except Exception as exc:  # noqa: BLE001  (an ImportError, or CUDA's error without a driver)
        return f"no GPU: cupy with a CUDA device is needed ({type(exc).__name__}: {exc})"
    return None


NO_GPU = _cuda()
DEVICE = xps.Device("device1")          # array_api_strict's second device: no host copy from it
CPU = xps.Device("CPU_DEVICE")
# the libraries the compiled code runs on, by their xp= shortcut
LIBRARIES = ("array_api_strict", "torch", "jax", "cupy")


def marks(library: str) -> list:
    """CuPy's tests need a GPU: marked, and skipped with the reason where there is none."""
    if library != "cupy":
        return []
    return [pytest.mark.gpu, pytest.mark.skipif(NO_GPU is not None, reason=str(NO_GPU))]


@pytest.fixture(autouse=True, scope="module")
def jax_float64():
    """JAX computes in float32 unless x64 is on (docs/arrays.md)."""
    import jax
    jax.config.update("jax_enable_x64", True)


def on(xp, arrays, device=None) -> list:
    """numpy arrays as arrays of ``xp`` (on ``device``, default: the library's)."""
    return [xp.asarray(np.asarray(a), device=device) if device is not None else xp.asarray(np.asarray(a))
            for a in arrays]


def tolerance(dtype) -> float:
    return 1e-12 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5


def assert_same_as_numpy(got, want, where: str) -> None:
    """Outputs of array code equal numpy's to rounding, with numpy's float dtypes and shapes
    (an index result may take the library's index dtype: JAX's searchsorted is int32)."""
    assert len(got) == len(want), where
    for g, w in zip(got, want):
        g, w = to_host(g) if hasattr(g, "shape") else np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (where, g.shape, w.shape)
        if w.dtype.kind in "fc":
            assert g.dtype == w.dtype, (where, g.dtype, w.dtype)
        else:
            assert g.dtype.kind == w.dtype.kind, (where, g.dtype, w.dtype)
        rtol = tolerance(w.dtype) if w.dtype.kind in "fc" else 0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True, err_msg=where)


def case_tape(case, gradient: bool):
    """A spec-table case's tape at its last shape set, and its inputs: the trace of the call,
    or the optimized gradient tape of a weighted sum of its float outputs (None if it has no
    float input)."""
    shape = case.sample.shapes[-1]
    rng = np.random.default_rng(zlib.crc32(f"{case.name} {shape}".encode()))
    xs = case.inputs(shape, rng)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if not gradient:
            return ad.trace(case.fn, *xs), xs
        argnums = floats(xs)
        if not argnums:
            return None, xs
        ws = [float(w) for w in rng.standard_normal(len(leaves(case.fn(*xs))))]

        def loss(*xs):
            outs = [y for y in leaves(case.fn(*xs)) if np.issubdtype(np.result_type(y), np.floating)]
            return sum(w * np.sum(y) for w, y in zip(ws, outs)) if outs else 0.0 * np.sum(xs[argnums[0]])
        return ad.optimize(ad.grad_tape(loss, *xs, argnums=argnums)), xs


def run_quietly(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


HOST_READS = ("__array__", "__dlpack__", "__float__", "__int__", "__bool__", "__index__", "__complex__",
              "to_device", "tolist")


@pytest.fixture
def transfers(monkeypatch):
    """Every conversion of an array_api_strict array that could leave its device, counted."""
    seen: list[str] = []
    strict_array = type(xps.asarray(0.0))
    for name in HOST_READS:
        method = getattr(strict_array, name, None)
        if method is not None:
            def counted(self, *args, _method=method, _name=name, **kwargs):
                seen.append(_name)
                return _method(self, *args, **kwargs)
            monkeypatch.setattr(strict_array, name, counted)
    return seen
