"""Interface checks: the rule's structure, its primal value, and the types of its cotangents
(shape, dtype, NoTangent for integers). Exact and cheap: no finite differences."""
from __future__ import annotations

import numpy as np

from ..core_prims import project
from ..tangents import NoTangent, ZeroTangent, is_zero
from .base import computes, float_bits, normalize
from .captures import location
from .fd import as64
from .settings import exact_rtol


@computes("structure.pair")
def _pair(ctx):
    try:
        result = ctx.case.call()
    except Exception as exc:
        ctx.broken = "the rule raised when called"
        ctx.raised("structure.pair", "calling the rule", exc)
        return
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[1])):
        ctx.broken = "the rule does not return (y, pullback)"
        ctx.add("structure.pair", "fail", f"the rule returned {type(result).__name__} "
                f"{_short(result)}; it must return (y, pullback) with a callable pullback")
        return
    ctx.y, pb = result
    ctx.pullback_source = location(pb)
    ctx.add("structure.pair", "pass", "returns (y, pullback)")


@computes("structure.arity")
def _arity(ctx):
    n = len(ctx.case.operands)
    pb = ctx.pullback()
    cts = ctx.primary_cts()
    try:
        raw = pb(ctx.case.pack(cts))
    except Exception as exc:
        ctx.broken = "the pullback raised when called"
        ctx.raised("structure.arity", "calling the pullback", exc, fn=pb)
        return
    got = len(raw) if isinstance(raw, tuple) else 1
    if got != n:
        ctx.broken = "the pullback returns the wrong number of cotangents"
        ctx.add("structure.arity", "fail", f"the pullback returned {got} cotangent(s) for {n} operand(s); "
                "return one per operand, NoTangent() for those without one", {"returned": got, "operands": n})
        return
    ctx.cts, ctx.raw = cts, normalize(raw)
    ctx.add("structure.arity", "pass", f"one cotangent per operand ({n})"
            + ("" if isinstance(raw, tuple) or n != 1 else "; returned bare, not in a tuple"))


def _leaves(ctx):
    return list(ctx.y) if isinstance(ctx.y, (tuple, list)) else [ctx.y]


@computes("primal.structure")
def _primal_structure(ctx):
    multiple = ctx.case.prim.multiple_results
    is_seq = isinstance(ctx.y, (tuple, list))
    want = len(ctx.case.reference)
    if multiple and not (is_seq and len(ctx.y) == want):
        ctx.add("primal.structure", "fail", f"{ctx.case.prim.name} has {want} outputs; the rule "
                f"returned {_short(ctx.y)}")
    elif not multiple and is_seq:
        ctx.add("primal.structure", "fail", f"{ctx.case.prim.name} has one output; the rule returned "
                f"a {type(ctx.y).__name__} of {len(ctx.y)}")
    else:
        ctx.add("primal.structure", "pass", f"{want} output(s)" + (" (a tuple)" if multiple else ""))


def _compare(ctx, name, attr, describe):
    if ctx.status("primal.structure") != "pass":
        ctx.add(name, "skipped", "the output structure differs")
        return None
    bad = [(k, attr(y), attr(r)) for k, (y, r) in enumerate(zip(_leaves(ctx), ctx.case.reference))
           if attr(y) != attr(r)]
    if bad:
        ctx.add(name, "fail", "; ".join(f"output {k}: {describe} {g} where the primitive gives {w}"
                                         for k, g, w in bad), {"mismatches": [list(map(str, b)) for b in bad]})
    else:
        ctx.add(name, "pass", ", ".join(str(attr(r)) for r in ctx.case.reference))


@computes("primal.shape")
def _primal_shape(ctx):
    _compare(ctx, "primal.shape", np.shape, "shape")


@computes("primal.dtype")
def _primal_dtype(ctx):
    if ctx.status("primal.structure") != "pass":
        ctx.add("primal.dtype", "skipped", "the output structure differs")
        return
    _compare(ctx, "primal.dtype", lambda a: np.asarray(a).dtype, "dtype")


@computes("primal.value")
def _primal_value(ctx):
    if len(_leaves(ctx)) != len(ctx.case.reference):
        ctx.add("primal.value", "skipped", "the output structure differs")
        return
    worst = 0.0
    for y, r in zip(_leaves(ctx), ctx.case.reference):
        y, r = np.asarray(y), np.asarray(r)
        if y.shape != r.shape:
            ctx.add("primal.value", "skipped", "the output shapes differ")
            return
        if not np.issubdtype(r.dtype, np.inexact):
            if not np.array_equal(y, r):
                ctx.add("primal.value", "fail", "the rule's value differs from the primitive's")
                return
            continue
        tol = exact_rtol([r.dtype]) * 10
        with np.errstate(all="ignore"):
            err = np.abs(as64(y) - as64(r))            # complex values: both parts
            allowed = tol * np.maximum(np.abs(as64(r)), 1.0)
        same = (err <= allowed) | (np.isnan(y) & np.isnan(r)) | (y == r)
        if not np.all(same):
            k = int(np.argmax(np.where(same, 0, err)))
            ctx.add("primal.value", "fail", f"the rule's y differs from the primitive's by up to "
                    f"{float(np.max(np.where(same, 0, err))):.3g} (element {np.unravel_index(k, r.shape)}: "
                    f"{y.flat[k]!r} vs {r.flat[k]!r})", {"max_abs_error": float(np.max(err))})
            return
        worst = max(worst, float(np.max(np.where(np.isnan(err), 0, err), initial=0.0)))
    ctx.add("primal.value", "pass", f"equal to the primitive's value (max difference {worst:.2g})",
            {"max_abs_error": worst})


