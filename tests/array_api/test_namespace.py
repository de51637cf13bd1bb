"""ad's namespace of traced values (ad/lib/array_api.py) as the array API standard and
array_api_compat see it: how it is found, which names it holds (array_api_strict's, the
standard's reference), the array object's attributes on a tracer, the functions it writes itself
(asarray, sort/argsort descending, unique_*) against numpy and array_api_strict, the arrays it
creates inside a trace, and what it refuses, naming the function and the user's line."""
import numpy as np
import pytest

import ad
from ad.lib.array_api import NAMESPACE
from tests.support.needs import module

array_api_compat = module("array_api_compat")
strict = module("array_api_strict")

X = np.random.default_rng(0).standard_normal((3, 4))


def _line(text):
    """``file:line`` of the one line of this file holding ``text`` (other than the asking one), as
    errors name the user's line."""
    lines = [k for k, line in enumerate(open(__file__).read().splitlines(), 1)
             if text in line and "_line(" not in line]
    assert len(lines) == 1, lines
    return f"{__file__}:{lines[0]}"


def _inside(f, *args):
    """What ``f`` returns when called with traced ``args`` (inside ad.trace), taken out as a list."""
    seen = []
    ad.trace(lambda *xs: seen.append(f(*xs)) or xs[0], *args)
    return seen[0]


# -- finding it ---------------------------------------------------------------------------------

def test_a_tracer_array_api_compat_and_several_tracers_find_the_same_namespace():
    def f(x, y):
        assert x.__array_namespace__() is NAMESPACE
        assert array_api_compat.array_namespace(x) is NAMESPACE
        assert array_api_compat.array_namespace(x, y, 2.0, None) is NAMESPACE     # scalars are skipped
        assert array_api_compat.is_array_api_obj(x) and array_api_compat.device(x) == "cpu"
        return NAMESPACE.sum(x * y)
    np.testing.assert_allclose(ad.grad(f)(X, 2.0 * X), 2.0 * X, rtol=1e-15)


def test_the_versions_of_the_standard_are_numpys():
    for version in ("2021.12", "2022.12", "2023.12", "2024.12", None):
        assert _inside(lambda t: t.__array_namespace__(api_version=version), X) is NAMESPACE
        assert np.ones(1).__array_namespace__(api_version=version) is np
    assert NAMESPACE.__array_api_version__ == np.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match=r"2021.12, 2022.12, 2023.12, 2024.12 .* not '2025.12'"):
        _inside(lambda t: t.__array_namespace__(api_version="2025.12"), X)
    with pytest.raises(ValueError):
        np.ones(1).__array_namespace__(api_version="2025.12")


def _standard_names(namespace):
    return {n for n in namespace.__all__ if n not in ("ArrayAPIStrictFlags", "Device", "__version__")
            and not n.endswith("array_api_strict_flags")}


def test_it_holds_the_standards_names_and_no_others():
    """array_api_strict has the standard's names and nothing else (its own flag helpers aside)."""
    public = {n for n in vars(NAMESPACE) if not n.startswith("_") or n.startswith("__array")}
    assert public == _standard_names(strict)
    for sub in ("linalg", "fft"):
        names = {n for n in vars(getattr(NAMESPACE, sub)) if not n.startswith("_")}
        assert names == set(getattr(strict, sub).__all__)
    with pytest.raises(AttributeError, match="einsum"):
        NAMESPACE.einsum       # numpy's, not the standard's: np.einsum traces


def test_a_tracer_has_the_standards_array_attributes():
    def f(x):
        t = x[:, :3]
        assert (t.shape, t.ndim, t.size, t.dtype, t.device) == ((3, 3), 2, 9, np.float64, "cpu")
        assert t.to_device("cpu") is t and t.to_device(t.device) is t
        np.testing.assert_array_equal(t.mT.value, X[:, :3].mT)
        np.testing.assert_array_equal(t.T.value, X[:, :3].T)
        return NAMESPACE.sum(t.mT * t)
    np.testing.assert_allclose(ad.grad(f)(X)[:, :3], 2 * X[:, :3].T, rtol=1e-15)


def test_the_info_of_the_namespace_is_numpys():
    info = NAMESPACE.__array_namespace_info__()
    assert info.default_device() == "cpu" and info.devices() == ["cpu"]
    assert info.default_dtypes()["real floating"] == np.float64


# -- a tracer next to a plain numpy array --------------------------------------------------------

