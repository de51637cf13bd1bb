"""Complex gradients against two oracles nobody here wrote (issue 14).

For every primitive declaring ``complex_rule=True`` (so the set grows as rules land), at each of
its samples drawn at complex128: the gradient of the real loss ``Re(sum(w * f(z)))`` (complex
weights on complex outputs) equals HIPS autograd's, which follows the same convention
(``dL/dx - i dL/dy``), and the conjugate of PyTorch's (torch returns ``dL/dx + i dL/dy``).

The oracle's function is found from the primitive's ``function`` (the numpy function it records):
``getattr(autograd.numpy, name)`` (or ``.linalg``, ``.fft``; ``torch``, ``torch.linalg``,
``torch.fft``) called with the sample's operands and params, unless a table below says how the
oracle spells it. Before gradients are compared, the oracle's *forward* value is compared with the
primitive's, so a wrong mapping fails loudly instead of comparing two different functions.
Eigen- and singular vectors are compared through a phase-free view (each vector times its first
element's conjugate), the only losses with a gradient. Functions that read one triangle
(eigh, cholesky) are given to the oracles as that function: the Hermitian matrix of the triangle,
then the oracle's factorisation. Primitives an oracle cannot differentiate are listed by name
with the reason; where autograd differentiates a function wrongly for complex input, the list
says so and a test checks that autograd still does.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ad
from ad.core_prims import build_index
from ad.lib.values import imag_p
from ad.primitives import lookup
from ad.samples import C128, F64, operands
from tests.support.cases import PRIMITIVE_CASES, leaves
from tests.support.needs import module

autograd = module("autograd")
anp = module("autograd.numpy")
torch = module("torch")
from autograd.core import primitive_vjps  # noqa: E402  (after the optional import above)

RTOL = 1e-8
exp_p = lookup(np.exp)


class Numpy:
    """The few array functions the views below need, for numpy (and ad's tracers)."""
    conj, real, tril, triu, sum = np.conj, np.real, np.tril, np.triu, np.sum
    mT = staticmethod(lambda x: np.swapaxes(x, -1, -2))
    eye = staticmethod(lambda n: np.eye(n))


class Autograd(Numpy):
    conj, real, tril, triu, sum = anp.conj, anp.real, anp.tril, anp.triu, anp.sum
    mT = staticmethod(lambda x: anp.swapaxes(x, -1, -2))


class Torch:
    conj, real, tril, triu = torch.conj, torch.real, torch.tril, torch.triu
    mT = staticmethod(lambda x: x.transpose(-1, -2))
    eye = staticmethod(lambda n: torch.eye(n, dtype=torch.float64))

    @staticmethod
    def sum(x, axis, keepdims=False):
        return torch.sum(x, dim=axis, keepdim=keepdims)


def _sum_to(xp, x, shape):
    """The definition of sum_to: sum the leading axes away, then the axes ``shape`` keeps at 1."""
    lead = x.ndim - len(shape)
    if lead:
        x = xp.sum(x, axis=tuple(range(lead)))
    ones = tuple(i for i, s in enumerate(shape) if s == 1 and x.shape[i] != 1)
    return xp.sum(x, axis=ones, keepdims=True) if ones else x


def hermitian(xp, a, lower: bool):
    """The Hermitian matrix numpy's eigh and cholesky read: one triangle, its conjugate mirror,
    the real part of the diagonal."""
    part = xp.tril(a, -1) if lower else xp.triu(a, 1)
    return part + xp.conj(xp.mT(part)) + xp.eye(a.shape[-1]) * xp.real(a)


def _times_conj_first(xp, v, first):
    return v * xp.conj(first)


# primitive -> (xp, outputs) -> what the loss weighs: free of the phase of each vector
PHASE_FREE = {
    "eigh": lambda xp, w, v: (w, _times_conj_first(xp, v, v[..., :1, :])),
    "eig": lambda xp, w, v: (w, _times_conj_first(xp, v, v[..., :1, :])),
    "svd": lambda xp, u, s, vh: (_times_conj_first(xp, u, u[..., :1, :]), s,
                                 _times_conj_first(xp, vh, vh[..., :, :1]), u[..., :1, :] * xp.mT(vh[..., :, :1])),
}


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else tuple(np.atleast_1d(axis).tolist())


# -- how the primitives are spelled by autograd ---------------------------------------------------

def _slogdet_autograd(a):
    """autograd's slogdet VJP ignores the sign, which moves for complex matrices: spelled by det."""
    d = anp.linalg.det(a)
    return d / anp.abs(d), anp.log(anp.abs(d))


def _cholesky_autograd(a, upper):
    low = anp.linalg.cholesky(hermitian(Autograd, a, not upper))   # autograd's refuses upper=
    return anp.conj(Autograd.mT(low)) if upper else low


def _none_for_backward(norm):
    return None if norm == "backward" else norm


# primitive name -> (operands, params) -> autograd value, where calling the numpy function of the
# same name with the params as keywords is not how autograd.numpy spells it
AUTOGRAD_CALLS = {
    "astype": lambda ops, p: ops[0].astype(p["dtype"]),
    # its sample: matmul looped over a batch of its first operand (ad.vmap's fallback)
    "fallback_loop": lambda ops, p: (anp.stack([anp.matmul(x, ops[1]) for x in ops[0]]),),
    "reshape": lambda ops, p: anp.reshape(ops[0], p["shape"]),
    "transpose": lambda ops, p: anp.transpose(ops[0], p["axes"]),
    # autograd's broadcast_to and where refuse to unbroadcast new leading dims: broadcast by adding zeros
    "broadcast_to": lambda ops, p: ops[0] + anp.zeros(p["shape"]),
    "where": lambda ops, p: anp.where(*[op + anp.zeros(np.broadcast_shapes(*map(np.shape, ops))) for op in ops]),
    "sum_to": lambda ops, p: _sum_to(Autograd, ops[0], p["shape"]),
    "getitem": lambda ops, p: ops[0][build_index(p["index"], ops[1:])],
    "concatenate": lambda ops, p: anp.concatenate(ops, **p),
    "roll": lambda ops, p: anp.roll(ops[0], *[v[0] if len(v) == 1 else v for v in (p["shift"], p["axis"])]),
    "einsum": lambda ops, p: anp.einsum(p["subscripts"], *ops),
    "slogdet": lambda ops, p: _slogdet_autograd(ops[0]),
    "cholesky": lambda ops, p: _cholesky_autograd(ops[0], p["upper"]),
    "eigh": lambda ops, p: anp.linalg.eigh(hermitian(Autograd, ops[0], p["UPLO"] == "L")),
    "eig": lambda ops, p: anp.linalg.eig(ops[0]),
    "svd": lambda ops, p: anp.linalg.svd(ops[0], full_matrices=False),
    "pinv": lambda ops, p: anp.linalg.pinv(ops[0]),    # autograd's takes no rcond (numpy's default is 1e-15)
    "fftn": lambda ops, p: (anp.fft.ifftn if p["inverse"] else anp.fft.fftn)(ops[0], s=p["s"], axes=p["axes"],
                                                                             norm=p["norm"]),
    # autograd's real FFT VJPs scale for norm=None only: numpy's "backward" spelled as None
    "rfftn": lambda ops, p: anp.fft.rfftn(ops[0], s=p["s"], axes=p["axes"], norm=_none_for_backward(p["norm"])),
    "irfftn": lambda ops, p: anp.fft.irfftn(ops[0], s=p["s"], axes=p["axes"], norm=_none_for_backward(p["norm"])),
    "sigmoid": lambda ops, p: 1 / (1 + anp.exp(-ops[0])),     # ad.nn.sigmoid: no numpy function
}

# primitive -> why autograd cannot be its oracle; a (predicate of the sample's params, reason)
# pair where it lacks only some calls (test_autograd_lacks_what_is_listed checks the VJP table)
AUTOGRAD_LACKS = {
    "positive": "no VJP for np.positive",
    "full": "not called with an operand (a creation function's like=)",
    "setitem": "autograd has no item assignment",
    "index_add": "no VJP for np.add.at",
    "array": "np.array of a box is a container, not this primitive",
    "phase_free": "ad's own check of a phase-free loss, no counterpart",
    "cbrt": "no VJP for np.cbrt", "float_power": "no VJP for np.float_power",
    "cumprod": "no VJP for np.cumprod", "qr": "no VJP for np.linalg.qr",
    "vecdot": "no VJP for np.vecdot", "matvec": "no VJP for np.matvec", "vecmat": "no VJP for np.vecmat",
    "rfftn": (lambda p: p["s"][-1] % 2 == 1,
              "autograd: 'Real FFT gradient for odd lengthed last axes is not implemented'"),
    "irfftn": (lambda p: p["s"][-1] % 2 == 1,
               "autograd: 'Real FFT gradient for odd lengthed last axes is not implemented'"),
}

# primitive -> how autograd's gradient is wrong for complex input (checked: torch and finite
# differences agree with ad there, and test_autograd_is_wrong_where_listed sees autograd differ)
AUTOGRAD_WRONG = {
    "sign": "autograd's np.sign has gradient 0, right for real x, wrong for complex z/|z|",
    "cholesky": "autograd's VJP is Murray's real formula (plain transposes, no conjugates)",
    "pinv": "autograd's VJP is the real formula (plain transposes, no conjugates)",
    "rfftn": (lambda p: p["norm"] == "forward", "autograd's VJP leaves out the 1/n of norm='forward'"),
    "irfftn": (lambda p: p["norm"] == "forward", "autograd's VJP leaves out the n of norm='forward'"),
}


# -- how the primitives are spelled by torch ------------------------------------------------------

def _index_add_torch(ops, p):
    x, v, *arrays = ops
    assert all(isinstance(s, tuple) and s[0] == "array" for s in p["index"]), p["index"]
    return x.clone().index_put(tuple(arrays[s[1]] for s in p["index"]), v, accumulate=True)


def _setitem_torch(ops, p):
    out = ops[0].clone()
    out[build_index(p["index"], ops[2:])] = ops[1]
    return out


def _prod_torch(ops, p):
    x, axis, keep = ops[0], p.get("axis"), p.get("keepdims", False)
    if axis is None:
        y = torch.prod(x.reshape(-1))
        return y.reshape((1,) * x.ndim) if keep else y
    (dim,) = _dims(axis, x.ndim)
    return torch.prod(x, dim=dim, keepdim=keep)


def _reduce(fn):
    return lambda ops, p: fn(ops[0], dim=_dims(p.get("axis"), ops[0].ndim), keepdim=p.get("keepdims", False))


TORCH_DTYPES = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
                np.dtype(np.complex128): torch.complex128, np.dtype(np.complex64): torch.complex64}

