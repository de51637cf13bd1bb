"""``optimize``, the passes in the order that reaches their fixed point, and ``op_counts``, the
report of what they did."""
from __future__ import annotations

from ..tape import Tape, gc_paused
from .dead_code import dce
from .distributive import factor
from .walk import walk


@gc_paused
def optimize(tape: Tape) -> Tape:
    """``factor``, then fold, simplify and CSE in one walk and DCE: the passes' fixed point (the
    module ``walk`` says why one walk reaches it), unless the optimised tape has more to factor (a
    simplification made one more product), and then all again. ``meta["passes"]`` lists (pass,
    eqns before, after)."""
    log = []
    factored = factor(tape)
    while True:
        walked = walk(factored, fold=True, simplify=True, cse=True)
        live = dce(walked)
        log += [("factor", len(tape.eqns), len(factored.eqns)), ("fold+simplify+cse", len(factored.eqns),
                len(walked.eqns)), ("dce", len(walked.eqns), len(live.eqns))]
        tape, factored = live, factor(live)
        if factored is live:
            return live.replace(meta={**live.meta, "passes": log})


def op_counts(tape: Tape) -> dict[str, int]:
    """Equations per primitive (for before/after reports)."""
    counts: dict[str, int] = {}
    for e in tape.eqns:
        counts[e.prim.name] = counts.get(e.prim.name, 0) + 1
    return dict(sorted(counts.items()))
