"""The debugger's side-by-side listing and the phase line above it, drawn from ``DebugModel``:
pure functions of the model (no widgets), so tests read them as strings.

Only a window of rows around the cursor is drawn; each equation's text is formatted once and
cached, and what depends on the cursor (the current step, partners) is added around it as
classes. The view re-applies those classes for whatever step it shows (a static page draws one
listing for every step), and tints variables (written, partners, selected) the same way.
Every line has a fixed height (an equation's text gives way to an ellipsis before its outputs
and tags; its check badges take a second line), so the view knows each row's height from the
markup and draws only the rows in view (see ``static/debugger.js``). Each equation's line starts
with an empty gutter, where the view draws its breakpoint.
"""
from __future__ import annotations

from ad.origins import OriginKind
from ad.tape import Var, format_literal, format_param

from ..escaping import html_attr, html_text
from ..graph import BACKWARD_BLOCK, PUSHFORWARD_BLOCK
from .model import RIGHT_BLOCKS, DebugModel

RESIDUAL_COLOURS = 8
MAX_PARAMS = 60
HEADERS = {     # mode -> the two columns' headings
    "reverse": ("forward \u2193 (each rule instance)",
                "backward \u2191 (its pullback block and fan-in, runs bottom to top)"),
    "forward": ("forward \u2193 (each primal equation)",
                "tangent \u2193 (its pushforward block, runs after the forward pass, top to bottom)"),
}


# -- the phase line ------------------------------------------------------------------------------

def writes_text(model: DebugModel) -> str:
    """The first variables the current step writes, for the phase line."""
    written = model.written()
    return " ".join(written[:6]) + (" \u2026" if len(written) > 6 else "")


def phase_html(model: DebugModel) -> str:
    step = model.step
    checks = "none" if model.report is None else ("fail" if not model.report.ok else "pass")
    return (f'<div class="tv-phase"{html_attr("data-phase", step.phase)}{html_attr("data-step", model.index)}'
            f'{html_attr("data-steps", model.n_steps)}{html_attr("data-current", model.current)}'
            f'{html_attr("data-granularity", model.granularity)}{html_attr("data-selected", model.selected or "")}'
            f'{html_attr("data-checks", checks)}>'
            f'<span class="tv-phase-text">{html_text(model.phase_line())}</span>'
            f'<span class="tv-phase-writes">writes {html_text(writes_text(model))}</span></div>')


# -- the listing ---------------------------------------------------------------------------------

