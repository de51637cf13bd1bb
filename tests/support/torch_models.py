"""The PyTorch models the ONNX importer tests export and import: an MLP, a CNN with batch norm
(eval), a residual block, an LSTM, a transformer encoder layer (eval, no dropout) and an upsampling
decoder, each built in float64 with perturbed parameters (``build``) and exported with the
TorchScript exporter (``export``; the dynamo one needs onnxscript, which is not installed).
tests/onnx/importer/test_torch_models.py and tests/onnx/importer/test_cli.py use them. Needs torch
(skipped without it, as the tests that import it are)."""
from __future__ import annotations

import io
import warnings


from tests.support.needs import module as optional_module  # in CI, a missing module fails
torch = optional_module("torch")
from torch import nn  # noqa: E402


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.pool, self.fc = nn.MaxPool2d(2), nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.bn(self.conv(x)))), 1))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3)
        self.conv2, self.bn2 = nn.Conv2d(3, 3, 3, padding=1), nn.BatchNorm2d(3)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class LSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


class Encoder(nn.Module):
    """is_causal passed explicitly: the TorchScript tracer otherwise feeds it as a tensor."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x, is_causal=False)


class Upsampler(nn.Module):
    """The decoder end of a segmentation network: bilinear and nearest upsampling (Resize, or
    Upsample before opset 10)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.nearest = nn.Upsample(scale_factor=(1.5, 2), mode="nearest")

    def forward(self, x):
        return self.nearest(torch.tanh(self.bilinear(self.conv(x))))


MODELS = {   # name -> (module factory, input shape)
    "mlp": (lambda: nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)), (4, 3)),
    "cnn": (CNN, (2, 2, 6, 6)),
    "residual": (Residual, (1, 3, 5, 5)),
    "lstm": (LSTM, (2, 5, 3)),
    "transformer": (Encoder, (2, 4, 8)),
    "upsample": (Upsampler, (1, 2, 5, 4)),
}


def export(module: nn.Module, x: torch.Tensor, opset: int | None = None) -> bytes:
    """The model's ONNX bytes: batch norm kept as a node (PRESERVE, eval mode; EVAL would fuse it
    into the conv), no constant folding (so the initializers keep torch's parameter names); at
    torch's default opset (20) unless ``opset`` is given."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (x,), buf, dynamo=False, input_names=["x"], output_names=["y"],
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                          opset_version=opset)
    return buf.getvalue()


def perturbed(module):
    """``module`` with every parameter and batch-norm statistic moved off its default (the exporter
    merges equal initializers, which would tie their gradients)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.1 * torch.randn_like(p))
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    return module


def build(name: str, seed: int = 0, opset: int | None = None):
    """(torch module, input, ONNX bytes): float64, every parameter and batch-norm statistic
    perturbed so that none is a default (the exporter merges equal initializers)."""
    torch.manual_seed(seed)
    factory, shape = MODELS[name]
    module = perturbed(factory().double().eval())
    x = torch.randn(*shape, dtype=torch.float64)
    return module, x, export(module, x, opset)
