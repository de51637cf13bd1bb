"""The Jupyter tape debugger's widget: ``TapeDebugger`` shows a function's gradient tape as
forward and backward listings side by side, steps through it pullback by pullback (or primitive
by primitive), draws the neighbourhood of the cursor, inspects values and cotangents, compares
closure and lifted pullbacks, and pins the checker's findings on the equations.

It is an anywidget: one ES module (``static/debugger.js``) is the view in every front end with a
widget manager and in marimo (``mo.ui.anywidget(dbg)``); the browser tests (tests/e2e) run it in
JupyterLab, Notebook 7, Voila and marimo. VS Code and Colab load anywidgets too, but neither can be
driven where the tests run, so nothing tests the debugger there. The state lives in a
``DebugModel`` (``model``); every action, from a cell (``dbg.next()``, ``dbg.select("%7")``,
``dbg.run_checks()``) or from the view (a message ``{"action": "next"}``), moves the model, and
``_refresh`` sends what the view shows as traits: the frame (``frames``) and HTML drawn by the
views (``listing``, ``inspector``, ``residuals``, ``closure``), the graph pane's DOT, which the
browser lays out (in a Web Worker), and the outline's scope tree (once, and again after checks).
The listing and the residuals are sent without what depends on
the cursor (the view sets those classes), and the listing's window of rows moves only when the
cursor nears its edges, so most steps send neither. The view asks for steps ahead of time (``{"action":
"ahead"}``, answered by ``_ahead`` with what they would send and where the moves by call go from
each, the cursor unmoved) and repaints a click on one of them at once; each action a view sends carries
its name and a number (``view``, ``seq``) that the frame echoes, so the kernel's answer confirms
(or corrects) what the view guessed. The only module of the package that imports ipywidgets
(through anywidget).
``JvpDebugger`` is the same widget for forward mode (``tapeviz.debug_jvp``): a linearization's
forward and tangent listings side by side, stepping through the pushforward blocks.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import NamedTuple

import anywidget
import numpy as np
import traitlets

import ad
from ad.tape import Var
from ad.transforms.gradients import primal_and_grad_tape

from . import page
from .closure import closure_html, compare, compare_tangents, instances, tangent_html
from .by_call import ByCallMode
from .calls_pane import CallsMode
from .diff_pane import NO_DIFF, DiffMode
from .frames import NO_CHECKS, checks_part, moves_part, outline_part, sel_part, step_part
from .graph_pane import GraphPane, legend
from .inspector import inspector_html
from .listing import Listing
from .markup import static
from .model import DebugModel, built_in_one_go, jvp_tape
from .residuals import residuals_html

STATIC = Path(__file__).with_name("static")
MIMES = {"svg": "image/svg+xml", "dot": "text/vnd.graphviz", "png": "image/png", "pdf": "application/pdf",
         "txt": "text/plain"}
PROGRESS_STEPS = 100          # at most this many progress updates reach the view while checks run
AHEAD_MAX = 32                # at most this many steps answered per request of the view


class Exported(NamedTuple):
    name: str
    mime: str
    data: bytes


class TapeDebugger(ByCallMode, CallsMode, DiffMode, anywidget.AnyWidget):
    """Forward and backward listings side by side, stepping, graph, values, checks (see module).

    Scripting (each call redraws the view, wherever it is shown):
    stepping ``next()``, ``prev()``, ``first()``, ``last()``, ``step_to(i)``, ``set_granularity(g)``
    and ``step``, ``n_steps``, ``current``, ``phase_line``, ``granularity``; by call (the user's
    scopes) ``step_into()``, ``step_over()``, ``step_out()``, ``run_to(target)``, ``breakpoints``
    and ``cont()``, ``run_to_nonfinite()``, ``run_to_failure()``, and ``scope``, ``outline()``,
    ``message``; the graph pane's ``graph_view`` ("around" the cursor, or the program's "calls":
    ``open_call(target)``, ``close_call(target)``, ``opened``; its DOT ``graph.dot()`` and
    ``calls.dot()``); selection
    ``select("%7")``, ``selected``, ``step_to_selection()``; ``show_closure(on)``,
    ``closure_shown`` and ``comparison(name)``; ``show_diff(other)`` (the tape diffed with ``other``,
    by default with ``ad.optimize`` of it), ``diff``, ``hide_diff()``; ``run_checks(**options)`` (the report),
    ``report``, ``alerts``, ``jump_to_alert(k)``; ``export(format)`` and ``last_export``;
    ``to_html(path)`` writes a page that steps (by call too, to breakpoints) and selects with no
    kernel. The state is ``model`` (a ``DebugModel``). Keys while the view has focus (others stay
    the notebook's): arrows prev / next, Home / End, ``i`` ``o`` ``u`` step into / over / out, ``c``
    continue (with Shift: backwards), ``b`` a breakpoint at the cursor, ``?`` the list ("keys").
    """

    _esm = STATIC / "debugger.js"
    _css = STATIC / "debugger.css"
    _frame = traitlets.Dict().tag(sync=True)
    _listing = traitlets.Unicode().tag(sync=True)
    _inspector = traitlets.Unicode().tag(sync=True)
    _residuals = traitlets.Unicode().tag(sync=True)
    _closure = traitlets.Unicode().tag(sync=True)
    _dot = traitlets.Unicode().tag(sync=True)
    _legend = traitlets.Unicode().tag(sync=True)
    _outline = traitlets.Dict().tag(sync=True)    # the scope tree; sent again when checks ran
    _diff = traitlets.Dict(NO_DIFF).tag(sync=True)    # the diff pane (diff_pane.view_part)

    @built_in_one_go          # no garbage collection while a big session is built
    def __init__(self, f, args, argnums=0, *, rows: int = 40, graph_k: int = 2):
        with np.errstate(all="ignore"):        # NaN and Inf are what one debugs: shown, not warned
            primal, gt = primal_and_grad_tape(f, *args, argnums=argnums)     # one trace for both
            self._start(f, args, argnums, primal, DebugModel(gt, args), rows, graph_k)

    def _start(self, f, args, argnums, primal, model: DebugModel, rows: int, graph_k: int) -> None:
        super().__init__()
        self.f, self.args, self.argnums = f, tuple(args), argnums
        self.primal = primal                   # the rule instances the closure panel compares
        self.model = model
        model.breakpoints.changed = lambda: setattr(self, "_frame", self._frame_now())
        self._legend = legend(model.mode)
        # the rules and the overloads of their pullbacks (ad.backpropagate) as they are now: one
        # swapped later must not change what is shown
        prims = dict.fromkeys(e.prim for e in self.primal.eqns)      # each once, in order
        self.rules = {p: p.rule for p in prims}
        self.overloads = {p: dict(p.overloads) for p in prims}
        self.listing_view = Listing(self.model, rows)
        self._window = None                    # the listing's rows [lo, hi) the view has
        self.graph = GraphPane(self.model, graph_k)
        self.last_export: Exported | None = None
        self._instances = None
        self._comparisons: dict = {}
        self._closure_on = False
        self._checks = dict(NO_CHECKS)
        self._message = ""
        self._seq, self._by = 0, ""            # the last action of a view and that view, echoed by the frame
        self._outline_of = None                # the checks_version the view's outline shows
        self._actions = {
            "hello": lambda _: self.send({"kind": "hello"}),
            "graphviz": lambda _: self.send({"kind": "graphviz", "source": static("graphviz/graphviz.js")}),
            "svg": lambda msg: self.send({"kind": "svg", "dot": msg.get("dot"), "svg": self._svg_of(msg.get("dot"))}),
            "first": lambda _: self.first(), "prev": lambda _: self.prev(),
            "next": lambda _: self.next(), "last": lambda _: self.last(),
            "step": lambda msg: self.step_to(int(msg["index"])),
            "granularity": lambda msg: self.set_granularity(msg["value"]),
            "select": lambda msg: self._pick(str(msg.get("name") or "")),
            "goto": lambda _: self.step_to_selection(),
            "closure": lambda msg: self.show_closure(bool(msg.get("on"))),
            "diff": lambda msg: self._diff_from_view(bool(msg.get("on"))),
            "diff_goto": lambda msg: self._go_to_diff_entry(int(msg["eqn"])),
            "checks": lambda _: self._checks_from_view(),
            "alert": lambda msg: self.jump_to_alert(int(msg["k"])),
            "export": lambda msg: self._offer(self.export(msg["format"])),
            "ahead": lambda msg: self._ahead(msg.get("indices") or ()),
            "step_into": lambda msg: self.step_into(bool(msg.get("reverse"))),
            "step_over": lambda msg: self.step_over(bool(msg.get("reverse"))),
            "step_out": lambda msg: self.step_out(bool(msg.get("reverse"))),
            "cont": lambda msg: self.cont(bool(msg.get("reverse"))),
            "nonfinite": lambda msg: self.run_to_nonfinite(bool(msg.get("from_cursor"))),
            "failure": lambda msg: self.run_to_failure(bool(msg.get("reverse"))),
            "run_to": lambda msg: self._from_view(self.run_to, msg.get("target")),
            "breakpoint": lambda msg: self._from_view(self._toggle, msg.get("target"), msg.get("on", True)),
            **self._start_calls(),
        }
        self.on_msg(self._on_message)
        self._refresh()

    def _on_message(self, _widget, content, _buffers) -> None:
        """An action from the view; unknown ones are ignored (a newer view, an older kernel)."""
        action = self._actions.get(content.get("action"))
        if action is None:
            return
        if "seq" not in content:
            action(content)
            return
        self._seq, self._by = int(content["seq"]), str(content.get("view", ""))
        try:
            action(content)
        finally:                               # confirmed even when the action failed
            if (self._frame.get("seq"), self._frame.get("by")) != (self._seq, self._by):
                self._frame = self._frame_now()

    # -- what a saved or untrusted notebook shows ------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        data, metadata = super()._repr_mimebundle_(**kwargs)
        data["text/html"] = page.snapshot_html(self)
        if os.environ.get(page.EMBED_ENV):
            data[page.SESSION_MIME] = page.session_or_reason(self)
        return data, metadata

    def __repr__(self) -> str:
        m = self.model
        return f"<TapeDebugger: {m.step.phase} step {m.index + 1} of {m.n_steps}, {len(m.eqns)} equations>"

    def to_html(self, path, **options) -> Path:
        """Write a page that shows this session with no kernel: every step at both granularities
        and every variable's values and closure-versus-lifted comparison are embedded (see
        ``tapeviz.debugger.page.write_page`` for ``max_bytes``). Returns the path."""
        return page.write_page(self, path, **options)

    # -- stepping --------------------------------------------------------------------------
    @property
    def step(self) -> int:
        """The current step's index (0-based; the phase line counts from 1)."""
        return self.model.index

    @property
    def n_steps(self) -> int:
        return self.model.n_steps

    @property
    def current(self) -> str:
        """The ``%n`` name of the current equation's first output."""
        return self.model.current

    @property
    def phase_line(self) -> str:
        return self.model.phase_line()

    def step_to(self, i: int) -> None:
        self.model.step_to(i)
        self._message = ""                     # a move supersedes what the last one said
        self._refresh()

    def next(self) -> None:
        self.step_to(min(self.step + 1, self.n_steps - 1))

    def prev(self) -> None:
        self.step_to(max(self.step - 1, 0))

    def first(self) -> None:
        self.step_to(0)

    def last(self) -> None:
        self.step_to(self.n_steps - 1)

    @property
    def granularity(self) -> str:
        return self.model.granularity

    def set_granularity(self, granularity: str) -> None:
        """"pullback" (a rule instance or pullback block per step) or "primitive" (an equation)."""
        self.model.set_granularity(granularity)
        self._refresh()

    # -- selection -------------------------------------------------------------------------
    @property
    def selected(self) -> str | None:
        return self.model.selected

    def select(self, name: str | None) -> None:
        """Select a variable ("%7"): the inspector shows it and its cotangent, the listings
        highlight its equation's partners on the other side."""
        self.model.select(name)
        self._message = ""
        self._refresh()

    def step_to_selection(self) -> None:
        """Move the cursor to the step that computes the selected variable."""
        m = self.model
        p = m.producer_index.get(m.selected) if m.selected else None
        if p is None:
            self._say("select a variable an equation computes first")
            return
        self.step_to(m.step_of(p))

    def _pick(self, name: str):
        """A name typed or clicked in the browser: a bad one is reported, never raised."""
        if not name.strip():
            self.select(None)
            return
        try:
            self.select(name)
        except KeyError as exc:
            self._say(exc.args[0])

    def _say(self, message: str) -> None:
        self._message = message
        self._frame = self._frame_now()

    # -- closure versus lifted -------------------------------------------------------------
    @property
    def closure_shown(self) -> bool:
        return self._closure_on

    def show_closure(self, on: bool = True) -> None:
        self._closure_on = bool(on)
        self._refresh()

    def comparison(self, name: str | None = None):
        """Closure versus lifted for the rule instance of ``name`` (default: the inspector's
        variable); None when it belongs to no differentiated rule instance."""
        m = self.model
        inst_name = m.instance_of(name or m.focus)
        if inst_name is None:
            return None
        if inst_name not in self._comparisons:
            if self._instances is None:
                self._instances = instances(m.gt, self.primal, self.rules, self.overloads)
            inst = self._instances.get(inst_name)
            block = [m.graph.nodes[eid]["index"] for eid in m.graph.graph["blocks"].get(inst_name, ())]
            self._comparisons[inst_name] = None if inst is None else compare(
                inst, m.values, m.cotangents, block, m.eqns, m.gt.fallbacks)
        return self._comparisons[inst_name]

    def closure_panel(self, name: str | None = None) -> str:
        """The closure-versus-lifted panel's HTML for ``name`` (default: the inspector's variable)."""
        name = name or self.model.focus
        return closure_html(self.model, self.listing_view, self.comparison(name), name)

    # -- checks ----------------------------------------------------------------------------
    @property
    def report(self):
        return self.model.report

    @property
    def alerts(self) -> list:
        """The last checks' failures and warnings, each with the equation it names."""
        return self.model.alerts

    def _check_progress(self, done: int, total: int, what: str):
        """Called by ad.check per equation: the view's bar moves while the checks run."""
        if done in (0, total) or done * PROGRESS_STEPS // max(total, 1) != (done - 1) * PROGRESS_STEPS // max(total, 1):
            self._checks = {**self._checks, "done": done, "total": total, "summary": f"{what} ({done}/{total})"}
            self._frame = self._frame_now()

    def run_checks(self, **options):
        """Run ``ad.check`` on the program (with the rules the tape was built with); pin its
        findings on the equations; jump to the first offending one. Returns the report."""
        self._checks = {**NO_CHECKS, "state": "running", "summary": "running ad.check\u2026"}
        self._frame = self._frame_now()
        with self._built_rules():
            try:
                report = ad.check(self.f, *self.args, argnums=self.argnums,
                                  progress=self._check_progress, **options)
            except Exception as exc:
                self._checks = {**NO_CHECKS, "state": "error", "summary": f"ad.check raised {exc}"}
                self._frame = self._frame_now()
                raise
        m = self.model
        m.set_report(report)
        self._checks = checks_part(m)
        jump = next((k for k, a in enumerate(m.alerts) if a.eqn is not None and a.status == "fail"), None)
        if jump is not None:
            self.jump_to_alert(jump)
        else:
            self._refresh()
        return report

    @contextlib.contextmanager
    def _built_rules(self):
        """The rules the tape was built with, and the overloads of their pullbacks, registered
        again while checks or comparisons run."""
        with contextlib.ExitStack() as stack:
            for prim, rule in self.rules.items():
                if prim.rule is not rule:
                    stack.enter_context(ad.using_rule(prim, rule))
            for prim, built in self.overloads.items():
                for kind in set(built) | set(prim.overloads):
                    if kind not in built:               # registered since: removed for the block
                        stack.callback(ad.backpropagate(prim, kind), ad.backpropagate.remove(prim, kind))
                    elif prim.overloads.get(kind) is not built[kind]:
                        stack.enter_context(ad.backpropagate.using(prim, built[kind], kind))
            yield

    def _checks_from_view(self) -> None:
        """The view's button: a check that raises is shown in the view (run_checks sets the
        verdict), not raised into the kernel's log."""
        with contextlib.suppress(Exception):
            self.run_checks()

    def jump_to_alert(self, k: int | None) -> None:
        """Move to the equation alert ``k`` names (a rule's pullback block for a rule's failure)."""
        m = self.model
        if k is None or not 0 <= k < len(m.alerts):
            return
        alert = m.alerts[k]
        self._checks = {**self._checks, "current": k}
        if alert.eqn is None:
            self._say(f"{alert.check} names no equation")
            return
        m.step_to(m.step_of(m.target_of(alert.eqn)))
        m.select(repr(m.eqns[alert.eqn].outputs[0]))
        self._refresh()

    # -- export ----------------------------------------------------------------------------
    def export(self, format: str = "svg") -> Exported:
        """The graph pane's view as a file (svg, dot, png, pdf), drawn by the kernel's Graphviz
        with a legend and the phase line; kept in ``last_export`` (the view offers a download)."""
        data = self._pane().export(format, self.phase_line)
        mime = MIMES.get(format, "application/octet-stream")
        self.last_export = Exported(f"tape-step-{self.step + 1}.{format}", mime, data)
        return self.last_export

    def _offer(self, exported: Exported) -> None:
        self.send({"kind": "file", "name": exported.name, "mime": exported.mime, "size": len(exported.data),
                   "data": exported.data.decode("utf-8", errors="replace")})

    @property
    def graph_svg(self) -> str:
        """The graph pane drawn by the kernel's Graphviz (the view lays out ``_dot`` itself)."""
        return self._pane().svg()

    # -- what the view receives ------------------------------------------------------------
    def _frame_now(self) -> dict:
        m = self.model
        return {"eqns": len(m.eqns), "pane": {"k": self.graph.k, "view": self._graph_view, **self.calls.part()},
                "mode": m.mode, "granularity": m.granularity,
                "step": step_part(m), "selected": m.selected, "sel": sel_part(m, m.selected),
                "closure": self._closure_on, "message": self._message, "checks": self._checks,
                "seq": self._seq, "by": self._by, "window": list(self._window or self.listing_view.follow(None)),
                "context": self._context(), "scope": list(m.nav.scope_of()),
                "breakpoints": [t if isinstance(t, str) else list(t) for t in m.breakpoints]}

    def _context(self) -> str:
        """What a step's parts depend on besides the cursor: the view keeps the steps it was
        sent ahead per context, and drops them when it changes."""
        m = self.model
        return f"{m.mode}|{m.granularity}|{m.selected}|{m.checks_version}|{self._graph_view}|{self.calls.version}"

    def _ahead(self, indices) -> None:
        """Send the view the steps ``indices`` as a step to them would send them (the step part,
        the DOT, the inspector, the residuals, the listing's window and, when that window is not
        the current one, its rows) and where the moves by call go (``moves_part``), the cursor
        unmoved. None while the closure panel is shown (a step redraws it: the kernel answers
        those steps)."""
        m = self.model
        texts: dict[str, int] = {}

        def intern(text: str) -> int:
            return texts.setdefault(text, len(texts))

        steps = []
        wanted = sorted({int(i) for i in indices if 0 <= int(i) < m.n_steps})[:AHEAD_MAX]
        saved = m.index
        try:
            for j in [] if self._closure_on else wanted:
                m.index = j
                window = self.listing_view.follow(self._window)
                part = {"index": j, "step": step_part(m), "dot": intern(self._pane().dot()),
                        "inspector": intern(inspector_html(m, self.listing_view.var)),
                        "residuals": intern(residuals_html(m, self.listing_view, cursor=False)),
                        "window": list(window), "moves": moves_part(m)}
                if window != self._window:
                    part["listing"] = intern(self.listing_view.render(window, cursor=False))
                steps.append(part)
        finally:
            m.index = saved
        self.send({"kind": "ahead", "context": self._context(), "steps": steps, "texts": list(texts)})

    def _refresh(self):
        m = self.model
        with self.hold_sync():
            # the same rows, without the cursor's classes (the view adds them), while the cursor
            # stays inside: most steps send no listing at all
            self._window = self.listing_view.follow(self._window)
            self._listing = self.listing_view.render(self._window, cursor=False)
            self._inspector = inspector_html(m, self.listing_view.var)
            self._residuals = residuals_html(m, self.listing_view, cursor=False)
            self._closure = self.closure_panel() if self._closure_on else ""
            self._dot = self._pane().dot()
            if self._outline_of != m.checks_version:
                self._outline, self._outline_of = outline_part(m), m.checks_version
            self._frame = self._frame_now()



