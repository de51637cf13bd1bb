"""Scope comments in compiled code: where the scope of the lines (``Eqn.scope``, the user's calls)
changes, ``ad.compile(...).source`` has a comment line naming the new one (``# in layer#2``,
``# top level``). They are comments only: without them the code is the code of the same tape
with no scopes, character for character, rolled loops included (reroll never reads them)."""
import numpy as np
import pytest

import ad
from ad.compiler import emit, reroll
from ad.compiler.codegen import compile_tape
from ad.compiler.emit import MARK, REGISTER, scope_note
from ad.examples.programs import mlp_example, mlp_loss, rnn_example, rnn_loss
from ad.gradtape import GradTape
from ad.passes import optimize


def _unscoped(tape):
    eqns = tuple(e.with_scope(()) for e in tape.eqns)
    if isinstance(tape, GradTape):
        return GradTape(tape.inputs, eqns, tape.outputs, n_forward=tape.n_forward, n_values=tape.n_values,
                        n_seeds=tape.n_seeds, grad_tree=tape.grad_tree, grad_slots=tape.grad_slots,
                        input_names=tape.input_names, in_tree=tape.in_tree, out_tree=tape.out_tree)
    return tape.replace(eqns=eqns)


def _is_note(line: str) -> bool:
    return line.startswith(("    # in ", "    # top level"))


def _notes(source: str) -> list[tuple[str, str]]:
    """(note, the line after it) for every scope note."""
    lines = source.splitlines()
    return [(line.strip(), lines[k + 1].strip()) for k, line in enumerate(lines) if _is_note(line)]


def _without_notes(source: str) -> str:
    return "\n".join(line for line in source.splitlines() if not _is_note(line))


def _same_code_as_unscoped(tape, **kw):
    source = compile_tape(tape, **kw).source
    plain = compile_tape(_unscoped(tape), **kw).source
    assert not any(map(_is_note, plain.splitlines()))
    assert _without_notes(source) == plain.rstrip("\n")
    return source


def test_the_mlps_code_names_each_scope_where_it_begins():
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    source = _same_code_as_unscoped(gt)
    assert _notes(source) == [
        ("# in layer#1", "v6 = v4 @ v0"), ("# in layer#2", "v9 = v8 @ v2"),
        ("# in log_softmax", "v11 = np.maximum.reduce(v10, axis=(1,), keepdims=True)"), ("# top level", "v17 = v5 * v16"),
        ("# in log_softmax", "v29 = -v28  # pullback of %16 (subtract)"),
        ("# in layer#2", "v45 = v35 + v44  # accumulate cotangent of %10"),
        ("# in layer#1", "v51 = v8 * v8  # pullback of %8 (tanh)")]
    lines = source.splitlines()
    assert lines[1:3] == ["    # forward", "    # in layer#1"]            # the section, then the scope
    assert compile_tape(gt).source == source                                # deterministic


def test_every_equation_line_is_under_the_note_of_its_scope():
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    lines = compile_tape(gt).source.splitlines()
    shown, k = "top level", 0
    for line in lines[1:]:
        if _is_note(line):
            shown = line.strip()[2:]
        elif " = " in line:
            e = gt.eqns[k]
            assert shown == ("in " + "/".join(e.scope) if e.scope else "top level"), (line, e)
            k += 1
    assert k == len(gt.eqns)


def test_nested_scopes_and_names_a_comment_cannot_hold():
    def f(x):
        with ad.scope("enc"):
            with ad.scope("block\nnew line"):
                x = np.tanh(x)
            with ad.scope(f"hole{REGISTER}{MARK}7"):
                x = x * 2.0
        return np.sum(x)
    source = _same_code_as_unscoped(ad.trace(f, np.ones(3)))
    assert [n for n, _ in _notes(source)] == ["# in enc/block\\nnew line", "# in enc/hole\\x00\\x017", "# top level"]
    assert scope_note(("a", "b")) == "    # in a/b" and scope_note(()) == "    # top level"


def test_a_line_of_equations_of_several_scopes_is_in_the_scope_they_share():
    """A long tape writes a value read once into its reader's line: the RNN's backward lines
    hold pullbacks of two steps' cells (``cell#7``, ``cell#6``), so they are in the scope the
    two share, the traced function's."""
    gt = ad.grad_tape(rnn_loss, *rnn_example())
    source = _same_code_as_unscoped(gt)
    notes = [n for n, _ in _notes(source)]
    assert notes[:4] == ["# in cell#1", "# top level", "# in cell#2", "# top level"]
    assert "# in cell#40" in notes and all(a != b for a, b in zip(notes, notes[1:]))
    (value, grads), (want_value, want_grads) = compile_tape(gt)(*rnn_example()), gt(*rnn_example())
    assert value == want_value and all(np.array_equal(grads[k], want_grads[k]) for k in want_grads)


