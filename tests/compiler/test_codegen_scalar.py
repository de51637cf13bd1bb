"""The scalar specialisation of ``ad.compiler.codegen`` (issue 19): a tape of Python floats compiles to
``math`` and float arithmetic, and gives what the numpy code of the same tape gives, on the
spec table's scalar cases, on edge values and on random programs.

"What numpy gives" is the forms' promise (docs/numerics.md), held per equation, whatever SIMD
path numpy takes on the machine: numpy's bits for the correctly rounded operations (+ - * /,
sqrt, comparisons, where, maximum...), within ``ad.primitives.ULPS`` for the functions that are
not correctly rounded (``math.expm1`` and numpy's AVX-512 expm1 differ in the last bit), the same
nan-ness and sign of zero, the same result type (numpy float64 scalars, as numpy's arithmetic
returns). And the equations compose exactly: the whole scalar code gives, bit for bit, the tape
run equation by equation with each equation's own scalar code (``_spelled_run``), so an ulp of
``math.tanh`` may grow through a program's arithmetic but nothing else may differ.
tests/compiler/test_numerics.py runs this file again with numpy's AVX-512 paths disabled.
"""
import math
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ad
from ad.compiler.codegen import compile_tape
from ad.passes import optimize
from ad.samples import traced
from ad.tape import Tape, Var, eval_eqns
from tests.support.cases import CASES, floats, leaves
from tests.support.numeric import assert_as_promised

EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, 710.0)


def _bitwise(got, want, where: str) -> None:
    assert np.result_type(got) == np.result_type(want), (where, got, want)
    assert got == want and np.signbit(got) == np.signbit(want) or np.isnan(got) and np.isnan(want), \
        (where, got, want)


def _both(tape):
    scalar, numpy = compile_tape(tape), compile_tape(tape, scalar=False)
    assert not numpy.scalar
    return scalar, numpy


