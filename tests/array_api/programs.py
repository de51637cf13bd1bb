"""Programs written against the array API standard only: each takes its namespace from its inputs
(``xp = array_namespace(...)``), so the very same function runs on numpy arrays (plain, or traced
by ad: ad's namespace), on jax.numpy arrays (jax.grad's oracle) and on array_api_strict's.

``PROGRAMS``: whole programs (an MLP, a softmax classifier...), name -> (function, its inputs from a
seed, the positions it is differentiated in). ``FUNCTIONS``: the standard's functions one by one,
name -> ``op(xp, x)`` of a 3x4 float64 array, made a scalar loss by ``loss``; ``NO_JAX`` says which
jax.grad cannot take, and why."""
import numpy as np
from array_api_compat import array_namespace, device

# -- whole programs ---------------------------------------------------------------------------


def mlp(W1, b1, W2, b2, X, Y):
    """Two layers, tanh between them, mean squared error."""
    xp = array_namespace(W1, b1, W2, b2, X, Y)
    hidden = xp.tanh(xp.matmul(X, W1) + b1)
    return xp.mean((hidden @ W2 + b2 - Y) ** 2)


def softmax_classifier(W, X, labels):
    """Cross-entropy of a linear softmax classifier: max-shifted exp over keepdims sums, and the
    one-hot targets built from integer labels (astype of a comparison)."""
    xp = array_namespace(W, X, labels)
    logits = X @ W
    shifted = logits - xp.max(logits, axis=1, keepdims=True)
    log_p = shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))
    onehot = xp.astype(labels[:, None] == xp.arange(W.shape[1], device=device(W)), W.dtype)
    return -xp.mean(xp.sum(onehot * log_p, axis=1))


def layers(a, b):
    """concat, stack, unstack, where, clip, reshape, permute_dims and matrix_transpose."""
    xp = array_namespace(a, b)
    both = xp.concat([a, xp.flip(b, axis=0)], axis=1)                 # 3x8
    pairs = xp.stack([a, b * b], axis=0)                                # 2x3x4
    first, second = xp.unstack(pairs, axis=0)
    leaky = xp.where(both > 0, both, 0.1 * both)
    clipped = xp.clip(xp.reshape(leaky, (4, 6)), -1.0, 1.5)
    turned = xp.permute_dims(pairs, (2, 0, 1))                          # 4x2x3
    return (xp.sum(clipped ** 2) + xp.sum(xp.matrix_transpose(turned) * xp.sin(turned.mT))
            + xp.sum(first * second) + xp.sum(xp.expand_dims(a, axis=0) * xp.squeeze(b[None, ...], axis=0)))


def norms(A, v):
    """vecdot, linalg.matmul, vector_norm, matrix_norm, the .mT attribute."""
    xp = array_namespace(A, v)
    Av = xp.linalg.matmul(A, v)
    cosines = xp.vecdot(A, v[None, :], axis=-1) / (xp.linalg.vector_norm(A, axis=-1) * xp.linalg.vector_norm(v))
    return (xp.sum(cosines ** 2) + xp.linalg.vector_norm(Av, ord=3) + xp.linalg.matrix_norm(A.mT @ A)
            + xp.linalg.vecdot(A[0], A[1]))


def statistics(x, w):
    """mean, var, std (the standard's correction=), cumulative sums and products, diff, astype."""
    xp = array_namespace(x, w)
    z = (x - xp.mean(x, axis=0, keepdims=True)) / xp.std(x, axis=0, correction=1, keepdims=True)
    weights = xp.astype(xp.arange(x.shape[1], device=device(x)), x.dtype) + 1.0
    cum = xp.cumulative_sum(xp.tanh(z) * weights, axis=1, include_initial=True)
    return (xp.sum(cum * w) + xp.mean(xp.var(z, axis=1, correction=0))
            + xp.sum(xp.cumulative_prod(xp.cos(x), axis=0)) + xp.sum(xp.diff(x, axis=1) ** 2))


