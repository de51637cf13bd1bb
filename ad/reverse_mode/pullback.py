"""A function's vjp: its gradient tape seeded by an input cotangent, split into a forward tape
(inputs -> outputs, residuals) and a backward tape (residuals, cotangents -> gradients), and the
pullback closure that runs the backward tape.

``ad.vjp`` and ``ad.jacrev`` are built on it; forward mode takes the vjp of a rule's pullback
with it, without the pullbacks' overloads (``overloads=False``): a linear map has one transpose.
"""
from __future__ import annotations

import numpy as np

from .. import pytree
from ..gradtape import partition
from ..tape import eval_tape
from ..tracer import Tracer
from ..tracing import differentiated_inputs, input_values, trace_call
from .build import build
from .lift import ExemplarRecorder


def vjp_tapes(f, args, argnums: tuple, overloads: bool = True):
    """What ``ad.vjp`` builds: the primal tape, its gradient tape seeded by an input cotangent,
    that split into forward (inputs -> outputs, residuals) and backward (residuals, cotangents
    -> gradients) tapes, the gradients' structure and slots (``jacrev`` caches them).
    ``overloads=False`` pulls back with the rules' pullbacks, not their overloads
    (``ad.backpropagate``)."""
    rec = ExemplarRecorder()
    primal = trace_call(f, args, argnums, rec)
    wrt, grad_tree, slots = differentiated_inputs(primal, argnums, len(args))
    gt = build(primal, input_values(primal, args), wrt, seed="input", grad_tree=grad_tree, grad_slots=slots,
               exemplars=rec.exemplars, overloads=overloads)
    return (primal, gt) + partition(gt) + (grad_tree, slots)


def pullback_of(f, args: tuple, *, overloads: bool = True):
    """``(f(*args), pullback)``, ``pullback(dy)`` returning one cotangent per argument: ``ad.vjp``;
    ``overloads=False`` pulls back with the rules' pullbacks, not their overloads."""
    primal, gt, fwd, bwd, grad_tree, slots = vjp_tapes(f, args, tuple(range(len(args))), overloads)
    out = eval_tape(fwd, primal.flatten_args(args))      # tracers of an enclosing trace, if any
    n = gt.n_values
    residual_values = out[n:]
    y = pytree.unflatten(primal.out_tree, out[:n])

    def pullback(dy):
        cts, tree = pytree.flatten(dy)
        if tree != primal.out_tree:
            raise TypeError(f"the cotangent's structure {tree} differs from the output's {primal.out_tree}")
        # cotangents stay tracers when the pullback is differentiated again (vjp of a vjp)
        grads = eval_tape(bwd, residual_values + [c if isinstance(c, Tracer) else np.asarray(c)
                                                  for c in cts])
        leaves = [None if s < 0 else grads[s] for s in slots]
        return tuple(pytree.unflatten(grad_tree, leaves))
    pullback.tape = gt
    return y, pullback
