"""scipy.fft on traced arrays (ad.scipy.fft, scipy's own uarray dispatch): every transform scipy.fft
shares with np.fft records what np.fft records, so its gradients are np.fft's in every form;
hfft2/hfftn/ihfft2/ihfftn are scipy's definitions over them. Values and dtypes are scipy's,
gradients match finite differences, scipy's own arguments and conventions hold; the DCTs, DSTs and
FFTLog refuse, naming the user's line; scipy.fft on plain arrays never meets the backend."""
from __future__ import annotations

import subprocess
import sys
import zlib

import numpy as np
import pytest
import scipy.fft

import ad
from ad.checks.fd import dot_product_test, random_like
from ad.scipy.fft import Backend
from tests.support import ROOT

NORMS = (None, "backward", "ortho", "forward")
ONE = ({}, {"n": 3}, {"n": 6}, {"n": 5, "axis": 0}, {"axis": 0}, {"overwrite_x": True, "workers": 2})
TWO = ({}, {"s": (2, 5)}, {"s": (4, 6), "axes": (1, 0)}, {"axes": (0,)}, {"s": 5, "axes": 1},
       {"workers": -1})
ND = ({}, {"axes": (0, 2)}, {"s": (3, 5), "axes": (2, 0)}, {"s": (2, 2, 6), "axes": (0, 1, 2)},
      {"axes": -1}, {"s": (3, -1), "axes": (0, 2)})
# scipy.fft's function: (variants, input shape, the input kinds it takes)
BOTH, REAL = ("real", "complex"), ("real",)
FUNCTIONS = {
    "fft": (ONE, (3, 4), BOTH), "ifft": (ONE, (3, 4), BOTH), "rfft": (ONE, (3, 4), REAL),
    "irfft": (ONE, (3, 4), BOTH), "hfft": (ONE, (3, 4), BOTH), "ihfft": (ONE, (3, 4), REAL),
    "fft2": (TWO, (3, 4), BOTH), "ifft2": (TWO, (3, 4), BOTH), "rfft2": (TWO, (3, 4), REAL),
    "irfft2": (TWO, (3, 4), BOTH), "hfft2": (TWO, (3, 4), BOTH), "ihfft2": (TWO, (3, 4), REAL),
    "fftn": (ND, (2, 3, 4), BOTH), "ifftn": (ND, (2, 3, 4), BOTH), "rfftn": (ND, (2, 3, 4), REAL),
    "irfftn": (ND, (2, 3, 4), BOTH), "hfftn": (ND, (2, 3, 4), BOTH), "ihfftn": (ND, (2, 3, 4), REAL),
}
SCIPY_ONLY = {"hfft2", "hfftn", "ihfft2", "ihfftn"}    # np.fft has no n-d Hermitian transforms


def _id(*parts):
    return "-".join(str(p) for p in parts).replace(" ", "")


CASES = [pytest.param(name, kw, norm, kind, id=_id(name, kw, norm, kind))
         for name, (variants, _, kinds) in FUNCTIONS.items() for kw in variants for norm in NORMS for kind in kinds]


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _input(name, kind, rng):
    shape = FUNCTIONS[name][1]
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if kind == "complex" else x


def _fn(module, name, kw, norm):
    return lambda a: getattr(module, name)(a, **kw, norm=norm)


def _numpy_kw(kw):
    """The same call to np.fft: scipy's int for s or axes as a 1-tuple, no scipy-only arguments."""
    return {k: (v,) if k in ("s", "axes") and isinstance(v, int) else v for k, v in kw.items()
            if k not in ("overwrite_x", "workers")}


def _loss(f, w):
    """A real loss of one transform: the real pairing Re(sum(w * y))."""
    return lambda a: np.sum(np.real(f(a) * w))


# -- what is recorded and computed ---------------------------------------------------------------

@pytest.mark.parametrize("name, kw, norm, kind", [c for c in CASES if c.values[0] not in SCIPY_ONLY])
def test_records_what_np_fft_records(name, kw, norm, kind):
    x = _input(name, kind, _rng(name, kw, norm, kind))
    ours = ad.trace(_fn(scipy.fft, name, kw, norm), x)
    assert str(ours) == str(ad.trace(_fn(np.fft, name, _numpy_kw(kw), norm), x))
    assert [e.prim.name for e in ours.eqns] and all(e.prim.name in ("fftn", "rfftn", "irfftn", "conjugate")
                                                    for e in ours.eqns)


