"""Jacobians and Hessians (ad/transforms/jacobians.py): jacfwd (the derived pushforwards) against jacrev
(the pullbacks) on every sample and composition of the spec table (tests/support/cases.py), against
finite differences on the compositions; against HIPS autograd, torch.autograd.functional,
torch.func and jax on example programs and generated ones (hypothesis); pytrees, argnums,
integer leaves, complex inputs, the caches of jvp and jacrev under guards."""
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ad
from ad.examples import mlp_example, mlp_loss, mlp_loss_for
from tests.support.cases import CASES, COMPOSITIONS, leaves
from tests.support.generated_programs import GENERATED, SETTINGS, build, program_inputs, scalar
from tests.support.needs import module


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _real_params(cases):
    return [pytest.param(c, c.sample.shapes[0], id=f"{c.name}-{c.sample.shapes[0]}") for c in cases
            if any(i.kind == "float" for i in c.sample.inputs)]


def _floats(xs):
    return tuple(k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.inexact))


def _refused(fn):
    """jacfwd's answer, or None where forward mode refuses a rule by name (an opaque closure,
    or a pullback that can be neither transposed nor differentiated)."""
    try:
        return fn()
    except ad.NonDifferentiableError as exc:
        assert "no pushforward for" in str(exc) or "closures" in str(exc) or "not supported" in str(exc), exc
        return None


def _fd_jacobian(fn, xs, pos, eps=1e-6):
    """Central differences, one input element at a time: per float output, per input, the block."""
    def outs(args):
        return [np.asarray(o) for o in leaves(fn(*args)) if np.issubdtype(np.result_type(o), np.inexact)]
    blocks = []
    for k in pos:
        cols = []
        for idx in np.ndindex(np.shape(xs[k])):
            plus, minus = list(xs), list(xs)
            plus[k] = np.array(xs[k], dtype=float, copy=True)
            minus[k] = np.array(xs[k], dtype=float, copy=True)
            plus[k][idx] += eps
            minus[k][idx] -= eps
            cols.append([(p - m) / (2 * eps) for p, m in zip(outs(plus), outs(minus))])
        blocks.append([np.stack([c[i] for c in cols], -1).reshape(np.shape(o) + np.shape(xs[k]))
                       for i, o in enumerate(outs(xs))])
    return blocks


def _blocks(jac, y, pos):
    """Per differentiated argument, per float output leaf: the Jacobian block."""
    ys = leaves(y)
    per_out = leaves(jac) if isinstance(y, (tuple, list)) else (jac,)
    floats_out = [i for i, o in enumerate(ys) if np.issubdtype(np.result_type(o), np.inexact)]
    return [[per_out[i][a] for i in floats_out] for a in range(len(pos))]


@pytest.mark.parametrize("case,shape", _real_params(CASES))
def test_jacfwd_equals_jacrev_on_the_spec_table(case, shape):
    """The Jacobian from the derived pushforwards, column by column, equals the one from the
    pullbacks, row by row (a complex output of real inputs: jacfwd alone, against differences)."""
    xs = case.inputs(shape, _rng(case.name, shape), case.sample.dtypes[0])
    pos = _floats(xs)
    if not pos:
        return
    y = case.fn(*xs)
    fwd = _refused(lambda: ad.jacfwd(case.fn, argnums=pos)(*xs))
    if fwd is None:
        return
    if any(np.iscomplexobj(o) for o in leaves(y)):
        with pytest.raises(ad.NonDifferentiableError, match="use ad.jacfwd"):
            ad.jacrev(case.fn, argnums=pos)(*xs)
        return
    rev = ad.jacrev(case.fn, argnums=pos)(*xs)
    tol = 1e-4 if np.result_type(*xs) == np.float32 else 1e-9
    for a, b in zip(_blocks(fwd, y, pos), _blocks(rev, y, pos)):
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=tol, atol=tol)


@pytest.mark.parametrize("case,shape", _real_params([c for c in CASES if c.name in COMPOSITIONS]))
def test_jacobian_matches_finite_differences_on_the_compositions(case, shape):
    xs = case.inputs(shape, _rng(case.name, shape, "fd"), case.sample.dtypes[0])
    pos = _floats(xs)
    if not pos or np.result_type(*xs) != np.float64:
        return
    jac = _refused(lambda: ad.jacobian(case.fn, argnums=pos)(*xs))
    if jac is None:
        return
    y = case.fn(*xs)
    for got, want in zip(_blocks(jac, y, pos), _fd_jacobian(case.fn, xs, pos)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.real(g) if not np.iscomplexobj(w) else g, w, rtol=1e-5, atol=1e-5)


