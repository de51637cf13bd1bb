"""Exact algebra and mutation checks: a pullback is a linear map that reads its captures and
writes nothing. Deterministic and cheap; they catch most rule bugs before finite differences.
"""
from __future__ import annotations

import numpy as np

from ..core_prims import project
from ..tangents import Thunk, ZeroTangent, is_zero
from .captures import changed, describe, external, raised_at, shares, snapshot
from .base import computes, combine, dense, normalize
from .settings import exact_rtol


def _max(g) -> float:
    return float(np.max(np.abs(g), initial=0.0))


@computes("algebra.zero")
def _zero(ctx):
    zeros = [np.zeros(a.shape, a.dtype) for a in ctx.case.out_avals]
    gs = ctx.grads(ctx.pullback(), zeros)
    bad = {i: _max(dense(g)) for i, g in enumerate(gs) if not is_zero(g) and not np.all(np.asarray(g) == 0)}
    if bad:
        ctx.add("algebra.zero", "fail", "pullback(0) is not 0: " + "; ".join(
            f"operand {i} gets max |ct| = {v:.3g} (an affine term added to the cotangent?)" for i, v in bad.items()),
            {"max_abs": bad})
    else:
        ctx.add("algebra.zero", "pass", "pullback(0) == 0 exactly")


@computes("algebra.zero_tangent")
def _zero_tangent(ctx):
    outs = ctx.case.out_avals
    bad = []
    for k in range(len(outs)):
        cts = [np.zeros(a.shape, a.dtype) for a in outs]
        cts[k] = ZeroTangent()
        try:
            gs = ctx.grads(ctx.pullback(), cts)
        except Exception as exc:
            ctx.add("algebra.zero_tangent", "skipped",
                    f"the pullback does not accept ZeroTangent() in output slot {k} ({describe(exc)}); "
                    "ad never passes one (zero cotangents are materialised as arrays), so only "
                    "algebra.zero applies")
            return
        bad += [f"slot {k}: operand {i}" for i, g in enumerate(gs)
                if not is_zero(g) and not np.all(np.asarray(g) == 0)]
    if bad:
        ctx.add("algebra.zero_tangent", "fail", "ZeroTangent() in gives a nonzero cotangent: " + ", ".join(bad))
    else:
        ctx.add("algebra.zero_tangent", "pass", f"ZeroTangent() in each of {len(outs)} output slot(s) gives zeros")


@computes("algebra.linearity")
def _linearity(ctx):
    u, v = ctx.primary_cts(), ctx.random_cts()
    a, b = (float(s * m) for s, m in zip(ctx.rng.choice([-1.0, 1.0], 2), ctx.rng.uniform(0.5, 2.0, 2)))
    pb = ctx.pullback()
    gu, gv, gw = ctx.grads(pb, u), ctx.grads(pb, v), ctx.grads(pb, combine(a, u, b, v))
    tol = exact_rtol(ctx.case.dtypes)
    worst, bad = 0.0, []
    for i, (du, dv, dw) in enumerate(zip(gu, gv, gw)):
        du, dv, dw = dense(du), dense(dv), dense(dw)
        if du is None and dv is None and dw is None:
            continue
        shape = next(np.shape(d) for d in (du, dv, dw) if d is not None)
        du, dv, dw = (np.zeros(shape) if d is None else d for d in (du, dv, dw))
        with np.errstate(all="ignore"):
            err = np.abs(dw - (a * du + b * dv))
            scale = abs(a) * np.abs(du) + abs(b) * np.abs(dv)
            rel = float(np.max(err / (scale + np.max(scale, initial=0.0) + 1e-300), initial=0.0))
        if not np.all(err <= tol * (scale + np.max(scale, initial=0.0))) or not np.all(np.isfinite(dw)):
            bad.append(f"operand {i}: |pb(a u + b v) - (a pb(u) + b pb(v))| up to {_max(err):.3g}")
        worst = max(worst, rel if np.isfinite(rel) else np.inf)
    numbers = {"a": a, "b": b, "max_relative_error": worst, "tolerance": tol}
    if bad:
        ctx.add("algebra.linearity", "fail", "the pullback is not linear in its cotangent: " + "; ".join(bad)
                + " (does it square, take abs of, or branch on the cotangent?)", numbers)
    else:
        ctx.add("algebra.linearity", "pass", f"linear (relative error {worst:.1g} <= {tol:.1g})", numbers)


def _identical(g1, g2) -> bool:
    if is_zero(g1) or is_zero(g2):
        return type(g1) is type(g2)
    return np.array_equal(np.asarray(g1), np.asarray(g2), equal_nan=True)


@computes("algebra.twice")
def _twice(ctx):
    u = ctx.primary_cts()
    pb = ctx.pullback()
    g1, g2 = ctx.grads(pb, u), ctx.grads(pb, u)
    bad = [i for i, (a, b) in enumerate(zip(g1, g2)) if not _identical(a, b)]
    if bad:
        ctx.add("algebra.twice", "fail", f"calling the pullback again with the same cotangent changes "
                f"the cotangents of operands {bad}: it keeps state between calls (a counter, a buffer "
                "it writes into, a captured array it modifies)")
    else:
        ctx.add("algebra.twice", "pass", "identical results on a second call")


