"""The debugger without a kernel: a static snapshot for saved and untrusted notebooks, and
interactive pages that embed a whole session.

A *session* is what the view needs to show any step and any selection, each thing once: the
tape (``frames.tape_part``: every equation's operands, results, row, phase and scope; and the
step table, ``frames.steps_part``: each step's place, phase line and scope), the listing and the
residuals table drawn whole, the outline's tree, what ``run_to_nonfinite`` and
``run_to_failure`` look for (``frames.navigation_part``), the breakpoints set when it was
written, what the graph pane's drawings are made of (``graph_pane.pane_data``: each node's
label and tooltip, its cluster; interned in ``dots``; and the calls view's tables,
``embedded_calls``), and per variable its value card
and its closure-versus-lifted panel (``vars``; their markup interned in ``html``). The view
(``static/debugger.js``) reads them through a ``Session`` model that answers the messages the
kernel answers, deriving what the kernel would send (the step's part, the selection's partners,
the inspector's pair of cards, the pane's Graphviz source for the cursor's neighbourhood or
the program's calls, laid out by the vendored Graphviz, where a step by call, a run-to or a continue goes), so the page
steps (by call too, to breakpoints), selects and compares like the live widget.

So a session grows with the tape, not with steps x graph: about 2.5 kB of JSON per equation
without the value cards, and a card per variable (1 to 3 kB for a few numbers, about 50 kB for a
full 24x32 heatmap). The 40-step RNN (771 equations) packs into 0.5 MB (a page of 1.4 MB with
Graphviz), a 10,000-equation loop into 2.1 MB (a page of 3 MB, drawn in about 1.3 s). The page
embeds the session as gzip in base64 (a tenth to a fifteenth of the JSON), which the browser
unpacks with ``DecompressionStream``. ``max_bytes`` (``MAX_BYTES``, 50 MB) bounds the session's
JSON: a loop of small arrays fits about 15,000 equations with its value cards and 20,000
without; a program of arrays larger than the heatmap, about 1,000 variables with their cards.
Past it a session is refused (``SessionTooLarge``), naming ``values=False``, which leaves the
value cards out (the inspector then shows each variable's shape, kind and producer); a page
above ``WARN_BYTES`` is written with a warning that offers the same.

The notebook renderer (``tapeviz.commands.notebooks``) runs notebooks with ``EMBED_ENV`` set: each
debugger then adds its session to its mime bundle (``SESSION_MIME``; without the value cards
when they would pass the limit), and the rendered page draws it with ``mount_html`` and
``assets``.
"""
from __future__ import annotations

import base64
import gzip
import html
import json
import re
import warnings
from pathlib import Path

from ..escaping import html_text
from .calls_pane import calls_data
from .diff_pane import page_part
from .frames import checks_part, navigation_part, outline_part, steps_part, tape_part
from .graph_pane import legend, pane_data
from .inspector import heatmap_html, inspector_html, stats_html
from .listing import Listing, phase_html
from .markup import static
from .residuals import residuals_html

EMBED_ENV = "TAPEVIZ_EMBED_SESSIONS"
SESSION_MIME = "application/vnd.tapeviz.session+json"
VERSION = 2
MAX_BYTES = 50_000_000          # of session JSON, before compression
LEAST_PER_EQUATION = 1_500      # bytes of JSON an equation takes at least (2.4 to 2.8 kB measured)
WARN_BYTES = 5_000_000          # of a page
SNAPSHOT_ROWS = 12
OFFLINE = "checks need a running kernel: this page shows the ones run before it was written"
NOTE = ("A static page: the tape is embedded and your browser draws each step, so the debugger works "
        "without a kernel; running the checks needs one.")
NO_VALUES = " Its value cards were left out (values=False): the inspector shows shapes and kinds."
VALUES_LEFT_OUT = '<div class="tv-note tv-no-values">values left out of this page (values=False)</div>'
UNSAFE_IN_SCRIPT = re.compile(r"</script|<!--", re.IGNORECASE)
CARD, EMPTY_CARD = '<div class="tv-card"', '<div class="tv-card tv-card-empty">'
_ROLE = re.compile(r'<div class="tv-card" data-role="([^"]*)"')
_PARTNER = re.compile(r' data-partner="([^"]*)"')
_SHARED = re.compile(r'(<pre>.*?</pre>|<table class="tv-table"><thead>.*?</thead><tbody>)', re.S)


