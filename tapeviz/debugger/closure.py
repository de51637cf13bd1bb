"""The closure-versus-lifted panel, for one rule instance of a gradient tape.

The closure form runs the rule on the instance's recorded operands and calls the pullback it
returns at the instance's recorded output cotangent; the lifted form is the instance's pullback
block in the tape, whose values were computed when the tape ran. Both give one cotangent per
operand, judged by the checker's own comparison (``ad.checks.forms``); the panel puts them side
by side with the rule's and the pullback's source. When the primitive's pullback is overloaded
(``ad.backpropagate``), both forms run the overload, as the tape was built: its pullback is the
closure called and its template is the block inlined, and the panel shows its source.

Instances are found on the primal tape (``ad.trace``) of the debugged function, mapped onto the
gradient tape by ``gt.meta["primal_map"]``; the rules and the overloads are those registered when
the debugger was built (a wrong rule registered with ``ad.using_rule`` stays the one shown).

In forward mode (``tapeviz.debug_jvp``) the panel compares one primal equation's pushforward:
the closure form (``ad.jvp(..., form="closure")`` of the equation alone, at its recorded operands
and tangents: the rule's ``frule``, or the vjp of the pullback closure it returns) against the
output tangents its pushforward block computed in the linearization's tape.
"""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import numpy as np

import ad
from ad.checks.forms import CotangentComparison, closure_cotangents, compare_cotangents
from ad.checks.settings import exact_rtol
from ad.rules import overload_rule
from ad.reverse_mode.lift import lift
from ad.tape import Lit, Var, active_vars

from ..escaping import html_attr, html_text
from ..values import summarize
from .listing import Listing
from .model import DebugModel

MAX_SOURCE_LINES = 40
CHECK, CROSS = "\u2713", "\u2717"


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
    overload: Callable | None = None       # the overload of the pullback the tape inlined
    overload_kind: str | None = None       # its kind: "dense", or "zero" (an output had no cotangent)

    @property
    def pullback_rule(self) -> Callable | None:
        """What both forms run: the rule, or the overload as a rule (the primitive's value, the
        overload's pullback), as ``ad`` builds the tape with it."""
        return self.rule if self.overload is None else overload_rule(self.prim, self.overload)


class OperandRow(NamedTuple):
    operand: str                  # "%n" or the literal's text
    lifted_var: str | None        # the tape variable holding the lifted cotangent (None: evaluated)
    result: CotangentComparison


@dataclass
class Comparison:
    instance: Instance
    rule_source: str
    helpers: list[str]            # sources of the functions a generic rule was made from
    fallback: str | None          # why the rule runs as an opaque closure
    block: list[int]              # the lifted pullback's equations in the tape
    tolerance: float              # the relative tolerance the comparison used
    pullback_source: str = ""
    rows: list[OperandRow] = field(default_factory=list)
    error: str | None = None      # the closure form raised

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.result.ok for r in self.rows)


def instances(gt, primal, rules: dict, overloads: dict | None = None) -> dict[str, Instance]:
    """The rule instances of ``gt`` by first output, found on its ``primal`` tape; ``rules`` and
    ``overloads`` (primitive -> {kind: overload}) as they were when ``gt`` was built. An
    instance's overload is the one of the kind the builder chose: "zero" when some output got no
    cotangent, else "dense"."""
    pmap = {repr(k): repr(v) for k, v in gt.meta.get("primal_map", {}).items() if type(v) is Var}
    reached = {repr(v) for v in gt.meta.get("cotangents", {})}
    active = active_vars(primal, gt.wrt)
    out: dict[str, Instance] = {}
    for e in primal.eqns:
        needs = tuple(type(x) is Var and x in active for x in e.inputs)
        if not (any(needs) and e.prim.differentiable):
            continue
        names = [pmap.get(repr(v)) for v in e.outputs]
        if names[0] is None:        # traced differently from the gradient tape: leave it out
            continue
        operands = [pmap.get(repr(x)) if type(x) is Var else x for x in e.inputs]
        kind = "dense" if all(n in reached for n in names) else "zero"
        overload = (overloads or {}).get(e.prim, e.prim.overloads).get(kind)
        out[names[0]] = Instance(names[0], e.prim, e.params, rules.get(e.prim, e.prim.rule),
                                 operands, needs, names, e.source, overload,
                                 kind if overload is not None else None)
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
    ops = [values[o] if isinstance(o, str) else o.value for o in inst.operands]
    cts = [values[cotangents[o]] if o in cotangents else
           np.zeros(np.shape(values[o]), np.asarray(values[o]).dtype) for o in inst.outputs]
    dtypes = [np.asarray(v).dtype for v in ops + cts]
    shown = inst.rule if inst.overload is None else inst.overload
    lifted = lift(inst.prim, inst.params, ops, inst.needs, inst.source, rule=inst.pullback_rule)
    fallback = lifted.fallback or next((f.reason for f in fallbacks if f.rule == inst.prim.name
                                        and f.source == inst.source), None)
    result = Comparison(inst, source_of(shown), helpers_of(shown), fallback, block, exact_rtol(dtypes))

    def rule(*args, **params):            # the rule, noting its pullback's source for the panel
        y, pullback = inst.pullback_rule(*args, **params)
        result.pullback_source = source_of(pullback)
        return y, pullback

    try:
        closure = closure_cotangents(inst.prim, dict(inst.params), ops, inst.needs, tuple(cts), rule=rule)
    except Exception as exc:  # noqa: BLE001  (any error of user code is shown, not raised)
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    found = [_lifted_value(lifted, i, inst, ops, cts, block, eqns, values, cotangents) if need
             else (None, None) for i, need in enumerate(inst.needs)]
    for r in compare_cotangents(closure, [value for _, value in found], inst.needs, dtypes):
        operand = inst.operands[r.index]
        result.rows.append(OperandRow(operand if isinstance(operand, str) else repr(operand),
                                      found[r.index][0], r))
    return result


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
    template = list(lifted.bwd)
    if inst.overload is not None:   # the builder inlines what the overload computed before its pullback too
        computed = set(lifted.outs)
        template = [t for t in lifted.fwd if computed.isdisjoint(t.outputs)] + template
    tape = [eqns[j] for j in block]
    if len(tape) == len(template) and all(a.prim is b.prim for a, b in zip(template, tape)):
        for t, e in zip(template, tape):
            tmap.update(zip(t.outputs, (repr(v) for v in e.outputs)))
    var = tmap.get(g)
    if var is not None and var in values:
        return var, values[var]
    return None, lifted.evaluate(ops, cts)[1][i]


