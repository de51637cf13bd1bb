"""The survey behind docs/scipy.md's table (``python -m tests.scipy.scipy_survey``) still measures:
a few of its calls, each in its own process with and without SCIPY_ARRAY_API=1."""
from __future__ import annotations

import pytest

from tests.scipy import scipy_survey


@pytest.mark.slow
def test_the_survey_tells_tracing_converting_and_refusing_apart():
    names = ["fft.hfft2", "stats.zscore", "stats.norm.logpdf", "fft.dct"]
    lines = scipy_survey.rows(names)
    by_call = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:3] for line in lines[2:2 + len(names)]}
    assert by_call == {"fft.hfft2": ["**traces**", "**traces**"],          # scipy.fft's backend
                       "stats.zscore": ["fails", "**traces**"],            # the array API route
                       "stats.norm.logpdf": ["fails", "fails"],            # converts either way
                       "fft.dct": ["refused", "refused"]}                  # no primitive
    assert "_distn_infrastructure.py" in lines[2 + names.index("stats.norm.logpdf")]
    assert lines[-1] == "traces: 1 of 4 with SCIPY_ARRAY_API unset, 2 of 4 with SCIPY_ARRAY_API=1"
