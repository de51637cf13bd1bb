import os

import pytest
from hypothesis import settings

pytest.register_assert_rewrite("tests.support")   # the helpers' asserts show their values too

from tests.support.browser import ARTIFACTS, launch  # noqa: E402

# Under CI (`make test` sets CI=true) the property tests draw the same examples on every run:
# a landing never fails on an example no earlier run drew. Exploration is elsewhere: a plain
# `pytest` draws new examples each run, and `make fuzz` runs the differential fuzzer for hours.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


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