# primitive name -> (operands as tensors, params) -> torch value
TORCH_CALLS = {
    "astype": lambda ops, p: ops[0].to(TORCH_DTYPES[np.dtype(p["dtype"])]),
    "fallback_loop": lambda ops, p: (torch.stack([x @ ops[1] for x in ops[0]]),),    # matmul looped, as above
    "reshape": lambda ops, p: ops[0].reshape(p["shape"]),
    "transpose": lambda ops, p: ops[0].permute(p["axes"]),
    "broadcast_to": lambda ops, p: torch.broadcast_to(ops[0], p["shape"]),
    "sum_to": lambda ops, p: _sum_to(Torch, ops[0], p["shape"]),
    "getitem": lambda ops, p: ops[0][build_index(p["index"], ops[1:])],
    "setitem": _setitem_torch,
    "index_add": _index_add_torch,
    "concatenate": lambda ops, p: torch.cat(ops, dim=p["axis"]),
    "roll": lambda ops, p: torch.roll(ops[0], p["shift"], p["axis"]),
    "conjugate": lambda ops, p: torch.conj(ops[0]),
    "power": lambda ops, p: torch.pow(*ops),
    "sign": lambda ops, p: torch.sgn(ops[0]),
    "sum": _reduce(torch.sum), "mean": _reduce(torch.mean), "prod": _prod_torch,
    "cumsum": lambda ops, p: torch.cumsum(ops[0], dim=p["axis"]),
    "cumprod": lambda ops, p: torch.cumprod(ops[0], dim=p["axis"]),
    "einsum": lambda ops, p: torch.einsum(p["subscripts"], *ops),
    "vecdot": lambda ops, p: torch.linalg.vecdot(*ops),
    "matvec": lambda ops, p: torch.matmul(*ops),
    "vecmat": lambda ops, p: torch.matmul(ops[0].conj(), ops[1]),
    "inv": lambda ops, p: torch.linalg.inv(ops[0]),
    "solve": lambda ops, p: torch.linalg.solve(*ops),
    "det": lambda ops, p: torch.linalg.det(ops[0]),
    "slogdet": lambda ops, p: tuple(torch.linalg.slogdet(ops[0])),
    "cholesky": lambda ops, p: torch.linalg.cholesky(hermitian(Torch, ops[0], not p["upper"]), upper=p["upper"]),
    "eigh": lambda ops, p: tuple(torch.linalg.eigh(hermitian(Torch, ops[0], p["UPLO"] == "L"))),
    "eig": lambda ops, p: tuple(torch.linalg.eig(ops[0])),
    "svd": lambda ops, p: tuple(torch.linalg.svd(ops[0], full_matrices=False)),
    "qr": lambda ops, p: tuple(torch.linalg.qr(ops[0])),
    "pinv": lambda ops, p: torch.linalg.pinv(ops[0], rtol=p["rcond"], hermitian=p["hermitian"]),
    "fftn": lambda ops, p: (torch.fft.ifftn if p["inverse"] else torch.fft.fftn)(ops[0], s=p["s"], dim=p["axes"],
                                                                                 norm=p["norm"]),
    "rfftn": lambda ops, p: torch.fft.rfftn(ops[0], s=p["s"], dim=p["axes"], norm=p["norm"]),
    "irfftn": lambda ops, p: torch.fft.irfftn(ops[0], s=p["s"], dim=p["axes"], norm=p["norm"]),
    "sigmoid": lambda ops, p: torch.sigmoid(ops[0]),
}

