"""ad.from_onnx on small hand-built models: provenance, static shape folding, gradients with
respect to inputs and weights (finite differences), and the gradient tape exported back to
ONNX and run in onnxruntime. Cost: ~3 s."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.onnx import importer  # noqa: E402


def mlp_model():
    """x -> Gemm -> Relu -> Reshape to (batch, -1) via Shape/Gather/Concat -> MatMul -> Softmax."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(size=(3, 4)), "fc1.weight"),
             numpy_helper.from_array(rng.normal(size=4), "fc1.bias"),
             numpy_helper.from_array(rng.normal(size=(4, 2)), "fc2.weight"),
             numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    nodes = [helper.make_node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], name="mlp/fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="mlp/relu"),
             helper.make_node("Shape", ["a"], ["s"], name="mlp/shape"),
             helper.make_node("Gather", ["s", "zero"], ["batch"], name="mlp/batch", axis=0),
             helper.make_node("Concat", ["batch", "minus_one"], ["target"], name="mlp/concat", axis=0),
             helper.make_node("Reshape", ["a", "target"], ["flat"], name="mlp/flatten"),
             helper.make_node("MatMul", ["flat", "fc2.weight"], ["logits"], name="mlp/fc2"),
             helper.make_node("Softmax", ["logits"], ["y"], name="mlp/softmax", axis=-1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["n", 2])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)])


def reference(x, p):
    a = np.maximum(x @ p["fc1.weight"] + p["fc1.bias"], 0)
    z = a @ p["fc2.weight"]
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


X = np.random.default_rng(1).normal(size=(5, 3))


def test_forward_params_and_provenance():
    prog = ad.from_onnx(mlp_model(), inputs=[X])
    assert list(prog.params) == ["fc1.weight", "fc1.bias", "fc2.weight"]     # int initializers are constants
    assert ad.onnx.parameters(mlp_model()).keys() == prog.params.keys()
    np.testing.assert_allclose(prog(X), reference(X, prog.params), rtol=1e-12)
    tape = prog.tape
    assert tape.input_names == ("x", "fc1.weight", "fc1.bias", "fc2.weight")
    sources = {e.source for e in tape.eqns}     # the shape arithmetic left no equation (the
    assert sources == {"Gemm (mlp/fc1)", "Relu (mlp/relu)", "MatMul (mlp/fc2)",   # reshape is a no-op)
                       "Softmax (mlp/softmax)"}
    names = tape.meta["onnx_values"]
    assert names[tape.outputs[0]] == "y" and names[tape.inputs[1]] == "fc1.weight"
    np.testing.assert_allclose(tape(X, *prog.params.values()), prog(X), rtol=1e-12)


def test_new_weights_and_batch_size():
    prog = ad.from_onnx(mlp_model(), inputs=[(2, 3)])
    p = {k: v * 0.5 for k, v in prog.params.items()}
    np.testing.assert_allclose(prog(X, **p), reference(X, p), rtol=1e-12)
    assert prog.tape.inputs[0].aval.shape == (2, 3)


def _numeric_grad(f, p, name, eps=1e-6):
    g = np.zeros_like(p[name])
    for i in np.ndindex(g.shape):
        hi, lo = dict(p), dict(p)
        hi[name], lo[name] = p[name].copy(), p[name].copy()
        hi[name][i] += eps
        lo[name][i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


def test_gradient_wrt_weights_and_input_matches_finite_differences():
    prog = ad.from_onnx(mlp_model(), inputs=[X])
    target = np.eye(2)[[0, 1, 1, 0, 1]]

    def loss(x, params):
        return np.sum(np.log(prog.function(x, params)) * target)
    gx, gp = ad.grad(loss, argnums=(0, 1))(X, prog.params)
    for name in prog.params:
        np.testing.assert_allclose(gp[name], _numeric_grad(lambda p: loss(X, p), prog.params, name),
                                   rtol=1e-5, atol=1e-8)
    fd = _numeric_grad(lambda p: loss(p["x"], prog.params), {"x": X}, "x")
    np.testing.assert_allclose(gx, fd, rtol=1e-5, atol=1e-8)


def test_gradient_tape_exports_back_to_onnx():
    ort = optional_module("onnxruntime")
    prog = ad.from_onnx(mlp_model(), inputs=[X])
    gt = ad.grad_tape(lambda x, params: np.sum(prog.function(x, params) ** 2), X, prog.params, argnums=1)
    assert {"Gemm (mlp/fc1)", "Softmax (mlp/softmax)"} <= {e.source for e in gt.backward.eqns}   # pullbacks too
    model = ad.to_onnx(gt)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = dict(zip([i.name for i in model.graph.input], [X, *prog.params.values()]))
    outs = sess.run(None, feeds)
    value, grads = gt(X, prog.params)
    np.testing.assert_allclose(outs[0], value, rtol=1e-12)
    for got, name in zip(outs[1:], prog.params):
        np.testing.assert_allclose(got, grads[name], rtol=1e-10, atol=1e-14)


def test_conv_bn_pool_model_against_onnxruntime():
    """Conv (SAME_UPPER, stride 2) -> BatchNormalization -> AveragePool (pads, count_include_pad=0),
    against onnxruntime."""
    rng = np.random.default_rng(2)
    f32 = np.float32
    w, b = rng.normal(size=(4, 2, 3, 3)).astype(f32), rng.normal(size=4).astype(f32)
    scale, bias, mean, var = (rng.normal(size=4).astype(f32), rng.normal(size=4).astype(f32),
                              rng.normal(size=4).astype(f32), rng.uniform(1, 2, 4).astype(f32))
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w, "w"), (b, "b"), (scale, "g"), (bias, "beta"), (mean, "mu"), (var, "var"))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", auto_pad="SAME_UPPER", strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "mu", "var"], ["n"], name="bn", epsilon=1e-3),
             helper.make_node("AveragePool", ["n"], ["y"], name="pool", kernel_shape=[2, 2], pads=[1, 1, 0, 0])]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 7, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 15)])
    x = rng.normal(size=(1, 2, 7, 7)).astype(f32)
    got = ad.from_onnx(m)(x)
    assert got.dtype == f32
    ort = optional_module("onnxruntime")
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_import_ad_does_not_import_onnx():
    code = "import sys, ad; assert 'onnx' not in sys.modules; assert callable(ad.from_onnx)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_supported_ops_are_listed():
    ops = importer.supported_ops()
    assert {"Conv", "Gemm", "LayerNormalization", "ReduceLogSumExp", "TopK"} <= set(ops)


