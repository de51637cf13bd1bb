"""np.fft (issue 14): every transform at several n / s, axes and every norm. The traced values and
dtypes are numpy's; gradients match finite differences along random complex directions, agree in
the closure, lifted and compiled forms, keep float32 / complex64, have second derivatives, and
equal HIPS autograd's (where autograd's rules are right) and PyTorch's after conjugation (PyTorch's
gradient of a complex input is the conjugate of ours, docs/complex.md)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import directional_derivative, dot_product_test, pair, random_like, refined
from ad.lib.fft import fftn_p, irfftn_p, rfftn_p
from tests.support.needs import module

NORMS = (None, "backward", "ortho", "forward")
ONE = ({}, {"n": 3}, {"n": 6}, {"n": 5, "axis": 0}, {"axis": 0})
TWO = ({}, {"s": (2, 5)}, {"s": (4, 6), "axes": (1, 0)}, {"axes": (0,)})
ND = ({}, {"axes": (0, 2)}, {"s": (3, 5), "axes": (2, 0)}, {"s": (2, 2, 6), "axes": (0, 1, 2)}, {"axes": (2, 2)})
# function: (variants, input shape, input is complex)
FUNCTIONS = {
    "fft": (ONE, (3, 4), True), "ifft": (ONE, (3, 4), True), "rfft": (ONE, (3, 4), False),
    "irfft": (ONE, (3, 4), True), "hfft": (ONE, (3, 4), True), "ihfft": (ONE, (3, 4), False),
    "fft2": (TWO, (3, 4), True), "ifft2": (TWO, (3, 4), True), "rfft2": (TWO, (3, 4), False),
    "irfft2": (TWO, (3, 4), True),
    "fftn": (ND, (2, 3, 4), True), "ifftn": (ND, (2, 3, 4), True), "rfftn": (ND, (2, 3, 4), False),
    "irfftn": (ND, (2, 3, 4), True),
}
CALLS = [(name, kw) for name, (variants, _, _) in FUNCTIONS.items() for kw in variants]


def _id(name, kw, norm=None):
    return name + "".join(f"-{k}{v}" for k, v in kw.items()).replace(" ", "") + f"-{norm}"


CASES = [pytest.param(name, kw, norm, id=_id(name, kw, norm)) for name, kw in CALLS for norm in NORMS]


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _input(name, rng, single=False):
    _, shape, is_complex = FUNCTIONS[name]
    x = rng.standard_normal(shape)
    if is_complex:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype({np.float64: np.float32, np.complex128: np.complex64}[x.dtype.type]) if single else x


def _fn(xp_fft, name, kw, norm):
    return lambda a: getattr(xp_fft, name)(a, **kw, norm=norm)


def _weights(y, rng):
    return random_like(y, rng).astype(np.result_type(y))


def _loss(f, w):
    """A real loss of one transform: the real pairing Re(sum(w * y))."""
    return lambda a: np.sum(np.real(f(a) * w))


# -- values --------------------------------------------------------------------------------------

@pytest.mark.parametrize("single", [False, True], ids=["64", "32"])
@pytest.mark.parametrize("name, kw, norm", CASES)
def test_values_and_dtypes_are_numpys(name, kw, norm, single):
    x = _input(name, _rng(name, kw, norm), single)
    f = _fn(np.fft, name, kw, norm)
    expected = f(x)
    y, _ = ad.vjp(f, x)
    rerun = ad.trace(f, x)(x)
    for got in (y, rerun):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


# -- first derivatives ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, kw, norm", CASES)
def test_gradient_matches_finite_differences(name, kw, norm):
    rng = _rng(name, kw, norm, "fd")
    x = _input(name, rng)
    f = _fn(np.fft, name, kw, norm)
    y, pullback = ad.vjp(f, x)
    for lhs, rhs, est in dot_product_test(f, pullback, [x], rng=rng, directions=3):
        assert est.converged, est.error
        assert abs(lhs - rhs) <= 1e-8 * max(1.0, abs(lhs)), (lhs, rhs)


@pytest.mark.parametrize("name, kw, norm", CASES)
def test_forms_agree(name, kw, norm):
    """closure, lifted (with and without the passes) and compiled give the same gradient."""
    rng = _rng(name, kw, norm, "forms")
    x = _input(name, rng)
    f = _fn(np.fft, name, kw, norm)
    loss = _loss(f, _weights(f(x), rng))
    ref = ad.grad(loss, form="closure")(x)
    assert ref.dtype == x.dtype and ref.shape == x.shape
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(loss, form=form, optimize=optimize)(x)
        assert got.dtype == ref.dtype
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")


@pytest.mark.parametrize("name, kw", [pytest.param(n, kw, id=_id(n, kw, "ortho")) for n, kw in CALLS])
def test_single_precision(name, kw):
    """float32 / complex64 in: complex64 / float32 values, gradients of the input's dtype."""
    rng = _rng(name, kw, "single")
    x = _input(name, rng)
    f = _fn(np.fft, name, kw, "ortho")
    w = _weights(f(x), rng)
    g64 = ad.grad(_loss(f, w))(x)
    x32 = x.astype(np.complex64 if np.iscomplexobj(x) else np.float32)
    w32 = w.astype(np.complex64 if np.iscomplexobj(w) else np.float32)
    for form in ("closure", "lifted", "compiled"):
        g32 = ad.grad(_loss(f, w32), form=form)(x32)
        assert g32.dtype == x32.dtype, form
        np.testing.assert_allclose(g32, g64, rtol=1e-4, atol=1e-4, err_msg=form)


