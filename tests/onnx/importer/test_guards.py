"""Values decided at the call (docs/onnx_import.md): an integer operand given as a graph input
(a shape, axes, pads, repeats, split sizes, k, a trip count) is read while tracing and recorded
as a guard, so ``ad.grad`` traces once per value and re-traces for another; integer tensors that
are data (Gather's, ScatterElements' indices) stay data; a symbolic dimension is fixed by each
call; If, Loop and Scan whose path depends on the values take this call's path, guarded.
onnxruntime is the oracle of the forward, central differences of the gradient, torch of the
models it exports. Cost: ~5 s (torch's import is half of it)."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
ort = optional_module("onnxruntime")
torch = optional_module("torch")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.errors import GuardError  # noqa: E402

F64, I64, BOOL = TensorProto.DOUBLE, TensorProto.INT64, TensorProto.BOOL
ELEM = {F64: np.float64, I64: np.int64, BOOL: np.bool_}


def make(nodes, inputs, outputs, opset, inits=()):
    """A model of ``nodes``; ``inputs``/``outputs``: (name, element type, shape or None)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs], list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", opset)])


def onnxruntime(model, args):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip([i.name for i in model.graph.input], args)))


def weights(shape):
    """A fixed cotangent for an output of ``shape``, the same in the traced loss and in numpy."""
    return np.cos(np.arange(int(np.prod(shape)))).reshape(shape)


