"""A traced value written into a plain preallocated numpy buffer (``Y = np.zeros(...); Y[i] = t``,
issue 29): numpy's C ``__setitem__`` asks the tracer for a number or an array, which would drop
the gradient. The error says so at the line of the write, with the fix (``np.zeros(..., like=x)``
or a list and ``np.stack``); the fix really records and differentiates. Other conversions keep
their own messages."""
import inspect
import math

import numpy as np
import pytest

import ad
from ad.errors import PlainArrayWriteError
from tests.support.numeric import fd_grad

X = np.array([[0.3, -1.2, 0.8, 0.1], [1.1, 0.4, -0.6, 2.0]])


def line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def pool(x):
    return np.max(x)


def pooled(x):
    Y = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):
            Y[i, j] = pool(x[i, j:j + 2])  # mark
    return np.sum(Y ** 2)


def rows(x):
    Y = np.zeros((2, 3))
    Y[1] = np.tanh(x[0, :3])  # mark
    return np.sum(Y)


def sliced(x):
    Y = np.zeros((3, 4))
    Y[1:, ::2] = x[:, 1:3] * 2  # mark
    return np.sum(Y)


def put(Y, i, v):
    Y[i] = v  # mark
    return Y


def through_a_helper(x):
    return np.sum(put(np.zeros(4), 2, np.sum(x)) ** 2)


def of_a_list(x):
    Y = np.zeros((2, 2))
    Y[0] = [x[0, 0], x[1, 1]]  # mark
    return np.sum(Y)


@pytest.mark.parametrize("f,where", [(pooled, pooled), (rows, rows), (sliced, sliced), (through_a_helper, put),
                                     (of_a_list, of_a_list)],
                         ids=["scalar item", "row", "slice", "inside a helper", "a list of traced values"])
def test_the_error_names_the_write_its_line_and_the_fix(f, where):
    with pytest.raises(PlainArrayWriteError) as info:
        ad.grad(f)(X)
    message = str(info.value)
    assert "is being written into a plain numpy array" in message
    assert f"test_plain_buffers.py:{line_of(where, '# mark')} in {where.__name__}" in message
    assert info.value.location.endswith(f":{line_of(where, '# mark')} in {where.__name__}")
    assert "# mark" in message                       # the line itself, as every TraceError shows it
    assert "like=x" in message and "np.stack" in message
    assert "float()" not in message and "converting it to a plain numpy array" not in message
    # what callers caught before still catches it
    assert isinstance(info.value, (ad.ConcretizationError, ad.MutationError, ValueError))


def test_tracing_alone_says_the_same():
    with pytest.raises(ad.ConcretizationError, match="written into a plain numpy array"):
        ad.trace(pooled, X)


def pooled_like(x):
    Y = np.zeros((2, 3), like=x)                 # the fix: a traced buffer
    for i in range(2):
        for j in range(3):
            Y[i, j] = pool(x[i, j:j + 2])
    Y[1] = Y[1] * np.tanh(x[0, :3])
    Y[:, 1:] = Y[:, 1:] * x[:, :2]
    return np.sum(Y ** 2)


def stacked(x):
    ys = [pool(x[i, j:j + 2]) for i in range(2) for j in range(3)]
    return np.sum(np.reshape(np.stack(ys), (2, 3)) ** 2)


@pytest.mark.parametrize("f", [pooled_like, stacked])
@pytest.mark.parametrize("form", ["lifted", "closure", "compiled"])
def test_the_fixes_record_the_writes_and_differentiate(f, form):
    assert np.isclose(ad.trace(f, X)(X), f(X))
    np.testing.assert_allclose(ad.grad(f, form=form)(X), fd_grad(f, X), atol=1e-7)


def test_the_plain_code_and_the_fix_agree_on_values():
    plain = X.copy()
    Y = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):
            Y[i, j] = np.max(plain[i, j:j + 2])
    Y[1] = Y[1] * np.tanh(plain[0, :3])
    Y[:, 1:] = Y[:, 1:] * plain[:, :2]
    assert np.isclose(pooled_like(X), np.sum(Y ** 2))
    assert str(ad.trace(pooled_like, X)).count("setitem") == 8      # every write recorded


# -- other conversions keep their messages; values not differentiated may still be written ------

@pytest.mark.parametrize("f,match", [
    (lambda x: float(x[0, 0]) * x, r"float\(\)"),
    (lambda x: math.sin(x[0, 0]), r"float\(\)"),
    (lambda x: np.asarray(x) * 2, "converting it to a plain numpy array"),
    (lambda x: np.sum(x).item(), r"\.item\(\)"),
], ids=["float", "math.sin", "np.asarray", "item"])
def test_other_conversions_keep_their_message(f, match):
    with pytest.raises(ad.ConcretizationError, match=match) as info:
        ad.trace(f, X)
    assert not isinstance(info.value, PlainArrayWriteError)


def float_then_store(x):
    Y = np.zeros(2)
    Y[0] = float(x[0, 0])                        # the user's own float(): its message
    return np.sum(Y)


def test_an_explicit_conversion_in_a_store_keeps_its_message():
    with pytest.raises(ad.ConcretizationError, match=r"float\(\)") as info:
        ad.trace(float_then_store, X)
    assert not isinstance(info.value, PlainArrayWriteError)


def test_branches_integers_and_values_not_differentiated_still_work():
    def f(x, c):
        Y = np.zeros(3)
        Y[0] = c[0]                              # c is not differentiated: a guarded constant
        Y[int(c[1])] = 2.0                       # a traced integer index into a plain buffer
        k = 1 if np.sum(x) > 0 else 2            # a branch
        return np.sum(x) * k + np.sum(Y * x[0, :3])
    c = np.array([1.5, 2.0])
    g = ad.grad(f)(X, c)
    np.testing.assert_allclose(g, fd_grad(lambda x: f(x, c), X), atol=1e-7)


@ad.primitive
def doubled(x):
    return 2 * x


@ad.rrule(doubled)
def _doubled_rule(x):
    def pullback(dy):
        out = np.zeros(dy.shape)
        out[:] = dy                              # a plain buffer: cannot be lifted
        return (2 * out,)
    return doubled(x), pullback


def test_a_pullback_writing_its_cotangent_into_a_plain_buffer_falls_back_saying_why():
    f = lambda x: np.sum(doubled(x) ** 2)       # noqa: E731
    x = np.array([0.5, -1.0, 2.0])
    (fb,) = ad.grad_tape(f, x).fallbacks
    assert "written into a plain numpy array" in fb.reason and "cotangent" in fb.reason
    np.testing.assert_allclose(ad.grad(f)(x), 8 * x)
