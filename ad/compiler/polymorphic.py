"""How compiled code writes a tape polymorphic in its number of examples
(``ad.compiler.examples``): ``codegen`` adds these lines to the function it writes.

- ``prologue``: ``n = v2.shape[0]``, read from the first examples input, and a check that the
  others agree on it; every symbolic literal is written as its source (``ns.literals``), every
  symbolic param writes itself (its repr). Over a Dask namespace (``xp="dask"``) the tape must
  run chunk by chunk (``ad.compiler.chunks`` refuses it otherwise), and a broadcast or a fill that
  creates the examples axis is made in blocks like theirs (``broadcast_examples``, ``full_examples``).
- ``epilogue``: a check that every output has its symbolic shape at ``n``, the last guard
  against a size that did not follow the number of examples.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import broadcast_to_p, full_p
from ..tape import Tape, Var
from .chunks import broadcast_examples, check_chunked, full_examples
from .emit import Namespace, Spelling, value_source
from .examples import ExamplesError, SizeInt, shape_at

DASK = "array_api_compat.dask.array"      # the namespace xp="dask" (and dask.array) names


def prologue(tape: Tape, ns: Namespace) -> list[str]:
    """The lines that read ``n`` (and, for Dask, the examples' chunks) and check the examples
    inputs agree on it; registers with ``ns`` the literals' sources and, for Dask, the spellings of
    a broadcast and a fill."""
    ex = tape.meta["examples"]
    ex.check(tape)
    ns.literals.update((lit, sized.source(ns)) for lit, sized in ex.literals.items())
    (first, axis), *rest = ex.inputs
    names = [tape.input_names[i] for i, _ in ex.inputs]
    ns.globals["check_examples"] = Agree(tuple(names), tuple(a for _, a in ex.inputs))
    others = "".join(f", v{tape.inputs[i].n}.shape[{a}]" for i, a in rest)
    lines = [f"    n = v{tape.inputs[first].n}.shape[{axis}]  # the number of examples: "
             f"axis {axis} of {', '.join(dict.fromkeys(names))}",
             f"    check_examples(n{others})"]
    if getattr(ns.xp, "__name__", None) == DASK:
        check_chunked(tape)
        for prim, fn, operands in ((broadcast_to_p, broadcast_examples, lambda args, p: [args[0], p["shape"]]),
                                   (full_p, full_examples, lambda args, p: [p["shape"], p["fill_value"], p["dtype"]])):
            ns.globals[fn.__name__] = fn
            ns.spellings[prim] = Spelling(_Respelled(prim, _chunked(fn.__name__, operands, ns)), ns)
        lines.append(f"    chunks = v{tape.inputs[first].n}.chunks[{axis}]  # Dask's blocks of the examples")
    return lines


def epilogue(tape: Tape, outs: str, ns: Namespace) -> str:
    """The line that checks every output's shape against its symbolic shape at ``n``."""
    ex = tape.meta["examples"]
    ns.globals["check_outputs"] = Outputs(tuple(ex.shape(x) if type(x) is Var else np.shape(x.value)
                                                for x in tape.outputs))
    return f"    check_outputs(n, {outs})"


def _chunked(name: str, operands, ns: Namespace):
    """The spelling of a broadcast or a fill in Dask code: ``name`` called on ``operands(args,
    params)`` (sources, or param values), the axis of the examples (its shape's ``n``) and their
    chunks."""
    def spelling(args, params):
        shape = params["shape"]
        axis = next((k for k, s in enumerate(shape) if isinstance(s, SizeInt) and s.source == "n"), None)
        written = [x if type(x) is str else value_source(x, ns) for x in operands(args, params)]
        return f"{name}({', '.join(written)}, {axis}, chunks)"
    return spelling


class _Respelled:
    """A primitive as the emitter reads it (``Spelling``), with another spelling."""

    def __init__(self, prim, spelling):
        self.spelling = self.array_api_spelling = spelling
        self.scalar_spelling = None
        self.kind, self.multiple_results, self.elementwise = prim.kind, prim.multiple_results, prim.elementwise


class Agree:
    """The compiled code's check that the examples inputs agree on ``n``, a known int."""

    def __init__(self, names: tuple[str, ...], axes: tuple[int, ...]):
        self.names, self.axes = names, axes

    def __call__(self, *sizes) -> None:
        if isinstance(sizes[0], (int, np.integer)) and all(s == sizes[0] for s in sizes):
            return
        said = ", ".join(f"{name} has {s} (axis {a})" for name, s, a in zip(self.names, sizes, self.axes))
        if not all(isinstance(s, (int, np.integer)) for s in sizes):
            raise ExamplesError(f"the number of examples is unknown ({said}): give arrays of known "
                                "shape (a Dask array's chunk sizes: x.compute_chunk_sizes())")
        raise ExamplesError(f"the examples inputs disagree on the number of examples: {said}; "
                            "pass the same examples in each")


class Outputs:
    """The compiled code's check of its outputs' shapes: each must be its symbolic shape at
    ``n`` (a param that lost its symbol would give the sample's size)."""

    def __init__(self, shapes: tuple):
        self.shapes = shapes

    def __call__(self, n: int, *outs) -> None:
        for k, (x, shape) in enumerate(zip(outs, self.shapes)):
            want = shape_at(shape, n)
            if tuple(np.shape(x)) != want:
                raise ExamplesError(f"output {k} has shape {tuple(np.shape(x))} at {n} examples where the "
                                    f"tape says {want} (symbolically {shape}): a size of the tape did not "
                                    "follow the number of examples; trace again with examples=")
