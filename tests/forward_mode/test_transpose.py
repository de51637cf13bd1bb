"""ad.transpose: every primitive declared linear passes the dot-product test at its samples (real
and, with a complex rule, complex), in each way its declaration allows; what is not linear is a
NotLinearError naming the equation and its line."""
import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import pair, random_like
from ad.samples import C128
from ad.tape import eval_tape
from tests.support.cases import PRIMITIVE_CASES

LINEAR = [c for c in PRIMITIVE_CASES if c.primitive.linear is not None]


def _selections(case, xs):
    """The sets of operands that may vary at once: every declared float operand (jointly), or
    each one alone (multilinear)."""
    decl = case.primitive.linear
    declared = [k for k in decl.of(len(xs)) if np.issubdtype(np.result_type(xs[k]), np.inexact)]
    return [tuple(declared)] if decl.jointly else [(k,) for k in declared]


def _params(dtype):
    cases = LINEAR if dtype is None else [c for c in LINEAR if c.primitive.complex_rule]
    return [pytest.param(c, shape, id=f"{c.name}-{shape}") for c in cases for shape in c.sample.shapes]


def _dot_product_test(case, shape, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{case.name}/{shape}/{dtype}".encode()))
    xs = case.inputs(shape, rng, case.sample.dtypes[0] if dtype is None else dtype)
    tape = ad.trace(case.fn, *xs)
    values = tape.flatten_args(tuple(xs))
    selections = _selections(case, values)
    assert selections, f"{case.name}: no float operand to be linear in"
    for linear in selections:
        t = ad.transpose(tape, linear, values)
        ad.validate(t)
        us = [random_like(values[k], rng).astype(np.result_type(values[k])) for k in linear]
        at = list(values)
        for k, u in zip(linear, us):
            at[k] = u
        ys = eval_tape(tape, at)                          # the tape is linear: J u is tape(u)
        cts = [random_like(y, rng).astype(np.result_type(y)) for y in ys]
        consts = [v for k, v in enumerate(values) if k not in linear]
        back = eval_tape(t, consts + cts)
        lhs = sum(pair(c, y) for c, y in zip(cts, ys))
        rhs = sum(pair(b, u) for b, u in zip(back, us))
        single = any(np.result_type(v) in (np.float32, np.complex64) for v in (*values, *ys))
        assert abs(lhs - rhs) <= (1e-4 if single else 1e-9) * max(1.0, abs(lhs)), (case.name, linear, lhs, rhs)
        for b, u in zip(back, us):
            assert np.shape(b) == np.shape(u) and np.result_type(b) == np.result_type(u)


@pytest.mark.parametrize("case,shape", _params(None))
def test_every_declared_transpose_passes_the_dot_product_test(case, shape):
    _dot_product_test(case, shape, None)


@pytest.mark.parametrize("case,shape", _params(C128))
def test_complex_transposes_pass_the_dot_product_test(case, shape):
    """Under the real pairing Re(sum(g * dx)): conj transposes to conj, real to g + 0j, ..."""
    _dot_product_test(case, shape, C128)


def test_the_linear_primitives_are_declared():
    """What lifted pullbacks and tangent tapes are made of is declared linear, in the right way."""
    from ad.core_prims import add_p, getitem_p, setitem_p
    from ad.lib.contraction import einsum_p, matmul_p
    from ad.lib.elementwise import multiply_p, where_p
    from ad.lib.shape import concatenate_p
    assert add_p.linear.jointly and add_p.linear.of(2) == (0, 1)
    assert not multiply_p.linear.jointly and not matmul_p.linear.jointly
    assert einsum_p.linear.of(3) == (0, 1, 2) and not einsum_p.linear.jointly
    assert concatenate_p.linear.of(4) == (0, 1, 2, 3) and concatenate_p.linear.jointly
    assert setitem_p.linear.of(3) == (0, 1) and getitem_p.linear.of(2) == (0,)
    assert where_p.linear.of(3) == (1, 2)
    assert multiply_p.linear_in == (0, 1) and concatenate_p.linear_in == ()   # what passes reads
    with pytest.raises(ValueError, match="not both"):
        ad.Primitive("linear_twice_declared", np.add, linear_in=(0,), multilinear_in=(1,))


def test_transpose_of_a_program_reads_its_constants():
    x, c = np.ones(3), np.arange(3.0)
    tape = ad.trace(lambda x, c: np.sum(np.tanh(c) * x[::-1]) + np.concatenate([x, 2.0 * x])[1:], x, c)
    t = ad.transpose(tape, [0])
    assert t.input_names == ("c", "ct0")
    ct = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    (got,) = t(c, ct)
    want = np.sum(ct) * np.tanh(c)[::-1] + [2 * ct[2], ct[0] + 2 * ct[3], ct[1] + 2 * ct[4]]
    np.testing.assert_allclose(got, want)
    assert all(e.origin.kind in ("transpose", "accumulate", "zeros", "primal") for e in t.eqns)
    assert "transpose of" in str(t)


def test_an_unreached_linear_input_gets_zeros():
    tape = ad.trace(lambda x, y: 2.0 * x, np.ones(2), np.ones(3))
    t = ad.transpose(tape, [0, 1])
    gx, gy = t(np.ones(2))
    np.testing.assert_array_equal(gx, 2.0)
    np.testing.assert_array_equal(gy, np.zeros(3))


@pytest.mark.parametrize("f,message", [
    (lambda x: x * x, "linear in each of operands"),
    (lambda x: np.sin(x), "sin is not declared linear"),
    (lambda x: x + 1.0, "affine, not linear"),
    (lambda x: np.concatenate([x, np.arange(3.0)]), "affine, not linear"),
    (lambda x: np.where(x > 0, x, 0.0), "not declared linear"),      # the mask reads x
    (lambda x: np.ones(3), "does not depend on the linear inputs"),
])
def test_what_is_not_linear_is_refused_naming_the_equation_and_line(f, message):
    tape = ad.trace(f, np.ones(3))
    with pytest.raises(ad.NotLinearError, match=message) as info:
        ad.transpose(tape, [0])
    if tape.eqns and "output" not in message:
        assert "test_transpose.py" in str(info.value)    # the user's line


def test_a_pullback_reading_its_linear_operand_is_refused():
    """A primitive declared linear whose rule is not (its pullback reads the linear operand)."""
    square = ad.primitive(lambda x: x * x, name="falsely_linear_square", linear_in=(0,))
    ad.rrule(square)(lambda x: (square(x), lambda dy: (2 * x * dy,)))
    tape = ad.trace(square, np.ones(2))
    with pytest.raises(ad.NotLinearError, match="its pullback reads"):
        ad.transpose(tape, [0])


def test_integer_inputs_cannot_be_linear():
    tape = ad.trace(lambda x, i: x[i], np.ones(3), np.array([0, 2]))
    with pytest.raises(TypeError, match="not a float array"):
        ad.transpose(tape, [1])
