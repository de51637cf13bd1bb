"""The trace state, at the bottom of the core: which traces are active, innermost last.

``Primitive.bind`` asks ``find_recorder`` whether any operand is traced; it needs to know only
the base class ``Traced`` (every tracer's), so this module depends on nothing else in ``ad``
and the tracer, the dispatch logic and the rule library all import down to it.
"""
from __future__ import annotations

from .errors import TraceError

ACTIVE: list = []    # the active recorders, outermost first


class Traced:
    """Base class of tracers: ``_rec`` is the recorder of the trace that made the value."""
    __slots__ = ("_rec",)


def find_recorder(operands):
    """The recorder of the innermost active trace among the operands' tracers, or None."""
    rec = None
    for x in operands:
        if isinstance(x, Traced):
            r = x._rec
            if rec is None or r.level > rec.level:
                rec = r
    if rec is not None and not rec.active:
        raise TraceError("a traced value is used after its trace ended (was it stored in a global "
                         "or in an object that outlived the traced call?)")
    return rec
