"""Closure versus lifted: only a tape-based system can run these. The lifted template (the
pullback traced into equations) must give the closure's cotangents, right after the forward
pass and after the program has mutated the arrays the rule reads; and no float array may reach
the rule except as an operand, or its gradient is silently dropped.
"""
from __future__ import annotations

import numpy as np

from ..reverse_mode.lift import lift
from ..tape import format_eqn, freeze_params
from .base import computes
from .captures import describe, external, shares
from .forms import closure_cotangents, compare_cotangents


def _lifted(ctx):
    if not hasattr(ctx, "lifted"):
        case = ctx.case
        ctx.lifted = lift(case.prim, freeze_params(case.params), case.fresh_operands(), case.diff, rule=case.rule)
    return ctx.lifted


@computes("lifted.form")
def _form(ctx):
    lifted = _lifted(ctx)
    if lifted.fallback:
        ctx.add("lifted.form", "warn", f"the rule cannot be lifted ({lifted.fallback}); it runs as an "
                "opaque closure and gradient tapes using it cannot be saved or exported",
                {"reason": lifted.fallback})
    else:
        ctx.add("lifted.form", "pass", f"lifted: {len(lifted.fwd)} forward and {len(lifted.bwd)} "
                "backward equations", {"forward": len(lifted.fwd), "backward": len(lifted.bwd)})


def _mismatches(ctx, closure, lifted_grads) -> list[dict]:
    """Per differentiated operand where the two forms disagree (``forms.compare_cotangents``)."""
    template = _lifted(ctx)
    return [{"operand": c.index, "max_abs_error": c.max_abs, "max_relative_error": c.max_rel,
             "template_equation": next((format_eqn(e) for e in template.bwd
                                        if template.grads[c.index] in e.outputs), None)}
            for c in compare_cotangents(closure, lifted_grads, ctx.case.diff, ctx.case.dtypes) if not c.ok]


def _differs(b: dict) -> str:
    size = "in shape" if b["max_abs_error"] is None else f"by up to {b['max_abs_error']:.3g}"
    return (f"operand {b['operand']} differs {size}"
            + (f" (template: {b['template_equation']})" if b["template_equation"] else ""))


@computes("lifted.agree")
def _agree(ctx):
    lifted = _lifted(ctx)
    if lifted.fallback:
        ctx.add("lifted.agree", "skipped", "the lifted form is the closure itself (opaque fallback)")
        return
    case, cts = ctx.case, ctx.primary_cts()
    closure = closure_cotangents(case.prim, case.params, case.operands, case.diff, tuple(cts), rule=case.rule)
    _, lifted_grads = lifted.evaluate(case.fresh_operands(), [np.array(c, copy=True) for c in cts])
    bad = _mismatches(ctx, closure, lifted_grads)
    if bad:
        ctx.add("lifted.agree", "fail", "the lifted template and the closure disagree: "
                + "; ".join(map(_differs, bad))
                + " (does the pullback branch on values, or read state outside its captures?)", {"mismatches": bad})
    else:
        ctx.add("lifted.agree", "pass", "the template gives the closure's cotangents")


def _outside(ctx):
    """Arrays the rule reaches before it runs, other than its operands: program state."""
    ops = [x for x in ctx.case.operands if isinstance(x, np.ndarray)]
    return {n: a for n, a in external(ctx.case.rule).items() if not any(shares(a, x) for x in ops)}


def _perturb(a: np.ndarray, rng) -> bool:
    """Change an array in place the way a program might (an update step, a reshuffle)."""
    if not a.flags.writeable or a.size == 0:
        return False
    if np.issubdtype(a.dtype, np.inexact):
        a += (0.5 + np.abs(a)) * rng.standard_normal(a.shape).astype(a.dtype)
    else:
        a[...] = rng.permutation(a.ravel()).reshape(a.shape)
    return True


@computes("lifted.after_mutation")
def _after_mutation(ctx):
    state = _outside(ctx)
    if not state:
        ctx.add("lifted.after_mutation", "pass", "the rule reads no array besides its operands")
        return
    cts = ctx.primary_cts()
    pb = ctx.pullback()
    right_after = ctx.grads(pb, cts)
    saved = {n: a.copy() for n, a in state.items()}
    try:
        moved = [n for n, a in state.items() if _perturb(a, ctx.rng)]
        try:
            later = ctx.grads(pb, cts)
        except Exception as exc:
            ctx.add("lifted.after_mutation", "fail", f"after the program changed {moved}, the pullback "
                    f"raised {describe(exc)}: it reads them at backward time", {"mutated": moved})
            return
    finally:
        for n, a in state.items():
            if a.flags.writeable:
                a[...] = saved[n]
    lifted = _lifted(ctx)
    reference = (lifted.evaluate(ctx.case.fresh_operands(), [np.array(c, copy=True) for c in cts])[1]
                 if not lifted.fallback else right_after)
    bad = _mismatches(ctx, later, reference)
    if bad:
        ctx.add("lifted.after_mutation", "fail",
                f"the pullback reads {moved}, which the program changed after the forward pass: the "
                "closure sees the new values, the lifted tape the values at trace time. Fix: pass them "
                "as operands, or copy them in the rule's forward", {"mutated": moved, "mismatches": bad})
    else:
        ctx.add("lifted.after_mutation", "pass", f"unchanged after mutating {moved}", {"mutated": moved})


@computes("lifted.captures")
def _captures(ctx):
    floats = sorted(n for n, a in _outside(ctx).items() if np.issubdtype(a.dtype, np.inexact))
    if floats:
        ctx.add("lifted.captures", "fail", f"the rule reads float arrays {floats} that are not operands: "
                "they enter the tape as constants and their gradient is dropped. Fix: make them "
                "operands of the primitive", {"arrays": floats})
    else:
        ctx.add("lifted.captures", "pass", "no float array reaches the rule except as an operand")