def gaussian_loglik(L0, mu, X):
    """The log-likelihood of points under a Gaussian whose covariance is L0 L0^T + I: cholesky,
    solve, slogdet, diagonal, trace, inv."""
    xp = array_namespace(L0, mu, X)
    n = L0.shape[0]
    S = L0 @ L0.mT + xp.eye(n, dtype=L0.dtype, device=device(L0))
    L = xp.linalg.cholesky(S)
    centred = X - mu
    whitened = xp.linalg.solve(L, centred.mT)
    logdet = xp.linalg.slogdet(S).logabsdet
    quad = xp.sum(whitened ** 2, axis=0)
    check = xp.linalg.trace(xp.linalg.inv(S) @ S) - n                 # 0, with a gradient through inv
    return xp.mean(-0.5 * quad - 0.5 * logdet) + 2.0 * xp.sum(xp.log(xp.linalg.diagonal(L))) - logdet + check


def spectrum(x):
    """The standard's fft extension: a power spectrum and a round trip."""
    xp = array_namespace(x)
    power = xp.abs(xp.fft.rfft(x, axis=-1)) ** 2
    back = xp.fft.irfft(xp.fft.rfft(x) * 0.5, n=x.shape[-1])
    return xp.sum(power * xp.fft.rfftfreq(x.shape[-1], device=device(x))) + xp.sum(back * x)


def _rng(seed):
    return np.random.default_rng(seed)


def _mlp_inputs(seed):
    r = _rng(seed)
    return (r.standard_normal((4, 5)), r.standard_normal(5), r.standard_normal((5, 2)), r.standard_normal(2),
            r.standard_normal((6, 4)), r.standard_normal((6, 2)))


# name: (program, inputs from a seed, the argument positions differentiated)
PROGRAMS = {
    "mlp": (mlp, _mlp_inputs, (0, 1, 2, 3)),
    "softmax_classifier": (softmax_classifier,
                           lambda s: (_rng(s).standard_normal((4, 3)), _rng(s + 1).standard_normal((5, 4)),
                                      np.array([0, 2, 1, 1, 0])), (0, 1)),
    "layers": (layers, lambda s: (_rng(s).standard_normal((3, 4)), _rng(s + 1).standard_normal((3, 4))), (0, 1)),
    "norms": (norms, lambda s: (_rng(s).standard_normal((3, 4)), _rng(s + 1).standard_normal(4)), (0, 1)),
    "statistics": (statistics, lambda s: (_rng(s).standard_normal((5, 4)), _rng(s + 1).standard_normal((5, 5))),
                   (0, 1)),
    "gaussian_loglik": (gaussian_loglik, lambda s: (_rng(s).standard_normal((3, 3)), _rng(s + 1).standard_normal(3),
                                                   _rng(s + 2).standard_normal((6, 3))), (0, 1, 2)),
    "spectrum": (spectrum, lambda s: (_rng(s).standard_normal((2, 6)),), (0,)),
}

# -- the standard's functions, one by one ------------------------------------------------------


def _sym(xp, x):
    """A symmetric positive definite 3x3 matrix from a 3x4 one."""
    return x @ x.mT + 3.0 * xp.eye(3, dtype=x.dtype, device=device(x))


def _f(xp, y):
    return xp.astype(y, xp.float64)


