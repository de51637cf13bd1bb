"""``examples=``: a gradient polymorphic in the number of examples, and run on data larger
than memory (docs/arrays.md, "Data larger than memory: Dask").

``polymorphic``: the gradient tape traced at the sample's ``B`` examples and at its first
``B - 1``, anti-unified into one tape whose sizes are functions of ``n`` (``ad.compiler.unify``);
``ad.grad_tape(..., examples=...)`` returns it, and ``ad.compile`` writes it as code that runs on
any number of examples.

``value_and_grad``: ``ad.value_and_grad(f, form="compiled", examples=...)``: one compiled
program per signature, the number of examples left out of it, traced on the first call's
arguments (for Dask arrays on the first rows of their first chunk, made numpy) and run on the
arrays given. On Dask arrays chunked along the examples the result is a lazy Dask graph whose
reductions over the examples are Dask's tree reductions (``ad.compiler.chunks`` refuses an
equation that would need all the examples at once): ``dask.compute(value, *grads)`` runs it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import pytree
from ..compiler.chunks import is_dask
from ..compiler.array_api import to_host
from ..compiler.codegen import compile_tape
from ..compiler.examples import ExamplesError
from ..compiler.unify import unify
from ..errors import GuardError
from ..tape import Tape
from .cache import CacheInfo, signature

SAMPLE = 8     # the rows of a Dask array's first chunk traced on (at least 3: B and B - 1 >= 2)


def polymorphic(trace: Callable, args: tuple, examples, axis: int = 0) -> Tape:
    """``trace(args)`` (a tape) made polymorphic in the number of examples: traced at ``args``
    and at their first ``B - 1`` examples along ``axis`` of the arguments ``examples`` names."""
    positions = _positions(examples, len(args))
    size = _count(args, positions, axis)
    if size < 3:
        raise ExamplesError(f"examples=: the sample holds {size} examples; it needs at least 3 (the gradient "
                            "is traced at the sample and at all of it but its last example, two sizes of "
                            "at least 2, to find what depends on their number)")
    fewer = _map_examples(args, positions, lambda x: x[(slice(None),) * axis + (slice(0, size - 1),)])
    return unify(trace(args), trace(fewer), (size, size - 1), axis)


def _positions(examples, n_args: int) -> tuple[int, ...]:
    positions = (examples,) if isinstance(examples, int) else tuple(examples)
    if not positions or any(not isinstance(p, int) or not -n_args <= p < n_args for p in positions):
        raise ExamplesError(f"examples={examples!r}: name the positions of the arguments that hold the "
                            f"examples (ints below {n_args})")
    return tuple(sorted({p % n_args for p in positions}))


def _map_examples(args: tuple, positions: tuple[int, ...], fn: Callable) -> tuple:
    """``args`` with ``fn`` applied to every array leaf of the examples arguments."""
    out = list(args)
    for p in positions:
        leaves, structure = pytree.flatten(args[p])
        out[p] = pytree.unflatten(structure, [fn(x) if _is_array(x) else x for x in leaves])
    return tuple(out)


def _is_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.generic)


def _count(args: tuple, positions: tuple[int, ...], axis: int) -> int:
    """The number of examples the examples arguments agree on."""
    sizes = {}
    for p in positions:
        leaves, _ = pytree.flatten(args[p])
        for k, x in enumerate(leaves):
            if not _is_array(x) or np.ndim(x) <= axis:
                raise ExamplesError(f"examples=: argument {p} holds {type(x).__name__} {np.shape(x)}, "
                                    f"not an array with an axis {axis} of examples")
            sizes[f"argument {p}" + (f" leaf {k}" if len(leaves) > 1 else "")] = np.shape(x)[axis]
    if len(set(sizes.values())) != 1:
        raise ExamplesError(f"examples=: the examples arguments disagree on the number of examples along "
                            f"axis {axis}: {', '.join(f'{k} has {v}' for k, v in sizes.items())}")
    return next(iter(sizes.values()))


class Programs:
    """The compiled programs of ``value_and_grad(..., examples=...)``, one per signature (shapes
    with the examples' axis left out, dtypes, Dask or not); a program whose guards break on a
    call is traced again on that call's examples."""

    def __init__(self):
        self.programs: dict = {}
        self.traces = self.hits = self.guard_failures = 0
        self.reasons: list[str] = []

    def info(self) -> CacheInfo:
        return CacheInfo(self.traces, self.hits, self.guard_failures, len(self.programs),
                         len(self.programs), tuple(self.reasons))


def value_and_grad(trace: Callable, examples, axis: int = 0, form: str = "compiled", xp=None):
    """``(f(*args), gradient)`` by one compiled program for any number of examples (see the
    module); ``trace(args)``: the optimized gradient tape of ``f`` at ``args``; ``xp``: the
    array namespace the program runs on (``ad.compile``'s; Dask's for Dask arrays if None)."""
    if form != "compiled":
        raise ValueError(f"examples= runs the compiled gradient (form='compiled'), not form={form!r}: "
                         "only compiled code reads the number of examples when it runs")
    cache = Programs()

    def value_and_grad_f(*args):
        positions = _positions(examples, len(args))
        _count(args, positions, axis)
        key = _key(args, positions, axis)
        program = cache.programs.get(key)
        if program is not None:
            cache.hits += 1
            try:
                return _run(program, args)
            except GuardError as exc:      # a branch the trace took does not hold: trace these
                cache.guard_failures += 1
                cache.reasons = (cache.reasons + [f"{exc.guard} at {exc.source}"])[-5:]
        program = cache.programs[key] = _program(trace, args, positions, axis, xp)
        cache.traces += 1
        return _run(program, args)
    value_and_grad_f.cache = cache
    value_and_grad_f.cache_info = cache.info
    return value_and_grad_f


def _key(args: tuple, positions: tuple[int, ...], axis: int) -> tuple:
    """The signature of the arguments, each examples leaf's axis of examples left out."""
    key = []
    for p, arg in enumerate(args):
        leaves, structure = pytree.flatten(arg)
        key.append((structure,) + tuple(_leaf_key(x, axis if p in positions else None) for x in leaves))
    return tuple(key)


def _leaf_key(x, axis: int | None) -> tuple:
    """A numpy leaf's signature (``ad.transforms.cache``); another library's array's shape
    (``axis`` left out), dtype and type."""
    if isinstance(x, (np.ndarray, np.generic)) and axis is None or not hasattr(x, "shape"):
        return signature([x])[0]
    shape = tuple(x.shape)
    return (shape if axis is None else shape[:axis] + shape[axis + 1:]), str(x.dtype), type(x)


def _program(trace: Callable, args: tuple, positions: tuple[int, ...], axis: int, xp):
    """The compiled polymorphic gradient, over ``xp`` (Dask's namespace for Dask arrays if
    None), traced on the arguments (host copies of another library's arrays), so that the
    branches it takes hold for them; on Dask arrays, on the first rows of their first chunk."""
    if any(map(is_dask, pytree.flatten(args)[0])):
        args = _map_examples(args, positions, lambda x: x[(slice(None),) * axis + (slice(0, SAMPLE),)])
        xp = "dask" if xp is None else xp
    host = tuple(pytree.unflatten(s, [_host(x) for x in leaves]) for leaves, s in map(pytree.flatten, args))
    return compile_tape(polymorphic(trace, host, positions, axis), xp=xp)


def _host(x):
    """An array of another library as a numpy copy (numpy's and other leaves as they are)."""
    return x if isinstance(x, (np.ndarray, np.generic)) or not hasattr(x, "shape") else to_host(x)


def _run(program, args: tuple):
    tape = program.tape
    leaves, _ = pytree.flatten(args)
    return program.call_flat(tape.in_tree.select_traced(leaves))
