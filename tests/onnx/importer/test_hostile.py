"""Hostile and broken models: each is refused with an OnnxImportError naming the cause, before
anything runs (or, for what only running can tell, such as a loop's end, while it runs). What
the values decide (an If's branch, a shape computed from them) is read while tracing and
guarded: a tape run on values that break the guard raises GuardError naming the node. Cost: < 1 s."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.onnx import importer  # noqa: E402
from ad.errors import GuardError  # noqa: E402
from ad.onnx.importer import OnnxImportError  # noqa: E402


def model(nodes, inputs=(("x", [2, 3]),), outputs=("y",), initializers=(), opset=18, **kw):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)], **kw)


def raw_tensor(name, dims, data: bytes):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    t.raw_data = data
    return t


def refused(m, match, **kw):
    with pytest.raises(OnnxImportError, match=match):
        ad.from_onnx(m, **kw)


def test_unknown_op_names_op_node_and_domain():
    refused(model([helper.make_node("FancyOp", ["x"], ["y"], name="n1", domain="com.evil")]),
            r"node 'n1': op 'FancyOp' of domain 'com.evil' is not supported")
    refused(model([helper.make_node("Frobnicate", ["x"], ["y"], name="n2")]),
            r"'Frobnicate' of domain 'ai.onnx'")


def test_unread_attribute_is_refused_not_dropped():
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r", bogus=3)])
    with pytest.raises(OnnxImportError, match=r"attributes \['bogus'\] are not supported"):
        ad.from_onnx(m)(np.ones((2, 3), np.float32))


def test_subgraph_attribute_is_refused():
    body = helper.make_graph([], "b", [], [])
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r", body=body)])
    refused(m, r"'body' is a subgraph that no declaration runs")


def _branch(name, op, value="x"):
    return helper.make_graph([helper.make_node(op, [value], [f"{name}_out"], name=f"{name}/{op}")], name, [],
                             [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, None)])


def test_if_on_the_inputs_values_is_guarded_and_unknown_ops_in_branches_refused():
    """An If whose condition is computed from the input's values inlines the branch this call
    takes, guarded (a call taking the other raises GuardError on the tape); an unknown op inside
    a branch is refused before anything runs, naming it."""
    cond = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["c"])]
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    m = model(cond + [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=_branch("then", "Relu"),
                                       else_branch=_branch("else", "Neg"))], initializers=[zero])
    prog = ad.from_onnx(m)
    assert [e.source for e in prog.tape.eqns if e.prim.name in ("guard", "relu", "negative")] == [
        "If (branch)", "Relu (then/Relu)"]
    with pytest.raises(GuardError, match=r"guard %3 True failed: the trace assumed True, this call gives False(.|\n)*at If \(branch\)"):
        prog.tape(-np.ones((2, 3), np.float32), prog.params["zero"])
    m = model(cond + [helper.make_node("If", ["c"], ["y"], then_branch=_branch("then", "Relu"),
                                       else_branch=_branch("else", "Frobnicate"))], initializers=[zero])
    refused(m, r"node 'else/Frobnicate': op 'Frobnicate' of domain 'ai.onnx' is not supported")


def _loop_body(op):
    """(i, cond, v) -> (cond, op(v)); the condition stays as it came in."""
    return helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node(op, ["v"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])


def test_loops_that_do_not_end_are_refused(monkeypatch):
    """A loop whose condition stays true, known at import or computed from the values, stops at
    MAX_UNROLL iterations, refused naming the node; a trip count computed from the values is
    read in this call (tests/onnx/importer/test_guards.py has the loops that end)."""
    monkeypatch.setattr(importer.control_flow, "MAX_UNROLL", 50)       # 16,384 by default: the test stays fast
    cond = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), helper.make_node("Greater", ["s", "zero"], ["c"])]
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    m = model(cond + [helper.make_node("Loop", ["", "c", "x"], ["y"], name="loop", body=_loop_body("Tanh"))],
              initializers=[zero])
    with pytest.raises(OnnxImportError, match=r"'loop' \(Loop.*more than 50 iterations"):
        ad.from_onnx(m).tape
    forever = numpy_helper.from_array(np.array(True), "true")
    m = model([helper.make_node("Loop", ["", "true", "x"], ["y"], name="loop", body=_loop_body("Tanh"))],
              initializers=[forever])
    with pytest.raises(OnnxImportError, match=r"'loop' \(Loop.*more than 50 iterations"):
        ad.from_onnx(m).tape
    trip = [helper.make_node("Cast", ["s"], ["m"], to=TensorProto.INT64)]
    m = model(cond[:1] + trip + [helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop", body=_loop_body("Tanh"))])
    with pytest.raises(OnnxImportError, match=r"'loop' \(Loop.*more than 50 iterations"):
        ad.from_onnx(m)(np.full((2, 3), 10, np.float32))
    assert [e.prim.name for e in ad.from_onnx(m).tape.eqns].count("tanh") == 6      # sum of ones: 6 times


def test_value_dependent_shapes_are_refused_unless_constant():
    """NonZero and Unique on values computed from the inputs: the output's shape is unknown."""
    for op in ("NonZero", "Unique"):
        m = model([helper.make_node(op, ["x"], ["y"], name="vals")])
        with pytest.raises(OnnxImportError, match=rf"'vals' \({op}.*shape depends on the values of its input"):
            ad.from_onnx(m).tape
    c = numpy_helper.from_array(np.array([[0, 2], [3, 0]], np.int32), "c")
    m = model([helper.make_node("NonZero", ["c"], ["nz"]),
               helper.make_node("Cast", ["nz"], ["f"], to=TensorProto.FLOAT),
               helper.make_node("ReduceSum", ["f"], ["s"], keepdims=0), helper.make_node("Add", ["x", "s"], ["y"])],
              initializers=[c], opset=11)
    assert len(ad.from_onnx(m).tape.eqns) == 1            # folded: x + 3 (the indices [[0, 1], [1, 0]] sum to 2)
    np.testing.assert_allclose(ad.from_onnx(m)(np.zeros((2, 3), np.float32)), np.full((2, 3), 2))


