"""The debugger's keyboard shortcuts (``KEYS`` in static/debugger.js) drive it while it has
focus: in JupyterLab and Notebook 7, whose notebook shortcuts in command mode (``b`` inserts a
cell, ``c`` copies one, ``i i`` interrupts, arrows move between cells) are the risk: none fires
while the debugger has focus, and they work again once the focus leaves it; and on a static
page, with no kernel and no network. ``dbg``, the same program in this process, says where each
key must land and what the view must say."""
import re

import pytest
from playwright.sync_api import expect

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tests.support.browser import assert_offline, open_offline
from tests.support.debugger_notebook import make_rnn_notebook
from tests.support.scenario import KERNEL_TIMEOUT_MS, at, view_errors

from .front_ends import lab_debugger, lab_panel, notebook7_debugger

pytestmark = pytest.mark.browser


def drive_with_keys(pg, root, artifacts, name: str) -> None:
    """Focus the debugger with a click, then step with the keyboard only: next, last, first, step
    over, into and out of calls, backwards with Shift, a breakpoint at the cursor and continue to
    it; the key list opens with ``?``; every button's title names its key."""
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator("button.tv-step-over")).to_have_attribute("title", re.compile(r"key o$"))
    expect(root.locator("button.tv-next")).to_have_attribute("title", "next step \u2014 key \u2192")
    phase.locator(".tv-phase-text").click()                     # a click in the debugger gives it focus
    expect(root).to_be_focused()
    keys = pg.keyboard
    for key, move in [("ArrowRight", dbg.next), ("ArrowRight", dbg.next), ("End", dbg.last), ("Home", dbg.first),
                      ("o", dbg.step_over), ("Shift+O", lambda: dbg.step_over(reverse=True)),
                      ("i", dbg.step_into), ("i", dbg.step_into), ("u", dbg.step_out), ("ArrowLeft", dbg.prev),
                      ("Shift+I", lambda: dbg.step_into(reverse=True))]:
        keys.press(key)
        move()
        at(root, dbg)
    assert dbg.step > 0 and dbg.scope != ()                     # inside a call, not at the start
    keys.press("b")                                             # a breakpoint at the cursor
    dbg.breakpoints.add(dbg.current)
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_text(f"\u25cf {dbg.current} \u00d7")
    for key, move in [("Home", dbg.first), ("c", dbg.cont), ("c", dbg.cont), ("End", dbg.last),
                      ("Shift+C", lambda: dbg.cont(reverse=True))]:
        keys.press(key)
        move()
        at(root, dbg)
    assert dbg.message == f"breakpoint {dbg.current}"
    keys.press("?")
    expect(root.locator("details.tv-keys")).to_have_attribute("open", "")
    expect(root.locator("details.tv-keys dl")).to_contain_text("step into / over / out of a call")
    root.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"keys_{name}.png"))
    keys.press("?")
    expect(root.locator("details.tv-keys")).not_to_have_attribute("open", "")
    keys.press("b")                                             # cleared again
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_count(0)


def jupyter_keys_still_work(pg, notebook, root) -> None:
    """The debugger's keys fired no notebook command (its cells are the two it had); with the
    focus on a cell, ``b`` is Jupyter's again (a cell inserted) and the debugger does not move."""
    cells = notebook.locator(".jp-Cell")
    expect(cells).to_have_count(2)
    step = root.locator(".tv-phase").get_attribute("data-step")
    notebook.locator(".jp-MarkdownCell .jp-InputPrompt").first.click()    # command mode, that cell active
    expect(root).not_to_be_focused()
    pg.keyboard.press("b")
    expect(cells).to_have_count(3)
    pg.keyboard.press("ArrowRight")
    expect(root.locator(".tv-phase")).to_have_attribute("data-step", step)
    assert not view_errors(pg), view_errors(pg)


def test_lab_keys(lab_server, page, artifacts):
    make_rnn_notebook(lab_server.cwd / "keys_rnn.ipynb")
    root = lab_debugger(page, lab_server, "keys_rnn.ipynb")
    drive_with_keys(page, root, artifacts, "lab")
    jupyter_keys_still_work(page, lab_panel(page), root)


def test_notebook7_keys(notebook7_server, page, artifacts):
    make_rnn_notebook(notebook7_server.cwd / "keys_rnn.ipynb")
    root = notebook7_debugger(page, notebook7_server, "keys_rnn.ipynb")
    drive_with_keys(page, root, artifacts, "notebook7")
    jupyter_keys_still_work(page, page.locator(".jp-Notebook"), root)


def test_static_page_keys(browser, artifacts, tmp_path):
    path = tapeviz.debug(rnn_loss, *rnn_example()).to_html(tmp_path / "rnn.html")
    context, pg, requests, errors = open_offline(browser, path)
    drive_with_keys(pg, pg.locator(".tv-root"), artifacts, "static_page")
    assert_offline(path, requests, errors)
    context.close()
