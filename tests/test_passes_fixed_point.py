"""``optimize`` skips the passes that have nothing to do, and that changes nothing: its tape and
its log are those of running every pass in every round; a pass with nothing to do returns its
tape itself, and fold, cse and dce are idempotent."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.examples import mlp_example, mlp_loss
from ad.passes import IDEMPOTENT, PASSES, optimize
from ad.tape import Var, format_tape

X = np.array([0.3, -1.2, 2.0, 0.7])


def rewrites(x):
    """Something for every pass: constants to fold, x * 1 and broadcasts to simplify, a repeated
    subexpression to merge, dead code, a structural zero (an input no path reaches)."""
    c = np.float64(2.0) * 3.0
    a = np.sin(x) * 1.0 + np.broadcast_to(np.float64(0.5), x.shape) * x
    b = np.sin(x) * c
    np.exp(x)                                     # dead
    return np.sum(a * b) + np.sum(np.sin(x) ** 2)


TAPES = {
    "rewrites": lambda: ad.grad_tape(rewrites, X),
    "two inputs, one unreached": lambda: ad.grad_tape(lambda x, y: np.sum(np.tanh(x) * 2.0) + 0.0 * np.sum(x),
                                                      X, X, argnums=(0, 1)),
    "mlp": lambda: ad.grad_tape(mlp_loss, *mlp_example()),
    "chain": lambda: ad.grad_tape(lambda x: np.sum(np.tanh(np.tanh(x) * 0.5) * 0.5), X),
}


def every_pass_every_round(tape, max_rounds: int = 4):
    """The plain fixed point: all passes, every round, until a round removes nothing."""
    log = []
    for _ in range(max_rounds):
        start = len(tape.eqns)
        for name, fn in PASSES:
            before = len(tape.eqns)
            tape = fn(tape)
            log.append((name, before, len(tape.eqns)))
        if len(tape.eqns) == start:
            break
    return tape, log


def listing(tape) -> tuple:
    maps = {k: {repr(a): repr(b) for a, b in tape.meta[k].items()} for k in ("primal_map", "cotangents")}
    return (format_tape(tape), [e.source for e in tape.eqns], [e.origin for e in tape.eqns],
            tape.n_forward, maps)


@pytest.mark.parametrize("name", TAPES)
def test_optimize_is_the_plain_fixed_point(name):
    gt = TAPES[name]()
    want, log = every_pass_every_round(gt)
    got = optimize(gt)
    assert listing(got) == listing(want)
    assert got.meta["passes"] == log
    assert "passes" not in gt.meta            # the input tape is left as it was


@pytest.mark.parametrize("name", TAPES)
def test_passes_with_nothing_to_do_return_the_tape_and_idempotent_ones_are(name):
    opt = optimize(TAPES[name]())
    for pass_name, fn in PASSES:
        assert fn(opt) is opt, pass_name
    raw = TAPES[name]()
    for pass_name, fn in PASSES:
        if pass_name in IDEMPOTENT:
            once = fn(raw)
            assert fn(once) is once, pass_name


def test_the_maps_follow_the_rewrites_onto_live_variables():
    opt = optimize(TAPES["rewrites"]())
    defined = set(opt.inputs) | {v for e in opt.eqns for v in e.outputs}
    for key in ("primal_map", "cotangents"):
        assert opt.meta[key]
        assert all(v in defined for v in opt.meta[key].values() if type(v) is Var)
