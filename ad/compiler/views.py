"""The views a fused loop reads where their base array holds them (docs/fused.md, "What it
fuses"): numpy's view equations (basic slices, transposes, reshapes, broadcasts) make no copy,
but a loop that took such a value as an operand would need it contiguous, so numpy would copy
it first (an im2col's nine shifted slices of the image, 2.7 MB). Applied to the base's element
indices, the view equations say where each element of the view lies in the base (``views``);
where those indices step at constant strides along the loop's axes (``affine``), the loop reads
the base at those strides.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import broadcast_to_p, getitem_p, reshape_p, transpose_p
from ..tape import Eqn, Var

VIEWS = (reshape_p, transpose_p, broadcast_to_p, getitem_p)   # with one operand: numpy's views
LARGEST_VIEWED = 1 << 22   # the most elements of a view's base, or of a loop reading it, whose indices
                           # are worked out (an int64 each, when compiling)


def views(plan: list, read: set) -> dict:
    """The values in ``read`` that are views of another array, a variable or a constant (numpy
    lines of the driver: slices, transposes, reshapes, broadcasts, and views of those):
    variable -> (base, the flat index in the base of each of its elements, the view equations
    from the base on). A loop reads such a value where its base holds it, if the indices step at
    constant strides along the loop's axes (``affine``): an im2col's shifted slices are read
    from the image, without the copies numpy makes to pass them on."""
    made = {e.outputs[0]: e for e in plan if isinstance(e, Eqn) and e.prim in VIEWS
            and len(e.inputs) == 1 and (type(e.inputs[0]) is Var or isinstance(e.inputs[0].value, np.ndarray))}
    found: dict = {}
    for x in read:
        eqns, e = [], made.get(x)
        while e is not None:          # back to the first array that is not a view
            eqns.insert(0, e)
            e = made.get(e.inputs[0])
        if eqns and 0 < eqns[0].inputs[0].aval.size <= LARGEST_VIEWED:
            at = np.arange(eqns[0].inputs[0].aval.size).reshape(eqns[0].inputs[0].aval.shape)
            for e in eqns:
                at = e.prim.impl(at, **e.kwargs)
            found[x] = (eqns[0].inputs[0], at, eqns)
    return found


def affine(at: np.ndarray) -> tuple | None:
    """(strides along its axes, offset) if the indices ``at`` step at constant strides from
    ``at``'s first, else None: where a loop over ``at.shape`` reads a view whose elements are
    at these indices of its base (``views``)."""
    offset = int(at.flat[0])
    step = tuple(int(at[(0,) * k + (1,) + (0,) * (at.ndim - k - 1)]) - offset if extent > 1 else 0
                 for k, extent in enumerate(at.shape))
    grid = sum((np.arange(extent).reshape((-1,) + (1,) * (at.ndim - k - 1)) * s
                for k, (extent, s) in enumerate(zip(at.shape, step)) if s), np.int64(offset))
    return (step, offset) if np.array_equal(at, np.broadcast_to(grid, at.shape)) else None
