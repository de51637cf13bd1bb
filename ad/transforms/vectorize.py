"""``ad.vmap`` and ``ad.vmap_tape``: a function of one example mapped over a batch.

The function is traced once, at the first example of the batch (traces are concrete: the
guards it records hold that example's branches), and the tape is batched equation by equation
(``ad.batching``): the result is one tape of the batched program, cached per argument
signature and guard outcome like ``ad.grad``'s. Every transform composes with it both ways:
``ad.vmap(ad.grad(f))`` traces the gradient tape and batches it (per-example gradients);
``ad.grad`` of a function calling ``ad.vmap`` records the batched program's equations, each
with its rule (a loop over the batch has the loop of its primitive's rule).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import pytree
from ..batching import batch_tape
from ..compiler.codegen import compile_tape
from ..compiler.fused import Fused
from ..passes import optimize as run_passes
from ..tape import Tape, eval_tape
from ..tracing import concrete, has_tracer, trace_call
from .cache import TapeCache

FORMS = ("lifted", "compiled", "fused")


def vmap(f, in_axes=0, out_axes=0, *, form: str = "lifted", optimize: bool = True, max_traces: int = 8):
    """``f`` mapped over a batch: ``vmap(f)(xs)`` stacks ``f(x)`` for each ``x`` of ``xs``.

    in_axes: where each argument has its batch axis: an int, None (shared by every example, as
    an unbatched parameter), or a tuple with one entry per argument, each an int, None or a
    pytree like the argument (its prefix). out_axes: the same for the result (None: an output
    that is the same for every example). form: "lifted" runs the batched tape, "compiled" its
    numpy source, "fused" that source with its elementwise chains fused into C loops. A branch on a value that differs across the batch refuses, naming the line.

    >>> ad.vmap(lambda x: np.sum(x ** 2))(np.arange(6.0).reshape(3, 2))
    array([ 1., 13., 41.])
    >>> W = np.ones((2, 2))
    >>> ad.vmap(lambda x, W: x @ W, in_axes=(0, None))(np.arange(4.0).reshape(2, 2), W)
    array([[1., 1.],
           [5., 5.]])
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r}; choose one of {FORMS}")
    cache = TapeCache(max_traces)

    def new_tape(args):
        tape = _batched(f, args, in_axes, out_axes)
        return _Batched(run_passes(tape) if optimize else tape)

    def run(entry, args, leaves):
        tape = entry.tape.tape
        if form in ("compiled", "fused") and not has_tracer(leaves) and not tape.captures:
            if entry.compiled is None:
                entry.compiled = compile_tape(tape) if form == "compiled" else Fused(tape)
            return entry.compiled(*args)
        return tape(*args)

    def vmapped(*args):
        return cache.call(args, new_tape, run)
    vmapped.cache = cache
    vmapped.cache_info = cache.info
    return vmapped


@dataclass(frozen=True)
class _Batched:
    """What ``vmap``'s cache keeps per trace: the batched tape (with the captures of its trace)."""
    tape: Tape

    @property
    def captures(self):
        return self.tape.captures


def vmap_tape(f, *args, in_axes=0, out_axes=0) -> Tape:
    """The batched program of ``f`` at ``args`` as a tape (``ad.vmap``'s, before ``ad.optimize``):
    the batch axis shows in its avals, primitives without a batching rule show as
    ``fallback_loop`` equations naming them.

    >>> tape = ad.vmap_tape(lambda x, W: np.tanh(x @ W), np.ones((5, 3)), np.ones((3, 2)),
    ...                     in_axes=(0, None))
    >>> print(tape)
    { lambda %0:f64[5,3] %1:f64[3,2] ; let
        %2:f64[5,2] = matmul %0 %1
        %3:f64[5,2] = tanh %2
      in (%3) }
    """
    return _batched(f, args, in_axes, out_axes)


