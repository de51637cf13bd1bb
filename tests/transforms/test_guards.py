"""Python control flow on traced values: the trace takes the branch the values say, records a
guard, and a run that breaks the guard raises GuardError (``ad.grad`` re-traces instead)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ad
import tapeviz
from tapeviz.debugger.model import DebugModel
from ad.errors import GuardError
from tests.support.needs import module
from tests.support.numeric import fd_grad


def piecewise(x):
    s = np.sum(x)
    if s > 0:                                     # the guarded line
        return np.sum(x ** 2)
    return np.sum(np.sin(x))


def newton_sqrt(a):
    """A while loop on a traced condition: the iteration count depends on the input."""
    x = a
    while np.abs(x * x - a) > 1e-10:
        x = 0.5 * (x + a / x)
    return x


def semi_lagrangian(field, shift):
    """Integer indices computed from a traced float index a constant table (as a fluid
    simulation's advection step does); the gradient flows through the interpolation weights."""
    table = np.linspace(0.0, 1.0, 8) ** 2
    pos = np.arange(8.0) + shift
    i = np.floor(pos).astype(int) % 8
    w = pos - np.floor(pos)
    return np.sum(field * ((1 - w) * table[i] + w * table[(i + 1) % 8]))


def test_both_branches_of_an_if_give_the_eager_gradient():
    g = ad.grad(piecewise)
    up, down = np.array([0.5, 1.0]), np.array([-0.5, -1.0])
    np.testing.assert_allclose(g(up), 2 * up)
    np.testing.assert_allclose(g(down), np.cos(down))
    np.testing.assert_allclose(g(up), 2 * up)
    info = g.cache_info()
    assert (info.traces, info.tapes, info.signatures) == (2, 2, 1)
    assert info.guard_failures >= 1 and "guard" in info.reasons[0] and "test_guards.py" in info.reasons[0]


@pytest.mark.parametrize("form", ["lifted", "closure", "compiled"])
def test_every_form_follows_the_branch(form):
    g = ad.grad(piecewise, form=form)
    for x in (np.array([0.5, 1.0]), np.array([-0.5, -1.0]), np.array([2.0, -1.0])):
        np.testing.assert_allclose(g(x), fd_grad(piecewise, x), rtol=1e-6)


def test_a_tape_run_on_inputs_that_break_a_guard_raises_naming_line_and_values():
    tape = ad.trace(piecewise, np.array([0.5, 1.0]))
    assert any(e.prim.name == "guard" for e in tape.eqns)
    with pytest.raises(GuardError) as info:
        tape(np.array([-0.5, -1.0]))
    err = info.value
    assert err.expected is True and not err.got
    assert "test_guards.py" in err.source and "guard" in err.guard
    assert "if s > 0" in str(err) and "assumed True" in str(err) and "gives False" in str(err)


def test_the_compiled_and_the_gradient_tapes_check_guards_too():
    gt = ad.optimize(ad.grad_tape(piecewise, np.array([0.5, 1.0])))
    assert any(e.prim.name == "guard" for e in gt.eqns)       # dce keeps guards
    with pytest.raises(GuardError):
        gt(np.array([-0.5, -1.0]))
    compiled = ad.compile(gt)
    assert "guard" in compiled.source
    with pytest.raises(GuardError, match="assumed True"):
        compiled(np.array([-0.5, -1.0]))


def test_while_loops_on_traced_conditions():
    g = ad.grad(newton_sqrt)
    for a in (2.0, 9.0, 0.3):
        np.testing.assert_allclose(g(a), 0.5 / math.sqrt(a), rtol=1e-7)
    assert g.cache_info().traces == 3          # each needs its own iteration count


def test_data_dependent_integer_indexing_into_a_constant_table():
    field = np.linspace(-1, 1, 8)
    for shift in (0.25, 0.6, 3.1):
        got = ad.grad(semi_lagrangian, argnums=(0, 1))(field, shift)
        want = (fd_grad(lambda f: semi_lagrangian(f, shift), field),
                fd_grad(lambda s: semi_lagrangian(field, s), np.float64(shift)))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


def test_int_of_a_traced_value_is_guarded_and_its_derivative_is_zero():
    f = lambda x: x * int(x)                          # noqa: E731
    g = ad.grad(f)
    assert g(2.5) == 2.0 and g(3.5) == 3.0
    assert g.cache_info().traces == 2


def test_converting_a_differentiated_float_stays_an_error_that_says_why():
    with pytest.raises(ad.ConcretizationError, match="drop its gradient") as info:
        ad.grad(lambda x: math.sin(x))(1.0)
    assert "test_guards.py" in str(info.value) and "np.sin" in str(info.value)
    with pytest.raises(ad.ConcretizationError, match="drop its gradient"):
        ad.grad(lambda x: np.sum(x).item())(np.ones(2))
    with pytest.raises(ad.ConcretizationError, match="np.stack"):
        ad.grad(lambda x: np.sum(np.array([x[0], x[1]])))(np.ones(2))


def test_a_value_that_is_not_differentiated_may_be_converted_under_a_guard():
    f = lambda x, c: x * float(c)                     # noqa: E731  (c is not differentiated)
    g = ad.grad(f)
    assert g(2.0, 3.0) == 3.0 and g(2.0, 4.0) == 4.0


def test_guards_show_in_the_listing_and_survive_saving(tmp_path):
    tape = ad.trace(piecewise, np.array([0.5, 1.0]))
    assert "guard %" in str(tape) and " True" in str(tape)
    path = tmp_path / "piecewise.tape.json"
    ad.save(tape, path)
    loaded = ad.load(path)
    np.testing.assert_allclose(loaded(np.array([1.0, 2.0])), 5.0)
    with pytest.raises(GuardError):
        loaded(np.array([-1.0, -2.0]))


def test_a_pullback_that_branches_on_its_cotangent_is_not_lifted():
    """The cotangent has no value while the rule is lifted: branching on it is an escape (the
    rule runs as a closure), never a guard baked into the template."""
    @ad.primitive
    def clip_grad(x):
        return x * 1.0

    @ad.rrule(clip_grad)
    def _rule(x):
        def pullback(dy):
            return (dy if np.all(dy < 2.0) else dy * 0.0,)
        return clip_grad(x), pullback
    gt = ad.grad_tape(lambda x: np.sum(clip_grad(x)), np.ones(2))
    (fb,) = gt.fallbacks
    assert "cotangent" in fb.reason
    np.testing.assert_allclose(gt(np.ones(2))[1], [1.0, 1.0])


def test_a_rule_that_branches_on_its_operand_is_lifted_at_each_equations_own_values():
    """A template with guards holds for the values it was lifted at alone: the trace's values of
    another equation with the same avals (what building lifts at when the cache misses) would
    bake that equation's branch into this one."""
    @ad.primitive
    def kinked(x):
        return np.where(x > 0, 2.0 * x, 3.0 * x)

    @ad.rrule(kinked)
    def _rule(x):
        slope = 2.0 if np.sum(x) > 0 else 3.0             # a branch on the operand's value
        return kinked(x), lambda dy: (dy * slope,)

    def f(x, y):
        return np.sum(kinked(x)) + np.sum(kinked(-y)) + np.sum(kinked(x * y))
    x, y = np.array([1.0, 2.0]), np.array([0.5, 1.5])
    gt = ad.grad_tape(f, x, y, argnums=(0, 1))
    assert sum("guard" in str(e.prim.name) for e in gt.eqns) == 3
    _, (gx, gy) = gt(x, y)
    np.testing.assert_allclose(gx, 2.0 + 2.0 * y)
    np.testing.assert_allclose(gy, -3.0 + 2.0 * x)
    np.testing.assert_allclose(gx, fd_grad(lambda x: f(x, y), x), rtol=1e-6)
    np.testing.assert_allclose(gy, fd_grad(lambda y: f(x, y), y), rtol=1e-6)


def test_a_bug_in_a_rule_surfaces_instead_of_falling_back():
    @ad.primitive
    def buggy(x):
        return x * 2.0

    @ad.rrule(buggy)
    def _rule(x):
        return buggy(x), lambda dy: (dy * undefined_name,)  # noqa: F821
    with pytest.raises(NameError) as info:
        ad.grad(lambda x: np.sum(buggy(x)))(np.ones(2))
    assert any("in the rule of" in note and "buggy" in note for note in info.value.__notes__)


def test_retracing_without_end_still_answers_and_warns_once():
    g = ad.grad(lambda x: x * int(x), max_traces=3)
    with pytest.warns(UserWarning, match="re-traced"):
        for k in range(12):
            assert g(k + 0.5) == float(k)
    assert g.cache_info().traces == 12 and g.cache_info().tapes == 3


def test_onnx_export_refuses_guards_or_exports_the_branch_taken():
    ort = module("onnxruntime")
    tape = ad.trace(piecewise, np.array([0.5, 1.0]))
    with pytest.raises(NotImplementedError, match=r"guard.*test_guards.py.*guards='branch'"):
        ad.to_onnx(tape)
    model = ad.to_onnx(tape, guards="branch")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (name,) = [i.name for i in session.get_inputs()]
    np.testing.assert_allclose(session.run(None, {name: np.array([2.0, 3.0])})[0], 13.0)


def test_guards_are_their_own_node_kind_in_the_graph_and_the_drawing():
    gt = ad.grad_tape(piecewise, np.array([0.5, 1.0]))
    graph = tapeviz.to_networkx(gt)
    (guard,) = [d for _, d in graph.nodes(data=True) if d["kind"] == "guard"]
    assert guard["primitive"] == "guard" and guard["literals"] == [(1, "True")]
    assert "test_guards.py" in guard["source"] and "if s > 0" in guard["source_line"]
    dot = tapeviz.to_graphviz(gt).source
    assert "assumes == True" in dot and "guard (a branch the trace took)" in dot


def test_a_guard_is_a_step_of_the_debugger_and_its_outcome_is_shown():
    x = np.array([0.5, 1.0])
    model = DebugModel(ad.grad_tape(piecewise, x), (x,))
    (k,) = [i for i, s in enumerate(model.steps["pullback"]) if s.rule == "guard"]
    model.step_to(k)
    assert "guard %2 == True holds" in model.phase_line() and "test_guards.py" in model.phase_line()
