"""Tracing a call into a tape (``ad.trace``), and what every transform then asks of the call:
which traced inputs ``argnums`` differentiates and where their gradients go, and the concrete
values of the tape's inputs.

``trace`` is the user's; the transforms (reverse and forward mode, Jacobians, the checker) trace
with ``trace_call``, which also marks the differentiated inputs and takes the recorder they need.
"""
from __future__ import annotations

import inspect
import sys

import numpy as np

from . import pytree
from .errors import unwrapping_numpy
from .primitives import plugged_in
from .scopes import renumbered
from .tape import Lit, Tape, gc_paused
from .tracer import Recorder, Tracer


@gc_paused
def trace(f, *args) -> Tape:
    """Record ``f(*args)`` (plain numpy code) into a tape. Arrays, floats and numpy scalars in
    the (pytree) arguments are traced; Python ints, bools, None and strings are static. Branches
    on traced values are recorded as guards (see ``ad.tracer``).

    >>> tape = ad.trace(lambda x: np.sin(x) * 2.0, np.ones(3))
    >>> print(tape)
    { lambda %0:f64[3] ; let
        %1:f64[3] = sin %0
        %2:f64[3] = multiply %1 2.0
      in (%2) }
    """
    return trace_call(f, args)


class ValueKeepingRecorder(Recorder):
    """A Recorder that keeps the values it computes, by variable (``ad.linearize`` reuses them
    instead of running the primal again)."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def record(self, prim, operands, params):
        out = super().record(prim, operands, params)
        self.values.update((t.variable, t.value) for t in (out if prim.multiple_results else (out,)))
        return out


def trace_call(f, args: tuple, argnums=None, rec: Recorder | None = None) -> Tape:
    """``trace``, with the float inputs of ``argnums`` (all, for None) marked as differentiated:
    converting them to plain values would lose their gradient, so the tracer refuses it.
    ``rec``: the recorder, if one that keeps more than the tape (``ValueKeepingRecorder``; the
    ``ExemplarRecorder`` of reverse mode, whose builder lifts rules at the values it kept)."""
    in_tree, leaves = pytree.InTree.build(args, _arg_names(f, len(args)))
    differentiated = None if argnums is None else set(_argnum_leaves(in_tree, argnums, len(args)))
    with rec or Recorder() as rec:
        leaves = [rec.new_tracer(concrete(x)) if t else x for x, t in zip(leaves, in_tree.traced)]
        inputs = tuple(x.variable for x, t in zip(leaves, in_tree.traced) if t)
        rec.differentiated.update(
            x.variable for i, (x, t) in enumerate(zip(leaves, in_tree.traced))
            if t and x.aval.is_float and (differentiated is None or i in differentiated))
        rec.follow_calls(sys._getframe())      # scopes: the calls below this frame's call of f
        try:
            with unwrapping_numpy(), plugged_in():     # scipy.fft's backend (ad.primitives.plug_in)
                out = f(*pytree.unflatten(in_tree.structure, leaves))
        finally:
            renamed = rec.stop_following()     # the user's frames are let go
        out_leaves, out_tree = pytree.flatten(out)
        outputs = tuple(output_operand(rec, x) for x in out_leaves)
    captured = tuple(v for v, _ in rec.captures)
    eqns = tuple(renumbered(rec.eqns, renamed))
    return Tape(inputs + captured, eqns, outputs, in_tree, out_tree,
                in_tree.traced_paths + tuple(f"captured {t.variable!r}" for _, t in rec.captures),
                captures=tuple(t for _, t in rec.captures))


def output_operand(rec: Recorder, x):
    """What a traced function returned, as an operand of ``rec``'s tape: a tracer's variable
    (checked not to be a stale view; a value of an enclosing trace is captured), else a literal."""
    if isinstance(x, Tracer):
        return rec.operand(x)[0]
    return Lit.of(x if isinstance(x, (float, int, complex, bool)) else np.asarray(x))


def concrete(x):
    """The value of a tracer (what it computed while tracing); anything else as it is."""
    return x.value if isinstance(x, Tracer) else x


def has_tracer(leaves) -> bool:
    """Whether any leaf is a tracer: the call runs inside an enclosing trace."""
    return any(isinstance(x, Tracer) for x in leaves)


def _arg_names(f, n: int) -> list[str]:
    """The names of ``f``'s first ``n`` positional parameters (``args[i]`` past them): the
    tape's input names."""
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"args[{i}]" for i in range(len(names), n)]


def normalize_argnums(argnums, nargs: int) -> tuple[int, ...]:
    """``argnums`` (an int or a sequence, negative from the end) as a tuple of argument
    indices, checked against the ``nargs`` arguments of the call."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if not -nargs <= k < nargs:
            raise ValueError(f"argnums={argnums} but the function was called with {nargs} arguments")
    return tuple(k % nargs for k in nums)


def _argnum_leaves(in_tree, argnums, nargs: int) -> list[int]:
    """The indices of the leaves of the arguments ``argnums``, in order."""
    children = in_tree.structure[1]
    offsets, n = [], 0
    for c in children:
        offsets.append(n)
        n += len(pytree.leaf_paths(c))
    return [leaf for k in normalize_argnums(argnums, nargs)
            for leaf in range(offsets[k], offsets[k] + len(pytree.leaf_paths(children[k])))]


def differentiated_inputs(tape: Tape, argnums, nargs: int):
    """What ``argnums`` differentiates of a traced call: (the indices of the tape's float inputs
    to differentiate, the gradient's structure (the argument's, or a tuple of them for a
    sequence), per leaf of those arguments its gradient's index among them or -1 for none)."""
    in_tree = tape.in_tree
    children = in_tree.structure[1]
    nums = normalize_argnums(argnums, nargs)
    traced_index = {}
    for leaf, t in enumerate(in_tree.traced):
        if t:
            traced_index[leaf] = len(traced_index)
    wrt, slots = [], []
    for leaf in _argnum_leaves(in_tree, argnums, nargs):
        i = traced_index.get(leaf)
        if i is not None and tape.inputs[i].aval.is_float:
            slots.append(len(wrt))
            wrt.append(i)
        else:
            slots.append(-1)
    grad_tree = children[nums[0]] if isinstance(argnums, int) else ("tuple", tuple(children[k] for k in nums))
    return wrt, grad_tree, slots


def input_values(tape: Tape, args) -> list:
    """The concrete values of a tape's inputs at ``args`` (the arguments', then the captured
    ones'): what the builders evaluate and lift rules at."""
    values = tape.flatten_args(args)
    return [np.asarray(v) if not isinstance(v, np.generic) else v for v in map(concrete, values)]
