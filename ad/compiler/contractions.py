"""Small matrix products as broadcast products and sums, so that the fused backend's loops take
them in (``ad.compiler.fused``, docs/fused.md): the conv layer written as im2col and a matmul
with 9 columns, its bias, activation and pooling become one loop that reads the image where it
lies, and its weight gradient ``cols.T @ da`` sums into 9 rows inside the loop of ``da``.

Two shapes of product are unrolled (M, C large; n, r at most ``SMALL``):

- a short contraction, ``(M, n) @ (n, C)``: ``sum_j A[:, j:j+1] * B[j:j+1, :]``, one loop over
  the (M, C) output, whose elementwise readers join it;
- few output rows from a long contraction, ``(r, M) @ (M, C)``: row ``i`` is the sum over the
  rows of ``P[i, :, None] * D``, an axis sum in the loop over (M, C) that makes ``D`` (float64:
  the loops sum along axes in float64 only).

A column of a matrix made by ``np.stack(..., axis=-1)`` (a concatenation along the last axis,
reshaped) is read from the stacked part itself, so the stacked copy is not made. The unrolled
products add in order where BLAS adds in its own: equal to rounding, as every fused loop is.
"""
from __future__ import annotations

import itertools

import numpy as np

from .kernels import SPELLINGS
from ..core_prims import add_p, reshape_p, sum_to_p, getitem_p, transpose_p
from ..lib.contraction import matmul_p
from ..lib.elementwise import multiply_p
from ..lib.shape import concatenate_p
from ..passes.dead_code import dce
from ..passes.rebuild import rebuild
from ..gradtape import GradTape
from ..tape import Eqn, Lit, Tape, Var, interned_aval

SMALL = 16      # the most columns (or rows) unrolled: 9 of a 3x3 im2col, 10 classes of a dense layer
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
ALL = ("slice", None, None, None)


def unroll_small_matmuls(tape: Tape) -> Tape:
    """``tape`` with its small 2-d float matrix products unrolled (the module's doc)."""
    made = {y: e for e in tape.eqns for y in e.outputs}
    counter = itertools.count(1 + max(v.n for v in (*tape.inputs, *made)), 1) if made else None
    n_forward = getattr(tape, "n_forward", len(tape.eqns))
    kept, grown = [], 0       # grown: equations added before the forward / backward boundary
    for i, e in enumerate(tape.eqns):
        form = _form(e, made)
        if form is None:
            kept.append(e)
            continue
        new = _Writer(e, made, counter)
        (new.short if form == "short" else new.rows)(*e.inputs)
        kept.extend(new.eqns)
        grown += (len(new.eqns) - 1) * (i < n_forward)
    if len(kept) == len(tape.eqns):
        return tape
    unrolled = rebuild(tape, kept, [], {})
    return dce(unrolled.replace(n_forward=n_forward + grown) if isinstance(tape, GradTape) else unrolled)


def _form(e: Eqn, made: dict) -> str | None:
    """"short" (a contraction of at most ``SMALL`` whose second operand is not a transpose: the
    loop reads its rows along the output's, and gcc vectorises no loop that reads ten arrays at
    a stride of ten), "rows" (at most ``SMALL`` output rows of a float64 product with more than
    one column whose second operand a loop makes: the sums join that loop) or None."""
    if e.prim is not matmul_p or not any(type(x) is Var for x in e.inputs):
        return None
    a, b = (x.aval for x in e.inputs)
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype not in FLOATS or 0 in (*a.shape, b.shape[1]):
        return None
    if a.shape[1] <= SMALL:
        return None if getattr(made.get(e.inputs[1]), "prim", None) is transpose_p else "short"
    if a.shape[0] <= SMALL and a.dtype == np.float64 and b.shape[1] > 1 \
            and getattr(made.get(e.inputs[1]), "prim", None) in SPELLINGS:
        return "rows"
    return None