def test_next_to_a_plain_numpy_array_array_api_compat_refuses_and_the_message_says_what_to_do():
    """array_api_compat (its namespaces deduplicated by name) refuses a tracer and a numpy array
    together; its message lists the namespaces, and ours says what to do."""
    data = np.linspace(0.0, 1.0, 4)

    def loss(w, x):
        xp = array_api_compat.array_namespace(w, x)
        return xp.sum(xp.tanh(w * x))
    with pytest.raises(TypeError, match="Multiple namespaces") as err:
        ad.grad(lambda w: loss(w, data))(X[0])
    assert "trace it too" in str(err.value) and "argnums" in str(err.value) and "xp.asarray" in str(err.value)
    # the fixes it names: the data an argument of the traced function, or the traced arrays' namespace
    want = data / np.cosh(X[0] * data) ** 2
    np.testing.assert_allclose(ad.grad(loss, argnums=0)(X[0], data), want, rtol=1e-14)

    def loss_of_w(w):
        xp = array_api_compat.array_namespace(w)
        return xp.sum(xp.tanh(w * xp.asarray(data)))
    np.testing.assert_allclose(ad.grad(loss_of_w)(X[0]), want, rtol=1e-14)


def test_arrays_it_creates_inside_a_trace_are_traced_constants():
    def f(x):
        made = [NAMESPACE.zeros(3), NAMESPACE.arange(3.0), NAMESPACE.eye(2), NAMESPACE.asarray([1.0, 2.0]),
                NAMESPACE.full((2,), 3.0), NAMESPACE.fft.fftfreq(4)]
        assert all(array_api_compat.array_namespace(x, m) is NAMESPACE for m in made)
        return NAMESPACE.sum(x[0, :3] * made[1])
    np.testing.assert_allclose(ad.grad(f)(X)[0, :3], [0.0, 1.0, 2.0])
    assert type(NAMESPACE.zeros(3)) is np.ndarray and type(NAMESPACE.asarray([1.0])) is np.ndarray   # outside


# -- the functions it writes ---------------------------------------------------------------------

def test_asarray_keeps_a_traced_value_and_stacks_a_list_of_them():
    def f(x):
        assert NAMESPACE.asarray(x) is x and NAMESPACE.asarray(x, dtype=np.float64, copy=False) is x
        copied = NAMESPACE.asarray(x, copy=True)
        copied[0, 0] = 100.0                           # a write into the copy leaves x alone
        assert x.value[0, 0] == X[0, 0] and copied is not x
        as32 = NAMESPACE.asarray(x, dtype=NAMESPACE.float32)
        assert as32.dtype == np.float32
        with pytest.raises(ValueError, match="copy=False"):
            NAMESPACE.asarray(x, dtype=NAMESPACE.float32, copy=False)
        stacked = NAMESPACE.asarray([[x[0, 0], 2.0], [x[1, 1], x[2, 2]]])
        assert stacked.shape == (2, 2)
        return NAMESPACE.sum(stacked ** 2) + NAMESPACE.sum(copied) + NAMESPACE.sum(NAMESPACE.astype(as32, np.float64))
    g = ad.grad(f)(X)
    want = np.ones_like(X) * 2.0
    want[0, 0] = 2 * X[0, 0] + 1.0                   # the copy's written element no longer depends on x
    want[1, 1] += 2 * X[1, 1]
    want[2, 2] += 2 * X[2, 2]
    np.testing.assert_allclose(g, want, rtol=1e-6)     # (the float32 path rounds)


@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_and_argsort_descending_agree_with_array_api_strict(axis, stable):
    a = np.array([[3.0, 1.0, 3.0, 2.0], [1.0, 1.0, 0.5, 1.0], [2.0, -1.0, 2.0, 2.0]])    # ties
    for descending in (False, True):
        for fn in ("sort", "argsort"):
            want = getattr(strict, fn)(strict.asarray(a), axis=axis, descending=descending, stable=True)
            traced = _inside(lambda t: getattr(NAMESPACE, fn)(t, axis=axis, descending=descending,
                                                               stable=stable).value, a)
            plain = getattr(NAMESPACE, fn)(a, axis=axis, descending=descending, stable=stable)
            # ad's argsort is always stable (a stable=False request gets the stable order)
            if fn == "sort" or stable:
                np.testing.assert_array_equal(plain, np.asarray(want))
            np.testing.assert_array_equal(traced, np.asarray(want))


@pytest.mark.parametrize("a", [np.array([[2.0, -1.0, 2.0], [0.5, -1.0, np.nan]]),
                               np.array([np.nan, 1.0, np.nan, 1.0]), np.array([3, 1, 3, 3, 0]), np.array([]),
                               np.array(4.0)], ids=str)
def test_unique_of_a_traced_array_is_numpys(a):
    """Values, first indices, inverse indices (x's shape) and counts; NaNs each their own value."""
    for fn, fields in (("unique_all", ("values", "indices", "inverse_indices", "counts")),
                       ("unique_counts", ("values", "counts")), ("unique_inverse", ("values", "inverse_indices"))):
        got = _inside(lambda t: [getattr(getattr(NAMESPACE, fn)(t), f).value for f in fields], a)
        want = getattr(np, fn)(a)
        for field, g in zip(fields, got):
            np.testing.assert_array_equal(g, getattr(want, field), err_msg=f"{fn}.{field}")
    values = _inside(lambda t: NAMESPACE.unique_values(t).value, a)
    np.testing.assert_array_equal(values, np.sort(np.unique_values(a)))


