"""ONNX export of batched programs (``ad.vmap_tape``): the MLP's per-example gradients run in
onnxruntime, and ``fallback_loop`` (a primitive without a batching rule, looped over the batch)
lowers by unrolling the loop through the looped primitive's own lowering."""
import numpy as np
import pytest

import ad
from ad.examples import mlp_example, mlp_loss
from ad.scipy.linalg import expm
from tests.support.needs import module
from tests.support.serialize_cases import run_onnx

onnx = module("onnx")
module("onnxruntime")
from ad.onnx import LoweringError  # noqa: E402
from ad.onnx.lowering import LOWERINGS, lowers  # noqa: E402


def exported(tape):
    model = ad.to_onnx(tape)
    onnx.checker.check_model(model, full_check=True)
    return model


def test_per_example_gradients_of_the_mlp_run_in_onnxruntime():
    params, x, y = mlp_example(batch=5, sizes=(4, 8, 3))
    per_example = ad.grad(mlp_loss)
    args = (params, x[:, None], y[:, None])
    tape = ad.vmap_tape(per_example, *args, in_axes=(None, 0, 0))
    assert tape.inputs[-1].aval.shape == (5, 1, 3)           # the batch axis in the avals
    want = ad.pytree.flatten(ad.vmap(per_example, in_axes=(None, 0, 0))(*args))[0]
    got = run_onnx(exported(tape), *ad.pytree.flatten(args)[0])
    assert [g.shape for g in got] == [w.shape for w in want] and (5, 4, 8) in [g.shape for g in got]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.fixture
def affine():
    """A user primitive with an ONNX lowering and no batching rule: ad.vmap loops it."""
    prim = ad.primitive(lambda x, w: x * w + 1.0, name="test_onnx_batching.affine")

    @lowers(prim)
    def lower(g, e):
        return g.op("Add", g.op("Mul", g.x(e.inputs[0]), g.x(e.inputs[1])), g.const(np.float64(1.0)))
    yield prim
    LOWERINGS.pop(prim.primitive)
    ad.REGISTRY.pop(prim.primitive.name)


@pytest.mark.parametrize("in_axes", [(0, None), (1, None), (None, 0), (1, 0)])
def test_a_fallback_loop_lowers_unrolled(affine, in_axes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4) if in_axes[0] != 1 else (4, 3))
    w = rng.standard_normal((3, 4) if in_axes[1] == 0 else (4,))
    f = lambda x, w: np.tanh(affine(x, w))      # noqa: E731
    tape = ad.vmap_tape(f, x, w, in_axes=in_axes)
    assert "fallback_loop" in ad.op_counts(tape)
    model = exported(tape)
    assert {"Gather", "Unsqueeze", "Concat"} <= {n.op_type for n in model.graph.node}
    got, = run_onnx(model, x, w)
    want = ad.vmap(f, in_axes=in_axes)(x, w)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    examples = [f(np.take(x, b, axis=in_axes[0]) if in_axes[0] is not None else x,
                  np.take(w, b, axis=in_axes[1]) if in_axes[1] is not None else w) for b in range(3)]
    np.testing.assert_allclose(got, np.stack(examples), rtol=1e-13)


def test_a_loop_of_a_primitive_without_a_lowering_is_refused_with_the_reason():
    tape = ad.vmap_tape(expm, np.stack([np.eye(2) * 0.1 * k for k in range(3)]))
    assert "fallback_loop" in ad.op_counts(tape)
    with pytest.raises(LoweringError, match="the loop over the batch runs scipy.linalg.expm, which has no "
                                            "ONNX lowering .a scipy function"):
        ad.to_onnx(tape)
