"""What every front end must do with the debugger, written once and run in each (JupyterLab,
Notebook 7, Voila, marimo, JupyterLab under a strict CSP): render, step three times and read the
phase line, click a listing row and a graph node and read the selection, zoom the graph, run the
checks and read the verdict. Every step round-trips browser -> kernel -> browser; assertions
read the DOM (data-* attributes, text) with Playwright's retrying ``expect``, never a sleep."""
from __future__ import annotations

import re

from playwright.sync_api import expect

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