def closure_html(model: DebugModel, listing: Listing, comparison, name: str | None) -> str:
    if comparison is None:
        what = f"{html_text(name)} is not the output of a differentiated rule instance" if name else "nothing selected"
        return (f'<div class="tv-closure-panel" data-instance="">Select an equation of a differentiated '
                f'rule instance to compare its closure and lifted pullbacks ({what}).</div>')
    c = comparison
    inst = c.instance
    head = (f'<div class="tv-closure-h">rule <b>{html_text(inst.prim.name)}</b> for {listing.var(inst.name)}'
            f' at <code>{html_text(inst.source or "?")}</code></div>')
    shown, overloaded = "rule", ""
    if inst.overload is not None:
        shown, overloaded = "overload", html_attr("data-overload", inst.overload_kind)
        call = f'ad.backpropagate({inst.prim.name}, "{inst.overload_kind}")'
        head += (f'<div class="tv-overload">its pullback is overloaded: <code>{html_text(call)}</code> '
                 f'registered <b>{html_text(_name_of(inst.overload))}</b>, which the tape inlines and the '
                 'closure form calls instead of the rule\'s pullback</div>')
    if c.fallback:
        head += (f'<div class="tv-fallback">opaque fallback: this rule could not be lifted, so its pullback '
                 f'runs as a closure in the tape too. Reason: {html_text(c.fallback)}</div>')
    block, verdict = _block_and_verdict(model, listing, c, "the cotangents pass through")
    rows = "".join(_row_html(listing, row) for row in c.rows)
    helpers = "".join(f'<div class="tv-caption">made from</div><pre>{html_text(h)}</pre>' for h in c.helpers)
    return (f'<div class="tv-closure-panel"{html_attr("data-instance", inst.name)}'
            f'{html_attr("data-ok", str(c.ok).lower())}'
            f'{html_attr("data-fallback", str(bool(c.fallback)).lower())}{overloaded}>{head}{verdict}'
            '<table class="tv-table"><thead><tr><th>operand</th><th>closure cotangent</th><th>lifted cotangent</th>'
            f'<th>max |diff|</th><th>max rel</th><th></th></tr></thead><tbody>{rows}</tbody></table>'
            f'<div class="tv-src"><div><div class="tv-caption">{shown} source</div>'
            f'<pre>{html_text(c.rule_source)}</pre>{helpers}</div>'
            '<div><div class="tv-caption">pullback closure source</div>'
            f'<pre>{html_text(c.pullback_source or "(not reached)")}</pre></div></div>'
            f'<div class="tv-caption">lifted pullback: {len(c.block)} equation(s) in the tape</div>'
            f'<div class="tv-lifted">{block}</div></div>')


def _row_html(listing: Listing, row: OperandRow, missing: str = "template") -> str:
    r = row.result
    operand = listing.var(row.operand) if row.operand in listing.model.var_attrs else html_text(row.operand)
    where = listing.var(row.lifted_var) if row.lifted_var else missing
    return (f'<tr class="{"tv-ok" if r.ok else "tv-bad"}"><td>{operand}</td><td>{html_text(_short(r.closure))}</td>'
            f'<td>{where}: {html_text(_short(r.lifted))}</td><td class="tv-num">{_num(r.max_abs)}</td>'
            f'<td class="tv-num">{_num(r.max_rel)}</td><td>{CHECK if r.ok else CROSS}</td></tr>')