# primitive -> why torch cannot be its oracle
TORCH_LACKS = {
    "full": "not called with an operand (a creation function's like=)",
    "array": "np.array has no torch counterpart as an operation",
    "phase_free": "ad's own check of a phase-free loss, no counterpart",
}


# -- the oracles ----------------------------------------------------------------------------------

def _namespace(root, function):
    """The oracle's module for a numpy function: numpy.linalg -> autograd.numpy.linalg (torch.linalg)."""
    module_name = getattr(function, "__module__", None) or "numpy"   # ufuncs have none
    assert module_name.split(".")[0] == "numpy", (f"{function} is not numpy's: spell it for {root.__name__} "
                                                  "in this file's tables, or list it as lacking")
    for part in module_name.split(".")[1:]:
        root = getattr(root, part)
    return root


def _with_literals(case, xs):
    """The primitive's operands: the drawn values with the sample's literals put back."""
    it = iter(xs)
    return [i.value if i.kind == "literal" else next(it) for i in case.sample.inputs]


def _spelled(case, calls, root):
    prim, params = case.primitive, case.sample.params
    spelled = calls.get(prim.name)
    if spelled is None:
        assert prim.function is not None, (f"{prim.name} records no numpy function: spell it for "
                                           f"{root.__name__} in this file's tables, or list it as lacking")
        f = getattr(_namespace(root, prim.function), prim.function.__name__)
        spelled = lambda ops, p: f(*ops, **p)  # noqa: E731
    return lambda *xs: spelled(_with_literals(case, xs), params)