def loss_of(prog, floats):
    """A scalar of the program's float outputs (the ``floats`` positions), a function of the
    inputs and the parameters."""
    def loss(*args):
        outs = prog.function(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum(np.sum(outs[i] * weights(np.shape(outs[i]))) for i in floats)
    return loss


def central_differences(f, args, i, eps=1e-6):
    x = np.array(args[i], dtype=np.float64)
    g = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[j] += eps
        lo[j] -= eps
        g[j] = (f(*args[:i], hi, *args[i + 1:]) - f(*args[:i], lo, *args[i + 1:])) / (2 * eps)
    return g


def guards(tape) -> dict:
    """The guards of a tape: {variable or its tape input position: the values they assume}."""
    at = {v: i for i, v in enumerate(tape.inputs)}
    out = {}
    for e in tape.eqns:
        if e.prim.name == "guard":
            out.setdefault(at.get(e.inputs[0], e.inputs[0]), []).append(e.inputs[1].value)
    return out


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def x_(shape):
    return np.random.default_rng(len(shape)).normal(size=shape)


# op, attributes, opset, [(input name, element type, its two values)], float outputs, int outputs,
# data: the integer inputs that stay data (no guard, one trace for both values)
OPS = {
    "Reshape": ({}, 14, [("x", F64, [x_((2, 3, 4))] * 2), ("shape", I64, ([4, -1, 2], [0, 4, -1]))], 1, 0, ()),
    "Squeeze": ({}, 13, [("x", F64, [x_((1, 3, 1, 2))] * 2), ("axes", I64, ([0], [-2]))], 1, 0, ()),
    "Unsqueeze": ({}, 13, [("x", F64, [x_((3, 2))] * 2), ("axes", I64, ([0, 3], [-1, 1]))], 1, 0, ()),
    "Slice": ({}, 13, [("x", F64, [x_((4, 5))] * 2), ("starts", I64, ([0, 1], [3, 0])),
                       ("ends", I64, ([3, 5], [0, 9])), ("axes", I64, ([0, 1], [1, 0])),
                       ("steps", I64, ([1, 2], [-1, 2]))], 1, 0, ()),
    "Expand": ({}, 13, [("x", F64, [x_((3, 1))] * 2), ("shape", I64, ([3, 4], [1, 5]))], 1, 0, ()),
    "Tile": ({}, 13, [("x", F64, [x_((2, 3))] * 2), ("repeats", I64, ([2, 1], [1, 3]))], 1, 0, ()),
    "Pad": ({}, 18, [("x", F64, [x_((3, 4))] * 2), ("pads", I64, ([1, 0, 0, 2], [0, -1, 2, 1])),
                     ("value", F64, (np.array(0.5), np.array(-2.0)))], 1, 0, ()),
    "ReduceSum": ({"keepdims": 1}, 13, [("x", F64, [x_((2, 3, 4))] * 2), ("axes", I64, ([1], [-1]))], 1, 0, ()),
    "ReduceMean": ({"keepdims": 0}, 18, [("x", F64, [x_((2, 3, 4))] * 2), ("axes", I64, ([0, 2], [1, 2]))], 1, 0, ()),
    "ReduceMax": ({"keepdims": 1}, 18, [("x", F64, [x_((2, 3, 4))] * 2), ("axes", I64, ([1], [0]))], 1, 0, ()),
    "Split": ({"axis": 0}, 18, [("x", F64, [x_((6, 2))] * 2), ("split", I64, ([2, 4], [5, 1]))], 2, 0, ()),
    "TopK": ({"axis": 1}, 11, [("x", F64, [x_((3, 5))] * 2), ("k", I64, ([2], [4]))], 1, 1, ()),
    "ScatterElements": ({"axis": 0}, 18, [("x", F64, [x_((3, 3))] * 2),
                                          ("indices", I64, ([[1, 0, 2], [0, 2, 1]], [[2, 1, 0], [1, 0, 2]])),
                                          ("updates", F64, [x_((2, 3)) + 5] * 2)], 1, 0, ("indices",)),
    "Gather": ({"axis": 0}, 13, [("x", F64, [x_((5, 3))] * 2), ("indices", I64, ([4, 0], [1, 1]))], 1, 0, ("indices",)),
}


def single_op(op):
    attrs, opset, inputs, n_float, n_int, _ = OPS[op]
    outputs = [(f"y{i}", F64, None) for i in range(n_float)] + [(f"i{i}", I64, None) for i in range(n_int)]
    node = helper.make_node(op, [name for name, _, _ in inputs], [o[0] for o in outputs], name=f"/block/{op}", **attrs)
    values = [[np.asarray(v, ELEM[elem]) for v in both] for _, elem, both in inputs]
    model = make([node], [(name, elem, np.shape(v[0])) for (name, elem, _), v in zip(inputs, values)], outputs, opset)
    return model, list(zip(*values)), n_float


@pytest.mark.parametrize("op", OPS)
def test_integer_operands_given_as_inputs_are_guarded(op):
    """Forward equal to onnxruntime for two values of the integer operands; the gradient with
    respect to every float input equal to central differences for both, through one ``ad.grad``
    that traced once per value (once in all for data); the tape shows the guards."""
    model, (first, second), n_float = single_op(op)
    names = [i.name for i in model.graph.input]
    data = OPS[op][-1]
    prog = ad.from_onnx(model, inputs=list(first))
    floats = tuple(i for i, x in enumerate(first) if x.dtype == np.float64)
    loss = loss_of(prog, range(n_float))
    grad = ad.grad(lambda *args: loss(*args, {}), argnums=floats)
    for args in (first, second):
        got = prog(*args)
        for g, want in zip(got if isinstance(got, tuple) else (got,), onnxruntime(model, args)):
            np.testing.assert_array_equal(np.shape(g), np.shape(want))
            np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
        grads = grad(*args)
        for i, g in zip(floats, grads):
            np.testing.assert_allclose(g, central_differences(lambda *a: loss(*a, {}), args, i), rtol=1e-6,
                                       atol=1e-8, err_msg=names[i])
    assert grad.cache_info().traces == (1 if data else 2)
    assumed = guards(prog.tape)
    for i, name in enumerate(names):
        if first[i].dtype == np.int64:
            assert (i in assumed) == (name not in data), (name, assumed)
            if name not in data:
                np.testing.assert_array_equal(assumed[i][0], first[i])
    if not data:
        with pytest.raises(GuardError, match=rf"guard %\d+ .* failed(.|\n)*at {op} \(/block/{op}\)"):
            prog.tape(*second)


def test_the_listing_shows_the_guard():
    model, (first, _), _ = single_op("Reshape")
    tape = ad.from_onnx(model, inputs=list(first)).tape
    assert "%2:bool[] = guard %1 [ 4,-1, 2]" in str(tape)
    assert tape.outputs[0].aval.shape == (4, 3, 2)


def test_constant_of_shape_and_range_counts():
    """ConstantOfShape's shape and Range's limit as integer inputs (guarded: Range's count, not
    its limit); a float Range whose start and delta are differentiated (its values are data)."""
    fill = helper.make_tensor("v", F64, [1], [1.5])
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["c"], value=fill),
             helper.make_node("Range", ["zero", "n", "one"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=F64),
             helper.make_node("Add", ["x", "c"], ["y0"]), helper.make_node("Mul", ["x", "rf"], ["y1"]),
             helper.make_node("Range", ["start", "limit", "delta"], ["y2"])]
    inputs = [("x", F64, [1]), ("shape", I64, [2]), ("n", I64, []), ("start", F64, []), ("limit", F64, []),
              ("delta", F64, [])]
    model = make(nodes, inputs, [(f"y{i}", F64, None) for i in range(3)], 11,
                 [const("zero", np.int64(0)), const("one", np.int64(1))])
    f = np.float64
    calls = [(np.array([0.7]), np.array([2, 3]), np.array(4), f(0.5), f(2.0), f(0.4)),
             (np.array([-1.2]), np.array([4, 1]), np.array(6), f(-1.0), f(2.0), f(0.7))]
    calls = [tuple(np.asarray(a) for a in args) for args in calls]
    prog = ad.from_onnx(model, inputs=list(calls[0]))
    loss = loss_of(prog, range(3))
    grad = ad.grad(lambda *args: loss(*args, {}), argnums=(0, 3, 5))
    for args in calls:
        for got, want in zip(prog(*args), onnxruntime(model, args)):
            np.testing.assert_allclose(got, want, rtol=1e-12)
        for i, g in zip((0, 3, 5), grad(*args)):
            np.testing.assert_allclose(g, central_differences(lambda *a: loss(*a, {}), args, i), rtol=1e-6)
    assert grad.cache_info().traces == 2
    assumed = guards(prog.tape)
    np.testing.assert_array_equal(assumed.pop(1), [[2, 3]])               # the shape, itself
    assert sorted(int(v) for vs in assumed.values() for v in vs) == [0, 4, 4]   # delta == 0 False, two counts