@computes("algebra.thunk")
def _thunk(ctx):
    u = ctx.primary_cts()
    pb = ctx.pullback()
    plain = ctx.grads(pb, u)
    packed = ctx.case.pack([np.array(c, copy=True) for c in u])
    try:
        raw = normalize(pb(Thunk(lambda: packed)))
        if any(np.asarray(r).dtype == object for r in raw if not is_zero(r)):
            raise TypeError("it computed with the Thunk object itself")
        thunked = [project(a, r) for a, r in zip(ctx.case.avals, raw)]
    except Exception as exc:
        ctx.add("algebra.thunk", "skipped", f"the pullback does not accept a thunked cotangent ({describe(exc)}); "
                "ad forces thunks before calling a pullback, so it never passes one")
        return
    tol = exact_rtol(ctx.case.dtypes)
    bad = [i for i, (p, t) in enumerate(zip(plain, thunked))
           if not (is_zero(p) and is_zero(t)) and not np.allclose(dense(t) if not is_zero(t) else 0,
                                                                 dense(p) if not is_zero(p) else 0,
                                                                 rtol=tol, atol=tol, equal_nan=True)]
    if bad:
        ctx.add("algebra.thunk", "fail", f"a thunked cotangent gives different cotangents for operands {bad}")
    else:
        ctx.add("algebra.thunk", "pass", "a thunked cotangent gives the same result")


# -- mutation and aliasing -------------------------------------------------------------------------

@computes("mutation.cotangent")
def _mut_cotangent(ctx):
    cts = [np.array(c, copy=True) for c in ctx.primary_cts()]
    for c in cts:
        c.flags.writeable = False
    before = snapshot({f"cotangent {k}": c for k, c in enumerate(cts)})
    pb = ctx.pullback()
    try:
        normalize(pb(ctx.case.pack(cts)))
    except ValueError as exc:
        if "read-only" not in str(exc):
            raise
        ctx.add("mutation.cotangent", "fail", "the pullback writes into its incoming cotangent (it was "
                f"passed read-only: {describe(exc)}); the caller's cotangent would be corrupted. Fix: "
                "compute a new array (dy * c, not dy *= c)", source=raised_at(exc, prefer=pb))
        return
    moved = changed({f"cotangent {k}": c for k, c in enumerate(cts)}, before)
    if moved:
        ctx.add("mutation.cotangent", "fail", f"the pullback changed {moved}")
    else:
        ctx.add("mutation.cotangent", "pass", "the incoming cotangent (passed read-only) is unchanged")


@computes("mutation.inputs")
def _mut_inputs(ctx):
    ops = ctx.case.fresh_operands()
    named = {f"operand {i}": x for i, x in enumerate(ops) if isinstance(x, np.ndarray)}
    before = snapshot(named)
    _, pb = ctx.case.call(ops)
    forward = changed(named, before)
    normalize(pb(ctx.case.pack(ctx.primary_cts())))
    backward = [n for n in changed(named, before) if n not in forward]
    if forward or backward:
        parts = ([f"the rule wrote into {forward}"] if forward else []) + (
            [f"the pullback wrote into {backward}"] if backward else [])
        ctx.add("mutation.inputs", "fail", "; ".join(parts) + ": the program's values (and the other "
                "rules' residuals) would be corrupted", {"forward": forward, "backward": backward})
    else:
        ctx.add("mutation.inputs", "pass", "operands unchanged by the rule and its pullback")


@computes("mutation.captures")
def _mut_captures(ctx):
    _, pb = ctx.case.call()
    held = external(pb)
    before = snapshot(held)
    normalize(pb(ctx.case.pack(ctx.primary_cts())))
    moved = changed(held, before)
    if moved:
        ctx.add("mutation.captures", "fail", f"the pullback wrote into arrays its closure holds: {moved}; "
                "a second call (or another rule reading them) sees modified values. Fix: allocate "
                "new arrays in the pullback", {"changed": moved})
    else:
        ctx.add("mutation.captures", "pass", f"{len(held)} captured array(s) unchanged", {"captured": sorted(held)})


@computes("mutation.aliasing")
def _aliasing(ctx):
    ops = ctx.case.fresh_operands()
    _, pb = ctx.case.call(ops)
    held = {**external(pb), **{f"operand {i}": x for i, x in enumerate(ops) if isinstance(x, np.ndarray)}}
    cts = [np.array(c, copy=True) for c in ctx.primary_cts()]
    raw = normalize(pb(ctx.case.pack(cts)))
    gs = [project(a, r) for a, r in zip(ctx.case.avals, raw)]
    errors, notes = [], []
    for i, g in enumerate(gs):
        if is_zero(g):
            continue
        errors += [f"cotangent {i} shares memory with captured {n}" for n, a in held.items() if shares(g, a)]
        views = [f"cotangent {i} is a view of the incoming cotangent {k}" for k, c in enumerate(cts) if shares(g, c)]
        views += [f"cotangents {j} and {i} share memory" for j in range(i) if shares(g, gs[j])]
        (errors if ctx.opts.strict_aliasing else notes).extend(views)
    if errors:
        ctx.add("mutation.aliasing", "fail", "; ".join(errors) + ": a caller accumulating into a "
                "cotangent in place would corrupt it. Fix: return a new array (x.copy())")
    else:
        ctx.add("mutation.aliasing", "pass", ("; ".join(notes) + " (allowed: ad treats cotangents as "
                "immutable values)") if notes else "no cotangent shares memory with captures or operands")
