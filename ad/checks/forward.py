"""Forward-mode checks: the pushforwards ``ad.forward_mode.pushforward`` derives from the rules, and the
declarations they are derived with.

- ``forward.linear``: a ``linear_in`` / ``multilinear_in`` declaration holds: the primitive
  itself, evaluated, has ``f(a x) == a f(x)`` and ``f(x + y) == f(x) + f(y)`` in the declared
  operands (jointly, or each alone). Transposition trusts the declaration; a false one (exp
  declared linear) gives wrong transposes, not an error.
- ``forward.transpose``: the transpose of the equation in those operands (``ad.transpose``,
  made of the rule's own pullback) passes the dot-product test ``<v, f(u)> == <T v, u>``.
- ``forward.frule``: a hand-written ``@ad.frule`` gives the pushforward derived from the rrule
  (and the same primal); finite differences say which of the two is wrong.
- ``fd.jvp``: ``<J u, v>`` with ``J u`` from the pushforward forward mode uses equals
  ``<u, J^T v>`` from the pullback, and ``J u`` equals finite differences (at a kink: lies between
  the one-sided derivatives). It is a finite-difference check (its severity is the ``fd``
  group's). ``program.jvp`` runs ``compare_jvp`` on a whole program.

Each draws from a generator of its own (``rng``), so the other checks' numbers do not move.
"""
from __future__ import annotations

import zlib

import numpy as np

from ..tracing import trace
from ..errors import NonDifferentiableError
from ..forward_mode.pushforward import derive, pushforward
from ..reverse_mode.lift import lift
from ..origins import OriginKind
from ..tape import eval_tape, freeze_params
from ..forward_mode.transposition import NotLinearError, transpose
from .base import Verdict, computes, dense, random_cotangent
from .captures import describe, location
from .derivatives import primitive_function, with_replaced
from .fd import (flat64, pairing_weights, as64, directional_derivative, one_sided_derivative, pair,
                 random_like, refined)
from .settings import exact_rtol, fd_rtol


def rng(ctx, name: str) -> np.random.Generator:
    """The generator of one forward check (the rule checks share ``ctx.rng`` otherwise)."""
    return np.random.default_rng([ctx.opts.seed, zlib.crc32(name.encode())])


def _is_float(v) -> bool:
    return np.issubdtype(np.result_type(v), np.inexact)


def _like(op, new):
    """``new`` as a value of ``op``'s kind: a Python scalar stays one (weak), an array keeps its dtype."""
    if isinstance(op, (float, complex)):
        return type(op)(new) if isinstance(op, complex) else float(np.real(new))
    return np.asarray(new).astype(np.result_type(op))


def _groups(ctx) -> tuple[list[list[int]], str | None]:
    """The operand sets the declaration makes the primitive linear in (all of them jointly, or
    each alone), or why there are none to test."""
    prim, ops = ctx.case.prim, ctx.case.operands
    if prim.linear is None:
        return [], f"{prim.name} declares no linear_in / multilinear_in"
    declared = prim.linear.of(len(ops))
    floats = [k for k in declared if _is_float(ops[k])]
    if prim.linear.jointly:
        if len(floats) < len(declared):
            return [], (f"declared operands {[k for k in declared if k not in floats]} are not float "
                        "here (a joint declaration is tested with all its operands varying)")
        return [floats], None
    if not floats:
        return [], f"none of the declared operands {declared} is float here"
    return [[k] for k in floats], None


def _declared(ctx) -> str:
    decl = ctx.case.prim.linear
    return f"{'linear_in' if decl.jointly else 'multilinear_in'}={decl.operands!r}"


def _max(ys) -> float:
    return max([float(np.max(np.abs(y), initial=0.0)) for y in ys] + [0.0])