# -- oracles -------------------------------------------------------------------------------------

def _vector_program(xp, x, W):
    return xp.tanh(W @ x) * xp.sin(x[:3]) + xp.exp(0.1 * x[1:4])


def _scalar_program(xp, x, W):
    h = xp.tanh(W @ x)
    return xp.sum(h * h * xp.cos(x[:3])) + xp.sum(xp.exp(0.3 * x) * x)


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal(5), rng.standard_normal((3, 5))


def test_against_hips_autograd():
    agrad = module("autograd")
    import autograd.numpy as anp
    x, W = _data()
    v = np.arange(5.0)
    np.testing.assert_allclose(ad.jacfwd(lambda x: _vector_program(np, x, W))(x),
                               agrad.jacobian(lambda x: _vector_program(anp, x, W))(x), rtol=1e-12)
    np.testing.assert_allclose(ad.jacrev(lambda W: _vector_program(np, x, W))(W),
                               agrad.jacobian(lambda W: _vector_program(anp, x, W))(W), rtol=1e-12)
    np.testing.assert_allclose(ad.hessian(lambda x: _scalar_program(np, x, W))(x),
                               agrad.hessian(lambda x: _scalar_program(anp, x, W))(x), rtol=1e-12)
    _, ty = ad.jvp(lambda x: _vector_program(np, x, W), (x,), (v,))
    np.testing.assert_allclose(ty, agrad.make_jvp(lambda x: _vector_program(anp, x, W))(x)(v)[1], rtol=1e-12)
    _, hv = ad.hvp(lambda x: _scalar_program(np, x, W), (x,), (v,))
    hvp_fn, _ = agrad.make_hvp(lambda x: _scalar_program(anp, x, W))(x)
    np.testing.assert_allclose(hv, hvp_fn(v), rtol=1e-12)


def test_against_torch():
    torch = module("torch")
    from torch.func import hessian as thessian, jacfwd as tjacfwd, jacrev as tjacrev
    x, W = _data()
    tx, tW = torch.tensor(x), torch.tensor(W)
    want = torch.autograd.functional.jacobian(lambda x, W: _vector_program(torch, x, W), (tx, tW))
    got = ad.jacobian(lambda x, W: _vector_program(np, x, W), argnums=(0, 1))(x, W)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-12)
    got = ad.jacfwd(lambda x, W: _vector_program(np, x, W), argnums=(0, 1))(x, W)
    for g, w in zip(got, tjacfwd(lambda x, W: _vector_program(torch, x, W), argnums=(0, 1))(tx, tW)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ad.jacrev(lambda W: _vector_program(np, x, W))(W),
                               tjacrev(lambda W: _vector_program(torch, tx, W))(tW).numpy(), rtol=1e-12)
    H = ad.hessian(lambda x, W: _scalar_program(np, x, W), argnums=(0, 1))(x, W)
    Ht = torch.autograd.functional.hessian(lambda x, W: _scalar_program(torch, x, W), (tx, tW))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j], Ht[i][j].numpy(), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(ad.hessian(lambda W: _scalar_program(np, x, W))(W),
                               thessian(lambda W: _scalar_program(torch, tx, W))(tW).numpy(), rtol=1e-11)


def test_against_jax():
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    x, W = _data()
    params, bx, by = mlp_example(4, (3, 5, 2), 1)
    jl = mlp_loss_for(jnp)
    np.testing.assert_allclose(ad.jacfwd(lambda x: _vector_program(np, x, W))(x),
                               jax.jit(jax.jacfwd(lambda x: _vector_program(jnp, x, W)))(x), rtol=1e-12)
    got = ad.hessian(mlp_loss)(params, bx, by)            # a dict of dicts, as jax's
    want = jax.jit(jax.hessian(jl))({k: jnp.asarray(v) for k, v in params.items()}, bx, by)
    for a in params:
        for b in params:
            np.testing.assert_allclose(got[a][b], want[a][b], rtol=1e-9, atol=1e-12, err_msg=f"{a}, {b}")


