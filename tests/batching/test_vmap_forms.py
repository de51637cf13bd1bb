"""``ad.vmap`` of every form equals the loop: per-example gradients with the gradient in each of
its forms (lifted, closure, compiled, fused) batched by ``ad.vmap`` in each of its own (lifted,
compiled, fused), on the MLP example and on generated programs, against ``ad.grad`` example by
example."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ad
from ad.examples import mlp_example, mlp_loss
from ad.examples.programs import rnn_example, rnn_loss
from tests.batching.test_vmap_programs import LAYOUTS, _batch
from tests.support.generated_programs import GENERATED, SETTINGS, build, scalar

GRAD_FORMS = ("lifted", "closure", "compiled", "fused")
VMAP_FORMS = ("lifted", "compiled", "fused")


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    """The fused form compiles C kernels: into a cache of the tests', not the user's."""
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path_factory.getbasetemp() / "fused"))


@pytest.mark.parametrize("vmap_form", VMAP_FORMS)
@pytest.mark.parametrize("grad_form", GRAD_FORMS)
def test_per_example_gradients_of_the_mlp_in_every_form_equal_the_loop(grad_form, vmap_form):
    params, x, y = mlp_example(batch=5, sizes=(4, 8, 3))
    per_example = ad.vmap(ad.grad(mlp_loss, form=grad_form), in_axes=(None, 0, 0), form=vmap_form)
    got = per_example(params, x[:, None], y[:, None])
    entry = next(iter(per_example.cache.entries.values()))[0]
    kind = {"lifted": type(None), "compiled": ad.Compiled, "fused": ad.compiler.fused.Fused}[vmap_form]
    assert type(entry.compiled) is kind, (vmap_form, type(entry.compiled))
    for i in range(len(x)):
        want = ad.grad(mlp_loss)(params, x[i:i + 1], y[i:i + 1])
        for k in want:
            np.testing.assert_allclose(got[k][i], want[k], rtol=1e-12, atol=1e-14,
                                       err_msg=f"{k} of example {i}: grad form {grad_form}, vmap form {vmap_form}")


def test_vmap_of_a_value_in_every_form_equals_the_loop():
    f = rnn_loss
    params, xs, y = rnn_example(steps=6)
    batch = np.stack([xs * s for s in (1.0, 0.5, -1.0)])
    want = np.stack([f(params, b, y) for b in batch])
    for form in VMAP_FORMS:
        np.testing.assert_allclose(ad.vmap(f, in_axes=(None, 0, None), form=form)(params, batch, y), want,
                                   rtol=1e-13, err_msg=form)


@given(GENERATED, st.integers(0, 2**16), st.sampled_from(LAYOUTS), st.sampled_from(GRAD_FORMS[:3]),
       st.sampled_from(VMAP_FORMS[:2]))
@settings(SETTINGS, max_examples=30)
def test_generated_per_example_gradients_in_every_form_equal_the_loop(program, seed, axes, grad_form, vmap_form):
    f = scalar(build(program, np), np)
    args, examples = _batch(seed, axes)
    want = [np.stack(gs) for gs in zip(*[ad.grad(f, argnums=(0, 1))(*xs) for xs in examples])]
    got = ad.vmap(ad.grad(f, argnums=(0, 1), form=grad_form), in_axes=axes, form=vmap_form)(*args)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10,
                                   err_msg=f"argument {k} at in_axes={axes}: {grad_form} under vmap {vmap_form}")
