"""``ad.vmap`` of whole programs: generated programs (hypothesis, the vocabulary of
tests/support/generated_programs.py) equal the loop over the batch, at in_axes 0, 1 and None
mixes, and their per-example gradients the loop of ``ad.grad``; ``jax.vmap`` as an oracle on the
spec table's ufuncs and on the same generated programs."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ad
from tests.batching.support import SIZE
from tests.support.cases import PRIMITIVE_CASES
from tests.support.generated_programs import GENERATED, N, SETTINGS, build, scalar
from tests.support.needs import module

LAYOUTS = [(0, 0), (1, 1), (0, None), (None, 0), (1, None)]


def _batch(seed, axes):
    """Per argument: the batch along its axis (a shared one: one vector), and the examples."""
    rng = np.random.default_rng(seed)
    draws = rng.standard_normal((2, SIZE, N))
    args = [draws[k][0] if a is None else np.moveaxis(draws[k], 0, a) if a else draws[k]
            for k, a in enumerate(axes)]
    examples = [[draws[k][0] if a is None else draws[k][b] for k, a in enumerate(axes)] for b in range(SIZE)]
    return args, examples




@given(GENERATED, st.integers(0, 2**16), st.sampled_from(LAYOUTS))
@SETTINGS
def test_generated_programs_equal_the_loop(program, seed, axes):
    f = build(program, np)
    args, examples = _batch(seed, axes)
    want = np.stack([f(*xs) for xs in examples])
    np.testing.assert_allclose(ad.vmap(f, in_axes=axes)(*args), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ad.vmap(f, in_axes=axes, out_axes=1, form="compiled")(*args), want.T,
                               rtol=1e-12, atol=1e-12)


@given(GENERATED, st.integers(0, 2**16), st.sampled_from(LAYOUTS))
@SETTINGS
def test_generated_per_example_gradients_equal_the_loop(program, seed, axes):
    f = scalar(build(program, np), np)
    args, examples = _batch(seed, axes)
    want = [np.stack(gs) for gs in zip(*[ad.grad(f, argnums=(0, 1))(*xs) for xs in examples])]
    got = ad.vmap(ad.grad(f, argnums=(0, 1)), in_axes=axes)(*args)
    for k, (g, w) in enumerate(zip(got, want)):
        # the gradient of a shared argument is one per example too (out_axes 0)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10, err_msg=f"argument {k} at in_axes={axes}")


# -- jax.vmap as an oracle ---------------------------------------------------------------------

def _jax():
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


def _ufunc_cases():
    """The samples of numpy ufuncs called without params (jax.numpy spells them alike)."""
    return [pytest.param(c, id=c.name) for c in PRIMITIVE_CASES
            if isinstance(c.primitive.function, np.ufunc) and getattr(np, c.primitive.function.__name__, None)
            is c.primitive.function and not c.sample.params and c.sample.call is None
            and c.sample.derive is None and all(i.kind != "literal" for i in c.sample.inputs)]


@pytest.mark.parametrize("case", _ufunc_cases())
def test_spec_table_ufuncs_against_jax_vmap(case):
    jax, jnp = _jax()
    jfn = getattr(jnp, case.primitive.function.__name__, None)
    assert jfn is not None, f"jax.numpy has no {case.primitive.function.__name__}"
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    draws = [case.inputs(case.sample.shapes[-1], rng) for _ in range(SIZE)]
    n = len(draws[0])
    for axes in [(0,) * n, (1,) * n] + [tuple(0 if k == j else None for k in range(n)) for j in range(n) if n > 1]:
        args = [draws[0][k] if a is None else np.stack([d[k] for d in draws], axis=a) for k, a in enumerate(axes)]
        got = ad.vmap(case.fn, in_axes=axes)(*args)
        want = jax.vmap(jfn, in_axes=axes)(*[jnp.asarray(a) for a in args])
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{case.name} at in_axes={axes}")


@given(GENERATED, st.integers(0, 2**16), st.sampled_from(LAYOUTS))
@settings(SETTINGS, max_examples=10)
def test_generated_programs_against_jax_vmap(program, seed, axes):
    jax, jnp = _jax()
    args, _ = _batch(seed, axes)
    got = ad.vmap(build(program, np), in_axes=axes)(*args)
    want = jax.vmap(build(program, jnp), in_axes=axes)(*[jnp.asarray(a) for a in args])
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-12)
