"""The batching checks: a primitive's batched form (its batching rule, or the loop over the batch
when it has none) equals the loop of the primitive over the examples (``batching.loop``), and a
program's backward batched over several cotangents equals the loop of the backward over them
(``program.batched_grad``, PyTorch's ``gradcheck(check_batched_grad=True)``).

A batch is ``SIZE`` examples: the checked operands, then copies of them with every float
operand perturbed (relative, so that signs, zeros and the declared domain hold). Each layout
puts the traced operands' batch axes somewhere: all first, all last (an axis other than 0, so a
rule that forgets to move the batch axis is caught), and each operand alone batched (first and
last), the others shared.
"""
from __future__ import annotations

import numpy as np

from ..batching import batch_tape, rule_for
from ..batching.derived import batch_size, how_batched
from ..batching.fallback import loop
from ..rules import to_front
from ..tape import Var, eval_tape, format_eqn
from .base import Verdict, computes, random_cotangent
from .captures import describe, location, raised_at
from .settings import exact_rtol

SIZE = 3
SCALES = ((0.4, 0.8), (1.5, 3.0))      # the factors of the examples after the first
HOW = {"derived": "the rule its traits give", "hand": "its own batching rule", "loop": "the fallback loop"}


def apply_batched(prim, rule, args, dims, params) -> list:
    """One equation's batched form on plain arrays: its outputs, each with the batch axis first
    (an output the rule says is shared is broadcast along it)."""
    result = NotImplemented if rule is None else rule(list(args), tuple(dims), **params)
    if result is NotImplemented:
        result = loop(prim, list(args), dims, params)
    out, out_dims = result
    outs, out_dims = (tuple(out), tuple(out_dims)) if prim.multiple_results else ((out,), (out_dims,))
    size = batch_size(args, dims)
    return [np.broadcast_to(np.asarray(o), (size,) + np.shape(o)) if d is None else to_front(np.asarray(o), d)
            for o, d in zip(outs, out_dims)]


def looped(prim, examples, params) -> list:
    """The primitive once per example, each output stacked along a new first axis."""
    outs = [prim.impl(*xs, **params) for xs in examples]
    outs = [tuple(o) if prim.multiple_results else (o,) for o in outs]
    return [np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0]))]


def mismatch(got: list, want: list, tol: float) -> str | None:
    """Why the batched outputs differ from the loop's (None when they agree)."""
    if len(got) != len(want):
        return f"{len(got)} outputs, the loop {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {k} has shape {g.shape} (batch axis first), the loop's {w.shape}"
        if g.dtype != w.dtype:
            return f"output {k} has dtype {g.dtype}, the loop's {w.dtype}"
        if not np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True):
            with np.errstate(all="ignore"):
                worst = float(np.nanmax(np.abs(g.astype(complex) - w.astype(complex)), initial=0.0))
            wrong = [b for b in range(len(w)) if not np.allclose(g[b], w[b], rtol=tol, atol=tol, equal_nan=True)]
            return f"output {k} differs from the loop's by up to {worst:.3g} at example(s) {wrong}"
    return None


def examples(operands, traced, domains, rng) -> list[list]:
    """``SIZE`` examples: the operands, then copies with each traced float operand scaled
    elementwise by factors of ``SCALES`` (clipped into its domain, if declared): ranges apart,
    so that a step function (``ceil``) still tells the examples apart."""
    out = [list(operands)]
    for low, high in SCALES:
        ex = []
        for x, t, dom in zip(operands, traced, domains):
            if t and np.issubdtype(np.result_type(x), np.inexact):
                y = x * rng.uniform(low, high, np.shape(x)).astype(np.result_type(x).type(0).real.dtype)
                if dom is not None and not np.iscomplexobj(y):
                    y = np.clip(y, *dom)
                x = np.asarray(y, dtype=np.result_type(x)) if isinstance(x, np.ndarray) else np.result_type(x).type(y)
            ex.append(x)
        out.append(ex)
    return out


