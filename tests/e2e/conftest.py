"""Fixtures for the debugger's browser tests: Voila and JupyterLab on loopback, Debian's Chromium.

Adapted from the shared browser-e2e recipe: servers bind 127.0.0.1 on a free port with a fixed
token and private Jupyter config/data/runtime dirs; Chromium is /usr/bin/chromium driven by the
playwright package's bundled driver (never ``playwright install``); every request that is not
loopback is aborted; servers die with pytest (PR_SET_PDEATHSIG) and are stopped by PID. With
``CI`` set, a missing Chromium fails the run instead of skipping it. Screenshots go to
``test-artifacts/`` (gitignored), or ``$E2E_ARTIFACTS``.
"""
from __future__ import annotations

import json
import re
import sys

import pytest

from tests.support.browser import (ARTIFACTS, LOOPBACK, ROOT, TOKEN, UI_TIMEOUT_MS, Server, free_port,
                                   jupyter_env, require_chromium)
from tests.support.debugger_notebook import (FORWARD_NOTEBOOK, MARIMO_APP, NOTEBOOK, make_marimo_app,
                                             make_notebook)

from .front_ends import shown, start_marimo, start_voila

# what a hardened JupyterHub sends: no 'unsafe-inline' for scripts. JupyterLab itself needs
# 'unsafe-eval' (its settings schemas compile to functions) and blob: is how anywidget imports a
# widget's ES module.
STRICT_CSP = ("default-src 'self'; script-src 'self' blob: 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
              "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self' ws: wss:; "
              "frame-ancestors 'self'")


def jupyter_server(tmp_path_factory, app: str, *extra: str) -> Server:
    """``python -m <app>`` (jupyterlab, notebook) on loopback, serving a folder of its own that
    holds the notebook (each server autosaves outputs into what it opens)."""
    require_chromium()
    root = tmp_path_factory.mktemp(f"nbroot-{app}")
    make_notebook(root / NOTEBOOK)
    make_notebook(root / FORWARD_NOTEBOOK, forward=True)
    home = tmp_path_factory.mktemp(f"jupyter-home-{app}")
    port = free_port()
    argv = [sys.executable, "-m", app, "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
            *extra]
    return Server(argv, root, jupyter_env(home), port, home / f"{app}.log", "/api/status").start()


# the settings folder a wheel of tapeviz installs as {sys.prefix}/share/jupyter/lab/settings
# (pyproject's data-files; an editable install skips data files: setuptools issue #3399)
LAB_SETTINGS = ROOT / "share" / "jupyter" / "lab" / "settings"


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """JupyterLab with the settings tapeviz installs (its default: save widget state)."""
    server = jupyter_server(tmp_path_factory, "jupyterlab",
                            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                            f"--LabApp.app_settings_dir={LAB_SETTINGS}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def strict_lab_server(tmp_path_factory):
    """JupyterLab behind a strict Content-Security-Policy."""
    settings = json.dumps({"headers": {"Content-Security-Policy": STRICT_CSP}})
    server = jupyter_server(tmp_path_factory, "jupyterlab",
                            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                            f"--ServerApp.tornado_settings={settings}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def notebook7_server(tmp_path_factory):
    server = jupyter_server(tmp_path_factory, "notebook")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def marimo_server(tmp_path_factory):
    """``marimo run`` of the same program, showing ``mo.ui.anywidget(dbg)``."""
    server = start_marimo(tmp_path_factory, "mlp", make_marimo_app, MARIMO_APP)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def voila_server(tmp_path_factory):
    server = start_voila(tmp_path_factory, "mlp", make_notebook, NOTEBOOK)
    yield server
    server.stop()


ELSEWHERE = re.compile(r"^(?!" + LOOPBACK.pattern.removeprefix("^") + "|data:|blob:)")   # every URL but these


def new_page(browser):
    """A page in a fresh context that may only reach loopback; uncaught JS errors collected."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    # a pattern, not a Python predicate: the browser then intercepts only what it aborts, and
    # loopback requests never wait for the test's thread (a predicate holds every request of the
    # page until the test next calls Playwright, which slows Lab into races a user never sees)
    context.route(ELSEWHERE, lambda route: route.abort())
    pg = context.new_page()
    pg.set_default_timeout(UI_TIMEOUT_MS)
    pg.js_errors = []
    pg.on("pageerror", lambda exc: pg.js_errors.append(f"pageerror: {exc}\n{exc.stack}"))
    return pg


def _keep_failure_screenshot(pg, request):
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            pg.screenshot(path=str(ARTIFACTS / f"FAILED-{request.node.name}.png"), full_page=True)
        except Exception as exc:  # noqa: BLE001
            print("failure screenshot failed:", exc)


@pytest.fixture
def page(browser, request):
    pg = new_page(browser)
    yield pg
    _keep_failure_screenshot(pg, request)
    pg.context.close()


@pytest.fixture(scope="module")
def voila_page(browser, voila_server):
    """The notebook in Voila, loaded once for a module's tests (each load starts a kernel)."""
    pg = new_page(browser)
    shown(pg, voila_server.url("/"), timeout=60_000)
    yield pg
    pg.context.close()


@pytest.fixture
def voila(voila_page, request):
    """The shared Voila page, with a screenshot kept when a test fails."""
    yield voila_page
    _keep_failure_screenshot(voila_page, request)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    setattr(item, f"rep_{rep.when}", rep)
    return rep
