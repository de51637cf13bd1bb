"""Forward mode against other systems: ``ad.jvp`` against ``jax.jvp`` and ``torch.func.jvp`` on
the spec table's ufunc samples and on generated programs (hypothesis); ``ad.jacfwd``,
``ad.jacrev`` and ``ad.hessian`` against HIPS autograd's ``jacobian``/``hessian`` and
``torch.autograd.functional.jacobian``/``hessian`` on the same generated programs. The programs
are written once over a module ``m`` (numpy, jax.numpy, torch or autograd.numpy);
tests/test_forward.py and tests/test_jacobians.py draw their generated programs from here too. About 25 s of
CPU, importing jax and torch included."""
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad
from cases import PRIMITIVE_CASES, leaves
from needs import module

N = 4
REVERSE = np.arange(N)[::-1].copy()      # an index array: torch has no negative steps, autograd no flip
GATHER = np.array([3, 0, 0, 2])

# name: (arity, op over a module m): spelled alike in numpy, jax.numpy, torch and autograd.numpy
OPS = {
    "sin": (1, lambda m, x: m.sin(x)), "cos": (1, lambda m, x: m.cos(x)), "tanh": (1, lambda m, x: m.tanh(x)),
    "exp_tanh": (1, lambda m, x: m.exp(m.tanh(x))), "log1p_sq": (1, lambda m, x: m.log1p(x * x)),
    "sqrt1": (1, lambda m, x: m.sqrt(1.0 + x * x)), "arctan": (1, lambda m, x: m.arctan(x)),
    "scale": (1, lambda m, x: 0.5 * x - 1.0), "cumsum": (1, lambda m, x: m.cumsum(x, 0)),
    "reverse": (1, lambda m, x: x[REVERSE]), "centre": (1, lambda m, x: x - m.mean(x)),
    "softmax": (1, lambda m, x: m.exp(x - m.max(x)) / m.sum(m.exp(x - m.max(x)))),
    "add": (2, lambda m, x, y: x + y), "sub": (2, lambda m, x, y: x - y), "mul": (2, lambda m, x, y: x * y),
    "div": (2, lambda m, x, y: x / (1.0 + y * y)), "hypot": (2, lambda m, x, y: m.hypot(x, 1.0 + y * y)),
    "logaddexp": (2, lambda m, x, y: m.logaddexp(x, y)),
    "outer_sum": (2, lambda m, x, y: m.sum(x[:, None] * y[None, :], 0)),
    "concat_split": (2, lambda m, x, y: m.concatenate([x, y])[2:2 + N]),
    "square": (1, lambda m, x: x * x), "neg": (1, lambda m, x: -x), "sum": (1, lambda m, x: m.sum(x) + 0 * x),
    "gather": (1, lambda m, x: x[GATHER]), "roll": (1, lambda m, x: m.roll(x, 1)),
    "arctan2": (2, lambda m, x, y: m.arctan2(x, 2.0 + y * y)),
    "einsum": (2, lambda m, x, y: m.einsum("i,j->j", x, y)), "stack_mean": (2, lambda m, x, y: m.stack([x, y]).mean(0)),
    "prod_pairs": (1, lambda m, x: m.concatenate([m.prod(x.reshape(2, 2), 1)] * 2)),
}

GENERATED = st.lists(st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 100), st.integers(0, 100)),
                    min_size=1, max_size=10)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ORACLE_SETTINGS = settings(SETTINGS, max_examples=25)       # the oracles are slower


def build(program, m):
    """(x0, x1) -> a vector, the program run over module ``m``."""
    def f(x0, x1):
        pool = [x0, x1]
        for name, i, j in program:
            arity, op = OPS[name]
            pool.append(op(m, *(pool[i % len(pool)], pool[j % len(pool)])[:arity]))
        return pool[-1] + 0.1 * pool[-2] * pool[-2]
    return f


def scalar(f, m):
    return lambda x0, x1: m.sum(f(x0, x1) * f(x0, x1))


def _data(seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(N) for _ in range(4))       # x0, x1, t0, t1


def program_inputs(seed):
    """(x0, x1) of a generated program."""
    return _data(seed)[:2]


def _jax():
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


# -- the spec table ---------------------------------------------------------------------------

# numpy ufuncs the oracles do not differentiate, or differentiate wrongly
NO_ORACLE = {"nextafter": "jax and torch have no derivative rule for it (ad's: 1 in x, 0 in y, as autograd's)"}
WRONG_ORACLE = {("ldexp", "torch"): "torch.func.jvp computes d ldexp(x, e)/dx = 2**e in integers: 0 for e < 0"}


def _ufunc_cases():
    """The samples of primitives that are numpy ufuncs called without params (jax.numpy spells
    them alike; torch where it has the name)."""
    return [pytest.param(c, id=c.name) for c in PRIMITIVE_CASES
            if isinstance(c.primitive.function, np.ufunc) and getattr(np, c.primitive.function.__name__, None)
            is c.primitive.function and c.primitive.function.__name__ not in NO_ORACLE and not c.sample.params
            and c.sample.call is None and c.sample.derive is None and c.primitive.differentiable]


