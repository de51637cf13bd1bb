"""The Jupyter tape debugger's widget: ``TapeDebugger`` shows a function's gradient tape as
forward and backward listings side by side, steps through it pullback by pullback (or primitive
by primitive), draws the neighbourhood of the cursor, inspects values and cotangents, compares
closure and lifted pullbacks, and pins the checker's findings on the equations.

It is one plain class that owns its widgets; its state lives in a ``DebugModel`` (``model``) and
every view is an HTML string drawn from it (``listing``, ``inspector``, ``residuals``,
``closure``, ``graph_pane``), so notebooks and tests drive it from Python (``dbg.next()``,
``dbg.select("%7")``, ``dbg.run_checks()``) exactly as the buttons do. The only module of the
package that imports ipywidgets.
"""
from __future__ import annotations

import base64
import contextlib
import uuid
from typing import NamedTuple

import ipywidgets as w
import numpy as np

import ad

from .closure import closure_html, compare, instances
from .graph_pane import GraphPane
from .inspector import inspector_html
from .listing import Listing, phase_html
from .markup import attr, esc, static
from .model import DebugModel
from .residuals import residuals_html

STYLE = f"<style>{static('debugger.css')}</style>"
MIMES = {"svg": "image/svg+xml", "dot": "text/vnd.graphviz", "png": "image/png", "pdf": "application/pdf",
         "txt": "text/plain"}


class Exported(NamedTuple):
    name: str
    mime: str
    data: bytes


