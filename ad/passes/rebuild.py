"""The one way a pass returns its result: a new tape whose ``meta`` variable maps (``VAR_MAPS``)
follow the rewrite and whose forward / backward boundary moves with what was dropped before it.
Every pass builds its tape here so none of them can leave a map pointing at a removed variable.
"""
from __future__ import annotations

import bisect

from ..gradtape import VAR_MAPS, GradTape
from ..tape import Eqn, Tape


def rebuild(tape: Tape, kept: list[Eqn], dropped: list[int], subst: dict) -> Tape:
    """``tape`` with the equations ``kept`` (its own in order, some rewritten, some new) instead of its
    own: those at the indices ``dropped`` are gone and ``subst`` says what replaces their outputs
    (never by a variable ``subst`` replaces itself). A pass that changed nothing returns its
    tape itself instead."""
    eqns = tape.eqns
    removed = {v for i in dropped for v in eqns[i].outputs}
    meta = dict(tape.meta)
    for key in VAR_MAPS:      # maps onto this tape's variables follow the rewrite
        m = meta.get(key)
        if m is None:
            continue
        # the entries of removed variables (the map can have one for each forward variable: a
        # Python loop over it only when a value is removed)
        stale = [k for k in removed if k in m]
        if not removed.isdisjoint(m.values()):
            stale += [k for k, v in m.items() if v in removed]
        if stale:
            m = meta[key] = dict(m)
            for k in stale:
                if k not in m:            # stale by key and by value
                    continue
                if k in removed or m[k] not in subst:
                    del m[k]
                else:
                    m[k] = subst[m[k]]
    changes = {"eqns": tuple(kept), "outputs": tuple([subst.get(x, x) for x in tape.outputs]), "meta": meta}
    if isinstance(tape, GradTape):
        changes["n_forward"] = tape.n_forward - bisect.bisect_left(dropped, tape.n_forward)
    return tape.replace(**changes)