# -- the oracles ---------------------------------------------------------------------------------

anp = module("autograd.numpy")
autograd = module("autograd")
torch = module("torch")


def _autograd_supports(name, kw, norm):
    """autograd's fft rules refuse repeated axes and odd real lengths; its real transforms scale
    the gradient right for norm=None and "ortho" only (make_rfft_factors divides by N only when
    norm is None: a wrong gradient for "backward" and "forward", shown below); it has no rule for
    hfft / ihfft."""
    axes = kw.get("axes", ())
    if name in ("hfft", "ihfft") or len(set(axes)) < len(axes):
        return False
    if "rfft" in name:
        x = _input(name, _rng(0))
        last = _sizes(name, kw, x)[-1] if name.startswith("rfft") or "s" in kw or "n" in kw else \
            2 * (x.shape[_axes(name, kw, x)[-1]] - 1)
        return last % 2 == 0 and norm in (None, "ortho")
    return True


def _autograd_fn(name, kw, norm):
    """autograd reads a 1-d transform's n only when it is passed by position (its get_fft_args
    names it d: rfft(a, n=6) gets the gradient of rfft(a))."""
    if FUNCTIONS[name][0] is ONE:
        return lambda a: getattr(anp.fft, name)(a, kw.get("n"), kw.get("axis", -1), norm)
    return _fn(anp.fft, name, kw, norm)


def _axes(name, kw, x):
    if "axis" in kw:
        return (kw["axis"] % x.ndim,)
    if "axes" in kw:
        return tuple(a % x.ndim for a in kw["axes"])
    variants = FUNCTIONS[name][0]
    return (x.ndim - 1,) if variants is ONE else (x.ndim - 2, x.ndim - 1) if variants is TWO else tuple(range(x.ndim))


def _sizes(name, kw, x):
    axes = _axes(name, kw, x)
    if "n" in kw:
        return (kw["n"],)
    return tuple(kw["s"]) if "s" in kw else tuple(x.shape[a] for a in axes)


@pytest.mark.parametrize("name, kw, norm", [p for p in CASES if _autograd_supports(*p.values)])
def test_gradient_equals_autograds(name, kw, norm):
    rng = _rng(name, kw, norm, "autograd")
    x = _input(name, rng)
    w = _weights(_fn(np.fft, name, kw, norm)(x), rng)
    expected = autograd.grad(lambda a: anp.sum(anp.real(_autograd_fn(name, kw, norm)(a) * w)))(x)
    got = ad.grad(_loss(_fn(np.fft, name, kw, norm), w))(x)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_autograds_real_transforms_are_wrong_for_explicit_norms():
    """What the skip above is for: autograd's rfft gradient with norm="backward" is N times too
    small (ours matches finite differences, test_gradient_matches_finite_differences)."""
    x = _input("rfft", _rng("ag-norm"))
    w = _weights(np.fft.rfft(x), _rng("ag-norm-w"))
    theirs = autograd.grad(lambda a: anp.sum(anp.real(anp.fft.rfft(a, norm="backward") * w)))(x)
    ours = ad.grad(lambda a: np.sum(np.real(np.fft.rfft(a, norm="backward") * w)))(x)
    np.testing.assert_allclose(theirs * x.shape[-1], ours, rtol=1e-10)


