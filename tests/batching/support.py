"""What the batching tests share: a batch of a case's inputs, and the loop ``ad.vmap`` must equal."""
from __future__ import annotations

import numpy as np

from tests.support.cases import leaves

SIZE = 3


def batch_of(case, shape_set: str, dtype, rng, axes) -> tuple[list, list]:
    """(the batched operands, the examples): ``SIZE`` draws of the case's inputs, each operand
    stacked along its axis of ``axes`` (None: the first draw, shared by every example)."""
    draws = [case.inputs(shape_set, rng, dtype) for _ in range(SIZE)]
    operands = [draws[0][k] if a is None else np.stack([d[k] for d in draws], axis=a)
                for k, a in enumerate(axes)]
    examples = [[draws[0][k] if a is None else d[k] for k, a in enumerate(axes)] for d in draws]
    return operands, examples


def looped(fn, examples) -> tuple:
    """``fn`` per example, each output stacked along a new first axis."""
    outs = [leaves(fn(*xs)) for xs in examples]
    return tuple(np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0])))


def assert_batched_equal(got, want, dtype, what: str):
    got = leaves(got)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape, f"{what}: shape {g.shape}, the loop's {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, the loop's {w.dtype}"
        tol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=what)
