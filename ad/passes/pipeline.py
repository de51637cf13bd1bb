"""``optimize``, the passes in the order that reaches their fixed point, and ``op_counts``, the
report of what they did."""
from __future__ import annotations

from ..tape import Tape, gc_paused
from .dead_code import dce
from .distributive import factor
from .negations import signs
from .walk import walk


@gc_paused
def optimize(tape: Tape) -> Tape:
    """``factor`` and ``signs``, then fold, simplify and CSE in one walk and DCE: the passes'
    fixed point (the module ``walk`` says why one walk reaches it), unless the optimised tape has
    more to factor or negations to move (a simplification made one more product), and then all
    again. ``meta["passes"]`` lists (pass, eqns before, after)."""
    log = []
    while True:
        factored = factor(tape)
        moved = signs(factored)
        if log and moved is tape:
            return tape.replace(meta={**tape.meta, "passes": log})
        walked = walk(moved, fold=True, simplify=True, cse=True)
        live = dce(walked)
        log += [("factor", len(tape.eqns), len(factored.eqns)), ("signs", len(factored.eqns), len(moved.eqns)),
                ("fold+simplify+cse", len(moved.eqns), len(walked.eqns)), ("dce", len(walked.eqns), len(live.eqns))]
        tape = live


def op_counts(tape: Tape) -> dict[str, int]:
    """Equations per primitive (for before/after reports)."""
    counts: dict[str, int] = {}
    for e in tape.eqns:
        counts[e.prim.name] = counts.get(e.prim.name, 0) + 1
    return dict(sorted(counts.items()))