def test_scalar_code_has_the_notes_too():
    def sig(t):
        return 1.0 / (1.0 + np.exp(-t))

    def f(x, y):
        return sig(x * y) + sig(x - y)
    tape = ad.trace(f, 0.3, 0.7)
    compiled = compile_tape(tape)
    assert compiled.scalar
    assert _same_code_as_unscoped(tape) == compiled.source
    assert [n for n, _ in _notes(compiled.source)] == ["# in sig#1", "# top level", "# in sig#2", "# top level"]
    assert compiled(0.3, 0.7) == tape(0.3, 0.7)


# -- long loops: rolled the same, a loop headed by its first step's note ----------------------------

def _chain_in_a_function(n):
    def step(x):
        return 0.5 * np.tanh(x)

    def loss(x):
        for _ in range(n):
            x = step(x)
        return np.sum(x * x)
    return loss


@pytest.mark.parametrize("optimized", [False, True])
def test_a_loop_over_calls_rolls_as_it_does_without_scopes(optimized):
    x = np.linspace(-1, 1, 8)
    gt = ad.grad_tape(_chain_in_a_function(600), x)
    gt = optimize(gt) if optimized else gt
    source = _same_code_as_unscoped(gt)
    lines = source.splitlines()
    loops = [k for k, line in enumerate(lines) if line.startswith("    for i in range(")]
    assert len(loops) == 2, source
    body_notes = [line for line in lines if line.startswith("        #")]
    assert not body_notes                                     # a loop's steps have no notes
    assert len(lines) < 40, source
    backward = lines.index("    # backward")
    assert "    # in step#600" in lines[backward:loops[1]]   # the backward loop begins in the last call
    value, grad = compile_tape(gt)(x)
    assert value == gt(x)[0] and np.array_equal(grad, gt(x)[1])
    assert compile_tape(gt).source == source


# -- reroll's notes, by hand ----------------------------------------------------------------------

def _rolled(body, notes, shown="    # top level"):
    with pytest.MonkeyPatch.context() as m:
        m.setattr(reroll, "MIN_STEPS", 2)
        m.setattr(reroll, "MIN_LINES", 2)
        return reroll.reroll(body, {}, notes, shown).split("\n")


def test_reroll_writes_a_note_where_it_changes_and_heads_a_loop_with_its_first_steps():
    body = [f"    {REGISTER}0 = v0 + 1.0  # {MARK}1"]
    body += [f"    {REGISTER}{k} = {REGISTER}{k - 1} * 0.5  # {MARK}{k + 1}" for k in range(1, 30)]
    body += [f"    {REGISTER}30 = {REGISTER}29 + 1.0", f"    {REGISTER}31 = {REGISTER}30 * 3.0",
             f"    return ({REGISTER}31,)"]
    step = [f"    # in step#{k}" for k in range(30)]
    notes = ["    # top level"] + step[1:] + ["    # in step#29", "    # top level", None]
    rolled = _rolled(body, notes)
    assert rolled == [
        "    r = [None] * 30  # the registers of the loops below",
        "    r[0] = v0 + 1.0  # %1",
        "    # in step#1",
        "    for i in range(1, 30):  # 29 steps of 1 line",
        "        r[i] = r[i - 1] * 0.5  # %{i + 1}",
        "    # in step#29",                        # not the loop's first step's: written again
        "    r30 = r[29] + 1.0",
        "    # top level",
        "    r31 = r30 * 3.0",
        "    return (r31,)"]
    unrolled = _rolled(body, notes, shown=None)[:3]
    assert unrolled[:2] == ["    r = [None] * 30  # the registers of the loops below", "    # top level"]


def test_reroll_without_notes_or_with_too_few_lines_writes_them_in_place():
    body = [f"    {REGISTER}{k} = v0 * {k}.0" for k in range(3)] + ["    return (r2,)"]
    notes = ["    # in a", "    # in a", "    # in b", None]
    assert reroll.reroll(body, {}, notes, "    # top level").split("\n") == [
        "    # in a", "    r0 = v0 * 0.0", "    r1 = v0 * 1.0", "    # in b", "    r2 = v0 * 2.0", "    return (r2,)"]
    assert reroll.reroll(body, {}).split("\n") == [emit.written(line) for line in body]
