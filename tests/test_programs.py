"""Property-based tests: random programs built from the rule set. Their gradients agree across
the closure, lifted, lifted+passes and compiled forms and with finite differences; their second
derivatives agree with finite differences of the first."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad
from ad.checks.fd import directional_derivative
from ad.passes import optimize
from ad.tape import validate

N = 4
W = np.random.default_rng(0).standard_normal((N, N)) / 2
IDX = np.array([3, 0, 0, 2])

# name -> (arity, fn); smooth everywhere (safe domains built in), so finite differences apply
SMOOTH = {
    "sin": (1, np.sin), "cos": (1, np.cos), "tanh": (1, np.tanh),
    "exp_tanh": (1, lambda x: np.exp(np.tanh(x))), "log1p_sq": (1, lambda x: np.log1p(x * x)),
    "sqrt1": (1, lambda x: np.sqrt(1.0 + x * x)), "square": (1, np.square), "neg": (1, np.negative),
    "arctan": (1, np.arctan), "scale": (1, lambda x: 0.5 * x - 1.0),
    "add": (2, np.add), "sub": (2, np.subtract), "mul": (2, np.multiply),
    "div": (2, lambda x, y: x / (1.0 + y * y)), "hypot1": (2, lambda x, y: np.hypot(x, 1.0 + y * y)),
    "logaddexp": (2, np.logaddexp), "arctan2": (2, lambda x, y: np.arctan2(x, 2.0 + y * y)),
    "sum": (1, lambda x: np.sum(x) + 0 * x), "mean_keep": (1, lambda x: x - np.mean(x, keepdims=True)),
    "softmax": (1, lambda x: np.exp(x - np.max(x)) / np.sum(np.exp(x - np.max(x)))),
    "cumsum": (1, np.cumsum), "reverse": (1, lambda x: x[::-1]), "gather": (1, lambda x: x[IDX]),
    "matvec": (1, lambda x: W @ x), "outer_sum": (2, lambda x, y: np.sum(np.outer(x, y), axis=0)),
    "roll": (1, lambda x: np.roll(x, 1)), "concat_split": (2, lambda x, y: np.concatenate([x, y])[2:2 + N]),
    "prod_pairs": (1, lambda x: np.prod(x.reshape(2, 2), axis=1).repeat(2)),
    "setitem": (2, lambda x, y: _setitem(x, y)), "where": (2, lambda x, y: np.where(IDX > 1, x, y)),
    "einsum": (2, lambda x, y: np.einsum("i,j->j", x, y)), "stack_mean": (2, lambda x, y: np.stack([x, y]).mean(0)),
}
KINKED = {"abs": (1, np.abs), "maximum": (2, np.maximum), "clip": (1, lambda x: np.clip(x, -0.5, 0.5)),
          "relu": (1, lambda x: np.maximum(x, 0.0)), "sort": (1, np.sort)}


def _setitem(x, y):
    z = x * 1.0
    z[1:3] = y[:2] * 2.0
    return z


def programs(ops):
    names = sorted(ops)
    step = st.tuples(st.sampled_from(names), st.integers(0, 100), st.integers(0, 100))
    return st.lists(step, min_size=1, max_size=12)


def build(program, ops):
    def f(x0, x1):
        pool = [x0, x1]
        for name, i, j in program:
            arity, fn = ops[name]
            args = (pool[i % len(pool)], pool[j % len(pool)])[:arity]
            pool.append(fn(*args))
        return np.sum(pool[-1] * np.linspace(0.5, 1.5, N)) + 0.1 * np.sum(pool[-2] * pool[-2])
    return f


def inputs(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N), rng.standard_normal(N)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(programs(SMOOTH), st.integers(0, 2**16))
def test_random_programs_all_forms_and_finite_differences(program, seed):
    f = build(program, SMOOTH)
    xs = inputs(seed)
    ref = ad.grad(f, (0, 1), form="closure")(*xs)
    validate(ad.grad_tape(f, *xs, argnums=(0, 1)))
    for form, opt in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = ad.grad(f, (0, 1), form=form, optimize=opt)(*xs)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(seed)
    us = [rng.standard_normal(N), rng.standard_normal(N)]
    est = directional_derivative(f, xs, us)
    want = float(est.value[0])
    got = sum(float(np.dot(g, u)) for g, u in zip(ref, us))
    assert abs(got - want) <= 1e-6 * max(1.0, abs(want)) + 10 * est.error


@SETTINGS
@given(programs({**SMOOTH, **KINKED}), st.integers(0, 2**16))
def test_random_programs_with_kinks_agree_across_forms(program, seed):
    f = build(program, {**SMOOTH, **KINKED})
    xs = inputs(seed)
    ref = ad.grad(f, (0, 1), form="closure")(*xs)
    gt = optimize(ad.grad_tape(f, *xs, argnums=(0, 1)))
    xs2 = inputs(seed + 1)                       # re-run the lifted tape on new inputs
    ref2 = ad.grad(f, (0, 1), form="closure")(*xs2)
    for a, b in zip(gt(*xs)[1], ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(gt(*xs2)[1], ref2):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(SMOOTH), st.integers(0, 2**16))
def test_second_order_matches_finite_differences_of_first(program, seed):
    f = build(program, SMOOTH)
    xs = inputs(seed)
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(N)
    g = ad.grad(f)

    def gv(x0):
        return np.sum(g(x0, xs[1]) * v)
    hvp = ad.grad(gv)(xs[0])
    u = rng.standard_normal(N)
    est = directional_derivative(lambda x0: gv(x0), [xs[0]], [u])
    want = float(est.value[0])
    got = float(np.dot(hvp, u))
    assert abs(got - want) <= 1e-5 * max(1.0, abs(want)) + 10 * est.error
