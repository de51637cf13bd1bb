"""Files saved before the package moved to its present layout (issue 28) still load and run.

``written_before_the_move/`` holds what ``ad.save`` and ``ad.to_onnx`` wrote from the functions
below at commit c3f21ff, before the move (gradient tapes of an MLP, scipy.special and ad.scipy.stats,
an FFT, a guarded branch and a CNN; a primal tape; the ONNX gradient graphs of the MLP and the
CNN), with each function's inputs, value and gradient then (``<name>.npz``). Saved files name
primitives, never Python modules, so moving modules must not change what they load to.
"""
import pathlib

import numpy as np
import pytest
from scipy.special import gammaln

import ad
import ad.nn as nn
from ad.scipy.stats import norm

FILES = pathlib.Path(__file__).parent / "written_before_the_move"


def mlp(W1, b1, W2, x):
    h = np.tanh(x @ W1 + b1)
    return np.sum((h @ W2) ** 2) / x.shape[0]


def special(x, mu):
    return np.sum(gammaln(x) + norm.logpdf(x, mu, 2.0))


def spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def branchy(x):
    if np.sum(x) > 0:
        return np.sum(np.sin(x) * x)
    return np.sum(np.cos(x))


def cnn(w, x):
    y = nn.gelu(nn.conv(x, w))
    return np.sum(nn.log_softmax(np.mean(y, axis=(2, 3)), axis=-1))


FUNCTIONS = {f.__name__: f for f in (mlp, special, spectrum, branchy, cnn)}


def _saved(name):
    data = np.load(FILES / f"{name}.npz")
    args = [data[f"arr_{i}"] for i in range(len(data.files) - 2)]
    return [a.item() if a.ndim == 0 else a for a in args], data["value"], data["grad"]


def _same_as_saved(got, value, grad):
    """A value and gradient as saved, to rounding (another machine's exp and tanh: docs/numerics.md)."""
    np.testing.assert_allclose(got[0], value, rtol=1e-12)
    np.testing.assert_allclose(got[1], grad, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_saved_gradient_tape_loads_and_gives_its_saved_and_todays_gradient(name):
    args, value, grad = _saved(name)
    _same_as_saved(ad.load(FILES / f"{name}.tape.json")(*args), value, grad)
    _same_as_saved(ad.value_and_grad(FUNCTIONS[name])(*args), value, grad)


def test_a_saved_primal_tape_loads():
    args, value, _ = _saved("mlp")
    np.testing.assert_allclose(ad.load(FILES / "mlp_primal.tape.json")(*args), value, rtol=1e-13)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_an_exported_gradient_graph_imports_and_runs(name):
    args, value, grad = _saved(name)
    _same_as_saved(ad.from_onnx(FILES / f"{name}.onnx")(*args), value, grad)
