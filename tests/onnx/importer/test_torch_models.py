"""Models exported from PyTorch (torch.onnx.export, the TorchScript exporter: the dynamo one needs
onnxscript, which is not installed) and imported with ad.from_onnx, torch as the oracle: an MLP,
a CNN with batch norm (eval), a residual block, an LSTM and a transformer encoder layer (eval, no
dropout), all float64. For each: the forward equals torch's, the gradient with respect to the input
and every weight equals torch autograd's, the gradient tape exported back with ad.to_onnx runs in
onnxruntime and agrees, and ad.check passes on the imported program. The five models are exported
once per module (~1 s); the module costs ~18 s on this machine, half of it ad.check. Each model
is also exported at opsets 9, 10, 11, 12, 14 and 20 and compared with torch (~11 s of CPU more).
The models and their export are in tests/support/torch_models.py."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
torch = optional_module("torch")
onnx = optional_module("onnx")
ort = optional_module("onnxruntime")

import ad  # noqa: E402
from tests.support.torch_models import MODELS, build, export  # noqa: E402


@pytest.fixture(scope="module")
def models():
    return {name: build(name) for name in MODELS}


def setup(models, name):
    module, x, data = models[name]
    prog = ad.from_onnx(data)
    cot = np.random.default_rng(1).normal(size=module(x).shape)

    def loss(x, params):
        return np.sum(prog.function(x, params) * cot)
    return module, x, prog, cot, loss


@pytest.mark.parametrize("name", MODELS)
def test_forward_equals_torch(models, name):
    module, x, prog, _, _ = setup(models, name)
    buffers = {n for n, b in module.named_buffers() if b.is_floating_point()}   # batch-norm statistics
    assert set(prog.params) == {n for n, _ in module.named_parameters()} | buffers
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_allclose(prog(x.numpy()), want, rtol=1e-10, atol=1e-12)
    assert any(e.source.startswith(tuple(n.op_type for n in prog.nodes)) for e in prog.tape.eqns)


def torch_grads(module, x, cot):
    x = x.clone().requires_grad_(True)
    module.zero_grad()
    (module(x) * torch.from_numpy(cot)).sum().backward()
    return x.grad.numpy(), {n: p.grad.numpy() for n, p in module.named_parameters()}


@pytest.mark.parametrize("name", MODELS)
def test_gradient_equals_torch_autograd(models, name):
    module, x, prog, cot, loss = setup(models, name)
    gx, gp = ad.grad(loss, argnums=(0, 1))(x.numpy(), prog.params)
    want_x, want_p = torch_grads(module, x, cot)
    np.testing.assert_allclose(gx, want_x, rtol=1e-9, atol=1e-12)
    for n, g in want_p.items():
        np.testing.assert_allclose(gp[n], g, rtol=1e-9, atol=1e-12, err_msg=n)


@pytest.mark.parametrize("name", MODELS)
def test_gradient_tape_runs_in_onnxruntime(models, name):
    module, x, prog, cot, loss = setup(models, name)
    gt = ad.grad_tape(loss, x.numpy(), prog.params, argnums=(0, 1))
    model = ad.to_onnx(gt)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    args = [x.numpy(), *prog.params.values()]
    outs = sess.run(None, dict(zip([i.name for i in model.graph.input], args)))
    want_x, want_p = torch_grads(module, x, cot)
    np.testing.assert_allclose(outs[0], float(np.sum(module(x).detach().numpy() * cot)), rtol=1e-10)
    grads = dict(zip(["x", *prog.params], outs[1:]))
    for n, want in [("x", want_x), *want_p.items()]:
        np.testing.assert_allclose(grads[n], want, rtol=1e-9, atol=1e-12, err_msg=n)


@pytest.mark.parametrize("name", MODELS)
def test_checker_passes_on_the_imported_program(models, name):
    _, x, prog, _, loss = setup(models, name)
    report = ad.check(loss, x.numpy(), prog.params)
    assert report.ok, report


OPSETS = (9, 10, 11, 12, 14, 20)     # 9 is torch's oldest; 20 the TorchScript exporter's newest
REFUSED_BELOW = {"transformer": 14}  # scaled_dot_product_attention exports from opset 14 on
OTHER_BELOW = {"upsample": 11}       # Upsample/Resize-10 have no half_pixel: torch warns that the
                                     # file means another resize; onnxruntime is the oracle there


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", MODELS)
def test_every_opset_torch_exports(name, opset):
    """The model exported at each opset torch offers (their ops differ: Slice's attributes before
    10, Clip's and Squeeze's before 11/13, LayerNormalization decomposed before 17, Upsample
    before 10) imports, and its forward and gradient equal torch's; where torch cannot export,
    it says so itself."""
    if opset < REFUSED_BELOW.get(name, 0):
        with pytest.raises(torch.onnx.errors.UnsupportedOperatorError, match="opset version"):
            build(name, opset=opset)
        return
    if opset < OTHER_BELOW.get(name, 0):
        module, x, _ = build(name)
        x = x.float().numpy()            # onnxruntime has no float64 Conv-1
        data = export(module.float(), torch.from_numpy(x), opset)
        sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(ad.from_onnx(data)(x), sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
        return
    module, x, data = build(name, opset=opset)
    prog = ad.from_onnx(data)
    assert prog.opsets[""] == opset
    np.testing.assert_allclose(prog(x.numpy()), module(x).detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = np.random.default_rng(1).normal(size=module(x).shape)
    gx, gp = ad.grad(lambda x, params: np.sum(prog.function(x, params) * cot), argnums=(0, 1))(x.numpy(), prog.params)
    want_x, want_p = torch_grads(module, x, cot)
    np.testing.assert_allclose(gx, want_x, rtol=1e-9, atol=1e-12)
    for n, g in want_p.items():
        np.testing.assert_allclose(gp[n], g, rtol=1e-9, atol=1e-12, err_msg=n)


def test_tapeviz_debugs_draws_and_exports_the_imported_cnn(models, tmp_path):
    """The debugger steps through the imported gradient, and its graph pane names the ONNX nodes;
    the detail drawing names them too; the collapsed view and the SVG export work."""
    import tapeviz
    _, x, prog, _, loss = setup(models, "cnn")
    args = (x.numpy(), prog.params)
    dbg = tapeviz.debug(loss, *args, argnums=(0, 1))
    dbg.last()
    assert dbg.phase_line.startswith(f"backward, step {dbg.n_steps} of {dbg.n_steps}")
    assert "Conv (/conv/Conv)" in dbg.get_state()["_dot"]
    assert dbg.to_html(tmp_path / "cnn.html").stat().st_size > 0
    gt = ad.grad_tape(loss, *args, argnums=(0, 1))
    labels = {n.op_type: f"{n.op_type} ({n.name})" for n in prog.nodes}
    detail = tapeviz.to_graphviz(gt).source
    assert all(label in detail for label in labels.values())
    collapsed = tapeviz.to_graphviz(gt, collapse=True).source
    assert collapsed.count("->") < detail.count("->")
    tapeviz.export(gt, tmp_path / "cnn.svg", collapse=True)
    assert (tmp_path / "cnn.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
