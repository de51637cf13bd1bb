"""Finite-difference checks, last because they are the slowest and the least exact.

``dot_check`` is the one test behind all of them (a rule, a whole program, a pullback's own
derivative): per random direction pair, ``<J u, v>`` by a converged, Richardson-extrapolated
5-point stencil against ``<u, J^T v>`` from the pullback (complex operands move along complex
directions, complex outputs get complex cotangents, and both sides use the real pairing
``fd.pair``, ``Re(sum(g * dz))``, so real and imaginary parts are checked at once). Before a
mismatch is judged the point
is classified from one-sided derivatives: smooth (a real failure: the failing argument's full
Jacobian is computed and its worst entries reported), a kink (the rule's value must lie between
the one-sided derivatives, coordinate by coordinate: a subgradient), or a discontinuity (a
warning: no derivative exists there). With complex values a failure also says whether the
pullback returns the conjugate of the right cotangent (a forgotten conj, or PyTorch's convention
mixed in), and Jacobian entries name the real or imaginary part they concern.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..transforms.gradients import vjp
from ..core_prims import project
from ..tangents import is_zero
from .base import Verdict, computes, dense, normalize, random_cotangent
from .fd import (flat64, pairing_weights, as64, basis, coordinate, coordinates, cotangent_of,
                 directional_derivative, jacobian, max_step, one_sided_derivative, pair, random_like,
                 refined)
from .settings import fd_rtol

MAX_BRACKET = 512        # coordinates of a kink bracket
MAX_JACOBIAN = 10_000    # entries of a reported Jacobian
SHOWN_JACOBIAN = 400     # entries small enough to store whole in the report (for the widget)


def _is_float(y) -> bool:
    return np.issubdtype(np.asarray(y).dtype, np.inexact)


def with_replaced(xs, wrt, sub):
    """``xs`` with the items at positions ``wrt`` replaced by ``sub``."""
    out = list(xs)
    for i, v in zip(wrt, sub):
        out[i] = v
    return out


def _unc(est, v, factor) -> float:
    """How far the finite-difference estimate may be from the truth, projected on ``v``."""
    av = np.abs(v)
    return float(np.abs(est.delta) @ av) / factor + est.noise * float(np.sum(av))


@dataclass
class _Probe:
    """One dot-product test: ``f`` of the perturbed inputs ``sub`` (float64 or complex128 copies
    of the inputs ``wrt`` of ``xs``), their domains, the pullback under test and its outputs ``y0``."""
    f: Callable
    sub: list
    doms: list
    pullback: Callable
    xs: list
    wrt: list
    y0: list
    rtol: float
    rng: np.random.Generator

    def grads(self, vs) -> list[np.ndarray]:
        """The pullback's cotangents of the perturbed inputs, dense float64 or complex128 (zeros
        for none)."""
        gs = self.pullback(vs)
        return [np.zeros(np.shape(self.xs[i])) if is_zero(gs[i]) else dense(gs[i]) for i in self.wrt]

    @property
    def complex(self) -> bool:
        return any(np.iscomplexobj(x) for x in self.sub) or any(np.iscomplexobj(y) for y in self.y0)

    def derivative(self, us, side=0):
        if side == 0:
            return refined(directional_derivative, self.f, self.sub, us, domains=self.doms)
        return refined(one_sided_derivative, self.f, self.sub, us, domains=self.doms, side=side)


def dot_check(fn, pullback, xs, wrt, *, domains, rng, directions, rtol) -> Verdict:
    """Dot-product test of ``pullback`` (``vs -> one cotangent or None per input``) against
    ``fn`` (``*xs -> list of output arrays``), perturbing the inputs ``wrt``."""
    xs = list(xs)
    with np.errstate(all="ignore"):
        y0 = fn(*xs)
    p = _Probe(lambda *a: fn(*with_replaced(xs, wrt, a)), [as64(xs[i]) for i in wrt],
               [None if domains is None else domains[i] for i in wrt], pullback, xs, list(wrt), y0, rtol, rng)
    rows = []
    for _ in range(directions):
        us = [random_like(x, rng) for x in p.sub]
        vs = [random_cotangent(np.shape(y), np.asarray(y).dtype, rng) for y in y0]
        v = pairing_weights(vs)       # <J u, v> = dot(flat64(J u), v): the real pairing
        g = p.grads(vs)
        rhs = float(sum(pair(gi, u) for u, gi in zip(us, g)))
        est = p.derivative(us)
        lhs = float(est.value @ v)
        scale = max(abs(lhs), abs(rhs), float(np.abs(est.value) @ np.abs(v)),
                    float(sum(np.sum(np.abs(u * gi)) for u, gi in zip(us, g))))
        allowed = rtol * scale + _unc(est, v, 15.0)
        row = {"lhs": lhs, "rhs": rhs, "error": abs(lhs - rhs), "allowed": allowed, "step": est.step,
               "converged": est.converged, "point": "agrees"}
        rows.append(row)
        if est.converged and abs(lhs - rhs) <= allowed:
            continue
        if est.converged and not np.isfinite(rhs):
            bad = [wrt[k] for k, gk in enumerate(g) if not np.all(np.isfinite(gk))]
            verdict = Verdict("fail", f"the pullback returns NaN/Inf for argument(s) {bad} where finite "
                              f"differences converge to a finite derivative (<J u, v> = {lhs:.6g})",
                              {"failing_arguments": bad})
        else:
            verdict = _classify(p, us, vs, g, row)
        if verdict.status != "pass":
            verdict.numbers.update({"rtol": rtol, "directions": rows})
            return verdict
    kinks = sum(r["point"] == "kink" for r in rows)
    worst = max(rows, key=lambda r: r["error"] / max(r["allowed"], 1e-300))
    return Verdict("pass", f"<J u, v> == <u, J^T v> over {directions} direction(s) (largest difference "
                   f"{worst['error']:.2g}, allowed {worst['allowed']:.2g}; rtol {rtol:g})"
                   + (f"; {kinks} at a kink, within the one-sided derivatives" if kinks else ""),
                   {"rtol": rtol, "directions": rows})


def _classify(p: _Probe, us, vs, g, row) -> Verdict:
    """Judge a mismatch (or a stencil that does not converge) by the kind of point."""
    v = pairing_weights(vs)
    dp, dm = p.derivative(us, side=1), p.derivative(us, side=-1)
    if not (dp.converged and dm.converged):
        row["point"] = "discontinuity"
        flat = _flat_both_sides(p, g)
        if flat:
            return Verdict("fail", f"argument(s) {flat}: the function is constant on both sides of this point "
                           "along them (it jumps at the point alone: a selection by equality, a step), so the "
                           "derivative there is zero from either side, but the pullback gives them a nonzero "
                           "cotangent", {"failing_arguments": flat})
        return Verdict("warn", "not differentiable at this point: one-sided differences along a random "
                       "direction do not converge, even with steps 65536 times smaller (a jump, a pole, the "
                       "domain's edge, or kinks closer than that); no derivative to compare with")
    gap = np.abs(dp.value - dm.value)
    tol = 1e-5 * np.maximum(np.maximum(np.abs(dp.value), np.abs(dm.value)), 1.0) + np.abs(dp.delta) + np.abs(dm.delta)
    if not np.all(gap <= tol):
        row["point"] = "kink"
        return _bracket(p, v, g)
    row["point"] = "smooth"
    mid = float((dp.value + dm.value) @ v) / 2
    allowed = p.rtol * max(abs(mid), abs(row["rhs"]), 1e-300) + _unc(dp, v, 3.0) + _unc(dm, v, 3.0)
    if abs(mid - row["rhs"]) <= allowed:
        return Verdict("pass", "")
    return _smooth_failure(p, us, vs, g, row)


def _flat_both_sides(p: _Probe, g) -> list[int]:
    """The perturbed inputs with a nonzero cotangent along which ``f`` is constant on both sides
    of the point: ``f(x + t u) == f(x + t u / 2)`` for t = +-h and +-h/1000 (h as the stencils
    take it). Both one-sided derivatives are then zero, so a nonzero cotangent is not even a
    subgradient (an operand only compared for equality, given the incoming cotangent)."""
    flat = []
    for k, x in enumerate(p.sub):
        if not np.any(g[k]):
            continue
        u = random_like(x, p.rng)
        h = 1e-3 * max(1.0, float(np.max(np.abs(x), initial=0.0)))
        if p.doms[k] is not None:
            cap = max_step([x], [u], [p.doms[k]])
            h = min(h, cap) if cap > 0 else h

        def at(t, k=k, x=x, u=u):
            with np.errstate(all="ignore"):
                return flat64(p.f(*with_replaced(p.sub, [k], [x + t * u])))
        if all(_equal(at(t), at(t / 2)) for t in (h, -h, h / 1000, -h / 1000)):
            flat.append(p.wrt[k])
    return flat


def _equal(a, b) -> bool:
    return bool(np.all(np.isfinite(a)) and np.all(np.abs(a - b) <= 1e-12 * np.maximum(np.abs(a), 1.0)))


def _conjugated(p: _Probe, us, vs, row) -> bool:
    """Would ``conj(pullback(conj(v)))`` pass where ``pullback(v)`` fails? Then the pullback
    returns the conjugate of the right cotangent: a forgotten (or extra) conj, or PyTorch's
    convention (``g * conj(f'(z))``) mixed into ad's (``g * f'(z)``)."""
    if not p.complex:
        return False
    gc = [np.conj(x) for x in p.grads([np.conj(c) for c in vs])]
    rhs = float(sum(pair(gi, u) for u, gi in zip(us, gc)))
    return abs(row["lhs"] - rhs) <= row["allowed"] < abs(row["lhs"] - row["rhs"])


def _smooth_failure(p: _Probe, us_all, vs, g, row) -> Verdict:
    lhs, rhs = row["lhs"], row["rhs"]
    v = pairing_weights(vs)
    failing = []
    for k in range(len(p.sub)):
        us = [np.zeros_like(x) for x in p.sub]
        us[k] = random_like(p.sub[k], p.rng)
        est = p.derivative(us)
        a, b = float(est.value @ v), pair(g[k], us[k])
        if abs(a - b) > p.rtol * max(abs(a), abs(b), 1e-300) + _unc(est, v, 15.0):
            failing.append(k)
    numbers = {"failing_arguments": [p.wrt[k] for k in failing]}
    if failing:
        numbers["jacobian"] = _jacobian_report(p, failing[0])
    sign = " (the opposite sign)" if lhs * rhs < 0 and abs(abs(lhs) - abs(rhs)) <= 1e-3 * abs(lhs) else ""
    if _conjugated(p, us_all, vs, row):
        numbers["conjugated"] = True
        sign += (" (the conjugate of the right cotangent: a forgotten or extra conj, or PyTorch's convention "
                 "g * conj(f'(z)) where ad's is g * f'(z))")
    worst = numbers.get("jacobian", {}).get("worst", [])
    detail = (f"; worst Jacobian entry d {_named('out', worst[0]['output'], worst[0].get('output_part'))}/d "
              f"{_named('in', worst[0]['input'], worst[0].get('input_part'))}: rule "
              f"{worst[0]['rule']:.6g}, finite differences {worst[0]['fd']:.6g}") if worst else ""
    which = ", ".join(str(p.wrt[k]) for k in failing) or "(only jointly)"
    return Verdict("fail", f"<J u, v> = {lhs:.6g} by finite differences but <u, J^T v> = {rhs:.6g} from the "
                   f"pullback{sign}, at a smooth point; wrong cotangent for argument(s) {which}{detail}", numbers)


def _named(name, index, part) -> str:
    """``out0``, ``Re in(2,)``: a Jacobian coordinate as the report names it."""
    return {None: "", "real": "Re ", "imag": "Im "}[part] + f"{name}{index}"


def _output_coordinate(r: int, y0) -> tuple[int, str | None]:
    """Row ``r`` of a real Jacobian (``flat64`` order) as (flat output element, part)."""
    start = elements = 0
    for y in y0:
        n = coordinates(y)
        if r < start + n:
            return elements + (r - start) % max(int(np.size(y)), 1), coordinate(r - start, y)[1]
        start, elements = start + n, elements + int(np.size(y))
    raise IndexError(r)


def _entry(p: _Probe, k: int, r: int, c: int, rule, fd, err) -> dict:
    """One Jacobian entry: output row ``r``, input column ``c`` of argument ``k``, with the parts
    (real or imaginary) they are of when complex."""
    out, out_part = _output_coordinate(r, p.y0)
    index, in_part = coordinate(c, p.sub[k])
    entry = {"output": out, "input": index, "rule": float(rule), "fd": float(fd), "error": float(err)}
    if out_part:
        entry["output_part"] = out_part
    if in_part:
        entry["input_part"] = in_part
    return entry


def _jacobian_report(p: _Probe, k: int) -> dict:
    """The full real Jacobian of the failing argument by finite differences and from the
    pullback (one basis cotangent per real output coordinate), with its worst entries; a complex
    value has a row (column) for the real and one for the imaginary part of each element."""
    m, n = int(np.size(flat64(p.y0))), coordinates(p.sub[k])
    if m * n > MAX_JACOBIAN:
        return {"skipped": f"{m}x{n} is too large to report"}

    def fk(x):
        return p.f(*[x if j == k else s for j, s in enumerate(p.sub)])
    j_fd, _ = jacobian(fk, [p.sub[k]], 0, domains=[p.doms[k]])
    rows = []
    for r in range(m):
        e = np.zeros(m)
        e[r] = 1.0
        rows.append(pairing_weights([p.grads(cotangent_of(e, p.y0))[k]]))
    j_rule = np.stack(rows) if rows else np.zeros((0, n))
    err = np.abs(j_rule - j_fd)
    order = np.argsort(err, axis=None)[::-1][:5]
    worst = [_entry(p, k, int(i // n), int(i % n), j_rule.flat[i], j_fd.flat[i], err.flat[i])
             for i in order if err.flat[i] > p.rtol * max(abs(j_fd.flat[i]), 1e-12)]
    report = {"argument": p.wrt[k], "shape": [m, n], "worst": worst}
    if m * n <= SHOWN_JACOBIAN:
        report.update(fd=j_fd, rule=j_rule)
    return report


def _bracket(p: _Probe, v, g) -> Verdict:
    """At a kink: each coordinate of the rule's ``J^T v`` must lie between the one-sided
    derivatives along that coordinate (projected on ``v``): the rule picked a subgradient."""
    total = sum(coordinates(x) for x in p.sub)
    if total > MAX_BRACKET:
        return Verdict("warn", f"a kink along a random direction, but {total} elements are too many for a "
                       "coordinate-wise subgradient bracket")
    violations, jumps = [], 0
    for k, x in enumerate(p.sub):
        for j in range(coordinates(x)):
            e = basis(p.sub, k, j)
            plus, minus = p.derivative(e, side=1), p.derivative(e, side=-1)
            if not (plus.converged and minus.converged):
                jumps += 1
                continue
            a, b = float(plus.value @ v), float(minus.value @ v)
            lo, hi = min(a, b), max(a, b)
            gk = pair(g[k], e[k])
            tol = p.rtol * max(abs(a), abs(b), abs(gk), 1e-12) + _unc(plus, v, 3.0) + _unc(minus, v, 3.0)
            if not (lo - tol <= gk <= hi + tol):          # NaN fails too
                index, part = coordinate(j, x)
                violations.append({"argument": p.wrt[k], "element": list(index), "rule": gk, "one_sided": [lo, hi],
                                   **({"part": part} if part else {})})
    numbers = {"violations": violations[:10], "jumps": jumps}
    if violations:
        w = violations[0]
        return Verdict("fail", f"wrong derivative at a kink: the rule gives {w['rule']:.6g} for element "
                       f"{w['element']} of argument {w['argument']}, outside the one-sided derivatives "
                       f"[{w['one_sided'][0]:.6g}, {w['one_sided'][1]:.6g}] ({len(violations)} element(s))", numbers)
    return Verdict("pass", "", numbers)


# -- the rule checks that use it -------------------------------------------------------------------

def primitive_function(ctx):
    """The primitive as a function of its operands, what finite differences differentiate. A
    primitive that ``checks_values`` is its first operand (its check refuses points off a
    constraint, such as phase_free's, where any finite-difference step may land)."""
    case = ctx.case

    def fn(*ops):
        out = ops[0] if case.prim.checks_values else case.prim.impl(*ops, **case.params)
        return list(out) if case.prim.multiple_results else [out]
    return fn


def rule_pullback(ctx):
    """The rule's pullback at the case's operands, as a function of the output cotangents."""
    def pb(vs):
        return ctx.grads(ctx.pullback(), vs)
    return pb


def with_cotangent(ctx) -> list[int]:
    """The differentiable operands whose cotangent the rule does not leave structurally zero."""
    gs = [project(a, r) for a, r in zip(ctx.case.avals, ctx.raw)]
    return [i for i, (g, d) in enumerate(zip(gs, ctx.case.diff)) if d and not is_zero(g)]


@computes("fd.dot_product")
def _fd(ctx):
    wrt = with_cotangent(ctx)
    if not wrt:
        ctx.add("fd.dot_product", "skipped", "no operand has a cotangent (see cotangent.no_tangent)")
        return
    rtol = fd_rtol(ctx.case.dtypes)
    v = dot_check(primitive_function(ctx), rule_pullback(ctx), ctx.case.fresh_operands(), wrt, domains=ctx.case.domains,
                  rng=ctx.rng, directions=ctx.opts.directions, rtol=rtol)
    ctx.add("fd.dot_product", v.status, v.message, v.numbers)


@computes("cotangent.no_tangent")
def _no_tangent(ctx):
    with_ct = set(with_cotangent(ctx))
    idx = [i for i, d in enumerate(ctx.case.diff) if d and i not in with_ct]
    if not idx:
        ctx.add("cotangent.no_tangent", "skipped", "every differentiated float operand has a cotangent")
        return
    fn, ops = primitive_function(ctx), ctx.case.fresh_operands()
    y0 = fn(*ops)
    size = max([float(np.max(np.abs(y), initial=0.0)) for y in y0 if _is_float(y)] + [1.0])
    rtol = fd_rtol(ctx.case.dtypes)
    bad, jumps = [], []
    for i in idx:
        x = as64(ops[i])
        u = random_like(x, ctx.rng)
        est = refined(directional_derivative, lambda a, i=i: fn(*with_replaced(ops, [i], [a])), [x], [u],
                      domains=[ctx.case.domains[i]])
        if not est.converged:
            jumps.append(i)
        elif float(np.max(np.abs(est.value), initial=0.0)) > rtol * size + est.noise + float(np.max(np.abs(est.delta), initial=0)):
            bad.append((i, float(np.max(np.abs(est.value)))))
    if bad:
        ctx.add("cotangent.no_tangent", "fail", "; ".join(
            f"operand {i} gets NoTangent but the output changes with it (|J u| up to {d:.3g})" for i, d in bad)
            + ": its gradient is dropped", {"operands": [i for i, _ in bad]})
    else:
        ctx.add("cotangent.no_tangent", "pass", f"operands {idx}: zero derivative, as declared"
                + (f" (not differentiable at this point: {jumps})" if jumps else ""))


@computes("second_order.dot_product")
def _second_order(ctx):
    if not ctx.opts.second_order:
        ctx.add("second_order.dot_product", "skipped", "not requested (pass second_order=True)")
        return
    case = ctx.case
    wrt = with_cotangent(ctx)
    outs = [k for k, a in enumerate(case.out_avals) if a.is_float]
    zeros = [np.zeros(a.shape, a.dtype) for a in case.out_avals]

    def g(*a):
        ops = with_replaced(case.operands, wrt, a[:len(wrt)])
        cts = with_replaced(zeros, outs, a[len(wrt):])
        raw = normalize(case.rule(*ops, **case.params)[1](case.pack(cts)))
        return [project(case.avals[i], raw[i]) for i in wrt]
    xs = [case.fresh_operands()[i] for i in wrt] + [
        random_cotangent(case.out_avals[k].shape, case.out_avals[k].dtype, ctx.rng) for k in outs]
    try:
        _, pullback = vjp(g, *xs)
    except Exception as exc:
        ctx.add("second_order.dot_product", "skipped", f"the pullback cannot be differentiated: "
                f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
        return
    domains = [case.domains[i] for i in wrt] + [None] * len(outs)
    rtol = fd_rtol(case.dtypes)
    v = dot_check(lambda *a: [np.asarray(r) for r in g(*a)], lambda vs: list(pullback(list(vs))), xs,
                  list(range(len(xs))), domains=domains, rng=ctx.rng, directions=ctx.opts.directions, rtol=rtol)
    ctx.add("second_order.dot_product", v.status, v.message, v.numbers)