def ours(case):
    """The primitive itself, bound with the sample's literals and params (not the sample's own
    call: the views of the oracle's outputs below are the same for all three)."""
    return lambda *xs: case.primitive.bind(*_with_literals(case, xs), **case.sample.params)


def _view(case, xp, y):
    ys = tuple(y[k] for k in range(len(y))) if case.primitive.multiple_results else (y,)  # autograd's boxes too
    view = PHASE_FREE.get(case.primitive.name)
    return ys if view is None else view(xp, *ys)


def _weights(ys, rng):
    """Complex weights on complex outputs, real on real ones, none on integer or bool outputs."""
    out = []
    for v in ys:
        v = np.asarray(v)
        if v.dtype.kind == "c":
            out.append(rng.standard_normal(v.shape) + 1j * rng.standard_normal(v.shape))
        elif v.dtype.kind == "f":
            out.append(rng.standard_normal(v.shape))
        else:
            out.append(None)
    return out


def _wrt(xs):
    return tuple(i for i, x in enumerate(xs) if np.asarray(x).dtype.kind in "fc")


def _loss(case, fn, xp, ws):
    """Re(sum(w * y)) over the weighted (viewed) outputs ``y`` of ``fn``, in an oracle's functions."""
    def loss(*xs):
        return sum(xp.sum(xp.real(leaf * w)) for leaf, w in zip(_view(case, xp, fn(*xs)), ws) if w is not None)
    return loss


