"""What every front end must do with the debugger, written once and run in each (JupyterLab,
Notebook 7, Voila, marimo, JupyterLab under a strict CSP): render, step three times and read the
phase line, click a listing row and a graph node and read the selection, zoom the graph, run the
checks and read the verdict; and on the 40-step RNN, the outline and stepping by call
(``outline_step_by_call``). Every step round-trips browser -> kernel -> browser; assertions
read the DOM (data-* attributes, text) with Playwright's retrying ``expect``, never a sleep."""
from __future__ import annotations

import re

from playwright.sync_api import expect

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss

KERNEL_TIMEOUT_MS = 120_000       # a cold kernel on two busy cores imports numpy, ad, tapeviz


def rendered(root) -> None:
    """The view is up: listing, phase line, and the graph laid out for step 0."""
    expect(root.locator(".tv-phase")).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator(".tv-phase .tv-phase-text")).to_have_text(re.compile(r"^forward, step 1 of \d+: matmul \u2192 %7"))
    expect(root.locator(".tv-forward .tv-eq.tv-current")).to_have_count(1)
    expect(root.locator(".tv-graph-pane")).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator(".tv-graph svg")).to_have_count(1)
    expect(root.locator(".tv-status")).to_be_hidden()            # the kernel answered


def step_select_zoom_check(pg, root, artifacts, name: str, renderer: str = "wasm") -> None:
    rendered(root)
    phase = root.locator(".tv-phase")
    pane = root.locator(".tv-graph-pane")
    for k in (1, 2, 3):
        root.locator("button.tv-next").click()
        expect(phase).to_have_attribute("data-step", str(k))
    expect(phase).to_have_attribute("data-confirmed", "true")     # the kernel's answer came
    expect(phase.locator(".tv-phase-text")).to_have_text(re.compile(r"^forward, step 4 of \d+: \S+"))
    expect(pane).to_have_attribute("data-step", "3")
    expect(pane).to_have_attribute("data-renderer", renderer)

    row = root.locator('.tv-listing td.tv-forward .tv-eq[data-eq="1"]')
    var = row.get_attribute("data-var")
    row.locator(".tv-n").click()                                  # the row, not one of its names
    expect(phase).to_have_attribute("data-selected", var)
    expect(root.locator(".tv-value")).to_have_attribute("data-var", var)
    expect(row).to_have_class(re.compile(r"\btv-sel\b"))

    current = phase.get_attribute("data-current")
    node = root.locator(f'.tv-graph g.node[id="tvn_{current}"], .tv-graph g.node[id="tvn_eq/{current}"]').first
    node.click()
    expect(phase).to_have_attribute("data-selected", current)
    expect(node).to_have_class(re.compile(r"\btv-node-sel\b"))
    expect(root.locator(".tv-value")).to_have_attribute("data-var", current)

    expect(pane).to_have_attribute("data-scale", "1.000")         # the readable scale, not shrunk
    svg = root.locator(".tv-graph svg")
    before = svg.bounding_box()["width"]
    root.locator("button.tv-zoom-in").click()
    expect(pane).to_have_attribute("data-scale", "1.250")
    assert abs(svg.bounding_box()["width"] / before - 1.25) < 0.02
    root.locator("button.tv-zoom-1").click()
    expect(pane).to_have_attribute("data-scale", "1.000")
    view = root.locator(".tv-graph-view").bounding_box()
    assert view["x"] + view["width"] <= pg.viewport_size["width"] + 1, "the graph pane is cut off"

    root.locator("button.tv-check").click()
    expect(root.locator(".tv-check-summary [data-ok]")).to_have_attribute("data-ok", "false",
                                                                         timeout=KERNEL_TIMEOUT_MS)
    expect(phase).to_have_attribute("data-checks", "fail")
    expect(phase.locator(".tv-phase-text")).to_contain_text(re.compile(r"backward, step \d+ of \d+: pullback of %9 \(tanh\)"))
    expect(root.locator(".tv-alert.tv-alert-fail").first).to_contain_text("\u2717")
    expect(root.locator(".tv-backward .tv-badge.tv-fail").first).to_be_visible()
    root.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"debugger_{name}.png"))
    assert not view_errors(pg), view_errors(pg)


