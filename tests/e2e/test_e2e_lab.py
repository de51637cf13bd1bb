"""The debugger inside the real JupyterLab frontend: open the notebook, Run All Cells, then the
shared scenario (step, select by clicking, zoom, checks); the forward-mode view; the same under a
strict Content-Security-Policy, where clicks still work and the kernel draws the graph; and
notebooks reopened with no live widget, which show the saved view or the static snapshot: one
saved by Lab itself (the settings tapeviz installs make Lab save widget state), its kernel shut
down, and ones executed headless."""
import json
import re
import subprocess
import sys
import time

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import expect

from tests.support.browser import ROOT
from tests.support.debugger_notebook import FORWARD_NOTEBOOK, NOTEBOOK, make_notebook
from tests.support.scenario import KERNEL_TIMEOUT_MS, rendered, step_select_zoom_check, view_errors

from .front_ends import IN_OUTPUT, lab_debugger, menu, open_notebook, run_all_cells

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

pytestmark = pytest.mark.browser


def test_lab(lab_server, page, artifacts):
    root = lab_debugger(page, lab_server, NOTEBOOK)
    step_select_zoom_check(page, root, artifacts, "lab")


def test_lab_under_a_strict_csp(strict_lab_server, page, artifacts):
    """No inline script may run; and WebAssembly is made unavailable, as a policy without
    'unsafe-eval'/'wasm-unsafe-eval' would (JupyterLab itself needs 'unsafe-eval'), so the kernel's
    dot draws the pane. Clicks on the listing and the graph still select."""
    page.add_init_script("WebAssembly.instantiate = WebAssembly.instantiateStreaming = () => "
                         "Promise.reject(new WebAssembly.CompileError('blocked by the test'));")
    response = page.goto(strict_lab_server.url("/lab"), wait_until="domcontentloaded")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self' blob: 'unsafe-eval';" in policy and "unsafe-inline" not in policy.split("style-src")[0]
    ran = page.evaluate("""() => { const b = document.createElement('button');
        b.setAttribute('onclick', 'window.__inline = true'); document.body.append(b); b.click();
        b.remove(); return window.__inline === true; }""")
    assert not ran, "the policy is not in force: an inline handler ran"
    root = lab_debugger(page, strict_lab_server, NOTEBOOK)
    step_select_zoom_check(page, root, artifacts, "lab_strict_csp", renderer="kernel")


@pytest.fixture(scope="module")
def saved_notebooks(tmp_path_factory, lab_server, monkeypatch_module):
    """The notebook executed headless and saved twice in Lab's folder: trusted with the widget
    state embedded (as Lab's "Save Widget State Automatically" or nbclient write it), and
    untrusted (as a notebook from elsewhere: unsigned) without."""
    monkeypatch_module.setenv("PYTHONPATH", str(ROOT))
    for name, store in (("saved_with_state.ipynb", True), ("saved_untrusted.ipynb", False)):
        path = lab_server.cwd / name
        nb = nbformat.read(make_notebook(path), as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=store,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        nbformat.write(nb, path)
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(lab_server.cwd / "saved_with_state.ipynb")],
                   env=lab_server.env, check=True, capture_output=True)
    return lab_server


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_a_reopened_notebook_with_its_widget_state_shows_the_saved_view(saved_notebooks, page, artifacts):
    panel = open_notebook(page, saved_notebooks, "saved_with_state.ipynb")
    root = panel.locator(IN_OUTPUT)
    expect(root.locator(".tv-phase")).to_have_attribute("data-step", "0", timeout=60_000)
    expect(root.locator(".tv-forward .tv-eq.tv-current")).to_have_count(1)
    expect(root.locator(".tv-status")).to_contain_text("no kernel has answered")
    page.screenshot(path=str(artifacts / "debugger_lab_reopened_state.png"))


def test_a_reopened_untrusted_notebook_shows_the_snapshot(saved_notebooks, page, artifacts):
    panel = open_notebook(page, saved_notebooks, "saved_untrusted.ipynb")
    snapshot = panel.locator(".jp-OutputArea-output .tv-snapshot")
    expect(snapshot).to_be_visible(timeout=60_000)
    expect(snapshot).to_contain_text("forward, step 1 of 40: matmul")
    expect(snapshot).to_contain_text("<TapeDebugger: forward step 1 of 40, 62 equations>: a snapshot")
    expect(snapshot.locator(".tv-forward .tv-eq").first).to_be_visible()
    expect(panel).not_to_contain_text("Error displaying widget")
    expect(panel).not_to_contain_text(".tv-root{")                       # no stylesheet as text
    page.screenshot(path=str(artifacts / "debugger_lab_reopened_snapshot.png"))


