"""``torch.func.vmap`` as an oracle beside ``jax.vmap`` (tests/batching/test_vmap_programs.py):
``ad.vmap`` of the spec table's ufuncs that torch spells alike, at in_axes 0, 1 and one operand
batched with the others shared, and of the generated programs (written once over numpy and
torch, tests/support/generated_programs.py), values and per-example gradients
(``torch.func.vmap(torch.func.grad)``)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ad
from tests.batching.support import SIZE
from tests.batching.test_vmap_programs import LAYOUTS, _batch, _ufunc_cases
from tests.support.generated_programs import GENERATED, SETTINGS, build, scalar
from tests.support.needs import module

torch = module("torch")

# torch's spelling where it differs from numpy's (torch.equal compares whole tensors: one bool)
SPELLED = {"equal": "eq", "not_equal": "ne", "power": "pow", "degrees": "rad2deg", "radians": "deg2rad",
           "fabs": "abs", "rint": "round", "conjugate": "conj_physical"}


def _torch_name(case) -> str:
    name = case.primitive.function.__name__
    return SPELLED.get(name, name)


def _torch_cases():
    return [p for p in _ufunc_cases() if hasattr(torch, _torch_name(p.values[0]))]


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


@pytest.mark.parametrize("case", _torch_cases())
def test_spec_table_ufuncs_against_torch_vmap(case):
    name = _torch_name(case)
    tfn = getattr(torch, name)
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    draws = [case.inputs(case.sample.shapes[-1], rng) for _ in range(SIZE)]
    n = len(draws[0])
    ranks = [np.ndim(x) for x in draws[0]]
    layouts = [(0,) * n] + [(1,) * n] * all(r >= 1 for r in ranks) \
        + [tuple(0 if k == j else None for k in range(n)) for j in range(n) if n > 1]
    for axes in layouts:
        args = [draws[0][k] if a is None else np.stack([d[k] for d in draws], axis=a) for k, a in enumerate(axes)]
        got = _as_tuple(ad.vmap(case.fn, in_axes=axes)(*args))
        # a shared operand is a plain value to torch's function (a tensor too, but not mapped)
        want = _as_tuple(torch.func.vmap(tfn, in_dims=axes)(*[torch.as_tensor(np.asarray(a)) for a in args]))
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"{case.name} at in_axes={axes}")


def test_the_torch_oracle_covers_most_of_the_jax_one():
    assert len(_torch_cases()) >= 0.6 * len(_ufunc_cases()), ([p.id for p in _torch_cases()], len(_ufunc_cases()))


@given(GENERATED, st.integers(0, 2**16), st.sampled_from(LAYOUTS))
@settings(SETTINGS, max_examples=15)
def test_generated_programs_against_torch_vmap(program, seed, axes):
    args, _ = _batch(seed, axes)
    got = ad.vmap(build(program, np), in_axes=axes)(*args)
    want = torch.func.vmap(build(program, torch), in_dims=axes)(*map(torch.as_tensor, args))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)


@given(GENERATED, st.integers(0, 2**16), st.sampled_from(LAYOUTS))
@settings(SETTINGS, max_examples=15)
def test_generated_per_example_gradients_against_torch_vmap_of_grad(program, seed, axes):
    args, _ = _batch(seed, axes)
    got = ad.vmap(ad.grad(scalar(build(program, np), np), argnums=(0, 1)), in_axes=axes)(*args)
    tgrad = torch.func.grad(scalar(build(program, torch), torch), argnums=(0, 1))
    want = torch.func.vmap(tgrad, in_dims=axes)(*map(torch.as_tensor, args))
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"argument {k} at in_axes={axes}")