FUNCTIONS = {
    # elementwise
    "abs": lambda xp, x: xp.abs(x), "acos": lambda xp, x: xp.acos(0.9 * xp.tanh(x)),
    "acosh": lambda xp, x: xp.acosh(2.0 + x * x), "add": lambda xp, x: xp.add(x, x[0]),
    "asin": lambda xp, x: xp.asin(0.9 * xp.tanh(x)), "asinh": lambda xp, x: xp.asinh(x),
    "atan": lambda xp, x: xp.atan(x), "atan2": lambda xp, x: xp.atan2(x, 2.0 + x * x),
    "atanh": lambda xp, x: xp.atanh(0.5 * xp.tanh(x)), "ceil": lambda xp, x: xp.ceil(x) * x,
    "clip": lambda xp, x: xp.clip(x, -0.5, 0.5),
    "clip_arrays": lambda xp, x: xp.clip(x, min=x[0] - 0.3, max=x[0] + 1.0),
    "conj": lambda xp, x: xp.conj(x) * x, "copysign": lambda xp, x: xp.copysign(x, x[1]),
    "cos": lambda xp, x: xp.cos(x),
    "cosh": lambda xp, x: xp.cosh(x),
    "divide": lambda xp, x: xp.divide(x, 2.0 + x * x),
    "exp": lambda xp, x: xp.exp(x), "expm1": lambda xp, x: xp.expm1(x), "floor": lambda xp, x: xp.floor(x) * x,
    "floor_divide": lambda xp, x: xp.floor_divide(x, 0.3) * x, "hypot": lambda xp, x: xp.hypot(x, 1.0 + x[0]),
    "imag": lambda xp, x: xp.imag(xp.fft.fft(x)), "log": lambda xp, x: xp.log(1.0 + x * x),
    "log10": lambda xp, x: xp.log10(1.0 + x * x), "log1p": lambda xp, x: xp.log1p(x * x),
    "log2": lambda xp, x: xp.log2(1.0 + x * x), "logaddexp": lambda xp, x: xp.logaddexp(x, x[2]),
    "maximum": lambda xp, x: xp.maximum(x, x[0]), "minimum": lambda xp, x: xp.minimum(x, 0.1),
    "multiply": lambda xp, x: xp.multiply(x, x), "negative": lambda xp, x: xp.negative(x),
    "nextafter": lambda xp, x: xp.nextafter(x, 0.0), "positive": lambda xp, x: xp.positive(x),
    "pow": lambda xp, x: xp.pow(1.5 + xp.tanh(x) ** 2, x), "real": lambda xp, x: xp.real(xp.fft.fft(x)),
    "reciprocal": lambda xp, x: xp.reciprocal(2.0 + x * x), "remainder": lambda xp, x: xp.remainder(x, 0.7),
    "round": lambda xp, x: xp.round(x) + x, "sign": lambda xp, x: xp.sign(x) * x, "sin": lambda xp, x: xp.sin(x),
    "sinh": lambda xp, x: xp.sinh(x),
    "sqrt": lambda xp, x: xp.sqrt(x * x + 1.0),
    "square": lambda xp, x: xp.square(x),
    "subtract": lambda xp, x: xp.subtract(x, 1.0), "tan": lambda xp, x: xp.tan(0.5 * xp.tanh(x)),
    "tanh": lambda xp, x: xp.tanh(x), "trunc": lambda xp, x: xp.trunc(3.0 * x) * x,
    "comparisons": lambda xp, x: _f(xp, xp.less(x, 0.2) | xp.greater_equal(x, 1.0)) * x
    + _f(xp, xp.logical_xor(xp.equal(x, x), xp.not_equal(x, 0.0))) * x
    + _f(xp, xp.logical_and(xp.less_equal(x, 0.5), xp.logical_not(xp.greater(x, -0.5)))) * x,
    "predicates": lambda xp, x: _f(xp, xp.isfinite(x) & ~xp.isnan(x) & ~xp.isinf(x) & ~xp.signbit(x)) * x,
    "logical_or": lambda xp, x: xp.where(xp.logical_or(x > 1.0, x < -1.0), x, 2.0 * x),
    # creation
    "arange": lambda xp, x: xp.arange(4, dtype=x.dtype, device=device(x)) * x,
    "asarray": lambda xp, x: xp.asarray(x) * 2.0, "asarray_copy": lambda xp, x: xp.asarray(x, copy=True) ** 2,
    "asarray_list": lambda xp, x: xp.asarray([x[0, 0], x[1, 1], 2.0]) * x[2, :3],
    "eye": lambda xp, x: xp.eye(3, 4, k=1, device=device(x)) * x,
    "full": lambda xp, x: xp.full((3, 4), 2.0, device=device(x)) * x,
    "full_like": lambda xp, x: xp.full_like(x, 2.0, device=device(x)) * x,
    "linspace": lambda xp, x: xp.linspace(0.0, 1.0, 4, device=device(x)) * x,
    "meshgrid": lambda xp, x: xp.meshgrid(x[0], x[1, :3], indexing="ij")[1] * x[2, :3],
    "ones": lambda xp, x: xp.ones((3, 4), dtype=x.dtype, device=device(x)) * x,
    "ones_like": lambda xp, x: xp.ones_like(x, device=device(x)) * xp.sin(x),
    "zeros": lambda xp, x: xp.zeros((3, 4), device=device(x)) + x,
    "zeros_like": lambda xp, x: xp.zeros_like(x, device=device(x)) + xp.cos(x),
    "tril": lambda xp, x: xp.tril(x, k=1), "triu": lambda xp, x: xp.triu(x),
    # data types
    "astype": lambda xp, x: xp.astype(xp.astype(x * 5.0, xp.int64), x.dtype) * x + xp.astype(x, x.dtype, copy=False),
    "broadcast_arrays": lambda xp, x: xp.broadcast_arrays(x, x[0, :][None, :])[1] * x,
    "broadcast_to": lambda xp, x: xp.broadcast_to(x[0], (2, 4)),
    "broadcast_shapes": lambda xp, x: x * xp.ones(xp.broadcast_shapes((3, 1), (1, 4)), dtype=x.dtype),
    "dtype_functions": lambda xp, x: xp.astype(x, xp.result_type(x, xp.float32)) * xp.finfo(x.dtype).eps * 1e15
    + x * float(xp.can_cast(x.dtype, xp.complex128)) * float(xp.isdtype(x.dtype, "real floating"))
    * (xp.iinfo(xp.int8).max / 127),
    # indexing
    "take": lambda xp, x: xp.take(x, xp.asarray([2, 0, 2]), axis=0),
    "take_along_axis": lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1),
    # linear algebra (main namespace)
    "matmul": lambda xp, x: xp.matmul(x.mT, x), "matrix_transpose": lambda xp, x: xp.matrix_transpose(x) * x.T,
    "tensordot": lambda xp, x: xp.tensordot(x, x, axes=([1], [1])), "vecdot": lambda xp, x: xp.vecdot(x, x, axis=0),
    # manipulation
    "concat": lambda xp, x: xp.concat([x, x * x], axis=1), "concat_flat": lambda xp, x: xp.concat([x, x], axis=None),
    "expand_dims": lambda xp, x: xp.expand_dims(x, axis=1) * x[:, None, :],
    "flip": lambda xp, x: xp.flip(x, axis=0) * x,
    "moveaxis": lambda xp, x: xp.moveaxis(x[None], 0, 2), "permute_dims": lambda xp, x: xp.permute_dims(x, (1, 0)),
    "repeat": lambda xp, x: xp.repeat(x, 2, axis=0), "reshape": lambda xp, x: xp.reshape(x, (4, 3)) * x.T,
    "reshape_copy": lambda xp, x: xp.reshape(x, (-1,), copy=True), "roll": lambda xp, x: xp.roll(x, 1, axis=1) * x,
    "squeeze": lambda xp, x: xp.squeeze(x[:1], axis=0), "stack": lambda xp, x: xp.stack([x, x * x], axis=1),
    "tile": lambda xp, x: xp.tile(x, (2, 1)), "unstack": lambda xp, x: xp.unstack(x, axis=1)[1] * x[:, 0],
    # searching
    "argmax": lambda xp, x: xp.take_along_axis(x, xp.argmax(x, axis=1, keepdims=True), axis=1),
    "argmin": lambda xp, x: xp.reshape(x, (-1,))[xp.argmin(x)],
    "count_nonzero": lambda xp, x: x * xp.astype(xp.count_nonzero(x > 0.0, axis=0), x.dtype),
    "nonzero": lambda xp, x: x[xp.nonzero(x > 0.0)],
    "searchsorted": lambda xp, x: x * xp.astype(xp.searchsorted(xp.asarray([-0.5, 0.0, 0.5]), x[0]), x.dtype),
    "where": lambda xp, x: xp.where(x > 0.0, x, xp.exp(x)),
    # sets
    "isin": lambda xp, x: xp.where(xp.isin(xp.round(x), xp.asarray([0.0, 1.0])), x, x * x),
    "unique_values": lambda xp, x: xp.unique_values(x) ** 2,
    "unique_counts": lambda xp, x: xp.unique_counts(x).values * xp.astype(xp.unique_counts(x).counts, x.dtype),
    "unique_inverse": lambda xp, x: xp.take(xp.unique_inverse(x).values,
                                            xp.reshape(xp.unique_inverse(x).inverse_indices, (-1,))) ** 3,
    "unique_all": lambda xp, x: xp.unique_all(x).values * xp.astype(xp.unique_all(x).indices, x.dtype),
    # sorting
    "sort": lambda xp, x: xp.sort(x, axis=0) * xp.arange(4.0),
    "sort_descending": lambda xp, x: xp.sort(x, axis=1, descending=True) * xp.arange(4.0),
    "argsort": lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=0), axis=0) * xp.arange(3.0)[:, None],
    "argsort_descending": lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=1, descending=True), axis=1)
    * xp.arange(4.0),
    # statistics
    "cumulative_prod": lambda xp, x: xp.cumulative_prod(x, axis=1),
    "cumulative_sum": lambda xp, x: xp.cumulative_sum(x, axis=0, include_initial=True),
    "max": lambda xp, x: xp.max(x, axis=1, keepdims=True), "mean": lambda xp, x: xp.mean(x, axis=(0, 1)),
    "min": lambda xp, x: xp.min(x), "prod": lambda xp, x: xp.prod(x, axis=0, keepdims=True),
    "std": lambda xp, x: xp.std(x, axis=0, correction=1),
    "sum": lambda xp, x: xp.sum(x, axis=1, dtype=xp.float64, keepdims=True),
    "var": lambda xp, x: xp.var(x, axis=1, correction=0, keepdims=True),
    # utility
    "all_any": lambda xp, x: xp.where(xp.all(x > -3.0, axis=0) & xp.any(x > 0.0, axis=0), x, 0.5 * x),
    "diff": lambda xp, x: xp.diff(x, axis=0, n=1, prepend=x[:1] * 2.0),
    # the array object
    "attributes": lambda xp, x: x.T @ x.mT.mT * float(x.ndim * x.size) / float(x.shape[0]),
    "to_device": lambda xp, x: x.to_device(device(x)) ** 2,
    # linalg
    "linalg.cholesky": lambda xp, x: xp.linalg.cholesky(_sym(xp, x)),
    "linalg.cross": lambda xp, x: xp.linalg.cross(x[:, :3], x[:, 1:]),
    "linalg.det": lambda xp, x: xp.linalg.det(x[:, :3]),
    "linalg.diagonal": lambda xp, x: xp.linalg.diagonal(x, offset=1),
    "linalg.eigh": lambda xp, x: xp.linalg.eigh(_sym(xp, x)).eigenvalues,
    "linalg.eigh_vectors": lambda xp, x: xp.linalg.eigh(_sym(xp, x)).eigenvectors ** 2,
    "linalg.eigvalsh": lambda xp, x: xp.linalg.eigvalsh(_sym(xp, x)),
    "linalg.inv": lambda xp, x: xp.linalg.inv(_sym(xp, x)),
    "linalg.matmul": lambda xp, x: xp.linalg.matmul(x, x.mT),
    "linalg.matrix_norm": lambda xp, x: xp.linalg.matrix_norm(x),
    "linalg.matrix_norm_nuc": lambda xp, x: xp.linalg.matrix_norm(x, ord="nuc"),
    "linalg.matrix_power": lambda xp, x: xp.linalg.matrix_power(x[:, :3], 3),
    "linalg.matrix_rank": lambda xp, x: x * xp.astype(xp.linalg.matrix_rank(x), x.dtype),
    "linalg.matrix_transpose": lambda xp, x: xp.linalg.matrix_transpose(x),
    "linalg.outer": lambda xp, x: xp.linalg.outer(x[0], x[1]),
    "linalg.pinv": lambda xp, x: xp.linalg.pinv(x), "linalg.qr": lambda xp, x: xp.linalg.qr(x.mT).R,
    "linalg.slogdet": lambda xp, x: xp.linalg.slogdet(_sym(xp, x)).logabsdet,
    "linalg.solve": lambda xp, x: xp.linalg.solve(_sym(xp, x), x),
    "linalg.svd": lambda xp, x: xp.linalg.svd(x, full_matrices=False).S,
    "linalg.svdvals": lambda xp, x: xp.linalg.svdvals(x),
    "linalg.tensordot": lambda xp, x: xp.linalg.tensordot(x, x, axes=2),
    "linalg.trace": lambda xp, x: xp.linalg.trace(_sym(xp, x)), "linalg.vecdot": lambda xp, x: xp.linalg.vecdot(x, x),
    "linalg.vector_norm": lambda xp, x: xp.linalg.vector_norm(x, axis=1),
    "linalg.vector_norm_inf": lambda xp, x: xp.linalg.vector_norm(x, ord=xp.inf),
    # fft
    "fft.fft": lambda xp, x: xp.real(xp.fft.fft(xp.astype(x, xp.complex128))),
    "fft.ifft": lambda xp, x: xp.imag(xp.fft.ifft(xp.astype(x, xp.complex128), n=6, axis=0)),
    "fft.fftn": lambda xp, x: xp.real(xp.fft.fftn(xp.astype(x, xp.complex128))),
    "fft.ifftn": lambda xp, x: xp.real(xp.fft.ifftn(xp.astype(x, xp.complex128), norm="ortho")),
    "fft.rfft": lambda xp, x: xp.imag(xp.fft.rfft(x)), "fft.irfft": lambda xp, x: xp.fft.irfft(xp.fft.rfft(x) * 1j),
    "fft.rfftn": lambda xp, x: xp.real(xp.fft.rfftn(x)),
    "fft.irfftn": lambda xp, x: xp.fft.irfftn(xp.fft.rfftn(x) ** 2, s=(3, 4), axes=(0, 1)),
    "fft.hfft": lambda xp, x: xp.fft.hfft(xp.fft.ifft(xp.astype(x, xp.complex128))),
    "fft.ihfft": lambda xp, x: xp.real(xp.fft.ihfft(x)),
    "fft.fftfreq": lambda xp, x: xp.fft.fftfreq(4, d=0.5, device=device(x)) * x,
    "fft.rfftfreq": lambda xp, x: xp.fft.rfftfreq(6, device=device(x))[:4] * x,
    "fft.fftshift": lambda xp, x: xp.fft.fftshift(x, axes=1) * x,
    "fft.ifftshift": lambda xp, x: xp.fft.ifftshift(x) * x,
}

NO_JAX = {
    "nextafter": "jax has no derivative rule for it",
    "unique_values": "jax's unique needs a static size= under jax.grad",
    "unique_counts": "jax's unique needs a static size= under jax.grad",
    "unique_inverse": "jax's unique needs a static size= under jax.grad",
    "unique_all": "jax's unique needs a static size= under jax.grad",
}


def loss(name):
    """``FUNCTIONS[name]`` as a scalar program of a 3x4 array: the sum of squares of its result."""
    op = FUNCTIONS[name]

    def program(x):
        xp = array_namespace(x)
        return xp.sum(op(xp, x) ** 2)
    program.__name__ = name.replace(".", "_")
    return program
