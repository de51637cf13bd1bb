"""PyTorch's OpInfos whose NumPy reference is scipy.fft's (fft.hfft2, hfftn, ihfft2, ihfftn): the
OpInfo runner on them, from torch's own database. Their references are plain scipy.fft, so they
trace through ad.scipy.fft's backend. ihfft2 and ihfftn give complex outputs, which the yardstick
skips; here they are checked through their real and imaginary parts (``RealParts``)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support.needs import module

torch = module("torch")
from tests.external import opinfo_suite  # noqa: E402  (needs torch)


class RealParts:
    """An OpInfo whose op and reference give a complex array, seen as its real and imaginary
    parts (a trailing axis of 2) so the runner compares gradients."""

    def __init__(self, op):
        self.op = op
        self.name, self.full_name = op.name, op.full_name

    def __call__(self, *args, **kwargs):
        y = self.op(*args, **kwargs)
        return torch.stack([y.real, y.imag], dim=-1)

    def ref(self, *args, **kwargs):
        y = self.op.ref(*args, **kwargs)
        return np.stack([y.real, y.imag], axis=-1)

    def supported_backward_dtypes(self, device):
        return self.op.supported_backward_dtypes(device)

    def sample_inputs(self, *args, **kwargs):
        return self.op.sample_inputs(*args, **kwargs)


@pytest.fixture(scope="module")
def ops():
    op_db, _ = opinfo_suite.load_op_db()
    return {op.full_name: op for op in op_db}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["fft.hfft2", "fft.hfftn", "fft.ihfft2", "fft.ihfftn"])
def test_scipy_fft_opinfos_pass(ops, name):
    op = ops[name]
    assert op.ref.__module__.startswith("scipy.fft"), "no longer scipy.fft's: this test has lost its point"
    if name.startswith("fft.ihfft"):
        op = RealParts(op)
    samples = opinfo_suite.check_op(op, samples=16, budget=120)
    tried = [s for s in samples if s.verdict != "skipped"]
    assert len(tried) >= 2, [(s.verdict, s.cause) for s in samples]     # the others pass dim= to scipy
    assert opinfo_suite.op_verdict(samples) == "pass", [(s.verdict, s.cause) for s in tried]