def _batched(f, args, in_axes, out_axes) -> Tape:
    """Trace ``f`` at the first example of the batch, then batch its tape."""
    leaves, structure = pytree.flatten(args)
    axes = _leaf_axes(in_axes, structure, "in_axes")
    values = [concrete(x) for x in leaves]
    _check_batch(values, axes, pytree.leaf_paths(structure, "args"))
    example = [x if a is None else np.take(np.asarray(x), 0, axis=a) for x, a in zip(values, axes)]
    tape = trace_call(f, tuple(pytree.unflatten(structure, example)), argnums=())
    traced = tape.in_tree.traced
    dims = [a for a, t in zip(axes, traced) if t] + [None] * len(tape.captures)
    inputs = [np.asarray(x) if a is not None else x for x, a, t in zip(values, axes, traced) if t] \
        + [concrete(c) for c in tape.captures]
    dims = [None if d is None else d % np.ndim(x) for d, x in zip(dims, inputs)]
    return batch_tape(tape, inputs, dims, _leaf_axes(out_axes, tape.out_tree, "out_axes"))


def _leaf_axes(spec, structure, name: str) -> list:
    """Per leaf of ``structure``, its axis from ``spec``: an int or None for a whole subtree, else
    a container like it (a pytree prefix, as ``jax.vmap``'s)."""
    if spec is None or isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        return [None if spec is None else int(spec)] * len(pytree.leaf_paths(structure))
    if structure == pytree.LEAF:
        raise ValueError(f"{name}={spec!r} gives a container where the {_WHAT[name]} has one array: "
                         "give an int or None there")
    kind, children = structure[0], structure[-1]
    if isinstance(spec, dict) and kind == "dict":
        if set(spec) != set(structure[1]):
            raise ValueError(f"{name} has keys {sorted(spec)}, the argument {sorted(structure[1])}")
        parts = [spec[k] for k in structure[1]]
    elif isinstance(spec, (tuple, list)) and kind in ("tuple", "list", "namedtuple") and len(spec) == len(children):
        parts = list(spec)
    else:
        raise ValueError(f"{name}={spec!r} does not match the structure of the {_WHAT[name]} ({len(children)} "
                         f"entries): give an int, None, or one entry per entry")
    return [a for part, child in zip(parts, children) for a in _leaf_axes(part, child, name)]


_WHAT = {"in_axes": "arguments", "out_axes": "result"}


def _check_batch(values, axes, paths) -> None:
    """The batched leaves have their batch axes and agree on the batch size."""
    sizes = {}
    for path, x, a in zip(paths, values, axes):
        if a is None:
            continue
        if not pytree.is_traceable_leaf(x) or np.ndim(x) == 0:
            raise ValueError(f"in_axes maps {path} ({type(x).__name__}, rank {np.ndim(x)}) along axis "
                             f"{a}: only arrays of rank 1 or more have a batch axis; give it in_axes None")
        if not -np.ndim(x) <= a < np.ndim(x):
            raise ValueError(f"in_axes maps {path} (shape {np.shape(x)}) along axis {a}, which it does not have")
        sizes[path] = np.shape(x)[a]
    if not sizes:
        raise ValueError("ad.vmap needs at least one batched argument: every in_axes entry is None")
    if 0 in sizes.values():
        raise ValueError(f"ad.vmap got an empty batch ({sizes}): it traces the function at the first "
                         "example, so it needs one")
    if len(set(sizes.values())) > 1:
        raise ValueError(f"ad.vmap got batch sizes that differ: {sizes}; every batched argument "
                         "needs the same length along its batch axis")


def run_batched(tape: Tape, values: list, batched: set, store: dict, key, compiled: bool = False) -> list:
    """Run ``tape`` once on flat ``values`` whose inputs ``batched`` (indices) carry a batch axis
    first (the basis vectors of a Jacobian), all outputs with the batch axis first. The batched
    tape is made on first use and kept in ``store`` under ``key`` (with its compiled form if
    ``compiled``): the Jacobians push all their basis vectors through it at once."""
    entry = store.get(key)
    if entry is None:
        dims = [0 if k in batched else None for k in range(len(values))]
        tape = batch_tape(tape, [concrete(v) for v in values], dims, [0] * len(tape.outputs))
        entry = store[key] = [run_passes(tape), None]
    if compiled and not has_tracer(values):
        if entry[1] is None:
            entry[1] = compile_tape(entry[0])
        return list(entry[1].call_flat(values))
    return eval_tape(entry[0], values)
