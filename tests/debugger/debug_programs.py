"""Programs the debugger tests open (besides the built-in MLP)."""
import numpy as np

HOSTILE = '<b>&"x{|}'


def hostile_loss(params, x):
    """A parameter named by a key full of markup: every label must reach HTML escaped."""
    return np.sum(np.tanh(x @ np.sin(params[HOSTILE])) * params["w"])   # sin: a residual


def loop(x, steps):
    """A long tape: seven equations per step with its pullbacks."""
    for _ in range(steps):
        x = np.sin(x) * 1.01 + x
    return np.sum(x)
