"""The value inspector: a variable's card (shape, dtype, statistics, a heatmap, NaN/Inf marked)
beside the card of its cotangent (or, for a cotangent, of its primal; in forward mode, its
tangent's, or a tangent's primal's).

The heatmap is an HTML table with one coloured cell per element (a corner of big arrays):
blue for negative, red for positive, white for zero, scaled by the largest finite magnitude;
NaN cells are magenta and infinities black, so they cannot be missed. Complex values are shown
by magnitude and phase: the statistics give the ranges of |z|, of the phase and of the real
and imaginary parts, a scalar is written out with its polar form, and heatmap cells take their
hue from the phase and their strength from the magnitude (white at 0).

A card depends on its variable only: it carries the equation that makes it (``data-eq``), both
notes (computed later, written by this step) and its step number at both granularities; where it
stands relative to the cursor (``data-when``, set here for the model's cursor and by the view for
any other) and the view's granularity show the right ones.
"""
from __future__ import annotations

import colorsys

import numpy as np

from ..escaping import html_attr, html_text
from .model import DebugModel
from ad.origins import OriginKind

MAX_CELLS = (24, 32)                   # rows, columns of the heatmap
NAN, POS_INF, NEG_INF = "#d946ef", "#111827", "#111827"
SEP = " \u00b7 "
KINDS = {"input": "input (not differentiated)", "parameter": "differentiated input",
         "intermediate": "forward value", "residual": "residual (kept for the backward pass)",
         "output": "output", "cotangent": "backward value", "tangent": "tangent value"}
FORWARD_KINDS = {**KINDS, "input": "input (constant: no tangent)", "residual": "residual (kept for the tangent pass)"}


def inspector_html(model: DebugModel, var_html, name: str | None = None) -> str:
    """Cards for a variable (default: the focus, the selection else the current step's first
    result) and its partner: the cotangent of a forward value, the primal of a cotangent."""
    name = name or model.focus
    d = model.var_attrs[name]
    if d["phase"] == "forward" and model.mode == "forward":
        partner = model.tangents.get(name)
        role = "tangent"
        missing = "no tangent: it depends on no input with a tangent (or its pushforward has none)"
    elif d["phase"] == "tangent":
        partner = d.get("tangent_of")
        role = "primal"
        p = model.producer_index.get(name)
        missing = (f"a temporary of the {model.eqns[p].origin.describe()}" if p is not None
                   else "a tangent input")
    elif d["phase"] == "forward":
        partner = model.cotangents.get(name)
        role = "cotangent"
        missing = "no cotangent reaches it (it does not influence the output, or is not differentiated)"
    else:
        partner = d.get("cotangent_of") or _of(model, name)
        role = "primal"
        p = model.producer_index.get(name)
        missing = (f"a temporary of the {model.eqns[p].origin.describe()}" if p is not None
                   else "a cotangent input")
    if partner is not None and partner not in model.var_attrs:      # merged away by the optimiser
        partner, missing = None, (f"its {role} {partner} is not in this tape: the optimiser merged it "
                                  "with an equal one (common subexpressions)")
    cards = [card(model, name, "value", var_html)]
    cards.append(card(model, partner, role, var_html) if partner else
                 f'<div class="tv-card tv-card-empty"><div class="tv-card-h">{role}</div>{html_text(missing)}</div>')
    return (f'<div class="tv-value"{html_attr("data-var", name)}{html_attr("data-partner", partner or "")}>'
            f'{"".join(cards)}</div>')


def _of(model: DebugModel, name: str) -> str | None:
    p = model.producer_index.get(name)
    o = model.eqns[p].origin if p is not None else None
    return repr(o.of) if o is not None and o.of is not None and o.kind in (OriginKind.ACCUMULATE, OriginKind.SEED, OriginKind.ZEROS) else None


