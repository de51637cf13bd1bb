"""Shared tapes for the tapeviz tests: the docs' MLP and a 10,000-equation loop."""
import numpy as np
import pytest

import ad
from tapeviz import to_networkx, values_of
from ad.examples import mlp_example, mlp_loss


def loop(x, steps):
    for _ in range(steps):
        x = np.sin(x) * 1.01 + x
    return np.sum(x)


@pytest.fixture(scope="session")
def mlp():
    """(gradient tape, arguments) of the MLP loss."""
    args = mlp_example()
    return ad.grad_tape(mlp_loss, *args), args


@pytest.fixture(scope="session")
def mlp_graph(mlp):
    tape, args = mlp
    return to_networkx(tape, values=values_of(tape, *args))


@pytest.fixture(scope="session")
def big():
    """A gradient tape of 10,000 equations (1,430 steps of seven) and its graph."""
    tape = ad.grad_tape(loop, np.ones(3), 1430)
    assert len(tape.eqns) >= 10_000
    return tape, to_networkx(tape)
