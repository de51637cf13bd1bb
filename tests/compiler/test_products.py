"""The fused backend's large products whose result only leaves the program: measured in their
first calls as ``a @ b`` and as ``(b.T @ a.T).T``, then run the faster way (ad.compiler.products)."""
import numpy as np
import pytest

import ad
from ad.compiler import calls, products

RNG = np.random.default_rng(7)
A, B = RNG.standard_normal((64, 256)), RNG.standard_normal((256, 256))     # 4.2M multiply-adds


class _Clock:
    """Each ``a @ b`` takes ``written`` seconds, each ``(b.T @ a.T).T`` ``other``: a call times
    both, ``a @ b`` first on even calls, last on odd ones."""

    def __init__(self, written, other):
        rounds = [(written, other) if k % 2 == 0 else (other, written) for k in range(calls.MEASURED_CALLS)]
        self.ticks, self.now = iter([t for first, second in rounds for t in (0, first, 0, second)]), 0.0

    def __call__(self):
        self.now += next(self.ticks)
        return self.now


@pytest.mark.parametrize("faster", ["a @ b", "(b.T @ a.T).T"])
def test_a_large_product_only_returned_runs_as_measured_faster(faster, monkeypatch):
    monkeypatch.setattr(calls, "CLOCK", _Clock(1.0, 2.0) if faster == "a @ b" else _Clock(2.0, 1.0))
    c = ad.compile(ad.trace(lambda a, b: a @ b, A, B), backend="fused")
    [p] = c.products
    assert "f_product0(v0, v1)" in c.source and not c.kernels
    for _ in range(calls.MEASURED_CALLS):
        assert p.runs is None and c.fn.__globals__[p.name] is p
        y = c(A, B)
        assert y.flags.c_contiguous
        np.testing.assert_allclose(y, A @ B, rtol=1e-13, atol=1e-13)
    assert p.runs == faster and c.fn.__globals__[p.name] is products.WAYS[faster]
    assert f"f_product0 runs as {faster}: a @ b" in repr(c) and "(best of 3 calls)" in repr(c)
    y = c(A, B)
    assert y.flags.c_contiguous == (faster == "a @ b")         # the other: the same numbers, Fortran order
    np.testing.assert_allclose(y, A @ B, rtol=1e-13, atol=1e-13)


def test_only_large_float_products_whose_result_no_equation_reads_are_measured():
    read = ad.compile(ad.trace(lambda a, b: np.tanh(a @ b), A, B), backend="fused")
    small = ad.compile(ad.trace(lambda a, b: a @ b, A[:8], B), backend="fused")
    ints = ad.compile(ad.trace(lambda a, b: a @ b, A.astype(np.int64), B.astype(np.int64)), backend="fused")
    vector = ad.compile(ad.trace(lambda a, b: a @ b, A, B[:, 0]), backend="fused")
    for c in (read, small, ints, vector):
        assert not c.products and "@" in c.source, c.source


def test_a_layers_weight_gradients_are_measured_and_agree_with_the_numpy_backend():
    """The MLP's shape: the weight gradients leave the program, the activations' gradient
    feeds the loops (C order, ``a @ b``)."""
    X, W1, W2 = RNG.standard_normal((128, 300)), RNG.standard_normal((300, 200)) * 0.05, RNG.standard_normal((200, 10))

    def loss(W1, W2, X):
        return np.sum(np.tanh(np.tanh(X @ W1) @ W2))
    gt = ad.optimize(ad.grad_tape(loss, W1, W2, X, argnums=(0, 1)))
    fused, numpy_code = ad.compile(gt, backend="fused"), ad.compile(gt)
    assert len(fused.products) == 1, fused.source                  # dW1 (dW2 is small)
    want = numpy_code(W1, W2, X)
    for _ in range(calls.MEASURED_CALLS + 2):
        got = fused(W1, W2, X)
        for g, w in zip(got[1], want[1]):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert fused.products[0].runs in products.WAYS
