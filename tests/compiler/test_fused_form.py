"""``ad.grad(f, form="fused")`` and ``value_and_grad``: the gradient tape run by the fused backend
(docs/fused.md), cached per signature like the compiled form, agreeing with the numpy backend
to rounding and with finite differences. Cost: ~1 s (one C compiler run per tape)."""
import numpy as np
import pytest

import ad
from tests.support.mlp import mlp_data, mlp_loss
from tests.support.numeric import fd_grad


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    """A fresh kernel cache: the tests compile, and leave the user's cache alone."""
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path))


def chain(x):
    y = np.tanh(x) * 2.0 + x
    return np.sum(y * np.exp(-y))


def test_fused_form_agrees_with_compiled_and_finite_differences():
    x = np.linspace(-1.5, 1.5, 16)
    g = ad.grad(chain, form="fused")
    got = g(x)
    np.testing.assert_allclose(got, ad.grad(chain, form="compiled")(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(got, fd_grad(chain, x), rtol=1e-6, atol=1e-8)
    assert type(g.cache.entries[next(iter(g.cache.entries))][0].compiled) is ad.compiler.fused.Fused


def test_fused_form_caches_per_signature_and_takes_pytrees():
    params, x, y = mlp_data()
    vg = ad.value_and_grad(mlp_loss, form="fused")
    want_v, want_g = ad.value_and_grad(mlp_loss, form="compiled")(params, x, y)
    for _ in range(2):
        v, g = vg(params, x, y)
        np.testing.assert_allclose(v, want_v, rtol=1e-13)
        for k in params:
            np.testing.assert_allclose(g[k], want_g[k], rtol=1e-12, atol=1e-14)
    vg(params, x[:4], y[:4])                    # another batch size: another tape
    info = vg.cache_info()
    assert (info.traces, info.hits, info.signatures) == (2, 1, 2)


def test_fused_form_under_an_enclosing_trace_runs_the_lifted_tape():
    """Differentiated again (tracers in), the fused form runs its tape as the compiled form does."""
    x = np.linspace(-1.0, 1.0, 5)
    gg = ad.grad(lambda x: np.sum(ad.grad(chain, form="fused")(x) ** 2))(x)
    np.testing.assert_allclose(gg, ad.grad(lambda x: np.sum(ad.grad(chain)(x) ** 2))(x), rtol=1e-12)
