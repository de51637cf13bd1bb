"""The gradient tape (``GradTape``): a forward section (the rules' primal bodies) and a backward
section (their lifted pullbacks), the residuals the backward section reads, and its partition
into a forward and a backward program. Every stage after reverse mode reads it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import pytree
from .origins import OriginKind
from .scopes import scope_tree
from .tape import Tape, Var, eval_tape, format_tape


# The entries of a gradient tape's ``meta`` that map onto its variables (passes rewrite them):
# primal_map: primal Var -> joint Var (the checker names equations by it);
# cotangents: forward Var -> its total cotangent (the debugger shows it).
VAR_MAPS = ("primal_map", "cotangents")


@dataclass(frozen=True)
class Fallback:
    """A rule that could not be lifted and runs as an opaque closure."""
    rule: str
    source: str | None
    reason: str

    def __str__(self) -> str:
        return f"{self.rule} at {self.source or '?'}: {self.reason}"


@dataclass(frozen=True, repr=False)   # displays as its listing (Tape._repr_pretty_)
class GradTape(Tape):
    """A joint tape: ``outputs`` are the function's outputs, then the gradients.

    ``gt(*args)`` returns ``(value, gradients)`` with the gradients shaped like the
    differentiated arguments (None for leaves that have no gradient).
    """
    n_forward: int = 0
    n_values: int = 0                  # how many outputs are the function's
    n_seeds: int = 0                   # cotangent inputs (vjp); 0 when the seed is 1
    grad_tree: Any = None              # structure of the gradients
    grad_slots: tuple[int, ...] = ()   # per gradient leaf: index into grad outputs, or -1
    fallbacks: tuple[Fallback, ...] = ()
    wrt: tuple[int, ...] = ()          # the inputs the gradient outputs belong to, in order

    @property
    def serializable(self) -> bool:
        return not self.fallbacks

    @property
    def forward(self) -> Tape:
        return Tape(self.inputs[:len(self.inputs) - self.n_seeds], self.eqns[:self.n_forward],
                    self.outputs[:self.n_values], self.in_tree, self.out_tree,
                    self.input_names[:len(self.inputs) - self.n_seeds])

    @property
    def backward(self) -> Tape:
        """The backward section alone: its inputs are the residuals it reads (forward variables,
        primal inputs included) and the cotangent seeds."""
        eqns = self.eqns[self.n_forward:]
        seeds = self.inputs[len(self.inputs) - self.n_seeds:]
        res = residuals(self)
        return Tape(tuple(res) + tuple(seeds), eqns, self.outputs[self.n_values:],
                    input_names=tuple(repr(v) for v in res) + tuple(f"ct{i}" for i in range(len(seeds))))

    def scopes(self):
        """The scope tree (``Tape.scopes``), with the bytes each scope keeps for the backward
        section (its forward equations' outputs that the backward section reads)."""
        kept = set(residuals(self))
        sizes = {}
        for i, e in enumerate(self.eqns[:self.n_forward]):
            n = sum(v.aval.nbytes for v in e.outputs if v in kept)
            if n:
                sizes[i] = n
        return scope_tree(self.eqns, sizes)

    @property
    def sections(self) -> tuple[tuple[int, str], ...]:
        return ((0, "forward"), (self.n_forward, "backward"))

    def __str__(self) -> str:
        return format_tape(self, sections=self.sections)

    def __call__(self, *args, cotangents=()):
        flat = self.flatten_args(args)
        self.check_shapes(flat)
        out = eval_tape(self, flat + list(cotangents))
        return self.split(out)

    def split(self, out: list):
        value = pytree.unflatten(self.out_tree, out[:self.n_values])
        grads = out[self.n_values:]
        leaves = [None if s < 0 else grads[s] for s in self.grad_slots]
        return value, pytree.unflatten(self.grad_tree, leaves)


def residuals(gt: GradTape) -> list[Var]:
    """Forward variables (inputs included) read by the backward section, in forward order."""
    forward_vars = list(gt.inputs[:len(gt.inputs) - gt.n_seeds])
    forward_vars += [v for e in gt.eqns[:gt.n_forward] for v in e.outputs]
    read = {x for e in gt.eqns[gt.n_forward:] for x in e.inputs if type(x) is Var}
    read |= {x for x in gt.outputs[gt.n_values:] if type(x) is Var}
    return [v for v in forward_vars if v in read]


def partition(gt: GradTape) -> tuple[Tape, Tape]:
    """Split into ``fwd(primals) -> (outputs..., residuals...)`` and
    ``bwd(residuals..., cotangents...) -> gradients``. Seed equations become inputs of bwd.

    >>> fwd, bwd = ad.partition(ad.grad_tape(lambda x: np.sum(np.exp(x)), np.zeros(2)))
    >>> value, residual = fwd(np.zeros(2))        # exp's output is what its pullback reads
    >>> bwd(residual, 1.0)
    (array([1., 1.]),)
    """
    res = residuals(gt)
    primal_inputs = gt.inputs[:len(gt.inputs) - gt.n_seeds]
    fwd = Tape(primal_inputs, gt.eqns[:gt.n_forward], gt.outputs[:gt.n_values] + tuple(res),
               input_names=gt.input_names[:len(primal_inputs)])
    seeds = list(gt.inputs[len(primal_inputs):])
    eqns = []
    for e in gt.eqns[gt.n_forward:]:
        if e.origin.kind is OriginKind.SEED:
            seeds.extend(e.outputs)
        else:
            eqns.append(e)
    bwd = Tape(tuple(res) + tuple(seeds), tuple(eqns), gt.outputs[gt.n_values:],
               input_names=tuple(repr(v) for v in res) + tuple(f"ct{i}" for i in range(len(seeds))))
    return fwd, bwd
