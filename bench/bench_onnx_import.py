"""ONNX import: a CNN exported from PyTorch, imported with ``ad.from_onnx``; and the import time of
long models (linear growth).

The CNN is the digits model of ``bench_cnn`` written in torch with a batch norm (eval):
conv3x3(1->8) bn relu maxpool2 conv3x3(8->16) relu maxpool2 linear(64->10), float32, batch 64,
exported once by ``torch.onnx.export`` (TorchScript exporter, batch norm kept as a node).
Import: parsing to an ``OnnxProgram``, then its trace, then its gradient tape, beside building an
onnxruntime session of the same bytes. Gradient: the squared-error loss and the gradient of all
the weights, ad's compiled gradient tape against PyTorch eager (forward and backward) on the
same module, and the first call of each form (trace, lift, optimise, compile and run: what a fresh
``ad.grad`` of the imported program costs once), from the program and from the file's bytes.
Growth: a chain of ``n`` nodes (MatMul with its own 8x8 weight, then Tanh, ...), parsed, then
parsed and traced, for n = 1000, 4000, 16000: the cost per node stays flat if import is linear.
Size bombs: one node asking for 2**40 elements (ConstantOfShape, Expand, Tile), imported and traced
until it is refused (issue 33: under a second, nothing of that size allocated; the allocation is
measured by tests/onnx/importer/test_size_limits.py).
One BLAS/OpenMP thread, medians of CPU time.

    python -m bench.bench_onnx_import
"""
from __future__ import annotations

from bench.common import format_time, measure, optional, table

import io  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402  (after bench.common pins the BLAS threads)
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.onnx.importer import OnnxImportError  # noqa: E402

BATCH = 64
CHAIN_NODES = (1000, 4000, 16000)


def torch_cnn(torch):
    nn = torch.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn = nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8)
            self.conv2, self.fc = nn.Conv2d(8, 16, 3, padding=1), nn.Linear(64, 10)

        def forward(self, x):
            x = torch.max_pool2d(torch.relu(self.bn(self.conv1(x))), 2)
            return self.fc(torch.flatten(torch.max_pool2d(torch.relu(self.conv2(x)), 2), 1))
    torch.manual_seed(0)
    module = CNN().eval()
    with torch.no_grad():       # not the defaults: the exporter merges equal initializers (the bias
        for t in (module.bn.weight, module.bn.bias, module.bn.running_mean):   # and the zero mean),
            t.add_(0.1 * torch.randn_like(t))                                  # tying their gradients
        module.bn.running_var.uniform_(0.5, 1.5)
    return module


def export(torch, module, x) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buf, dynamo=False, input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    return buf.getvalue()


def cnn_tables(torch, rounds: int) -> str:
    torch.set_num_threads(1)
    module = torch_cnn(torch)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 1, 8, 8)).astype(np.float32)
    target = rng.standard_normal((BATCH, 10)).astype(np.float32)
    data = export(torch, module, torch.from_numpy(x))
    prog = ad.from_onnx(data)

    def loss(x, params):
        return 0.5 * np.sum((prog.function(x, params) - target) ** 2)

    def imported():
        p = ad.from_onnx(data)
        return ad.grad_tape(lambda x, params: 0.5 * np.sum((p.function(x, params) - target) ** 2),
                            x, p.params, argnums=1)
    ort = optional("onnxruntime")
    contenders = {"from_onnx (parse)": lambda: ad.from_onnx(data),
                  "from_onnx + trace": lambda: ad.from_onnx(data).tape,
                  "from_onnx + grad_tape": imported}
    if ort is not None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        contenders["onnxruntime session"] = lambda: ort.InferenceSession(data, options,
                                                                         providers=["CPUExecutionProvider"])
    report = [table(f"importing the CNN ({len(prog.nodes)} ONNX nodes, {len(prog.tape.eqns)} equations)",
                    measure(contenders, rounds=rounds), "from_onnx (parse)")]

    grad, lifted = ad.grad(loss, argnums=1, form="compiled"), ad.grad(loss, argnums=1)
    xt, tt = torch.from_numpy(x), torch.from_numpy(target)

    def torch_grad():
        module.zero_grad()
        (0.5 * ((module(xt) - tt) ** 2).sum()).backward()
        return [p.grad for p in module.parameters()]
    got = grad(x, prog.params)
    torch_grad()
    for name, p in module.named_parameters():       # the same gradient, or the timing means nothing
        np.testing.assert_allclose(got[name], p.grad.numpy(), rtol=2e-3, atol=2e-4)
    times = measure({"PyTorch eager": torch_grad, "ad compiled (imported)": lambda: grad(x, prog.params),
                     "ad lifted (imported)": lambda: lifted(x, prog.params)}, rounds=rounds)
    report.append(table(f"gradient of the imported CNN, batch {BATCH}, float32", times, "PyTorch eager"))

    def first(form, program=None):
        """A fresh ``ad.grad`` called once (its tape cache empty), of ``program`` or of a new import."""
        p = program or ad.from_onnx(data)
        return ad.grad(lambda x, params: 0.5 * np.sum((p.function(x, params) - target) ** 2),
                       argnums=1, form=form)(x, p.params)
    times = measure({"PyTorch eager (a call after the first)": torch_grad,
                     "ad compiled, first call": lambda: first("compiled", prog),
                     "ad lifted, first call": lambda: first("lifted", prog),
                     "from the file's bytes to the first gradient (compiled)": lambda: first("compiled")},
                    rounds=rounds)
    report.append(table(f"first gradient of the imported CNN (trace, lift, optimise, compile, run), batch {BATCH}",
                        times, "PyTorch eager (a call after the first)"))
    return "\n".join(report)


