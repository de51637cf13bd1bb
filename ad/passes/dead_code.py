"""Dead-code elimination: the pass that runs last, dropping what the other passes left unread."""
from __future__ import annotations

import itertools
from operator import attrgetter

from ..tape import Tape
from .rebuild import rebuild


def dce(tape: Tape) -> Tape:
    """Drop the equations whose outputs nothing reads (guards stay: they check the inputs). The
    last equation that no other reads is the last dead one (a dead one after it would leave an
    unread one later still): found at C speed, it spares most tapes, which have nothing dead, the
    walk back from the outputs, and starts that walk there for the others."""
    eqns = tape.eqns
    read = set(itertools.chain.from_iterable(map(_INPUTS, eqns)))
    read.update(tape.outputs)
    unread = [i for i in itertools.compress(range(len(eqns)), map(read.isdisjoint, map(_OUTPUTS, eqns)))
              if eqns[i].prim.kind != "guard"]
    if not unread:
        return tape
    last = unread[-1]
    live = set(tape.outputs)
    live.update(itertools.chain.from_iterable(map(_INPUTS, eqns[last + 1:])))
    kept = []
    dropped = []
    for i in range(last, -1, -1):
        e = eqns[i]
        if live.isdisjoint(e.outputs) and e.prim.kind != "guard":
            dropped.append(i)
        else:
            kept.append(e)
            live.update(e.inputs)          # literals too: harmless, nothing defines them
    kept.reverse()
    dropped.reverse()
    return rebuild(tape, kept + list(eqns[last + 1:]), dropped, {})


_INPUTS, _OUTPUTS = attrgetter("inputs"), attrgetter("outputs")