def layouts(operands, traced) -> list[tuple]:
    """The batch axes to try (None: shared): all first; all last; each traced operand alone,
    first and last."""
    batched = [k for k, t in enumerate(traced) if t]
    first = tuple(0 if t else None for t in traced)
    out = [first]
    if any(np.ndim(operands[k]) for k in batched):
        out.append(tuple(np.ndim(x) if t else None for x, t in zip(operands, traced)))
    if len(batched) > 1:
        for j in batched:
            out += [tuple(a if k == j else None for k in range(len(traced)))
                    for a in dict.fromkeys((0, np.ndim(operands[j])))]
    return out


def stacked(exs, axes) -> list:
    """The batched operands of a layout: each batched one stacked along its axis."""
    return [exs[0][k] if a is None else np.stack([ex[k] for ex in exs], axis=a) for k, a in enumerate(axes)]


def per_example(exs, axes) -> list[list]:
    """The operands example by example at one layout (a shared operand: the first example's)."""
    return [[ex[k] if a is not None else exs[0][k] for k, a in enumerate(axes)] for ex in exs]


def compare_at(prim, rule, exs, axes, params, want, tol) -> str | None:
    """The batched form at one layout against the loop's outputs ``want`` (None when they agree)."""
    with np.errstate(all="ignore"):
        got = apply_batched(prim, rule, stacked(exs, axes), axes, params)
    return mismatch(got, want, tol)


@computes("batching.loop")
def _loop(ctx):
    case = ctx.case
    prim, traced = case.prim, case.traced
    if prim.kind in ("random", "guard"):
        why = ("a random primitive reads no batched value: the batch shares its draw" if prim.kind == "random"
               else "a guard on a batched value refuses (BatchedBranchError); on a shared one it stays a guard")
        ctx.add("batching.loop", "skipped", why)
        return
    if not any(traced):
        ctx.add("batching.loop", "skipped", "no traced operand, so nothing is batched")
        return
    rule = case.batch_rule or rule_for(prim)
    how = ("the candidate batching rule" if case.batch_rule is not None else HOW[how_batched(prim)])
    source = location(rule) if rule is not None else None
    exs = _examples(case, ctx.rng)
    tol = exact_rtol(case.dtypes)
    tried = []
    for axes in layouts(case.operands, traced):
        try:
            with np.errstate(all="ignore"):
                want = looped(prim, per_example(exs, axes), case.params)
        except Exception:   # the examples leave the primitive's domain (operands that must agree)
            continue
        tried.append(axes)
        try:
            why = compare_at(prim, rule, exs, axes, case.params, want, tol)
        except Exception as exc:    # a rule that raises is a finding
            ctx.add("batching.loop", "fail", f"{how} raised {describe(exc)} at in_axes={axes}",
                    {"in_axes": axes}, source=raised_at(exc, prefer=rule) or source)
            return
        if why is not None:
            ctx.add("batching.loop", "fail", f"{how} at in_axes={axes} (batch of {SIZE}): {why}. Fix the batching "
                    "rule (ad.batch_rule): it must move each operand's batch axis where the primitive expects it "
                    "and report where its outputs have theirs", {"in_axes": axes, "tolerance": float(tol)},
                    source=source)
            return
    if not tried:
        ctx.add("batching.loop", "skipped", "the primitive itself raises at the batch's other examples "
                "(operands that must agree with each other)")
        return
    ctx.add("batching.loop", "pass", f"{how} equals the loop over a batch of {SIZE} at in_axes {tried}",
            {"in_axes": tried}, source=source)


