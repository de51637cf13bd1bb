"""Property-based tests: random programs with Python control flow on traced values (``if`` on
traced comparisons, ``and``, ``while`` loops with traced conditions, ``int()`` of a traced value
and traced integer arrays indexing constant tables). Each program is written once against a
numpy-like module ``xp``: with ``numpy`` it is differentiated by ad, with ``autograd.numpy`` by
HIPS autograd, the oracle. The same ``ad.grad`` object, in every form, is called on inputs that
take other branches (it must re-trace); a tape run on them either gives the eager answer or
raises GuardError; finite differences agree wherever the branches do not change nearby.
"""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ad
from ad.errors import GuardError
from needs import module

anp = module("autograd.numpy")
autograd = module("autograd")

N = 4
RNG = np.random.default_rng(13)
W = RNG.standard_normal((N, N)) / 2
TABLE = RNG.uniform(0.5, 1.5, (5, N))      # rows picked by int() of a traced value
LOOKUP = RNG.uniform(-1.0, 1.0, 6)         # entries picked by a traced integer array
WEIGHTS = np.linspace(0.5, 1.5, N)
FORMS = ("lifted", "closure", "compiled")

# name -> fn(xp, a, b): smooth steps, used on their own and as the arms of branches
SMOOTH = {
    "sin": lambda xp, a, b: xp.sin(a), "tanh": lambda xp, a, b: xp.tanh(a),
    "exp_tanh": lambda xp, a, b: xp.exp(xp.tanh(a)), "add": lambda xp, a, b: a + b,
    "mul": lambda xp, a, b: a * b, "div": lambda xp, a, b: a / (1.0 + b * b),
    "matvec": lambda xp, a, b: xp.dot(W, a), "cumsum": lambda xp, a, b: xp.cumsum(a),
    "reverse": lambda xp, a, b: a[::-1], "scale_by_sum": lambda xp, a, b: xp.sum(a) * b,
}


def if_sum(xp, a, b, then, other, t):
    if xp.sum(a) > t:
        return SMOOTH[then](xp, a, b)
    return SMOOTH[other](xp, a, b)


def if_entries(xp, a, b, then, other, t):
    if a[0] > b[1] + t and xp.min(b) < 1.0:       # `and` of two traced comparisons
        return SMOOTH[then](xp, a, b)
    return SMOOTH[other](xp, a, b)


def while_loop(xp, a, b, then, other, t):
    """A loop whose trip count depends on the values (bounded by the counter)."""
    v, n = a, 0
    while xp.sum(v * v) > 0.5 + abs(t) and n < 6:
        v = 0.6 * v + 0.1 * SMOOTH[then](xp, v, b)
        n += 1
    return v


def int_row(xp, a, b, then, other, t):
    k = int(xp.floor(xp.abs(a[0]) * 3.0)) % len(TABLE)
    return SMOOTH[then](xp, a, b) * TABLE[k]


def index_table(xp, a, b, then, other, t):
    idx = xp.floor(xp.abs(a) * 2.0).astype(int) % len(LOOKUP)
    return b * LOOKUP[idx] + SMOOTH[then](xp, a, b)


CONTROL = {f.__name__: f for f in (if_sum, if_entries, while_loop, int_row, index_table)}


def programs():
    arms = st.sampled_from(sorted(SMOOTH))
    step = st.one_of(
        st.tuples(st.sampled_from(sorted(SMOOTH)), st.integers(0, 99), st.integers(0, 99)),
        st.tuples(st.sampled_from(sorted(CONTROL)), st.integers(0, 99), st.integers(0, 99),
                  arms, arms, st.floats(-1.0, 1.0)))
    return st.lists(step, min_size=1, max_size=8).filter(lambda p: any(s[0] in CONTROL for s in p))


def build(program, xp):
    """The program as a function of (x0, x1), written against ``xp``."""
    def f(x0, x1):
        pool = [x0, x1]
        for name, i, j, *control in program:
            a, b = pool[i % len(pool)], pool[j % len(pool)]
            pool.append(CONTROL[name](xp, a, b, *control) if control else SMOOTH[name](xp, a, b))
        return xp.sum(pool[-1] * WEIGHTS) + 0.1 * xp.sum(pool[-2] * pool[-2])
    return f


def points(seed):
    """Three inputs that tend to take different branches, loop counts and table rows."""
    rng = np.random.default_rng(seed)
    x0, x1 = rng.standard_normal(N), rng.standard_normal(N)
    return [(x0, x1), (-x0, -x1), (2.5 * x0, 0.5 * x1)]


def close(got, want):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def same_branches(tape, xs) -> bool:
    try:
        tape(*xs)
    except GuardError:
        return False
    return True


def check_finite_differences(f, tape, xs, grads, rng):
    """The directional derivative by Richardson-extrapolated central differences, where every
    point of the stencil takes the branches the tape took."""
    us = [rng.standard_normal(N) for _ in xs]
    h = 1e-4
    stencil = [[x + s * u for x, u in zip(xs, us)] for s in (h, -h, h / 2, -h / 2)]
    if not all(same_branches(tape, p) for p in stencil):
        return
    plus, minus, plus2, minus2 = (f(*p) for p in stencil)
    fd = (4 * (plus2 - minus2) / h - (plus - minus) / (2 * h)) / 3
    got = sum(float(np.dot(g, u)) for g, u in zip(grads, us))
    assert abs(got - fd) <= 1e-6 * max(1.0, abs(fd))


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(programs(), st.integers(0, 2**16))
def test_branching_programs_match_autograd_in_every_form_across_retraces(program, seed):
    f, f_autograd = build(program, np), build(program, anp)
    oracle = autograd.grad(f_autograd, (0, 1))
    grads = {form: ad.grad(f, (0, 1), form=form) for form in FORMS}
    first_tape = ad.trace(f, *points(seed)[0])
    rng = np.random.default_rng(seed)
    for xs in points(seed):
        want = oracle(*xs)
        for form, g in grads.items():
            close(g(*xs), want)
        if same_branches(first_tape, xs):                 # else GuardError, never a wrong branch
            np.testing.assert_allclose(first_tape(*xs), f(*xs), rtol=1e-12)
        check_finite_differences(f, ad.trace(f, *xs), xs, want, rng)
    for g in grads.values():                               # back to the first inputs: no re-trace
        before = g.cache_info().traces
        close(g(*points(seed)[0]), oracle(*points(seed)[0]))
        assert g.cache_info().traces == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**16))
def test_compiled_gradient_tapes_refuse_other_branches(program, seed):
    """The compiled source of one trace's gradient, run on inputs that take other branches,
    raises GuardError or gives autograd's gradient."""
    f = build(program, np)
    oracle = autograd.grad(build(program, anp), (0, 1))
    first = points(seed)[0]
    compiled = ad.compile(ad.optimize(ad.grad_tape(f, *first, argnums=(0, 1))))
    for xs in points(seed):
        try:
            value, grads = compiled(*xs)
        except GuardError:
            continue
        np.testing.assert_allclose(value, f(*xs), rtol=1e-12)
        close(grads, oracle(*xs))
