"""Holomorphic or not, and does the pullback know? For complex operands the convention of ``ad``
(``fd`` module docstring) makes the pullback of a holomorphic ``f`` complex-linear,
``g -> g * f'(z)``, and that of any other ``f`` not: ``g -> g * df/dz + conj(g * df/dzbar)``
has an antilinear part exactly when ``df/dzbar != 0``. So one test catches both classic bugs:

- finite differences decide whether ``f`` is holomorphic in an operand at the point: the
  Cauchy-Riemann equations in directional form, ``J(i u) == i J(u)`` (a real output is
  holomorphic only where it is constant);
- the pullback must then be complex-linear (``pullback(i v) == i pullback(v)``, exact up to
  rounding): a conj on the cotangent or a dropped imaginary part breaks it;
- and for a function that is not holomorphic it must not be: a complex-linear pullback there
  misses its ``conj(...)`` term (conj's rule written as ``g``, a forgotten conj).

``holomorphic=True`` asserts holomorphy: finite differences that say otherwise are a failure.
``check`` runs the same test on a whole program (``program.holomorphic``).
"""
from __future__ import annotations

import numpy as np

from .base import Verdict, computes, dense, random_cotangent
from .derivatives import primitive_function, with_replaced, rule_pullback, with_cotangent
from .fd import as64, directional_derivative, random_like, refined
from .settings import exact_rtol, fd_rtol

UNDECIDED = 10           # Cauchy-Riemann residuals between 1 and UNDECIDED tolerances decide nothing


def _as_complex(flat, y0) -> np.ndarray:
    """A flattened real derivative (``fd.flat64`` order) as one complex vector of the outputs
    (real outputs with a zero imaginary part)."""
    parts, start = [], 0
    for y in y0:
        n = int(np.size(y))
        if np.iscomplexobj(y):
            parts.append(flat[start:start + n] + 1j * flat[start + n:start + 2 * n])
            start += 2 * n
        else:
            parts.append(flat[start:start + n] + 0j)
            start += n
    return np.concatenate(parts) if parts else np.zeros(0, complex)


def _cauchy_riemann(fn, xs, i, y0, domain, rng, rtol) -> dict | None:
    """``J(i u)`` against ``i J(u)`` along one random direction of operand ``i``: the residual,
    the size of ``J u``, the tolerance, and the verdict (True holomorphic, False not, None
    undecided); None when the differences do not converge (no derivative to judge)."""
    z = as64(xs[i])
    u = random_like(z, rng)

    def f(a):
        return fn(*with_replaced(xs, [i], [a]))
    est = [refined(directional_derivative, f, [z], [d], domains=[domain]) for d in (u, 1j * u)]
    if not all(e.converged for e in est):
        return None
    du, diu = (_as_complex(e.value, y0) for e in est)
    residual = float(np.max(np.abs(diu - 1j * du), initial=0.0))
    size = float(max(np.max(np.abs(du), initial=0.0), np.max(np.abs(diu), initial=0.0)))
    tol = rtol * size + sum(10 * e.error + e.noise for e in est) + 1e-300
    verdict = True if residual <= tol else (False if residual > UNDECIDED * tol else None)
    return {"residual": residual, "size": size, "tolerance": tol, "holomorphic": verdict}


def _c_linear(pullback, y0, i, rng, tol) -> dict | None:
    """``pullback(i v)`` against ``i pullback(v)`` for operand ``i``, with random cotangents of the
    complex outputs (a real output's cotangent is real: it gets zero); None when the pullback
    gives operand ``i`` no cotangent."""
    vs = [random_cotangent(np.shape(y), np.asarray(y).dtype, rng) if np.iscomplexobj(y) else
          np.zeros(np.shape(y), np.asarray(y).dtype) for y in y0]
    ivs = [(1j * v).astype(v.dtype) if np.iscomplexobj(v) else v for v in vs]
    g, gi = (dense(pullback(c)[i]) for c in (vs, ivs))
    if g is None and gi is None:
        return None
    g = np.zeros(np.shape(gi)) if g is None else g
    gi = np.zeros(np.shape(g)) if gi is None else gi
    residual = float(np.max(np.abs(gi - 1j * g), initial=0.0))
    size = float(max(np.max(np.abs(g), initial=0.0), np.max(np.abs(gi), initial=0.0)))
    if size == 0.0:
        return None
    return {"residual": residual, "size": size, "linear": residual <= tol * size}


