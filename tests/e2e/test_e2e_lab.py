"""The debugger inside the real JupyterLab frontend: open the notebook, Run All Cells, then the
shared scenario (step, select by clicking, zoom, checks); the same under a strict
Content-Security-Policy, where clicks still work and the kernel draws the graph; and notebooks
reopened with no live widget, which show the saved view or the static snapshot."""
import re
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import expect

from browser import ROOT
from debugger_notebook import NOTEBOOK, make_notebook
from scenario import KERNEL_TIMEOUT_MS, step_select_zoom_check

pytestmark = pytest.mark.browser


def open_notebook(page, server, name, path="lab/tree"):
    page.goto(server.url(f"/{path}/{name}"), wait_until="domcontentloaded")
    # the status bar says "<kernel> | Idle" once the kernel is really there (the toolbar's idle
    # indicator says so a second too early, and running then opens a "Select Kernel" dialog)
    idle = page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"^(?!No Kernel).+ \| Idle$"))
    expect(idle).to_be_visible(timeout=60_000)
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")   # Lab reopens earlier tabs too


def run_all_cells(page):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def test_lab(lab_server, page, artifacts):
    panel = open_notebook(page, lab_server, NOTEBOOK)
    run_all_cells(page)
    root = panel.locator(".jp-OutputArea-output .tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
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
    panel = open_notebook(page, strict_lab_server, NOTEBOOK)
    run_all_cells(page)
    root = panel.locator(".jp-OutputArea-output .tv-root")
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
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
    root = panel.locator(".jp-OutputArea-output .tv-root")
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
