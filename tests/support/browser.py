"""Debian's Chromium for the browser tests (tests/e2e, tests/notebooks) and the widget benchmark,
driven by the playwright package's bundled driver: never ``playwright install``. One playwright
instance serves the whole session: a second sync instance in the same thread is refused by
playwright. Also the servers those tests open pages on (JupyterLab, Notebook 7, Voila, marimo),
on 127.0.0.1 with a fixed token and private Jupyter dirs, stopped by PID."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from tests.support import ROOT

ARTIFACTS = Path(os.environ.get("E2E_ARTIFACTS", ROOT / "test-artifacts"))
CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run",
                 "--disable-sync", "--disable-extensions"]


def require_chromium() -> None:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        message = f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)          # in CI a missing browser is a failure, never a skip
        pytest.skip(message)


def launch():
    """(playwright, browser); the caller stops both."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        return pw, pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
                                      timeout=60_000)
    except Exception:
        pw.stop()
        raise


TOKEN = "tapeviz-e2e-token"          # fixed: the servers listen on 127.0.0.1 only
SERVER_START_TIMEOUT = 60
SERVER_STOP_TIMEOUT = 15
UI_TIMEOUT_MS = 30_000
LOOPBACK = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost|\[::1\])[:/]")


def open_offline(browser, path: Path, **context_options):
    """A static page opened from file://, recording every request and uncaught page error:
    ``(context, page, requests, errors)``. Check it with ``assert_offline``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, **context_options)
    requests, errors = [], []
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    return context, page, requests, errors


def assert_offline(path: Path, requests: list, errors: list) -> None:
    """The page raised nothing and asked for nothing but itself and its own blob: scripts."""
    assert not errors, errors
    assert [u for u in requests if not u.startswith("blob:")] == [path.as_uri()], requests


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
