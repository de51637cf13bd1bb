"""The rendered pages in headless Chromium, served from 127.0.0.1 with every other host
unreachable: the debugger draws itself from the embedded widget state, with no kernel and no
request off the machine."""
from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tapeviz.notebooks import find_notebooks

NOTEBOOKS = find_notebooks([Path(__file__).resolve().parents[2] / "notebooks"])
TOUR = next(n for n in NOTEBOOKS if n.stem.endswith("tour"))

pytestmark = pytest.mark.browser
WAIT = 30_000          # ms: the first render loads a 1.9 MB script on a possibly busy machine


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_page_opens_offline(page, server, notebook):
    page.goto(f"{server}/{notebook.stem}.html")
    expect(page.locator(".jp-Notebook")).to_be_visible(timeout=WAIT)
    expect(page.locator(".jp-OutputArea-output").first).to_be_visible()
    page.wait_for_load_state("load")
    assert page.external == [] and page.errors == []


def test_tour_shows_the_debugger_from_its_embedded_state(page, server, artifacts):
    page.goto(f"{server}/{TOUR.stem}.html")
    for part in (".tv-forward", ".tv-backward", ".tv-graph", ".tv-next"):
        expect(page.locator(part).first).to_be_visible(timeout=WAIT)
    # the state the notebook's cell left: stopped at tanh's pullback block
    expect(page.locator(".tv-phase").first).to_contain_text("backward")
    expect(page.locator(".tv-phase").first).to_contain_text("pullback of %3 (tanh)")
    expect(page.locator("td.tv-forward").filter(has_text="tanh").first).to_be_visible()
    expect(page.locator(".tv-graph svg").first).to_be_visible()
    page.wait_for_load_state("load")
    page.locator(".tv-forward").first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "notebook_tour_debugger.png"))
    assert page.external == [] and page.errors == []