@computes("forward.linear")
def _linear(ctx):
    name, case = "forward.linear", ctx.case
    groups, why = _groups(ctx)
    if why:
        ctx.add(name, "skipped", why)
        return
    if case.prim.kind != "pure" or case.prim.checks_values:
        ctx.add(name, "skipped", f"{case.prim.name} is {case.prim.kind}"
                + (" and checks its values" if case.prim.checks_values else "") + ": not evaluated at other points")
        return
    r, fn, tol = rng(ctx, name), primitive_function(ctx), fd_rtol(case.dtypes)
    a = 1.75
    for group in groups:
        xs = [case.fresh_operands()[k] for k in group]
        ys = [_like(x, random_like(x, r)) for x in xs]

        def f(vals, group=group):
            return [np.asarray(y, np.complex128 if np.iscomplexobj(y) else np.float64)
                    for y in fn(*with_replaced(case.fresh_operands(), group, vals))]
        fx, fy = f(xs), f(ys)
        scaled = f([_like(x, a * np.asarray(x)) for x in xs])
        summed = f([_like(x, np.asarray(x) + np.asarray(y)) for x, y in zip(xs, ys)])
        homogeneity = _max([s - a * u for s, u in zip(scaled, fx)])
        additivity = _max([s - u - v for s, u, v in zip(summed, fx, fy)])
        allowed = tol * max(_max(fx), _max(fy), _max(scaled), _max(summed), 1e-300)
        if homogeneity > allowed or additivity > allowed:
            failed = [f"f({a} x) - {a} f(x) is {homogeneity:.3g}"] * (homogeneity > allowed) + \
                [f"f(x + y) - f(x) - f(y) is {additivity:.3g}"] * (additivity > allowed)
            ctx.add(name, "fail", f"{case.prim.name} declares {_declared(ctx)}, but it is not linear in "
                    f"operand(s) {group}: {' and '.join(failed)} (allowed {allowed:.3g}). Transposes and "
                    "derived pushforwards through it are wrong. Fix: drop the declaration, or correct it",
                    {"operands": group, "homogeneity": homogeneity, "additivity": additivity, "allowed": allowed},
                    source=location(case.prim.function or case.prim.impl))
            return
    ctx.add(name, "pass", f"{_declared(ctx)}: f(a x) == a f(x) and f(x + y) == f(x) + f(y) in "
            + ("operands " + str(groups[0]) + " jointly" if len(groups) == 1 and case.prim.linear.jointly else
               "each of operands " + str([g[0] for g in groups]) + " alone"))


@computes("forward.transpose")
def _transpose(ctx):
    name, case = "forward.transpose", ctx.case
    groups, why = _groups(ctx)
    if why:
        ctx.add(name, "skipped", why)
        return
    r, tol, rows = rng(ctx, name), fd_rtol(case.dtypes), []
    for group in groups:
        ops = case.fresh_operands()
        tape = trace(lambda *lin, group=group: case.prim.bind(*with_replaced(ops, group, lin), **case.params),
                     *[ops[k] for k in group])
        values = tape.flatten_args(tuple(ops[k] for k in group))
        try:
            t = transpose(tape, range(len(values)), values)
        except NotLinearError as exc:
            ctx.add(name, "fail", f"{case.prim.name} declares {_declared(ctx)}, but its equation cannot be "
                    f"transposed in operand(s) {group}: {exc.reason}", {"operands": group})
            return
        us = [_like(v, random_like(v, r)) for v in values]
        ys = eval_tape(tape, us)                   # linear: J u is the equation at u
        cts = [random_cotangent(np.shape(y), np.result_type(y), r) for y in ys]
        back = eval_tape(t, cts)
        lhs = sum(pair(c, y) for c, y in zip(cts, ys))
        rhs = sum(pair(b, u) for b, u in zip(back, us))
        scale = max(abs(lhs), abs(rhs), sum(float(np.sum(np.abs(c * y))) for c, y in zip(cts, ys)), 1e-300)
        rows.append({"operands": group, "lhs": lhs, "rhs": rhs, "allowed": tol * scale})
        if abs(lhs - rhs) > tol * scale:
            ctx.add(name, "fail", f"the transpose of {case.prim.name} in operand(s) {group} fails the "
                    f"dot-product test: <v, f(u)> = {lhs:.6g} but <T v, u> = {rhs:.6g} (T from its pullback, "
                    "lifted for those operands)", {"rows": rows})
            return
    ctx.add(name, "pass", f"<v, f(u)> == <T v, u> for the transpose in {', '.join(map(str, groups))} "
            f"(rtol {tol:g})", {"rows": rows})


def _tangents_of(pf, ops, r):
    """A random tangent for each operand the pushforward takes one for (None elsewhere)."""
    return [None if a is None else _like(op, random_like(op, r)) for a, op in zip(pf.tangents, ops)]


def _dense_outputs(touts, avals) -> list:
    return [np.zeros(a.shape, a.dtype) if t is None else np.asarray(t) for t, a in zip(touts, avals)]


