"""What a drawn node says and how it looks: colours with a meaning, label rows, the legend.

A node's label is a list of ``Row``s, formatted either as an HTML-like table (the default: a
coloured header cell per primitive) or as plain text (for Graphviz builds without HTML-like
labels, such as the WebAssembly one). Every string from the user is escaped for the format it
lands in (``escaping``): HTML entities in tables (``dot_html_text``, shortened first by
``cell_text``), backslashes in plain DOT strings (``dot_text``).
"""
from __future__ import annotations

import colorsys
import functools
import re
import zlib
from typing import NamedTuple

import graphviz

from .escaping import dot_html_text, dot_text
from .graph import BACKWARD_BLOCK

LABELS = ("html", "text")


class Look(NamedTuple):
    frame: str            # frame colour
    background: str
    width: int            # frame width
    text: str             # what the legend says
    word: str             # the frame colour in words, for plain-text legends


KINDS = {
    "input": Look("#6b7280", "#f3f4f6", 1, "input", "grey"),
    "parameter": Look("#2563eb", "#dbeafe", 2, "parameter (differentiated input)", "blue"),
    "intermediate": Look("#9ca3af", "#ffffff", 1, "forward value", "light grey"),
    "residual": Look("#d97706", "#fffbeb", 2, "residual (read by the backward or tangent pass)", "orange"),
    "output": Look("#15803d", "#ecfdf5", 2, "output (value, gradient or tangent)", "green"),
    "cotangent": Look("#7c3aed", "#faf5ff", 1, "backward value (cotangent)", "purple"),
    "tangent": Look("#0891b2", "#ecfeff", 1, "tangent value (forward mode)", "teal"),
    "guard": Look("#a16207", "#fef9c3", 2, "guard (a branch the trace took)", "amber"),
}
FAILED = Look("#dc2626", "#fee2e2", 3, "failed check", "red")
CURRENT = Look("#0369a1", "#ffffff", 4, "current step", "thick dark blue")
TINT = "#fef3c7"
EDGES = {   # kind -> (DOT attributes, what the legend says)
    "data": ({}, "data flow"),
    "residual": ({"style": "dashed", "color": "#d97706", "constraint": "false"}, "residual use (dashed)"),
    "accumulate": ({"style": "bold", "color": "#7c3aed"}, "fan-in accumulation (bold)"),
    "backward": ({"color": "#7c3aed"}, "backward data flow"),
    "tangent": ({"color": "#0891b2"}, "tangent data flow"),
}
MAX_TEXT = 48
ROW_COLOURS = {"note": "#374151", "ct": "#6d28d9", "tan": "#0e7490", "prov": "#6d28d9", "out": "#15803d",
               "fail": "#b91c1c"}
_PHASE_STYLES = {"backward": "cotangent", "tangent": "tangent"}    # a value's style by its phase


