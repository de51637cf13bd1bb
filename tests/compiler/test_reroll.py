"""Loops in the compiled code of long tapes (``ad.compiler.reroll``): the lines of an unrolled Python loop,
written back as a loop, must compute the same bits as the lines themselves, and only lines that
repeat but for the numbers of their holes (registers, the ``%N`` of their comments: ``R(k)`` and
``M(k)`` below, as the code generator writes them) are rolled (a constant's name, a literal, a
string never changes from one step to the next)."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ad
from ad.compiler import codegen, emit, reroll
from ad.compiler.codegen import compile_tape
from ad.compiler.emit import MARK, REGISTER, written
from ad.passes import optimize
from bench.workloads import chain_loss_for


def R(n: int) -> str:
    """Register ``n`` as the code generator writes it, a hole (``r12`` once written)."""
    return f"{REGISTER}{n}"


def M(n: int) -> str:
    """Tape variable ``%n`` in a comment, as the code generator writes it."""
    return f"{MARK}{n}"


def _lines_function(body: list[str], namespace: dict):
    source = "def f(v0):\n" + "\n".join(body) + "\n"
    exec(source, namespace)                       # noqa: S102  (the test's own code)
    return namespace["f"]


def _written(body: list[str]) -> list[str]:
    return [written(line) for line in body]


def _rolled(body: list[str], taken=(), steps: int = 2, lines: int = 2) -> list[str]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reroll, "MIN_STEPS", steps)
        m.setattr(reroll, "MIN_LINES", lines)
        return reroll.reroll(body, taken).split("\n")


def _same_function(body: list[str], namespace: dict, arg=1.5):
    rolled = _rolled(body)
    got = _lines_function(rolled, dict(namespace))(arg)
    want = _lines_function(_written(body), dict(namespace))(arg)
    assert got == want, "\n".join(rolled)
    return rolled


# -- the text ----------------------------------------------------------------------------------

def test_a_run_of_stepping_registers_is_a_loop_over_a_list_of_them():
    body = [f"    {R(0)} = v0 * 1.0  # {M(1)}"] + [f"    {R(k)} = {R(k - 1)} * 0.5 + 1.0  # {M(2 * k + 1)}"
                                                   for k in range(1, 40)]
    body += [f"    {R(40)} = {R(39)} + {R(0)}  # {M(80)}"] + [f"    {R(40)} = {R(40)} * 0.9 - {R(k)}  # {M(100 - k)}"
                                                            for k in range(39, -1, -1)]
    body += [f"    return ({R(40)}, {R(7)})"]
    rolled = _same_function(body, {})
    assert rolled[0].startswith("    r = [None] * 40")
    assert "    for i in range(1, 40):  # 39 steps of 1 line" in rolled
    assert "        r[i] = r[i - 1] * 0.5 + 1.0  # %{2 * i + 1}" in rolled
    assert "    for i in range(39, -1, -1):  # 40 steps of 1 line" in rolled
    assert "        r40 = r40 * 0.9 - r[i]  # %{100 - i}" in rolled
    assert "    return (r40, r[7])" in rolled and "    r40 = r[39] + r[0]  # %80" in rolled
    assert len(rolled) == 8


def test_a_body_of_several_lines_and_strides_that_do_not_divide():
    body = [f"    {R(0)} = v0"]
    for k in range(30):
        body += [f"    {R(2 * k + 1)} = {R(2 * k)} * 0.5  # {M(3 * k)}",
                 f"    {R(2 * k + 2)} = {R(2 * k + 1)} + {R(2 * k)} * 0.25  # {M(3 * k + 1)}: pullback of {M(5 * k + 7)} (x)"]
    body.append(f"    return ({R(60)}, {R(31)})")
    rolled = _same_function(body, {})
    assert rolled[2:5] == [                       # i runs over the first register; 3 and 5 against 2: //
        "    for i in range(1, 61, 2):  # 30 steps of 2 lines",
        "        r[i] = r[i - 1] * 0.5  # %{0 + 3 * ((i - 1) // 2)}",
        "        r[i + 1] = r[i] + r[i - 1] * 0.25  # %{1 + 3 * ((i - 1) // 2)}: pullback of %{7 + 5 * ((i - 1) // 2)} (x)"]


def test_names_and_literals_with_digits_never_step():
    """``c3``, ``c4``, ... are different constants, ``x[3]``, ``x[4]`` different elements: a run
    whose other digits change is not a loop."""
    namespace = {f"c{k}": float(k) for k in range(50)}
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * c{k}" for k in range(1, 50)] + [f"    return ({R(49)},)"]
    assert not any(line.lstrip().startswith("for ") for line in _same_function(body, namespace))
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * x[{k}] + np.float64({k}.5)" for k in range(1, 50)]
    body.append(f"    return ({R(49)},)")
    namespace = {"np": np, "x": [0.5 + k / 100 for k in range(50)]}
    assert not any(line.lstrip().startswith("for ") for line in _same_function(body, namespace))


def test_the_comments_words_are_text_and_only_holes_step():
    """What a comment says is text that must repeat (a ``%N`` written as text is not a hole),
    however it is worded; its holes step."""
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * 0.5  # step %{k}" for k in range(1, 40)]
    assert not any(line.lstrip().startswith("for ") for line in _same_function(body + [f"    return ({R(39)},)"], {}))
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * 0.5  # [{M(k)}] made by step 3" for k in range(1, 40)]
    rolled = _same_function(body + [f"    return ({R(39)},)"], {})
    assert "        r[i] = r[i - 1] * 0.5  # [%{i}] made by step 3" in rolled, rolled


def test_lines_with_strings_are_never_rolled_and_keep_their_strings():
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * 0.5  # {M(k)}" for k in range(1, 40)]
    body += [f"    {R(40)} = g({R(k)}, 'r{k} %{k}  # r{k}')" for k in range(39, 0, -1)] + [f"    return ({R(40)},)"]
    seen = []
    rolled = _same_function(body, {"g": lambda x, text: seen.append(text) or x})
    assert sum(line.lstrip().startswith("for ") for line in rolled) == 1
    assert "    r40 = g(r[39], 'r39 %39  # r39')" in rolled          # the register, not the string
    assert seen[:2] == ["r39 %39  # r39", "r38 %38  # r38"]


def test_deleted_slots_are_emptied():
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} + 1.0\n    del {R(k - 1)}" for k in range(1, 30)]
    body = "\n".join(body).split("\n") + [f"    return ({R(29)},)"]
    rolled = _same_function(body, {})
    assert "        r[i - 1] = None" in rolled, rolled


def test_a_loop_needs_its_names_free():
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * 0.5" for k in range(1, 40)] + [f"    return ({R(39)},)"]
    unrolled = _written(body)
    assert _rolled(body, taken={"r": None}) == unrolled and _rolled(body, taken={"i": None}) == unrolled
    assert _rolled(body, taken={"r7": None}) == unrolled
    assert _rolled(body) != unrolled
    assert _rolled(body, steps=40) == unrolled                  # 38 steps: fewer than asked for
    assert reroll.reroll(body, {}).split("\n") == unrolled      # 40 lines: too few to be worth it


# -- through the compiler -----------------------------------------------------------------------

def _unrolled(tape):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reroll, "MIN_LINES", 10 ** 9)
        return compile_tape(tape)


def _assert_same_bits(a, b, args, where):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got, want = a(*args), b(*args)
    for g, w in zip(np.atleast_1d(got[0]).ravel(), np.atleast_1d(want[0]).ravel()):
        assert np.array_equal(g, w, equal_nan=True), where
    for g, w in zip(got[1], want[1]):
        assert np.array_equal(g, w, equal_nan=True) and np.array_equal(np.signbit(g), np.signbit(w)), where


def test_the_long_chain_is_two_loops():
    x = np.linspace(-1, 1, 16)
    tape = optimize(ad.grad_tape(chain_loss_for(np, 2_000), x))
    rolled = compile_tape(tape)
    loops = [line for line in rolled.source.splitlines() if line.lstrip().startswith("for i in range(")]
    assert len(loops) == 2 and len(rolled.source.splitlines()) < 20, rolled.source
    _assert_same_bits(rolled, _unrolled(tape), (x,), "chain")
    g = ad.grad(chain_loss_for(np, 2_000), form="compiled")
    np.testing.assert_array_equal(g(x), ad.grad(chain_loss_for(np, 2_000), form="lifted")(x))


def test_scalar_code_is_never_rolled():
    def f(x):
        for _ in range(1000):
            x = np.tanh(x) * 0.5
        return x
    compiled = compile_tape(optimize(ad.grad_tape(f, 0.3)))
    assert compiled.scalar and " for " not in compiled.source
    assert " for i in range(" in compile_tape(compiled.tape, scalar=False).source


def test_large_values_die_in_a_loop():
    def f(x):
        for _ in range(300):
            x = np.sin(x) * 0.9 + x * 0.05
        return np.sum(x * x)
    x = np.linspace(-1, 1, 120 * 120).reshape(120, 120)       # 115 kB: deleted after its last read
    tape = optimize(ad.grad_tape(f, x))
    rolled = compile_tape(tape)
    assert " for i in range(" in rolled.source and "= None" in rolled.source, rolled.source
    _assert_same_bits(rolled, _unrolled(tape), (x,), "large")


UNARY = ["np.sin({a})", "np.exp({a} * 0.25)", "-{a}", "{a} ** 2", "np.abs({a})", "1.0 / (1.0 + {a} * {a})",
         "np.tanh({a}) * 0.5", "np.sqrt({a} * {a} + 1.0)"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * ({b} + 0.5)", "{a} / ({b} * {b} + 1.0)", "np.maximum({a}, {b} * 0.5)",
          "np.where({a} > {b}, {a} - {b}, {b} * 2.0)", "-({a} * {b})", "{a} @ {b} * 0.1"]
body_step = st.tuples(st.sampled_from(UNARY + BINARY), st.integers(0, 9), st.integers(0, 9))
loop_program = st.tuples(st.lists(body_step, min_size=1, max_size=4), st.integers(2, 40), st.booleans(),
                         st.integers(0, 2 ** 31))


def _loop_function(steps, n, rotate):
    """``a, b`` carried through ``n`` steps of a random body (rotated, or the last value fed back)."""
    lines, pool = [], ["a", "b"]
    for k, (text, i, j) in enumerate(steps):
        lines.append(f"        t{k} = {text.format(a=pool[i % len(pool)], b=pool[j % len(pool)])}")
        pool.append(f"t{k}")
    carry = f"a, b = {pool[-1]}, a" if rotate else f"a = {pool[-1]}"
    source = ("def f(x0, x1):\n    a, b = x0, x1\n" + f"    for _ in range({n}):\n" + "\n".join(lines)
              + f"\n        {carry}\n    return np.sum(a * b)\n")
    namespace = {"np": np}
    exec(source, namespace)                       # noqa: S102  (the test's own code)
    return namespace["f"], source


def _loop_tape(steps, n, rotate, rng):
    f, source = _loop_function(steps, n, rotate)
    xs = [rng.standard_normal((3, 3)), rng.standard_normal((3, 3))]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return optimize(ad.grad_tape(f, *xs, argnums=(0, 1))), xs, source


@settings(max_examples=60, deadline=None)
@given(loop_program)
def test_random_loops_roll_to_the_same_bits(drawn):
    """Random loop bodies, rolled as eagerly as possible (two steps make a loop), against the
    same code unrolled and against the one-line-per-equation code."""
    steps, n, rotate, seed = drawn
    tape, xs, source = _loop_tape(steps, n, rotate, np.random.default_rng(seed))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(codegen, "LONG", 0)
        m.setattr(reroll, "MIN_STEPS", 2)
        m.setattr(reroll, "MIN_LINES", 2)
        rolled = compile_tape(tape)
        m.setattr(reroll, "MIN_LINES", 10 ** 9)
        unrolled = compile_tape(tape)
        m.setattr(codegen, "LONG", 10 ** 9)
        one_per_line = compile_tape(tape)
    _assert_same_bits(rolled, unrolled, xs, source + rolled.source)
    _assert_same_bits(rolled, one_per_line, xs, source + rolled.source)


def test_most_random_loops_do_roll():
    """The property above would hold if nothing were ever rolled: most loops of 20 steps are
    (62 % to 80 % of 40 programs, by the seed; a register reused out of step, or a step that
    differs, keeps the lines)."""
    rng = np.random.default_rng(0)
    rolled_count, programs = 0, 40
    for _ in range(programs):
        steps = [(str(rng.choice(UNARY + BINARY)), int(rng.integers(10)), int(rng.integers(10)))
                 for _ in range(int(rng.integers(1, 5)))]
        tape, _, _ = _loop_tape(steps, 20, bool(rng.integers(2)), rng)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(codegen, "LONG", 0)
            m.setattr(reroll, "MIN_STEPS", 8)
            m.setattr(reroll, "MIN_LINES", 8)
            source = compile_tape(tape).source
        rolled_count += "for i in range(" in source or "for _ in range(" in source
    assert rolled_count >= 0.5 * programs, rolled_count


def test_a_long_stretch_that_is_not_a_loop_is_read_once(monkeypatch):
    """Lines alike but for a constant's name (a loop over a list of arrays): never a loop, and
    each line read a bounded number of times (its holes' numbers, or its text against a loop's
    step), not once from each line before it."""
    read = []
    numbers, with_numbers = reroll.numbers, reroll.with_numbers

    def counted(write):
        return lambda *xs: read.append(write(*xs).count("\n") + 1) or write(*xs)
    monkeypatch.setattr(reroll, "numbers", lambda text: read.append(text.count("\n") + 1) or numbers(text))
    monkeypatch.setattr(reroll, "with_numbers", lambda pattern: counted(with_numbers(pattern)))
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * c{k}" for k in range(1, 5000)] + [f"    return ({R(4999)},)"]
    assert reroll.reroll(body, {}).split("\n") == _written(body)
    assert sum(read) <= 2 * len(body), sum(read)
    namespace = {f"c{k}": 1.0 + 1e-4 * k for k in range(5000)}
    body = [f"    {R(0)} = v0"] + [f"    {R(k)} = {R(k - 1)} * c{k % 7}" for k in range(1, 5000)] + [f"    return ({R(4999)},)"]
    read.clear()
    rolled = _same_function(body, namespace)               # a loop of 7 lines, c0 ... c6
    assert "    for i in range(1, 4999, 7):  # 714 steps of 7 lines" in rolled, rolled[:4]
    assert 0 < sum(read) <= 2 * len(body), sum(read)


def test_only_statements_of_the_body_are_rolled():
    """The generated code has no blocks; if it had, a loop's body could start inside one."""
    body = [f"    {R(0)} = v0"]
    for k in range(1, 40):
        body += [f"    if {R(k - 1)} > 0.0:", f"        {R(k)} = {R(k - 1)} * 0.5", "    else:", f"        {R(k)} = {R(k - 1)} + 1.0"]
    body.append(f"    return ({R(39)},)")
    assert _rolled(body) == _written(body)


