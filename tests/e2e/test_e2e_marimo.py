"""The debugger in marimo, shown as ``mo.ui.anywidget(dbg)`` by ``marimo run``: the shared
scenario (marimo draws anywidgets in a shadow root, which Playwright's locators pierce)."""
import pytest

from tests.support.scenario import step_select_zoom_check

from .front_ends import shown

pytestmark = pytest.mark.browser


def test_marimo(marimo_server, page, artifacts):
    root = shown(page, marimo_server.base_url + "/")
    step_select_zoom_check(page, root, artifacts, "marimo")
