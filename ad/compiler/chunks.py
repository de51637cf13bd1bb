"""Which equations of a polymorphic tape run chunk by chunk on Dask arrays chunked along the
examples (``check_chunked``), and the broadcast and fill that make an examples axis in blocks like
theirs (``broadcast_examples``, ``full_examples``): ``ad.compiler.polymorphic`` writes Dask code
with them.

Dask runs the compiled code lazily, one task per chunk, as long as no operation needs the whole
examples axis at once; where one does, Dask gathers the data into one chunk (a sort, a cumulative
sum or an FFT along the examples, a reshape that mixes them with another axis, a matrix of
examples by examples): data larger than memory would not fit. So compiling for Dask refuses such
an equation up front, naming it and the user's line, and is conservative: an equation on a value
computed from the examples is allowed only if it is known to run chunk by chunk:

- elementwise primitives (the ``elementwise`` trait, ``ad.batching.derived`` broadcasts them
  the same way), the examples axes of their operands aligned;
- reductions (sum, mean, prod, max, min, any, all, ``sum_to``) and contractions (matmul,
  einsum): over the examples, Dask's tree reductions (its matmul and einsum sum the blocks'
  products without concatenating them); along other axes, one task per chunk;
- primitives that map over every axis but their axis params (``ad.batching.derived`` batches
  them by shifting those: a softmax, a cumulative sum over the features), the examples axis not
  among them;
- shape operations that keep the examples axis whole and in order: transpose, reshape of the
  axes after it, basic indexing with a full slice on it, broadcasting, concatenating along
  another axis;

and every value has at most one axis of examples, of size exactly ``n``; a value of that size
made from no examples is a broadcast or a fill (made in blocks like theirs). A guard on a value computed
from the examples is refused too: checking it would compute the graph while it is built.
"""
from __future__ import annotations

import numpy as np

from ..batching.derived import how_batched
from ..core_prims import broadcast_to_p, full_p, getitem_p, reshape_p, sum_to_p, transpose_p
from ..lib.contraction import einsum_p, matmul_p
from ..lib.reductions import all_p, any_p, max_p, mean_p, min_p, prod_p, sum_p
from ..lib.shape import concatenate_p
from ..tape import Tape, Var
from .examples import ExamplesError, SizeInt, describe

REDUCTIONS = frozenset({sum_p, mean_p, prod_p, max_p, min_p, any_p, all_p, sum_to_p})
CONTRACTIONS = frozenset({matmul_p, einsum_p})
SHAPES = frozenset({transpose_p, reshape_p, broadcast_to_p, getitem_p, concatenate_p})
SOURCES = frozenset({broadcast_to_p, full_p})      # what makes an examples axis from no examples

_ADVICE = ("on Dask arrays chunked along the examples only elementwise operations, reductions and "
           "contractions (matmul, einsum) over them, and transposes, reshapes, indexing and "
           "broadcasts that keep the examples axis whole, run chunk by chunk; compute the rest on "
           "values that do not hold the examples (the parameters), or in numpy on data that fits")


def is_dask(x) -> bool:
    """A Dask array (told without importing Dask)."""
    return type(x).__module__.startswith("dask.") and hasattr(x, "chunks")


def broadcast_examples(x, shape: tuple, axis: int | None, chunks: tuple):
    """``x`` broadcast to ``shape`` in Dask code: where that creates the examples ``axis``
    (``x`` has none, or 1 there), chunked along it as the examples (``chunks``) are, one block
    per task; Dask's own broadcast would make all of them one block."""
    lead = len(shape) - np.ndim(x)
    if axis is None or axis >= lead and np.shape(x)[axis - lead] != 1:
        return np.broadcast_to(x, shape)
    own = x.chunks if is_dask(x) else tuple((s,) for s in np.shape(x))
    blocks = tuple(chunks if k == axis else own[k - lead] if k >= lead and np.shape(x)[k - lead] == s else (s,)
                   for k, s in enumerate(shape))
    import dask.array as da      # (Dask code runs only where Dask is installed)
    return da.broadcast_to(x, shape, chunks=blocks)


def full_examples(shape: tuple, fill_value, dtype, axis: int | None, chunks: tuple):
    """An array of ``shape`` filled with one value in Dask code, in blocks like the examples'
    along their ``axis``."""
    import dask.array as da
    return da.full(shape, fill_value, dtype=dtype,
                   chunks=tuple(chunks if k == axis else (s,) for k, s in enumerate(shape)))