class SessionTooLarge(ValueError):
    """Embedding a session would exceed the size limit (``max_bytes``); ``without_values``: the
    value cards were part of it (``values=False`` may make it fit)."""

    def __init__(self, message: str, without_values: bool = False):
        super().__init__(message)
        self.without_values = without_values


class _Budget:
    """Counts the JSON a session embeds; stops as soon as the limit is passed or projected (a
    tape too large is refused in seconds, not after a minute of value cards)."""

    def __init__(self, limit: int, n_eqns: int, values: bool):
        self.limit, self.n_eqns, self.values = limit, n_eqns, values
        self.used = self.base = self.cards = 0

    def phase(self) -> None:
        """A new kind of part starts: projections count from here."""
        self.base = self.used

    def add(self, size: int, card: bool = False) -> None:
        self.used += size
        self.cards += size if card else 0
        if self.used > self.limit:
            self.refuse(self.used)

    def project(self, done: int, total: int) -> None:
        expected = self.base + (self.used - self.base) / done * total
        if expected > self.limit * 1.25:
            self.refuse(int(expected))

    def refuse(self, size: int):
        what = (f"the value cards take {self.cards / 1e6:.3g} MB of it: leave them out with values=False "
                "(dbg.to_html(path, values=False)), debug a smaller tape (fewer loop steps, a smaller batch), "
                "or raise max_bytes" if self.values and self.cards else
                "a static page embeds the tape (its listing, graph and steps) and each rule's closure-versus-lifted "
                "panel, too much even with values=False (no value cards): debug a smaller tape (fewer loop steps), "
                "or raise max_bytes")
        raise SessionTooLarge(
            f"embedding this {self.n_eqns:,}-equation debugging session would take about {size / 1e6:.3g} MB "
            f"of JSON or more, over the limit of {self.limit / 1e6:.3g} MB (max_bytes): {what}.",
            without_values=bool(self.values and self.cards))


class _Interned(dict):
    """Strings numbered in the order they come: ``self(text)`` is text's number."""

    def __call__(self, text: str) -> int:
        k = self.get(text)
        if k is None:
            k = self[text] = len(self)
        return k


def _json_size(data) -> int:
    return len(json.dumps(data, separators=(",", ":")))


def session(dbg, max_bytes: int | None = None, values: bool = True) -> dict:
    """What a page of ``dbg``'s session embeds, starting from the state it shows (see the
    module); ``values=False`` leaves the value cards out. ``SessionTooLarge`` past ``max_bytes``
    (default ``MAX_BYTES``) of JSON."""
    m = dbg.model
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    budget = _Budget(max_bytes, len(m.eqns), values)
    if LEAST_PER_EQUATION * len(m.eqns) > max_bytes:            # a tape far too large: refused at once
        budget.refuse(LEAST_PER_EQUATION * len(m.eqns))
    full = Listing(m, rows_each_side=len(m.rows))
    dots, texts = _Interned(), _Interned()
    tape = tape_part(m)
    paths = [()]
    for parent, name in tape["scopes"][1:]:
        paths.append(paths[parent] + (name,))
    data = {"version": VERSION,
            "start": {"granularity": m.granularity, "index": m.index, "selected": m.selected,
                      "closure": dbg.closure_shown, "view": dbg.graph_view},
            "frame": {"eqns": len(m.eqns), "pane": {"k": dbg.graph.k}, "mode": m.mode, "values": values,
                      "breakpoints": [t if isinstance(t, str) else list(t) for t in m.breakpoints]},
            "outline": outline_part(m), "steps": steps_part(m), "tape": tape, "navigation": navigation_part(m),
            "graph": pane_data(m, dbg.graph.k, dots, {p: k for k, p in enumerate(paths)}),
            "calls": embedded_calls(m, tape),
            "listing": full.render(),
            "residuals": residuals_html(m, full, rows_each_side=len(m.residual_table())),
            "legend": legend(m.mode), "checks": {**checks_part(m, dbg._checks.get("current")), "offline": OFFLINE},
            "note": NOTE + ("" if values else NO_VALUES)}
    data["diff"] = page_part(dbg)            # the diff pane's, when one is shown (diff_pane)
    budget.add(_json_size(data) + _json_size(list(dots)))
    budget.phase()
    variables = {name: _cards(m, full.var, name, values, texts, budget) for name in _counted(m.var_attrs, budget)}
    _check_partners(variables, texts)
    budget.phase()
    for name in _counted(m.var_attrs, budget):
        variables[name]["closure"] = _segments(dbg.closure_panel(name), name, texts, budget)
    data.update(vars=variables, html=list(texts), dots=list(dots))
    budget.used = _json_size(data)
    if budget.used > max_bytes:
        budget.refuse(budget.used)
    return data