def our_gradient(case, xs, ws):
    return ad.grad(_loss(case, ours(case), Numpy, ws), _wrt(xs))(*xs)


def autograd_gradient(case, xs, ws):
    fn = _spelled(case, AUTOGRAD_CALLS, anp)
    _assert_same_values(_view(case, Autograd, fn(*xs)), _view(case, Numpy, ours(case)(*xs)), "autograd's")
    return autograd.grad(_loss(case, fn, Autograd, ws), _wrt(xs))(*xs)


def _tensor(x, requires_grad=False):
    return torch.tensor(np.asarray(x), requires_grad=requires_grad)


def _numpy(t):
    return t.detach().resolve_conj().numpy()


def torch_gradient(case, xs, ws):
    """PyTorch's gradient, conjugated into this convention."""
    wrt = _wrt(xs)
    fn = _spelled(case, TORCH_CALLS, torch)
    ts = [_tensor(x, i in wrt) for i, x in enumerate(xs)]
    ys = _view(case, Torch, fn(*ts))
    _assert_same_values([_numpy(t) for t in ys], _view(case, Numpy, ours(case)(*xs)), "torch's")
    loss = sum(torch.real(torch.sum(leaf * _tensor(w))) for leaf, w in zip(ys, ws) if w is not None)
    grads = torch.autograd.grad(loss, [ts[i] for i in wrt], allow_unused=True)
    return tuple(np.zeros(np.shape(xs[i]), np.asarray(xs[i]).dtype) if g is None else np.conj(_numpy(g))
                 for i, g in zip(wrt, grads))


def _assert_same_values(got, want, oracle):
    assert len(got) == len(want), f"{oracle} function has {len(got)} outputs, the primitive {len(want)}"
    for k, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{oracle} forward value, output {k}: another function")


def assert_gradients_agree(ours_, theirs, oracle: str):
    """The comparison every oracle test makes (and the one the wrong-rule test must see fail)."""
    assert len(ours_) == len(theirs), (len(ours_), len(theirs))
    for k, (a, b) in enumerate(zip(ours_, theirs)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"operand {k}: shape {a.shape}, {oracle} {b.shape}"
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * scale,
                                   err_msg=f"operand {k}: ad's gradient differs from {oracle}'s")


# -- the tests ------------------------------------------------------------------------------------

def _has_float_operand(case):
    return any(i.kind == "float" for i in case.sample.inputs)


COMPLEX = [c for c in PRIMITIVE_CASES if c.primitive.complex_rule and _has_float_operand(c)]


def _lacks(lacks, case) -> bool:
    entry = lacks.get(case.primitive.name)
    return entry is not None and (isinstance(entry, str) or entry[0](case.sample.params))


def _params(*tables):
    return [pytest.param(c, shape, id=f"{c.name}-{shape}") for c in COMPLEX
            if not any(_lacks(t, c) for t in tables) for shape in c.sample.shapes]


