"""The outline pane and stepping by call on the 40-step RNN (``rnn_loss``: one ``cell`` call per
step), in JupyterLab, Notebook 7, Voila and marimo: the shared scenario (``outline_step_by_call``:
expand ``cell x40``, click ``cell#17``, step out and over calls in the forward and the backward
pass, a breakpoint on a call and on an equation, continue to it, forwards and backwards); and a
static page, where the outline shows (read only, the cursor's call highlighted at every step) and
the buttons that need a kernel are disabled, saying why."""
import re
import sys

import pytest
from playwright.sync_api import expect

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tests.support.browser import TOKEN, Server, assert_offline, free_port, jupyter_env, open_offline, require_chromium
from tests.support.debugger_notebook import OUTLINE_NOTEBOOK, make_rnn_marimo_app, make_rnn_notebook
from tests.support.scenario import KERNEL_TIMEOUT_MS, CURSOR, outline_row, outline_step_by_call

from .test_e2e_lab import open_notebook, run_all_cells

pytestmark = pytest.mark.browser

NAV_BUTTONS = ("step-into", "step-over", "step-out", "reverse", "cont", "nonfinite", "failure")


def test_lab_outline(lab_server, page, artifacts):
    make_rnn_notebook(lab_server.cwd / OUTLINE_NOTEBOOK)
    panel = open_notebook(page, lab_server, OUTLINE_NOTEBOOK)
    run_all_cells(page)
    root = panel.locator(".jp-OutputArea-output .tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    outline_step_by_call(page, root, artifacts, "lab")


def test_notebook7_outline(notebook7_server, page, artifacts):
    make_rnn_notebook(notebook7_server.cwd / OUTLINE_NOTEBOOK)
    page.goto(notebook7_server.url(f"/notebooks/{OUTLINE_NOTEBOOK}"), wait_until="domcontentloaded")
    expect(page.locator(".jp-KernelName")).to_have_text(re.compile(r"^Python 3"), timeout=60_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status=idle]")).to_be_visible(timeout=60_000)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    root = page.locator(".jp-OutputArea-output .tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    outline_step_by_call(page, root, artifacts, "notebook7")


@pytest.fixture(scope="module")
def rnn_voila(tmp_path_factory):
    """Voila on the RNN's notebook (the shared Voila server shows the MLP's)."""
    require_chromium()
    root = tmp_path_factory.mktemp("voila-rnn")
    notebook = make_rnn_notebook(root / OUTLINE_NOTEBOOK)
    home = tmp_path_factory.mktemp("jupyter-home-voila-rnn")
    port = free_port()
    argv = [sys.executable, "-m", "voila", str(notebook), "--no-browser", "--Voila.ip=127.0.0.1", f"--port={port}",
            "--Voila.port_retries=0", f"--token={TOKEN}", "--show_tracebacks=True"]
    server = Server(argv, root, jupyter_env(home), port, home / "voila.log", "/voila/static/voila.js").start()
    yield server
    server.stop()


def test_voila_outline(rnn_voila, page, artifacts):
    page.goto(rnn_voila.url("/"), wait_until="domcontentloaded")
    root = page.locator(".tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    outline_step_by_call(page, root, artifacts, "voila")


@pytest.fixture(scope="module")
def rnn_marimo(tmp_path_factory):
    """``marimo run`` of the RNN's debugger, shown as ``mo.ui.anywidget(dbg)``."""
    require_chromium()
    root = tmp_path_factory.mktemp("marimo-rnn")
    app = make_rnn_marimo_app(root / "rnn_app.py")
    home = tmp_path_factory.mktemp("marimo-home-rnn")
    env = jupyter_env(home)
    env["HOME"] = str(home)
    port = free_port()
    argv = [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1",
            "--port", str(port), "--no-token"]
    server = Server(argv, root, env, port, home / "marimo.log", "/").start()
    yield server
    server.stop()


def test_marimo_outline(rnn_marimo, page, artifacts):
    page.goto(rnn_marimo.base_url + "/", wait_until="domcontentloaded")
    root = page.locator(".tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    outline_step_by_call(page, root, artifacts, "marimo")


def test_static_page_shows_the_outline_read_only(browser, artifacts, tmp_path):
    dbg = tapeviz.debug(rnn_loss, *rnn_example(steps=6))      # a page of the 40 steps is too large yet
    path = dbg.to_html(tmp_path / "rnn.html")
    context, pg, requests, errors = open_offline(browser, path)
    root = pg.locator(".tv-root")
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "0")
    for name in NAV_BUTTONS:
        button = root.locator(f"button.tv-{name}")
        expect(button).to_be_disabled()
        expect(button).to_have_attribute("title", re.compile("need a running kernel"))
    group = root.locator('.tv-outline .tv-ol-row[data-kind="group"][data-path="cell"]')
    expect(group).to_contain_text("cell \u00d76")
    expect(root.locator(".tv-outline-h")).to_contain_text("read only")
    group.click()                                               # expanding needs no kernel
    expect(root.locator('.tv-outline .tv-ol-row[data-path^="cell#"]')).to_have_count(6)
    for k in range(1, 6):
        root.locator("button.tv-next").click()
        expect(phase).to_have_attribute("data-step", str(k))
    dbg.step_to(5)
    assert dbg.scope == ("cell#1",)
    expect(phase).to_have_attribute("data-scope", "cell#1")    # each embedded step carries its scope
    expect(outline_row(root, "cell#1")).to_have_class(CURSOR)
    outline_row(root, "cell#3").locator(".tv-ol-name").click()  # read only: the cursor stays
    root.locator(".tv-listing .tv-eq.tv-current .tv-gutter").first.click()
    expect(root.locator(".tv-listing .tv-eq.tv-bp")).to_have_count(0)
    expect(phase).to_have_attribute("data-step", "5")
    pg.screenshot(path=str(artifacts / "outline_static_page.png"), full_page=True)
    assert_offline(path, requests, errors)
    context.close()
