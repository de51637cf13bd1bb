"""The lowering of ``fallback_loop`` (``ad.vmap``'s loop over the batch of a primitive without a
batching rule): the batch size is static, so the loop is unrolled: per example, each batched
operand's example is taken out (a ``Gather`` at a scalar index drops the axis), the looped
primitive's own lowering is applied to an equation of one example, and the examples' outputs
are stacked along a new first axis (``Unsqueeze``, ``Concat``). Simpler than an ONNX ``Loop``
(no subgraph, every shape static) and exact: it is the loop the impl runs.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..batching import fallback_loop_p
from ..batching.fallback import looped
from ..tape import Aval, Eqn, Var
from .graph import LoweringError
from .lowering import LOWERINGS, lowers, not_lowered

_example_ids = itertools.count(-1, -1)    # the examples' variables live in the graph only: ids no tape uses


def _example_var(aval: Aval) -> Var:
    return Var(next(_example_ids), aval)


@lowers(fallback_loop_p)
def _fallback_loop(g, e):
    prim = looped(e.kwargs["primitive"])
    lower = LOWERINGS.get(prim)
    if lower is None:
        raise LoweringError(f"the loop over the batch runs {prim.name}, which has no ONNX lowering "
                            f"({not_lowered(prim) or 'no lowering yet'})")
    dims, size = e.kwargs["dims"], e.kwargs["size"]
    stacks = [[] for _ in e.outputs]
    for b in range(size):
        inputs = []
        for x, d in zip(e.inputs, dims):
            if d is None:
                inputs.append(x)
                continue
            v = _example_var(Aval(x.aval.shape[:d] + x.aval.shape[d + 1:], x.aval.dtype))
            g.names[v] = g.op("Gather", g.x(x), g.const(np.int64(b)), axis=d)
            inputs.append(v)
        outputs = tuple(_example_var(Aval(o.aval.shape[1:], o.aval.dtype)) for o in e.outputs)
        example = Eqn(prim, tuple(inputs), e.kwargs["params"], outputs, e.source, e.origin, e.scope)
        names = lower(g, example)
        for stack, name in zip(stacks, (names,) if isinstance(names, str) else names):
            stack.append(g.op("Unsqueeze", name, g.ints([0])))
    return tuple(stack[0] if size == 1 else g.op("Concat", *stack, axis=0) for stack in stacks)