def test_a_unique_gradient_retraces_when_the_repeats_change():
    f = ad.grad(lambda x: NAMESPACE.sum(NAMESPACE.unique_values(x) ** 2))
    np.testing.assert_array_equal(f(np.array([1.0, 2.0, 1.0])), [2.0, 4.0, 0.0])
    np.testing.assert_array_equal(f(np.array([1.0, 2.0, 3.0])), [2.0, 4.0, 6.0])


def test_second_derivatives_through_the_namespace():
    """A standard program's Hessian (jacfwd over the gradient: the namespace's functions traced
    again by the outer transformation) against the analytic one."""
    def f(x):
        xp = array_api_compat.array_namespace(x)
        return xp.sum(xp.exp(x) * xp.linalg.vector_norm(x) ** 2)
    x = X[0]
    n2, e = np.sum(x * x), np.exp(x)
    want = np.diag(e * n2) + 2 * np.outer(x, e) + 2 * np.outer(e, x) + 2 * np.sum(e) * np.eye(4)
    np.testing.assert_allclose(ad.hessian(f)(x), want, rtol=1e-12)


def test_the_bitwise_functions_are_numpys_bitwise_primitives():
    """The standard's bitwise functions on traced integers record numpy's bitwise primitives: the
    tape reruns at other integers as array_api_strict computes them, and an integer mask made
    with them carries the gradient of the floats it scales."""
    def bits(xp, k, s):
        return (xp.bitwise_and(k, 6), xp.bitwise_or(k, s), xp.bitwise_xor(k, 3), xp.bitwise_invert(k),
                xp.bitwise_left_shift(k, s), xp.bitwise_right_shift(k, s))
    tape = ad.trace(lambda k, s: bits(NAMESPACE, k, s), np.array([3, 5, -7, 0]), np.array([0, 1, 2, 3]))
    assert [e.prim.name for e in tape.eqns] == ["bitwise_and", "bitwise_or", "bitwise_xor", "invert",
                                                "left_shift", "right_shift"]
    k, s = np.array([-1, 12, 255, -128]), np.array([4, 0, 1, 5])
    for got, want in zip(tape(k, s), bits(strict, strict.asarray(k), strict.asarray(s)), strict=True):
        np.testing.assert_array_equal(got, np.asarray(want))

    def f(x):
        flags = NAMESPACE.astype(x > 0, NAMESPACE.int64)
        return NAMESPACE.sum(NAMESPACE.astype(NAMESPACE.bitwise_and(flags, 1), x.dtype) * x)
    np.testing.assert_array_equal(ad.grad(f)(X), (X > 0).astype(float))


# -- refusals ------------------------------------------------------------------------------------

def test_a_bitwise_function_of_floats_is_refused_as_numpy_refuses_it_naming_the_line():
    def f(x):
        return NAMESPACE.sum(NAMESPACE.astype(NAMESPACE.bitwise_and(x, 1), x.dtype) * x)
    where = _line("NAMESPACE.bitwise_and(x, 1)")
    with pytest.raises(TypeError, match="ufunc 'bitwise_and' not supported") as err:
        ad.grad(f)(X)
    assert f"recording bitwise_and at {where}" in "\n".join(err.value.__notes__)


CALLS = {     # name: (a call on another device, the text of its line)
    "to_device": (lambda xp, x: x.to_device("gpu"), 'x.to_device("gpu")'),
    "asarray": (lambda xp, x: xp.asarray(x, device="gpu"), 'xp.asarray(x, device="gpu")'),
    "zeros_like": (lambda xp, x: xp.zeros_like(x, device="gpu"), 'xp.zeros_like(x, device="gpu")'),
    "astype": (lambda xp, x: xp.astype(x, xp.float32, device="gpu"), 'xp.astype(x, xp.float32, device="gpu")'),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_another_device_is_refused_naming_the_line(name):
    call, text = CALLS[name]
    refusal = r"to_device\('gpu'\) of %0:f64\[3,4\].*one device is 'cpu'"
    with pytest.raises(ad.UnsupportedFunctionError, match=refusal) as err:
        ad.grad(lambda x: NAMESPACE.sum(call(NAMESPACE, x)))(X)
    assert _line(text) in str(err.value)


def test_from_dlpack_of_a_traced_value_is_refused_naming_the_line():
    def f(x):
        return NAMESPACE.sum(NAMESPACE.from_dlpack(x))
    where = _line("NAMESPACE.sum(NAMESPACE.from_dlpack(x))")
    with pytest.raises(ad.UnsupportedFunctionError, match="from_dlpack of .*xp.asarray") as err:
        ad.grad(f)(X)
    assert where in str(err.value)
    np.testing.assert_array_equal(NAMESPACE.from_dlpack(X), X)       # a plain array's is numpy's
    with pytest.raises(AttributeError, match="__dlpack__ is not supported on traced values"):
        _inside(lambda t: t.__dlpack__(), X)