# -- symbolic dimensions ------------------------------------------------------------------------

def test_symbolic_dimensions_are_fixed_by_each_call():
    """One OnnxProgram without ``inputs=`` serves two batch sizes; ``ad.grad`` keeps a tape per
    shape; ``prog.tape`` is traced on the first call's inputs."""
    w = np.random.default_rng(0).normal(size=(3, 2))
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
             helper.make_node("Concat", ["batch", "minus_one"], ["target"], axis=0),
             helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Reshape", ["t", "target"], ["y"])]
    model = make(nodes, [("x", F64, ["batch", "seq", 3])], [("y", F64, ["batch", None])], 14,
                 [const("w", w), const("zero", np.array([0])), const("minus_one", np.array([-1]))])
    prog = ad.from_onnx(model)
    loss = loss_of(prog, (0,))
    grad = ad.grad(loss, argnums=(0, 1))
    for shape in ((2, 5, 3), (4, 1, 3)):
        x = x_(shape)
        np.testing.assert_allclose(prog(x), onnxruntime(model, [x])[0], rtol=1e-12)
        gx, gp = grad(x, prog.params)
        np.testing.assert_allclose(gx, central_differences(loss, (x, prog.params), 0), rtol=1e-6)
        np.testing.assert_allclose(gp["w"], central_differences(lambda x, w: loss(x, {"w": w}), (x, w), 1), rtol=1e-6)
    assert grad.cache_info().traces == 2 and not guards(prog.tape)      # shapes are keyed, not guarded
    assert prog.tape.inputs[0].aval.shape == (2, 5, 3)


# -- control flow on the values -----------------------------------------------------------------

def graph(nodes, name, inputs, outputs):
    return helper.make_graph(nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
                             [helper.make_tensor_value_info(*o) for o in outputs])


def scalar(name, value, dtype=np.float64):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype)))


def check_calls(model, calls, argnums, traces):
    """Each call's forward equals onnxruntime and its gradient (with respect to the inputs
    ``argnums`` and the parameters) central differences, through one OnnxProgram and one
    ``ad.grad``, which traced ``traces`` times; returns the program."""
    prog = ad.from_onnx(model)
    loss = loss_of(prog, range(len(model.graph.output)))
    params = prog.params
    grad = ad.grad(loss, argnums=(*argnums, len(calls[0])))
    for args in calls:
        got = prog(*args)
        for g, want in zip(got if isinstance(got, tuple) else (got,), onnxruntime(model, args)):
            np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
        *gx, gp = grad(*args, params)
        for i, g in zip(argnums, gx):
            np.testing.assert_allclose(g, central_differences(loss, (*args, params), i), rtol=1e-6, atol=1e-9)
        for name, p in params.items():
            def of_p(value, name=name):
                return loss(*args, {**params, name: value})
            np.testing.assert_allclose(gp[name], central_differences(of_p, (p,), 0), rtol=1e-6, atol=1e-9)
    assert grad.cache_info().traces == traces, grad.cache_info()
    return prog


