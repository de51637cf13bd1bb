"""Fixtures for the debugger tests: the built-in MLP and a program with a hostile dict key."""
import numpy as np
import pytest

from ad.examples import mlp_example, mlp_loss
from tests.support.debug_programs import HOSTILE


@pytest.fixture
def mlp_args():
    return mlp_example()


@pytest.fixture
def mlp_dbg(mlp_args):
    import tapeviz
    return tapeviz.debug(mlp_loss, *mlp_args)


@pytest.fixture
def hostile_args():
    rng = np.random.default_rng(1)
    return {HOSTILE: rng.standard_normal((3, 4)), "w": rng.standard_normal(4)}, rng.standard_normal((5, 3))
