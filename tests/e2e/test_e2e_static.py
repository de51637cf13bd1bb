"""``dbg.to_html(path)``: a page opened from disk (file://) with no kernel and no server steps,
selects, compares closure and lifted and follows the alerts exactly as the live widget, and asks
for nothing: its only requests are itself and the blob: URLs of its own embedded scripts."""
import numpy as np
import pytest
from playwright.sync_api import expect

import ad
import tapeviz
from ad.examples import mlp_example, mlp_loss
from tests.support.browser import assert_offline, open_offline
from tests.support.debugger_notebook import HOSTILE

pytestmark = pytest.mark.browser


def tanh_wrong_sign(x):
    y = np.tanh(x)
    return y, lambda dy: (-dy * (1 - y * y),)


def loss(params, x, y):
    return mlp_loss(params["mlp"], x, y) + 1e-3 * np.sum(params[HOSTILE] ** 2)


@pytest.fixture(scope="module")
def static_page(tmp_path_factory):
    mlp, x, y = mlp_example()
    with ad.using_rule(np.tanh, tanh_wrong_sign):
        dbg = tapeviz.debug(loss, {"mlp": mlp, HOSTILE: np.ones(3)}, x, y)
    dbg.run_checks()
    dbg.first()
    dbg.select(None)
    return dbg, dbg.to_html(tmp_path_factory.mktemp("static") / "debugger.html")


def test_the_page_steps_selects_and_compares_offline(static_page, browser, artifacts):
    dbg, path = static_page
    context, pg, requests, errors = open_offline(browser, path, accept_downloads=True)
    root = pg.locator(".tv-root")
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "0")
    expect(root.locator(".tv-status")).to_contain_text("A static page")
    expect(root.locator(".tv-graph-pane")).to_have_attribute("data-step", "0")
    for k in (1, 2, 3):
        root.locator("button.tv-next").click()
        expect(phase).to_have_attribute("data-step", str(k))
    dbg.step_to(3)
    expect(phase.locator(".tv-phase-text")).to_have_text(dbg.phase_line)      # as the kernel says
    expect(root.locator(".tv-graph-pane")).to_have_attribute("data-step", "3")

    row = root.locator('.tv-listing td.tv-forward .tv-eq[data-eq="1"]')
    row.locator(".tv-n").click()
    expect(phase).to_have_attribute("data-selected", "%8")
    expect(root.locator(".tv-value")).to_have_attribute("data-var", "%8")
    dbg.select("%8")
    partners = sorted(dbg.model.partners()[0])
    expect(root.locator(".tv-listing .tv-eq.tv-partner")).to_have_count(len(partners))

    current = phase.get_attribute("data-current")
    root.locator(f'.tv-graph g.node[id="tvn_{current}"], .tv-graph g.node[id="tvn_eq/{current}"]').first.click()
    expect(phase).to_have_attribute("data-selected", current)
    root.locator("button.tv-zoom-in").click()
    expect(root.locator(".tv-graph-pane")).to_have_attribute("data-scale", "1.250")

    root.locator("button.tv-by-primitive").click()                 # granularity keeps the equation
    expect(phase).to_have_attribute("data-granularity", "primitive")
    dbg.set_granularity("primitive")
    expect(phase).to_have_attribute("data-step", str(dbg.step))

    pick = root.locator(".tv-pick input")
    pick.fill("%9")
    pick.press("Enter")
    expect(phase).to_have_attribute("data-selected", "%9")
    root.locator("button.tv-closure").click()
    panel = root.locator(".tv-closure-panel")
    expect(panel).to_have_attribute("data-instance", "%9")
    expect(panel).to_have_attribute("data-ok", "true")
    expect(panel).to_contain_text("def tanh_wrong_sign(x):")
    pick.fill("%99999")
    pick.press("Enter")
    expect(root.locator(".tv-message")).to_contain_text("is not a variable")

    expect(root.locator(".tv-check-summary [data-ok]")).to_have_attribute("data-ok", "false")
    expect(root.locator("button.tv-check")).to_be_disabled()             # checks need a kernel
    root.locator("button.tv-alert").first.click()
    dbg.jump_to_alert(0)                                                 # the kernel's answer
    expect(phase.locator(".tv-phase-text")).to_have_text(dbg.phase_line)
    expect(phase).to_have_attribute("data-selected", dbg.selected)
    expect(root.locator(".tv-alert.tv-alert-current")).to_have_count(1)

    root.locator("button.tv-export-dot").click()
    with pg.expect_download() as info:
        root.locator(".tv-download a").click()
    assert open(info.value.path(), encoding="utf-8").read().startswith("digraph")
    pg.screenshot(path=str(artifacts / "debugger_static_page.png"), full_page=True)
    assert_offline(path, requests, errors)
    context.close()


def test_the_page_is_self_contained_and_escaped(static_page):
    dbg, path = static_page
    text = path.read_text(encoding="utf-8")
    assert text.count("<script") == 4 and ' src=' not in text and "onclick" not in text
    assert HOSTILE not in text                     # the session is packed; the title escaped
    size = len(text.encode())
    assert 800_000 < size < 2_000_000, size        # Graphviz (815 kB) + the packed session
