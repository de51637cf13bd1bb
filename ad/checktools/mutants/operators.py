"""The mutation operators: each rewrites a target's pullback template into mutants, yielding
(site, bwd, grads[, writes]); ``mutants`` collects them all, operator by operator."""
from __future__ import annotations

import itertools

import numpy as np

from ...core_prims import add_p, sum_to_p, transpose_p
from ...lib.elementwise import multiply_p, negative_p, subtract_p
from ...lib.reductions import mean_p, sum_p
from ...origins import Origin, OriginKind
from ...tape import Aval, Eqn, Lit, Var, eval_eqns, format_eqn, freeze_params
from .template import Mutant, Target, same

OPERATORS = ("sign", "drop_term", "swap", "transpose", "reduction", "residual", "scale",
             "identity", "in_place")
REDUCTIONS = (sum_to_p, sum_p, mean_p)    # forgetting one leaves an unreduced cotangent
RESIDUAL_CHOICES = 2       # wrong residuals tried per read (the first others of the same aval)

_fresh = itertools.count(10**9)     # ids of the variables mutants add: far above a template's, never reused


def _var(aval) -> Var:
    return Var(next(_fresh), aval)


def _eqn(prim, inputs, outputs, params=None, like: Eqn | None = None) -> Eqn:
    return Eqn(prim, tuple(inputs), freeze_params(params or {}), tuple(outputs),
               like.source if like else None, like.origin if like else Origin(OriginKind.PULLBACK),
               like.scope if like else ())


def _rewire(eqns, grads, old, new):
    """Equations and grads reading ``new`` wherever they read ``old``."""
    sub = lambda x: new if x is old else x  # noqa: E731
    return (tuple(e if old not in e.inputs else Eqn(e.prim, tuple(map(sub, e.inputs)), e.params, e.outputs,
                                                     e.source, e.origin, e.scope) for e in eqns),
            tuple(map(sub, grads)))


def _follow(bwd, grads, i, make):
    """Insert ``w = make(v)`` after equation ``i`` (output ``v``) and read ``w`` instead of ``v``."""
    v = bwd[i].outputs[0]
    w = _var(v.aval)
    rest, grads = _rewire(bwd[i + 1:], grads, v, w)
    return bwd[:i + 1] + (make(v, w, bwd[i]),) + rest, grads


def _float_outputs(bwd):
    return [i for i, e in enumerate(bwd) if len(e.outputs) == 1 and e.outputs[0].aval.is_float]


def op_sign(t: Target):
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i in _float_outputs(bwd):
        yield f"negate {format_eqn(bwd[i])}", *_follow(
            bwd, grads, i, lambda v, w, e: _eqn(negative_p, [v], [w], like=e))


def op_scale(t: Target):
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i in _float_outputs(bwd):
        yield f"double {format_eqn(bwd[i])}", *_follow(
            bwd, grads, i, lambda v, w, e: _eqn(multiply_p, [v, Lit.of(2.0)], [w], like=e))


def op_drop_term(t: Target):
    """``a + b`` becomes ``a`` or ``b``; ``a - b`` becomes ``a`` or ``-b``."""
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if e.prim not in (add_p, subtract_p) or len(e.inputs) != 2:
            continue
        out = e.outputs[0]
        for k in (0, 1):
            kept = e.inputs[1 - k]
            if e.prim is subtract_p and k == 0:
                w = _var(kept.aval)
                rest, g = _rewire(bwd[i + 1:], grads, out, w)
                yield (f"drop {e.inputs[0]!r} from {format_eqn(e)}",
                       bwd[:i] + (_eqn(negative_p, [kept], [w], like=e),) + rest, g)
            else:
                rest, g = _rewire(bwd[i + 1:], grads, out, kept)
                yield f"drop {e.inputs[k]!r} from {format_eqn(e)}", bwd[:i] + rest, g


