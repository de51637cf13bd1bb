"""Optional pieces some tests need (Graphviz's dot, the wasm renderer, the oracle libraries).

Outside CI a missing piece skips the test: a developer may not have installed every extra. In CI
(env CI set) nothing may be skipped, because the set-up installs everything: a missing piece
is a failure there, never a silent skip."""
from __future__ import annotations

import importlib
import os

import pytest


def needs(available: bool, what: str):
    """A marker: skip without ``what`` (outside CI only)."""
    return pytest.mark.skipif(not available and not os.environ.get("CI"), reason=f"needs {what}")


def module(name: str, reason: str | None = None):
    """Import an optional module; skip without it (outside CI only)."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name, reason=reason)
