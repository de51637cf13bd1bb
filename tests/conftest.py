import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))   # tests import the spec table as `specs`

from browser import ARTIFACTS, launch  # noqa: E402


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test of the session."""
    pw, chromium = launch()
    yield chromium
    chromium.close()
    pw.stop()


@pytest.fixture(scope="session")
def artifacts():
    """Where screenshots go (``E2E_ARTIFACTS``, else test-artifacts/ in the repository)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