@pytest.mark.parametrize("name, axis", [("hfftn", 0), ("hfft2", 1), ("ihfftn", 2), ("ihfft2", -1)])
@pytest.mark.parametrize("norm", NORMS)
def test_hermitian_nd_transforms_over_one_axis_record_np_hfft(name, axis, norm):
    """scipy's n-d Hermitian transforms over one axis are numpy's 1-d ones (ad.lib.fft's own
    compositions): an independent check of their definition."""
    x = _input(name, "complex" if name.startswith("h") else "real", _rng(name, axis, norm))
    ours = ad.trace(lambda a: getattr(scipy.fft, name)(a, axes=(axis,), norm=norm), x)
    numpys = ad.trace(lambda a: getattr(np.fft, name[:-1])(a, axis=axis, norm=norm), x)
    assert str(ours) == str(numpys)


@pytest.mark.parametrize("single", [False, True], ids=["64", "32"])
@pytest.mark.parametrize("name, kw, norm, kind", CASES)
def test_values_and_dtypes_are_scipys(name, kw, norm, kind, single):
    x = _input(name, kind, _rng(name, kw, norm, kind, "values"))
    if single:
        x = x.astype(np.complex64 if kind == "complex" else np.float32)
    f = _fn(scipy.fft, name, kw, norm)
    expected = f(x.copy())      # overwrite_x=True may overwrite scipy's input
    got, _ = ad.vjp(f, x)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    tol = 1e-5 if single else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * np.max(np.abs(expected)))


# -- gradients -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kw, norm, kind", CASES)
def test_gradient_matches_finite_differences(name, kw, norm, kind):
    rng = _rng(name, kw, norm, kind, "fd")
    f = _fn(scipy.fft, name, kw, norm)
    x = _input(name, kind, rng)
    _, pullback = ad.vjp(f, x)
    for lhs, rhs, est in dot_product_test(f, pullback, [x], rng=rng, directions=2):
        assert est.converged, est.error
        assert abs(lhs - rhs) <= 1e-8 * max(1.0, abs(lhs)), (lhs, rhs)


@pytest.mark.parametrize("name, kw, norm, kind", CASES)
def test_gradient_is_np_ffts_in_every_form(name, kw, norm, kind):
    """The same gradient as np.fft's in the lifted, closure and compiled forms (scipy-only
    transforms: the three forms agree with each other)."""
    rng = _rng(name, kw, norm, kind, "forms")
    x = _input(name, kind, rng)
    f = _fn(scipy.fft, name, kw, norm)
    w = random_like(f(x), rng)
    reference = _fn(scipy.fft if name in SCIPY_ONLY else np.fft, name, _numpy_kw(kw), norm)
    expected = ad.grad(_loss(reference, w), form="closure")(x)
    assert expected.dtype == x.dtype and expected.shape == x.shape
    for form in ("lifted", "closure", "compiled"):
        np.testing.assert_allclose(ad.grad(_loss(f, w), form=form)(x), expected, rtol=1e-13, atol=1e-13,
                                   err_msg=form)


@pytest.mark.parametrize("name", ["fft", "rfft2", "irfftn", "hfft2", "ihfftn"])
def test_single_precision_gradients_stay_single(name):
    x = _input(name, "real", _rng(name, "single"))
    loss = lambda a: np.sum(np.abs(getattr(scipy.fft, name)(a, norm="ortho")) ** 2)    # noqa: E731
    expected = ad.grad(loss)(x)
    for form in ("lifted", "closure", "compiled"):
        g = ad.grad(loss, form=form)(x.astype(np.float32))
        assert g.dtype == np.float32, form
        np.testing.assert_allclose(g, expected, rtol=1e-4, atol=1e-4, err_msg=form)


@pytest.mark.parametrize("name", ["fft", "irfft", "hfft2", "irfftn"])
def test_half_precision_is_computed_in_single_as_scipy_does(name):
    """numpy keeps float16 where scipy computes in float32 (np.fft.irfft of float16 is float16)."""
    x = _input(name, "real", _rng(name, "half")).astype(np.float16)
    f = getattr(scipy.fft, name)
    y, pullback = ad.vjp(f, x)
    assert y.dtype == f(x).dtype and y.dtype in (np.float32, np.complex64)
    np.testing.assert_allclose(y, f(x), rtol=1e-6, atol=1e-6)
    w = random_like(y, _rng(name, "half-w")).astype(y.dtype)
    (g,) = pullback(w)
    assert g.dtype == np.float16
    expected = ad.vjp(f, x.astype(np.float32))[1](w)[0]
    np.testing.assert_allclose(g, expected.astype(np.float16), rtol=1e-3)


def test_second_derivatives_and_vmap():
    rng = _rng("hessian")
    x, v = _input("fft2", "real", rng), rng.standard_normal((3, 4))
    loss = lambda a: np.sum(np.abs(scipy.fft.hfft2(a * (1 + 0.5j), s=(3, 5))) ** 3)    # noqa: E731
    hv = np.tensordot(ad.hessian(loss)(x), v, axes=2)
    grad, h = ad.grad(loss, form="closure"), 1e-5
    np.testing.assert_allclose(hv, (grad(x + h * v) - grad(x - h * v)) / (2 * h), rtol=1e-6, atol=1e-6)
    batch = _input("fftn", "real", _rng("vmap"))
    per_example = ad.vmap(ad.grad(lambda a: np.sum(np.abs(scipy.fft.rfft(a, n=6)) ** 2)))(batch)
    for b, g in zip(batch, per_example):
        np.testing.assert_array_equal(g, ad.grad(lambda a: np.sum(np.abs(np.fft.rfft(a, n=6)) ** 2))(b))


