"""``tapeviz import`` run as a program (subprocess) on a small PyTorch-exported CNN: the gradient
drawn to SVG and written as ONNX, that graph run in onnxruntime against torch autograd; the
listing; refusals with a message and status 1. Cost: ~7 s (one export, four processes)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")

import ad  # noqa: E402
from test_torch_models import build  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tapeviz(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "tapeviz.cli", "import", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT})


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    module, x, data = build("cnn")
    path = tmp_path_factory.mktemp("cli") / "cnn.onnx"
    path.write_bytes(data)
    return module, x, path


def test_grad_svg_and_onnx(cnn):
    module, x, path = cnn
    r = tapeviz(path.name, "--grad", "--svg", "grad.svg", "--onnx", "grad.onnx", cwd=path.parent)
    assert r.returncode == 0, r.stderr
    assert "gradient tape of" in r.stdout
    assert "<svg" in (path.parent / "grad.svg").read_text()
    sess = ort.InferenceSession(str(path.parent / "grad.onnx"), providers=["CPUExecutionProvider"])
    params = ad.from_onnx(path).params
    names = [i.name for i in sess.get_inputs()]
    outs = sess.run(None, dict(zip(names, [x.numpy(), *params.values()])))
    xt = x.clone().requires_grad_(True)
    module.zero_grad()
    y = module(xt).sum()
    y.backward()
    np.testing.assert_allclose(outs[0], y.item(), rtol=1e-12)
    np.testing.assert_allclose(outs[1], xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    grads = dict(zip(params, outs[2:]))
    for n, p in module.named_parameters():
        np.testing.assert_allclose(grads[n], p.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=n)


def test_listing_of_the_forward_tape(cnn):
    _, _, path = cnn
    r = tapeviz(str(path), "--wrt", "params", "--listing", "-", cwd=path.parent)
    assert r.returncode == 0, r.stderr
    assert "im2col" in r.stdout and "forward tape of" in r.stderr


@pytest.mark.parametrize("argv, message", [
    (("missing.onnx",), "No such file"),
    (("cnn.onnx", "--shape", "x:1,2"), "write NAME=D,D"),
])
def test_refusals_name_the_cause(cnn, argv, message):
    _, _, path = cnn
    r = tapeviz(*argv, cwd=path.parent)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
