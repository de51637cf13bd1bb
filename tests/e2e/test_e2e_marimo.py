"""The debugger in marimo, shown as ``mo.ui.anywidget(dbg)`` by ``marimo run``: the shared
scenario (marimo draws anywidgets in a shadow root, which Playwright's locators pierce)."""
import pytest
from playwright.sync_api import expect

from tests.support.scenario import KERNEL_TIMEOUT_MS, step_select_zoom_check

pytestmark = pytest.mark.browser


def test_marimo(marimo_server, page, artifacts):
    page.goto(marimo_server.base_url + "/", wait_until="domcontentloaded")
    root = page.locator(".tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    step_select_zoom_check(page, root, artifacts, "marimo")
