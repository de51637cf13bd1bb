"""``passes.factor``: ``a*c1 + (a*c2)*b -> a*(c1 + c2*b)`` on derivative equations. It changes
rounding, so the factored gradient is checked against finite differences and against the
unfactored tape within a bound worked out from the rounding (each test says which)."""
from __future__ import annotations

import numpy as np

import ad
from ad.core_prims import add_p
from ad.lib.elementwise import multiply_p
from ad.passes import factor, optimize
from ad.tape import Aval, Eqn, Origin, Lit, Tape, Var

ROUNDS = 6
EPS = np.finfo(np.float64).eps


def rounds(x):
    """The vector workload's program (bench.workloads), shorter: its gradient accumulates
    ct*0.1 + (ct*0.9)*cos(x) every round."""
    for _ in range(ROUNDS):
        x = np.sin(x) * 0.9 + 0.1 * x
    return np.sum(x)


def multiplies(eqns) -> int:
    return sum(e.prim is multiply_p for e in eqns)


def test_the_gradient_is_factored_and_agrees_with_finite_differences_and_the_unfactored_tape():
    x = np.random.default_rng(0).uniform(-2, 2, 8)
    raw = ad.grad_tape(rounds, x)
    opt = ad.validate(optimize(raw))
    # three products a round become two (the first round's a is the seed, ones: that one goes too)
    assert multiplies(raw.eqns[raw.n_forward:]) == 3 * ROUNDS
    assert multiplies(opt.eqns[opt.n_forward:]) == 2 * ROUNDS - 1
    assert [before - after for name, before, after in opt.meta["passes"] if name == "factor"] == [ROUNDS]
    got, want = opt(x)[1], raw(x)[1]
    # Each round's factor 0.1 + 0.9 cos(x) is computed with at most 3 roundings instead of the
    # unfactored 4, so each round moves the product by at most ~4 eps times the conditioning
    # (0.1 + 0.9 |cos x|) / |0.1 + 0.9 cos x| of that sum; the rounds' errors add up.
    xs, conditioning = x, 0.0
    for _ in range(ROUNDS):
        c = np.cos(xs)
        conditioning = conditioning + (0.1 + 0.9 * np.abs(c)) / np.abs(0.1 + 0.9 * c)
        xs = np.sin(xs) * 0.9 + 0.1 * xs
    assert np.all(np.abs(got - want) <= 4 * EPS * conditioning * np.abs(want))
    h = 1e-6
    fd = np.array([(rounds(x + h * e) - rounds(x - h * e)) / (2 * h) for e in np.eye(len(x))])
    np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-9)   # central differences: ~h**2 and eps/h
    compiled = ad.grad(rounds, form="compiled")(x)
    np.testing.assert_array_equal(compiled, got)


def test_the_users_own_program_and_products_read_elsewhere_stay():
    def f(x):
        return np.sum(x * 0.1 + (x * 0.9) * np.sin(x))     # the pattern in the program itself

    x = np.linspace(-1, 1, 5)
    opt = optimize(ad.grad_tape(f, x))
    assert multiplies(opt.eqns[:opt.n_forward]) == 3
    np.testing.assert_array_equal(opt(x)[0], f(x))

    a, b, p, r, q, s, t = (Var(k, Aval((2,), np.dtype("float64"))) for k in range(7))
    bwd = Origin("pullback")
    eqns = (Eqn(multiply_p, (a, Lit.of(0.1)), (), (p,), origin=bwd),
            Eqn(multiply_p, (a, Lit.of(0.9)), (), (r,), origin=bwd),
            Eqn(multiply_p, (r, b), (), (q,), origin=bwd),
            Eqn(add_p, (p, q), (), (s,), origin=bwd),
            Eqn(add_p, (s, p), (), (t,), origin=bwd))       # p read twice: nothing to factor
    tape = ad.validate(Tape((a, b), eqns, (t,)))
    assert factor(tape) is tape


def test_an_infinite_cotangent_times_zero_is_infinite_once_factored():
    """The documented edge: a*c1 + (a*c2)*b is nan at a = inf, b = 0; a*(c1 + c2*b) is inf."""
    a, b, p, r, q, s = (Var(k, Aval((2,), np.dtype("float64"))) for k in range(6))
    bwd = Origin("pullback")
    eqns = (Eqn(multiply_p, (Lit.of(0.1), a), (), (p,), origin=bwd),
            Eqn(multiply_p, (a, Lit.of(0.9)), (), (r,), origin=bwd),
            Eqn(multiply_p, (b, r), (), (q,), origin=bwd),
            Eqn(add_p, (q, p), (), (s,), origin=bwd))
    tape = ad.validate(Tape((a, b), eqns, (s,)))
    factored = ad.validate(factor(tape))
    assert [e.prim for e in factored.eqns] == [multiply_p, add_p, multiply_p]
    args = (np.array([np.inf, 2.0]), np.array([0.0, 3.0]))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(tape(*args)[0], [np.nan, 0.2 + 1.8 * 3.0])
        np.testing.assert_array_equal(factored(*args)[0], [np.inf, 2.0 * (0.1 + 0.9 * 3.0)])


def test_float32_stays_float32():
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    opt = optimize(ad.grad_tape(rounds, x))
    g = opt(x)[1]
    assert g.dtype == np.float32 and multiplies(opt.eqns[opt.n_forward:]) == 2 * ROUNDS - 1
    np.testing.assert_allclose(g, ad.grad(rounds, optimize=False)(x), rtol=1e-5)


def test_complex_values_are_not_factored():
    """numpy multiplies a complex value by a real literal as by c + 0j, whose 0 times an infinite
    part is nan: the two forms would differ there in more ways than the docstring says."""
    def f(z):
        for _ in range(2):
            z = np.sin(z) * 0.9 + 0.1 * z
        return np.sum(np.real(z * np.conj(z)))

    z = np.array([0.3 + 0.2j, -1.0 + 0.5j])
    raw = ad.grad_tape(f, z)
    opt = optimize(raw)
    assert not any(name == "factor" and before != after for name, before, after in opt.meta["passes"])
