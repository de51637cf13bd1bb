"""The rendered pages in headless Chromium, served from 127.0.0.1 with every other host
unreachable: the debugger draws itself from its embedded session and steps, selects and compares
with no kernel and no request off the machine."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tapeviz.commands.notebooks import find_notebooks
from tests.support import ROOT

NOTEBOOKS = find_notebooks([ROOT / "notebooks"])
TOUR = next(n for n in NOTEBOOKS if n.stem.endswith("tour"))
REAL = next(n for n in NOTEBOOKS if "real_programs" in n.stem)

pytestmark = pytest.mark.browser
WAIT = 30_000          # ms: the first render compiles Graphviz (WebAssembly) on a possibly busy machine


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_page_opens_offline(page, server, notebook):
    page.goto(f"{server}/{notebook.stem}.html")
    expect(page.locator(".jp-Notebook")).to_be_visible(timeout=WAIT)
    expect(page.locator(".jp-OutputArea-output").first).to_be_visible()
    page.wait_for_load_state("load")
    assert page.external == [] and page.errors == []


def test_tour_steps_and_selects_from_its_embedded_session(page, server, artifacts):
    page.goto(f"{server}/{TOUR.stem}.html")
    root = page.locator(".tv-root")
    phase = root.locator(".tv-phase")
    # the state the notebook's cell left: stopped at tanh's pullback block, %3 selected
    expect(phase.locator(".tv-phase-text")).to_contain_text("pullback of %3 (tanh)", timeout=WAIT)
    expect(phase).to_have_attribute("data-selected", "%3")
    expect(root.locator(".tv-graph-pane")).to_have_attribute("data-step", phase.get_attribute("data-step"),
                                                             timeout=WAIT)
    step = int(phase.get_attribute("data-step"))
    root.locator("button.tv-next").click()
    expect(phase).to_have_attribute("data-step", str(step + 1))
    root.locator("button.tv-prev").click()
    expect(phase).to_have_attribute("data-step", str(step))
    root.locator(".tv-listing td.tv-forward .tv-var[data-var='%2']").first.click()
    expect(root.locator(".tv-value")).to_have_attribute("data-var", "%2")
    root.locator("button.tv-closure").click()
    expect(root.locator(".tv-closure-panel")).to_have_attribute("data-ok", "true")
    page.wait_for_load_state("load")
    root.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "notebook_tour_debugger.png"))
    assert page.external == [] and page.errors == []


def test_real_programs_debuggers_show_the_breakpoint_and_the_nan(page, server, artifacts):
    """The chapter on real programs: its 40-step RNN stopped at cell#17's pullback (the outline's
    cell x40 expands, with cell#17 at the cursor), then stepping, and out of the call, with no
    kernel; its padded RNN stopped at the first NaN, in unit inside padded_cell#5."""
    page.goto(f"{server}/{REAL.stem}.html")
    rnn, padded = page.locator(".tv-root").nth(0), page.locator(".tv-root").nth(1)
    phase = rnn.locator(".tv-phase")
    expect(phase.locator(".tv-phase-text")).to_contain_text("pullback of %107 (tanh)", timeout=WAIT)
    expect(phase).to_have_attribute("data-scope", "cell#17")
    expect(phase).to_have_attribute("data-selected", "%107")
    outline = rnn.locator(".tv-outline")
    expect(rnn.locator(".tv-outline-h")).to_contain_text("click one to go there")
    group = outline.locator('.tv-ol-row[data-kind="group"][data-path="cell"]')
    expect(group).to_contain_text("cell \u00d740")
    group.click()
    expect(outline.locator('.tv-ol-row[data-path^="cell#"]')).to_have_count(40)
    expect(outline.locator('.tv-ol-row[data-kind="scope"][data-path="cell#17"]')).to_have_class(
        re.compile(r"\btv-ol-cursor\b"))
    step = int(phase.get_attribute("data-step"))
    rnn.locator("button.tv-next").click()
    expect(phase).to_have_attribute("data-step", str(step + 1))
    expect(phase).to_have_attribute("data-scope", "cell#17")
    rnn.locator("button.tv-prev").click()
    expect(phase).to_have_attribute("data-step", str(step))
    rnn.locator("button.tv-step-out").click()                   # by call, with no kernel
    expect(phase).not_to_have_attribute("data-scope", "cell#17")
    expect(phase).to_have_attribute("data-phase", "backward")
    nan_phase = padded.locator(".tv-phase")
    expect(nan_phase.locator(".tv-phase-text")).to_contain_text("divide", timeout=WAIT)
    expect(nan_phase).to_have_attribute("data-scope", "padded_cell#5/unit")
    expect(padded.locator(".tv-value")).to_have_attribute("data-var", "%51")
    expect(padded.locator(".tv-value")).to_contain_text("NaN 3")
    page.wait_for_load_state("load")
    rnn.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "notebook_real_programs_breakpoint.png"))
    padded.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "notebook_real_programs_nan.png"))
    assert page.external == [] and page.errors == []
