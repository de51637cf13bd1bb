"""The loop over the batch, for a primitive without a batching rule: one equation of its own,
``fallback_loop``, whose params name the looped primitive (so the tape says where a batched
program runs example by example: ``docs/coverage.md`` lists those primitives). Never wrong,
only slow: each example runs the primitive's own impl, and its rule is the loop of the looped
primitive's rule, so the batched program stays differentiable (torch.func's slow fallback,
but visible in the program rather than in a warning).
"""
from __future__ import annotations

import numpy as np

from ..core_prims import project
from ..errors import UnsupportedFunctionError
from ..primitives import REGISTRY, Primitive, load_deferred
from ..rules import rrule
from ..samples import MATRIX, In, Sample
from ..tangents import NoTangent, ZeroTangent, unthunk
from ..tape import Aval, freeze_params
from .derived import batch_size


class RaggedBatchError(ValueError):
    """The examples of a batch gave outputs of different shapes (``np.nonzero``): a batched
    array cannot hold them."""


def _example(x, dim, b: int):
    """Example ``b`` of an operand (a shared one as it is)."""
    return x if dim is None else x[(slice(None),) * dim + (b,)]


def looped(name: str) -> Primitive:
    """The primitive a loop names (a saved tape's may be one of the rule modules loaded when
    first needed, ``ad.primitives.defer``)."""
    if name not in REGISTRY:
        load_deferred(name)
    return REGISTRY[name]


def _loop(*args, primitive, params, dims, size):
    prim = looped(primitive)
    kwargs = dict(params)
    outs = []
    for b in range(size):
        y = prim.impl(*[_example(x, d, b) for x, d in zip(args, dims)], **kwargs)
        outs.append(tuple(y) if prim.multiple_results else (y,))
    return tuple(_stack([o[k] for o in outs], primitive) for k in range(len(outs[0])))


def _stack(ys, primitive: str):
    shapes = {np.shape(y) for y in ys}
    if len(shapes) > 1:
        raise RaggedBatchError(f"{primitive} gave outputs of shapes {sorted(shapes)} across the batch: a "
                               "batched array cannot hold them; call it outside ad.vmap, once per example")
    return np.stack(ys)


fallback_loop_p = Primitive(
    "fallback_loop", _loop, params=("primitive", "params", "dims", "size"), multiple_results=True,
    complex_rule=True,      # the looped primitive's rule decides (checked in the rule below)
    doc="A primitive without a batching rule, run once per example of a batch (``ad.vmap``'s "
        "fallback); its outputs have the batch axis first.",
    # a batch of 3 matrices times one shared matrix: stacked cotangents, and a summed one
    samples=(Sample((In((3, 2, 4)), In((4, 2))), {"primitive": "matmul", "params": (), "dims": (0, None), "size": 3},
                    MATRIX),))


def loop(prim, args, dims, params: dict):
    """Bind the loop of ``prim`` over the batch: its outputs, and their batch axes (first)."""
    outs = fallback_loop_p.bind(*args, primitive=prim.name, params=freeze_params(params),
                                dims=tuple(dims), size=batch_size(args, dims))
    return (tuple(outs), (0,) * len(outs)) if prim.multiple_results else (outs[0], 0)


@rrule(fallback_loop_p)
def _loop_rule(*args, primitive, params, dims, size):
    prim = looped(primitive)
    if prim.rule is None:
        raise UnsupportedFunctionError(f"{prim.name} has no rule, so the gradient of its batched loop is "
                                       f"unknown: give it one with @ad.rrule")
    if not prim.complex_rule and any(np.iscomplexobj(x) for x in args):
        raise UnsupportedFunctionError(f"the gradient of {prim.name} (looped over a batch) with complex "
                                       "values: its rule is written for real numbers")
    kwargs = dict(params)
    examples = [[_example(x, d, b) for x, d in zip(args, dims)] for b in range(size)]
    ys, pullbacks = [], []
    for xs in examples:
        y, pullback = prim.rule(*xs, **kwargs)
        ys.append(tuple(y) if prim.multiple_results else (y,))
        pullbacks.append(pullback)
    # the output is the loop's own equation, so a gradient tape keeps one fallback_loop equation
    # where the program has one (the examples' forward values above feed only their pullbacks)
    out = tuple(fallback_loop_p.bind(*args, primitive=primitive, params=params, dims=dims, size=size))

    def pullback(dys):
        per_example = []
        for b, (xs, pb) in enumerate(zip(examples, pullbacks)):
            dy = tuple(d[b] for d in dys)
            raw = pb(dy if prim.multiple_results else dy[0])
            raw = raw if isinstance(raw, tuple) else (raw,)
            per_example.append([project(getattr(x, "aval", None) or Aval.of(x), unthunk(g))
                                for x, g in zip(xs, raw)])
        return tuple(_gather([cts[i] for cts in per_example], [xs[i] for xs in examples], d)
                     for i, d in enumerate(dims))
    return out, pullback


def _gather(cts, xs, dim):
    """One operand's cotangent from its examples': stacked along its batch axis, or summed for a
    shared operand (every example read it)."""
    if all(isinstance(c, (NoTangent, ZeroTangent)) for c in cts):
        return NoTangent()
    dense = [np.zeros_like(x) if isinstance(c, (NoTangent, ZeroTangent)) else c for c, x in zip(cts, xs)]
    if dim is None:
        total = dense[0]
        for c in dense[1:]:
            total = total + c
        return total
    return np.stack(dense, axis=dim)
