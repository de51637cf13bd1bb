"""Closure versus lifted, for one rule instance of a gradient tape.

The closure form runs the rule on the instance's recorded operands and calls the pullback it
returns at the instance's recorded output cotangent; the lifted form is the instance's pullback
block in the tape, whose values were computed when the tape ran. Both give one cotangent per
operand; the comparison puts them side by side with the rule's and the pullback's source.

Instances are found on the primal tape (``ad.trace``) of the debugged function, mapped onto the
gradient tape by ``gt.meta["primal_map"]``; the rules are those registered when the debugger was
built (a wrong rule registered with ``ad.using_rule`` stays the one shown).
"""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ad.checks.settings import exact_rtol
from ad.lift import lift
from ad.rrule import project
from ad.tangents import NoTangent, ZeroTangent, unthunk
from ad.tape import Aval, Lit, Var

MAX_SOURCE_LINES = 40


@dataclass
class Instance:
    """One rule firing: the primal equation's primitive and params, in gradient-tape names."""
    name: str                     # its first output in the gradient tape
    prim: Any
    params: tuple
    rule: Callable | None
    operands: list                # "%n" names, or Lit
    needs: tuple[bool, ...]       # which operands get a cotangent
    outputs: list[str]
    source: str | None


@dataclass
class OperandRow:
    operand: str                  # "%n" or the literal's text
    closure: Any                  # an array, or None (no cotangent)
    lifted: Any
    lifted_var: str | None        # the tape variable holding the lifted cotangent
    max_abs: float | None
    max_rel: float | None
    ok: bool


@dataclass
class Comparison:
    instance: Instance
    rule_source: str
    pullback_source: str
    helpers: list[str]            # sources of the functions a generic rule was made from
    fallback: str | None          # why the rule runs as an opaque closure
    block: list[int]              # the lifted pullback's equations in the tape
    rows: list[OperandRow] = field(default_factory=list)
    error: str | None = None      # the closure form raised
    tolerance: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.ok for r in self.rows)


def instances(gt, primal, rules: dict) -> dict[str, Instance]:
    """The rule instances of ``gt`` by first output, found on its ``primal`` tape."""
    pmap = {repr(k): repr(v) for k, v in gt.meta.get("primal_map", {}).items() if type(v) is Var}
    active = {primal.inputs[i] for i in gt.wrt}
    out: dict[str, Instance] = {}
    for e in primal.eqns:
        needs = tuple(type(x) is Var and x in active and x.aval.is_float for x in e.inputs)
        if not (any(needs) and e.prim.differentiable):
            continue
        active.update(v for v in e.outputs if v.aval.is_float)
        names = [pmap.get(repr(v)) for v in e.outputs]
        if names[0] is None:        # traced differently from the gradient tape: leave it out
            continue
        operands = [pmap.get(repr(x)) if type(x) is Var else x for x in e.inputs]
        out[names[0]] = Instance(names[0], e.prim, e.params, rules.get(e.prim, e.prim.rule),
                                 operands, needs, names, e.source)
    return out


def source_of(fn) -> str:
    """A function's source, dedented and cut to ``MAX_SOURCE_LINES``; or why it is missing."""
    if fn is None:
        return "(no rule)"
    try:
        lines, start = inspect.getsourcelines(fn)
        where = f"# {inspect.getsourcefile(fn)}:{start}\n"
    except (OSError, TypeError) as exc:
        return f"(source not available: {type(exc).__name__}: {exc})"
    text = textwrap.dedent("".join(lines[:MAX_SOURCE_LINES]))
    if len(lines) > MAX_SOURCE_LINES:
        text += f"... ({len(lines) - MAX_SOURCE_LINES} more lines)\n"
    return where + text


def helpers_of(fn) -> list[str]:
    """Sources of the functions a rule closes over (the partials of ``ad.scalar_rule``, the
    transpose of ``ad.linear_rule``): a generic rule's own source says little."""
    cells = getattr(fn, "__closure__", None) or ()
    found = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:
            continue
        for f in (value if isinstance(value, tuple) else (value,)):
            if inspect.isfunction(f) and f is not fn:
                found.append(source_of(f))
    return found


