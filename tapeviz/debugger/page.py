"""The debugger without a kernel: a static snapshot for saved and untrusted notebooks, and
interactive pages that embed a whole session.

A *session* is every state the view can show, precomputed: the step part (``frames``: its
scope too) and the graph pane's DOT of every step at both granularities, the outline's tree (read
only: stepping by call and breakpoints need a kernel), and for every variable its selection
part, its inspector cards and its closure-versus-lifted panel; the listing and the residuals
table are drawn whole, once. The view (``static/debugger.js``) reads them through a ``Session``
model that answers the same messages the kernel answers, so the page steps, selects and compares
like the live widget. The page embeds the session as gzip in base64 (HTML and DOT repeat a lot:
about a tenth of the JSON), which the browser unpacks with ``DecompressionStream``. Its size grows
with the tape: ``max_bytes`` bounds the session's JSON, with a message that says what to do, and
a page above ``WARN_BYTES`` is written with a warning.

The notebook renderer (``tapeviz.commands.notebooks``) runs notebooks with ``EMBED_ENV`` set: each
debugger then adds its session to its mime bundle (``SESSION_MIME``), and the rendered page
draws it with ``mount_html`` and ``assets``.
"""
from __future__ import annotations

import base64
import gzip
import json
import re
import warnings
from pathlib import Path

from ..escaping import html_text
from .frames import checks_part, outline_part, sel_part, step_part
from .graph_pane import legend
from .inspector import inspector_html
from .listing import Listing, phase_html
from .markup import static
from .residuals import residuals_html

EMBED_ENV = "TAPEVIZ_EMBED_SESSIONS"
SESSION_MIME = "application/vnd.tapeviz.session+json"
MAX_BYTES = 50_000_000          # of session JSON, before compression
WARN_BYTES = 5_000_000
SNAPSHOT_ROWS = 12
OFFLINE = "checks need a running kernel: this page shows the ones run before it was written"
STEPPING_OFFLINE = ("stepping by call, breakpoints and run-to need a running kernel: this page "
                    "embeds the steps one by one")
NOTE = ("A static page: every step and selection is embedded, so the debugger works without a "
        "kernel; running the checks needs one.")
UNSAFE_IN_SCRIPT = re.compile(r"</script|<!--", re.IGNORECASE)


class SessionTooLarge(ValueError):
    """Embedding every state of a session would exceed the size limit."""


class _Budget:
    """Counts the characters a session embeds; stops as soon as the limit is passed or
    projected (a 10,000-equation tape is refused in a second, not after a minute)."""

    def __init__(self, limit: int, n_eqns: int):
        self.limit, self.n_eqns, self.used, self.base = limit, n_eqns, 0, 0

    def phase(self) -> None:
        """A new kind of part starts: projections count from here."""
        self.base = self.used

    def add(self, text: str) -> str:
        self.used += len(text)
        if self.used > self.limit:
            self.refuse(self.used)
        return text

    def project(self, done: int, total: int) -> None:
        expected = self.base + (self.used - self.base) / done * total
        if expected > self.limit * 1.25:
            self.refuse(int(expected))

    def refuse(self, size: int):
        raise SessionTooLarge(
            f"embedding this {self.n_eqns:,}-equation debugging session would take about "
            f"{size / 1e6:.3g} MB of states or more, over the limit of {self.limit / 1e6:.3g} MB (max_bytes): "
            "a static page embeds every step's graph and every variable's values. Debug a smaller "
            "tape (fewer loop steps, a smaller batch), or raise max_bytes.")


def session(dbg, max_bytes: int = MAX_BYTES) -> dict:
    """Every state of ``dbg``'s session, starting from the one it shows (see the module)."""
    m = dbg.model
    budget = _Budget(max_bytes, len(m.eqns))
    saved = m.granularity, m.index
    full = Listing(m, rows_each_side=len(m.rows))
    dots: dict[str, int] = {}
    texts: dict[str, int] = {}

    def intern(table: dict, text: str) -> int:
        if text not in table:
            table[text] = len(table)
            budget.add(text)
        return table[text]

    steps = {}
    total = sum(len(s) for s in m.steps.values())
    try:
        for g, step_list in m.steps.items():
            m.granularity = g
            steps[g] = []
            for i in range(len(step_list)):
                m.index = i
                part = step_part(m)
                part["dot"] = intern(dots, dbg.graph.dot())
                steps[g].append(part)
                budget.project(sum(len(s) for s in steps.values()), total)
    finally:
        m.granularity, m.index = saved
    budget.phase()
    variables = {}
    for k, name in enumerate(m.var_attrs):
        variables[name] = {"sel": sel_part(m, name),
                           "inspector": intern(texts, inspector_html(m, full.var, name)),
                           "closure": intern(texts, dbg.closure_panel(name))}
        budget.project(k + 1, len(m.var_attrs))
    return {"start": {"granularity": m.granularity, "index": m.index, "selected": m.selected,
                      "closure": dbg.closure_shown},
            "frame": {"eqns": len(m.eqns), "pane": {"k": dbg.graph.k}, "mode": m.mode, "breakpoints": [],
                      "offline": STEPPING_OFFLINE},
            "outline": outline_part(m),
            "steps": steps, "dots": list(dots), "vars": variables, "html": list(texts),
            "listing": budget.add(full.render()),
            "residuals": budget.add(residuals_html(m, full, rows_each_side=len(m.residual_table()))),
            "legend": legend(m.mode), "checks": {**checks_part(m, dbg._checks.get("current")), "offline": OFFLINE},
            "note": NOTE}


def pack(data: dict) -> str:
    """A session as a page embeds it: JSON, gzip (reproducible: no timestamp), base64."""
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw, mtime=0)).decode("ascii")


def unpack(packed: str) -> dict:
    return json.loads(gzip.decompress(base64.b64decode(packed)))


def session_or_reason(dbg) -> dict:
    """For a mime bundle: ``{"packed": session}``, or ``{"error": why}`` when it is too large."""
    try:
        return {"packed": pack(session(dbg))}
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


def write_page(dbg, path, *, title: str | None = None, max_bytes: int = MAX_BYTES) -> Path:
    """Write a self-contained page of ``dbg``'s session to ``path`` (it loads nothing)."""
    title = title or f"tape debugger: {getattr(dbg.f, '__name__', 'program')}"
    text = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html_text(title)}</title>'
            '<meta name="viewport" content="width=device-width,initial-scale=1"></head><body>'
            f'<h1 style="font:600 18px sans-serif">{html_text(title)}</h1>'
            f'{mount_html(pack(session(dbg, max_bytes)))}{assets()}</body></html>\n')
    if len(text) > WARN_BYTES:
        warnings.warn(f"{path}: the page is {len(text) / 1e6:.1f} MB (every step and variable of a "
                      f"{len(dbg.model.eqns):,}-equation tape); it may load slowly", stacklevel=3)
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