def embedded_calls(m, tape: dict) -> dict:
    """The calls view's tables (``calls_tables.calls_data``) as a page embeds them: without what
    the view makes from the tape it has (``tape_part``, whose scopes are numbered the same way):
    the equations' scopes and phases, and the edges (``callEdges`` in ``static/debugger.js``)."""
    data = calls_data(m)
    assert data["eqScope"] == tape["scope"] and data["eqPhase"] == tape["phase"], "scopes numbered alike"
    scopes = {k: v for k, v in data["scopes"].items() if k != "edges"}
    groups = {k: v for k, v in data["groups"].items() if k != "edges"}
    return {**{k: v for k, v in data.items() if k not in ("eqScope", "eqPhase")}, "scopes": scopes, "groups": groups}


def _counted(names, budget: _Budget):
    """The names, the budget projecting its total after each."""
    for k, name in enumerate(names, 1):
        yield name
        budget.project(k, len(names))


def _cards(m, var_html, name: str, values: bool, texts: _Interned, budget: _Budget) -> dict:
    """A variable's value card, once: its entry is the inspector's pair (``inspector_html``) up to
    the end of the variable's own card (role "value"); the partner's card is the partner's own
    entry with its role put in (the view does it: ``Session.inspector``), or the empty card."""
    pair = inspector_html(m, var_html, name)
    first = pair.index(CARD)
    second = pair.find(CARD, first + 1)
    if second < 0:
        second = pair.index(EMPTY_CARD, first + 1)
    own, other = pair[first:second], pair[second:-len("</div>")]
    if not values:
        own = _without_values(own, m.values.get(name))
    entry = pair[:first] + own
    budget.add(len(entry) * 11 // 10, card=True)
    out = {"inspector": texts(entry)}
    if other.startswith(EMPTY_CARD):
        out["empty"] = texts(other)
    else:
        partner = html.unescape(_PARTNER.search(pair[:first]).group(1))
        out.update(partner=partner, role=html.unescape(_ROLE.match(other).group(1)),
                   card=other if values else _without_values(other, m.values.get(partner)))
    return out


def _without_values(card: str, value) -> str:
    """A card with its statistics and heatmap left out (a note says so)."""
    tail = stats_html(value) + heatmap_html(value) + "</div>"
    return card[:-len(tail)] + VALUES_LEFT_OUT + "</div>" if card.endswith(tail) else card


def role_card(card: str, role: str) -> str:
    """A variable's own card (role "value") as its partner's inspector shows it: with ``role``
    (what ``Session.inspector`` does in the browser)."""
    return (card.replace(' data-role="value"', f' data-role="{html_text(role)}"', 1)
            .replace('<div class="tv-card-h">value ', f'<div class="tv-card-h">{html_text(role)} ', 1))


def _check_partners(variables: dict, texts: _Interned) -> None:
    """Each partner's card is the partner's own with its role, kept only where it is not (then
    embedded as it is: ``card``)."""
    entries = list(texts)
    for v in variables.values():
        card = v.pop("card", None)
        if card is None:
            continue
        own = entries[variables[v["partner"]]["inspector"]]
        if role_card(own[own.index(CARD):], v["role"]) != card:
            v["card"] = texts(card)


def _segments(panel: str, name: str, texts: _Interned, budget: _Budget) -> list:
    """A closure-versus-lifted panel as pieces: numbers of interned markup (the rules' sources
    and the table's headings recur across instances), and the variable's escaped name where a
    panel names it."""
    if 'data-instance=""' in panel and html_text(name) in panel:
        before, after = panel.split(html_text(name), 1)
        pieces = [texts(before), html_text(name), texts(after)]
    else:
        pieces = [texts(p) for p in _SHARED.split(panel) if p]
    budget.add(len(panel) // 20 + 8)            # most of it is shared: a rough share
    return pieces


def pack(data: dict) -> str:
    """A session as a page embeds it: JSON, gzip (reproducible: no timestamp), base64."""
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw, mtime=0)).decode("ascii")