class _Writer:
    """The equations that replace one matmul ``e``, written in order into ``eqns``."""

    def __init__(self, e: Eqn, made: dict, counter):
        self.e, self.made, self.counter, self.eqns = e, made, counter, []

    def emit(self, prim, inputs: tuple, extents: tuple, output: Var | None = None, **params) -> Var:
        """A new equation of the output shape ``extents`` (into ``output`` if given)."""
        y = output or Var(next(self.counter), interned_aval(tuple(extents), self.e.outputs[0].aval.dtype))
        self.eqns.append(Eqn(prim, inputs, tuple(sorted(params.items())), (y,), self.e.source, self.e.origin,
                             self.e.scope))
        return y

    def short(self, a: Var | Lit, b: Var | Lit):
        """``a @ b`` = the sum over j of column j of ``a`` times row j of ``b``."""
        (m, n), c = a.aval.shape, b.aval.shape[1]
        total = None
        for j in range(n):
            row = Lit.of(b.value[j:j + 1, :]) if type(b) is Lit else \
                self.emit(getitem_p, (b,), (1, c), index=(("slice", j, j + 1, None), ALL))
            into = self.e.outputs[0] if j == n - 1 else None      # the last equation makes the product
            term = self.emit(multiply_p, (self.column(a, j), row), (m, c), into if total is None else None)
            total = term if total is None else self.emit(add_p, (total, term), (m, c), into)

    def rows(self, p: Var | Lit, d: Var):
        """``p @ d`` = rows i of the sums along the first axis of row i of ``p`` (a column)
        times ``d``, stacked."""
        (r, m), c = p.aval.shape, d.aval.shape[1]
        source = self.made.get(p)
        transposed = source is not None and source.prim is transpose_p and type(source.inputs[0]) is Var \
            and tuple(source.kwargs["axes"]) == (1, 0)
        rows = []
        for i in range(r):
            if transposed:
                column = self.column(source.inputs[0], i)
            elif type(p) is Lit:
                column = Lit.of(np.ascontiguousarray(p.value[i:i + 1, :].T))
            else:
                row = self.emit(getitem_p, (p,), (1, m), index=(("slice", i, i + 1, None), ALL))
                column = self.emit(reshape_p, (row,), (m, 1), shape=(m, 1))
            term = self.emit(multiply_p, (column, d), (m, c))
            rows.append(self.emit(sum_to_p, (term,), (1, c), self.e.outputs[0] if r == 1 else None, shape=(1, c)))
        if r > 1:
            self.emit(concatenate_p, tuple(rows), (r, c), self.e.outputs[0], axis=0)

    def column(self, a: Var | Lit, j: int) -> Var | Lit:
        """Column ``j`` of the matrix ``a`` as an (M, 1) array: of the stacked part it comes
        from when ``a`` is a concatenation along its last axis (reshaped to a matrix)."""
        m, n = a.aval.shape
        if type(a) is Lit:
            return Lit.of(np.ascontiguousarray(a.value[:, j:j + 1]))
        source = self.made.get(a)
        if source is not None and source.prim is reshape_p:
            source = self.made.get(source.inputs[0]) if type(source.inputs[0]) is Var else None
        if source is not None and source.prim is concatenate_p and source.outputs[0].aval.shape[-1] == n \
                and source.kwargs["axis"] in (-1, source.outputs[0].aval.ndim - 1) \
                and all(type(x) is Var for x in source.inputs):
            for part in source.inputs:
                width = part.aval.shape[-1]
                if j < width:
                    if width > 1:
                        index = (ALL,) * (part.aval.ndim - 1) + (("slice", j, j + 1, None),)
                        part = self.emit(getitem_p, (part,), (*part.aval.shape[:-1], 1), index=index)
                    return self.emit(reshape_p, (part,), (m, 1), shape=(m, 1))
                j -= width
        return self.emit(getitem_p, (a,), (m, 1), index=(ALL, ("slice", j, j + 1, None)))