def _judge(cr, lin, complex_out, asserted) -> tuple[bool, str]:
    """One operand's verdict from its Cauchy-Riemann test and its pullback's linearity test:
    (passes, what to say)."""
    holo = None if cr is None else cr["holomorphic"]
    cr_text = "" if cr is None else f"|J(i u) - i J(u)| = {cr['residual']:.3g} for |J u| = {cr['size']:.3g}"
    if asserted and holo is False:
        return False, f"asserted holomorphic (holomorphic=True), but finite differences break Cauchy-Riemann: {cr_text}"
    if lin is None:
        return True, ("no cotangent" if complex_out else "real outputs, constant here" if holo else
                      "finite differences undecided")
    lin_text = f"|pullback(i v) - i pullback(v)| = {lin['residual']:.3g} for |pullback(v)| = {lin['size']:.3g}"
    if (holo or (asserted and holo is None)) and not lin["linear"]:
        return False, ("the function is holomorphic here" + (f" ({cr_text})" if cr else " (asserted)")
                       + f", but the pullback is not complex-linear ({lin_text}): it conjugates the cotangent "
                       "or drops its imaginary part; a holomorphic f pulls back g -> g * f'(z)")
    if holo is False and lin["linear"]:
        return False, (f"the function is not holomorphic ({cr_text}), but the pullback is complex-linear "
                       f"({lin_text}): it misses the conj(g * df/dzbar) term (a forgotten conj: conj's "
                       "pullback is conj(g), abs's g * conj(z) / |z|)")
    if holo is None:
        return True, f"finite differences undecided ({cr_text})" if cr else "finite differences do not converge"
    return True, ("holomorphic, complex-linear pullback" if holo else
                  "not holomorphic, the pullback has its antilinear part")


def holomorphy(fn, pullback, xs, wrt, *, domains, rng, rtol, exact, asserted, what="operand") -> Verdict:
    """The test of the module docstring for each complex input ``wrt`` of ``fn`` (``*xs -> list
    of outputs``) and ``pullback`` (``vs -> one cotangent or None per input``)."""
    xs = list(xs)
    idx = [i for i in wrt if np.iscomplexobj(xs[i])]
    if not idx:
        return Verdict("skipped", f"no complex {what}")
    with np.errstate(all="ignore"):
        y0 = fn(*xs)
    complex_out = any(np.iscomplexobj(y) for y in y0)
    if not complex_out and not asserted:
        return Verdict("skipped", "real outputs: a real-valued function of a complex variable is holomorphic "
                       "only where it is constant, and its cotangent is real (fd.dot_product checks it)")
    problems, notes, numbers = [], [], {}
    for i in idx:
        cr = _cauchy_riemann(fn, xs, i, y0, None if domains is None else domains[i], rng, rtol)
        lin = _c_linear(pullback, y0, i, rng, exact) if complex_out else None
        numbers[f"{what} {i}"] = {"cauchy_riemann": cr, "pullback": lin}
        ok, text = _judge(cr, lin, complex_out, asserted)
        (notes if ok else problems).append(f"{what} {i}: {text}")
    if problems:
        return Verdict("fail", "; ".join(problems), numbers)
    return Verdict("pass", "; ".join(notes), numbers)


@computes("complex.holomorphic")
def _holomorphic(ctx):
    case = ctx.case
    v = holomorphy(primitive_function(ctx), rule_pullback(ctx), case.fresh_operands(), with_cotangent(ctx),
                   domains=case.domains, rng=ctx.rng, rtol=fd_rtol(case.dtypes), exact=exact_rtol(case.dtypes),
                   asserted=ctx.opts.holomorphic)
    ctx.add("complex.holomorphic", v.status, v.message, v.numbers)