def _torch_kwargs(kw):
    names = {"n": "n", "s": "s", "axis": "dim", "axes": "dim"}
    return {names[k]: v for k, v in kw.items()}


@pytest.mark.parametrize("name, kw, norm", [p for p in CASES if len(set(p.values[1].get("axes", ()))) ==
                                             len(p.values[1].get("axes", ()))])
def test_gradient_equals_torchs_conjugated(name, kw, norm):
    """PyTorch's gradient is df/dx + i df/dy: the conjugate of ours for complex inputs."""
    rng = _rng(name, kw, norm, "torch")
    x = _input(name, rng)
    w = _weights(_fn(np.fft, name, kw, norm)(x), rng)
    xt = torch.tensor(x, requires_grad=True)
    yt = getattr(torch.fft, name)(xt, **_torch_kwargs(kw), norm=norm)
    np.testing.assert_allclose(yt.detach().resolve_conj().numpy(), _fn(np.fft, name, kw, norm)(x), rtol=1e-12, atol=1e-12)
    torch.sum(torch.real(yt * torch.tensor(w))).backward()
    got = ad.grad(_loss(_fn(np.fft, name, kw, norm), w))(x)
    np.testing.assert_allclose(got, np.conj(xt.grad.resolve_conj().numpy()), rtol=1e-10, atol=1e-10)


# -- the real transforms' special bins ---------------------------------------------------------

