"""Every numpy function HIPS autograd differentiates (a VJP in numpy_vjps.py / linalg.py / fft.py,
or a no-gradient registration) is differentiated by ad too, with autograd's gradient (MISSING
would list any ad lacks, with the reason; it is empty).

Each example is written once against a numpy module ``xp`` and run with ``numpy`` (traced by ad)
and ``autograd.numpy``; the table must name every function autograd registers.
"""
import warnings

import numpy as np
import pytest

import ad
from ad.errors import UnsupportedFunctionError

from tests.support.needs import module
anp = module("autograd.numpy")
autograd = module("autograd")
from autograd.core import primitive_vjps  # noqa: E402
from autograd.numpy.numpy_vjps import nograd_functions  # noqa: E402

RNG = np.random.default_rng(3)
V = RNG.uniform(0.2, 0.9, 4)
X = RNG.uniform(0.2, 0.9, (3, 4))
M = RNG.uniform(-1, 1, (3, 3)) + 4 * np.eye(3)


def spd(xp, x):
    return x @ x.T + xp.eye(3)


def full(xp, x):   # numpy dispatches np.full on like= only (autograd has no like=)
    return xp.full((2,), x[0], like=x) if xp is np else xp.full((2,), x[0])


def const(f):
    """A function with no gradient, used through a product so its output reaches the loss."""
    return lambda xp, x: x * f(xp, x)


