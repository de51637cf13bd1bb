"""The OpInfo runner, offline, on hand-made ops: each class of verdict is reached by an op built
to reach it (a wrong rule on either side, a reference ad refuses, one that leaves numpy)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import ad
from tests.support.needs import module

torch = module("torch")
from tests.external import opinfo_suite  # noqa: E402  (needs torch)


@dataclass
class Sample:
    """The part of torch's SampleInput the runner uses."""
    input: object
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def transform(self, f):
        return Sample(f(self.input), tuple(map(f, self.args)), {k: f(v) for k, v in self.kwargs.items()})


class Op:
    """The part of an OpInfo the runner uses."""

    def __init__(self, name, torch_fn, ref):
        self.name = self.full_name = name
        self.torch_fn, self.ref = torch_fn, ref

    def __call__(self, *args, **kwargs):
        return self.torch_fn(*args, **kwargs)

    def supported_backward_dtypes(self, device):
        return {torch.float64}

    def sample_inputs(self, device, dtype, requires_grad=False):
        x = torch.linspace(-1.0, 1.0, 5, dtype=dtype, requires_grad=requires_grad)
        return [Sample(x), Sample(x.detach().reshape(1, 5).clone().requires_grad_(requires_grad))]


@ad.primitive
def wrong_sin(x):
    return np.sin(x)


@ad.rrule(wrong_sin)
def _wrong_sin_rule(x):
    return wrong_sin(x), lambda dy: (dy * 2.0 * np.cos(x),)


class WrongSinBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.sin(x)

    @staticmethod
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return dy * -torch.cos(x)


@pytest.mark.parametrize("op, verdict, cause", [
    (Op("sin", torch.sin, np.sin), "pass", ""),
    (Op("wrong_ad", torch.sin, wrong_sin), "wrong gradient", "torch agrees with finite differences"),
    (Op("wrong_torch", WrongSinBackward.apply, np.sin), "differs from torch", "ad agrees with finite differences"),
    (Op("float", lambda x: torch.sin(x) * x.sum(), lambda x: np.sin(x) * float(np.sum(x))), "ad refuses",
     "ConcretizationError"),
    (Op("leaves", torch.sin, lambda x: torch.sin(torch.from_numpy(x)).numpy()), "ref not traceable", "TypeError"),
    (Op("no_ref", torch.sin, None), "skipped", "no NumPy reference"),
])
def test_the_opinfo_runner_classifies(op, verdict, cause):
    samples = opinfo_suite.check_op(op, samples=2, budget=60)
    assert [s.verdict for s in samples] == [verdict] * len(samples)
    assert all(s.cause.startswith(cause) for s in samples)
    assert opinfo_suite.op_verdict(samples) == verdict
