"""The compact numpy code ``ad.compiler.codegen`` writes for long tapes (issue 19): single-use values written
into their reader's expression, names of dead values reused, float constants as 0-d arrays.
It must compute exactly what the one-line-per-equation code of short tapes computes: the same
bits, dtypes and errors, on the spec table, on random programs whose operators need their
parentheses, and on Python floats (the scalar code)."""
import math
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ad
from ad.compiler import codegen
from ad.compiler.codegen import compile_tape
from ad.errors import GuardError
from ad.passes import optimize
from tests.support.cases import CASES, floats, leaves


def _compact(tape, monkeypatch, scalar=None):
    """The tape compiled as if it were long."""
    with monkeypatch.context() as m:
        m.setattr(codegen, "LONG", 0)
        return compile_tape(tape, scalar=scalar)


def _outcome(compiled, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return list(compiled.run(args)), None
        except Exception as exc:  # noqa: BLE001  (the short code's error is the expected one)
            return None, type(exc)


def _assert_same(compact, short, args, where: str):
    got, got_error = _outcome(compact, args)
    want, want_error = _outcome(short, args)
    assert got_error is want_error, (where, got_error, want_error, compact.source)
    assert len(got or ()) == len(want or ()), where
    for g, w in zip(got or (), want or ()):
        assert type(g) is type(w) and np.result_type(g) == np.result_type(w), (where, g, w)
        assert np.array_equal(g, w, equal_nan=True) and np.array_equal(np.signbit(g), np.signbit(w)), \
            (where, g, w, compact.source)


def _gradient_tape(case, shape: str):
    rng = np.random.default_rng(zlib.crc32(f"{case.name} {shape}".encode()))
    xs = case.inputs(shape, rng)
    argnums = floats(xs)
    ws = [float(w) for w in rng.standard_normal(len(leaves(case.fn(*xs))))]

    def loss(*xs):
        outs = [y for y in leaves(case.fn(*xs)) if np.issubdtype(np.result_type(y), np.floating)]
        return sum(w * np.sum(y) for w, y in zip(ws, outs)) if outs else 0.0 * np.sum(xs[argnums[0]])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return optimize(ad.grad_tape(loss, *xs, argnums=argnums)), xs


ARRAY_CASES = [pytest.param(c, id=c.name) for c in CASES if c.sample.shapes[-1] != "scalar" and floats(
    c.inputs(c.sample.shapes[-1], np.random.default_rng(0)))]


@pytest.mark.parametrize("case", ARRAY_CASES)
def test_compact_code_is_the_one_line_per_equation_code(case, monkeypatch):
    """Each case's gradient tape at its last shape set: the same bits either way."""
    gt, xs = _gradient_tape(case, case.sample.shapes[-1])
    _assert_same(_compact(gt, monkeypatch), compile_tape(gt), gt.flatten_args(tuple(xs)), case.name)


# -- random programs whose operators need their parentheses ------------------------------------

UNARY = ["np.sin({a})", "np.exp({a} * 0.25)", "-{a}", "{a} ** 2", "({a} - 0.5) ** 3", "np.abs({a})",
         "1.0 / (1.0 + {a} * {a})", "np.sqrt({a} * {a} + 1.0)", "(-{a}) ** 2.0", "np.tanh({a}) * 0.5"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} - ({b} - {a})", "{a} * ({b} + 0.5)", "{a} / ({b} * {b} + 1.0)",
          "({a} + {b}) ** 2", "np.maximum({a}, {b} * 0.5)", "np.where({a} > {b}, {a} - {b}, {b} * 2.0)",
          "({a} - {b}) * ({a} + {b})", "-({a} * {b})", "{a} @ {b}"]

step = st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 99), st.integers(0, 99))
program = st.tuples(st.lists(step, min_size=1, max_size=10), st.integers(0, 2 ** 31))


def _function(steps):
    pool, lines = ["x0", "x1"], []
    for k, (text, i, j) in enumerate(steps):
        lines.append(f"    v{k} = {text.format(a=pool[i % len(pool)], b=pool[j % len(pool)])}")
        pool.append(f"v{k}")
    source = "def f(x0, x1):\n" + "\n".join(lines) + f"\n    return np.sum({pool[-1]} * {pool[-2]})\n"
    namespace = {"np": np}
    exec(source, namespace)
    return namespace["f"], source


