"""The debugger inside the real JupyterLab frontend: open the notebook, Run All Cells, step with
next and previous, run the checks, and see the DOM change (phase text, data-current, badges)."""
import re

import pytest
from playwright.sync_api import expect

from debugger_notebook import NOTEBOOK

pytestmark = pytest.mark.browser


def open_notebook(page, server, name):
    page.goto(server.url(f"/lab/tree/{name}"), wait_until="domcontentloaded")
    # the status bar says "<kernel> | Idle" once the kernel is really there (the toolbar's idle
    # indicator says so a second too early, and running then opens a "Select Kernel" dialog)
    idle = page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"^(?!No Kernel).+ \| Idle$"))
    expect(idle).to_be_visible(timeout=60_000)
    return page.locator(".jp-NotebookPanel")


def run_all_cells(page):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def test_lab_step_and_check(lab_server, page, artifacts):
    panel = open_notebook(page, lab_server, NOTEBOOK)
    run_all_cells(page)
    root = panel.locator(".jp-OutputArea-output .tv-root")
    expect(root).to_be_visible(timeout=60_000)
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "0")
    first = phase.get_attribute("data-current")

    root.locator("button.tv-next").click()
    expect(phase).to_have_attribute("data-step", "1")
    expect(phase).to_contain_text(re.compile(r"forward, step 2 of \d+"))
    expect(phase).not_to_have_attribute("data-current", first)
    root.locator("button.tv-prev").click()
    expect(phase).to_have_attribute("data-current", first)

    expect(root.locator(".tv-badge")).to_have_count(0)
    root.locator("button.tv-check").click()
    expect(phase).to_have_attribute("data-checks", "fail", timeout=60_000)
    expect(root.locator(".tv-forward .tv-badge.tv-fail").first).to_be_visible()
    expect(root.locator(".tv-backward .tv-badge.tv-fail").first).to_be_visible()
    expect(phase).to_contain_text("(tanh)")

    root.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "debugger_lab.png"))
    assert not page.js_errors, page.js_errors