def _vi(name, shape=None, elem=TensorProto.DOUBLE):
    return helper.make_tensor_value_info(name, elem, shape)


def control_flow_model():
    """If on a static test (x has rank 2) picks a branch; a Loop runs 3 times v = tanh(v @ w)
    (w captured from the graph), its scan output stacks every v; a Scan sums those over time
    and emits their squares in reverse order."""
    rng = np.random.default_rng(3)
    then_branch = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["t"], name="then/mul")], "then", [],
                                    [_vi("t")])
    else_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else/neg")], "else", [], [_vi("e")])
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("MatMul", ["v", "w"], ["vw"], name="body/mm"),
         helper.make_node("Tanh", ["vw"], ["v_out"], name="body/tanh"),
         helper.make_node("Identity", ["v_out"], ["v_scan"])],
        "loop_body", [_vi("i", [], TensorProto.INT64), _vi("c_in", [], TensorProto.BOOL), _vi("v")],
        [_vi("c_out", [], TensorProto.BOOL), _vi("v_out"), _vi("v_scan")])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["acc", "row"], ["acc_out"], name="scan/add"),
         helper.make_node("Mul", ["row", "row"], ["sq"], name="scan/sq")],
        "scan_body", [_vi("acc", [2, 3]), _vi("row", [2, 3])], [_vi("acc_out", [2, 3]), _vi("sq", [2, 3])])
    inits = [numpy_helper.from_array(a, name) for a, name in (
        (rng.normal(size=(3, 3)), "w"), (rng.normal(size=3), "scale"), (np.array(3, np.int64), "three"),
        (np.array(2, np.int64), "two"), (np.array(True), "true"))]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Size", ["shape"], ["rank"]),
             helper.make_node("Equal", ["rank", "two"], ["is_matrix"]),
             helper.make_node("If", ["is_matrix"], ["h"], name="pick",
                              then_branch=then_branch, else_branch=else_branch),
             helper.make_node("Loop", ["three", "true", "h"], ["last", "all"], name="steps", body=loop_body),
             helper.make_node("Scan", ["h", "all"], ["total", "squares"], name="sum", body=scan_body,
                              num_scan_inputs=1, scan_output_directions=[1])]
    graph = helper.make_graph(nodes, "cf", [_vi("x", [2, 3])], [_vi("last"), _vi("total"), _vi("squares")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)])


def test_control_flow_known_at_import_is_unrolled():
    """If, Loop and Scan whose conditions and lengths are known at import run inline: the tape
    holds the taken branch and every iteration, the values equal onnxruntime's, the gradient
    with respect to the captured weight equals finite differences."""
    ort = optional_module("onnxruntime")
    m = control_flow_model()
    prog = ad.from_onnx(m)
    sources = [e.source for e in prog.tape.eqns]
    assert "Mul (then/mul)" in sources and "Neg (else/neg)" not in sources
    assert sources.count("Tanh (body/tanh)") == 3 and sources.count("Add (scan/add)") == 3
    x = np.random.default_rng(4).normal(size=(2, 3))
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for got, w in zip(prog(x), want):
        np.testing.assert_allclose(got, w, rtol=1e-12)

    def loss(params):
        last, total, squares = prog.function(x, params)
        return np.sum(last) + np.sum(total * total) + np.sum(squares[0])
    g = ad.grad(loss)(prog.params)
    for name in prog.params:
        np.testing.assert_allclose(g[name], _numeric_grad(loss, prog.params, name), rtol=1e-6, atol=1e-9)


def test_float_initializers_read_only_at_import_are_constants():
    """Optimisers (onnxsim, tf2onnx) move Resize's scales and Pad's value into initializers:
    those are constants, not weights, so the model imports; a float initializer read as a
    value stays a parameter."""
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array(np.array([0, 0, 1, 0, 0, 0, 0, 1], np.int64), "pads"),
             numpy_helper.from_array(np.array(0.5, np.float32), "fill"),
             numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "bias")]
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["r"], mode="linear"),
             helper.make_node("Pad", ["r", "pads", "fill"], ["p"]), helper.make_node("Add", ["p", "bias"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 18)])
    prog = ad.from_onnx(m)
    assert list(prog.params) == ["bias"] and list(ad.onnx.parameters(m)) == ["bias"]
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    ort = optional_module("onnxruntime")
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(prog(x), want, rtol=1e-6)
    assert prog.tape(x, prog.params["bias"]).shape == (1, 1, 5, 5)