def unpack(packed: str) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def session_or_reason(dbg) -> dict:
    """For a mime bundle: ``{"packed": session}`` (without the value cards when they would pass
    the limit), or ``{"error": why}`` when it is too large even so."""
    try:
        return {"packed": pack(session(dbg))}
    except SessionTooLarge as exc:
        if not exc.without_values:
            return {"error": str(exc)}
    try:
        return {"packed": pack(session(dbg, values=False))}
    except SessionTooLarge as exc:
        return {"error": str(exc)}


def script_text(text: str) -> str:
    """Text for the inside of a ``<script>`` element; code that would end the element early is
    refused (the vendored files are checked by a test)."""
    if UNSAFE_IN_SCRIPT.search(text):
        raise ValueError("this text cannot be embedded in a <script> element (it contains </script or <!--)")
    return text


def mount_html(packed: str) -> str:
    """One debugger of a static page, from its packed session (``assets()`` must be on the page
    once)."""
    return (f'<div class="tv-static"><script type="application/gzip" class="tv-session">{packed}</script>'
            '<p>The tape debugger draws itself here with JavaScript.</p></div>')


def too_large_html(reason: str, snapshot: str) -> str:
    return f'<div class="tv-static-too-large"><p>{html_text(reason)}</p>{snapshot}</div>'


def assets() -> str:
    """The stylesheet and scripts a page needs once, whatever number of debuggers it shows."""
    return (f'<style>{static("debugger.css")}</style>'
            f'<script type="text/plain" id="tv-esm">{script_text(static("debugger.js"))}</script>'
            f'<script type="text/plain" id="tv-graphviz">{script_text(static("graphviz/graphviz.js"))}</script>'
            f'<script type="module">{script_text(static("page.js"))}</script>')


def write_page(dbg, path, *, title: str | None = None, max_bytes: int | None = None, values: bool = True) -> Path:
    """Write a self-contained page of ``dbg``'s session to ``path`` (it loads nothing);
    ``values=False`` leaves the value cards out (a smaller page)."""
    title = title or f"tape debugger: {getattr(dbg.f, '__name__', 'program')}"
    data = session(dbg, max_bytes, values)
    text = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html_text(title)}</title>'
            '<meta name="viewport" content="width=device-width,initial-scale=1"></head><body>'
            f'<h1 style="font:600 18px sans-serif">{html_text(title)}</h1>'
            f'{mount_html(pack(data))}{assets()}</body></html>\n')
    if len(text) > WARN_BYTES:
        cards = ""
        if values:
            share = sum(len(data["html"][v["inspector"]]) for v in data["vars"].values()) / _json_size(data)
            cards = (f"; the value cards are about {share:.0%} of what it embeds: to_html(path, values=False) "
                     "leaves them out")
        warnings.warn(f"{path}: the page is {len(text) / 1e6:.1f} MB (a {len(dbg.model.eqns):,}-equation tape"
                      f"{cards}); it may load slowly", stacklevel=3)
    path = Path(path)
    path.write_text(text, encoding="utf-8")
    return path


def snapshot_html(dbg) -> str:
    """What a notebook shows where the widget cannot run (untrusted, reopened, no widget
    manager): the phase line and the listing around the cursor, styled, with no script."""
    m = dbg.model
    return (f'<div class="tv-root tv-snapshot"><style>{static("debugger.css")}</style>{phase_html(m)}'
            f'<div class="tv-caption">{html_text(repr(dbg))}: a snapshot; run the cell with a kernel '
            f'to step through the tape</div><div class="tv-listing-w">{Listing(m, SNAPSHOT_ROWS).render()}'
            '</div></div>')