@functools.lru_cache(maxsize=1024)
def primitive_colour(name: str) -> str:
    """A pastel colour per primitive: hue and saturation come from a hash of the name (crc32,
    not Python's salted ``hash``), so it is the same in every picture and every run."""
    h = zlib.crc32(name.encode())
    r, g, b = colorsys.hsv_to_rgb(h % 360 / 360, (0.2, 0.32, 0.44)[h // 360 % 3], 0.98)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


_PLAIN = re.compile(r'(?:[^&<>"\'\\\s]+(?: [^&<>"\'\\\s]+)*)?')   # nothing to escape or collapse


def shorten(text, limit: int | None = MAX_TEXT) -> str:
    text = " ".join(str(text).split())
    return text if limit is None or len(text) <= limit else text[:limit - 1] + "\u2026"


def cell_text(text, limit: int | None = MAX_TEXT) -> str:
    """Text for an HTML-like label: shortened (``shorten``), then escaped (``dot_html_text``);
    text with nothing to escape or collapse, and short enough, is returned as it is."""
    if type(text) is str and (limit is None or len(text) <= limit) and _PLAIN.fullmatch(text):
        return text
    return dot_html_text(shorten(text, limit))


class Row(NamedTuple):
    role: str             # head (a primitive), scope (a call's name), name, note, ct (cotangent),
                          # tan (tangent), prov (provenance), out, fail
    text: str
    extra: str = ""       # head: the params, in small type
    colour: str = ""      # head: the primitive's colour


# -- rows ------------------------------------------------------------------------------------

def _facts(d: dict, provenance: str = "") -> list[Row]:
    rows = []
    if d.get("value") is not None:
        rows.append(Row("note", d["value"]))
    if d.get("cotangent_of") and "cotangent of" not in provenance:
        rows.append(Row("ct", f"cotangent of {d['cotangent_of']}"))
    if d.get("tangent_of"):
        rows.append(Row("tan", f"tangent of {d['tangent_of']}"))
    outs = d.get("output")
    if outs:
        rows.append(Row("out", "\u2192 " + (outs if isinstance(outs, str) else ", ".join(outs))))
    return rows


def _failures(*nodes) -> list[Row]:
    return [Row("fail", f"\u2717 {shorten(name, 24)}: {message}")
            for d in nodes if d for name, message in d.get("failures", ())]


def _head(prim: str, params: str = "") -> Row:
    return Row("head", prim, params, primitive_colour(prim))


def style_of(d: dict) -> str:
    kind = d["kind"]
    if kind in KINDS:
        return kind
    return _PHASE_STYLES.get(d["phase"], "intermediate")


def variable_rows(d: dict, producer: dict | None = None) -> list[Row]:
    """An input, or a result drawn apart from its equation (several results, or a window)."""
    head = (_head(producer["primitive"], producer["params"]) if producer is not None
            else Row("head", d.get("label") or d["name"]))
    return [head, Row("name", f"{d['name']} : {d['aval']}")] + _facts(d) + _failures(d)


def equation_rows(e: dict, out: dict | None) -> list[Row]:
    """An equation, drawn with its only result ``out`` when it has one."""
    rows = [_head(e["primitive"], e["params"]),
            Row("name", f"{out['name']} : {out['aval']}" if out else "\u2192 " + ", ".join(e["outputs"]))]
    if e["kind"] == "guard":       # operand 1 is the value the trace assumed
        rows.append(Row("note", "assumes == " + ", ".join(text for _, text in e["literals"])))
    elif e["literals"]:
        rows.append(Row("note", "with " + ", ".join(text for _, text in e["literals"])))
    provenance = ""
    if e["phase"] == "backward" and e["origin"] not in BACKWARD_BLOCK:
        provenance = e["provenance"]
        rows.append(Row("prov", provenance))
    return rows + (_facts(out, provenance) if out else []) + _failures(e, out)


def _scope_head(name: str, rule: str) -> Row:
    """The header of a call of the user's (``cell#3``): coloured by the function (``cell``), as
    a primitive is, so every call of one function has one colour; a scope's own lines, with
    no call of their own, are uncoloured."""
    return Row("scope", name, "", primitive_colour(rule) if rule else "")


def group_rows(d: dict) -> list[Row]:
    """A node of the collapsed view: a rule instance, a pullback block, a source or scope node or
    a fold."""
    kind = d["kind"]
    if kind in KINDS:
        return variable_rows(d)
    if kind == "fold":
        rule = d["rule"]
        if d.get("head"):          # a fold of calls: named by the function, "pullback: " in the backward pass
            head = _scope_head(d["head"], d["head"])
            rule = {"backward": "pullback: ", "tangent": "pushforward: "}.get(d["phase"], "") + rule
        else:
            head = _head(d["motif"][0])
        rows = [head, Row("name", f"\u00d7{d['count']} {rule}"),
                Row("note", f"{d['of'] or ''} \u2026 {d['last'] or ''}, {d['n_eqns']} equations")]
    elif kind == "scope":
        rows = ([_scope_head(d["name"], d["rule"])] if d["of"] is not None
                else [_scope_head(d["name"] or "top level", "")])
        rows.append(Row("name", d["provenance"]))
    elif kind in ("pullback", "pushforward"):
        rows = [_head(d["rule"]), Row("name", f"{kind} of {d['of']}")]
    elif kind == "rule" and d["of"]:
        rows = [_head(d["rule"]), Row("name", f"{d['of']} : {d['aval']}")]
    else:
        rows = [_head(d["rule"]), Row("name", d["provenance"])]
    if kind != "fold" and d["n_eqns"] > 1:
        rows.append(Row("note", f"{d['n_eqns']} equations"))
    return rows + _facts({"value": d.get("value"), "output": d.get("output")}) + _failures(d)


def group_style(d: dict) -> str:
    if d["kind"] in KINDS:
        return d["kind"]
    if d.get("output"):
        return "output"
    return _PHASE_STYLES.get(d["phase"]) or ("residual" if d.get("residual") else "intermediate")


# -- formatting ------------------------------------------------------------------------------

def node_attrs(rows: list[Row], style: str, *, failed: bool, current: bool, tint: str | None,
               labels: str) -> dict:
    """DOT attributes of a node: its label and the frame and fill its kind and marks give it."""
    frame, background, width = (FAILED if failed else KINDS[style])[:3]
    if current:
        frame, width = CURRENT[0], CURRENT[2]
    background = tint or background
    rounded = style in ("input", "parameter")
    if labels == "html":
        cells = "".join(f"<TR>{html_row(r)}</TR>" for r in rows)
        return {"label": (f'<<TABLE BORDER="{width}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" '
                          f'COLOR="{dot_html_text(frame)}" BGCOLOR="{dot_html_text(background)}"'
                          f'{" STYLE=%srounded%s" % (chr(34), chr(34)) if rounded else ""}>{cells}</TABLE>>')}
    fill = tint or (FAILED[1] if failed else rows[0].colour or background)
    return {"label": text_label(rows), "shape": "box", "style": "filled,rounded" if rounded else "filled",
            "fillcolor": fill, "color": frame, "penwidth": str(width)}


def html_row(r: Row) -> str:
    """A label row as an HTML-like table row's cell (its text escaped)."""
    if r.role in ("head", "scope"):
        return _html_head(r.text, r.extra, r.colour)
    if r.role == "name":
        return f'<TD ALIGN="LEFT">{cell_text(r.text)}</TD>'
    text = f"<B>{cell_text(r.text)}</B>" if r.role == "out" else cell_text(r.text)
    return f'<TD ALIGN="LEFT"><FONT POINT-SIZE="9" COLOR="{ROW_COLOURS[r.role]}">{text}</FONT></TD>'


@functools.lru_cache(maxsize=4096)
def _html_head(text: str, extra: str, colour: str) -> str:
    """A header cell; the same few primitives and params recur all over a tape."""
    small = f' <FONT POINT-SIZE="8">{cell_text(extra)}</FONT>' if extra else ""
    colour = f' BGCOLOR="{dot_html_text(colour)}"' if colour else ""
    return f'<TD ALIGN="LEFT"{colour}><B>{cell_text(text)}</B>{small}</TD>'


def text_label(rows: list[Row]) -> str:
    """Plain DOT text, one left-aligned line per row, backslashes escaped."""
    lines = [shorten(f"{r.text}  {r.extra}" if r.extra else r.text) for r in rows]
    return graphviz.nohtml("".join(dot_text(line) + "\\l" for line in lines))


def plain(text: str, labels: str, *, bold: bool = False) -> str:
    """A cluster or graph title in either label format."""
    if labels == "html":
        return f"<<B>{cell_text(text, None)}</B>>" if bold else f"<{cell_text(text, None)}>"
    return dot_text(shorten(text, None))


def legend(title, kinds: set, edge_kinds: set, primitives: set, labels: str, *, per_row: int = 5) -> str:
    """The graph's label: the title and a legend of what is drawn, in rows of a few entries."""
    looks = [look for key, look in [*KINDS.items(), ("failed", FAILED), ("current", CURRENT)] if key in kinds]
    edges = [(key, text) for key, (_, text) in EDGES.items() if key in edge_kinds]
    if labels == "text":                 # a few entries a line: a label wider than the drawing is cut
        entries = [f"{look.word} frame: {look.text}" for look in looks] + [text for _, text in edges]
        lines = ([title] if title else []) + ["; ".join(entries[i:i + 3]) for i in range(0, len(entries), 3)]
        return graphviz.nohtml("".join(dot_text(line) + "\\l" for line in lines))
    cells = [_swatch(look.frame, look.background, look.width, look.text) for look in looks]
    for key, text in edges:
        arrow = "- - &#9654;" if key == "residual" else "&#8212;&#9654;"
        colour = EDGES[key][0].get("color", "#6b7280")
        cells.append(f'<TD><FONT COLOR="{colour}">{arrow}</FONT></TD><TD ALIGN="LEFT">{cell_text(text)}</TD>')
    cells += [_swatch("#9ca3af", primitive_colour(p), 1, p) for p in sorted(primitives)]
    rows = [f'<TR><TD COLSPAN="{2 * per_row}" ALIGN="LEFT"><B>{cell_text(title, None)}</B></TD></TR>'] if title else []
    rows += ["<TR>" + "".join(cells[i:i + per_row]) + "</TR>" for i in range(0, len(cells), per_row)]
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="2">' + "".join(rows) + "</TABLE>>"


def _swatch(frame: str, background: str, width: int, text: str) -> str:
    return (f'<TD BORDER="{width}" COLOR="{dot_html_text(frame)}" BGCOLOR="{dot_html_text(background)}" '
            f'WIDTH="16"> </TD><TD ALIGN="LEFT">{cell_text(text)}</TD>')
