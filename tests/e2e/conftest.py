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
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from browser import ARTIFACTS, require_chromium
from debugger_notebook import NOTEBOOK, make_notebook

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "tapeviz-e2e-token"          # fixed: the servers listen on 127.0.0.1 only
SERVER_START_TIMEOUT = 60
SERVER_STOP_TIMEOUT = 15
UI_TIMEOUT_MS = 30_000
LOOPBACK = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost|\[::1\])[:/]")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jupyter_env(home: Path) -> dict[str, str]:
    """Private Jupyter dirs (no state leaks in or out), Lab's news toast off, and this checkout
    first on the kernel's path (so the kernel imports the code under test)."""
    env = os.environ.copy()
    dirs = {"JUPYTER_CONFIG_DIR": home / "config", "JUPYTER_DATA_DIR": home / "data",
            "JUPYTER_RUNTIME_DIR": home / "runtime", "IPYTHONDIR": home / "ipython"}
    for key, path in dirs.items():
        path.mkdir(parents=True, exist_ok=True)
        env[key] = str(path)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    labconfig = dirs["JUPYTER_CONFIG_DIR"] / "labconfig"
    labconfig.mkdir(exist_ok=True)
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    return env


def _die_with_parent() -> None:
    import ctypes
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


class Server:
    """A Jupyter server-like process (jupyter lab, voila) on 127.0.0.1:<port>."""

    def __init__(self, argv, cwd: Path, env, port: int, log: Path, ready_path: str):
        self.argv, self.cwd, self.env, self.port, self.log_path = argv, cwd, env, port, log
        self.ready_path = ready_path          # answers 200 once serving, without starting a kernel
        self.base_url = f"http://127.0.0.1:{port}"
        self.proc = None

    def url(self, path: str = "/") -> str:
        return f"{self.base_url}{path}?token={TOKEN}"

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "<no log>"

    def start(self) -> "Server":
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        url = f"{self.base_url}{self.ready_path}?token={TOKEN}"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                raise RuntimeError(f"{url} -> HTTP {exc.code}:\n{self.log_tail()}") from exc
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise TimeoutError(f"server not ready in {SERVER_START_TIMEOUT}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (the server shuts its kernels down), then SIGKILL what is left, by PID."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            import psutil
            try:
                children = psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                children = []
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(SERVER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            for p in psutil.wait_procs(children, timeout=5)[1]:
                p.kill()
        self._log.close()


@pytest.fixture(scope="session")
def notebook_dir(tmp_path_factory) -> Path:
    """A throw-away folder holding the notebook (Lab autosaves outputs into what it opens)."""
    d = tmp_path_factory.mktemp("nbroot")
    make_notebook(d / NOTEBOOK)
    return d


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory, notebook_dir):
    require_chromium()
    home = tmp_path_factory.mktemp("jupyter-home-lab")
    port = free_port()
    argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={notebook_dir}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    server = Server(argv, notebook_dir, jupyter_env(home), port, home / "jupyter-lab.log",
                    "/api/status").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def voila_server(tmp_path_factory, notebook_dir):
    require_chromium()
    home = tmp_path_factory.mktemp("jupyter-home-voila")
    port = free_port()
    argv = [sys.executable, "-m", "voila", str(notebook_dir / NOTEBOOK), "--no-browser",
            "--Voila.ip=127.0.0.1", f"--port={port}", "--Voila.port_retries=0", f"--token={TOKEN}",
            "--show_tracebacks=True"]
    # voila's "/" runs the notebook and its /api/status is a 403: poll a static file instead
    server = Server(argv, notebook_dir, jupyter_env(home), port, home / "voila.log",
                    "/voila/static/voila.js").start()
    yield server
    server.stop()


def new_page(browser):
    """A page in a fresh context that may only reach loopback; uncaught JS errors collected."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.route(lambda url: not (LOOPBACK.match(url) or url.startswith(("data:", "blob:"))),
                  lambda route: route.abort())
    pg = context.new_page()
    pg.set_default_timeout(UI_TIMEOUT_MS)
    pg.js_errors = []
    pg.on("pageerror", lambda exc: pg.js_errors.append(f"pageerror: {exc}"))
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
    pg.goto(voila_server.url("/"), wait_until="domcontentloaded")
    pg.locator(".tv-root").wait_for(state="visible", timeout=60_000)
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