class TapeDebugger:
    """Forward and backward listings side by side, stepping, graph, values, checks (see module).

    Scripting (each call redraws the widget, wherever it is shown):
    stepping ``next()``, ``prev()``, ``first()``, ``last()``, ``step_to(i)``, ``set_granularity(g)``
    and ``step``, ``n_steps``, ``current``, ``phase_line``; selection ``select("%7")``,
    ``selected``, ``step_to_selection()``; ``show_closure(on)`` and ``comparison(name)``; ``run_checks(**options)`` (the
    report), ``alerts``, ``jump_to_alert(k)``; ``export(format)`` and ``last_export``. The state
    is ``model`` (a ``DebugModel``); ``root`` is the widget shown.
    """

    def __init__(self, f, args, argnums=0, *, rows: int = 40, graph_k: int = 2):
        self.f, self.args, self.argnums = f, tuple(args), argnums
        with np.errstate(all="ignore"):        # NaN and Inf are what one debugs: shown, not warned
            self.primal = ad.trace(f, *args)
            self.model = DebugModel(ad.grad_tape(f, *args, argnums=argnums), args)
        # the rules as they are now: a rule swapped later must not change what is shown
        self.rules = {e.prim: e.prim.rule for e in self.primal.eqns}
        self.listing_view = Listing(self.model, f"tv-{uuid.uuid4().hex[:8]}", rows)
        self.graph = GraphPane(self.model, graph_k)
        self.last_export: Exported | None = None
        self._instances = None
        self._comparisons: dict = {}
        self._quiet = False
        self.alert_buttons: list = []
        self._build()
        self._refresh()

    # -- widgets ---------------------------------------------------------------------------
    def _build(self):
        n = self.model.n_steps

        def button(text, cls, action, tooltip, **kw):
            b = w.Button(description=text, tooltip=tooltip, layout=w.Layout(width="auto"), **kw)
            b.add_class(cls)
            b.on_click(lambda _: action())
            return b

        self.first_button = button("\u00ab first", "tv-first", self.first, "go to the first step")
        self.prev_button = button("\u25c0 prev", "tv-prev", self.prev, "previous step")
        self.next_button = button("next \u25b6", "tv-next", self.next, "next step", button_style="primary")
        self.last_button = button("last \u00bb", "tv-last", self.last, "go to the last step")
        self.play = w.Play(min=1, max=n, value=1, interval=600, description="play",
                           layout=w.Layout(width="auto"))
        self.slider = w.IntSlider(min=1, max=n, value=1, description="step", continuous_update=False,
                                  layout=w.Layout(flex="1 1 auto", min_width="220px"))
        w.jslink((self.play, "value"), (self.slider, "value"))
        self.granularity_buttons = w.ToggleButtons(
            options=[("by pullback", "pullback"), ("by primitive", "primitive")], value="pullback",
            tooltips=["one rule instance or pullback block per step", "one equation per step"],
            style={"button_width": "auto"})
        self.pick = w.Text(placeholder="%n", description="select", continuous_update=False,
                           layout=w.Layout(width="160px"))
        self.goto_button = button("step to it", "tv-goto", self.step_to_selection,
                                  "move the cursor to the step that computes the selected variable")
        self.closure_toggle = w.ToggleButton(description="closure vs lifted", value=False,
                                             tooltip="compare the selected rule's closure and lifted pullbacks")
        self.check_button = button("run checks", "tv-check", self.run_checks,
                                   "run ad.check on this program", button_style="warning")
        self.progress = w.IntProgress(min=0, max=1, value=0, layout=w.Layout(width="90px", visibility="hidden"))
        self.check_summary = w.HTML()
        self.export_svg_button = button("SVG", "tv-export-svg", lambda: self.export("svg"),
                                        "export the graph pane as SVG")
        self.export_dot_button = button("DOT", "tv-export-dot", lambda: self.export("dot"),
                                        "export the graph pane as DOT source")
        self.download = w.HTML()
        self.message = w.HTML()
        self.phase = w.HTML()
        self.listing = w.HTML(layout=w.Layout(width="100%"))
        self.graph_pane = w.HTML()
        self.inspector = w.HTML()
        self.closure_panel = w.HTML(layout=w.Layout(display="none"))
        self.alerts_box = w.VBox([w.HTML('<span class="tv-caption">run the checks to list their findings '
                                     'here</span>')], layout=w.Layout(max_height="220px", overflow="auto"))
        self.residuals = w.HTML(layout=w.Layout(flex="1 1 62%", min_width="0"))
        for widget, cls in [(self.play, "tv-play"), (self.slider, "tv-slider"), (self.pick, "tv-pick"),
                            (self.granularity_buttons, "tv-granularity"), (self.closure_toggle, "tv-closure"),
                            (self.progress, "tv-progress"), (self.check_summary, "tv-check-summary"),
                            (self.download, "tv-download"), (self.message, "tv-message"),
                            (self.phase, "tv-phase-w"), (self.listing, "tv-listing-w"),
                            (self.graph_pane, "tv-graph"), (self.inspector, "tv-value-w"),
                            (self.closure_panel, "tv-closure-w"), (self.alerts_box, "tv-alerts"),
                            (self.residuals, "tv-residuals-w")]:
            widget.add_class(cls)

        self.slider.observe(lambda c: self._unless_quiet(self.step_to, c["new"] - 1), "value")
        self.granularity_buttons.observe(lambda c: self._unless_quiet(self.set_granularity, c["new"]), "value")
        self.pick.observe(lambda c: self._unless_quiet(self._pick, c["new"]), "value")
        self.closure_toggle.observe(lambda c: self._unless_quiet(self.show_closure, c["new"]), "value")
        self.play.observe(lambda c: None if c["new"] else self._draw_graph(), "playing")

        row = w.Layout(align_items="center", flex_flow="row wrap")
        toolbar = w.HBox([self.first_button, self.prev_button, self.next_button, self.last_button, self.play,
                          self.slider, self.granularity_buttons], layout=row)
        tools = w.HBox([self.pick, self.goto_button, self.closure_toggle, self.check_button, self.progress, self.check_summary,
                        self.export_svg_button, self.export_dot_button, self.download, self.message], layout=row)
        left = w.VBox([self.listing, self.inspector], layout=w.Layout(flex="1 1 55%", min_width="0"))
        right = w.VBox([self.graph_pane], layout=w.Layout(flex="1 1 45%", min_width="0"))
        main = w.HBox([left, right], layout=w.Layout(align_items="flex-start"))
        alerts = w.VBox([w.HTML("<b>check alerts</b> (click one to jump to its equation)"), self.alerts_box],
                        layout=w.Layout(flex="1 1 38%", min_width="0"))
        bottom = w.HBox([alerts, self.residuals], layout=w.Layout(align_items="flex-start"))
        self.root = w.VBox([w.HTML(STYLE), self.phase, toolbar, tools, main, self.closure_panel, bottom])
        self.root.add_class("tv-root")
        for box in (toolbar, tools, main, bottom, left, right, self.root):
            box.add_class("tv-gap")

    def _unless_quiet(self, fn, *args):
        if not self._quiet:
            fn(*args)

    @contextlib.contextmanager
    def _syncing(self):
        """Widgets set from the model must not call back into it."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _repr_mimebundle_(self, **kwargs):
        return self.root._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return f"<TapeDebugger {self.phase_line}>"

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
        self.message.value = ""
        self._refresh()

    def step_to_selection(self) -> None:
        """Move the cursor to the step that computes the selected variable."""
        m = self.model
        p = m.producer_index.get(m.selected) if m.selected else None
        if p is None:
            self.message.value = "<span>select a variable an equation computes first</span>"
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
            self.message.value = f"<span>{esc(exc.args[0])}</span>"

    # -- closure versus lifted -------------------------------------------------------------
    @property
    def closure_shown(self) -> bool:
        return self.closure_toggle.value

    def show_closure(self, on: bool = True) -> None:
        with self._syncing():
            self.closure_toggle.value = bool(on)
        self.closure_panel.layout.display = "" if on else "none"
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
                self._instances = instances(m.gt, self.primal, self.rules)
            inst = self._instances.get(inst_name)
            block = [m.graph.nodes[eid]["index"] for eid in m.graph.graph["blocks"].get(inst_name, ())]
            self._comparisons[inst_name] = None if inst is None else compare(
                inst, m.values, m.cotangents, block, m.eqns, m.gt.fallbacks)
        return self._comparisons[inst_name]

    # -- checks ----------------------------------------------------------------------------
    @property
    def report(self):
        return self.model.report

    @property
    def alerts(self) -> list:
        """The last checks' failures and warnings, each with the equation it names."""
        return self.model.alerts

    def _check_progress(self, done: int, total: int, what: str):
        """Called by ad.check per equation: the bar moves while the checks run."""
        self.progress.max = max(total, 1)
        self.progress.value = done
        self.check_summary.value = esc(f"{what} ({done}/{total})")

    def run_checks(self, **options):
        """Run ``ad.check`` on the program (with the rules the tape was built with); pin its
        findings on the equations; jump to the first offending one. Returns the report."""
        self.progress.layout.visibility = "visible"
        self.progress.value, self.progress.bar_style = 0, "info"
        self.progress.description = "checking"
        self.check_summary.value = "running ad.check\u2026"
        with contextlib.ExitStack() as stack:
            for prim, rule in self.rules.items():
                if prim.rule is not rule:
                    stack.enter_context(ad.using_rule(prim, rule))
            try:
                report = ad.check(self.f, *self.args, argnums=self.argnums,
                                  progress=self._check_progress, **options)
            except Exception as exc:
                self.progress.bar_style, self.progress.description = "danger", "error"
                self.check_summary.value = f'<span class="tv-bad">ad.check raised {esc(exc)}</span>'
                raise
        m = self.model
        m.set_report(report)
        self.progress.value = self.progress.max
        self.progress.bar_style = "success" if report.ok else "danger"
        self.progress.description = "passed" if report.ok else "failed"
        verdict = "tv-good" if report.ok else "tv-bad"
        self.check_summary.value = (f'<span class="{verdict}"{attr("data-ok", str(report.ok).lower())}>'
                                    f'{esc(report.summary())}</span>')
        self.alert_buttons = [self._alert_button(k, a) for k, a in enumerate(m.alerts)]
        self.alerts_box.children = self.alert_buttons or [
            w.HTML('<span class="tv-good">no failures or warnings</span>')]
        jump = next((k for k, a in enumerate(m.alerts) if a.eqn is not None and a.status == "fail"), None)
        if jump is not None:
            self.jump_to_alert(jump)
        else:
            self._refresh()
        return report

    def jump_to_alert(self, k: int | None) -> None:
        """Move to the equation alert ``k`` names (a rule's pullback block for a rule's failure)."""
        m = self.model
        if k is None or not 0 <= k < len(m.alerts):
            return
        alert = m.alerts[k]
        for j, b in enumerate(self.alert_buttons):
            (b.add_class if j == k else b.remove_class)("tv-alert-current")
        if alert.eqn is None:
            self.message.value = f"<span>{esc(alert.check)} names no equation</span>"
            return
        m.step_to(m.step_of(m.target_of(alert.eqn)))
        m.select(repr(m.eqns[alert.eqn].outputs[0]))
        self._refresh()

    def _alert_button(self, k: int, alert) -> w.Button:
        b = w.Button(description=_alert_label(alert), tooltip=alert.message,
                     layout=w.Layout(width="100%", height="auto"))
        b.add_class("tv-alert")
        b.add_class(f"tv-alert-{alert.status}")
        b.on_click(lambda _: self.jump_to_alert(k))
        return b

    # -- export ----------------------------------------------------------------------------
    def export(self, format: str = "svg") -> Exported:
        """The graph pane's view as a file (svg, dot, png, pdf), offered as a download link and
        kept in ``last_export``."""
        data = self.graph.export(format, self.phase_line)
        mime = MIMES.get(format, "application/octet-stream")
        name = f"tape-step-{self.step + 1}.{format}"
        self.last_export = Exported(name, mime, data)
        href = f"data:{mime};base64,{base64.b64encode(data).decode()}"
        self.download.value = (f'<a class="tv-download-link" download="{esc(name)}" href="{href}">'
                               f'\u2b07 {esc(name)} ({len(data):,} bytes)</a>')
        return self.last_export

    def _refresh(self):
        m = self.model
        n = m.n_steps
        with self._syncing():
            for widget in (self.slider, self.play):
                if n >= widget.max:
                    widget.max, widget.value = n, m.index + 1
                else:
                    widget.value, widget.max = m.index + 1, n
            self.granularity_buttons.value = m.granularity
            self.pick.value = m.selected or ""
        self.phase.value = phase_html(m)
        self.listing.value = self.listing_view.render()
        self.inspector.value = inspector_html(m, self.listing_view.var)
        self.residuals.value = residuals_html(m, self.listing_view)
        if self.closure_toggle.value:
            self.closure_panel.value = closure_html(m, self.listing_view, self.comparison(), m.focus)
        if not self.play.playing:
            self._draw_graph()

    def _draw_graph(self):
        self.graph_pane.value = self.graph.draw()

    @property
    def graph_svg(self) -> str:
        """The graph pane's current SVG."""
        return self.graph.svg


def _alert_label(alert) -> str:
    sign = "\u2717" if alert.status == "fail" else "\u26a0"
    text = f"{sign} {alert.check}: {' '.join(alert.message.split())}"
    return text if len(text) <= 150 else text[:149] + "\u2026"