def _split(case, rng):
    """The sample's operands (at its first shape set), its float positions and a tangent each."""
    xs = case.inputs(case.sample.shapes[0], rng)
    floats = [k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.floating)]
    return xs, floats, [rng.standard_normal(np.shape(xs[k])) for k in floats]


def _over(fn, xs, floats):
    """``fn`` as a function of the float operands alone (the others fixed)."""
    def g(*fx):
        args = list(xs)
        for k, v in zip(floats, fx):
            args[k] = v
        return fn(*args)
    return g


def _literal_call(case, fn, array):
    """``fn`` called like the sample's ``bind``: its literal operands in place (as ``array``s)."""
    def call(*values):
        it = iter(values)
        return fn(*[array(i.value) if i.kind == "literal" else next(it) for i in case.sample.inputs])
    return call


@pytest.mark.parametrize("case", _ufunc_cases())
def test_spec_table_jvp_against_jax_and_torch(case):
    jax, jnp = _jax()
    torch = module("torch")
    name = case.primitive.function.__name__
    xs, floats, ts = _split(case, np.random.default_rng(zlib.crc32(case.name.encode())))
    assert floats, f"{case.name}: a differentiable sample with no float operand"
    y, ty = ad.jvp(_over(case.fn, xs, floats), tuple(xs[k] for k in floats), tuple(ts))
    oracles = [(jax.jvp, jnp, jnp.asarray)] + [(torch.func.jvp, torch, torch.as_tensor)] * (
        hasattr(torch, name) and (name, "torch") not in WRONG_ORACLE)
    for jvp, m, array in oracles:
        fn = _over(_literal_call(case, getattr(m, name), array), [array(x) for x in xs], floats)
        _, want = jvp(fn, tuple(array(xs[k]) for k in floats), tuple(map(array, ts)))
        for a, b in zip(leaves(ty), leaves(want)):
            if a is not None:               # an integer output (frexp's exponent) has no tangent
                np.testing.assert_allclose(a, np.asarray(b), rtol=1e-9, atol=1e-12, err_msg=f"{name}: {m.__name__}")


def test_the_spec_table_comparison_covers_the_ufuncs():
    jnp = _jax()[1]
    compared = {c.values[0].primitive.function.__name__ for c in _ufunc_cases()
                if hasattr(jnp, c.values[0].primitive.function.__name__)}
    assert len(compared) >= 50 and {"sin", "arctan2", "hypot", "logaddexp", "power"} <= compared, sorted(compared)


# -- generated programs -------------------------------------------------------------------------

@ORACLE_SETTINGS
@given(GENERATED, st.integers(0, 2**16))
def test_generated_programs_jvp_against_jax_and_torch(program, seed):
    jax, jnp = _jax()
    torch = module("torch")
    x0, x1, t0, t1 = _data(seed)
    _, ty = ad.jvp(build(program, np), (x0, x1), (t0, t1))
    _, jty = jax.jvp(build(program, jnp), tuple(map(jnp.asarray, (x0, x1))), tuple(map(jnp.asarray, (t0, t1))))
    np.testing.assert_allclose(ty, np.asarray(jty), rtol=1e-9, atol=1e-12)
    _, tty = torch.func.jvp(build(program, torch), tuple(map(torch.as_tensor, (x0, x1))),
                            tuple(map(torch.as_tensor, (t0, t1))))
    np.testing.assert_allclose(ty, tty.numpy(), rtol=1e-9, atol=1e-12)


@ORACLE_SETTINGS
@given(GENERATED, st.integers(0, 2**16))
def test_generated_programs_jacobians_and_hessians_against_autograd_and_torch(program, seed):
    agrad = module("autograd")
    anp = module("autograd.numpy")
    torch = module("torch")
    x0, x1, _, _ = _data(seed)
    f, loss = build(program, np), scalar(build(program, np), np)
    J = ad.jacobian(f, argnums=(0, 1))(x0, x1)
    H = ad.hessian(loss, argnums=(0, 1))(x0, x1)
    tx = tuple(map(torch.as_tensor, (x0, x1)))
    tJ = torch.autograd.functional.jacobian(build(program, torch), tx)
    tH = torch.autograd.functional.hessian(scalar(build(program, torch), torch), tx)
    for k in range(2):
        aJ = agrad.jacobian(build(program, anp), k)(x0, x1)
        np.testing.assert_allclose(J[k], aJ, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ad.jacfwd(f, k)(x0, x1), tJ[k].numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ad.jacrev(f, k)(x0, x1), tJ[k].numpy(), rtol=1e-9, atol=1e-12)
        for j in range(2):
            np.testing.assert_allclose(H[k][j], tH[k][j].numpy(), rtol=1e-8, atol=1e-10)
    aH = agrad.hessian(scalar(build(program, anp), anp), 0)(x0, x1)
    np.testing.assert_allclose(H[0][0], aH, rtol=1e-8, atol=1e-10)