@SETTINGS
@given(GENERATED, st.integers(0, 2**16))
def test_random_programs_hessians_and_jacobians(program, seed):
    """The Hessian (forward over reverse) against the finite differences of the gradient;
    hvp against it; the Jacobian of a vector function by both modes."""
    f = scalar(build(program, np), np)
    xs = program_inputs(seed)
    H = ad.hessian(f, argnums=(0, 1))(*xs)
    g = ad.grad(f, (0, 1))
    full = np.block([[H[0][0], H[0][1]], [H[1][0], H[1][1]]])
    eps, z = 1e-6, np.concatenate(xs)
    fd = np.stack([(np.concatenate(g(*np.split(z + eps * e, 2))) - np.concatenate(g(*np.split(z - eps * e, 2))))
                   / (2 * eps) for e in np.eye(8)], -1)
    np.testing.assert_allclose(full, fd, rtol=1e-5, atol=1e-5)
    v = np.random.default_rng(seed).standard_normal(8)
    _, hv = ad.hvp(f, xs, tuple(np.split(v, 2)))
    np.testing.assert_allclose(np.concatenate(hv), full @ v, rtol=1e-9, atol=1e-10)

    def vec(x0, x1):
        return ad.grad(f, (0, 1))(x0, x1)[0] * x1      # a vector output with mixed terms
    np.testing.assert_allclose(ad.jacfwd(vec, (0, 1))(*xs)[1], ad.jacrev(vec, (0, 1))(*xs)[1], rtol=1e-9, atol=1e-10)


# -- conventions -------------------------------------------------------------------------------

def test_pytrees_argnums_and_integer_leaves():
    def f(p, k):
        return {"y": p["w"] * p["b"] ** 2, "n": k * 2}
    p = {"w": np.arange(1.0, 4.0), "b": 2.0}
    for jac in (ad.jacfwd, ad.jacrev, ad.jacobian):
        J = jac(f)(p, 3)
        np.testing.assert_allclose(J["y"]["w"], np.diag([4.0, 4.0, 4.0]))
        np.testing.assert_allclose(J["y"]["b"], 4.0 * p["w"])
        assert J["n"] == {"w": None, "b": None}
    assert ad.jacfwd(lambda x, i: x[i] * x, argnums=(0, 1))(np.ones(2), 1)[1] is None
    H = ad.hessian(lambda p: np.sum(p["w"] ** 3) * p["b"])(p)
    np.testing.assert_allclose(H["w"]["w"], np.diag(6 * p["w"] * 2.0))
    np.testing.assert_allclose(H["w"]["b"], 3 * p["w"] ** 2)
    assert np.shape(H["b"]["b"]) == () and H["b"]["b"] == 0


def test_complex_jacobians_need_a_holomorphic_function():
    z = np.array([1j, 2.0 + 1j])
    want = np.diag(3 * z ** 2)
    for jac in (ad.jacfwd, ad.jacrev, ad.jacobian):
        np.testing.assert_allclose(jac(lambda z: z ** 3, holomorphic=True)(z), want)
        with pytest.raises(ad.NonDifferentiableError, match="holomorphic=True"):
            jac(lambda z: z ** 3)(z)
    np.testing.assert_allclose(ad.hessian(lambda z: z ** 3, holomorphic=True)(1.0 + 1j), 6 * (1.0 + 1j))
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(ad.jacfwd(lambda x: np.exp(1j * x))(x), np.diag(1j * np.exp(1j * x)))
    np.testing.assert_allclose(ad.jacobian(lambda x: np.exp(1j * x))(x), np.diag(1j * np.exp(1j * x)))
    with pytest.raises(ad.NonDifferentiableError, match="use ad.jacfwd"):
        ad.jacrev(lambda x: np.exp(1j * x))(x)


def test_forms_agree():
    x, W = _data()

    def f(x):
        return _vector_program(np, x, W)
    ref = ad.jacfwd(f)(x)
    for form in ("compiled", "closure"):
        np.testing.assert_allclose(ad.jacfwd(f, form=form)(x), ref, rtol=1e-12)
    np.testing.assert_allclose(ad.jacrev(f, form="compiled")(x), ref, rtol=1e-12)
    g = lambda x: _scalar_program(np, x, W)  # noqa: E731
    v = np.ones(5)
    for form in ("compiled", "closure"):
        np.testing.assert_allclose(ad.hvp(g, (x,), (v,), form=form)[1], ad.hvp(g, (x,), (v,))[1], rtol=1e-12)
        np.testing.assert_allclose(ad.hessian(g, form=form)(x), ad.hessian(g)(x), rtol=1e-12)


def test_jacobians_do_not_retrace_and_respect_guards():
    def f(x):
        return np.sin(x) if np.sum(x) > 0 else np.cos(x) * 2.0
    x, t = np.array([0.3, 0.4]), np.array([1.0, -1.0])
    for sign in (1, 1, -1, -1, 1):
        _, ty = ad.jvp(f, (sign * x,), (t,))
        want = np.cos(sign * x) * t if sign > 0 else -2.0 * np.sin(sign * x) * t
        np.testing.assert_allclose(ty, want)
    jr = ad.jacrev(f)
    for sign in (1, -1, 1):
        np.testing.assert_allclose(jr(sign * x), ad.jacfwd(f)(sign * x))
    assert jr.cache_info().traces == 2


