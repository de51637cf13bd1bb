"""Where an equation came from: its ``Origin`` (the user's program, a rule's pullback, a fan-in
of cotangents, forward mode's pushforwards...), which the builders stamp on every equation they
make and the checker, the debugger and the generated code's comments read."""
from __future__ import annotations

import enum
from dataclasses import dataclass


class OriginKind(enum.StrEnum):
    """What made an equation. A string enum: saved files and printed tapes spell it by value.

    ``phase``: the section an equation belongs to ("forward": the user's program and the rules'
    primal bodies; "backward": a gradient's equations; "tangent": forward mode's). ``block``:
    the per-rule block it belongs to ("pullback": a rule's lifted pullback and its projection;
    "pushforward": a rule's pushforward), None for the equations between blocks."""
    PRIMAL = "primal"                     # the user's program or a rule's primal body
    PULLBACK = "pullback"                 # a lifted pullback
    PROJECT = "project"                   # a cotangent projected onto its primal
    ACCUMULATE = "accumulate"             # fan-in of cotangents
    SEED = "seed"                         # the output cotangent
    ZEROS = "zeros"                       # a requested gradient no path reaches
    PUSHFORWARD = "pushforward"           # a rule's pushforward, transposed from its pullback
    PUSHFORWARD_VJP = "pushforward_vjp"   # the vjp of its pullback, where that has no transpose
    PUSHFORWARD_FRULE = "pushforward_frule"   # an ``@ad.frule``
    TANGENT_ZEROS = "tangent_zeros"       # a tangent no path reaches
    TRANSPOSE = "transpose"               # ``ad.transpose``: an equation's transpose

    @property
    def phase(self) -> str:
        return _PHASES.get(self, "backward")

    @property
    def block(self) -> str | None:
        return _BLOCKS.get(self)


_PHASES = {OriginKind.PRIMAL: "forward", **dict.fromkeys((
    OriginKind.PUSHFORWARD, OriginKind.PUSHFORWARD_VJP, OriginKind.PUSHFORWARD_FRULE, OriginKind.TANGENT_ZEROS),
    "tangent")}
_BLOCKS = {**dict.fromkeys((OriginKind.PULLBACK, OriginKind.PROJECT), "pullback"), **dict.fromkeys((
    OriginKind.PUSHFORWARD, OriginKind.PUSHFORWARD_VJP, OriginKind.PUSHFORWARD_FRULE), "pushforward")}
_KINDS = {k.value: k for k in OriginKind}     # str or OriginKind -> OriginKind, at a dict's cost
ORIGIN_KINDS = tuple(k.value for k in OriginKind)
_PUSHFORWARD_VIA = {OriginKind.PUSHFORWARD: "from its pullback", OriginKind.PUSHFORWARD_VJP: "by the vjp of its pullback",
                    OriginKind.PUSHFORWARD_FRULE: "its frule"}


@dataclass(slots=True, init=False, unsafe_hash=True)
class Origin:
    """Where an equation came from.

    kind: an ``OriginKind`` (given as it or its value, ``"pullback"``).
    of:   for backward equations, the forward variable whose pullback produced this equation;
          for primal equations inside a rule body, the rule instance's first output.
    rule: the name of the rule (primitive) involved.
    """
    kind: OriginKind
    of: object = None       # a Var of the tape (origins sit below the tape: no import of it)
    rule: str | None = None

    def __init__(self, kind: str, of=None, rule: str | None = None):
        self.kind = _KINDS[kind]
        self.of = of
        self.rule = rule

    @property
    def is_backward(self) -> bool:
        return self.kind is not OriginKind.PRIMAL

    def describe(self) -> str:
        kind, of = self.kind, self.of
        if kind is OriginKind.PULLBACK:
            return f"pullback of {of!r} ({self.rule})"
        if kind is OriginKind.ACCUMULATE:
            return f"accumulate cotangent of {of!r}"
        if kind is OriginKind.PROJECT:
            return f"project cotangent onto {of!r} ({self.rule})"
        if kind in _PUSHFORWARD_VIA:
            return f"pushforward of {of!r} ({self.rule}), {_PUSHFORWARD_VIA[kind]}"
        if kind is OriginKind.TANGENT_ZEROS:
            return f"zero tangent of {of!r}"
        if kind is OriginKind.TRANSPOSE:
            return f"transpose of {of!r} ({self.rule})"
        if kind is OriginKind.SEED:
            return "output cotangent"
        if kind is OriginKind.ZEROS:
            return f"zero gradient for {of!r}"
        return f"rule {self.rule} of {of!r}" if of is not None else "primal"


PRIMAL = Origin("primal")
