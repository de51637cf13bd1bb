"""The ops of issue 33 against onnxruntime, beyond ONNX's own cases (every mode and padding of the
samplers, regions of every size, MaxRoiPool, which has no case): the forward in float32 at
random inputs equals onnxruntime's, and the gradient with respect to the float inputs passes
the dot-product test against finite differences (``ad.checks.fd``, float64, the step shrunk
until the difference converges: the samplers' kinks are at integer positions). Cost: ~5 s."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
ort = optional_module("onnxruntime")
from onnx import helper  # noqa: E402

import ad  # noqa: E402
from ad.checks.fd import directional_derivative, refined  # noqa: E402
from tests.onnx.importer.test_conformance_gradients import of_float_inputs  # noqa: E402

F32, I64 = np.float32, np.int64


def single_node(op, opset, inputs, n_out=1, **attrs):
    """A model of one node on ``inputs`` (arrays, None for an omitted optional input)."""
    names = [f"in{i}" if x is not None else "" for i, x in enumerate(inputs)]
    infos = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
             for n, x in zip(names, inputs) if x is not None]
    outs = [f"out{i}" for i in range(n_out)]
    graph = helper.make_graph([helper.make_node(op, names, outs, name=op.lower(), **attrs)], "g", infos,
                              [helper.make_empty_tensor_value_info(o) for o in outs])
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])


def check(op, opset, inputs, *, wrt=(), n_out=1, rtol=2e-5, atol=2e-5, **attrs):
    """The import equals onnxruntime on ``inputs``; the gradient with respect to inputs ``wrt``
    passes the dot-product test in float64."""
    model = single_node(op, opset, inputs, n_out, **attrs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {f"in{i}": x for i, x in enumerate(inputs) if x is not None})
    inputs = [x for x in inputs if x is not None]
    prog = ad.from_onnx(model, inputs=inputs)
    got = prog(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        assert np.shape(g) == e.shape and np.result_type(g) == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    if not wrt:
        return
    f, xs = of_float_inputs(prog, inputs, wrt)
    directions = np.random.default_rng(1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ys, pullback = ad.vjp(f, *xs)
        for _ in range(2):
            us = [directions.standard_normal(np.shape(x)) for x in xs]
            vs = tuple(directions.standard_normal(np.shape(y)) for y in ys)
            est = refined(directional_derivative, f, xs, us)      # the step shrinks past nearby kinks
            assert est.converged
            lhs = float(np.dot(est.value, np.concatenate([v.reshape(-1) for v in vs])))
            rhs = sum(float(np.sum(g * u)) for g, u in zip(pullback(vs), us))
            assert abs(lhs - rhs) <= 1e-6 * (abs(lhs) + abs(rhs)) + 1e-8, (lhs, rhs)


rng = np.random.default_rng(0)


def normal(*shape):
    return rng.standard_normal(shape).astype(F32)


def uniform(lo, hi, *shape):
    return rng.uniform(lo, hi, shape).astype(F32)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode, padding, align):
    x, grid = normal(2, 3, 5, 6), uniform(-1.4, 1.4, 2, 4, 3, 2)        # some positions outside the image
    check("GridSample", 20, [x, grid], wrt=(0, 1) if mode != "nearest" else (0,), mode=mode,
          padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_grid_sample_volumetric_and_opset_16(mode):
    check("GridSample", 20, [normal(1, 2, 3, 4, 5), uniform(-1.2, 1.2, 1, 2, 3, 2, 3)],
          wrt=(0, 1) if mode == "linear" else (0,), mode=mode, padding_mode="border")
    check("GridSample", 16, [normal(1, 2, 4, 5), uniform(-1.2, 1.2, 1, 3, 3, 2)], wrt=(0, 1),
          mode="bicubic" if mode == "linear" else mode, padding_mode="reflection")


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel", None])
@pytest.mark.parametrize("ratio", [0, 2])
def test_roi_align(mode, transform, ratio):
    """Regions of different sizes (so ``sampling_ratio=0`` samples each on its own grid), one
    reaching out of the image; ``transform=None``: the attribute left out (half_pixel)."""
    rois = np.array([[0.4, 1.3, 6.2, 5.1], [2.2, 0.3, 3.9, 7.6], [5.1, 4.6, 10.4, 9.3]], F32)
    wrt = (0, 1) if ratio and mode == "avg" else (0,)
    given = {} if transform is None else {"coordinate_transformation_mode": transform}
    check("RoiAlign", 16, [normal(2, 3, 9, 10), rois, np.array([1, 0, 1], I64)], wrt=wrt, mode=mode,
          output_height=3, output_width=2, sampling_ratio=ratio, spatial_scale=0.9, **given)


def test_max_roi_pool():
    rois = np.array([[1, 0.4, 1.3, 6.2, 5.1], [0, 2.2, 0.3, 3.9, 7.6], [1, 5.1, 4.6, 11.4, 9.3]], F32)
    check("MaxRoiPool", 7, [normal(2, 3, 9, 10), rois], wrt=(0,), pooled_shape=[3, 2], spatial_scale=0.9)


def test_deform_conv():
    """Groups, offset groups, strides, dilations, pads, a mask and a bias."""
    x, w = normal(2, 4, 7, 6), normal(6, 2, 3, 2)
    offset, mask, b = 1.5 * normal(2, 2 * 6 * 2, 3, 6), uniform(0, 1, 2, 2 * 6, 3, 6), normal(6)
    check("DeformConv", 19, [x, w, offset, b, mask], wrt=(0, 1, 2, 3, 4), rtol=1e-4, atol=1e-4, group=2,
          offset_group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 1, 0, 1])


def test_pooling_and_normalization():
    x = normal(2, 5, 7, 6)
    check("LRN", 13, [x], wrt=(0,), size=5, alpha=0.1, beta=0.6, bias=1.5)
    for p, extra in [(1, {}), (2, {"pads": [1, 0, 2, 1]}), (3, {"ceil_mode": 1, "strides": [2, 2], "dilations": [1, 2]})]:
        check("LpPool", 18, [x], wrt=(0,), rtol=1e-4, kernel_shape=[3, 2], p=p, **extra)
    check("MeanVarianceNormalization", 13, [x], wrt=(0,), axes=[0, 2])
    check("Hardmax", 13, [x], axis=2)


@pytest.mark.parametrize("order", [0, 1])
def test_max_pool_indices(order):
    check("MaxPool", 12, [normal(2, 3, 7, 6)], n_out=2, wrt=(0,), kernel_shape=[3, 2], pads=[1, 0, 1, 1],
          strides=[2, 1], dilations=[1, 2], ceil_mode=1, storage_order=order)
    check("MaxPool", 12, [normal(1, 2, 4, 5, 3)], n_out=2, kernel_shape=[2, 2, 2], storage_order=order)
    x = normal(1, 2, 4, 4)
    pooled, where = ad.from_onnx(single_node("MaxPool", 12, [x], 2, kernel_shape=[2, 2], strides=[2, 2]))(x)
    check("MaxUnpool", 11, [pooled, where], wrt=(0,), kernel_shape=[2, 2], strides=[2, 2])


@pytest.mark.parametrize("inverse", [0, 1])
def test_dft(inverse):
    """Complex and real signals, cut (7 points to 6) or padded (to 9), the one-sided spectrum of
    a real signal and the real signal of a one-sided spectrum (4 bins for 6 points)."""
    dft = dict(wrt=(0,), rtol=1e-4, atol=1e-4, inverse=inverse)
    for signal in (normal(2, 7, 3, 2), normal(2, 7, 3, 1)):
        for length in (6, 9):
            check("DFT", 20, [signal, np.array(length, I64), np.array(1, I64)], **dft)
    onesided = (normal(2, 4, 3, 2) if inverse else normal(2, 6, 3, 1))
    check("DFT", 20, [onesided, None if inverse else np.array(6, I64), np.array(-3, I64)], onesided=1, **dft)
    check("DFT", 17, [normal(2, 3, 5, 2)], axis=2, **dft)


@pytest.mark.parametrize("onesided", [0, 1])
def test_stft_and_windows(onesided):
    window = np.hanning(8).astype(F32)
    check("STFT", 17, [normal(2, 30, 1), np.array(3, I64), window], wrt=(0, 2), rtol=1e-4, atol=1e-4,
          onesided=onesided)
    check("STFT", 17, [normal(1, 20, 2), np.array(4, I64), None, np.array(8, I64)],
          wrt=(0,), rtol=1e-4, atol=1e-4, onesided=0)
    for name in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        check(name, 17, [np.array(11, I64)], periodic=onesided)
    check("MelWeightMatrix", 17, [np.array(10, I64), np.array(128, I64), np.array(16000, I64),
                                  np.array(30.0, F32), np.array(7000.0, F32)])


def test_layout_ops():
    check("Col2Im", 18, [normal(2, 3 * 4, 9), np.array([5, 7], I64), np.array([2, 2], I64)], wrt=(0,),
          strides=[2, 2], pads=[1, 0, 0, 1], dilations=[1, 2])
    check("CenterCropPad", 18, [normal(5, 4, 3), np.array([8, 3], I64)], wrt=(0,), axes=[0, 1])
    for align, size in [(0, [2, 1, 4, 5]), (1, [2, 1, 3, 4, 2])]:
        theta = normal(2, len(size) - 2, len(size) - 1)
        check("AffineGrid", 20, [theta, np.array(size, I64)], wrt=(0,), align_corners=align)
    check("ReverseSequence", 10, [normal(5, 3, 2), np.array([2, 5, 1], I64)], wrt=(0,))
    check("TensorScatter", 24, [normal(2, 3, 5, 4), normal(2, 3, 2, 4), np.array([1, 4], I64)], wrt=(0, 1),
          mode="circular")
    check("RotaryEmbedding", 23, [normal(2, 6, 3, 8), normal(7, 2), normal(7, 2), np.array([[0, 3, 6], [1, 2, 5]], I64)],
          wrt=(0, 1, 2), interleaved=1, rotary_embedding_dim=4)
    check("RMSNormalization", 23, [normal(2, 3, 4), normal(3, 4)], wrt=(0, 1), axis=1, epsilon=0.01)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_losses(reduction):
    scores, labels, weight = normal(3, 5, 2), np.array([[1, 4], [0, 2], [3, 3]], I64), uniform(0.5, 2, 5)
    check("SoftmaxCrossEntropyLoss", 13, [scores, labels, weight], n_out=2, wrt=(0, 2), reduction=reduction,
          ignore_index=3)
    check("NegativeLogLikelihoodLoss", 13, [scores, labels], wrt=(0,), reduction=reduction, ignore_index=0)


def test_non_max_suppression():
    corners = uniform(0, 1, 2, 8, 4)
    centers = np.concatenate([uniform(0.2, 0.8, 2, 8, 2), uniform(0.1, 0.5, 2, 8, 2)], axis=-1)
    for boxes, center in ((corners, 0), (centers, 1)):
        check("NonMaxSuppression", 11, [boxes, uniform(0, 1, 2, 3, 8), np.array([3], I64), np.array([0.2], F32),
                                        np.array([0.3], F32)], center_point_box=center)


@pytest.mark.parametrize("opset,attrs", [(24, {}), (25, {"left_window_size": 2, "right_window_size": 1}),
                                         (25, {"left_window_size": 1, "is_causal": 1})])
def test_attention_external_cache_and_windows(opset, attrs):
    """nonpad_kv_seqlen (the valid keys of each batch entry), sliding windows, causal masking
    aligned to the cache's end."""
    q, k, v = normal(2, 2, 3, 4), normal(2, 2, 6, 4), normal(2, 2, 6, 4)
    check("Attention", opset, [q, k, v, np.ones((3, 6), bool), None, None, np.array([4, 6], I64)], wrt=(0, 1, 2),
          rtol=1e-4, atol=1e-5, **attrs)
