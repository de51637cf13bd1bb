"""The outline pane and stepping by call on the 40-step RNN (``rnn_loss``: one ``cell`` call per
step), in JupyterLab, Notebook 7, Voila and marimo: the shared scenario (``outline_step_by_call``:
expand ``cell x40``, click ``cell#17``, step out and over calls in the forward and the backward
pass, a breakpoint on a call and on an equation, continue to it, forwards and backwards); and a
static page, which does the same with no kernel (``test_static_page_steps_by_call_offline``)."""
import re

import pytest
from playwright.sync_api import expect

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tests.support.browser import assert_offline, open_offline
from tests.support.debugger_notebook import OUTLINE_NOTEBOOK, make_rnn_marimo_app, make_rnn_notebook
from tests.support.scenario import CURSOR, at, outline_row, outline_step_by_call

from .front_ends import lab_debugger, notebook7_debugger, shown, start_marimo, start_voila

pytestmark = pytest.mark.browser

NAV_BUTTONS = ("step-into", "step-over", "step-out", "reverse", "cont", "nonfinite", "failure")


def test_lab_outline(lab_server, page, artifacts):
    make_rnn_notebook(lab_server.cwd / OUTLINE_NOTEBOOK)
    root = lab_debugger(page, lab_server, OUTLINE_NOTEBOOK)
    outline_step_by_call(page, root, artifacts, "lab")


def test_notebook7_outline(notebook7_server, page, artifacts):
    make_rnn_notebook(notebook7_server.cwd / OUTLINE_NOTEBOOK)
    root = notebook7_debugger(page, notebook7_server, OUTLINE_NOTEBOOK)
    outline_step_by_call(page, root, artifacts, "notebook7")


@pytest.fixture(scope="module")
def rnn_voila(tmp_path_factory):
    """Voila on the RNN's notebook (the shared Voila server shows the MLP's)."""
    server = start_voila(tmp_path_factory, "rnn", make_rnn_notebook, OUTLINE_NOTEBOOK)
    yield server
    server.stop()


def test_voila_outline(rnn_voila, page, artifacts):
    root = shown(page, rnn_voila.url("/"))
    outline_step_by_call(page, root, artifacts, "voila")


@pytest.fixture(scope="module")
def rnn_marimo(tmp_path_factory):
    """``marimo run`` of the RNN's debugger, shown as ``mo.ui.anywidget(dbg)``."""
    server = start_marimo(tmp_path_factory, "rnn", make_rnn_marimo_app, "rnn_app.py")
    yield server
    server.stop()


def test_marimo_outline(rnn_marimo, page, artifacts):
    root = shown(page, rnn_marimo.base_url + "/")
    outline_step_by_call(page, root, artifacts, "marimo")


def test_static_page_steps_by_call_offline(browser, artifacts, tmp_path):
    """The page of the 40-step RNN, with no kernel: the outline goes to a call, step out of it and
    over the next one in the forward pass; a breakpoint on the call from the outline, continued
    to (its pullback); over and out in the backward pass, backwards with Shift; a breakpoint from
    the gutter, cleared from its chip; continue backwards with the toggle. ``dbg``, the same
    program in this process, says where each move lands and what it says."""
    dbg = tapeviz.debug(rnn_loss, *rnn_example())
    path = dbg.to_html(tmp_path / "rnn.html")
    context, pg, requests, errors = open_offline(browser, path)
    root = pg.locator(".tv-root")
    phase = root.locator(".tv-phase")
    outline = root.locator(".tv-outline")
    expect(phase).to_have_attribute("data-step", "0", timeout=60_000)
    for name in NAV_BUTTONS:
        expect(root.locator(f"button.tv-{name}")).to_be_enabled()
    expect(root.locator(".tv-outline-h")).to_contain_text("click one to go there")
    group = outline.locator('.tv-ol-row[data-kind="group"][data-path="cell"]')
    expect(group).to_contain_text("cell \u00d740")
    group.click()
    expect(outline.locator('.tv-ol-row[data-path^="cell#"]')).to_have_count(40)
    row17 = outline_row(root, "cell#17")
    row17.locator(".tv-ol-name").click()                                           # run to cell#17
    dbg.run_to(("cell#17",))
    at(root, dbg)
    expect(row17).to_have_class(CURSOR)

    root.locator("button.tv-step-out").click()                                     # forward: out of cell#17
    dbg.step_out()
    at(root, dbg)
    root.locator("button.tv-step-over").click()                                    # over cell#18, whole
    before = dbg.step
    dbg.step_over()
    assert dbg.step - before > 1 and dbg.scope == ()
    at(root, dbg)

    row17.locator(".tv-ol-bp").click()                                             # a breakpoint on cell#17
    expect(row17).to_have_class(re.compile(r"\btv-ol-has-bp\b"))
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_text("\u25cf cell#17 \u00d7")
    dbg.breakpoints.add(("cell#17",))
    root.locator("button.tv-cont").click()                                         # to its pullback
    dbg.cont()
    assert dbg.model.step.phase == "backward" and dbg.message == "breakpoint cell#17"
    at(root, dbg)
    expect(row17).to_have_class(CURSOR)

    for move in ("step_over", "step_out", "step_over"):                            # backward: within,
        root.locator(f"button.tv-{move.replace('_', '-')}").click()                # out, over cell#16's
        getattr(dbg, move)()
        at(root, dbg)
    assert dbg.scope == () and dbg.model.step.phase == "backward"
    root.locator("button.tv-step-over").click(modifiers=["Shift"])                 # backwards, over it again
    dbg.step_over(reverse=True)
    at(root, dbg)

    line = root.locator(".tv-listing td.tv-backward .tv-eq.tv-current").first      # the gutter
    var = line.get_attribute("data-var")
    line.locator(".tv-gutter").click()
    expect(line).to_have_class(re.compile(r"\btv-bp\b"))
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_count(2)
    dbg.breakpoints.add(var)
    root.locator("button.tv-step-into").click()
    dbg.step_into()
    root.locator("button.tv-reverse").click()                                      # the toggle: backwards
    root.locator("button.tv-cont").click()
    dbg.cont(reverse=True)
    assert dbg.message == f"breakpoint {var}"
    at(root, dbg)
    root.locator("button.tv-cont").click()                                         # then cell#17's pullback
    dbg.cont(reverse=True)
    at(root, dbg)
    root.locator("button.tv-reverse").click()
    root.locator("button.tv-nonfinite").click()
    dbg.run_to_nonfinite(from_cursor=True)
    at(root, dbg)                                                                  # "no NaN or Inf after this step"
    pg.screenshot(path=str(artifacts / "outline_static_page.png"), full_page=True)
    root.locator(".tv-breakpoints .tv-bp-chip", has_text=re.compile(rf"^\u25cf {re.escape(var)} \u00d7$")).click()
    expect(line).not_to_have_class(re.compile(r"\btv-bp\b"))
    expect(root.locator(".tv-breakpoints .tv-bp-chip")).to_have_count(1)
    assert_offline(path, requests, errors)
    context.close()