class JvpDebugger(TapeDebugger):
    """Forward mode (``tapeviz.debug_jvp``): the linearization of ``f`` at ``primals`` along
    ``tangents``, as ``ad.linearize`` builds it: the forward listing beside the tangent listing
    (each primal equation's pushforward block in its row), stepping through the forward section
    and then the pushforward blocks in forward order; the inspector shows a value beside its
    tangent. ``run_checks`` runs ``ad.check`` on the program in the differentiated arguments
    (its ``program.jvp`` checks forward mode against the gradient and finite differences) and pins
    its findings on the primal equations and their pushforward blocks; the closure-versus-lifted
    panel compares a primal equation's closure pushforward with its block's tangents."""

    @built_in_one_go
    def __init__(self, f, primals, tangents, *, rows: int = 40, graph_k: int = 2):
        self.tangents = tuple(tangents)
        with np.errstate(all="ignore"):
            tape, values = jvp_tape(f, primals, tangents)
            argnums = tuple(i for i, t in enumerate(tangents) if t is not None)
            self._start(f, primals, argnums, ad.trace(f, *primals), DebugModel(tape, primals, values), rows, graph_k)

    def comparison(self, name: str | None = None):
        """Closure versus lifted pushforward of the primal equation of ``name`` (default: the
        inspector's variable, a primal value or a tangent); None when no tangent reaches it."""
        m = self.model
        inst = m.instance_of(name or m.focus)
        p = m.producer_index.get(inst) if inst else None
        if p is None or not any(type(x) is Var and repr(x) in m.tangents for x in m.eqns[p].inputs):
            return None
        if inst not in self._comparisons:
            with self._built_rules(), np.errstate(all="ignore"):
                self._comparisons[inst] = compare_tangents(m, p)
        return self._comparisons[inst]

    def closure_panel(self, name: str | None = None) -> str:
        name = name or self.model.focus
        return tangent_html(self.model, self.listing_view, self.comparison(name), name)