def chain_model(n: int):
    """x (4, 8) -> MatMul w0 -> Tanh -> MatMul w1 -> Tanh ...: n nodes, n / 2 weights."""
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(n // 2):
        inits.append(numpy_helper.from_array(rng.standard_normal((8, 8)) / 3, f"w{i}"))
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"layer{i}/matmul"),
                  helper.make_node("Tanh", [f"m{i}"], [f"h{i}"], name=f"layer{i}/tanh")]
        prev = f"h{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4, 8])],
                              [helper.make_tensor_value_info(prev, TensorProto.DOUBLE, [4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]).SerializeToString()


def chain_table(rounds: int) -> str:
    models = {n: chain_model(n) for n in CHAIN_NODES}
    contenders = {}
    for n, m in models.items():
        contenders[f"parse {n}"] = lambda m=m: ad.from_onnx(m)
        contenders[f"trace {n}"] = lambda m=m: ad.from_onnx(m).tape
    times = measure(contenders, rounds=rounds, min_time=0.0)
    first = CHAIN_NODES[0]
    lines = ["### importing a chain of n nodes: time per node (flat if linear)", "",
             "| nodes | parse | per node | parse + trace | per node | per node, ratio to 1000 nodes |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n in CHAIN_NODES:
        parse, trace = times[f"parse {n}"], times[f"trace {n}"]
        lines.append(f"| {n} | {format_time(parse)} | {format_time(parse / n)} | {format_time(trace)} | "
                     f"{format_time(trace / n)} | {trace / n / (times[f'trace {first}'] / first):.2f} |")
    return "\n".join(lines) + "\n"


def bomb_model(op: str) -> bytes:
    """A model whose node ``bomb`` makes a 2**40-element output from a constant operand."""
    big, x = 1 << 20, helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    operand = {"ConstantOfShape": [big, big], "Expand": [big * big, 2, 3], "Tile": [big, big]}[op]
    inputs = ["s"] if op == "ConstantOfShape" else ["x", "s"]
    graph = helper.make_graph([helper.make_node(op, inputs, ["y"], name="bomb")], "g", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(operand, np.int64), "s")])
    return helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 20)]).SerializeToString()


def bomb_table(rounds: int) -> str:
    def refused(m):
        try:
            ad.from_onnx(m).tape
        except OnnxImportError:
            return
        raise AssertionError("a size bomb was not refused")
    models = {op: bomb_model(op) for op in ("ConstantOfShape", "Expand", "Tile")}
    times = measure({op: lambda m=m: refused(m) for op, m in models.items()}, rounds=rounds, min_time=0.0)
    lines = ["### refusing a size bomb (2**40 elements asked by one node): import and trace until refused", "",
             "| node | median per refusal |", "| --- | ---: |"]
    lines += [f"| {op} | {format_time(t)} |" for op, t in times.items()]
    return "\n".join(lines) + "\n"


def run(rounds: int = 7) -> str:
    parts = []
    torch = optional("torch")
    if torch is not None:
        parts.append(cnn_tables(torch, rounds))
    parts.append(chain_table(rounds))
    parts.append(bomb_table(rounds))
    return "\n".join(parts)


if __name__ == "__main__":
    print(run())
