"""``optimize`` (factor, then fold, simplify and CSE in one walk and DCE, again while that leaves
something to factor) gives the tape of running the passes one after the other, round after round,
until a round changes nothing; each pass returns its tape itself when it has nothing to do, and
a second run of any pass finds nothing."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.core_prims import full_p
from ad.examples import mlp_example, mlp_loss
from ad.lib.elementwise import multiply_p
from ad.lib.reductions import sum_p
from ad.passes import cse, dce, factor, fold, optimize, simplify
from ad.primitives import lookup
from ad.tape import Aval, Eqn, Lit, Origin, Tape, Var, format_tape

X = np.array([0.3, -1.2, 2.0, 0.7])
PASSES = (("factor", factor), ("fold", fold), ("simplify", simplify), ("cse", cse), ("dce", dce))


def rewrites(x):
    """Something for every pass: constants to fold, x * 1 and broadcasts to simplify, a repeated
    subexpression to merge, dead code, a structural zero (an input no path reaches)."""
    c = np.float64(2.0) * 3.0
    a = np.sin(x) * 1.0 + np.broadcast_to(np.float64(0.5), x.shape) * x
    b = np.sin(x) * c
    np.exp(x)                                     # dead
    return np.sum(a * b) + np.sum(np.sin(x) ** 2)


def two_rounds(x):
    """A gradient for ``factor``: ct*0.1 + (ct*0.9)*cos(x) each round."""
    for _ in range(2):
        x = np.sin(x) * 0.9 + 0.1 * x
    return np.sum(x)


F64 = Aval((), np.dtype("float64"))
V3 = Aval((3,), np.dtype("float64"))
maximum_p = lookup(np.maximum)


def folded_zeros() -> Tape:
    """A backward section where simplify makes scalar zeros that fold makes literals: sum of a
    structural zero (linear: a zero), twice; that zero times y (still a structural zero, though
    a literal by then); the two zeros merged, so the two maximum(zero, y) are one."""
    x, z, s1, y, p, s2, m1, m2 = (Var(0, V3), Var(1, V3), Var(2, F64), Var(3, F64), Var(4, F64), Var(5, F64),
                                  Var(6, F64), Var(7, F64))
    bwd = Origin("pullback")
    sum_all = (("axis", None), ("keepdims", False))
    zeros = (("dtype", np.dtype("float64")), ("fill_value", 0), ("shape", (3,)))
    eqns = (Eqn(full_p, (), zeros, (z,), origin=bwd),
            Eqn(sum_p, (z,), sum_all, (s1,), origin=bwd),
            Eqn(sum_p, (x,), sum_all, (y,)),
            Eqn(multiply_p, (s1, y), (), (p,), origin=bwd),
            Eqn(sum_p, (z,), sum_all, (s2,), origin=bwd),
            Eqn(maximum_p, (s1, y), (), (m1,), origin=bwd),
            Eqn(maximum_p, (s2, y), (), (m2,), origin=bwd))
    return ad.validate(Tape((x,), eqns, (p, m1, m2)))


TAPES = {
    "rewrites": lambda: ad.grad_tape(rewrites, X),
    "two inputs, one unreached": lambda: ad.grad_tape(lambda x, y: np.sum(np.tanh(x) * 2.0) + 0.0 * np.sum(x),
                                                      X, X, argnums=(0, 1)),
    "mlp": lambda: ad.grad_tape(mlp_loss, *mlp_example()),
    "chain": lambda: ad.grad_tape(lambda x: np.sum(np.tanh(np.tanh(x) * 0.5) * 0.5), X),
    "factored": lambda: ad.grad_tape(two_rounds, X),
    "folded zeros": folded_zeros,
}


def every_pass_every_round(tape, max_rounds: int = 8):
    """The plain fixed point: all passes, every round, until a round changes nothing."""
    for _ in range(max_rounds):
        start = tape
        for _, fn in PASSES:
            tape = fn(tape)
        if tape is start:
            return tape
    raise AssertionError(f"no fixed point in {max_rounds} rounds")


def listing(tape) -> tuple:
    maps = {k: {repr(a): repr(b) for a, b in tape.meta[k].items()} for k in ("primal_map", "cotangents")
            if k in tape.meta}
    literals = [(type(x.value), x.aval) for e in tape.eqns for x in e.inputs if type(x) is Lit]
    return (format_tape(tape), [e.source for e in tape.eqns], [e.origin for e in tape.eqns],
            getattr(tape, "n_forward", None), maps, literals, [repr(x) for x in tape.outputs])


@pytest.mark.parametrize("name", TAPES)
def test_optimize_is_the_plain_fixed_point(name):
    raw = TAPES[name]()
    got = optimize(raw)
    assert listing(got) == listing(every_pass_every_round(raw))
    log = got.meta["passes"]
    assert [name for name, _, _ in log] == ["factor", "fold+simplify+cse", "dce"] * (len(log) // 3)
    assert [n for _, n, _ in log] == [len(raw.eqns)] + [n for _, _, n in log[:-1]]
    assert log[-1][2] == len(got.eqns)
    assert "passes" not in raw.meta            # the input tape is left as it was


@pytest.mark.parametrize("name", TAPES)
def test_passes_with_nothing_to_do_return_the_tape_and_a_second_run_finds_nothing(name):
    opt = optimize(TAPES[name]())
    for pass_name, fn in PASSES:
        assert fn(opt) is opt, pass_name
    raw = TAPES[name]()
    for pass_name, fn in PASSES:
        once = fn(raw)
        assert fn(once) is once, pass_name


def test_a_folded_structural_zero_stays_one_and_merges():
    opt = optimize(folded_zeros())
    p, m1, m2 = opt.outputs
    assert type(p) is Lit and p.value == 0            # zero * y, y whatever it holds
    assert m1 is m2                                   # maximum(zero, y) once
    assert [e.prim for e in opt.eqns] == [sum_p, maximum_p]
    x = np.array([1.0, -4.0, 2.0])
    assert [float(np.asarray(v)) for v in opt(x)] == [0.0, 0.0, 0.0]
    assert [float(np.asarray(v)) for v in folded_zeros()(x)] == [-0.0, 0.0, 0.0]   # 0 * (-1): IEEE's -0


def test_the_maps_follow_the_rewrites_onto_live_variables():
    opt = optimize(TAPES["rewrites"]())
    defined = set(opt.inputs) | {v for e in opt.eqns for v in e.outputs}
    for key in ("primal_map", "cotangents"):
        assert opt.meta[key]
        assert all(v in defined for v in opt.meta[key].values() if type(v) is Var)