def view_errors(pg) -> list[str]:
    """Uncaught errors thrown in the view's module (a blob: URL wherever anywidget loads it);
    the front ends' own (Notebook 7 reports one about its settings) are theirs to fix."""
    return [e for e in pg.js_errors if "blob:" in e]


# -- the outline and stepping by call (tests/e2e/test_e2e_outline.py), on the 40-step RNN ----

def at(root, dbg) -> None:
    """The view shows the step the kernel's twin ``dbg`` is at, confirmed by the kernel: the
    phase line, the scope, the outline's highlight."""
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", str(dbg.step))
    expect(phase).to_have_attribute("data-confirmed", "true")
    expect(phase.locator(".tv-phase-text")).to_have_text(dbg.phase_line)
    expect(phase).to_have_attribute("data-scope", "/".join(dbg.scope))
    expect(root.locator(".tv-outline")).to_have_attribute("data-scope", "/".join(dbg.scope))
    expect(root.locator(".tv-tools span.tv-message")).to_have_text(dbg.message)


def outline_row(root, path: str):
    return root.locator(f'.tv-outline .tv-ol-row[data-kind="scope"][data-path="{path}"]')


CURSOR = re.compile(r"\btv-ol-cursor\b")


def outline_step_by_call(pg, root, artifacts, name: str) -> None:
    """Expand the folded ``cell x40`` group, click ``cell#17`` (the cursor goes there), step out
    of it and over the next call in the forward pass; set a breakpoint on ``cell#17`` in the
    outline and continue to its pullback; step over, out and over a call's pullback in the
    backward pass, backwards with Shift and with the toggle; a breakpoint from the listing's
    gutter, cleared from its chip; what the moves that find nothing say. ``dbg``, a debugger of
    the same program in the test's process, says where each move must land."""
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    phase = root.locator(".tv-phase")
    outline = root.locator(".tv-outline")
    expect(phase).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator(".tv-status")).to_be_hidden()
    group = outline.locator('.tv-ol-row[data-kind="group"][data-path="cell"]')
    expect(group).to_contain_text("cell \u00d740")
    expect(group).to_have_attribute("aria-expanded", "false")
    expect(outline.locator('.tv-ol-row[data-path^="cell#"]')).to_have_count(0)       # folded: not drawn
    expect(outline_row(root, "")).to_have_class(CURSOR)                             # the top level
    group.click()
    expect(group).to_have_attribute("aria-expanded", "true")
    expect(outline.locator('.tv-ol-row[data-path^="cell#"]')).to_have_count(40)
    row17 = outline_row(root, "cell#17")
    expect(row17.locator(".tv-ol-n").first).to_have_text(str(dbg.outline()["children"][0]["children"][16]["forward"]))

    row17.locator(".tv-ol-name").click()                                           # run to cell#17
    dbg.run_to(("cell#17",))
    at(root, dbg)
    expect(row17).to_have_class(CURSOR)
    expect(group).not_to_have_class(CURSOR)
    expect(root.locator(".tv-listing .tv-eq.tv-current").first).to_be_in_viewport()
    expect(phase.locator(".tv-phase-scope")).to_have_text("in cell#17")
    root.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"outline_{name}_cell17.png"))

    root.locator("button.tv-step-out").click()                                     # forward: out of cell#17
    dbg.step_out()
    at(root, dbg)
    expect(outline_row(root, "")).to_have_class(CURSOR)
    root.locator("button.tv-step-over").click()                                    # over cell#18, whole
    before = dbg.step
    dbg.step_over()
    assert dbg.step - before > 1 and dbg.scope == ()
    at(root, dbg)

    row17.locator(".tv-ol-bp").click()                                             # a breakpoint on cell#17
    expect(row17).to_have_class(re.compile(r"\btv-ol-has-bp\b"))
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_text("\u25cf cell#17 \u00d7")
    dbg.breakpoints.add(("cell#17",))
    root.locator("button.tv-cont").click()                                         # to its pullback
    dbg.cont()
    assert dbg.model.step.phase == "backward" and dbg.scope == ("cell#17",)
    at(root, dbg)
    expect(phase).to_have_attribute("data-phase", "backward")
    expect(row17).to_have_class(CURSOR)

    for move in ("step_over", "step_out", "step_over"):                            # backward: within,
        root.locator(f"button.tv-{move.replace('_', '-')}").click()                # out, over cell#16's
        getattr(dbg, move)()
        at(root, dbg)
    assert dbg.scope == () and dbg.model.step.phase == "backward"
    root.locator("button.tv-step-over").click(modifiers=["Shift"])                 # backwards, over it again
    dbg.step_over(reverse=True)
    at(root, dbg)
    root.locator("button.tv-reverse").click()
    expect(root.locator("button.tv-reverse")).to_have_attribute("aria-pressed", "true")
    root.locator("button.tv-cont").click()                                         # back to the breakpoint
    dbg.cont(reverse=True)
    at(root, dbg)
    root.locator("button.tv-reverse").click()
    expect(root.locator("button.tv-reverse")).to_have_attribute("aria-pressed", "false")

    line = root.locator(".tv-listing td.tv-backward .tv-eq.tv-current").first      # the gutter
    var = line.get_attribute("data-var")
    line.locator(".tv-gutter").click()
    expect(line).to_have_class(re.compile(r"\btv-bp\b"))
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_count(2)
    expect(phase).to_have_attribute("data-selected", "")                          # a gutter click selects nothing
    root.locator("button.tv-nonfinite").click()
    dbg.run_to_nonfinite(from_cursor=True)
    at(root, dbg)                                                                  # "no NaN or Inf after this step"
    root.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"outline_{name}_backward.png"))
    root.locator(".tv-breakpoints .tv-bp-chip", has_text=re.compile(rf"^\u25cf {re.escape(var)} \u00d7$")).click()
    expect(line).not_to_have_class(re.compile(r"\btv-bp\b"))
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_count(1)
    root.locator("button.tv-failure").click()
    dbg.run_to_failure()
    at(root, dbg)                                                                  # "no checks have run..."
    assert not view_errors(pg), view_errors(pg)