def test_one_shot_transforms_see_the_arrays_a_function_reads_now():
    """ad.jvp and ad.hvp keep no tapes across calls: a changed global is never a stale constant."""
    w = np.array([1.0, 2.0])

    def f(x):
        return np.sum(w * x * x)
    x, t = np.array([0.5, -1.0]), np.array([1.0, 1.0])
    assert ad.jvp(f, (x,), (t,))[1] == pytest.approx(np.sum(2 * w * x * t))
    assert ad.hvp(f, (x,), (t,))[1] == pytest.approx(2 * w * t)
    w[:] = [3.0, -1.0]
    assert ad.jvp(f, (x,), (t,))[1] == pytest.approx(np.sum(2 * w * x * t))
    np.testing.assert_allclose(ad.hvp(f, (x,), (t,))[1], 2 * w * t)


def test_a_new_frule_reaches_later_jvps():
    cube = ad.primitive(lambda x: x * x * x, name="test_jacobians_cube")
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))
    ad.jvp(cube, (np.ones(2),), (np.ones(2),))

    @ad.frule(cube)
    def cube_frule(x):
        return cube(x), lambda dx: 3 * x * x * dx
    _, f_jvp = ad.linearize(cube, np.ones(2))
    assert "its frule" in str(f_jvp.tape)


def test_transform_objects_reuse_their_tapes_bound_methods_too():
    """jacfwd, jacrev and hessian keep their tapes per signature; a bound method (a new object
    at every attribute access) is an ordinary function to them."""
    class Model:
        def __init__(self):
            self.w = np.array([1.0, -2.0, 0.5])

        def __call__(self, x):
            return np.tanh(self.w * x)

        def loss(self, x):
            return np.sum(self(x) ** 2)
    m, x = Model(), np.array([0.1, 0.2, 0.3])
    for transform, method, want in ((ad.jacfwd, m.__call__, np.diag(m.w / np.cosh(m.w * x) ** 2)),
                                    (ad.jacrev, m.__call__, np.diag(m.w / np.cosh(m.w * x) ** 2)),
                                    (ad.hessian, m.loss, ad.jacrev(ad.grad(m.loss))(x))):
        jac = transform(method)
        for _ in range(3):
            np.testing.assert_allclose(jac(x), want, rtol=1e-12)
        assert (jac.cache_info().traces, jac.cache_info().hits) == (1, 2)


def test_a_rule_registered_after_a_transform_cached_its_tape_is_used():
    """A cached tangent tape inlined the pushforwards of the rules of its day: a later
    @ad.frule (or rrule) rebuilds it instead of answering with the old one."""
    cube = ad.primitive(lambda x: x * x * x, name="test_jacobians_cube_cached")
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))
    x = np.array([1.0, 2.0])
    fwd, rev = ad.jacfwd(cube), ad.jacrev(cube)
    np.testing.assert_allclose(fwd(x), np.diag(3 * x * x))
    np.testing.assert_allclose(rev(x), np.diag(3 * x * x))

    @ad.frule(cube)
    def cube_frule(x):
        return cube(x), lambda dx: 4 * x * x * dx      # visibly not the derived one
    np.testing.assert_allclose(fwd(x), np.diag(4 * x * x))
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (5 * x * x * dy,)))
    np.testing.assert_allclose(rev(x), np.diag(5 * x * x))
    assert fwd.cache_info().signatures == rev.cache_info().signatures == 1


@pytest.mark.parametrize("direction", ["jacfwd", "jacrev", "jacobian"])
def test_zero_size_leaves_have_empty_blocks(direction):
    """A leaf with no element has a block of size zero (jax's answer), never None."""
    jax, jnp = module("jax"), module("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    x, e = np.array([0.1, 0.2, 0.3]), np.zeros(0)
    jac = getattr(ad, direction)

    def f(xp):
        return lambda x, e: (xp.concatenate([xp.sin(x), 2.0 * e]), x[:0] * 3.0)
    got = jac(f(np), argnums=(0, 1))(x, e)
    want = getattr(jax, "jacfwd" if direction == "jacobian" else direction)(f(jnp), argnums=(0, 1))(x, e)
    for g, w in zip(pytree_leaves(got), pytree_leaves(want)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w)
    assert ad.hessian(lambda e: np.sum(e ** 2))(e).shape == (0, 0)
    assert jac(np.sin)(np.zeros((0, 2))).shape == (0, 2, 0, 2)


def pytree_leaves(tree):
    return [np.asarray(x) for x in ad.pytree.flatten(tree)[0]]
