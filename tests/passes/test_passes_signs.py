"""``signs`` moves negations out of products and into sums: it removes the negations a chain rule
through a quotient and a cosine computes (two per step of the bench's small-op loop), changes no
bit of any result, and leaves the user's own (forward) equations as they are."""
from __future__ import annotations

import numpy as np
from hypothesis import given

import ad
from ad.lib.elementwise import negative_p
from ad.passes import dce, factor, signs
from ad.passes.walk import walk
from tests.support.generated_programs import GENERATED, SETTINGS, build, program_inputs, scalar


def smallop(x):
    """The small-op workload of ../shared/bench: sin(y) * x / exp(cos(y)) + x, five times."""
    y = x
    for _ in range(5):
        y = np.sin(y) * x / np.exp(np.cos(y)) + x
    return np.sum(y)


def optimised(tape, moved: bool):
    """One round of the pipeline, with or without ``signs``."""
    factored = factor(tape)
    return dce(walk(signs(factored) if moved else factored, fold=True, simplify=True, cse=True))


def bits(values):
    return [np.asarray(v).tobytes() for v in values]


def test_the_quotient_and_cosine_negations_cancel():
    x = np.linspace(0.1, 1.5, 16)
    raw = ad.grad_tape(smallop, x)
    before, after = optimised(raw, False), optimised(raw, True)
    negations = [sum(e.prim is negative_p for e in t.eqns[t.n_forward:]) for t in (before, after)]
    assert negations == [10, 0]            # -dy*(y/b) and -sin(x), each step
    assert len(after.eqns) == len(before.eqns) - 10
    assert bits(ad.compile(after)(x)) == bits(ad.compile(before)(x))
    np.testing.assert_allclose(ad.compile(after)(x)[1], ad.grad(smallop, form="closure")(x), rtol=1e-13)


def test_a_sum_absorbs_a_negated_operand_and_a_negated_first_term_stays():
    def f(a, b):
        return np.sum(a * np.sin(b) - np.exp(a) * np.cos(b))
    a, b = np.array([0.3, -0.0, 1.2]), np.array([0.0, 2.0, -1.0])
    tape = ad.grad_tape(f, a, b, argnums=(0, 1))
    moved = signs(tape)
    assert moved is not tape
    assert bits(ad.compile(optimised(tape, True))(a, b)) == bits(ad.compile(optimised(tape, False))(a, b))
    assert moved.eqns[:moved.n_forward] == tape.eqns[:tape.n_forward]   # the user's arithmetic is kept
    assert signs(moved) is moved                                        # nothing left to move
    assert {e.prim.name for e in moved.eqns[moved.n_forward:]} >= {"subtract"}


def test_signed_zeros_infinities_and_nans_come_out_bit_for_bit():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1.0, 3.0])
    y = np.array([1.0, -2.0, 0.5, np.inf, 2.0, -0.0, 0.0, np.nan])

    def f(x, y):
        return np.sum(-x * np.cos(y) + x / (1.0 + y * y) - (-y) * x)
    with np.errstate(all="ignore"):
        tape = ad.grad_tape(f, x, y, argnums=(0, 1))
        before = ad.compile(optimised(tape, False))(x, y)
        after = ad.compile(optimised(tape, True))(x, y)
    for u, v in zip(before, after):    # equal, and the same sign bit wherever not a NaN
        np.testing.assert_array_equal(u, v)
        assert np.array_equal(np.signbit(u) | np.isnan(u), np.signbit(v) | np.isnan(v))


def test_a_negation_two_products_read_stays_where_moving_it_would_add_one():
    def f(x, a, b):
        n = -np.sin(x)                 # forward: kept; the gradient's -cos(x) terms are the candidates
        return np.sum(np.exp(n * a) + np.exp(n * b))
    x, a, b = np.array([0.5, -1.0]), np.array([2.0, 0.5]), np.array([-1.0, 3.0])
    tape = ad.grad_tape(f, x, a, b, argnums=(0, 1, 2))
    moved = signs(tape)
    assert len(moved.eqns) <= len(tape.eqns)
    assert bits(ad.compile(optimised(tape, True))(x, a, b)) == bits(ad.compile(optimised(tape, False))(x, a, b))


@given(GENERATED)
@SETTINGS
def test_generated_programs_give_the_same_bits_with_and_without_it(program):
    f = scalar(build(program, np), np)
    x0, x1 = program_inputs(len(program))
    tape = ad.grad_tape(f, x0, x1, argnums=(0, 1))
    assert len(signs(tape).eqns) <= len(tape.eqns)
    with np.errstate(all="ignore"):
        assert bits(ad.compile(optimised(tape, True))(x0, x1)) == bits(ad.compile(optimised(tape, False))(x0, x1))


def test_the_code_generators_move_signs_and_optimize_does_not():
    """The lifted tape keeps each rule's value in its block (the debugger compares them with the
    rules' closures); the compiled and fused sources are where the negations go."""
    x = np.linspace(0.1, 1.5, 16)
    tape = ad.optimize(ad.grad_tape(smallop, x))
    assert sum(e.prim is negative_p for e in tape.eqns[tape.n_forward:]) == 10
    backward = ad.compile(tape).source.split("# backward")[1]
    assert not any(unary in backward for unary in ("= -", "(-", "* -", "/ -", "+ -"))
    for backend in ("numpy", "fused"):
        np.testing.assert_allclose(ad.compile(tape, backend=backend)(x)[1], ad.grad(smallop)(x), rtol=1e-13)