@computes("forward.frule")
def _frule(ctx):
    name, case = "forward.frule", ctx.case
    prim = case.prim
    if prim.frule is None:
        ctx.add(name, "skipped", f"no @ad.frule({prim.name}): its pushforward is derived from the rrule")
        return
    where = location(prim.frule)
    ops, r = case.fresh_operands(), rng(ctx, name)
    given = pushforward(prim, freeze_params(case.params), ops, case.diff)
    derived = derive(lift(prim, freeze_params(case.params), ops, case.diff), ops)
    ys, _ = given.evaluate(ops, [None] * len(ops))
    bad = [k for k, (y, ref) in enumerate(zip(ys, case.reference)) if not np.allclose(y, ref, equal_nan=True)]
    if bad:
        ctx.add(name, "fail", f"the frule's primal output(s) {bad} differ from {prim.name}'s value",
                {"outputs": bad}, source=where)
        return
    tol = exact_rtol(case.dtypes)
    for _ in range(ctx.opts.directions):
        ts = _tangents_of(derived, ops, r)
        a = _dense_outputs(given.evaluate(ops, ts)[1], case.out_avals)
        b = _dense_outputs(derived.evaluate(ops, ts)[1], case.out_avals)
        err = max(float(np.max(np.abs(x - y) / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1.0), initial=0.0))
                  for x, y in zip(a, b)) if a else 0.0
        if not err <= tol:
            wrt = [k for k, t in enumerate(ts) if t is not None]
            est = refined(directional_derivative, primitive_function(ctx), [as64(ops[k]) for k in wrt], [ts[k] for k in wrt],
                          domains=[case.domains[k] for k in wrt]) if wrt else None
            fd, right = None, ""
            if est is not None and est.converged:
                fd = est.value
                e_given, e_derived = (float(np.max(np.abs(flat64(x) - fd), initial=0.0)) for x in (a, b))
                right = ("; finite differences side with the derived one: the frule is wrong"
                         if e_derived < e_given else "; finite differences side with the frule: the rrule is wrong "
                         "(see fd.dot_product)")
            ctx.add(name, "fail", f"the frule and the pushforward derived from the rrule differ (relative "
                    f"difference {err:.3g}, allowed {tol:.2g}){right}",
                    {"frule": flat64(a), "derived": flat64(b), "fd": fd, "max_relative_difference": err},
                    source=where)
            return
    ctx.add(name, "pass", f"the frule and the pushforward derived from the rrule agree over "
            f"{ctx.opts.directions} tangent(s)", source=where)


def refused(exc) -> str:
    """A rule forward mode refuses, on purpose and by name: nothing to compare, but worth a warning."""
    return f"forward mode refuses it ({describe(exc)}): jvp, linearize and jacfwd raise there"