def test_if_on_the_values_takes_this_calls_branch():
    """A condition computed from x: each call inlines the branch it takes (both read the outer
    graph's x and w); a call of the same shape taking the other branch breaks the guard and
    re-traces; one of the branch already traced does not."""
    then_branch = graph([helper.make_node("Mul", ["x", "w"], ["xw"]), helper.make_node("Tanh", ["xw"], ["t"])],
                        "then", [], [("t", F64, None)])
    else_branch = graph([helper.make_node("Neg", ["x"], ["nx"]), helper.make_node("Exp", ["x"], ["ex"]),
                         helper.make_node("Mul", ["nx", "ex"], ["e"])], "else", [], [("e", F64, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0), scalar("zero", 0.0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], name="/pick/If", then_branch=then_branch, else_branch=else_branch)]
    model = make(nodes, [("x", F64, ["n"])], [("y", F64, None)], 17, [const("w", np.array([0.8]))])
    up, down = np.array([0.3, -0.1, 0.9]), np.array([0.4, -1.2, 0.1])
    prog = check_calls(model, [(up,), (np.linspace(-1, 0.5, 5),), (down,), (up,)], (0,), traces=3)
    assert {e.source for e in prog.tape.eqns if e.prim.name == "guard"} == {"If (/pick/If)"}
    assert "tanh" in {e.prim.name for e in prog.tape.eqns}          # the first call's branch


def loop_model():
    """Loop 1 runs floor(sum |x|) times (a trip count computed from x), v = tanh(v @ w) + x, its
    scan output stacking every v; loop 2 runs while sum(u^2) < 20 (a condition computed in its
    body), u = 1.5 u, then an If on the sign of sum(u) adds or subtracts 0.1 x (names of the
    main graph and of the loop body), counting its iterations."""
    body1 = graph([helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("MatMul", ["v", "w"], ["vw"]),
                   helper.make_node("Tanh", ["vw"], ["t"]), helper.make_node("Add", ["t", "x"], ["v_out"]),
                   helper.make_node("Identity", ["v_out"], ["v_scan"])],
                  "body1", [("i", I64, []), ("c", BOOL, []), ("v", F64, None)],
                  [("c_out", BOOL, []), ("v_out", F64, None), ("v_scan", F64, None)])
    plus = graph([helper.make_node("Add", ["grown", "sx"], ["p"])], "plus", [], [("p", F64, None)])
    minus = graph([helper.make_node("Sub", ["grown", "sx"], ["m"])], "minus", [], [("m", F64, None)])
    body2 = graph([scalar("growth", 1.5), helper.make_node("Mul", ["u", "growth"], ["grown"]),
                   helper.make_node("ReduceSum", ["grown"], ["gs"], keepdims=0),
                   helper.make_node("Greater", ["gs", "zero"], ["positive"]),
                   helper.make_node("If", ["positive"], ["u_out"], name="/grow/sign/If", then_branch=plus,
                                    else_branch=minus),
                   helper.make_node("Mul", ["u_out", "u_out"], ["sq"]),
                   helper.make_node("ReduceSum", ["sq"], ["ss"], keepdims=0),
                   helper.make_node("Less", ["ss", "limit"], ["c_out"]),
                   helper.make_node("Add", ["k", "one"], ["k_out"])],
                  "body2", [("i", I64, []), ("c", BOOL, []), ("u", F64, None), ("k", I64, [])],
                  [("c_out", BOOL, []), ("u_out", F64, None), ("k_out", I64, [])])
    nodes = [scalar("zero", 0.0), scalar("limit", 20.0), scalar("tenth", 0.1), scalar("one", 1, np.int64),
             scalar("none", 0, np.int64), helper.make_node("Mul", ["x", "tenth"], ["sx"]),
             helper.make_node("Abs", ["x"], ["ax"]), helper.make_node("ReduceSum", ["ax"], ["sa"], keepdims=0),
             helper.make_node("Floor", ["sa"], ["fa"]), helper.make_node("Cast", ["fa"], ["m"], to=I64),
             helper.make_node("Loop", ["m", "", "x"], ["last", "all"], name="/steps/Loop", body=body1),
             helper.make_node("Mul", ["x", "x"], ["x2"]), helper.make_node("ReduceSum", ["x2"], ["s2"], keepdims=0),
             helper.make_node("Less", ["s2", "limit"], ["go"]),
             helper.make_node("Loop", ["", "go", "x", "none"], ["grown_x", "count"], name="/grow/Loop", body=body2)]
    w = np.random.default_rng(5).normal(size=(3, 3)) * 0.5
    return make(nodes, [("x", F64, [3])], [("last", F64, None), ("all", F64, None), ("grown_x", F64, None),
                                           ("count", I64, None)], 17, [const("w", w)])