def _examples(case, rng) -> list[list]:
    """The batch's examples; plain scaled copies if the perturbed ones leave the primitive's
    domain (a matrix no longer positive definite: the loop itself raises)."""
    exs = examples(case.operands, case.traced, case.domains, rng)
    try:
        with np.errstate(all="ignore"):
            for ex in exs[1:]:
                case.prim.impl(*ex, **case.params)
    except Exception:
        scales = [1.0 + 0.1 * b for b in range(SIZE)]
        exs = [[x * s if t and np.issubdtype(np.result_type(x), np.inexact) else x
                for x, t in zip(case.operands, case.traced)] for s in scales]
    return exs


# -- the program's batched gradient ----------------------------------------------------------------

def batched_backward(p, cts: list[list]) -> list:
    """The lifted backward batched over the cotangents ``cts`` (one list per example), run once:
    one gradient per differentiated input, the batch axis first."""
    values = p.residual_values()
    shared = len(values)
    values += [np.stack([c[k] for c in cts]) for k in range(len(cts[0]))]
    dims = [None] * shared + [0] * len(cts[0])
    tape = batch_tape(p.bwd, values, dims, [0] * len(p.bwd.outputs))
    return eval_tape(tape, values)


def first_wrong_equation(p, cts: list[list], tol: float):
    """The first equation of the backward whose batched form, fed the loop's own values, differs
    from the loop (the culprit); None if each agrees."""
    res = p.residual_values()
    envs = []
    for c in cts:
        env: dict = {}
        eval_tape(p.bwd, res + list(c), env)
        envs.append(env)
    batched = set(p.bwd.inputs[len(res):])
    for e in p.bwd.eqns:
        dims = [0 if type(x) is Var and x in batched else None for x in e.inputs]
        if all(d is None for d in dims):
            continue
        batched.update(e.outputs)
        args = [(np.stack([env[x] for env in envs]) if d == 0 else envs[0][x]) if type(x) is Var else x.value
                for x, d in zip(e.inputs, dims)]
        want = [np.stack([np.asarray(env[v]) for env in envs]) for v in e.outputs]
        try:
            with np.errstate(all="ignore"):
                got = apply_batched(e.prim, rule_for(e.prim), args, dims, dict(e.params))
        except Exception as exc:
            return e, f"its batched form raised {describe(exc)}"
        why = mismatch(got, want, tol)
        if why is not None:
            return e, why
    return None


@computes("program.batched_grad")
def _batched_grad(p) -> Verdict:
    if not p.opts.batched:
        return Verdict("skipped", "not requested: ad.check(f, *args, batched=True) runs it")
    if not p.wrt:
        return Verdict("skipped", "no float input to differentiate")
    rng = p.rng("program.batched_grad")
    cts = [[random_cotangent(v.aval.shape, v.aval.dtype, rng) for v in p.primal.outputs] for _ in range(SIZE)]
    want = [np.stack([np.asarray(p.lifted(c)[k]) for c in cts]) for k in range(len(p.wrt))]
    tol = exact_rtol(p.dtypes)
    try:
        got = [np.asarray(g) for g in batched_backward(p, cts)]
        why = mismatch(got, want, tol)
    except Exception as exc:
        why, source = f"batching the backward raised {describe(exc)}", raised_at(exc)
    else:
        source = None
    if why is None:
        return Verdict("pass", f"the backward batched over {SIZE} cotangents equals the loop of the backward "
                       "over them", {"tolerance": float(tol)})
    found = first_wrong_equation(p, cts, tol)
    if found is None:
        return Verdict("fail", f"the backward batched over {SIZE} cotangents differs from the loop: {why}",
                       source=source or p.source)
    e, detail = found
    name = format_eqn(e, with_origin=True)
    rule = rule_for(e.prim)
    written = f", written at {location(rule)}" if rule is not None else ""
    return Verdict("fail", f"the backward batched over {SIZE} cotangents differs from the loop: {why}; culprit: "
                   f"{name}: {detail} (batched by {HOW[how_batched(e.prim)]}{written})",
                   {"equation": name, "batching_rule": location(rule) if rule is not None else None},
                   name, e.source or p.source)