def compare_jvp(fn, jvp, pullback, xs, wrt, *, domains, rng, directions, rtol, what,
                back="the pullback", ones_at_kinks=False) -> Verdict:
    """``<J u, v>`` from ``jvp(us) -> output tangents`` against ``<u, J^T v>`` from
    ``pullback(vs) -> one cotangent or None per input``, and ``J u`` against finite differences
    of ``fn(*xs) -> outputs`` along the inputs ``wrt``. ``what`` and ``back`` name the two.
    ``ones_at_kinks``: where a random direction met a kink, also move every operand by +1 at
    once: a tie of maximum is then a smooth direction (both operands move together), so a rule
    splitting a tie into shares that do not sum to one is seen there (random directions keep
    such a rule between the one-sided derivatives about half the time)."""
    xs = list(xs)
    y0 = fn(*xs)
    sub = [as64(xs[i]) for i in wrt]
    doms = [None if domains is None else domains[i] for i in wrt]

    def f(*a):
        return fn(*with_replaced(xs, wrt, a))
    rows = []
    for n in range(directions + 1):
        if n < directions:
            us = [_like(xs[i], random_like(xs[i], rng)) for i in wrt]
        elif ones_at_kinks and any(r["point"] == "kink" for r in rows):
            us = [_like(xs[i], np.ones(np.shape(xs[i]))) for i in wrt]
        else:
            break
        vs = [random_cotangent(np.shape(y), np.result_type(y), rng) for y in y0]
        ju = flat64([np.zeros(np.shape(y)) if t is None else np.asarray(t) for t, y in zip(jvp(us), y0)])
        w = pairing_weights(vs)
        gs = pullback(vs)
        lhs = float(ju @ w)
        rhs = float(sum(pair(g, u) for g, u in ((dense(gs[i]), u) for i, u in zip(wrt, us)) if g is not None))
        scale = max(abs(lhs), abs(rhs), float(np.abs(ju) @ np.abs(w)), 1e-300)
        est = refined(directional_derivative, f, sub, [as64(u) for u in us], domains=doms)
        row = {"jvp": lhs, "vjp": rhs, "allowed": rtol * scale, "fd": float(est.value @ w), "point": "smooth"}
        rows.append(row)
        numbers = {"rtol": rtol, "directions": rows}
        if abs(lhs - rhs) > rtol * scale:
            side = ""
            if est.converged:
                side = (f"; finite differences side with {back}: {what} is wrong"
                        if abs(row["fd"] - rhs) < abs(row["fd"] - lhs) else
                        f"; finite differences side with {what}: {back} is wrong")
            return Verdict("fail", f"<J u, v> = {lhs:.6g} from {what} but <u, J^T v> = {rhs:.6g} from {back}: "
                           f"they are not each other's transpose (finite differences {row['fd']:.6g}){side}", numbers)
        size = max(float(np.max(np.abs(est.value), initial=0.0)), float(np.max(np.abs(ju), initial=0.0)))
        if est.converged and np.all(np.abs(ju - est.value) <= rtol * max(size, 1e-300) + np.abs(est.delta) + est.noise):
            continue
        dp, dm = (refined(one_sided_derivative, f, sub, [as64(u) for u in us], domains=doms, side=s) for s in (1, -1))
        if not (dp.converged and dm.converged):
            row["point"] = "discontinuity"
            return Verdict("warn", "not differentiable at this point: one-sided differences along a random "
                           "direction do not converge; no derivative to compare J u with", numbers)
        slack = rtol * max(size, 1e-300) + np.abs(dp.delta) + np.abs(dm.delta) + dp.noise + dm.noise
        lo, hi = np.minimum(dp.value, dm.value) - slack, np.maximum(dp.value, dm.value) + slack
        row["point"] = "smooth" if np.allclose(dp.value, dm.value, rtol=1e-5, atol=float(np.max(slack, initial=0))) \
            else "kink"
        if np.all((lo <= ju) & (ju <= hi)):
            continue
        k = int(np.argmax(np.maximum(lo - ju, ju - hi)))
        fd = (f"{dp.value[k]:.6g}" if row["point"] == "smooth" else
              f"between the one-sided {dm.value[k]:.6g} and {dp.value[k]:.6g}")
        agree = f"; {back} agrees with it (<J u, v> == <u, J^T v>): the rule itself is wrong, see fd.dot_product"
        return Verdict("fail", f"J u from {what} differs from finite differences at a {row['point']} point: "
                       f"element {k} of the flattened outputs is {ju[k]:.6g}, finite differences {fd}" + agree,
                       {**numbers, "worst_element": k})
    kinks = sum(r["point"] == "kink" for r in rows)
    return Verdict("pass", f"<J u, v> == <u, J^T v> and J u == finite differences over {directions} "
                   f"direction(s) (rtol {rtol:g})" + (f"; {kinks} at a kink, within the one-sided derivatives"
                                                      if kinks else ""), {"rtol": rtol, "directions": rows})


@computes("fd.jvp")
def _jvp(ctx):
    name, case = "fd.jvp", ctx.case
    if not any(case.diff):
        ctx.add(name, "skipped", "no traced float operand to push a tangent through")
        return
    ops = case.fresh_operands()
    try:
        pf = pushforward(case.prim, freeze_params(case.params), ops, case.diff)
    except NonDifferentiableError as exc:
        ctx.add(name, "warn", refused(exc))
        return
    wrt = [k for k, a in enumerate(pf.tangents) if a is not None]
    if not wrt:
        ctx.add(name, "skipped", "the pushforward takes no tangent (no operand has a cotangent)")
        return
    what = {OriginKind.PUSHFORWARD: "the pushforward derived from the pullback", OriginKind.PUSHFORWARD_VJP:
            "the pushforward (the vjp of the pullback)", OriginKind.PUSHFORWARD_FRULE: "the frule"}[pf.kind]

    def jvp(us):
        return pf.evaluate(case.fresh_operands(), with_replaced([None] * len(ops), wrt, us))[1]

    def pullback(vs):
        return ctx.grads(ctx.pullback(), vs)
    v = compare_jvp(primitive_function(ctx), jvp, pullback, ops, wrt, domains=case.domains, rng=rng(ctx, name),
                    directions=ctx.opts.directions, rtol=fd_rtol(case.dtypes), what=what, ones_at_kinks=True)
    ctx.add(name, v.status, v.message, v.numbers,
            source=location(case.prim.frule) if pf.kind is OriginKind.PUSHFORWARD_FRULE else None)