def test_loop_with_a_computed_trip_count_and_a_data_dependent_condition():
    """Two inputs with different trip counts (1 and 3) and numbers of while-iterations (each
    traced once, then re-traced when the guards break); the tape guards the trip count and
    every condition."""
    model = loop_model()
    calls = [(np.array([0.3, -0.4, 0.9]),), (np.array([1.2, -0.7, 1.5]),)]
    counts = [onnxruntime(model, args)[3] for args in calls]
    assert [np.shape(onnxruntime(model, args)[1])[0] for args in calls] == [1, 3] and counts[0] != counts[1]
    check_calls(model, calls, (0,), traces=2)
    tape = ad.from_onnx(model, inputs=calls[0]).tape
    assumed = [(e.source, e.inputs[1].value) for e in tape.eqns if e.prim.name == "guard"]
    n = int(counts[0])
    assert assumed[0] == ("Loop (/steps/Loop)", 1)                  # the trip count
    assert [v for s, v in assumed if s == "Loop (/grow/Loop)"] == [True] * n + [False]   # each condition
    assert len([v for s, v in assumed if s == "If (/grow/sign/If)"]) == n and len(assumed) == 2 * n + 2


def test_scan_with_a_data_dependent_branch_over_sequences_of_two_lengths():
    """Scan over a symbolic sequence length, its body an If on the sign of each row (reading the
    main graph's w and the body's h and row): sequences of lengths 4 and 6 through one
    OnnxProgram, and a third of length 4 whose signs differ re-traces."""
    then_branch = graph([helper.make_node("Mul", ["row", "w"], ["rw"]), helper.make_node("Add", ["h", "rw"], ["a"])],
                        "then", [], [("a", F64, None)])
    else_branch = graph([helper.make_node("Mul", ["h", "half"], ["hh"]), helper.make_node("Sub", ["hh", "row"], ["b"])],
                        "else", [], [("b", F64, None)])
    body = graph([helper.make_node("ReduceSum", ["row"], ["s"], keepdims=0),
                  helper.make_node("Greater", ["s", "zero"], ["c"]),
                  helper.make_node("If", ["c"], ["h_out"], name="/cell/If", then_branch=then_branch,
                                   else_branch=else_branch),
                  helper.make_node("Tanh", ["h_out"], ["y"])],
                 "body", [("h", F64, [3]), ("row", F64, [3])], [("h_out", F64, [3]), ("y", F64, [3])])
    nodes = [scalar("zero", 0.0), scalar("half", 0.5),
             helper.make_node("Constant", [], ["h0"], value=numpy_helper.from_array(np.zeros(3))),
             helper.make_node("Scan", ["h0", "x"], ["h_last", "ys"], name="/rnn/Scan", body=body, num_scan_inputs=1)]
    model = make(nodes, [("x", F64, ["seq", 3])], [("h_last", F64, None), ("ys", F64, None)], 17,
                 [const("w", np.array([0.5, -1.0, 2.0]))])
    x4, x6 = x_((4, 3)), np.random.default_rng(9).normal(size=(6, 3))
    flipped = x4 * np.array([[-1], [1], [1], [-1]])
    prog = check_calls(model, [(x4,), (x6,), (flipped,)], (0,), traces=3)
    assert [e.source for e in prog.tape.eqns if e.prim.name == "guard"] == ["If (/cell/If)"] * 4


# -- models PyTorch exports ---------------------------------------------------------------------

