"""Every rule in the registry lifts: no opaque fallback anywhere in the rule library or ad.nn.

One test walks every line of tests/support/cases.py (each primitive's samples, each composition) and of
the ad.nn spec table, and lists every primitive that falls back (or that nothing ever lifts), so
a regression names all the culprits at once. Rules that also appear inside pullbacks are lifted
again by taking second derivatives."""
import numpy as np
import pytest

import ad
from ad.errors import TraceError
from ad.reverse_mode.lift import _CACHE, LiftedRule, clear_cache
from ad.tape import Aval, Eqn, Var
from ad.samples import draw
from tests.support.cases import CASES, floats, leaves, weighted, weights
from tests.support.nn_specs import CASES as NN_CASES


# Rules whose second derivative refuses loudly (tests/scipy/test_scipy_special.py and
# tests/scipy/test_scipy_integrate.py check it), so it is not lifted here.
NO_SECOND_ORDER = {"scipy.special.elliprf": "its pullback computes with elliprd, which has no rule",
                   "scipy.integrate.odeint": "the adjoint of its adjoint solve is refused (ad.scipy.integrate)"}


def _calls():
    rng = np.random.default_rng(0)
    for case in CASES:
        xs = case.inputs(case.sample.shapes[-1], rng)
        yield case.fn, xs, (np.ndim(xs[0]) == 2 or case.sample.call is None) and case.name not in NO_SECOND_ORDER
    for case in NN_CASES:
        yield case.fn, draw(case.args, rng), True


def test_every_registered_rule_lifts_without_fallback():
    clear_cache()
    for fn, xs, second_order in _calls():
        argnums = floats(xs)
        if not argnums:
            continue
        ws = weights(fn(*xs), np.random.default_rng(1))
        ad.grad_tape(weighted(fn, ws), *xs, argnums=argnums)
        if second_order:
            # a squared loss, so the cotangent reaching each pullback depends on the inputs
            v = [np.ones_like(xs[i]) for i in argnums]
            g = ad.grad(weighted(lambda *a: [leaf ** 2 for leaf in leaves(fn(*a))], ws), argnums)
            ad.grad_tape(lambda *a: sum(np.sum(gi * vi) for gi, vi in zip(g(*a), v)), *xs, argnums=argnums)
    lifted = {key[1].name for key, rule in _CACHE.items() if rule.fallback is None}
    fallbacks = sorted({f"{key[1].name}: {rule.fallback}" for key, rule in _CACHE.items() if rule.fallback})
    assert not fallbacks, "rules that fell back to closures:\n" + "\n".join(fallbacks)
    names = {name for name, p in ad.REGISTRY.items() if p.samples and p.differentiable}
    never = sorted(names - lifted - {"full"})      # full has no operand: nothing asks its rule
    assert not never, f"registered primitives nothing lifts (declare samples that reach them): {never}"


def test_building_a_gradient_does_not_run_the_program_again():
    """The rules are lifted at the operand values the trace computed (``lift.ExemplarRecorder``),
    so a gradient tape costs one run of the user's program, not two: each operation's impl runs
    once while tracing and never while the tape is built (a 10,000-step loop would pay twice)."""
    calls = []

    @ad.primitive
    def counted(x):
        calls.append(1)
        return np.tanh(x)

    @ad.rrule(counted)
    def _rule(x):
        y = counted(x)
        return y, lambda dy: (dy * (1 - y * y),)

    def f(x):
        for _ in range(5):
            x = counted(x) * 0.5
        return np.sum(x)
    x = np.linspace(-1.0, 1.0, 4)
    clear_cache()
    gt = ad.grad_tape(f, x)
    # 5 while tracing, and 1 more while lifting: the rule's body runs counted once more
    assert len(calls) == 6
    _, g = gt(x)
    np.testing.assert_allclose(g, ad.grad(f, form="closure")(x), rtol=1e-12)


def test_an_instance_is_written_by_its_templates_compiled_copier():
    """``build`` writes each instance with its template's ``Copier`` (code, not a dict walk):
    the same equations as the template's, renumbered and stamped with the instance's origins;
    an output the rule returns as is (an operand, a constant) gets a ``positive`` equation so that
    it has a cotangent of its own; the gradients are the closure form's."""
    @ad.primitive(multiple_results=True)
    def passthrough(x, y):
        return x, y * 2.0

    @ad.rrule(passthrough)
    def _rule(x, y):       # returns its operand x itself
        return (x, y * 2.0), lambda dys: (dys[0], dys[1] * 2.0)

    def f(x, y):
        a, b = passthrough(np.sin(x), y)
        c, d = passthrough(np.cos(a), b)
        return np.sum(c * d)
    x, y = np.linspace(0.1, 0.9, 3), np.linspace(1.0, 2.0, 3)
    clear_cache()
    gt = ad.grad_tape(f, x, y, argnums=(0, 1))
    positives = [e for e in gt.eqns[:gt.n_forward] if e.prim.name == "positive"]
    assert len(positives) == 2 and all(e.origin.rule == passthrough.primitive.name for e in positives)
    numbers = [v.n for v in gt.inputs] + [v.n for e in gt.eqns for v in e.outputs]
    assert numbers == list(range(len(numbers)))          # numbered in order, once each
    lifted = next(r for k, r in _CACHE.items() if k[1] is passthrough.primitive)
    assert "def fwd(ops, outputs, n, source, scope, eqns):" in lifted.copier.source and "Var(n" in lifted.copier.source
    _, (gx, gy) = gt(x, y)
    cx, cy = ad.grad(f, argnums=(0, 1), form="closure")(x, y)
    np.testing.assert_allclose(gx, cx, rtol=1e-12)
    np.testing.assert_allclose(gy, cy, rtol=1e-12)
    np.testing.assert_allclose(gx, -np.sin(np.sin(x)) * np.cos(x) * 2.0 * 2.0 * y, rtol=1e-12)


def test_a_copier_refuses_a_template_that_reads_a_variable_it_does_not_define():
    """A template variable must come from the operands, the primal body, the cotangents or the
    pullback: one from anywhere else (another trace's) is refused, never baked in as a constant."""
    aval = Aval((2,), np.dtype(np.float64))
    x, y, ct, g, foreign = (Var(k, aval) for k in range(5))
    mul = ad.REGISTRY["multiply"]
    lifted = LiftedRule(mul, (x,), (Eqn(mul, (x, x), (), (y,)),), (y,), (ct,),
                        (Eqn(mul, (ct, foreign), (), (g,)),), (g,))
    with pytest.raises(TraceError, match="does not define"):
        lifted.copier
