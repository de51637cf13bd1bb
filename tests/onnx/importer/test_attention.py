"""ONNX Attention with fully masked rows (every key masked): the row's output is 0, as ONNX
defines, and the gradients are finite and equal to central differences, for each way a row gets
fully masked (a boolean mask, an additive -inf mask, causal masking after a past cache combined
with a mask), in the native op and in ONNX's function body for it (generic ops: Softmax, then a
Where that zeroes the row). Cost: < 2 s."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
from onnx import TensorProto, helper  # noqa: E402
from onnx.backend.test.case.node import function_testcase_helper  # noqa: E402

import ad  # noqa: E402

D = TensorProto.DOUBLE


def attention_model(mask_type, *, causal: bool, past: bool, expanded: bool) -> onnx.ModelProto:
    """Attention (opset 23) on float64 q, k, v, a mask, and optionally a past key/value cache;
    ``expanded``: the op's function body, as ONNX's own ``*_expanded`` cases build it."""
    names = ["q", "k", "v", "mask"] + (["past_k", "past_v"] if past else [])
    types = [D, D, D, mask_type] + ([D, D] if past else [])
    node = helper.make_node("Attention", names, ["y"], is_causal=int(causal), name="attn")
    nodes, opsets = [node], [helper.make_operatorsetid("", 23)]
    if expanded:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (nodes, opsets), = function_testcase_helper(
                node, [helper.make_tensor_type_proto(t, None) for t in types], "body", opsets)[0]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, None) for n, t in zip(names, types)],
                              [helper.make_tensor_value_info("y", D, None)])
    return helper.make_model(graph, opset_imports=opsets)


def _pattern(name, rng):
    """(mask type, causal, inputs, the fully masked query row) of one way to mask a whole row."""
    q, k, v = (rng.standard_normal((1, 2, 3, 4)) for _ in range(3))
    if name == "boolean":
        mask = np.ones((3, 3), bool)
        mask[1] = False
        return TensorProto.BOOL, False, [q, k, v, mask], 1
    if name == "additive":
        mask = rng.standard_normal((3, 3))
        mask[2] = -np.inf
        mask[0, 1] = -np.inf           # and a partly masked row
        return D, False, [q, k, v, mask], 2
    past_k, past_v = rng.standard_normal((1, 2, 2, 4)), rng.standard_normal((1, 2, 2, 4))
    mask = np.ones((3, 5), bool)
    mask[0, :3] = False                # causal allows keys 0-2 to query 0 (after 2 past ones): all masked
    return TensorProto.BOOL, True, [q, k, v, mask, past_k, past_v], 0


def _central(f, xs, h=1e-6):
    grads = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[j] = h
            plus, minus = list(xs), list(xs)
            plus[i], minus[i] = x + step, x - step
            g[j] = (f(*plus) - f(*minus)) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.parametrize("expanded", [False, True], ids=["native", "function_body"])
@pytest.mark.parametrize("pattern", ["boolean", "additive", "causal_with_past"])
def test_fully_masked_rows_have_finite_gradients_equal_to_central_differences(pattern, expanded):
    rng = np.random.default_rng(0)
    mask_type, causal, inputs, dead = _pattern(pattern, rng)
    prog = ad.from_onnx(attention_model(mask_type, causal=causal, past=len(inputs) == 6, expanded=expanded),
                        inputs=inputs)
    floats = [i for i, x in enumerate(inputs) if x.dtype == np.float64]
    w = rng.standard_normal((1, 2, 3, 4))

    def loss(*xs):
        args = list(inputs)
        for i, x in zip(floats, xs):
            args[i] = x
        return np.sum(prog.function(*args, {}) * w)
    xs = [inputs[i] for i in floats]
    with np.errstate(invalid="ignore"):
        y = prog(*inputs)
        grads = ad.grad(loss, argnums=tuple(range(len(xs))))(*xs)
        expected = _central(loss, xs)
    np.testing.assert_array_equal(y[:, :, dead], 0)              # ONNX: a fully masked row is 0
    for g, e in zip(grads, expected):
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(grads[0][:, :, dead], 0)       # the masked query moves nothing