# -- cotangent types -------------------------------------------------------------------------------

def _summable(shape, target) -> bool:
    """Can project() sum a cotangent of ``shape`` down to ``target`` (undo numpy broadcasting)?"""
    lead = len(shape) - len(target)
    return lead >= 0 and all(t == 1 or t == s for t, s in zip(target, shape[lead:]))


def _judge_each(ctx, name, judge, key, of_cotangent, of_operand, fine) -> bool:
    """Add check ``name``: ``judge(i, aval, raw)`` on each differentiated operand's cotangent
    gives None (as it should be), ``("note", text)`` or ``("error", text)``; ``numbers[key]``
    lists ``of_cotangent`` of every cotangent. True if it failed."""
    notes, errors = [], []
    for i, (aval, r, d) in enumerate(zip(ctx.case.avals, ctx.raw, ctx.case.diff)):
        found = judge(i, aval, r) if d and not is_zero(r) else None
        if found is not None:
            (errors if found[0] == "error" else notes).append(found[1])
    numbers = {key: [str(of_cotangent(r)) if not is_zero(r) else repr(r) for r in ctx.raw],
               "operands": [str(of_operand(a)) for a in ctx.case.avals]}
    if errors:
        ctx.add(name, "fail", "; ".join(errors), numbers)
    else:
        ctx.add(name, "pass", "; ".join(notes) or fine, numbers)
    return bool(errors)


@computes("cotangent.shape")
def _ct_shape(ctx):
    out_shapes = {a.shape for a in ctx.case.out_avals}

    def judge(i, aval, r):
        shape = np.shape(r)
        if shape == aval.shape:
            return None
        if _summable(shape, aval.shape):
            return "note", f"operand {i}: {shape} summed to {aval.shape} by project()"
        if shape in out_shapes:
            return "error", (f"operand {i}: missing unbroadcast: the cotangent has the output's shape "
                             f"{shape}, not the operand's {aval.shape}; sum it over the axes where the "
                             "operand was broadcast")
        if shape == aval.shape[::-1] and len(shape) > 1:
            return "error", (f"operand {i}: transposed cotangent: shape {shape} is the transpose of the "
                             f"operand's {aval.shape}")
        return "error", f"operand {i}: cotangent shape {shape} for an operand of shape {aval.shape}"
    if _judge_each(ctx, "cotangent.shape", judge, "shapes", np.shape, lambda a: a.shape,
                   "every cotangent has its operand's shape"):
        ctx.unprojectable = "the cotangents cannot be projected onto the operands (see cotangent.shape)"


@computes("cotangent.dtype")
def _ct_dtype(ctx):
    out_bits = max([float_bits(a.dtype) for a in ctx.case.out_avals], default=0)

    def judge(i, aval, r):
        got, want = np.result_type(r), aval.dtype
        if got == want:
            return None
        if not np.issubdtype(got, np.inexact):
            return "error", f"operand {i}: a {got} cotangent for a {want} operand"
        if np.issubdtype(got, np.complexfloating) and not np.issubdtype(want, np.complexfloating):
            if not ctx.case.is_complex and not ctx.case.prim.complex_rule:
                return "error", (f"operand {i}: a complex ({got}) cotangent for a real ({want}) operand, "
                                 f"from a rule written for real numbers ({ctx.case.prim.name} declares no "
                                 "complex_rule): its pullback computes in complex for nothing")
            if float_bits(got) > max(float_bits(want), out_bits):
                return "error", (f"operand {i}: silent upcast: the cotangent of a {want} operand is computed "
                                 f"in {got}")
            return "note", f"operand {i}: {got} projected to its real part, {want}, by project()"
        if float_bits(got) > max(float_bits(want), out_bits):
            return "error", (f"operand {i}: silent upcast: the cotangent of a {want} operand is computed in "
                             f"{got} (a float64 constant or astype in the pullback?)")
        return "note", f"operand {i}: {got} cast to {want} by project()"
    _judge_each(ctx, "cotangent.dtype", judge, "dtypes", np.result_type, lambda a: a.dtype,
                "every cotangent has its operand's dtype")


@computes("cotangent.integer")
def _ct_integer(ctx):
    idx = [i for i, a in enumerate(ctx.case.avals) if not a.is_float]
    if not idx:
        ctx.add("cotangent.integer", "skipped", "no integer or boolean operand")
        return
    errors, notes = [], []
    for i in idx:
        r = ctx.raw[i]
        if isinstance(r, ZeroTangent):
            errors.append(f"operand {i} ({ctx.case.avals[i]}) gets ZeroTangent(); an integer or boolean "
                          "operand has no tangent space: return NoTangent()")
        elif not isinstance(project(ctx.case.avals[i], r), NoTangent):
            errors.append(f"operand {i} ({ctx.case.avals[i]}) gets {type(r).__name__}")
        elif not isinstance(r, NoTangent):
            notes.append(f"operand {i}: an array cotangent, dropped by project()")
    if errors:
        ctx.add("cotangent.integer", "fail", "; ".join(errors))
    else:
        ctx.add("cotangent.integer", "pass", "; ".join(notes) or f"NoTangent for operands {idx}")


def _short(x) -> str:
    text = repr(x)
    return text if len(text) < 80 else text[:77] + "..."