def test_holes_are_read_back_as_written():
    """The hole protocol both ways, on a long tape's generated lines: a line's numbers and its
    holes give the line back, and what a reader sees has no hole left."""
    tape = optimize(ad.grad_tape(chain_loss_for(np, 300), np.linspace(-1, 1, 4)))
    with pytest.MonkeyPatch.context() as m:
        seen = []
        m.setattr(codegen, "reroll", lambda lines, taken, *notes: seen.extend(lines) or written("\n".join(lines)))
        source = compile_tape(tape).source
    assert len(seen) > 300 and all(emit.with_numbers(emit.unnumbered(t))(*emit.numbers(t)) == t for t in seen)
    assert source.splitlines()[1:] == _written(seen) and "\x00" not in source and "\x01" not in source


def test_the_comments_wording_is_the_generators_alone(monkeypatch):
    """A comment worded otherwise rolls the same loops: reroll reads the holes, not the words."""
    x = np.linspace(-1, 1, 16)
    tape = optimize(ad.grad_tape(chain_loss_for(np, 2_000), x))
    monkeypatch.setattr(codegen, "comment", lambda outs, origins: "computes " + emit.comment(outs, origins).replace(": ", " by "))
    rolled = compile_tape(tape)
    loops = [line for line in rolled.source.splitlines() if line.lstrip().startswith("for i in range(")]
    assert len(loops) == 2 and "# computes %{" in rolled.source, rolled.source
    _assert_same_bits(rolled, _unrolled(tape), (x,), "reworded")