# -- the graph pane's calls view (tests/e2e/test_e2e_calls.py), on the 40-step RNN ---------------

def graph_node(root, element_id: str):
    return root.locator(f'.tv-graph g.node[id="{element_id}"]')


def calls_view(pg, root, artifacts, name: str, kernel: bool = True) -> None:
    """Switch the graph pane to the program's calls (``cell x40`` and its pullback one node each),
    open the group by a click on its node (the outline expands it too; a window of 9 calls is
    drawn), open ``cell#5`` by a click on its node, go to ``cell#17`` from the outline (the
    window moves to it; its equations and its pullback's are drawn, the weights as stubs beside
    their readers; a click on a stub selects the weight), close the group from its cluster's
    title (the outline collapses it) and expand it in the outline (the graph opens it,
    ``cell#17`` still opened). A click on an SVG node is dispatched to it: it may lie outside
    the pane's view.
    ``dbg``, a debugger of the same program in the test's process, names what must be drawn.
    ``kernel=False``: a static page (no kernel answers; its status line says so)."""
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    k, k5 = dbg.calls.number(("cell#17",)), dbg.calls.number(("cell#5",))
    cell17 = dbg.model.nav.tree.find(("cell#17",))
    names = [repr(dbg.model.eqns[i].outputs[0]) for i in cell17.forward + cell17.backward]
    dbg.graph_view = "calls"                                 # the moves below, to count Wh's stubs at cell#17
    dbg.open_call(("cell",))
    dbg.open_call(("cell#5",))
    dbg.run_to(("cell#17",))
    stubs = re.findall(r' id="(tvu_\d+_%0)"', dbg._dot)
    pane = root.locator(".tv-graph-pane")
    expect(root.locator(".tv-phase")).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    if kernel:
        expect(root.locator(".tv-status")).to_be_hidden()
    root.locator("button.tv-view-calls").click()
    expect(pane).to_have_attribute("data-view", "calls", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator("button.tv-view-calls")).to_have_attribute("aria-pressed", "true")
    group = graph_node(root, "tvg_f0")
    expect(group).to_contain_text("cell \u00d740")
    expect(graph_node(root, "tvg_b0")).to_contain_text("pullback of cell \u00d740")
    expect(root.locator('.tv-graph g.node[id^="tvc_"]')).to_have_count(0)
    root.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"calls_{name}_top.png"))

    group.dispatch_event("click")                                                 # open cell x40
    call5 = graph_node(root, f"tvc_f{k5}")
    expect(call5).to_contain_text("cell#5", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator('.tv-graph g.node[id^="tvc_f"]')).to_have_count(9)        # a window of the 40
    expect(graph_node(root, "tvs_f0_1")).to_contain_text("31 more: cell#10 to cell#40")
    row = root.locator('.tv-outline .tv-ol-row[data-kind="group"][data-path="cell"]')
    expect(row).to_have_attribute("aria-expanded", "true")                         # the outline follows
    expect(root.locator('.tv-outline .tv-ol-row[data-path^="cell#"]')).to_have_count(40)

    call5.dispatch_event("click")                                                 # open cell#5
    expect(root.locator(f'.tv-graph g.cluster[id="tvo_cf{k5}"]')).to_have_count(1, timeout=KERNEL_TIMEOUT_MS)
    root.locator('.tv-outline .tv-ol-row[data-path="cell#17"]').click()           # go to cell#17
    for phase in "fb":
        expect(root.locator(f'.tv-graph g.cluster[id="tvo_c{phase}{k}"]')).to_have_count(1, timeout=KERNEL_TIMEOUT_MS)
    for var in names:
        expect(graph_node(root, f"tvn_{var}")).to_have_count(1)
    expect(graph_node(root, "tvs_f0_0")).to_contain_text("12 more: cell#1 to cell#12")   # the window: cell#13 to #21
    expect(root.locator('.tv-graph g.node[id^="tvu_"][id$="_%0"]')).to_have_count(len(stubs))
    expect(graph_node(root, "tvn_%0")).to_have_count(0)                           # Wh: only stubs
    root.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"calls_{name}_cell17.png"))
    root.locator("button.tv-zoom-fit").click()                                    # the whole drawing
    root.locator(".tv-graph-pane").screenshot(path=str(artifacts / f"calls_{name}_cell17_fit.png"))
    graph_node(root, stubs[0]).dispatch_event("click")                            # a stub selects its value
    expect(root.locator(".tv-phase")).to_have_attribute("data-selected", "%0", timeout=KERNEL_TIMEOUT_MS)

    root.locator('.tv-graph g.cluster[id="tvo_gf0"] text').first.dispatch_event("click")   # close the group
    expect(group).to_have_count(1, timeout=KERNEL_TIMEOUT_MS)
    expect(row).to_have_attribute("aria-expanded", "false")
    row.click()                                                                   # expand it in the outline
    expect(row).to_have_attribute("aria-expanded", "true")
    expect(root.locator(f'.tv-graph g.cluster[id="tvo_cf{k}"]')).to_have_count(1, timeout=KERNEL_TIMEOUT_MS)
    expect(group).to_have_count(0)
    root.locator("button.tv-view-around").click()                                 # and back
    expect(pane).to_have_attribute("data-view", "around", timeout=KERNEL_TIMEOUT_MS)
    assert not view_errors(pg), view_errors(pg)
