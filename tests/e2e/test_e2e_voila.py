"""The debugger in a real browser, served by Voila: stepping, selecting by clicking, the graph
pane, checks with badges and alerts, export; every action round-trips browser -> kernel ->
browser. Assertions read the DOM (phase text, data-* attributes, badges), never sleep."""
import re

import pytest
from playwright.sync_api import expect

from debugger_notebook import HOSTILE

pytestmark = pytest.mark.browser


def phase(pg):
    return pg.locator(".tv-root .tv-phase")


def test_steps_forward_and_back(voila, artifacts):
    pg = voila
    expect(phase(pg)).to_have_attribute("data-step", "0")
    expect(phase(pg)).to_contain_text(re.compile(r"forward, step 1 of \d+: matmul \u2192 %7"))
    first = phase(pg).get_attribute("data-current")
    expect(pg.locator(".tv-forward .tv-eq.tv-current")).to_have_count(1)
    expect(pg.locator(".tv-graph svg")).to_have_count(1)
    pg.screenshot(path=str(artifacts / "debugger_voila_start.png"))

    pg.locator("button.tv-next").click()
    expect(phase(pg)).to_have_attribute("data-step", "1")
    expect(phase(pg)).not_to_have_attribute("data-current", first)
    expect(pg.locator(".tv-graph .tv-graph-pane")).to_have_attribute("data-step", "1")
    expect(pg.locator(".tv-graph svg")).to_have_count(1)

    pg.locator("button.tv-prev").click()
    expect(phase(pg)).to_have_attribute("data-step", "0")
    expect(phase(pg)).to_have_attribute("data-current", first)

    pg.locator("button.tv-last").click()
    expect(phase(pg)).to_have_attribute("data-phase", "backward")
    expect(phase(pg)).to_contain_text("pullback of %7 (matmul)")
    expect(pg.locator(".tv-backward .tv-eq.tv-current").first).to_be_visible()
    pg.screenshot(path=str(artifacts / "debugger_voila_last_step.png"))
    assert not pg.js_errors, pg.js_errors


def test_hostile_names_are_text(voila):
    pg = voila
    label = pg.locator(".tv-listing .tv-input .tv-label", has_text=HOSTILE)
    expect(label).to_have_count(1)
    expect(label).to_have_text(f"params[{HOSTILE!r}]")


def test_click_a_variable_selects_it(voila):
    pg = voila
    pg.locator("button.tv-first").click()
    expect(phase(pg)).to_have_attribute("data-step", "0")
    target = pg.locator('.tv-listing td.tv-forward .tv-var[data-var="%9"]').first
    target.click()
    expect(phase(pg)).to_have_attribute("data-selected", "%9")
    expect(pg.locator(".tv-value-w .tv-value")).to_have_attribute("data-var", "%9")
    expect(pg.locator(".tv-backward .tv-eq.tv-partner").first).to_be_visible()


def test_the_current_line_scrolls_into_view(voila):
    pg = voila
    pick = pg.locator(".tv-pick input")
    pick.fill("%55")                                   # a pullback far down the listing
    pick.press("Enter")
    expect(phase(pg)).to_have_attribute("data-selected", "%55")
    pg.locator("button.tv-goto").click()
    expect(phase(pg)).to_have_attribute("data-phase", "backward")
    expect(pg.locator(".tv-listing .tv-eq.tv-current").first).to_be_in_viewport()


def test_checks_badge_the_culprit_and_jump(voila, artifacts):
    pg = voila
    pg.locator("button.tv-check").click()
    expect(pg.locator(".tv-check-summary [data-ok]")).to_have_attribute("data-ok", "false")
    expect(phase(pg)).to_have_attribute("data-checks", "fail")
    # the wrong tanh rule: the cursor lands on its pullback block, badges on both sides
    expect(phase(pg)).to_contain_text(re.compile(r"backward, step \d+ of \d+: pullback of %9 \(tanh\)"))
    expect(pg.locator(".tv-forward .tv-badge.tv-fail").first).to_be_visible()
    expect(pg.locator(".tv-backward .tv-badge.tv-fail").first).to_be_visible()
    expect(pg.locator("button.tv-alert.tv-alert-fail").first).to_contain_text("\u2717")
    pg.screenshot(path=str(artifacts / "debugger_voila_checks.png"))

    pg.locator("button.tv-closure").click()
    panel = pg.locator(".tv-closure-w .tv-closure-panel")
    expect(panel).to_have_attribute("data-instance", "%9")
    expect(panel).to_have_attribute("data-ok", "true")        # closure and lifted agree (both wrong)
    pg.set_viewport_size({"width": 1400, "height": 2200})      # Voila scrolls inside its body
    pg.screenshot(path=str(artifacts / "debugger_voila_full.png"))
    pg.set_viewport_size({"width": 1400, "height": 900})

    pg.locator("button.tv-first").click()
    expect(phase(pg)).to_have_attribute("data-step", "0")
    pg.locator("button.tv-alert").last.click()                    # an alert jumps back
    expect(phase(pg)).to_contain_text("pullback of %9 (tanh)")
    assert not pg.js_errors, pg.js_errors


def test_export_offers_a_download(voila):
    pg = voila
    pg.locator("button.tv-export-svg").click()
    link = pg.locator(".tv-download a.tv-download-link")
    expect(link).to_have_attribute("href", re.compile(r"^data:image/svg\+xml;base64,"))
    expect(link).to_have_attribute("download", re.compile(r"^tape-step-\d+\.svg$"))


def test_play_then_pause_redraws_the_graph(voila):
    pg = voila
    pg.locator("button.tv-first").click()
    expect(phase(pg)).to_have_attribute("data-step", "0")
    play_pause = pg.locator(".tv-play button").first
    play_pause.click()
    expect(phase(pg)).to_have_attribute("data-step", "2", timeout=15_000)     # it steps by itself
    play_pause.click()
    # paused: the graph pane (deferred while playing) catches up with the cursor
    pg.wait_for_function("""() => {
        const p = document.querySelector('.tv-root .tv-phase');
        const g = document.querySelector('.tv-root .tv-graph-pane');
        return p && g && +p.dataset.step >= 2 && p.dataset.step === g.dataset.step; }""")
    assert not pg.js_errors, pg.js_errors