def _name_of(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _num(x) -> str:
    return "shape mismatch" if x is None else f"{x:.3g}"


def _short(a) -> str:
    if a is None:
        return "none (zero)"
    return f"{np.shape(a)} {summarize(a)}"


# -- forward mode ----------------------------------------------------------------------------

@dataclass
class TangentComparison:
    """Closure versus lifted for one primal equation's pushforward (rows: one per output)."""
    name: str                     # the equation's first output
    prim: Any
    source: str | None
    rule_source: str
    block: list[int]              # its pushforward block in the tape
    tolerance: float
    rows: list[OperandRow] = field(default_factory=list)
    error: str | None = None      # the closure form raised
    overloaded: bool = False      # the rule's pullback is overloaded: rule_source is the overload's

    @property
    def ok(self) -> bool:
        return self.error is None and all(r.result.ok for r in self.rows)


def compare_tangents(model: DebugModel, eqn: int) -> TangentComparison:
    """Equation ``eqn``'s output tangents: the closure form, run on its recorded operands and
    tangents (the caller registers the rules and overloads the tape was built with), beside the
    values of its pushforward block. An overload of the rule's pullback (``ad.backpropagate``) is
    what the closure form of the equation alone transposes (every output of it reaches its
    output: the "dense" one), so its source is shown."""
    m = model
    e = m.eqns[eqn]
    ops = [m.values[repr(x)] if type(x) is Var else x.value for x in e.inputs]
    tangents = [m.values[m.tangents[repr(x)]] if type(x) is Var and repr(x) in m.tangents else None
                for x in e.inputs]
    names = [m.tangents.get(repr(v)) for v in e.outputs]
    lifted = [m.values[n] if n else None for n in names]
    overload = e.prim.overloads.get("dense")
    rule = overload or e.prim.frule or e.prim.rule
    dtypes = [np.asarray(v).dtype for v in ops + [x for x in lifted if x is not None]]
    block = [i for i in m.rows[m.row_of_eqn[eqn]].backward]
    result = TangentComparison(repr(e.outputs[0]), e.prim, e.source, source_of(rule), block, exact_rtol(dtypes),
                               overloaded=overload is not None)

    def alone(*operands):
        return e.prim.bind(*operands, **dict(e.params))
    try:
        _, closure = ad.jvp(alone, tuple(ops), tuple(tangents), form="closure")
    except Exception as exc:  # noqa: BLE001  (any error of user code is shown, not raised)
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    closure = list(closure) if e.prim.multiple_results else [closure]
    needs = [v.aval.is_float for v in e.outputs]
    for r in compare_cotangents(closure, lifted, needs, dtypes):
        result.rows.append(OperandRow(repr(e.outputs[r.index]), names[r.index], r))
    return result


def _block_and_verdict(model: DebugModel, listing: Listing, c, empty: str) -> tuple[str, str]:
    """The compared block's equations and the verdict line, shared by both modes' panels."""
    block = "".join(f'<div class="tv-eq"{html_attr("data-var", repr(model.eqns[i].outputs[0]))}>{listing.line(i)}</div>'
                    for i in c.block) or f'<div class="tv-eq">(no equations: {empty})</div>'
    if c.error:
        return block, f'<div class="tv-verdict tv-bad">the closure form raised {html_text(c.error)}</div>'
    return block, (f'<div class="tv-verdict {"tv-good" if c.ok else "tv-bad"}">'
                   f'{"closure and lifted agree" if c.ok else "closure and lifted DIFFER"} '
                   f'(relative tolerance {c.tolerance:.1e})</div>')


def tangent_html(model: DebugModel, listing: Listing, comparison, name: str | None) -> str:
    if comparison is None:
        what = f"{html_text(name)} belongs to no pushforward" if name else "nothing selected"
        return (f'<div class="tv-closure-panel" data-instance="">Select a primal equation or its tangent '
                f'to compare its closure and lifted pushforwards ({what}).</div>')
    c = comparison
    head = (f'<div class="tv-closure-h">pushforward of <b>{html_text(c.prim.name)}</b> for {listing.var(c.name)}'
            f' at <code>{html_text(c.source or "?")}</code></div>')
    block, verdict = _block_and_verdict(model, listing, c, "no tangent reaches it")
    rows = "".join(_row_html(listing, row, "no tangent") for row in c.rows)
    caption = ("overload source (ad.backpropagate: the closure form pushes forward through the vjp of "
               "its pullback)" if c.overloaded else "rule source (the closure form runs it)")
    return (f'<div class="tv-closure-panel"{html_attr("data-instance", c.name)}'
            f'{html_attr("data-ok", str(c.ok).lower())} data-mode="forward">{head}{verdict}'
            '<table class="tv-table"><thead><tr><th>output</th><th>closure tangent</th><th>lifted tangent</th>'
            f'<th>max |diff|</th><th>max rel</th><th></th></tr></thead><tbody>{rows}</tbody></table>'
            f'<div class="tv-src"><div><div class="tv-caption">{caption}</div>'
            f'<pre>{html_text(c.rule_source)}</pre></div></div>'
            f'<div class="tv-caption">lifted pushforward: {len(c.block)} equation(s) in the tape</div>'
            f'<div class="tv-lifted">{block}</div></div>')
