"""A traced tape batched: every variable of one example's program gets a batch axis (or none,
when it is the same for every example), and every equation becomes its primitive's batching
rule (``rule_for``) or the loop over the batch (``fallback.loop``), as JAX batches a jaxpr.

The rules run on tracers of a new trace, so what they do is recorded: the result is an ordinary
tape of the batched program (it prints, optimises, compiles, is differentiated) that keeps the
user's lines and scopes of the equations it came from. Equations that read no batched value are
recorded as they are, guards among them; a guard on a batched value has no single answer (each
example may take its own branch) and refuses, naming the user's line. A random primitive reads
no batched value either, so the batch shares its draw (as ``jax.vmap`` shares the draws of an
unbatched key): a draw per example needs a loop of calls.
"""
from __future__ import annotations

import numpy as np

from ..errors import BatchedBranchError
from ..tape import Tape, Var, gc_paused
from ..tracer import Recorder, Tracer
from .derived import batch_size, rule_for
from .fallback import loop


@gc_paused
def batch_tape(tape: Tape, values: list, dims: list, out_axes: list) -> Tape:
    """The batched program of ``tape``: ``values`` are its inputs' values for the whole batch,
    ``dims`` their batch axes (None: shared by every example), ``out_axes`` where each output
    puts its batch axis (None: the output must be shared)."""
    with Recorder() as rec:
        tracers = [rec.new_tracer(v) for v in values]
        env = {v: (t, d) for v, t, d in zip(tape.inputs, tracers, dims)}
        for e in tape.eqns:
            rec.source, rec.scope = e.source, e.scope
            args, arg_dims = [], []
            for x in e.inputs:
                value, dim = env[x] if type(x) is Var else (x.value, None)
                args.append(value)
                arg_dims.append(dim)
            outs, out_dims = _batched(e, args, arg_dims)
            if not e.prim.multiple_results:
                outs, out_dims = (outs,), (out_dims,)
            env.update((v, (o, d)) for v, o, d in zip(e.outputs, outs, out_dims))
        rec.source, rec.scope = None, ()
        size = batch_size(values, dims)
        outputs = []
        for x, axis in zip(tape.outputs, out_axes):
            value, dim = env[x] if type(x) is Var else (x.value, None)
            outputs.append(rec.operand(_placed(value, dim, axis, size, x))[0])
    return Tape(tuple(t.variable for t in tracers), tuple(rec.eqns), tuple(outputs), tape.in_tree,
                tape.out_tree, tape.input_names, captures=tape.captures)


def _batched(e, args, dims):
    """One equation on batched operands: (outputs, their batch axes)."""
    if all(d is None for d in dims):
        out = e.prim.bind(*args, **dict(e.params))
        return out, ((None,) * len(out) if e.prim.multiple_results else None)
    if e.prim.kind == "guard":
        raise BatchedBranchError(
            "a branch (or an integer, or a conversion to a plain value) on a value that differs "
            "across the batch: the trace took the first example's branch, but each example may take "
            "another, so a batched program has no single answer here. Fix: np.where for a choice "
            "per element, or keep the value the branch reads out of the batch (in_axes=None)",
            location=e.source)
    rule = rule_for(e.prim)
    result = NotImplemented if rule is None else rule(args, tuple(dims), **dict(e.params))
    if result is NotImplemented:
        return loop(e.prim, args, dims, dict(e.params))
    return result


def _placed(value, dim, axis, size: int, x):
    """An output with its batch axis at ``axis``: moved there, or, for an output shared by the
    batch, broadcast along a new one."""
    if axis is None:
        if dim is not None:
            raise ValueError(f"out_axes=None for the output {x!r}, which differs across the batch: "
                             "give it an out axis, or compute it from unbatched inputs only")
        return value
    if dim is None:
        value = np.expand_dims(value, axis) if isinstance(value, Tracer) else np.expand_dims(np.asarray(value), axis)
        shape = list(np.shape(value))
        shape[axis] = size
        return np.broadcast_to(value, tuple(shape))
    return np.moveaxis(value, dim, axis) if dim != axis % np.ndim(value) else value
