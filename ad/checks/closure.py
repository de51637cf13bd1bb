"""Closure versus lifted: only a tape-based system can run these. The lifted template (the
pullback traced into equations) must give the closure's cotangents, right after the forward
pass and after the program has mutated the arrays the rule reads; and no float array may reach
the rule except as an operand, or its gradient is silently dropped.
"""
from __future__ import annotations

import numpy as np

from ..lift import lift
from ..tape import format_eqn, freeze_params
from .captures import describe, external, shares
from .rule import check, dense, is_zero
from .settings import exact_rtol


def _lifted(ctx):
    if not hasattr(ctx, "lifted"):
        case = ctx.case
        ctx.lifted = lift(case.prim, freeze_params(case.params), case.fresh_operands(), case.diff, rule=case.rule)
    return ctx.lifted


@check("lifted.form")
def _form(ctx):
    lifted = _lifted(ctx)
    if lifted.fallback:
        ctx.add("lifted.form", "warn", f"the rule cannot be lifted ({lifted.fallback}); it runs as an "
                "opaque closure and gradient tapes using it cannot be saved or exported",
                {"reason": lifted.fallback})
    else:
        ctx.add("lifted.form", "pass", f"lifted: {len(lifted.fwd)} forward and {len(lifted.bwd)} "
                "backward equations", {"forward": len(lifted.fwd), "backward": len(lifted.bwd)})


def _mismatches(ctx, closure, lifted_grads):
    """Per differentiated operand, where the closure's cotangent and the template's differ."""
    tol = exact_rtol([a.dtype for a in ctx.case.avals + ctx.case.out_avals])
    template = _lifted(ctx)
    out = []
    for i, (c, t, d) in enumerate(zip(closure, lifted_grads, ctx.case.diff)):
        if not d:
            continue
        c = None if is_zero(c) or np.all(np.asarray(c) == 0) else dense(c)
        t = None if t is None or np.all(np.asarray(t) == 0) else np.asarray(t, dtype=np.float64)
        if c is None and t is None:
            continue
        c = np.zeros(np.shape(t)) if c is None else c
        t = np.zeros(np.shape(c)) if t is None else t
        with np.errstate(all="ignore"):
            err = np.abs(c - t)
            ok = np.all((err <= tol * np.maximum(np.abs(t), 1.0)) | (np.isnan(c) & np.isnan(t)))
        if not ok:
            producer = next((format_eqn(e) for e in template.bwd if template.grads[i] in e.outputs), None)
            out.append({"operand": i, "max_abs_error": float(np.nanmax(err)), "template_equation": producer})
    return out


@check("lifted.agree")
def _agree(ctx):
    lifted = _lifted(ctx)
    if lifted.fallback:
        ctx.add("lifted.agree", "skipped", "the lifted form is the closure itself (opaque fallback)")
        return
    cts = ctx.primary_cts()
    closure = ctx.grads(ctx.pullback(), cts)
    _, lifted_grads = lifted.evaluate(ctx.case.fresh_operands(), [np.array(c, copy=True) for c in cts])
    bad = _mismatches(ctx, closure, lifted_grads)
    if bad:
        ctx.add("lifted.agree", "fail", "the lifted template and the closure disagree: " + "; ".join(
            f"operand {b['operand']} differs by up to {b['max_abs_error']:.3g}"
            + (f" (template: {b['template_equation']})" if b["template_equation"] else "") for b in bad)
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


@check("lifted.after_mutation")
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
                 if not lifted.fallback else [dense(g) for g in right_after])
    bad = _mismatches(ctx, later, reference)
    if bad:
        ctx.add("lifted.after_mutation", "fail",
                f"the pullback reads {moved}, which the program changed after the forward pass: the "
                "closure sees the new values, the lifted tape the values at trace time. Fix: pass them "
                "as operands, or copy them in the rule's forward", {"mutated": moved, "mismatches": bad})
    else:
        ctx.add("lifted.after_mutation", "pass", f"unchanged after mutating {moved}", {"mutated": moved})


@check("lifted.captures")
def _captures(ctx):
    floats = sorted(n for n, a in _outside(ctx).items() if np.issubdtype(a.dtype, np.inexact))
    if floats:
        ctx.add("lifted.captures", "fail", f"the rule reads float arrays {floats} that are not operands: "
                "they enter the tape as constants and their gradient is dropped. Fix: make them "
                "operands of the primitive", {"arrays": floats})
    else:
        ctx.add("lifted.captures", "pass", "no float array reaches the rule except as an operand")
