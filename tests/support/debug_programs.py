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


# -- programs with nested helpers, for stepping by call (test_debugger_stepping) ------------

def dense(h, W):
    """One layer: tanh(h @ W)."""
    return np.tanh(h @ W)


def block(h, W):
    """Two layers and a skip connection: ``dense`` called twice (scopes ``dense#1``, ``dense#2``)."""
    return dense(dense(h, W), W) + h


def penalty(h):
    return np.sum(h * h)


def nested_loss(W, x):
    """Calls two deep: ``sin`` at the top level, then ``block#1`` and ``block#2`` back to back
    (each two ``dense`` calls), then ``penalty``. In the backward pass the pullbacks run in
    reverse order, and the fan-in sums of ``W`` (a top-level input) run in the middle of
    ``block#1``'s pullback."""
    h = np.sin(x)
    h = block(h, W)
    h = block(h, W) * 0.5
    return np.sum(h) + penalty(h)


def nested_args():
    return np.eye(3) * 0.5, np.linspace(-1.0, 1.0, 6).reshape(2, 3)


def log_of(h):
    """A helper with a planted NaN: the log of a negative value."""
    return np.log(h)


def nan_loss(x):
    """``log_of(sin(x) + 0.5)`` is NaN where sin(x) < -0.5 (x = -1 in ``nan_args``); the NaN
    reaches the top level and, in the backward pass, x's gradient (x * log(...)'s pullback)."""
    h = np.sin(x) + 0.5
    return np.sum(log_of(h) * x)


def nan_args():
    return (np.array([-1.0, 0.5, 1.0]),)


def activation(h):
    return np.exp(np.sin(h))


def wrong_rule_loss(x):
    """The gallery's "culprit in a program" (sin's rule with a sign error, ``debugger_with``)
    called inside a helper, ``activation``, after a top-level step."""
    return np.sum(activation(x * 2.0) * x)