# name -> (example of xp and x, input)
EXAMPLES = {
    "absolute": (lambda xp, x: xp.absolute(x - 0.5), V), "add": (lambda xp, x: xp.add(x, 1.0), V),
    "amax": (lambda xp, x: xp.amax(x, axis=0), X), "amin": (lambda xp, x: xp.amin(x, axis=1), X),
    "angle": (lambda xp, x: xp.angle(x - 0.5), V), "arccos": (lambda xp, x: xp.arccos(x), V),
    "arccosh": (lambda xp, x: xp.arccosh(x + 1), V), "arcsin": (lambda xp, x: xp.arcsin(x), V),
    "arcsinh": (lambda xp, x: xp.arcsinh(x), V), "arctan": (lambda xp, x: xp.arctan(x), V),
    "arctan2": (lambda xp, x: xp.arctan2(x, 1 - x), V), "arctanh": (lambda xp, x: xp.arctanh(x), V),
    "array_split": (lambda xp, x: xp.array_split(x, 3)[1], V), "astype": (lambda xp, x: x.astype(xp.float32), V),
    "atleast_1d": (lambda xp, x: xp.atleast_1d(x), V), "atleast_2d": (lambda xp, x: xp.atleast_2d(x), V),
    "atleast_3d": (lambda xp, x: xp.atleast_3d(x), V),
    "broadcast_to": (lambda xp, x: xp.broadcast_to(x[None], (2, 4)), V),
    "clip": (lambda xp, x: xp.clip(x, 0.3, 0.8), V), "conjugate": (lambda xp, x: xp.conjugate(x), V),
    "cos": (lambda xp, x: xp.cos(x), V), "cosh": (lambda xp, x: xp.cosh(x), V),
    "cross": (lambda xp, x: xp.cross(x[:, :3], x[:, 1:]), X), "cumsum": (lambda xp, x: xp.cumsum(x, axis=1), X),
    "deg2rad": (lambda xp, x: xp.deg2rad(x), V), "degrees": (lambda xp, x: xp.degrees(x), V),
    "diag": (lambda xp, x: xp.diag(x, 1), V), "diagonal": (lambda xp, x: xp.diagonal(x[:, :3], 0, -1, -2), X),
    "diff": (lambda xp, x: xp.diff(x, 2, axis=1), X), "divide": (lambda xp, x: xp.divide(1.0, x), V),
    "dot": (lambda xp, x: xp.dot(X, x), V), "dsplit": (lambda xp, x: xp.dsplit(x[None], 2)[0], X),
    "einsum": (lambda xp, x: xp.einsum("ij,kj->ik", x, x), X), "exp": (lambda xp, x: xp.exp(x), V),
    "exp2": (lambda xp, x: xp.exp2(x), V), "expand_dims": (lambda xp, x: xp.expand_dims(x, 0), V),
    "expm1": (lambda xp, x: xp.expm1(x), V), "fabs": (lambda xp, x: xp.fabs(x - 0.5), V),
    "fliplr": (lambda xp, x: xp.fliplr(x), X), "flipud": (lambda xp, x: xp.flipud(x), X),
    "fmax": (lambda xp, x: xp.fmax(x, 0.55), V), "fmin": (lambda xp, x: xp.fmin(x, 0.55), V),
    "full": (full, V), "gradient": (lambda xp, x: xp.gradient(x, axis=1), X),
    "hsplit": (lambda xp, x: xp.hsplit(x, 2)[1], X), "hypot": (lambda xp, x: xp.hypot(x, 1.0), V),
    "imag": (lambda xp, x: x + xp.imag(x), V), "inner": (lambda xp, x: xp.inner(x, x), X),
    "kron": (lambda xp, x: xp.kron(x, x[:2]), X), "linspace": (lambda xp, x: xp.linspace(x[0], x[1], 5), V),
    "log": (lambda xp, x: xp.log(x), V), "log10": (lambda xp, x: xp.log10(x), V),
    "log1p": (lambda xp, x: xp.log1p(x), V), "log2": (lambda xp, x: xp.log2(x), V),
    "logaddexp": (lambda xp, x: xp.logaddexp(x, 0.5), V), "logaddexp2": (lambda xp, x: xp.logaddexp2(x, 0.5), V),
    "matmul": (lambda xp, x: xp.matmul(x, x.T), X), "max": (lambda xp, x: xp.max(x), V),
    "maximum": (lambda xp, x: xp.maximum(x, 0.55), V), "mean": (lambda xp, x: xp.mean(x, axis=0), X),
    "min": (lambda xp, x: xp.min(x), V), "minimum": (lambda xp, x: xp.minimum(x, 0.55), V),
    "moveaxis": (lambda xp, x: xp.moveaxis(x, 0, 1), X), "multiply": (lambda xp, x: xp.multiply(x, x), V),
    "nan_to_num": (lambda xp, x: xp.nan_to_num(x), V), "negative": (lambda xp, x: xp.negative(x), V),
    "outer": (lambda xp, x: xp.outer(x, x), V), "pad": (lambda xp, x: xp.pad(x, 1, mode="constant"), V),
    "partition": (lambda xp, x: xp.partition(x, 1), V), "power": (lambda xp, x: xp.power(x, 2.5), V),
    "prod": (lambda xp, x: xp.prod(x, axis=1), X), "rad2deg": (lambda xp, x: xp.rad2deg(x), V),
    "radians": (lambda xp, x: xp.radians(x), V), "ravel": (lambda xp, x: xp.ravel(x), X),
    "real": (lambda xp, x: xp.real(x), V), "real_if_close": (lambda xp, x: xp.real_if_close(x), V),
    "reciprocal": (lambda xp, x: xp.reciprocal(x), V), "remainder": (lambda xp, x: xp.remainder(x, 0.15), V),
    "repeat": (lambda xp, x: xp.repeat(x, 2, axis=0), X), "reshape": (lambda xp, x: xp.reshape(x, (2, 2)), V),
    "roll": (lambda xp, x: xp.roll(x, 1), V), "rollaxis": (lambda xp, x: xp.rollaxis(x, 1), X),
    "rot90": (lambda xp, x: xp.rot90(x), X), "sin": (lambda xp, x: xp.sin(x), V),
    "sinc": (lambda xp, x: xp.sinc(x), V), "sinh": (lambda xp, x: xp.sinh(x), V),
    "sort": (lambda xp, x: xp.sort(x), V), "split": (lambda xp, x: xp.split(x, 2)[0], V),
    "sqrt": (lambda xp, x: xp.sqrt(x), V), "square": (lambda xp, x: xp.square(x), V),
    "squeeze": (lambda xp, x: xp.squeeze(x[None]), V), "std": (lambda xp, x: xp.std(x, axis=1), X),
    "subtract": (lambda xp, x: xp.subtract(1.0, x), V), "sum": (lambda xp, x: xp.sum(x, axis=0), X),
    "swapaxes": (lambda xp, x: xp.swapaxes(x, 0, 1), X), "tan": (lambda xp, x: xp.tan(x), V),
    "tanh": (lambda xp, x: xp.tanh(x), V), "tensordot": (lambda xp, x: xp.tensordot(x, x, ([1], [1])), X),
    "tile": (lambda xp, x: xp.tile(x, 2), V), "trace": (lambda xp, x: xp.trace(x), X),
    "transpose": (lambda xp, x: xp.transpose(x), X), "tril": (lambda xp, x: xp.tril(x), X),
    "triu": (lambda xp, x: xp.triu(x, 1), X), "var": (lambda xp, x: xp.var(x, axis=0), X),
    "vsplit": (lambda xp, x: xp.vsplit(x, 3)[2], X), "where": (lambda xp, x: xp.where(x > 0.5, x, 2 * x), V),
    # linalg
    "cholesky": (lambda xp, x: xp.linalg.cholesky(spd(xp, x)), X), "det": (lambda xp, x: xp.linalg.det(x), M),
    "eigh": (lambda xp, x: xp.linalg.eigh(spd(xp, x))[0], X), "inv": (lambda xp, x: xp.linalg.inv(x), M),
    "norm": (lambda xp, x: xp.linalg.norm(x), M), "pinv": (lambda xp, x: xp.linalg.pinv(x), X),
    "slogdet": (lambda xp, x: xp.linalg.slogdet(x)[1], M), "solve": (lambda xp, x: xp.linalg.solve(x, M[0]), M),
    "svd": (lambda xp, x: xp.linalg.svd(x, full_matrices=False)[1], X),
    "eig": (lambda xp, x: xp.real(xp.linalg.eig(x)[0] * (1 + 0.5j)), M),   # eigenvalues: phase-free
    "fftshift": (lambda xp, x: xp.fft.fftshift(x), X), "ifftshift": (lambda xp, x: xp.fft.ifftshift(x), X),
    # fft: a real function of the (complex) spectrum; default norms (autograd's rfft rule is wrong
    # for norm="backward"/"forward", see tests/lib/test_fft.py)
    **{name: (lambda xp, x, name=name: xp.real(getattr(xp.fft, name)(x) * (1 + 0.5j)), X) for name in (
        "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn")},
    **{name: (lambda xp, x, name=name: getattr(xp.fft, name)(x), X) for name in ("irfft", "irfft2", "irfftn")},
    # no-gradient functions
    **{name: (const(lambda xp, x, name=name: getattr(xp, name)(x)), V) for name in (
        "floor", "ceil", "round", "rint", "around", "fix", "trunc", "all", "any", "argmax", "argmin",
        "argsort", "sign", "ndim", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "iscomplexobj",
        "iscomplex", "size", "isscalar", "isreal")},
    **{name: (const(lambda xp, x, name=name: getattr(xp, name)(x, 0.5)), V) for name in (
        "floor_divide", "greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "isclose")},
    **{name: (const(lambda xp, x, name=name: getattr(xp, name)(x > 0.3, x < 0.8)), V) for name in (
        "logical_and", "logical_or", "logical_xor")},
    **{name: (const(lambda xp, x, name=name: getattr(xp, name)(x, x)), V) for name in (
        "allclose", "array_equal", "array_equiv")},
    "logical_not": (const(lambda xp, x: xp.logical_not(x > 0.5)), V),
    "argpartition": (const(lambda xp, x: xp.argpartition(x, 1)), V),
    "argwhere": (const(lambda xp, x: xp.sum(xp.argwhere(x > 0.5))), V),
    "nonzero": (lambda xp, x: x[xp.nonzero(x > 0.5)], V),
    "flatnonzero": (lambda xp, x: x[xp.flatnonzero(x > 0.5)], V),
    "count_nonzero": (const(lambda xp, x: xp.count_nonzero(x > 0.5)), V),
    "searchsorted": (const(lambda xp, x: xp.searchsorted(xp.array([0.5]), x)), V),
    "shape": (const(lambda xp, x: xp.shape(x)[0]), V),
    "zeros_like": (lambda xp, x: x + xp.zeros_like(x), V), "ones_like": (lambda xp, x: x * xp.ones_like(x), V),
    "empty_like": (lambda xp, x: x + 0 * xp.empty_like(x), V), "full_like": (lambda xp, x: x * xp.full_like(x, 2.0), V),
    "result_type": (lambda xp, x: x.astype(xp.result_type(x, 1.0)), V),
}

# What ad does not differentiate, and why. Each must fail loudly, never silently.
MISSING: dict[str, str] = {}


def _registered() -> set[str]:
    names = set()
    for f in list(primitive_vjps) + list(nograd_functions):
        raw = getattr(f, "fun", f)
        if (getattr(raw, "__module__", "") or "").startswith("numpy"):
            names.add(raw.__name__)
    return names


def test_every_autograd_function_has_an_example_or_a_reason():
    assert _registered() - set(EXAMPLES) - set(MISSING) == set()


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_gradient_matches_autograd(name):
    f, x = EXAMPLES[name]
    w = RNG.standard_normal(np.shape(f(np, x)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = autograd.grad(lambda x: anp.sum(f(anp, x) * w))(x)
    for form in ("lifted", "closure"):
        got = ad.grad(lambda x: np.sum(f(np, x) * w), form=form)(x)
        np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-10, err_msg=form)