def test_resize_refusals():
    consts = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array([1, 1, 2, 2], dtype)))
              for name, dtype in (("scales", np.float32), ("sizes", np.int64))]
    four = (("x", [1, 1, 2, 2]),)
    for attrs, inputs, message in [
            ({"mode": "lanczos"}, ["x", "", "scales"], "mode='lanczos' is not supported"),
            ({"coordinate_transformation_mode": "diagonal"}, ["x", "", "scales"], "coordinate_transformation_mode"),
            ({}, ["x", "", "scales", "sizes"], "exactly one of scales and sizes"),
            ({"mode": "nearest", "nearest_mode": "up"}, ["x", "", "scales"], "nearest_mode='up'")]:
        m = model(consts + [helper.make_node("Resize", inputs, ["y"], name="rs", **attrs)], inputs=four)
        with pytest.raises(OnnxImportError, match=rf"'rs' \(Resize.*{message}"):
            ad.from_onnx(m).tape
    computed = [helper.make_node("ReduceMax", ["x"], ["top"], keepdims=0),
                helper.make_node("Mul", ["scales", "top"], ["s"]),
                helper.make_node("Resize", ["x", "", "s"], ["y"], name="rs")]
    prog = ad.from_onnx(model(consts + computed, inputs=four))
    assert prog.tape.outputs[0].aval.shape == (1, 1, 4, 4)        # read while tracing, guarded
    with pytest.raises(OnnxImportError, match=r"'rs' \(Resize.*its scales is read while tracing .* cannot be "
                                              "differentiated: differentiate with respect to the other inputs"):
        ad.grad(lambda x: np.sum(prog(x)))(np.ones((1, 1, 2, 2), np.float32))


def test_cycle_is_refused():
    m = model([helper.make_node("Relu", ["b"], ["a"], name="first"),
               helper.make_node("Relu", ["a"], ["b"], name="second"),
               helper.make_node("Add", ["x", "a"], ["y"], name="out")])
    refused(m, "cycle through")


def test_undefined_value_and_double_definition():
    refused(model([helper.make_node("Add", ["x", "ghost"], ["y"], name="a")]), "reads 'ghost'")
    refused(model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["y"])]),
            "defined twice")