def check_chunked(tape: Tape) -> None:
    """Refuse the first equation of a polymorphic tape that would need all the examples at once."""
    ex = tape.meta["examples"]
    dependent = {tape.inputs[i] for i, _ in ex.inputs}
    for i, e in enumerate(tape.eqns):
        if not any(type(x) is Var and x in dependent for x in e.inputs):
            if any(ex.axes(v) for v in e.outputs):           # a Dask array of the examples' size
                if e.prim not in SOURCES:
                    raise ExamplesError(f"{describe(e, i)} makes an array of the examples' size from none "
                                        f"of them, in Dask's blocks and not theirs; {_ADVICE}")
                dependent.update(e.outputs)
            continue
        dependent.update(e.outputs)
        for v in e.outputs:
            symbolic = [s for s in ex.shape(v) if isinstance(s, SizeInt)]
            if len(symbolic) > 1 or any(s.source != "n" for s in symbolic):
                raise ExamplesError(f"{describe(e, i)} makes {v!r} of shape {ex.shape(v)}, not one axis of "
                                    f"the n examples beside fixed sizes: Dask would gather the examples; {_ADVICE}")
        why = _unchunked(e, ex)
        if why:
            raise ExamplesError(f"{describe(e, i)} {why}; {_ADVICE}")


def _unchunked(e, ex) -> str | None:
    """Why the equation does not run chunk by chunk, or None if it does."""
    prim = e.prim
    if prim.kind == "guard":
        return "checks a value computed from the examples: the check would compute the whole graph"
    if prim.elementwise:
        return _misaligned(e, ex)
    if prim in REDUCTIONS or prim in CONTRACTIONS:
        return None
    x, y = e.inputs[0], e.outputs[0]
    held, made = ex.axes(x) if type(x) is Var else (), ex.axes(y)
    if prim not in SHAPES:
        if held and _per_example(e, ex, held[0]):
            return None
        if held and _along(e, held[0]):
            return f"needs all the examples at once ({prim.name} along the examples axis)"
        return (f"is {prim.name} of a value holding the examples, not known to run chunk by chunk" if held or made
                else f"runs on a value computed from the examples, and {prim.name} is not known to run lazily on Dask")
    if prim is transpose_p or not held and not made:
        return None
    if prim is broadcast_to_p:
        return _misaligned(e, ex)
    if prim is reshape_p and held and made and _names(ex.shape(x)[:held[0]]) == _names(ex.shape(y)[:made[0]]):
        return None
    if prim is getitem_p and len(e.inputs) == 1 and _keeps(e.kwargs["index"], len(x.aval.shape), held[0]):
        return None
    if prim is concatenate_p and made and e.kwargs["axis"] % len(y.aval.shape) != made[0]:
        return None
    return f"needs all the examples at once ({prim.name} mixes the examples axis with another)"


def _per_example(e, ex, axis: int) -> bool:
    """Does a primitive batched by shifting its axis params (``ad.batching.derived``: it maps
    over any other axis, a softmax, a cumulative sum) run along axes that leave out the
    examples ``axis``, every operand holding them there?"""
    if how_batched(e.prim) != "derived" or _along(e, axis) is not False:
        return False
    return all(ex.axes(x) in ((), (axis,)) for x in e.inputs if type(x) is Var)


def _along(e, axis: int) -> bool | None:
    """Do the axis params (``axis``, ``axes``; None: all) of an equation name ``axis`` of its
    first operand? None if it has none."""
    names = [k for k in ("axis", "axes") if k in e.prim.params]
    if not names:
        return None
    rank = len(e.inputs[0].aval.shape)
    for name in names:
        along = e.kwargs[name]
        if along is None or axis in {int(a) % rank for a in (along if isinstance(along, tuple) else (along,))}:
            return True
    return False


def _names(shape: tuple) -> tuple:
    """A symbolic shape comparable entry by entry (a size's source, not its sample value)."""
    return tuple(s.source if isinstance(s, SizeInt) else s for s in shape)


def _misaligned(e, ex) -> str | None:
    """Elementwise (and broadcasting) equations: every operand's examples axis must be the
    result's, aligned from the right as numpy broadcasts."""
    y = e.outputs[0]
    made = ex.axes(y)
    for x in e.inputs:
        held = ex.axes(x) if type(x) is Var else ()
        if held and (not made or held[0] - len(x.aval.shape) != made[0] - len(y.aval.shape)):
            return f"broadcasts the examples axis {held[0]} of {x!r} onto another axis of {y!r}"
    return None


def _keeps(index: tuple, rank: int, axis: int) -> bool:
    """Does basic indexing keep ``axis`` whole (under ``...``, past the index, or a full slice)?"""
    if any(isinstance(s, tuple) and s[0] == "array" for s in index):
        return False
    taken = sum(1 for s in index if s is not None and s != "...")
    at = 0
    for s in index:
        if s == "...":
            if at <= axis < at + rank - taken:
                return True
            at += rank - taken
        elif s is not None:
            if at == axis:
                return isinstance(s, tuple) and s[1:] == (None, None, None)
            at += 1
    return axis >= at
