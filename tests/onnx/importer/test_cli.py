"""``tapeviz import`` run as a program (subprocess) on a small PyTorch-exported CNN: the gradient
drawn to SVG and written as ONNX, that graph run in onnxruntime against torch autograd; the
listing; refusals with a message and status 1. Cost: ~7 s (one export, four processes)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.support.needs import module as optional_module  # in CI, a missing module fails
torch = optional_module("torch")
ort = optional_module("onnxruntime")

import ad  # noqa: E402
from tests.support import ROOT as REPOSITORY  # noqa: E402
from tests.support.torch_models import build  # noqa: E402

ROOT = str(REPOSITORY)


def tapeviz(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "tapeviz.commands.cli", "import", *argv], cwd=cwd, capture_output=True,
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
    svg = (path.parent / "grad.svg").read_text()      # one node per ONNX node (and per its pullback)
    assert "<svg" in svg and svg.count("Conv (/conv/Conv)") >= 2 and 'id="tvn_node/' in svg
    assert "im2col" not in svg.replace("im2col, ", "")      # named in the node, not drawn alone
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


def test_listing_of_the_forward_tape_and_the_expanded_drawing(cnn):
    _, _, path = cnn
    r = tapeviz(str(path), "--wrt", "params", "--listing", "-", "--svg", "detail.svg", "--expand", cwd=path.parent)
    assert r.returncode == 0, r.stderr
    assert "forward tape of" in r.stderr
    conv = r.stdout.split("  -- Conv (/conv/Conv)\n", 1)[1]        # the node heads its equations
    assert conv.splitlines()[0].split(" = ")[1].startswith("im2col")
    assert 'id="tvn_node/' not in (path.parent / "detail.svg").read_text()


@pytest.mark.parametrize("argv, message", [
    (("missing.onnx",), "No such file"),
    (("cnn.onnx", "--shape", "x:1,2"), "write NAME=D,D"),
])
def test_refusals_name_the_cause(cnn, argv, message):
    _, _, path = cnn
    r = tapeviz(*argv, cwd=path.parent)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
