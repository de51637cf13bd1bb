"""The forward-mode debugger (``tapeviz.debug_jvp``) as a static page opened from disk: three
steps into the pushforward blocks the phase line says what the kernel says, a click on a primal
variable shows its value beside its tangent, and the page asks for nothing but itself."""
import numpy as np
import pytest
from playwright.sync_api import expect

import tapeviz
from tests.support.browser import assert_offline, open_offline

pytestmark = pytest.mark.browser


def f(x, W):
    return np.sum(np.tanh(W @ np.sin(x)) * x)


def test_the_forward_page_steps_through_pushforwards_offline(browser, artifacts, tmp_path):
    dbg = tapeviz.debug_jvp(f, (np.linspace(-1, 1, 3), np.eye(3)), (np.ones(3), None))
    dbg.step_to(4)                                   # the last forward step: next is the first pushforward
    path = dbg.to_html(tmp_path / "forward.html")
    context, pg, requests, errors = open_offline(browser, path)
    root = pg.locator(".tv-root")
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "4")
    for k in (5, 6, 7):
        root.locator("button.tv-next").click()
        expect(phase).to_have_attribute("data-step", str(k))
    expect(phase).to_have_attribute("data-phase", "tangent")
    dbg.step_to(7)
    assert dbg.phase_line == "tangent, step 8 of 10: pushforward of %4 (tanh) (3 equations)"
    expect(phase.locator(".tv-phase-text")).to_have_text(dbg.phase_line)
    expect(root.locator(".tv-listing td.tv-backward .tv-eq.tv-current")).to_have_count(3)
    expect(root.locator("button.tv-by-pullback")).to_have_text("by pushforward")

    tangent = dbg.model.tangents["%4"]
    root.locator('.tv-listing td.tv-forward .tv-var[data-var="%4"]').first.click()
    expect(phase).to_have_attribute("data-selected", "%4")
    cards = root.locator(".tv-value")
    expect(cards).to_have_attribute("data-var", "%4")
    expect(cards).to_have_attribute("data-partner", tangent)
    expect(cards.locator('.tv-card[data-role="tangent"]')).to_contain_text("tangent value")
    expect(root.locator(".tv-graph svg")).to_have_count(1)       # the pane is laid out in the page
    pg.screenshot(path=str(artifacts / "debugger_forward_page.png"), full_page=True)
    assert_offline(path, requests, errors)
    context.close()
