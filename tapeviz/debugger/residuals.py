"""The debugger's residuals table: every forward value the backward pass keeps, with its size,
producer, consumers and lifetime, a window of rows around the cursor; those live at the cursor
highlighted (each row carries its lifetime as ``data-first``/``data-last``, so the view can
re-highlight it for any step)."""
from __future__ import annotations

import bisect

from ad.tape import Var

from ..escaping import html_attr, html_text
from .listing import Listing
from .model import DebugModel


def residuals_html(model: DebugModel, listing: Listing, rows_each_side: int = 30, cursor: bool = True) -> str:
    """The table's rows around the cursor's residuals; with ``cursor=False`` without what depends
    on the cursor (the live rows' class, the lifetime's cursor mark: the view sets them), so
    steps that keep the same rows send the same markup."""
    table = model.residual_table()
    if not table:
        return f'<div class="tv-residuals tv-empty">The {model.other_pass} reads no forward value.</div>'
    step = model.step
    index = model.residual_order
    reads = [index[repr(x)] for e in model.eqns[step.start:step.stop] for x in e.inputs
             if type(x) is Var and repr(x) in index]
    if model.selected in index:
        focus = index[model.selected]
    elif reads:
        focus = min(reads)
    else:                                 # the first made at or after the cursor
        focus = min(bisect.bisect_left(model.residual_firsts, step.start), len(table) - 1)
    lo, hi = max(0, focus - rows_each_side), min(len(table), focus + rows_each_side + 1)
    n_eqns = len(model.eqns)
    total = model.residual_bytes
    rows = []
    for r in table[lo:hi]:
        live = r["first"] <= step.start <= r["last"]
        first = f"step {model.step_of(r['first']) + 1}" if r["first"] >= 0 else "start"
        last = f"step {model.step_of(r['last']) + 1}" if r["last"] >= 0 else "never read"
        left, width = max(r["first"], 0) / n_eqns * 100, (r["last"] - max(r["first"], 0) + 1) / n_eqns * 100
        producer = "input" if r["producer"] is None else f"#{r['producer']} {model.eqns[r['producer']].prim.name}"
        consumers = ", ".join(f"#{c}" for c in r["consumers"][:6]) + (" \u2026" if len(r["consumers"]) > 6 else "")
        cls = ' class="tv-live"' if live and cursor else ""
        mark = f' style="left:{step.start / n_eqns * 100:.2f}%"' if cursor else ""
        rows.append(f'<tr{cls}{html_attr("data-var", r["name"])} data-first="{r["first"]}" data-last="{r["last"]}">'
                    f'<td>{listing.var(r["name"])} <span class="tv-label">{html_text(r["label"])}</span></td>'
                    f'<td>{html_text(r["aval"])}</td><td class="tv-num">{r["bytes"]:,}</td>'
                    f'<td>{html_text(producer)}</td><td>{html_text(consumers)}</td>'
                    f'<td>{first} \u2192 {last}<div class="tv-life"><span style="left:{left:.2f}%;'
                    f'width:{max(width, 0.5):.2f}%"></span><i{mark}></i>'
                    f'</div></td></tr>')
    more = f" (rows {lo + 1}\u2013{hi} shown, around the cursor)" if hi - lo < len(table) else ""
    return (f'<div class="tv-residuals"{html_attr("data-count", len(table))}>'
            f'<div class="tv-caption">{len(table)} residuals, {total:,} bytes kept from the forward '
            f'pass for the {model.other_pass}{more}; highlighted: live at the cursor</div>'
            '<table class="tv-table"><thead><tr><th>residual</th><th>shape</th><th>bytes</th><th>producer</th>'
            f'<th>consumers</th><th>lifetime</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