def _outcome(compiled, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return list(compiled.run(args)), None
        except Exception as exc:  # noqa: BLE001  (the numpy code's error is the expected one)
            return None, type(exc)


class _Alone(dict):
    """Each equation compiled on its own (a tape of one equation), as scalar code."""

    def __missing__(self, e):
        inputs = tuple(dict.fromkeys(x for x in e.inputs if type(x) is Var))
        self[e] = compiled = compile_tape(Tape(inputs, (e,), e.outputs))
        return compiled


def _python(x):
    """A value as the scalar code holds it: Python floats and bools (numpy's 0-d float64 would
    answer 1.0 / 0.0 with inf where Python raises)."""
    return x.item() if isinstance(x, (np.float64, np.bool_)) else x


def _spelled_run(tape, args, alone: _Alone, where: str):
    """The tape run equation by equation, each by its own scalar code on the values so far,
    each result checked against numpy's function (the primitive's impl, as the lifted form runs
    it) on the same operands. Returns the outputs, or None where a scalar spelling refused a
    value (``math.log(0.0)``): the compiled code then reruns as numpy code."""
    refused = False

    def apply(e, vals):
        nonlocal refused
        want = e.prim.impl(*vals, **dict(e.params))
        if refused:
            return want
        operands = dict(zip(e.inputs, vals))
        try:
            got = alone[e].fn(*(_python(operands[x]) for x in alone[e].tape.inputs))
        except (ArithmeticError, ValueError):
            refused = True
            return want
        for g, w in zip(got, want if e.prim.multiple_results else (want,)):
            assert_as_promised(g, w, e.prim, f"{where}: {e}")
        return got if e.prim.multiple_results else got[0]

    env = dict(zip(tape.inputs, args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eval_eqns(tape.eqns, env, apply)
    return None if refused else [env[x] if type(x) is Var else x.value for x in tape.outputs]


def _compare(scalar, numpy, args, where: str, alone: _Alone | None = None) -> bool:
    """The scalar code's outcome is the numpy code's: the same error, or each equation as
    promised and the whole the spelled run's bits (the numpy code's where it reran as that).
    Returns whether there were values to compare."""
    got, got_error = _outcome(scalar, args)
    want, want_error = _outcome(numpy, args)
    assert got_error is want_error, (where, got_error, want_error)
    if want is None:
        return False
    spelled = _spelled_run(scalar.tape, args, _Alone() if alone is None else alone, where)
    for g, w in zip(got, want if spelled is None else spelled):
        _bitwise(g, np.float64(w) if type(w) is float else w, where)
    return True


def _python_args(xs):
    return [x.item() if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype == np.float64 else x for x in xs]


SCALAR_CASES = [pytest.param(c, id=c.name) for c in CASES if "scalar" in c.sample.shapes
                and any(i.kind == "float" for i in traced(c.sample.inputs))]


def _gradient_tape(case):
    """The gradient tape of a weighted sum of the case's outputs, in Python float arithmetic
    (``np.sum`` of a 0-d value would make it numpy code)."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    xs = _python_args(case.inputs("scalar", rng))
    argnums = floats(xs)
    ws = [float(w) for w in rng.standard_normal(len(leaves(case.fn(*xs))))]

    def loss(*xs):
        outs = [y for y in leaves(case.fn(*xs)) if np.issubdtype(np.result_type(y), np.floating)]
        return sum(w * y for w, y in zip(ws, outs)) if outs else 0.0 * xs[argnums[0]]
    return optimize(ad.grad_tape(loss, *xs, argnums=argnums)), xs, argnums


@pytest.mark.parametrize("case", SCALAR_CASES)
def test_scalar_code_equals_numpy_code(case):
    """Each scalar case's gradient tape, at its sample and at edge values of its float operands
    (a tape that is not scalar code runs the numpy code alone: nothing to compare)."""
    gt, xs, argnums = _gradient_tape(case)
    scalar, numpy = _both(gt)
    if not scalar.scalar:
        return
    alone = _Alone()
    _compare(scalar, numpy, gt.flatten_args(tuple(xs)), case.name, alone)
    for k in argnums:
        for edge in EDGES:
            args = gt.flatten_args(tuple(edge if i == k else x for i, x in enumerate(xs)))
            _compare(scalar, numpy, args, f"{case.name} x{k}={edge}", alone)


def test_every_declared_scalar_spelling_is_used_and_checked():
    """The primitives that declare a scalar spelling compile to scalar code on their own samples
    (so the test above checked the spelling), and most scalar cases' gradients are scalar code."""
    specialised, primal = set(), set()
    for param in SCALAR_CASES:
        case = param.values[0]
        if case.primitive is None or case.primitive.scalar_spelling is None:
            continue
        rng = np.random.default_rng(0)
        xs = _python_args(case.inputs("scalar", rng))
        if compile_tape(ad.trace(case.fn, *xs)).scalar:
            primal.add(case.primitive.name)
        if compile_tape(_gradient_tape(case)[0]).scalar:
            specialised.add(case.primitive.name)
    declared = {p.values[0].primitive.name for p in SCALAR_CASES
                if p.values[0].primitive is not None and p.values[0].primitive.scalar_spelling is not None}
    assert primal == declared
    assert len(specialised) >= len(declared) - 3, declared - specialised


BINARY_EDGES = [(a, b) for a in EDGES for b in EDGES]


@pytest.mark.parametrize("op,text", [
    (lambda a, b: a / b, "{a} / {b}"), (lambda a, b: a ** b, "{a} ** {b}"), (lambda a, b: a ** 2, "{a} ** 2"),
    (lambda a, b: a ** -1, "{a} ** -1"), (np.maximum, "max"), (np.minimum, "min"), (np.fmax, "fmax"),
    (np.arctan2, "arctan2"), (np.hypot, "hypot"), (lambda a, b: a // b, "//"), (lambda a, b: a % b, "%"),
    (lambda a, b: np.where(a > b, a, b), "where"), (np.copysign, "copysign"),
    (lambda a, b: np.log(a) + np.sqrt(b), "log + sqrt"), (lambda a, b: np.exp(a) * np.cosh(b), "exp * cosh"),
    (lambda a, b: np.arctanh(a) - np.arcsin(b), "arctanh - arcsin"), (lambda a, b: np.sign(a) * b, "sign")],
    ids=lambda v: v if isinstance(v, str) else "")
def test_edge_values_of_binary_programs(op, text):
    """Value and gradient at every pair of edge values: inf, nan, signed zeros, huge, tiny."""
    gt = optimize(ad.grad_tape(lambda a, b: op(a, b) * 1.5, 0.7, 0.3, argnums=(0, 1)))
    scalar, numpy = _both(gt)
    assert scalar.scalar and "math." in scalar.source or "math" not in text, scalar.source
    alone = _Alone()
    compared = [_compare(scalar, numpy, [a, b], f"{text} at {a}, {b}", alone) for a, b in BINARY_EDGES]
    assert sum(compared) > len(BINARY_EDGES) // 2


def test_python_floats_get_numpy_semantics_in_every_form():
    """1 / 0 is inf and (-2)**0.5 is nan, as numpy says, not ZeroDivisionError or a complex."""
    for form in ("lifted", "compiled"):
        with np.errstate(divide="ignore", invalid="ignore"):
            value, (da, db) = ad.value_and_grad(lambda a, b: a / b, argnums=(0, 1), form=form)(1.0, 0.0)
            assert value == math.inf and da == math.inf and db == -math.inf, form
            value, _ = ad.value_and_grad(lambda a, b: a ** b, argnums=(0, 1), form=form)(-2.0, 0.5)
            assert np.isnan(value) and type(value) is np.float64, form


def test_scalar_source_reads_like_a_hand_written_gradient():
    def f(a, b):
        return np.sin(a) * b + a / b
    compiled = compile_tape(optimize(ad.grad_tape(f, 0.5, 2.0, argnums=(0, 1))))
    assert compiled.scalar
    src = compiled.source
    assert "math.sin(v0)" in src and "math.cos(v0)" in src and "np.sin" not in src
    assert "# %2" in src and "pullback of" in src                 # the tape's names in the comments
    value, grads = compiled(0.5, 2.0)
    assert type(value) is np.float64 and all(type(g) is np.float64 for g in grads)
    np.testing.assert_allclose(grads, [math.cos(0.5) * 2.0 + 0.5, math.sin(0.5) - 0.5 / 4.0], rtol=1e-15)


def test_scalar_code_reuses_names_of_dead_values():
    """A long scalar tape keeps a few names, not one local per equation."""
    def f(x):
        for _ in range(200):
            x = np.sin(x) * 0.9 + 0.1 * x
        return x
    compiled = compile_tape(optimize(ad.grad_tape(f, 0.3)))
    assert compiled.scalar and len(compiled.tape.eqns) > 1500
    assert compiled.fn.__code__.co_nlocals < 210             # the 200 values the backward pass reads
    x, g = 0.3, 1.0
    for _ in range(200):
        g, x = g * (0.9 * math.cos(x) + 0.1), math.sin(x) * 0.9 + 0.1 * x
    value, grad = compiled(0.3)
    assert value == x and abs(grad - g) <= 1e-14 * abs(g)


def test_an_integer_literal_is_a_float_in_scalar_code():
    """``np.where(c, 1.0, 0)`` is 0.0 in numpy, and its negation -0.0; a Python ``0`` chosen by
    the scalar code stayed an int, and ``-0`` is 0 (found by the composition check below)."""
    gt = optimize(ad.grad_tape(lambda a, b: np.where(-a > b, -a, b * 2.0), 0.0, 0.0, argnums=(0, 1)))
    scalar, numpy = _both(gt)
    assert "(1.0 if" in scalar.source and "else 0.0)" in scalar.source, scalar.source
    assert _compare(scalar, numpy, [0.0, 0.0], "where of 0")
    assert np.signbit(scalar.run([0.0, 0.0])[1])


def test_mixed_and_array_tapes_stay_numpy():
    assert not compile_tape(ad.grad_tape(lambda x, a: np.sum(x * a), np.ones(3), 2.0)).scalar
    assert not compile_tape(ad.grad_tape(lambda a: np.float32(2.0) * a, np.float32(1.5))).scalar


# -- random programs over floats -----------------------------------------------------------

UNARY = {"sin": "np.sin({a})", "cos": "np.cos({a})", "tanh": "np.tanh({a})", "exp": "np.exp({a})",
         "log": "np.log({a})", "sqrt": "np.sqrt({a})", "square": "{a} ** 2", "reciprocal": "1.0 / {a}",
         "abs": "np.abs({a})", "arctan": "np.arctan({a})", "negative": "-{a}", "log1p": "np.log1p({a})",
         "expm1": "np.expm1({a})", "cbrt": "np.cbrt({a})", "arcsinh": "np.arcsinh({a})", "scale": "0.5 * {a}"}
BINARY = {"add": "{a} + {b}", "subtract": "{a} - {b}", "multiply": "{a} * {b}", "divide": "{a} / {b}",
          "power": "{a} ** {b}", "maximum": "np.maximum({a}, {b})", "minimum": "np.minimum({a}, {b})",
          "hypot": "np.hypot({a}, {b})", "arctan2": "np.arctan2({a}, {b})",
          "where": "np.where({a} > {b}, {a}, {b} * 2.0)"}
STEPS = sorted(UNARY) + sorted(BINARY)

value = st.one_of(st.floats(-4.0, 4.0), st.sampled_from(EDGES), st.floats(allow_nan=True, allow_infinity=True))
program = st.tuples(st.lists(st.tuples(st.sampled_from(STEPS), st.integers(0, 99), st.integers(0, 99)),
                             min_size=1, max_size=8),
                    st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3),   # where it is traced
                    st.lists(value, min_size=3, max_size=3))                  # where it is run


def _function(steps):
    pool, lines = ["x0", "x1", "x2"], []
    for k, (name, i, j) in enumerate(steps):
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        lines.append(f"    v{k} = {(UNARY | BINARY)[name].format(a=a, b=b)}")
        pool.append(f"v{k}")
    source = "def f(x0, x1, x2):\n" + "\n".join(lines) + f"\n    return {pool[-1]} + 0.25 * {pool[-2]}\n"
    namespace = {"np": np}
    exec(source, namespace)
    return namespace["f"], source


@settings(max_examples=60, deadline=None)
@given(program)
def test_random_float_programs(drawn):
    steps, at, run_at = drawn
    f, source = _function(steps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gt = optimize(ad.grad_tape(f, *at, argnums=(0, 1, 2)))
    scalar, numpy = _both(gt)
    assert scalar.scalar or any(e.prim.scalar_spelling is None for e in gt.eqns), source
    for args in (at, run_at):      # an ulp of sin or tanh grows through the program's arithmetic
        _compare(scalar, numpy, list(args), source)
