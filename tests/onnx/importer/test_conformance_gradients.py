"""The gradient of every passing ONNX conformance case with a float input, checked by the
dot-product test: ``<J u, v>`` from a forward directional finite difference (a 5-point stencil
with Richardson extrapolation, ``ad.checks.fd``) equals ``<u, J^T v>`` from the lifted gradient
(``ad.vjp``), for one random pair of directions per case.

Both sides run the case's model in float64 (its float inputs given as float64; the declarations
follow their inputs' dtype), so the check is of the gradient, not of float32 or float16
rounding. Non-finite inputs are not moved and non-finite outputs not weighted. A difference that
does not converge as the step shrinks (the direction crosses a jump: floor, round, argmax, a
comparison, a max-pool tie) leaves the case unchecked; the test reports how many, and fails if
that is more than a few percent. Cost: ~15 s, and the cases' outcomes (~10 s, shared with
test_conformance.py in one session). Measured: 1,119 cases agree, 35 cross a jump or a kink, 8
compute in float16, 3 change shape with a step; 305 have no float input or output (1,470 passing cases).
"""
from __future__ import annotations

import collections
import warnings

import numpy as np

from tests.onnx.importer.test_conformance import _array, cases, outcomes
from ad.checks.fd import directional_derivative, one_sided_derivative, refined

import ad
from ad.onnx.importer import OnnxProgram


def _least_precise(tape) -> np.dtype:
    """The least precise float dtype the gradient tape computes in: float64 unless the graph
    casts (to float32, to float16)."""
    dtypes = [v.aval.dtype for e in tape.eqns for v in e.outputs if v.aval.dtype.kind == "f"]
    return max(dtypes, key=lambda d: np.finfo(d).eps, default=np.dtype(np.float64))


def of_float_inputs(prog, inputs, wrt):
    """``(f, xs)``: the program as a function of its float inputs ``wrt`` (in float64; the others
    held), returning its float outputs, and those inputs' values."""
    wide = [x.astype(np.float64) if x.dtype.kind == "f" else x for x in inputs]

    def f(*xs):
        args = list(wide)
        for i, x in zip(wrt, xs):
            args[i] = x
        return tuple(y for y in prog.run(args) if np.result_type(y).kind == "f")
    return f, [wide[i] for i in wrt]


def dot_product_check(case, rng) -> str:
    """"agree", "differ: <lhs> vs <rhs>", or why it is not checked: "no float input", "no float
    output", "float16" (the graph computes in float16), "shape changes" (a step changes the
    output's shape: Range's length), "jump" (the difference does not converge: floor, a
    comparison, a tie), "kink" (the one-sided derivatives differ: the gradient is one
    subgradient). A graph that casts to float32 is checked to 1 % (its rounding limits the
    difference), the others to 1e-6."""
    inputs = [_array(x) for x in case.data_sets[0][0]]
    wrt = [i for i, x in enumerate(inputs) if x.dtype.kind == "f" and np.all(np.isfinite(x))]
    if not wrt:
        return "no float input"
    f, xs = of_float_inputs(OnnxProgram(case.model, inputs=inputs), inputs, wrt)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ys, pullback = ad.vjp(f, *xs)
        if not ys:
            return "no float output"
        precision = _least_precise(pullback.tape)
        if precision == np.float16:
            return "float16"      # its rounding is the size of a step: a difference resolves nothing
        finite = [np.isfinite(y) for y in ys]
        vs = [np.where(m, rng.standard_normal(np.shape(y)), 0) for m, y in zip(finite, ys)]
        us = [rng.standard_normal(np.shape(x)) for x in xs]
        step = 2e-3 * max([1.0] + [float(np.max(np.abs(x), initial=0)) for x in xs])
        if any(np.shape(a) != np.shape(b) for t in (step, -step)
               for a, b in zip(f(*[x + t * u for x, u in zip(xs, us)]), ys)):
            return "shape changes"
        rhs = sum(float(np.sum(g * u)) for g, u in zip(pullback(tuple(vs)), us) if g is not None)

        def finite_part(*xs):      # the non-finite outputs (weighted 0) held at 0, so differences converge
            return tuple(np.where(m, y, 0) for m, y in zip(finite, f(*xs)))
        w = np.concatenate([v.reshape(-1) for v in vs])
        central = _difference(directional_derivative, finite_part, xs, us, w, precision)
        if central is None:
            return "jump"
        lhs, slack = central
        rtol = 1e-6 if precision == np.float64 else 1e-2
        if abs(lhs - rhs) <= rtol * (abs(lhs) + abs(rhs)) + slack:
            return "agree"
        sides = [_difference(one_sided_derivative, finite_part, xs, us, w, precision, side=side) for side in (-1, 1)]
        if None not in sides and abs(sides[0][0] - sides[1][0]) > rtol * abs(lhs) + sides[0][1] + sides[1][1]:
            return "kink"
    return f"differ: {lhs} vs {rhs}"


def _difference(estimator, f, xs, us, w, precision, **kwargs):
    """(``<J u, v>`` by finite differences, its uncertainty), or None if it does not converge.
    In float64 the step shrinks until it converges; a graph that rounds to float32 keeps the
    first step (smaller ones resolve its rounding, not the derivative), its noise that of float32."""
    if precision == np.float64:
        est = refined(estimator, f, xs, us, **kwargs)
        noise, converged = est.noise, est.converged
    else:
        est = estimator(f, xs, us, **kwargs)
        noise = est.noise * np.finfo(precision).eps / np.finfo(np.float64).eps
        converged = est.error <= max(1e-2 * float(np.max(np.abs(est.value), initial=1.0)), noise)
    if not converged:
        return None
    value = float(np.sum(np.where(w != 0, est.value * w, 0)))
    return value, 10 * (est.error + noise) * float(np.sum(np.abs(w))) + 1e-10


def test_gradients_of_passing_cases_pass_the_dot_product_test():
    rng = np.random.default_rng(0)
    results, differ = collections.Counter(), {}
    for op, case in cases():
        if outcomes()[case.name] != "pass":
            continue
        result = dot_product_check(case, rng)
        results[result.split(":")[0]] += 1
        if result.startswith("differ"):
            differ[case.name] = result
    assert not differ, differ
    assert results["agree"] >= 1000, results
    assert results["jump"] + results["kink"] <= 0.06 * results["agree"], results
