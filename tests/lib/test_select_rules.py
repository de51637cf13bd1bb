"""The rules of maximum, minimum, fmax and fmin: the cotangent goes to the selected operand, half to
each on a tie, written as ``dy * share`` (a select of ``dy`` on a half-true mask is several times
slower in numpy). Checked on ties, signed zeros, infinities and NaNs in every form, against
``jax.grad`` where JAX's convention is the same (no NaN operand), and in float32."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from tests.support.needs import module

A = np.array([1.0, 2.0, 3.0, np.nan, 0.0, -0.0, np.inf, 1.0, -np.inf, 4.0])
B = np.array([1.0, 0.0, 5.0, 1.0, np.nan, 0.0, np.inf, -np.inf, 2.0, 4.0])
WEIGHTS = np.arange(1.0, 11.0)
# a's share of the cotangent at each position: a tie (also -0.0 with 0.0, inf with inf) splits it;
# a NaN selects neither in maximum/minimum (the remainder, all of it, goes to b), and the other
# operand in fmax/fmin
SHARES = {"maximum": [.5, 1, 0, 0, 0, .5, .5, 1, 0, .5], "minimum": [.5, 0, 1, 0, 0, .5, .5, 0, 1, .5],
          "fmax": [.5, 1, 0, 0, 1, .5, .5, 1, 0, .5], "fmin": [.5, 0, 1, 0, 1, .5, .5, 0, 1, .5]}


def loss(name):
    return lambda a, b: np.sum(getattr(np, name)(a, b) * WEIGHTS)


@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
@pytest.mark.parametrize("name", SHARES)
def test_the_cotangent_goes_to_the_selected_operand_and_splits_on_ties(name, form):
    with np.errstate(invalid="ignore"):
        da, db = ad.grad(loss(name), argnums=(0, 1), form=form)(A, B)
    np.testing.assert_array_equal(da, WEIGHTS * SHARES[name])
    np.testing.assert_array_equal(db, WEIGHTS * (1 - np.array(SHARES[name])))


@pytest.mark.parametrize("name", SHARES)
def test_jax_agrees_where_no_operand_is_nan(name):
    jax, jnp = module("jax"), module("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    keep = ~(np.isnan(A) | np.isnan(B)) & ((name in ("maximum", "minimum")) | (A != B))   # JAX's fmax ties differ
    a, b = A[keep], B[keep]
    w = WEIGHTS[keep]
    with np.errstate(invalid="ignore"):         # inf - inf in the forward sum
        ours = ad.grad(lambda a, b: np.sum(getattr(np, name)(a, b) * w), argnums=(0, 1))(a, b)
    theirs = jax.grad(lambda a, b: jnp.sum(getattr(jnp, name)(a, b) * w), argnums=(0, 1))(a, b)
    for u, v in zip(ours, theirs):
        np.testing.assert_array_equal(u, np.asarray(v))


def test_relu_by_maximum_keeps_float32_and_reads_no_select_of_the_cotangent():
    x = np.array([-1.0, 0.0, 2.0, 3.5], np.float32)
    f = lambda x: np.sum(np.maximum(x, np.float32(0.0)) * x)    # noqa: E731
    g = ad.grad(f, form="compiled")(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, np.array([0.0, 0.0, 4.0, 7.0], np.float32))
    tape = ad.optimize(ad.grad_tape(f, x))
    selects = [e for e in tape.eqns[tape.n_forward:] if e.prim.name == "where"]
    assert all(e.outputs[0].aval.dtype == np.float32 and e.inputs[1].aval.shape == () for e in selects)
