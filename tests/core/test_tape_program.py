"""The lifted interpreter (``ad.tape.Program``): a tape resolved once runs like the binding loop
(``eval_eqns``), value for value and type for type, and tracers still take the binding loop."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.examples import mlp_example, mlp_loss
from ad.tape import eval_eqns, eval_tape, program

X = np.array([0.3, -1.2, 2.0, 0.7])
W = np.array([[1.0, -2.0], [0.5, 0.0], [3.0, 1.0], [-1.0, 0.25]])


def many_kinds(x):
    """Unary, binary, n-ary, params, multiple results, array and scalar literals, integers."""
    frac, whole = np.modf(x * 3.0)
    q, r = np.divmod(x, 0.7)
    y = np.where(x > 0, frac, whole) + np.concatenate([q[:2], r[2:]])
    z = np.sum(y.reshape(2, 2), axis=0) @ W.T[:, :2].T
    return np.sum(np.tanh(z) / (1.0 + x[:2] ** 2)) - np.cumsum(x)[-1] * 2


def binding_loop(tape, args) -> list:
    env = dict(zip(tape.inputs, args))
    eval_eqns(tape.eqns, env)
    return [env[x] if type(x) is ad.tape.Var else x.value for x in tape.outputs]


def assert_same(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert type(a) is type(b) and np.shape(a) == np.shape(b)
        np.testing.assert_array_equal(a, b)
        if isinstance(b, (np.ndarray, np.generic)):
            assert a.dtype == b.dtype


@pytest.mark.parametrize("make", [
    lambda: ad.trace(many_kinds, X),
    lambda: ad.optimize(ad.grad_tape(many_kinds, X)),
    lambda: ad.optimize(ad.grad_tape(mlp_loss, *mlp_example())),
    lambda: ad.grad_tape(lambda x, y: np.sum(x * y) + float(np.sum(x) > 0), np.float32([1.0, 2.0]), 2.5),
], ids=["primal", "gradient", "mlp gradient", "float32 and a Python float"])
def test_the_program_computes_what_the_binding_loop_computes(make):
    tape = make()
    args = [np.asarray(a) if not isinstance(a, (float, np.generic)) else a for a in _inputs(tape)]
    assert_same(eval_tape(tape, args), binding_loop(tape, args))
    env = {}
    eval_tape(tape, args, env)          # the values of every variable, as the binding loop's
    want = dict(zip(tape.inputs, args))
    eval_eqns(tape.eqns, want)
    assert env.keys() == want.keys()
    assert_same(list(env.values()), list(want.values()))


def _inputs(tape):
    rng = np.random.default_rng(1)
    return [v.aval.dtype.type(rng.standard_normal()) if v.aval.shape == () else
            rng.standard_normal(v.aval.shape).astype(v.aval.dtype) for v in tape.inputs]


def test_two_python_floats_keep_numpy_semantics():
    """``x / 0.0`` on a Python float input: numpy's inf (the ufunc), not Python's ZeroDivisionError,
    and ``x * y`` a numpy float64 as the binding loop gives."""
    with np.errstate(divide="ignore"):
        tape = ad.trace(lambda x, y: (x / 0.0, x * y, -x - y), 1.0, 2.0)
        got = eval_tape(tape, [1.0, 2.0])
        assert_same(got, binding_loop(tape, [1.0, 2.0]))
    assert got[0] == np.inf and type(got[1]) is np.float64


def test_the_program_is_made_once_per_tape():
    tape = ad.trace(np.sin, X)
    assert program(tape) is program(tape)
    assert program(tape.replace(eqns=tape.eqns)) is not program(tape)   # a new tape, its own


def test_on_tracers_the_tape_is_recorded_again():
    """A tape run inside a trace binds its equations (how tapes are differentiated again)."""
    tape = ad.trace(lambda x: np.sin(x) * 2.0, X)
    outer = ad.trace(tape, X)
    assert [e.prim.name for e in outer.eqns] == ["sin", "multiply"]
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(tape(x)))(X), 2 * np.cos(X))


def test_array_subclasses_get_the_ufunc():
    """``*`` multiplies ``np.matrix`` operands as matrices; the tape's multiply is elementwise."""
    tape = ad.trace(lambda x, y: x * y, np.eye(2), np.eye(2))
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    assert_same(eval_tape(tape, [m, m]), binding_loop(tape, [m, m]))
    np.testing.assert_array_equal(eval_tape(tape, [m, m])[0], np.multiply(m, m))