def test_dynamic_shape_is_fixed_by_inputs_or_the_first_call():
    """A symbolic dimension: ``prog.tape`` needs ``inputs=`` or a call first; a call whose shape
    disagrees with a static dimension is refused, naming the input."""
    m = model([helper.make_node("Relu", ["x"], ["y"])], inputs=(("x", ["batch", 3]),))
    with pytest.raises(OnnxImportError, match=r"dynamic shape \['batch', 3\]: pass inputs= \(arrays or shapes\) "
                                              "or call the program once"):
        ad.from_onnx(m).tape
    assert ad.from_onnx(m, inputs=[(4, 3)]).tape.inputs[0].aval.shape == (4, 3)
    prog = ad.from_onnx(m)
    assert prog(-np.ones((5, 3), np.float32)).shape == (5, 3) and prog(np.ones((2, 3), np.float32)).shape == (2, 3)
    assert prog.tape.inputs[0].aval.shape == (5, 3)       # the first call's
    with pytest.raises(OnnxImportError, match=r"the call gives graph input 'x' the shape \(2, 4\); the model "
                                              r"declares \('batch', 3\)"):
        prog(np.ones((2, 4), np.float32))


def test_data_dependent_shape_is_read_while_tracing():
    """Reshape to a shape computed from input values (not from its shape): the shape is this
    call's, guarded; an impossible one is refused naming the node."""
    m = model([helper.make_node("Cast", ["x"], ["s"], to=TensorProto.INT64),
               helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")], inputs=(("x", [2]),))
    tape = ad.from_onnx(m, inputs=[np.array([2, 1], np.float32)]).tape
    assert tape.outputs[0].aval.shape == (2, 1) and "guard" in str(tape)
    with pytest.raises(GuardError):
        tape(np.array([1, 2], np.float32))
    with pytest.raises(OnnxImportError, match=r"'rs' \(Reshape.*cannot reshape array of size 2 into shape \(1,1\)"):
        ad.from_onnx(m).tape


def test_absurd_sizes():
    refused(model([helper.make_node("Relu", ["x"], ["y"])], inputs=(("x", [1 << 20, 1 << 20]),)), "refused")
    shape = numpy_helper.from_array(np.array([1 << 30, 1 << 30], np.int64), "s")
    m = model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="big"),
               helper.make_node("Add", ["x", "c"], ["y"])], initializers=[shape])
    with pytest.raises(OnnxImportError, match="'big'.*refused"):
        ad.from_onnx(m).tape
    w = raw_tensor("w", [1 << 40], b"")
    refused(model([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[w]), "refused")


def test_raw_data_of_the_wrong_size():
    w = raw_tensor("w", [3], b"\0" * 8)
    refused(model([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[w]), "raw_data holds 8 bytes")


def test_malformed_protobuf(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"\x0a\xff\xff\xff\xff garbage")
    refused(str(path), "not a valid ONNX protobuf")
    refused(b"", "has no graph")


def test_unsupported_dtype():
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    refused(helper.make_model(graph), "element type STRING is not supported")


def _external_model(tmp_path, location):
    w = numpy_helper.from_array(np.ones(3, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    m = model([helper.make_node("Add", ["x", "w"], ["y"])], inputs=(("x", [3]),), initializers=[w])
    path = tmp_path / "model" / "m.onnx"
    path.parent.mkdir()
    path.write_bytes(m.SerializeToString())
    return path


def test_external_data_outside_the_folder(tmp_path):
    (tmp_path / "secret.bin").write_bytes(np.ones(3, np.float32).tobytes())
    refused(_external_model(tmp_path, "../secret.bin"), "outside the model's folder")
    (tmp_path / "b").mkdir()
    refused(_external_model(tmp_path / "b", "/etc/passwd"), "outside the model's folder")


def test_external_data_inside_the_folder_is_read(tmp_path):
    path = _external_model(tmp_path, "w.bin")
    (path.parent / "w.bin").write_bytes(np.full(3, 2, np.float32).tobytes())
    prog = ad.from_onnx(path)
    assert np.array_equal(prog(np.ones(3, np.float32)), np.full(3, 3, np.float32))
    (path.parent / "w.bin").write_bytes(b"\0" * 4)
    refused(path, "does not fit")


def test_external_data_on_a_model_without_path(tmp_path):
    path = _external_model(tmp_path, "w.bin")
    refused(onnx.load(str(path), load_external_data=False), "external data was not loaded")


def test_training_dropout_and_missing_opset():
    m = model([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="d")],
              initializers=[numpy_helper.from_array(np.array(0.5, np.float32), "r"),
                            numpy_helper.from_array(np.array(True), "t")])
    with pytest.raises(OnnxImportError, match="training-mode Dropout"):
        ad.from_onnx(m).tape
    m = model([helper.make_node("Relu", ["x"], ["y"])])
    del m.opset_import[:]
    refused(m, "imports no default")


def test_loading_runs_nothing_from_the_file():
    """A model-local function is not expanded or run: the node naming it is an unknown op."""
    fn = helper.make_function("local", "Evil", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                              [helper.make_operatorsetid("", 18)])
    graph = helper.make_graph([helper.make_node("Evil", ["x"], ["y"], name="e", domain="local")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(graph, functions=[fn], opset_imports=[helper.make_operatorsetid("", 18),
                                                                helper.make_operatorsetid("local", 1)])
    refused(m, "model-local functions are not expanded")


def test_inputs_must_match_the_declared_static_dims():
    """A shape (or an array) for a static dimension other than the model's is refused, naming
    the input, the declared and the given shape; symbolic dimensions may be chosen."""
    m = model([helper.make_node("Relu", ["x"], ["y"])], inputs=(("x", ["batch", 3]),))
    refused(m, r"inputs= gives graph input 'x' the shape \(4, 5\); the model declares \('batch', 3\)",
            inputs=[(4, 5)])
    refused(m, r"the shape \(4, 3, 1\); the model declares \('batch', 3\)", inputs={"x": (4, 3, 1)})
    refused(m, r"the shape \(2, 2\); the model declares", inputs=[np.ones((2, 2))])
    assert ad.from_onnx(m, inputs={"x": (7, 3)}).inputs[0].shape == (7, 3)


def test_scan_and_loop_shapes_that_cannot_be_unrolled():
    """Scan inputs of different lengths; a Loop that runs no iteration yet has scan outputs."""
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["s"])], "body",
        [helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in "ab"],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, None)])
    m = model([helper.make_node("Transpose", ["x"], ["xt"]),
               helper.make_node("Scan", ["x", "xt"], ["y"], name="scan", body=body, num_scan_inputs=2)])
    with pytest.raises(OnnxImportError, match=r"'scan' \(Scan.*different lengths \[2, 3\]"):
        ad.from_onnx(m).tape
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Neg", ["v"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)])
    m = model([helper.make_node("Loop", ["zero", "", "x"], ["y"], name="loop", body=loop_body)],
              initializers=[zero])
    np.testing.assert_array_equal(ad.from_onnx(m)(np.ones((2, 3), np.float32)), np.ones((2, 3)))   # no scan output
    loop_body.output.append(helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None))
    m = model([helper.make_node("Loop", ["zero", "", "x"], ["y", "ys"], name="loop", body=loop_body)],
              outputs=("y", "ys"), initializers=[zero])
    with pytest.raises(OnnxImportError, match=r"'loop' \(Loop.*no iteration ran"):
        ad.from_onnx(m).tape


def test_resize_interpolating_integers_is_refused():
    scales = helper.make_node("Constant", [], ["scales"], value=numpy_helper.from_array(np.array([1, 2], np.float32)))
    m = model([scales, helper.make_node("Cast", ["x"], ["xi"], to=TensorProto.INT32),
               helper.make_node("Resize", ["xi", "", "scales"], ["yi"], name="rs", mode="linear"),
               helper.make_node("Cast", ["yi"], ["y"], to=TensorProto.FLOAT)])
    with pytest.raises(OnnxImportError, match=r"'rs' \(Resize.*mode='linear' on integers"):
        ad.from_onnx(m).tape
