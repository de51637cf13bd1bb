"""Networks exported by PyTorch and imported with ``ad.from_onnx``, for the debugger's tests: a
ResNet-style CNN (a stem, four layers of two basic blocks, the last three downsampling, a
linear head: 102 parameters, 826 gradient equations) and the LSTM of ``torch_models``; each
debugged through the gradient of a squared sum with respect to its weights. Needs torch and
onnx (skipped without them, outside CI)."""
from __future__ import annotations

import functools

import numpy as np

from tests.support.needs import module as optional_module  # in CI, a missing module fails
optional_module("onnx")
torch = optional_module("torch")
from torch import nn  # noqa: E402

import ad  # noqa: E402
import tapeviz  # noqa: E402
from tests.support.torch_models import build, export, perturbed  # noqa: E402


class Block(nn.Module):
    """A basic residual block; a 1x1 convolution and a batch norm on the shortcut when it
    changes the width or the size."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False), nn.BatchNorm2d(4)
        widths = [(4, 4, 1), (4, 8, 2), (8, 16, 2), (16, 32, 2)]
        for n, (cin, cout, stride) in enumerate(widths, 1):
            setattr(self, f"layer{n}", nn.Sequential(Block(cin, cout, stride), Block(cout, cout, 1)))
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


@functools.cache
def resnet() -> tuple:
    """(torch module, input, ONNX bytes): float32, every parameter and batch-norm statistic
    perturbed (the exporter merges equal initializers, which would tie their gradients)."""
    torch.manual_seed(0)
    module = perturbed(ResNet().eval())
    x = torch.randn(2, 3, 16, 16)
    return module, x, export(module, x)


def imported(name: str) -> tuple:
    """(torch module, the imported ``OnnxProgram``, its input) of "resnet" or "lstm"."""
    module, x, data = resnet() if name == "resnet" else build(name)
    return module, ad.from_onnx(data), x.numpy()


def debugger(name: str):
    """The debugger of the gradient of ``sum(model(x) ** 2)`` with respect to the imported
    model's weights (``prog.params``, by their PyTorch names)."""
    _, prog, x = imported(name)
    return tapeviz.debug(lambda x, params: np.sum(prog.function(x, params) ** 2), x, prog.params, argnums=1)
