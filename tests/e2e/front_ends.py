"""How the browser tests reach the debugger in each front end: a notebook opened and run in
JupyterLab or Notebook 7, a page of Voila or ``marimo run``, and the servers for those two that
show one notebook or app of a test's own. Each returns the debugger's root once it is shown."""
from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path
from typing import Callable

from playwright.sync_api import expect

from tests.support.browser import TOKEN, Server, free_port, jupyter_env, require_chromium
from tests.support.scenario import KERNEL_TIMEOUT_MS

IN_OUTPUT = ".jp-OutputArea-output .tv-root"          # the debugger in a notebook cell's output

WORKSPACES = itertools.count()


def lab_panel(page):
    """The notebook tab Lab shows (Lab reopens earlier tabs too, hidden)."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")


def open_notebook(page, server, name):
    """Open a notebook in a workspace of its own: Lab starts with no other tab (the session's
    server keeps the tabs earlier tests opened in its default workspace, and restores them)."""
    page.goto(server.url(f"/lab/workspaces/test{next(WORKSPACES)}/tree/{name}"), wait_until="domcontentloaded")
    # the status bar says "<kernel> | Idle" once the kernel is really there (the toolbar's idle
    # indicator says so a second too early, and running then opens a "Select Kernel" dialog)
    idle = page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"^(?!No Kernel).+ \| Idle$"))
    expect(idle).to_be_visible(timeout=60_000)
    return lab_panel(page)


def menu(page, name: str, item: str):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{name}$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{item}$")).click()


def run_all_cells(page):
    menu(page, "Run", "Run All Cells")


def lab_debugger(page, server, name):
    """The notebook opened in JupyterLab and run: its debugger's root, once shown (the notebook's
    tab is ``lab_panel(page)``)."""
    panel = open_notebook(page, server, name)
    run_all_cells(page)
    root = panel.locator(IN_OUTPUT)
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    return root


def notebook7_debugger(page, server, name):
    """The notebook opened in Notebook 7 and run: its debugger's root, once shown."""
    page.goto(server.url(f"/notebooks/{name}"), wait_until="domcontentloaded")
    # as in Lab, "idle" shows before the kernel exists: wait for its name too (else running
    # opens a "Select Kernel" dialog)
    expect(page.locator(".jp-KernelName")).to_have_text(re.compile(r"^Python 3"), timeout=60_000)
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status=idle]")).to_be_visible(timeout=60_000)
    run_all_cells(page)
    root = page.locator(IN_OUTPUT)
    expect(root).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    return root


def shown(page, url: str, timeout: float = KERNEL_TIMEOUT_MS):
    """A page of Voila or marimo, which run the program on load: the debugger's root, once shown."""
    page.goto(url, wait_until="domcontentloaded")
    root = page.locator(".tv-root")
    expect(root).to_be_visible(timeout=timeout)
    return root


def start_voila(tmp_path_factory, label: str, make: Callable[[Path], Path], name: str) -> Server:
    """Voila on the notebook ``make(folder / name)`` writes, in a throw-away folder of its own;
    the caller stops it."""
    require_chromium()
    root = tmp_path_factory.mktemp(f"voila-{label}")
    notebook = make(root / name)
    home = tmp_path_factory.mktemp(f"jupyter-home-voila-{label}")
    port = free_port()
    argv = [sys.executable, "-m", "voila", str(notebook), "--no-browser", "--Voila.ip=127.0.0.1", f"--port={port}",
            "--Voila.port_retries=0", f"--token={TOKEN}", "--show_tracebacks=True"]
    # voila's "/" runs the notebook and its /api/status is a 403: poll a static file instead
    return Server(argv, root, jupyter_env(home), port, home / "voila.log", "/voila/static/voila.js").start()


def start_marimo(tmp_path_factory, label: str, make: Callable[[Path], Path], name: str) -> Server:
    """``marimo run`` of the app ``make(folder / name)`` writes, in a throw-away folder of its
    own; the caller stops it."""
    require_chromium()
    root = tmp_path_factory.mktemp(f"marimo-{label}")
    app = make(root / name)
    home = tmp_path_factory.mktemp(f"marimo-home-{label}")
    env = jupyter_env(home)
    env["HOME"] = str(home)                      # marimo keeps its config under HOME
    port = free_port()
    argv = [sys.executable, "-m", "marimo", "run", str(app), "--headless", "--host", "127.0.0.1",
            "--port", str(port), "--no-token"]
    return Server(argv, root, env, port, home / "marimo.log", "/").start()
