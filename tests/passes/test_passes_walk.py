"""The shortcuts the passes take on long tapes (issue 19) against plain reference versions: CSE keys
a literal by its value whatever literal object carries it, ``dce``'s check for unread equations
against the walk back from the outputs, and the meta maps that follow a rewrite."""
from __future__ import annotations

import numpy as np

import ad
from ad.lib.elementwise import multiply_p
from ad.passes import cse, dce, optimize
from ad.tape import Aval, Eqn, Lit, Tape, Var

V3 = Aval((3,), np.dtype("float64"))
F64 = Aval((), np.dtype("float64"))


def products(*literals) -> Tape:
    """x * c for each literal c (each its own equation), all outputs of the tape."""
    x = Var(0, V3)
    outs = [Var(k + 1, V3) for k in range(len(literals))]
    eqns = tuple(Eqn(multiply_p, (x, c), (), (v,)) for c, v in zip(literals, outs))
    return ad.validate(Tape((x,), eqns, tuple(outs)))


def test_cse_merges_literals_by_value_not_by_object():
    array = np.full(3, 2.0)
    tape = cse(products(Lit(0.5, F64), Lit(0.5, F64), Lit(0.0, F64), Lit(-0.0, F64),
                        Lit(array, V3), Lit(array, V3), Lit(np.full(3, 2.0), V3)))
    # the two 0.5 and the two literals of one array merge; 0.0 and -0.0 stay apart, and so do
    # two arrays that are equal but not the same
    assert len(tape.eqns) == 5
    assert tape.outputs[0] is tape.outputs[1] and tape.outputs[4] is tape.outputs[5]
    assert len({id(v) for v in tape.outputs}) == 5


def live_by_walking_back(tape: Tape) -> list:
    """The reference: walk back from the outputs, keeping what a kept equation reads (and guards)."""
    live = {x for x in tape.outputs if type(x) is Var}
    kept = []
    for e in reversed(tape.eqns):
        if not live.isdisjoint(e.outputs) or e.prim.kind == "guard":
            kept.append(e)
            live.update(e.inputs)
    return kept[::-1]


def dead_code(x, a):
    np.exp(x)                                   # dead at the start
    y = np.sin(x)
    if np.sum(y) > 0:                           # a guard: it stays, and so does what it reads
        y = y * 2.0
    np.cos(y) * 3.0                             # a dead chain in the middle
    sign, logdet = np.linalg.slogdet(a)         # two outputs, one read
    z = np.tanh(y) + logdet
    np.sum(z * z)                               # dead at the end
    return np.sum(z)


def no_dead_code(x, a):
    return np.sum(np.tanh(np.sin(x) * 2.0)) + np.linalg.slogdet(a)[1]


def test_dce_drops_what_walking_back_drops():
    args = (np.array([0.3, -1.2, 2.0]), np.array([[2.0, 0.5], [0.1, 1.0]]))
    for f in (dead_code, no_dead_code):
        for tape in (ad.trace(f, *args), ad.grad_tape(f, *args)):
            reference = live_by_walking_back(tape)
            pruned = dce(tape)
            assert list(pruned.eqns) == reference, f.__name__
            assert (pruned is tape) == (len(reference) == len(tape.eqns))
            if hasattr(tape, "n_forward"):
                assert pruned.n_forward == sum(1 for e in reference if not e.origin.is_backward)


def test_meta_maps_follow_the_rewrite_in_order():
    """The seed cotangent folds to a literal: the maps keep their order, drop what is gone and name
    the replacement, as rebuilding them would."""
    gt = ad.grad_tape(lambda x: np.sum(np.tanh(np.tanh(x) * 0.5) * 0.5), np.linspace(-1, 1, 4))
    opt = optimize(gt)
    gone = {v for e in gt.eqns for v in e.outputs} - {v for e in opt.eqns for v in e.outputs}
    for key in ("primal_map", "cotangents"):
        before, after = gt.meta[key], opt.meta[key]
        assert list(after) == [k for k in before if k not in gone]
        for k, v in after.items():
            assert v is before[k] or (before[k] in gone and type(v) is Lit)
    assert any(type(v) is Lit for v in opt.meta["cotangents"].values())