def card(model: DebugModel, name: str, role: str, var_html) -> str:
    d = model.var_attrs[name]
    value = model.values.get(name)
    p = model.producer_index.get(name)
    kinds = FORWARD_KINDS if model.mode == "forward" else KINDS
    facts = [html_text(d["aval"]), html_text(kinds.get(d["kind"], d["kind"]))]
    if d["label"]:
        facts.insert(0, f'<span class="tv-label">{html_text(d["label"])}</span>')
    if d["output"]:
        facts.append(f'<span class="tv-out">\u2192 {html_text(d["output"])}</span>')
    when, eq = "", ""
    if p is not None:
        steps = "".join(f'<span class="tv-g-{g}">, step {model.step_of(p, g) + 1}</span>'
                        for g in model.steps)
        facts.append(f"made by #{p} {html_text(model.eqns[p].prim.name)}{steps}")
        when = ('<div class="tv-when"><div class="tv-note tv-when-future">not computed '
                'yet at the cursor: shown as it will be</div><div class="tv-note tv-just tv-when-current">'
                'written by this step</div></div>')
        place = "future" if p >= model.step.stop else "current" if model.step.start <= p else "done"
        eq = html_attr("data-eq", p) + html_attr("data-when", place)
    return (f'<div class="tv-card"{html_attr("data-role", role)}{html_attr("data-var", name)}{eq}>'
            f'<div class="tv-card-h">{html_text(role)} {var_html(name)} {SEP.join(facts)}</div>{when}'
            f'{stats_html(value)}{heatmap_html(value)}</div>')


def stats_html(value) -> str:
    if value is None or callable(value):
        return '<div class="tv-note">an opaque closure handle (no array)</div>'
    a = np.asarray(value)
    if a.dtype == object or a.size == 0:
        return f'<div class="tv-note">{html_text(a.dtype)} array of size {a.size}</div>'
    cells = [("dtype", str(a.dtype)), ("shape", str(a.shape))]
    if a.dtype == bool:
        cells.append(("true", f"{int(a.sum())} of {a.size}"))
    elif np.iscomplexobj(a):
        cells += _complex_stats(a)
    elif np.issubdtype(a.dtype, np.number):
        finite = a[np.isfinite(a)] if np.issubdtype(a.dtype, np.inexact) else a
        if finite.size:
            cells += [("min", f"{finite.min():.4g}"), ("max", f"{finite.max():.4g}"),
                      ("mean", f"{finite.mean():.4g}"), ("std", f"{finite.std():.4g}")]
        if np.issubdtype(a.dtype, np.inexact):
            cells += [("NaN", str(int(np.isnan(a).sum()))), ("Inf", str(int(np.isinf(a).sum())))]
    bad = {k for k, v in cells if k in ("NaN", "Inf") and v != "0"}
    body = "".join(f'<span class="{"tv-bad" if k in bad else ""}"><b>{html_text(k)}</b> {html_text(v)}</span>'
                   for k, v in cells)
    return f'<div class="tv-stats">{body}</div>'


def _span(lo, hi, unit: str = "") -> str:
    return f"{lo:.4g}{unit}" if lo == hi else f"{lo:.4g}{unit} \u2026 {hi:.4g}{unit}"


def _complex_stats(a: np.ndarray) -> list[tuple[str, str]]:
    """Ranges of the magnitude, the phase (of the non-zero elements), the real and the
    imaginary parts, over the finite elements; NaN and Inf count elements with such a part."""
    r = np.abs(a)
    finite = np.isfinite(a)
    cells = []
    if finite.any():
        z, rf = a[finite], r[finite]
        cells.append(("|z|", _span(rf.min(), rf.max())))
        if rf.size > 1:
            cells.append(("mean |z|", f"{rf.mean():.4g}"))
        phase = np.degrees(np.angle(z[rf > 0]))
        if phase.size:
            cells.append(("\u2220", _span(phase.min(), phase.max(), "\u00b0")))
        cells += [("re", _span(z.real.min(), z.real.max())), ("im", _span(z.imag.min(), z.imag.max()))]
    return cells + [("NaN", str(int(np.isnan(a).sum()))), ("Inf", str(int(np.isinf(a).sum())))]


def complex_text(z: complex, digits: int = 6) -> str:
    """``1+2j``, ``-0.5-1j``, ``nan+1j``: the number as Python reads it, to ``digits``."""
    return f"{z.real + 0.0:.{digits}g}{z.imag:+.{digits}g}j"   # (+ 0.0: no "-0-2j")


def polar_text(z: complex) -> str:
    """``|z| 2.236 ∠63.43°`` (no phase for 0 or a non-finite magnitude)."""
    r = abs(z)
    if r == 0 or not np.isfinite(r):
        return f"|z| {r:.4g}"
    return f"|z| {r:.4g} \u2220{np.degrees(np.angle(z)):.4g}\u00b0"