# -- scipy's arguments and conventions -----------------------------------------------------------

def _raises(exc, f, x):
    with pytest.raises(exc) as info:
        ad.grad(f)(x)
    return info


@pytest.mark.parametrize("name", ["dct", "idct", "dctn", "idctn", "dst", "idst", "dstn", "idstn", "fht", "ifht"])
def test_transforms_without_a_primitive_refuse_at_the_users_line(name):
    x = np.linspace(0.5, 2.0, 8)
    args = {"fht": (0.1, 0.5), "ifht": (0.1, 0.5)}.get(name, ())
    info = _raises(ad.UnsupportedFunctionError, lambda a: np.sum(getattr(scipy.fft, name)(a, *args)), x)
    assert f"scipy.fft.{name} has no rule in ad" in str(info.value) and "np.fft" in str(info.value)
    assert info.value.location.startswith(__file__)
    assert "getattr(scipy.fft, name)(a, *args)" in str(info.value)      # the user's line, quoted


def test_scipys_refusals_hold_on_traced_arrays():
    x = _input("fftn", "real", _rng("refusals"))
    plan = _raises(ad.UnsupportedFunctionError, lambda a: np.sum(np.abs(scipy.fft.fft(a, plan=object()))), x)
    assert "plan=" in str(plan.value) and plan.value.location.startswith(__file__)
    for exc, match, f in (
            (ValueError, "all axes must be unique", lambda a: scipy.fft.fftn(a, axes=(1, -2))),
            (ValueError, "at least 1 axis", lambda a: scipy.fft.rfftn(a, axes=())),
            (TypeError, "x must be a real sequence", lambda a: scipy.fft.ihfft2(a * 1j)),
            (ValueError, "Invalid norm", lambda a: scipy.fft.hfftn(a, norm="unitary"))):
        with pytest.raises(exc):        # scipy's own refusal, on the plain array
            f(x)
        with pytest.raises(exc, match=match):
            ad.grad(lambda a: np.sum(np.abs(f(a))))(x)
    # a transform over no axis is the identity, as in scipy
    np.testing.assert_array_equal(ad.grad(lambda a: np.sum(scipy.fft.fftn(a, axes=()) * a))(x), 2 * x)


# -- plain arrays --------------------------------------------------------------------------------

def test_plain_arrays_never_meet_the_backend(monkeypatch):
    """Nothing is registered with scipy: outside a trace scipy.fft does not ask the backend; inside
    one it gives plain arrays back to scipy, whose numbers are the ones it computes outside."""
    x = _input("fftn", "complex", _rng("plain"))
    expected = [getattr(scipy.fft, name)(x.real if name in ("rfftn", "ihfftn") else x) for name in FUNCTIONS
                if FUNCTIONS[name][0] is ND]
    calls = []
    original = Backend.__ua_function__
    monkeypatch.setattr(Backend, "__ua_function__",
                        staticmethod(lambda *a: calls.append(a[0].__name__) or original(*a)))

    def f(t):
        inside = [getattr(scipy.fft, name)(x.real if name in ("rfftn", "ihfftn") else x) for name in FUNCTIONS
                  if FUNCTIONS[name][0] is ND]
        for got, want in zip(inside, expected):
            np.testing.assert_array_equal(got, want)
        return np.sum(np.abs(scipy.fft.fft(t)) ** 2)

    ad.grad(f)(x.real)
    assert calls == ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fft"]
    after = [getattr(scipy.fft, name)(x.real if name in ("rfftn", "ihfftn") else x) for name in FUNCTIONS
             if FUNCTIONS[name][0] is ND]
    assert len(calls) == 7      # none outside the trace
    for got, want in zip(after, expected):
        np.testing.assert_array_equal(got, want)


def test_scipy_stays_unimported_and_a_lazily_imported_scipy_fft_traces():
    """``import ad`` imports no scipy; a trace started after ``import scipy`` alone sets the backend,
    so ``scipy.fft``, first imported inside the traced function, traces too."""
    code = ("import sys, numpy as np, ad; assert 'scipy' not in sys.modules\n"
            "import scipy\n"
            "g = ad.grad(lambda x: np.sum(np.abs(scipy.fft.fft(x)) ** 2))(np.arange(3.0))\n"
            "assert np.allclose(g, 6 * np.arange(3.0)), g\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