def compare(inst: Instance, values: dict, cotangents: dict, block: list[int], eqns,
            fallbacks) -> Comparison:
    """The closure form and the lifted form of one instance, at its recorded values."""
    ops = [np.array(values[o], copy=True) if isinstance(o, str) else o.value for o in inst.operands]
    cts = [values[cotangents[o]] if o in cotangents else
           np.zeros(np.shape(values[o]), np.asarray(values[o]).dtype) for o in inst.outputs]
    lifted = lift(inst.prim, inst.params, ops, inst.needs, inst.source, rule=inst.rule)
    fallback = lifted.fallback or next((f.reason for f in fallbacks if f.rule == inst.prim.name
                                        and f.source == inst.source), None)
    result = Comparison(inst, source_of(inst.rule), "", helpers_of(inst.rule), fallback, block)
    result.tolerance = exact_rtol([np.asarray(v).dtype for v in ops + cts])
    try:
        with np.errstate(all="ignore"):
            _, pullback = inst.rule(*[np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in ops],
                                    **dict(inst.params))
            result.pullback_source = source_of(pullback)
            raw = pullback(tuple(cts) if inst.prim.multiple_results else cts[0])
            raw = raw if isinstance(raw, tuple) else (raw,)
            closure = [_dense(project(Aval.of(v), unthunk(g))) if need else None
                       for v, g, need in zip(ops, raw, inst.needs)]
    except Exception as exc:  # noqa: BLE001  (any error of user code is shown, not raised)
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    for i, (o, need) in enumerate(zip(inst.operands, inst.needs)):
        if not need:
            continue
        var, value = _lifted_value(lifted, i, inst, ops, cts, block, eqns, values, cotangents)
        result.rows.append(_row(o if isinstance(o, str) else repr(o), closure[i], value, var,
                                result.tolerance))
    return result


def _dense(g):
    if g is None or isinstance(g, (NoTangent, ZeroTangent)):
        return None
    return np.asarray(g)


def _lifted_value(lifted, i, inst, ops, cts, block, eqns, values, cotangents):
    """Operand ``i``'s cotangent from the tape's block (template variable matched to tape
    variable, equation by equation); the template evaluated afresh when they do not line up."""
    g = lifted.grads[i]
    if g is None:
        return None, None
    if type(g) is Lit:
        return None, np.asarray(g.value)
    tmap = {t: cotangents.get(o) for t, o in zip(lifted.cts, inst.outputs)}
    tmap.update((t, o) for t, o in zip(lifted.args, inst.operands) if type(t) is Var and isinstance(o, str))
    tape = [eqns[j] for j in block]
    if len(tape) == len(lifted.bwd) and all(a.prim is b.prim for a, b in zip(lifted.bwd, tape)):
        for t, e in zip(lifted.bwd, tape):
            tmap.update(zip(t.outputs, (repr(v) for v in e.outputs)))
    var = tmap.get(g)
    if var is not None and var in values:
        return var, values[var]
    return None, lifted.evaluate(ops, cts)[1][i]


def _row(operand, closure, lifted, var, tol) -> OperandRow:
    if closure is None and lifted is None:
        return OperandRow(operand, None, None, var, 0.0, 0.0, True)
    a = np.zeros(np.shape(lifted)) if closure is None else np.asarray(closure, dtype=np.float64)
    b = np.zeros(np.shape(closure)) if lifted is None else np.asarray(lifted, dtype=np.float64)
    try:
        with np.errstate(all="ignore"):
            diff = np.abs(a - b)
            rel = diff / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)
    except ValueError:            # shapes differ: that is the finding
        return OperandRow(operand, closure, lifted, var, None, None, False)
    both_nan = np.isnan(a) & np.isnan(b)
    diff, rel = np.where(both_nan, 0.0, diff), np.where(both_nan, 0.0, rel)
    max_abs = float(np.max(np.nan_to_num(diff, nan=np.inf), initial=0.0))
    max_rel = float(np.max(np.nan_to_num(rel, nan=np.inf), initial=0.0))
    return OperandRow(operand, closure, lifted, var, max_abs, max_rel, max_rel <= tol)
