"""The debugger in a real browser, served by Voila: the shared scenario, then what it leaves out:
escaped names, the current line scrolled into view, the closure panel, alerts, export, play.
Every action round-trips browser -> kernel -> browser; assertions read the DOM, never sleep."""
import re

import pytest
from playwright.sync_api import expect

from tests.support.debugger_notebook import HOSTILE
from tests.support.scenario import step_select_zoom_check, view_errors

pytestmark = pytest.mark.browser


def phase(pg):
    return pg.locator(".tv-root .tv-phase")


def test_voila(voila, artifacts):
    step_select_zoom_check(voila, voila.locator(".tv-root"), artifacts, "voila")


def test_hostile_names_are_text(voila):
    label = voila.locator(".tv-listing .tv-input .tv-label", has_text=HOSTILE)
    expect(label).to_have_count(1)
    expect(label).to_have_text(f"params[{HOSTILE!r}]")


def test_the_current_line_scrolls_into_view(voila):
    pg = voila
    pick = pg.locator(".tv-pick input")
    pick.fill("%55")                                   # a pullback far down the listing
    pick.press("Enter")
    expect(phase(pg)).to_have_attribute("data-selected", "%55")
    pg.locator("button.tv-first").click()
    expect(phase(pg)).to_have_attribute("data-step", "0")
    pg.locator("button.tv-goto").click()
    expect(phase(pg)).to_have_attribute("data-phase", "backward")
    expect(pg.locator(".tv-listing .tv-eq.tv-current").first).to_be_in_viewport()


def test_closure_panel_and_alerts(voila, artifacts):
    pg = voila                                          # the scenario ran the checks
    pg.locator("button.tv-alert").first.click()        # an alert jumps to the culprit
    expect(phase(pg)).to_contain_text("pullback of %9 (tanh)")
    expect(phase(pg)).to_have_attribute("data-selected", "%9")
    pg.locator("button.tv-closure").click()
    panel = pg.locator(".tv-closure-w .tv-closure-panel")
    expect(panel).to_have_attribute("data-instance", "%9")
    expect(panel).to_have_attribute("data-ok", "true")        # closure and lifted agree (both wrong)
    expect(panel).to_contain_text("def tanh_wrong_sign(x):")
    pg.set_viewport_size({"width": 1400, "height": 2200})      # Voila scrolls inside its body
    pg.screenshot(path=str(artifacts / "debugger_voila_full.png"))
    pg.set_viewport_size({"width": 1400, "height": 900})
    pg.locator("button.tv-closure").click()
    expect(pg.locator(".tv-closure-w")).to_be_hidden()
    assert not pg.js_errors and not view_errors(pg), pg.js_errors


def test_export_offers_a_download(voila):
    pg = voila
    pg.locator("button.tv-export-svg").click()
    link = pg.locator(".tv-download a.tv-download-link")
    expect(link).to_have_attribute("download", re.compile(r"^tape-step-\d+\.svg$"))
    with pg.expect_download() as info:
        link.click()
    text = open(info.value.path(), encoding="utf-8").read()
    assert "<svg" in text and "&lt;b&gt;" not in text.split("<svg", 1)[0]


def test_play_steps_by_itself_and_pauses(voila):
    pg = voila
    pg.locator("button.tv-first").click()
    expect(phase(pg)).to_have_attribute("data-step", "0")
    play = pg.locator("button.tv-play")
    play.click()
    expect(phase(pg)).to_have_attribute("data-step", "2", timeout=15_000)     # it steps by itself
    play.click()
    expect(play).to_have_attribute("aria-pressed", "false")
    step = phase(pg).get_attribute("data-step")
    # paused: the graph pane catches up with the cursor and the cursor stays
    expect(pg.locator(".tv-graph-pane")).to_have_attribute("data-step", step)
    expect(phase(pg)).to_have_attribute("data-step", step)
    assert not pg.js_errors and not view_errors(pg), pg.js_errors