def export(module, x, **kw) -> bytes:
    """ONNX bytes of ``module`` (TorchScript exporter, opset 17, float64, no constant folding)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buf, dynamo=False, input_names=["x"], output_names=["y"],
                          do_constant_folding=False, opset_version=17, **kw)
    return buf.getvalue()


def against_torch(module, data, xs, traces):
    """Forward and gradients (input and every weight) of the imported ``data`` equal torch's on
    each input, through one OnnxProgram and one ``ad.grad`` that traced ``traces`` times."""
    prog = ad.from_onnx(data)
    grad = ad.grad(lambda x, params, cot: np.sum(prog.function(x, params) * cot), argnums=(0, 1))
    for x in xs:
        xt = torch.from_numpy(x).requires_grad_(True)
        module.zero_grad()
        y = module(xt)
        cot = weights(tuple(y.shape))
        (y * torch.from_numpy(cot)).sum().backward()
        np.testing.assert_allclose(prog(x), y.detach().numpy(), rtol=1e-10, atol=1e-12)
        gx, gp = grad(x, prog.params, cot)
        np.testing.assert_allclose(gx, xt.grad.numpy(), rtol=1e-9, atol=1e-12)
        for name, p in module.named_parameters():
            want = np.zeros(p.shape) if p.grad is None else p.grad.numpy()     # a branch not taken
            np.testing.assert_allclose(gp[name], want, rtol=1e-9, atol=1e-12, err_msg=name)
    assert grad.cache_info().traces == traces, grad.cache_info()
    return prog


class Tagger(torch.nn.Module):
    """A sequence tagger whose shapes the exporter writes as Shape -> Gather -> Concat ->
    Reshape on a batch and a sequence length it declares symbolic."""

    def __init__(self):
        super().__init__()
        self.embed, self.gru, self.out = torch.nn.Linear(3, 4), torch.nn.GRU(4, 5, batch_first=True), torch.nn.Linear(5, 2)

    def forward(self, x):
        b, t = x.shape[0], x.shape[1]
        h = self.gru(torch.tanh(self.embed(x)))[0]
        return torch.softmax(self.out(h.reshape(b * t, 5)), -1).reshape(b, t, 2)


def test_torch_model_with_dynamic_batch_and_sequence_length():
    torch.manual_seed(0)
    module = Tagger().double().eval()
    data = export(module, torch.randn(2, 5, 3, dtype=torch.float64),
                  dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
    dims = [d.dim_param for d in onnx.load_from_string(data).graph.input[0].type.tensor_type.shape.dim]
    assert dims[:2] == ["batch", "seq"]
    rng = np.random.default_rng(2)
    prog = against_torch(module, data, [rng.normal(size=(2, 5, 3)), rng.normal(size=(3, 7, 3)),
                                        rng.normal(size=(2, 5, 3))], traces=2)
    assert prog.tape.inputs[0].aval.shape == (2, 5, 3) and not guards(prog.tape)


class Scripted(torch.nn.Module):
    """Data-dependent control flow torch.jit.script exports as If and Loop: a branch on the sign
    of the sum, a while loop that grows y until its squares pass 10, a loop over the batch."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        if x.sum() > 0:
            y = torch.tanh(self.fc(x))
        else:
            y = -x
        while y.pow(2).sum() < 10.0:
            y = y * 1.5
        for _ in range(x.shape[0]):
            y = y + 0.1 * x
        return y


def test_torch_scripted_if_and_while_loop():
    """Inputs taking each branch and different numbers of iterations re-trace; one taking a path
    already traced does not; another batch size traces again."""
    torch.manual_seed(0)
    module = Scripted().double().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)      # torch.jit.script is deprecated, still exports
        scripted = torch.jit.script(module)
    data = export(scripted, torch.randn(2, 3, dtype=torch.float64), dynamic_axes={"x": {0: "batch"}})
    assert {"If", "Loop"} <= {n.op_type for n in onnx.load_from_string(data).graph.node}
    rng = np.random.default_rng(3)
    up = np.abs(rng.normal(size=(2, 3)))
    against_torch(module, data, [up, -up, up * 1.01, np.abs(rng.normal(size=(4, 3)))], traces=3)
    paths = []
    for x in (up, -up):
        tape = ad.from_onnx(data, inputs=[x]).tape
        paths.append([(e.source.split(" ")[0], bool(e.inputs[1].value)) for e in tape.eqns if e.prim.name == "guard"])
    assert [p[0] for p in paths] == [("If", True), ("If", False)]
    assert all(p[1:] == [("Loop", True)] * (len(p) - 2) + [("Loop", False)] for p in paths)
    assert len(paths[0]) != len(paths[1])                           # different numbers of iterations
