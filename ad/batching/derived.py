"""Batching rules derived from what a primitive declares, so that most primitives need none of
their own (JAX's ``broadcast_batcher``, ``reducer_batcher``, and the stacked operands of
``linalg``): an elementwise primitive broadcasts its operands; one that reduces or scans along
axis params gets them shifted past the batch axis; one that maps a stack of core arrays (a
matrix for ``inv``, two for ``matmul``) gets the batch axis as one more stack axis.

Every rule here moves the batch axis first (``ad.rules.to_front``) and returns it there: one
convention, so rules compose without bookkeeping (a move costs a transpose view, which numpy
makes for free).
"""
from __future__ import annotations

import numpy as np

from ..rules import to_front


def derived(rule):
    """Mark a rule as derived from traits (the coverage tables count them apart)."""
    rule.derived = True
    return rule


def batch_size(args, dims) -> int:
    """The batch size: the length of any batched operand along its batch axis."""
    return next(np.shape(x)[d] for x, d in zip(args, dims) if d is not None)


def with_rank(x, dim, rank: int):
    """A batched ``x`` with its batch axis first and, after it, axes of length 1 up to ``rank``
    unbatched axes: numpy then broadcasts it against shared operands of up to that rank as it
    broadcast one example (shared operands align from the right, the batch axis stays apart)."""
    x = to_front(x, dim)
    shape = np.shape(x)
    pad = rank - (len(shape) - 1)
    return np.reshape(x, shape[:1] + (1,) * pad + shape[1:]) if pad > 0 else x


def unbatched_rank(x, dim) -> int:
    return np.ndim(x) - (dim is not None)


def broadcasting(prim, args, dims, params, core=None):
    """``prim`` applied to operands broadcast against each other with the batch axis first;
    ``core``: per operand, how many trailing axes are core axes (not broadcast)."""
    core = core or (0,) * len(args)
    rank = max(unbatched_rank(x, d) - c for x, d, c in zip(args, dims, core))
    args = [x if d is None else with_rank(x, d, rank + c) for x, d, c in zip(args, dims, core)]
    out = prim.bind(*args, **params)
    return out, ((0,) * len(out) if prim.multiple_results else 0)


def elementwise(prim):
    """The rule of an elementwise primitive: operands broadcast, the batch axis first."""
    @derived
    def rule(args, dims, **params):
        return broadcasting(prim, args, dims, params)
    rule.__qualname__ = rule.__name__ = f"{prim.name}_batched"
    return rule


def stacked(prim, *core):
    """The rule of a primitive that maps stacks of core arrays (numpy's gufuncs, ``linalg``):
    ``core[i]`` trailing axes of operand ``i`` are its core; the batch axis joins the stack."""
    @derived
    def rule(args, dims, **params):
        return broadcasting(prim, args, dims, params, core)
    rule.__qualname__ = rule.__name__ = f"{prim.name}_batched"
    return rule


def shifted_axes(prim, *names, none_is_all: bool = True):
    """The rule of a primitive of one batched operand whose params ``names`` are axes (an int,
    a tuple, or None for every axis when ``none_is_all``, else None flattens and the loop runs
    it): the axes move one place right, past the batch axis put first."""
    @derived
    def rule(args, dims, **params):
        if any(d is not None for d in dims[1:]):
            return NotImplemented
        x = to_front(args[0], dims[0])
        rank = np.ndim(x) - 1
        moved = dict(params)
        for name in names:
            axis = params[name]
            if axis is None and not none_is_all:
                return NotImplemented
            moved[name] = (tuple(range(1, rank + 1)) if axis is None else
                           tuple(_shift(a, rank) for a in axis) if isinstance(axis, tuple) else _shift(axis, rank))
        out = prim.bind(x, *args[1:], **moved)
        return out, ((0,) * len(out) if prim.multiple_results else 0)
    rule.__qualname__ = rule.__name__ = f"{prim.name}_batched"
    return rule


def folded(prim, shape_param: str | None = None):
    """The rule of a primitive of images ``(N, C, *S)`` in every operand and its output (pooling):
    the batch folded into ``N`` (a shared operand broadcast along the batch first); the param
    ``shape_param``, an output shape, gets its ``N`` multiplied alike."""
    @derived
    def rule(args, dims, **params):
        size = batch_size(args, dims)
        xs = [to_front(x, d) if d is not None else np.broadcast_to(x, (size,) + np.shape(x))
              for x, d in zip(args, dims)]
        xs = [np.reshape(x, (-1,) + np.shape(x)[2:]) for x in xs]
        if shape_param is not None:
            shape = params[shape_param]
            params = {**params, shape_param: (size * shape[0],) + tuple(shape[1:])}
        out = prim.bind(*xs, **params)
        return np.reshape(out, (size, -1) + np.shape(out)[1:]), 0
    rule.__qualname__ = rule.__name__ = f"{prim.name}_batched"
    return rule


def _shift(axis: int, rank: int) -> int:
    return int(axis) % max(rank, 1) + 1


def rule_for(prim):
    """The batching rule of a primitive: its own (``ad.batch_rule``), or the one its traits give
    (elementwise), or None: the loop over the batch runs it (``ad.batching.fallback``)."""
    if prim.batch is not None:
        return prim.batch
    if prim.elementwise:
        return _ELEMENTWISE.get(prim) or _ELEMENTWISE.setdefault(prim, elementwise(prim))
    return None


_ELEMENTWISE: dict = {}


def how_batched(prim) -> str:
    """"derived", "hand" (a rule of its own) or "loop" (the fallback): the coverage tables' column."""
    rule = rule_for(prim)
    if rule is None:
        return "loop"
    return "derived" if getattr(rule, "derived", False) else "hand"