@settings(max_examples=40, deadline=None)
@given(program)
def test_random_programs_compile_compactly_to_the_same_bits(drawn):
    steps, seed = drawn
    f, source = _function(steps)
    rng = np.random.default_rng(seed)
    _compact_agrees(f, [rng.standard_normal((3, 3)), rng.standard_normal((3, 3))], source)
    if "@" not in source:                                      # the same programs on Python floats
        _compact_agrees(f, [float(x) for x in rng.standard_normal(2)], source)


def _compact_agrees(f, xs, source):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        gt = optimize(ad.grad_tape(f, *xs, argnums=(0, 1)))
    with pytest.MonkeyPatch.context() as m:
        compact = _compact(gt, m)
    _assert_same(compact, compile_tape(gt), xs, source)


def test_only_long_code_calls_ufuncs_by_local_names_and_never_shadows_a_name_it_uses():
    """Short code (the one read in the docs) says ``np.sin``; long code makes locals of the ufuncs
    and ``math`` functions it calls more than once, except names of its globals and builtins."""
    short = compile_tape(ad.grad_tape(lambda x: np.sum(np.sin(np.sin(x))), np.ones(3)))
    assert "np.sin(" in short.source and "sin = " not in short.source

    def long_f(x):
        for _ in range(60):
            x = np.abs(np.sin(x)) * 0.9 + np.exp(-x) * 0.1
        return np.sum(x)
    x = np.linspace(-1, 1, 5)
    compiled = compile_tape(optimize(ad.grad_tape(long_f, x)))
    head = compiled.source.splitlines()[1]
    assert head.startswith("    absolute, cos, exp, sign, sin = np.absolute, np.cos, np.exp, np.sign, np.sin  #")
    assert "np.sin(" not in compiled.source and " sin(" in compiled.source
    assert np.allclose(compiled(x)[1], ad.grad(long_f, form="lifted")(x))

    def smooth(x):
        for _ in range(60):
            x = np.sin(x) * 0.9 + np.exp(-x) * 0.1
        return x
    scalar = compile_tape(optimize(ad.grad_tape(lambda a, b: smooth(a) + smooth(b),
                                                0.3, 0.4, argnums=(0, 1))))
    assert scalar.scalar and "cos, exp, sin = math.cos, math.exp, math.sin  #" in scalar.source.splitlines()[1]
    np.testing.assert_allclose(scalar(0.3, 0.4)[1], ad.grad(lambda a, b: smooth(a) + smooth(b),
                                                             argnums=(0, 1))(0.3, 0.4))

    lines = ["def f(v0):", "    r0 = np.sin(np.cos(v0))  # %1: np.cos(", "    r1 = np.sin(np.cos(r0))",
             "    r0, r1 = np.divmod(r1, r0)", "    r0 = np.divmod(r1, np.exp(r0))[0]"]
    assert codegen._hoisted(lines, {"np": np, "sin": print}) == [
        "    cos = np.cos  # called by a local name: faster than an attribute"]    # a global; a builtin; once
    assert lines[1:3] == ["    r0 = np.sin(cos(v0))  # %1: np.cos(", "    r1 = np.sin(cos(r0))"]


def test_a_large_temporary_is_written_over_by_its_last_reader_unless_a_view_of_it_is_read_later():
    """numpy elides a temporary inside one expression (``np.tanh(x + 1.0)`` adds into ``x + 1.0``'s
    array); the compiled code names its temporaries, so it writes a large one's last reader into
    it itself, ``np.add(v1, 1.0, out=v1)``. Never into an input, an output or a view's base that
    a later line still reads through the view, and never a small one."""
    x = np.linspace(-1, 1, 128 * 128).reshape(128, 128)         # 128 KB

    def chain(x):
        return np.sum(np.tanh(np.sin(x) + 1.0) * 2.0)
    c = compile_tape(optimize(ad.grad_tape(chain, x)))
    assert "v2 = np.add(v1, 1.0, out=v1)" in c.source and "v3 = np.tanh(v2, out=v2)" in c.source
    assert "out=v0" not in c.source and "out=v8" not in c.source      # the input; a broadcast view
    value, grad = c(x)
    np.testing.assert_array_equal(grad, 2.0 * (1 - np.tanh(np.sin(x) + 1.0) ** 2) * np.cos(x))
    assert value == chain(x)

    def viewed(x):
        a = np.sin(x)
        t = a.T                       # read after exp(a), a's last direct read
        return np.sum(np.exp(a) * t)
    c = compile_tape(ad.trace(viewed, x))
    assert "out=v1" not in c.source and "np.multiply(v3, v2, out=v3)" in c.source, c.source
    assert c(x) == viewed(x)
    small = compile_tape(ad.trace(chain, x[:8]))
    assert "out=" not in small.source


