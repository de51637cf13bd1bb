"""A primitive with a kink and an overload of its pullback (``ad.backpropagate``) that picks
another subgradient there: what the tests of overloads, in ad and in the debugger, run."""
import numpy as np

import ad


@ad.primitive(name="kinked_relu")
def kinked_relu(x):
    return np.maximum(x, 0.0)


@ad.rrule(kinked_relu)
def kinked_relu_rule(x):
    return kinked_relu(x), lambda dy: (np.where(x > 0, dy, 0.0),)


def one_at_zero(x):
    """The subgradient 1 at the kink (the rule's is 0)."""
    return lambda dy: (np.where(x >= 0, dy, 0.0),)
