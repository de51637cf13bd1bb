"""Programs the debugger tests open (besides the built-in MLP), and how they open them."""
import numpy as np

import ad
import tapeviz
from ad.checktools.gallery import GALLERY

HOSTILE = '<b>&"x{|}'


def hostile_loss(params, x):
    """A parameter named by a key full of markup: every label must reach HTML escaped."""
    return np.sum(np.tanh(x @ np.sin(params[HOSTILE])) * params["w"])   # sin: a residual


def loop(x, steps):
    """A long tape: seven equations per step with its pullbacks."""
    for _ in range(steps):
        x = np.sin(x) * 1.01 + x
    return np.sum(x)


def debugger_with(entry_name: str, program=None):
    """A debugger on a gallery entry's program (or ``program``), built while its wrong rule is
    registered."""
    entry = GALLERY[entry_name]
    with ad.using_rule(entry.target, entry.rule):
        return tapeviz.debug(program or entry.program, *entry.args())


def forward_eqn(dbg, prim: str) -> int:
    return next(i for i in range(dbg.model.gt.n_forward) if dbg.model.eqns[i].prim.name == prim)


def click(dbg, action: str, **fields) -> None:
    """What the view sends when a button is pressed or a name clicked: ``{"action": ...}``."""
    dbg._on_message(dbg, {"action": action, **fields}, [])


def answers(dbg, monkeypatch) -> list:
    """The messages the debugger sends to its view (graphviz, svg, files), collected."""
    sent = []
    monkeypatch.setattr(dbg, "send", lambda content, buffers=None: sent.append(content))
    return sent