# -- what a long tape's code looks like ---------------------------------------------------------

def chain(x):
    for _ in range(150):
        x = np.tanh(x) * 0.5
    return np.sum(x)


def test_a_long_tape_reads_like_a_hand_written_gradient():
    """One line per step of the loop, forward and backward; constants named for their value;
    each line names its tape variable and the pullbacks in it; few locals."""
    x = np.linspace(-1, 1, 16)
    compiled = compile_tape(optimize(ad.grad_tape(chain, x)))
    assert len(compiled.tape.eqns) > codegen.LONG
    lines = compiled.source.splitlines()
    assert len(lines) < len(compiled.tape.eqns) / 2
    assert lines[1].startswith("    tanh = np.tanh  # ")          # ufuncs called by a local name
    assert any(line.strip().startswith("r1 = tanh(r0 * c_0_5)  # %") for line in lines)
    backward = [line for line in lines if "pullback of" in line]
    assert "np.broadcast_to(" in backward[0] and len(backward) == 1 + 150, backward[:3]  # the seed, a step a line
    assert all(" * c_0_5 * (1 - " in line for line in backward[1:]), backward[:3]
    assert all(", %" in line.split("pullback of", 1)[1] for line in backward[1:])   # %4 (multiply), %3 (tanh)
    assert compiled.fn.__code__.co_nlocals < 160                 # the 150 values the backward pass reads
    assert "del " not in compiled.source                         # small values die in their names
    t, ts = x, []
    for _ in range(150):
        t = np.tanh(t)
        ts.append(t)
        t = t * 0.5
    g = np.ones_like(x)
    for t in reversed(ts):
        g = g * 0.5 * (1 - t * t)
    value, grad = compiled(x)
    assert value == np.sum(ts[-1] * 0.5) and np.array_equal(grad, g)


def test_a_long_tape_deletes_its_large_temporaries(monkeypatch):
    """A large value is deleted after its last read (its name is not taken by that line's own
    value), small ones are not."""
    def f(x):
        for _ in range(30):
            x = np.sin(x) * 0.9 + np.cos(x)
        return np.sum(x * x)
    x = np.linspace(-1, 1, 10_000)               # 80 kB arrays
    gt = optimize(ad.grad_tape(f, x))
    short, compact = compile_tape(gt), _compact(gt, monkeypatch)
    dels = [line for line in compact.source.splitlines() if line.strip().startswith("del ")]
    assert dels and all(name.startswith(("r", "v")) for line in dels for name in line.split()[1:])
    _assert_same(compact, short, [x], "large")


def test_float_constants_among_arrays_are_0d_arrays_and_the_rest_stays_literal(monkeypatch):
    """0.9 among float64 arrays is ``c_0_9``; a float32 array keeps its Python float (numpy's weak
    scalar: a float64 array would promote it), a 0-d value too; a signed zero keeps its sign."""
    def f(x, y, s):
        return np.sum(x * 0.9 + x * -0.0) + np.sum(y * 0.5) + s * 0.25
    x, y = np.linspace(1, 2, 4), np.linspace(1, 2, 4, dtype=np.float32)
    compact = _compact(ad.trace(f, x, y, 2.0), monkeypatch, scalar=False)
    assert "* c_0_9" in compact.source and "* c_m0_0" in compact.source, compact.source
    assert "* 0.5" in compact.source and "* 0.25" in compact.source, compact.source
    constants = compact.fn.__globals__
    assert constants["c_m0_0"].dtype == np.float64 and math.copysign(1, constants["c_m0_0"]) < 0
    assert not constants["c_0_9"].flags.writeable
    _assert_same(compact, compile_tape(ad.trace(f, x, y, 2.0), scalar=False), [x, y, 2.0], "constants")


def test_a_guard_is_checked_where_the_tape_checks_it(monkeypatch):
    """A guard's operand is not written into it (its source reads it twice); the compact code
    takes the branch the tape took and refuses the other."""
    def f(x):
        y = np.sin(x) * 2.0
        if np.sum(y) > 0:
            return np.sum(np.cos(y) + 1.0)
        return np.sum(y)
    x = np.linspace(0.1, 1, 5)
    gt = optimize(ad.grad_tape(f, x))
    compact = _compact(gt, monkeypatch)
    assert "check_guard(" in compact.source
    _assert_same(compact, compile_tape(gt), [x], "guard")
    with pytest.raises(GuardError):
        compact(-x)
