"""Debian's Chromium for the browser tests (tests/e2e, tests/notebooks), driven by the playwright
package's bundled driver: never ``playwright install``. One playwright instance serves the whole
session: a second sync instance in the same thread is refused by playwright."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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
