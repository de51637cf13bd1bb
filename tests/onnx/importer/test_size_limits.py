"""Size bombs: a small model whose node asks for an enormous output (or an initializer that
declares an enormous size) is refused with an OnnxImportError naming the node, its op and the
size, before anything of that size is allocated (tracemalloc, which sees numpy's allocations,
measures the peak; how fast it is refused is bench/bench_onnx_import.py's, 1-5 ms). The limit is 2**31 elements and 8 GiB by default;
``max_elements=`` moves it. Cost: < 1 s."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.onnx.importer import MAX_ELEMENTS, OnnxImportError  # noqa: E402

BIG = 1 << 20


def model(nodes, inputs=(("x", [2, 3]),), initializers=(), opset=20):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def floats(name, values):
    return numpy_helper.from_array(np.array(values, np.float32), name)


def bomb(op, inputs, initializers=(), graph_inputs=(("x", [2, 3]),), opset=20, **attrs):
    """A model whose node ``bomb`` (op ``op``) makes the huge output ``y``."""
    return model([helper.make_node(op, inputs, ["y"], name="bomb", **attrs)], graph_inputs, initializers, opset)


BOMBS = {
    "ConstantOfShape": bomb("ConstantOfShape", ["s"], [ints("s", [BIG, BIG])]),
    "Expand": bomb("Expand", ["x", "s"], [ints("s", [BIG * BIG, 2, 3])]),
    "Tile": bomb("Tile", ["x", "r"], [ints("r", [BIG, BIG])]),
    "Resize": bomb("Resize", ["x", "", "scales"], [floats("scales", [1e5, 1e5])]),
    "Range": bomb("Range", ["a", "b", "c"], [floats("a", 0), floats("b", 1e13), floats("c", 1)]),
    "Pad": bomb("Pad", ["x", "p"], [ints("p", [0, BIG * BIG, 0, 0])]),
    "OneHot": bomb("OneHot", ["i", "d", "v"], [ints("i", [0, 1]), ints("d", BIG * BIG), floats("v", [0, 1])]),
    "Add": bomb("Add", ["x", "z"], graph_inputs=(("x", [1 << 17, 1]), ("z", [1, 1 << 17]))),
    "MatMul": bomb("MatMul", ["x", "z"], graph_inputs=(("x", [1 << 17, 1]), ("z", [1, 1 << 17]))),
    "ConvTranspose": bomb("ConvTranspose", ["x", "w"], [floats("w", np.ones((1, 1, 2, 2)))],
                          graph_inputs=(("x", [1, 1, 2, 2]),), strides=[BIG, BIG]),
    "Conv": bomb("Conv", ["x", "w"], [floats("w", np.ones((1, 1, 2, 2)))], graph_inputs=(("x", [1, 1, 2, 2]),),
                 pads=[BIG, BIG, BIG, BIG]),
    "MaxPool": bomb("MaxPool", ["x"], graph_inputs=(("x", [1, 1, 2, 2]),), kernel_shape=[1, 1],
                    pads=[BIG, BIG, BIG, BIG]),
    "HannWindow": bomb("HannWindow", ["n"], [ints("n", BIG * BIG)]),
    "DFT": bomb("DFT", ["x", "n"], [ints("n", BIG * BIG)], graph_inputs=(("x", [2, 3, 1]),)),
    "CenterCropPad": bomb("CenterCropPad", ["x", "s"], [ints("s", [BIG, BIG])]),
    "MaxUnpool": bomb("MaxUnpool", ["x", "i", "s"], [ints("i", np.zeros((1, 1, 1, 1))), ints("s", [1, 1, BIG, BIG])],
                      graph_inputs=(("x", [1, 1, 1, 1]),), kernel_shape=[1, 1]),
}


@pytest.mark.parametrize("op", sorted(BOMBS))
def test_a_bomb_is_refused_naming_node_op_and_size_without_allocating_it(op):
    tracemalloc.start()
    try:
        with pytest.raises(OnnxImportError, match=rf"node 'bomb' \({op},.*is refused: [\d,]+ elements .*"
                                                  r"over the limit of 2,147,483,648 elements and 8 GiB"):
            ad.from_onnx(BOMBS[op]).tape
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20, peak          # the inputs (1 MiB for Add's) and the tracer's bookkeeping


def test_the_byte_limit_counts_the_dtype():
    """2**30 + 1 float64s are under 2**31 elements but over 8 GiB."""
    value = numpy_helper.from_array(np.zeros(1, np.float64), "value")
    m = model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="bomb", value=value)], (),
              [ints("s", [(1 << 30) + 1])])
    with pytest.raises(OnnxImportError, match=r"1,073,741,825 elements \(8 GiB of float64\)"):
        ad.from_onnx(m).tape


def test_declared_initializer_sizes_are_checked_against_their_data():
    empty = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[BIG, BIG])
    empty.raw_data = b""
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[BIG])
    short.float_data.extend([1.0, 2.0, 3.0])
    for tensor, message in [(empty, r"initializer 'w': shape \(1048576, 1048576\) is refused"),
                            (short, r"initializer 'w': float_data holds 3 values for shape \(1048576,\)")]:
        with pytest.raises(OnnxImportError, match=message):
            ad.from_onnx(model([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[tensor]))


def test_graph_inputs_are_checked_before_they_are_made():
    with pytest.raises(OnnxImportError, match=r"graph input 'x': shape \(1048576, 1048576\) is refused"):
        ad.from_onnx(model([helper.make_node("Relu", ["x"], ["y"])], inputs=(("x", [BIG, BIG]),)))


def test_max_elements_moves_the_limit():
    m = bomb("ConstantOfShape", ["s"], [ints("s", [30, 40])])
    with pytest.raises(OnnxImportError, match=r"node 'bomb' \(ConstantOfShape.*1,200 elements .*over the limit "
                                              r"of 1,000 elements and 3.906 KiB"):
        ad.from_onnx(m, max_elements=1000).tape
    assert ad.from_onnx(m)(np.ones((2, 3), np.float32)).shape == (30, 40)
    assert ad.from_onnx(m, max_elements=1200)(np.ones((2, 3), np.float32)).shape == (30, 40)
    assert MAX_ELEMENTS == 1 << 31