def heatmap_html(value) -> str:
    """A small rendering: the number for a scalar, coloured cells for 1-D and 2-D arrays (higher
    dimensions are shown as 2-D, the leading axes flattened)."""
    if value is None or callable(value):
        return ""
    a = np.asarray(value)
    if a.dtype == object or a.size == 0 or not np.issubdtype(a.dtype, np.number) and a.dtype != bool:
        return ""
    is_complex = np.iscomplexobj(a)
    a = a.astype(np.complex128 if is_complex else np.float64)
    if a.ndim == 0 and is_complex:
        z = complex(a)
        return (f'<div class="tv-scalar"{html_attr("data-value", repr(z))}>{html_text(complex_text(z))}</div>'
                f'<div class="tv-polar">{html_text(polar_text(z))}{SEP}re {html_text(f"{z.real:.6g}")}'
                f'{SEP}im {html_text(f"{z.imag:.6g}")}</div>')
    if a.ndim == 0:
        return f'<div class="tv-scalar"{html_attr("data-value", repr(float(a)))}>{html_text(f"{float(a):.6g}")}</div>'
    grid = a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1, a.shape[-1])
    rows, cols = min(grid.shape[0], MAX_CELLS[0]), min(grid.shape[1], MAX_CELLS[1])
    shown = grid[:rows, :cols]
    colours = (_phase_colours if is_complex else _colours)(shown, grid)
    body = []
    for i in range(rows):
        cells = []
        for j in range(cols):
            x = shown[i, j]
            index = f"[{j}]" if a.ndim == 1 else f"[{i},{j}]"
            cls = ' class="tv-nan"' if np.isnan(x) else ' class="tv-inf"' if np.isinf(x) else ""
            text = f"{complex_text(x)} ({polar_text(x)})" if is_complex else f"{x:.6g}"
            cells.append(f'<td{cls} style="background:{colours[i][j]}"{html_attr("title", f"{index} = {text}")}></td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = ""
    if grid.shape != shown.shape or a.ndim > 2:
        note = (f'<div class="tv-note">showing {rows}\u00d7{cols} of {html_text(a.shape)}'
                f'{" (leading axes flattened)" if a.ndim > 2 else ""}</div>')
    scale = np.abs(grid[np.isfinite(grid)]).max(initial=0.0)
    keys = ('NaN <span class="tv-key tv-nan"></span> Inf <span class="tv-key tv-inf"></span>')
    if is_complex:
        legend = (f'<div class="tv-scale">hue: phase \u2212180\u00b0 <span class="tv-key tv-hue">'
                  f'</span> 180\u00b0 (red 0\u00b0); strength: |z| 0 \u2026 {scale:.3g}; {keys}</div>')
    else:
        legend = (f'<div class="tv-scale"><span class="tv-neg">\u2212{scale:.3g}</span> 0 '
                  f'<span class="tv-pos">+{scale:.3g}</span>; {keys}</div>')
    return f'<table class="tv-heat">{"".join(body)}</table>{note}{legend}'


def _phase_colours(shown: np.ndarray, grid: np.ndarray) -> list[list[str]]:
    """Domain colouring: the hue is the phase (red at 0, yellow at 60°, cyan at ±180°), the
    saturation |z| over the largest finite magnitude (white at 0)."""
    finite = np.isfinite(grid)
    scale = np.abs(grid[finite]).max(initial=0.0) or 1.0
    out = []
    for row in shown.tolist():
        line = []
        for z in row:
            if z != z:                                  # a NaN part
                line.append(NAN)
            elif not np.isfinite(z):
                line.append(POS_INF)
            else:
                hue = np.angle(z) / (2 * np.pi) % 1.0
                r, g, b = colorsys.hsv_to_rgb(hue, min(abs(z) / scale, 1.0), 1.0)
                line.append(f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}")
        out.append(line)
    return out


def _colours(shown: np.ndarray, grid: np.ndarray) -> list[list[str]]:
    """Hex colours, computed for the whole block at once."""
    finite = np.isfinite(grid)
    scale = np.abs(grid[finite]).max(initial=0.0) or 1.0
    t = np.clip(np.nan_to_num(shown / scale, nan=0.0, posinf=0.0, neginf=0.0), -1, 1)
    white = np.array([255.0, 255.0, 255.0])
    red, blue = np.array([220.0, 38.0, 38.0]), np.array([37.0, 99.0, 235.0])
    rgb = np.where(t[..., None] >= 0, white + (red - white) * t[..., None], white + (blue - white) * -t[..., None])
    rgb = np.rint(rgb).astype(int)
    out = [[f"#{r:02x}{g:02x}{b:02x}" for r, g, b in row] for row in rgb.tolist()]
    for i, j in zip(*np.nonzero(np.isnan(shown))):
        out[i][j] = NAN
    for i, j in zip(*np.nonzero(np.isinf(shown))):
        out[i][j] = POS_INF if shown[i, j] > 0 else NEG_INF
    return out