class Listing:
    """Renders the side-by-side table; caches each equation's formatted text."""

    def __init__(self, model: DebugModel, rows_each_side: int = 40):
        self.model = model
        self.rows_each_side = rows_each_side
        self._lines: dict[int, str] = {}
        self._vars: dict[str, str] = {}
        self._cells: dict = {}

    def var(self, name: str) -> str:
        """A clickable variable name; residuals coloured the same wherever they appear."""
        span = self._vars.get(name)
        if span is None:
            d = self.model.var_attrs[name]
            cls = "tv-var"
            k = self.model.residual_order.get(name)
            if k is not None:
                cls += f" tv-res tv-r{k % RESIDUAL_COLOURS}"
            title = html_attr("title", d["label"]) if d["label"] else ""
            span = f'<span class="{cls}"{html_attr("data-var", name)}{title}>{html_text(name)}</span>'
            self._vars[name] = span
        return span

    def line(self, i: int) -> str:
        text = self._lines.get(i)
        if text is None:
            text = self._lines[i] = self._format(i)
        return text

    def _format(self, i: int) -> str:
        e = self.model.eqns[i]
        attrs = self.model.var_attrs
        lhs = " ".join(f'{self.var(repr(v))}<span class="tv-aval">:{html_text(v.aval)}</span>' for v in e.outputs)
        params = " ".join(f"{k}={format_param(v)}" for k, v in e.params)
        if len(params) > MAX_PARAMS:
            params = params[:MAX_PARAMS - 1] + "\u2026"
        ops = " ".join(self.var(repr(x)) if type(x) is Var else
                       f'<span class="tv-lit">{html_text(format_literal(x.value))}</span>' for x in e.inputs)
        rhs = f'<b class="tv-prim">{html_text(e.prim.name)}</b>'
        if params:
            rhs += f' <span class="tv-params">{html_text(params)}</span>'
        outs = [attrs[repr(v)]["output"] for v in e.outputs if attrs[repr(v)]["output"]]
        tail = "".join(f'<span class="tv-out">\u2192 {html_text(o)}</span>' for o in outs)
        o = e.origin
        if o.kind is OriginKind.ACCUMULATE:
            tail += f'<span class="tv-tag tv-tag-fanin">fan-in of {html_text(o.of)}</span>'
        elif o.kind in (OriginKind.SEED, OriginKind.ZEROS, OriginKind.TANGENT_ZEROS):
            tail += f'<span class="tv-tag">{html_text(o.describe())}</span>'
        if repr(e.outputs[0]) in self.model.gt.meta.get("hoisted", ()):
            tail += ('<span class="tv-tag" title="it reads no tangent: ad.linearize runs it once, in the '
                     'forward section">hoisted</span>')
        if e.prim.kind == "opaque":
            reason = next((f.reason for f in self.model.fallbacks
                           if f.rule == o.rule and f.source == e.source), "the rule could not be lifted")
            tail += f'<span class="tv-tag tv-tag-opaque"{html_attr("title", reason)}>opaque closure</span>'
        # one line of fixed height: the text gives way (an ellipsis) to the outputs and tags
        return (f'<span class="tv-line"><span class="tv-text"><span class="tv-n">#{i}</span>{lhs} = {rhs} {ops}'
                f'</span>{tail}</span>')

    def window(self, cursor: int | None = None) -> tuple[int, int]:
        """The rows [lo, hi) drawn around a cursor row (default: the model's)."""
        m = self.model
        cursor = m.row_of_eqn[m.step.start] if cursor is None else cursor
        return max(0, cursor - self.rows_each_side), min(len(m.rows), cursor + self.rows_each_side + 1)

    def follow(self, window: tuple[int, int] | None) -> tuple[int, int]:
        """The window to draw next: ``window`` while the cursor stays a quarter of it away from
        its edges (so a step sends no new listing), else one centred on the cursor."""
        m = self.model
        cursor, n = m.row_of_eqn[m.step.start], len(m.rows)
        if window is not None:
            lo, hi = window
            margin = max(1, self.rows_each_side // 4)
            if lo <= cursor < hi and (lo == 0 or cursor >= lo + margin) and (hi == n or cursor < hi - margin):
                return window
        return self.window(cursor)

    def render(self, window: tuple[int, int] | None = None, cursor: bool = True) -> str:
        """The rows of ``window`` (default: around the cursor); with ``cursor=False`` without
        what depends on the cursor and the selection (the view adds those classes), so the same
        markup serves every step that keeps the window."""
        m = self.model
        step = m.step
        row_now = m.row_of_eqn[step.start]
        lo, hi = window or self.window()
        partners = m.partners()[0] if cursor else set()
        selected = m.producer_index.get(m.selected) if cursor and m.selected else None
        ctx = (step.start, step.stop, partners, selected) if cursor else None
        body = []
        if lo > 0:
            body.append(f'<tr class="tv-more"><td colspan="2">\u2026 {lo} rows above (drawn as the cursor '
                        'moves)</td></tr>')
        for r in range(lo, hi):
            row = m.rows[r]
            cls = " tv-cursor-row" if cursor and r == row_now else ""
            fwd = self._inputs(partners, cursor) if row.key is None else self._cell(row.forward, ctx, "forward")
            body.append(f'<tr class="tv-row{cls}" data-row="{r}"><td class="tv-forward">{fwd}</td>'
                        f'<td class="tv-backward">{self._cell(row.backward, ctx, "backward")}</td></tr>')
        if hi < len(m.rows):
            body.append(f'<tr class="tv-more"><td colspan="2">\u2026 {len(m.rows) - hi} rows below</td></tr>')
        where = f'{html_attr("data-step", m.index)}{html_attr("data-current", m.current)}' if cursor else ""
        left, right = HEADERS[m.mode]
        return (f'<div class="tv-listing"{where}{html_attr("data-mode", m.mode)}'
                f'{html_attr("data-rows", f"{lo}-{hi - 1}")}{html_attr("data-total-rows", len(m.rows))}>'
                '<div class="tv-scroll"><table class="tv-pair"><thead><tr>'
                f'<th class="tv-forward">{html_text(left)}</th><th class="tv-backward">{html_text(right)}</th>'
                f'</tr></thead><tbody>{"".join(body)}</tbody></table></div></div>')

    def _inputs(self, partners, cursor: bool = True) -> str:
        m = self.model
        lines = ['<div class="tv-block-h">inputs</div>']
        for v in m.gt.inputs[:len(m.gt.inputs) - getattr(m.gt, "n_seeds", 0)]:
            name = repr(v)
            d = m.var_attrs[name]
            cls = " tv-sel" if cursor and name == m.selected else ""
            kind = ("differentiated" if d["kind"] == "parameter" or name in m.tangents
                    else f"tangent of {d['tangent_of']}" if d["kind"] == "tangent" else "not differentiated")
            lines.append(f'<div class="tv-eq tv-input{cls}"{html_attr("data-var", name)}><span class="tv-n">in</span>'
                         f'{self.var(name)}<span class="tv-aval">:{html_text(d["aval"])}</span> '
                         f'<span class="tv-label">{html_text(d["label"])}</span> '
                         f'<span class="tv-kind">{kind}</span></div>')
        return "".join(lines)

    def _cell(self, eqns: list[int], ctx, side: str) -> str:
        marks = self.model.marks
        out = []
        for i, before, tail in self._parts(eqns, side):
            if ctx is None:                   # the view adds the cursor's classes
                cls = ""
            else:
                start, stop, partners, selected = ctx
                cls = " tv-current" if start <= i < stop else " tv-future" if i >= stop else " tv-done"
                if i in partners:
                    cls += " tv-partner"
                if i == selected:
                    cls += " tv-sel"
            badges = ""
            if i in marks:                    # on a line of their own, under the equation's
                badges = f'<span class="tv-badges">{"".join(_badge(k) for k in marks[i])}</span>'
                cls += " tv-failed" if any(k.status == "fail" for k in marks[i]) else " tv-warned"
            out.append(f'{before}<div class="tv-eq{cls}"{tail}{badges}</div>')
        return "".join(out)

    def _parts(self, eqns: list[int], side: str) -> list:
        """Per equation of a cell: the group header before it (if a group starts) and its
        attributes and text: everything that does not depend on the cursor, made once."""
        key = (eqns[0], side) if eqns else None
        parts = self._cells.get(key)
        if parts is None:
            m = self.model
            parts, group = [], None
            for i in eqns:
                o = m.eqns[i].origin
                g = (o.kind in RIGHT_BLOCKS, repr(o.of)) if side == "backward" else repr(o.of)
                header = _group_header(m, i, side, len(eqns)) if g != group else None
                group = g
                before = f'<div class="tv-block-h">{html_text(header)}</div>' if header else ""
                first = html_attr("data-var", repr(m.eqns[i].outputs[0]))
                # the gutter: a click there toggles a breakpoint on the equation (the view)
                parts.append((i, before, f' data-eq="{i}"{first}><span class="tv-gutter"></span>{self.line(i)}'))
            self._cells[key] = parts
        return parts


def _group_header(m: DebugModel, i: int, side: str, n: int) -> str | None:
    e = m.eqns[i]
    o = e.origin
    if side == "backward":
        if o.kind in BACKWARD_BLOCK:
            return f"pullback of {o.of!r} ({o.rule})"
        if o.kind in PUSHFORWARD_BLOCK:
            return o.describe()          # "pushforward of %9 (tanh), from its pullback" (or its fallback)
        return None
    if n > 1 and o.of is not None:
        return f"rule {o.rule} \u2192 {o.of!r}"
    return None


def _badge(mark) -> str:
    sign = "\u2717" if mark.status == "fail" else "\u26a0"
    text = f"{sign} {mark.check}" + (f" of #{mark.eqn}" if mark.partner else "")
    title = mark.message + (f" (found on equation #{mark.eqn}, this one's partner)" if mark.partner else "")
    cls = html_attr("class", f"tv-badge tv-{mark.status}")
    return f'<span{cls}{html_attr("title", title)}>{html_text(text)}</span>'