def op_swap(t: Target, env):
    """Swap the operands of a binary equation, where that changes its value (commutative
    operations, and equal operands, are skipped: the mutant would be equivalent by construction)."""
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if len(e.inputs) != 2 or len(e.outputs) != 1 or e.inputs[0] is e.inputs[1]:
            continue
        swapped = Eqn(e.prim, e.inputs[::-1], e.params, e.outputs, e.source, e.origin, e.scope)
        try:
            with np.errstate(all="ignore"):
                unchanged = same(env[e.outputs[0]], eval_eqns([swapped], dict(env))[e.outputs[0]])
        except Exception:
            unchanged = False       # shapes that do not fit: a stillborn mutant, sorted out later
        if not unchanged:
            yield f"swap the operands of {format_eqn(e)}", bwd[:i] + (swapped,) + bwd[i + 1:], grads


def op_transpose(t: Target):
    """Transpose an operand (its last two axes) of a matmul-like equation (multilinear and not
    elementwise: matmul, einsum, matvec): ``dy @ B.T`` becomes ``dy @ B``."""
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if e.prim.linear is None or e.prim.linear.jointly or e.prim.elementwise or len(e.inputs) < 2:
            continue
        for k, x in enumerate(e.inputs):
            if type(x) is not Var or x.aval.ndim < 2:
                continue
            axes = tuple(range(x.aval.ndim - 2)) + (x.aval.ndim - 1, x.aval.ndim - 2)
            xt = _var(Aval(tuple(x.aval.shape[a] for a in axes), x.aval.dtype))
            inputs = e.inputs[:k] + (xt,) + e.inputs[k + 1:]
            new = (_eqn(transpose_p, [x], [xt], {"axes": axes}, like=e),
                   Eqn(e.prim, inputs, e.params, e.outputs, e.source, e.origin, e.scope))
            yield f"transpose {x!r} in {format_eqn(e)}", bwd[:i] + new + bwd[i + 1:], grads


def op_reduction(t: Target):
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if e.prim in REDUCTIONS:
            rest, g = _rewire(bwd[i + 1:], grads, e.outputs[0], e.inputs[0])
            whose = ", project()'s" if e.origin.kind is OriginKind.PROJECT else ""
            yield f"forget {format_eqn(e)}{whose}", bwd[:i] + rest, g


def op_residual(t: Target):
    """Read another forward value of the same aval in place of a residual."""
    lifted = t.lifted
    pool = [a for a in lifted.args if type(a) is Var] + [v for e in lifted.fwd for v in e.outputs]
    residuals = set(lifted.residuals)
    for i, e in enumerate(lifted.bwd):
        for k, x in enumerate(e.inputs):
            if x not in residuals:
                continue
            others = [v for v in pool if v is not x and v.aval == x.aval][:RESIDUAL_CHOICES]
            for other in others:
                inputs = e.inputs[:k] + (other,) + e.inputs[k + 1:]
                new = Eqn(e.prim, inputs, e.params, e.outputs, e.source, e.origin, e.scope)
                yield (f"read {other!r} for {x!r} in {format_eqn(e)}",
                       lifted.bwd[:i] + (new,) + lifted.bwd[i + 1:], lifted.grads)


def op_identity(t: Target):
    """Return an output's cotangent unchanged as an operand's cotangent."""
    lifted = t.lifted
    for k, a in enumerate(lifted.args):
        if type(a) is not Var or not a.aval.is_float:
            continue
        for j, ct in enumerate(lifted.cts):
            if lifted.grads[k] is ct:
                continue
            grads = lifted.grads[:k] + (ct,) + lifted.grads[k + 1:]
            yield f"return cotangent {j} as operand {k}'s", lifted.bwd, grads


def op_in_place(t: Target):
    for j in range(t.n_cts):
        yield f"double cotangent {j} in place after use", t.lifted.bwd, t.lifted.grads, j


def mutants(t: Target, env: dict) -> list[Mutant]:
    """Every mutant of the target's template, operator by operator (``env``: the template's
    values at the sample, which tell commutative swaps apart)."""
    made = {"sign": op_sign(t), "drop_term": op_drop_term(t), "swap": op_swap(t, env),
            "transpose": op_transpose(t), "reduction": op_reduction(t), "residual": op_residual(t),
            "scale": op_scale(t), "identity": op_identity(t), "in_place": op_in_place(t)}
    return [Mutant(op, *m) for op in OPERATORS for m in made[op]]