@pytest.mark.parametrize("n", [6, 7])
def test_irfft_gives_no_gradient_to_what_numpy_ignores(n):
    """irfft reads only the real part of the DC bin (and of the Nyquist bin for an even n): the
    gradient's imaginary part is 0 there (g = dL/dx - i dL/dy, and L does not depend on y)."""
    c = _input("irfft", _rng("dc", n))[0]
    g = ad.grad(lambda c: np.sum(np.fft.irfft(c, n) ** 3))(c)
    assert g[0].imag == 0
    if n % 2 == 0:
        assert g[n // 2].imag == 0
    assert np.all(g[1:(n + 1) // 2].imag != 0)


def test_rfft_gives_a_real_gradient():
    x = _input("rfft", _rng("real"))
    g = ad.grad(lambda x: np.sum(np.abs(np.fft.rfft(x, 5)) ** 2))(x)
    assert g.dtype == np.float64


# -- second order --------------------------------------------------------------------------------

SECOND = [("fft", {}), ("ifft", {"n": 6}), ("fft2", {"s": (2, 5)}), ("fftn", {"axes": (0, 2)}),
          ("rfft", {"n": 5}), ("rfft", {}), ("irfft", {}), ("irfft", {"n": 7}), ("hfft", {}), ("ihfft", {"n": 5}),
          ("rfftn", {"s": (3, 5), "axes": (2, 0)}), ("irfftn", {}), ("irfft2", {"s": (2, 5)})]


@pytest.mark.parametrize("power", [2, 3])
@pytest.mark.parametrize("name, kw", [pytest.param(n, kw, id=_id(n, kw, "ortho")) for n, kw in SECOND])
def test_second_order(name, kw, power):
    """grad of <grad L, v> for L = sum(c |f(x)|^power): finite differences of grad L along u."""
    rng = _rng(name, kw, power, "second")
    x = _input(name, rng)
    f = _fn(np.fft, name, kw, "ortho")
    c = rng.uniform(0.5, 1.5, np.shape(f(x)))

    def loss(a):
        return np.sum(c * np.abs(f(a)) ** power)
    grad = ad.grad(loss)
    v, u = random_like(x, rng), random_like(x, rng)
    est = refined(directional_derivative, lambda a: pair(grad(a), v), [x], [u])
    assert est.converged
    for form in ("closure", "lifted", "compiled"):
        hv = ad.grad(lambda a: np.sum(np.real(ad.grad(loss, form=form)(a) * v)), form=form)(x)
        assert hv.dtype == x.dtype
        assert abs(pair(hv, u) - est.value[0]) <= 1e-7 * max(1.0, abs(est.value[0])), form


# -- the backward tape ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, prim", [("fft", fftn_p), ("ifft", fftn_p), ("rfft", irfftn_p),
                                        ("irfft", rfftn_p), ("hfft", rfftn_p), ("ihfft", irfftn_p)])
def test_the_lifted_backward_tape_holds_fft_equations(name, prim):
    """The pullbacks are np.fft calls on tracers: transforms in the backward tape, no fallback."""
    x = _input(name, _rng(name, "tape"))[0]
    gt = ad.grad_tape(lambda a: np.sum(np.abs(getattr(np.fft, name)(a, norm="ortho")) ** 2), x)
    print(gt.backward)
    assert not gt.fallbacks
    assert prim in {e.prim for e in gt.backward.eqns}


# -- the rest of np.fft --------------------------------------------------------------------------

@pytest.mark.parametrize("shift", [np.fft.fftshift, np.fft.ifftshift])
def test_shifts_of_complex_arrays(shift):
    """A shift is a roll: its transpose is the opposite roll."""
    z = _input("fft", _rng("shift"))
    w = _weights(z, _rng("shift-w"))
    got = ad.grad(lambda z: np.sum(np.real(shift(z, axes=1) * w)))(z)
    other = np.fft.ifftshift if shift is np.fft.fftshift else np.fft.fftshift
    np.testing.assert_allclose(got, other(w, axes=1))


@pytest.mark.parametrize("freq", [np.fft.fftfreq, np.fft.rfftfreq])
def test_frequencies_of_a_traced_spacing(freq):
    """fftfreq / rfftfreq are constants over 1 / (n d): numpy's own code runs on a traced d."""
    w = _rng("freq").standard_normal(np.shape(freq(7)))
    for form in ("closure", "lifted", "compiled"):
        got = ad.grad(lambda d: np.sum(freq(7, d) * w), form=form)(0.25)
        np.testing.assert_allclose(got, -np.sum(freq(7, 0.25) * w) / 0.25, rtol=1e-14)


def test_out_writes_a_traced_buffer():
    x = _input("fft", _rng("out"))

    def loss(a):
        buf = np.zeros(a.shape, dtype=complex, like=a)
        np.fft.fft(a, out=buf)
        return np.sum(np.abs(buf) ** 2)
    np.testing.assert_allclose(ad.grad(loss)(x), 2 * 4 * np.conj(x))


def test_numpys_refusals_stay():
    z = _input("fft", _rng("refuse"))
    with pytest.raises(TypeError):        # numpy's rfft takes real input only
        ad.grad(lambda z: np.sum(np.abs(np.fft.rfft(z))))(z)
    with pytest.raises(ValueError, match="Invalid norm value"):
        ad.grad(lambda z: np.sum(np.abs(np.fft.fft(z, norm="unitary"))))(z)
    with pytest.raises(ValueError):
        ad.grad(lambda z: np.sum(np.abs(np.fft.fft(z, n=0))))(z)


@pytest.mark.parametrize("name, kw", [("fft", {"n": 6}), ("ifft2", {}), ("fftn", {"axes": (0, 2)}),
                                      ("irfft", {}), ("hfft", {"n": 5}), ("irfftn", {"s": (2, 2, 6), "axes": (0, 1, 2)})])
def test_real_input_to_a_complex_input_transform(name, kw):
    """A real x gets a real gradient (the driver projects), equal to PyTorch's."""
    rng = _rng(name, kw, "real input")
    x = rng.standard_normal(FUNCTIONS[name][1])
    f = _fn(np.fft, name, kw, "ortho")
    y, pullback = ad.vjp(f, x)
    for lhs, rhs, est in dot_product_test(f, pullback, [x], rng=rng):
        assert est.converged and abs(lhs - rhs) <= 1e-8 * max(1.0, abs(lhs)), (lhs, rhs)
    w = _weights(y, rng)
    got = ad.grad(_loss(f, w))(x)
    xt = torch.tensor(x, requires_grad=True)
    torch.sum(torch.real(getattr(torch.fft, name)(xt, **_torch_kwargs(kw), norm="ortho") * torch.tensor(w))).backward()
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-10, atol=1e-10)
