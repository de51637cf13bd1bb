"""Tracing plain numpy: the tape, pytrees, static arguments, in-place code, and loud errors
that name the user's line."""
import inspect
from collections import namedtuple

import numpy as np
import pytest

import ad
from ad.tape import validate


def line_of(fn, marker: str) -> int:
    """The line number of the line in ``fn`` that contains ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def test_listing_is_typed_and_reruns():
    def f(x, w):
        return np.sum(np.tanh(x @ w) * 2.0)
    x, w = np.ones((2, 3)), np.ones((3, 4))
    tape = validate(ad.trace(f, x, w))
    text = str(tape)
    assert "%2:f64[2,4] = matmul %0 %1" in text
    assert "tanh %2" in text and "multiply %3 2.0" in text
    x2, w2 = np.random.default_rng(0).standard_normal((2, 3)), np.random.default_rng(1).standard_normal((3, 4))
    assert np.allclose(tape(x2, w2), f(x2, w2))


def test_pytree_arguments_and_outputs():
    Point = namedtuple("Point", "x y")

    def f(params, pts):
        out = {"a": params["w"] * pts[0].x, "b": [params["w"] + pts[1].y]}
        return out, (pts[0].y, 3.0)
    params = {"w": np.arange(3.0)}
    pts = [Point(np.ones(3), 2.0), Point(np.zeros(3), np.float32(1.5))]
    tape = ad.trace(f, params, pts)
    assert tape.input_names[:2] == ("params['w']", "pts[0].x")
    out = tape(params, pts)
    ref = f(params, pts)
    assert out[0]["a"].tolist() == ref[0]["a"].tolist() and out[1][1] == 3.0
    assert out[0]["b"][0].tolist() == ref[0]["b"][0].tolist()


def test_static_python_ints_are_baked_and_guarded():
    tape = ad.trace(lambda x, n: x ** n + np.sum(np.ones(n, like=x)), 2.0, 3)
    assert tape(4.0, 3) == 64.0 + 3
    with pytest.raises(ValueError, match="static argument n was 3 when traced and is 4 now"):
        tape(4.0, 4)


def test_inplace_code_is_functionalized():
    def f(x):
        y = np.zeros(3, like=x)
        before = y * 1           # captured before the mutation: keeps the old value
        y[0] = x[1] * 2
        y[1:] += x[:2]           # a write through a view reaches the base, as in numpy
        np.multiply(y, 3.0, out=y)
        y += before
        return y
    x = np.array([1.0, 2.0, 3.0])
    tape = validate(ad.trace(f, x))
    assert tape(x).tolist() == [12.0, 3.0, 6.0]
    g = ad.grad(lambda x: np.sum(f(x) ** 2))(x)
    assert np.allclose(g, [2 * 3 * 3 * 1, 2 * 12 * 6 + 2 * 3 * 3 * 2, 0])


def test_stale_view_is_an_error():
    def f(x):
        v = x[:2]
        x[0] = 5.0        # numpy would show this through v
        return np.sum(v)  # line: stale view
    with pytest.raises(ad.MutationError, match="view") as info:
        ad.trace(f, np.ones(3))
    assert f"test_trace.py:{line_of(f, 'line: stale view')}" in str(info.value)


def test_iteration_len_and_methods():
    def f(x):
        total = 0.0
        for row in x:
            total = total + row.sum() * len(x)
        return total + x.T.reshape(-1).mean() + x.max(axis=0).min() + abs(-x).std()
    x = np.random.default_rng(0).standard_normal((3, 2))
    assert np.isclose(ad.trace(f, x)(x), f(x))


def test_boolean_and_integer_indexing():
    def f(x):
        return np.sum(x[x > 0] ** 2) + np.sum(x[np.array([0, 0, 1]), ..., None]) + x[-1, ::-1].sum()
    x = np.array([[1.0, -2.0], [3.0, 4.0]])
    assert np.isclose(ad.trace(f, x)(x), f(x))
    g = ad.grad(f)(x)
    eps = 1e-6
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        assert np.isclose(g[i], (f(x + d) - f(x - d)) / (2 * eps), atol=1e-5)


# -- loud errors: each names the cause, the user's line and the fix ----------------------------

def _raises(error, fn, *args, match, marker):
    with pytest.raises(error, match=match) as info:
        ad.trace(fn, *args)
    message = str(info.value)
    assert f"test_trace.py:{line_of(fn, marker)}" in message, message
    assert isinstance(info.value, (TypeError, ValueError, NotImplementedError))
    return message


def test_asarray_is_loud():
    def f(x):
        return np.asarray(x) * 2  # mark
    msg = _raises(ad.ConcretizationError, f, np.ones(2), match="plain numpy array", marker="# mark")
    assert "like=" in msg


def test_float_of_a_differentiated_value_is_loud_and_a_branch_is_a_guard():
    def f(x):
        return float(x[0]) * x  # mark
    _raises(ad.ConcretizationError, f, np.ones(2), match=r"float\(\)", marker="# mark")

    def g(x):
        if x[0] > 0:  # mark
            return x
        return -x
    tape = ad.trace(g, np.ones(2))
    (guard,) = [e for e in tape.eqns if e.prim.name == "guard"]
    assert f"test_trace.py:{line_of(g, '# mark')}" in guard.source


def test_writing_into_plain_ndarray_is_loud():
    def f(x):
        buf = np.zeros((2, 2))
        buf[0] = x  # mark
        return buf
    _raises(ad.ConcretizationError, f, np.ones(2), match="written into a plain numpy array", marker="# mark")

    def f0(x):
        buf = np.zeros(2)
        buf[0] = x[0]  # mark
        return buf
    # a 0-d value too: our error naming the line, not numpy's "setting an array element"
    # (tests/core/test_plain_buffers.py has the rest)
    _raises(ad.ConcretizationError, f0, np.ones(2), match="written into a plain numpy array", marker="# mark")

    def g(x):
        buf = np.zeros(2)
        np.add(x, 1.0, out=buf)  # mark
        return buf
    _raises(ad.MutationError, g, np.ones(2), match="out=ndarray", marker="# mark")


def test_ndarray_method_with_tracer_is_loud():
    w = np.ones((2, 2))

    def f(x):
        return w.dot(x)  # mark  (HIPS autograd issue 8: silently zero gradients)
    _raises(ad.ConcretizationError, f, np.ones(2), match="A.dot", marker="# mark")


def test_function_without_rule_is_loud():
    def f(x):
        return np.unwrap(x)  # mark
    msg = _raises(ad.UnsupportedFunctionError, f, np.ones(3), match="np.unwrap has no rule", marker="# mark")
    assert "@ad.primitive" in msg and "@ad.rrule" in msg


def test_user_primitive_without_rule_is_loud_at_grad_time():
    @ad.primitive
    def mystery(x):
        return x * 2

    def f(x):
        return np.sum(mystery(x))
    with pytest.raises(NotImplementedError, match="mystery has no rule") as info:
        ad.grad(f)(np.ones(2))
    assert "@ad.rrule" in str(info.value)


def test_grad_of_non_scalar_suggests_vjp():
    with pytest.raises(ad.NonDifferentiableError, match="vjp"):
        ad.grad(lambda x: x * 2)(np.ones(3))


def test_escaped_tracer_is_loud():
    leaked = []

    def f(x):
        leaked.append(x)
        return np.sum(x)
    ad.trace(f, np.ones(2))
    with pytest.raises(ad.TraceError, match="after its trace ended"):
        np.sin(leaked[0])


def test_ndarray_methods_work_or_name_the_method_and_the_fix():
    def f(x):
        y = np.zeros(3, like=x)
        y.fill(2.0)                       # in place, like ndarray.fill
        z = x.copy()
        z.partition(1)
        return np.sum(x * y) + np.sum(z) + x.nbytes + np.sum(x.compress([True, False, True]))
    np.testing.assert_allclose(ad.grad(f)(np.array([3.0, 1.0, 2.0])), [4.0, 3.0, 4.0])
    with pytest.raises(AttributeError, match=r"ndarray.view is not supported.*astype"):
        ad.trace(lambda x: x.view(np.int64), np.ones(2))
    with pytest.raises(AttributeError, match=r"np.frobnicate"):
        ad.trace(lambda x: x.frobnicate(), np.ones(2))


def test_bitwise_operators_are_numpys_logical_on_booleans_bitwise_on_integers_refused_on_floats():
    """``&``, ``|``, ``^``, ``~``, ``<<``, ``>>`` are numpy's bitwise operators: on boolean masks
    the logical primitives (the same values), on traced integers the bitwise ones, recorded
    (the tape reruns at other integers as numpy computes them), never a logical result in place
    of the bits (``t & 6`` was ``logical_and``: bools); on floats numpy's TypeError, naming the
    op and the user's line."""
    x = np.array([-2.0, 1.0, 3.0, 6.0])

    def masked(t):
        m = (t > 0) & (t < 5) | ~(t == 3) ^ (t > 5)
        m &= True ^ (t == 1)
        return np.sum(np.where(m, t * t, 0.0))
    m = (x > 0) & (x < 5) | ~(x == 3) ^ (x > 5)
    m &= True ^ (x == 1)
    np.testing.assert_array_equal(ad.grad(masked)(x), np.where(m, 2 * x, 0.0))
    assert {e.prim.name for e in ad.trace(masked, x).eqns} >= {"logical_and", "logical_or", "logical_xor", "logical_not"}

    def bits(t, s):
        u = t & 6 | (3 ^ t)
        u ^= ~t
        u <<= s
        u |= 1 << s
        return t & s, 6 | t, u, ~t, t << s, t >> s, -9 >> s, t >> 1
    ints, shifts = np.array([3, 5, -7, 0]), np.array([0, 1, 2, 3])
    tape = ad.trace(bits, ints, shifts)
    assert {e.prim.name for e in tape.eqns} == {"bitwise_and", "bitwise_or", "bitwise_xor", "invert",
                                                "left_shift", "right_shift"}
    for t, s in ((ints, shifts), (np.array([-1, 12, 255, -128]), np.array([4, 0, 1, 5]))):
        for got, want in zip(tape(t, s), bits(t, s), strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    for f, name in ((lambda t: t & 6, "bitwise_and"), (lambda t: 6 | t, "bitwise_or"),
                    (lambda t: t ^ t, "bitwise_xor"), (lambda t: ~t, "invert"), (lambda t: t << 1, "left_shift"),
                    (lambda t: 1 >> t, "right_shift")):
        refusal = rf"ufunc '{name}' not supported(.|\n)*recording {name} at .*test_trace\.py"
        with pytest.raises(TypeError, match=refusal):
            ad.trace(f, np.array([3.0, 5.0]))