def _draw(case, shape, oracle):
    """complex128 operands, or real ones for a primitive that refuses complex input (rfftn): its
    output is complex all the same."""
    rng = np.random.default_rng(zlib.crc32(f"{case.name}/{shape}/{oracle}".encode()))
    xs = operands(case.sample, rng, shape, C128)
    try:
        y = ours(case)(*xs)
    except TypeError:
        xs = operands(case.sample, rng, shape, F64)
        y = ours(case)(*xs)
    return xs, _weights(_view(case, Numpy, y), rng)


@pytest.mark.parametrize("case,shape", _params(AUTOGRAD_LACKS, AUTOGRAD_WRONG))
def test_gradient_matches_autograd(case, shape):
    xs, ws = _draw(case, shape, "autograd")
    assert_gradients_agree(our_gradient(case, xs, ws), autograd_gradient(case, xs, ws), "HIPS autograd")


@pytest.mark.parametrize("case,shape", _params(TORCH_LACKS))
def test_gradient_matches_torch_conjugated(case, shape):
    xs, ws = _draw(case, shape, "torch")
    assert_gradients_agree(our_gradient(case, xs, ws), torch_gradient(case, xs, ws), "PyTorch (conjugated)")


def test_autograd_lacks_what_is_listed():
    """Each listed primitive with a numpy function really has no autograd VJP (so the list
    shrinks when autograd grows)."""
    defined = {getattr(p, "__name__", None) for p in primitive_vjps}
    for name, entry in AUTOGRAD_LACKS.items():
        f = ad.REGISTRY[name].function if name in ad.REGISTRY else None
        if f is not None and isinstance(entry, str):
            assert f.__name__ not in defined, f"autograd has a VJP for {name}: compare with it"


@pytest.mark.parametrize("case,shape", [p for p in _params(AUTOGRAD_LACKS) if _lacks(AUTOGRAD_WRONG, p.values[0])])
def test_autograd_is_wrong_where_listed(case, shape):
    """Where autograd is listed as wrong, it still differs from ad (and torch agrees with ad, in
    test_gradient_matches_torch_conjugated; finite differences, in tests/lib/test_complex.py)."""
    xs, ws = _draw(case, shape, "autograd")
    with pytest.raises(AssertionError, match="differs from"):
        assert_gradients_agree(our_gradient(case, xs, ws), autograd_gradient(case, xs, ws), "HIPS autograd")


# -- the oracles catch a wrong rule ---------------------------------------------------------------

def _conjugated_imag_rule(z):
    """The classic mistake: the cotangent of Im z taken as +i g (PyTorch's sign) instead of -i g."""
    return imag_p.bind(z), lambda dy: (1j * dy,)


def _conjugated_exp_rule(z):
    """The other classic: a holomorphic pullback g * conj(f'(z)) (PyTorch's formula) in ad's convention."""
    y = exp_p.bind(z)
    return y, lambda dy: (dy * np.conj(y),)


WRONG_RULES = [pytest.param(imag_p, _conjugated_imag_rule, id="imag")]
if exp_p.complex_rule:
    WRONG_RULES.append(pytest.param(exp_p, _conjugated_exp_rule, id="exp"))


@pytest.mark.parametrize("oracle", ["autograd", "torch"])
@pytest.mark.parametrize("prim,wrong_rule", WRONG_RULES)
def test_the_oracles_catch_a_wrong_rule(prim, wrong_rule, oracle):
    """The comparison the oracle tests make passes with the rule as written and fails once a
    wrong rule is put in its place with ad.using_rule."""
    (case,) = [c for c in COMPLEX if c.primitive is prim]
    gradient = autograd_gradient if oracle == "autograd" else torch_gradient
    xs, ws = _draw(case, "vector", oracle)
    assert_gradients_agree(our_gradient(case, xs, ws), gradient(case, xs, ws), oracle)   # the right rule
    with ad.using_rule(prim, wrong_rule):
        wrong = our_gradient(case, xs, ws)
    with pytest.raises(AssertionError, match="differs from"):
        assert_gradients_agree(wrong, gradient(case, xs, ws), oracle)