def test_lab_forward_view(lab_server, page, artifacts):
    """``tapeviz.debug_jvp`` with tanh's rule of the wrong sign: step into the pushforward
    blocks, select a value beside its tangent, compare its closure and lifted pushforwards, run
    the checks (forward mode against finite differences fails, at tanh)."""
    panel = open_notebook(page, lab_server, FORWARD_NOTEBOOK)
    run_all_cells(page)
    root = panel.locator(IN_OUTPUT)
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    expect(root.locator(".tv-graph-pane")).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    legend = root.locator(".tv-legend")
    expect(legend).to_contain_text("tangent value (forward mode)")
    expect(legend).not_to_contain_text("cotangent")
    expect(root.locator("button.tv-by-pullback")).to_have_text("by pushforward")
    for k in range(1, 8):
        root.locator("button.tv-next").click()
        expect(phase).to_have_attribute("data-step", str(k))
    expect(phase.locator(".tv-phase-text")).to_have_text(
        re.compile(r"^tangent, step 8 of 10: pushforward of %4 \(tanh\)"))
    expect(root.locator(".tv-listing td.tv-backward .tv-eq.tv-current").first).to_be_visible()
    root.locator('.tv-listing td.tv-forward .tv-var[data-var="%4"]').first.click()
    expect(phase).to_have_attribute("data-selected", "%4")
    expect(root.locator('.tv-value .tv-card[data-role="tangent"]')).to_contain_text("tangent value")

    root.locator("button.tv-closure").click()
    closure = root.locator('.tv-closure-panel[data-mode="forward"]')
    expect(closure).to_have_attribute("data-instance", "%4")
    expect(closure).to_have_attribute("data-ok", "true")          # both push through the same wrong rule
    expect(closure).to_contain_text("closure and lifted agree")

    root.locator("button.tv-check").click()
    expect(root.locator(".tv-check-summary [data-ok]")).to_have_attribute("data-ok", "false",
                                                                         timeout=KERNEL_TIMEOUT_MS)
    expect(phase).to_have_attribute("data-checks", "fail")
    expect(phase.locator(".tv-phase-text")).to_contain_text("pushforward of %4 (tanh)")
    expect(root.locator(".tv-alert.tv-alert-fail", has_text="program.jvp")).to_have_count(1)
    expect(root.locator(".tv-backward .tv-badge.tv-fail").first).to_be_visible()
    root.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "debugger_lab_forward.png"))
    assert not view_errors(page), view_errors(page)


def until(page, condition, what: str, seconds: float = 60):
    """Poll a condition outside the page (a file on disk, the server's REST API), waiting with
    the page's clock (Playwright serves the page's events meanwhile)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        page.wait_for_timeout(250)


def test_a_notebook_saved_in_lab_reopens_with_the_debugger(lab_server, page, artifacts):
    """Run the cell, step once, save with Lab's menu: the settings tapeviz installs make Lab embed
    the widget state; shut the kernel down and load Lab afresh (no widget model in memory, a new
    kernel that never ran the cell): the debugger is there at the saved step, from the embedded
    state, not Lab's "Error displaying widget: model not found"."""
    name = "saved_in_lab.ipynb"
    path = make_notebook(lab_server.cwd / name)
    panel = open_notebook(page, lab_server, name)
    run_all_cells(page)
    root = panel.locator(IN_OUTPUT)
    rendered(root)
    root.locator("button.tv-next").click()
    expect(root.locator(".tv-phase")).to_have_attribute("data-step", "1")
    expect(root.locator(".tv-phase")).to_have_attribute("data-confirmed", "true")
    menu(page, "File", "Save Notebook")

    def saved_state():
        state = json.loads(path.read_text()).get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {})
        frames = [m["state"].get("_frame") for m in state.get("state", {}).values()]
        return any(f and f["step"]["index"] == 1 for f in frames)
    until(page, saved_state, "Lab to save the widget state at step 2")
    menu(page, "Kernel", "Shut Down Kernel")
    accept = page.locator(".jp-Dialog .jp-mod-accept")
    if accept.count():
        accept.click()

    def shut_down():
        sessions = page.request.get(lab_server.url("/api/sessions")).json()
        return not any(s["path"].endswith(name) and s.get("kernel") for s in sessions)
    until(page, shut_down, "the notebook's kernel to shut down")

    panel = open_notebook(page, lab_server, name)                 # Lab loaded afresh
    root = panel.locator(IN_OUTPUT)
    expect(root.locator(".tv-phase")).to_have_attribute("data-step", "1", timeout=60_000)
    expect(root.locator(".tv-phase .tv-phase-text")).to_have_text(re.compile(r"^forward, step 2 of \d+"))
    expect(root.locator(".tv-forward .tv-eq.tv-current")).to_have_count(1)
    expect(root.locator(".tv-status")).to_contain_text("no kernel has answered")
    expect(panel).not_to_contain_text("Error displaying widget")
    page.screenshot(path=str(artifacts / "debugger_lab_saved_in_lab.png"))
