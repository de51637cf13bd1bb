"""The sweep of numpy's namespace (issue 13): every public callable of ``np``, ``np.linalg``,
``np.fft`` and every ufunc is classified once, in ad/checktools/coverage.py, and docs/coverage.md shows the current
classification. A new rule, a new numpy function or a stale entry fails here until the file and
the page are updated (``python -m ad.checktools.coverage``)."""

import numpy as np
import pytest

import ad  # noqa: F401  (fills the dispatch tables)
from ad.dispatch import FUNCTIONS, UFUNCS
from ad.checktools import coverage
from tests.support import ROOT

DOC = (ROOT / "docs" / "coverage.md").read_text()


def test_every_public_numpy_callable_is_classified():
    unclassified = [n for n, (c, _) in coverage.sweep().items() if c == "unclassified"]
    assert not unclassified, f"classify these in ad/checktools/coverage.py: {unclassified}"


def test_every_ufunc_is_classified():
    ufuncs = [n for n, f in coverage.public().items() if isinstance(f, np.ufunc)]
    assert len(ufuncs) > 90
    assert all(coverage.sweep()[n][0] in ("rule", "not applicable", "missing") for n in ufuncs)


@pytest.mark.parametrize("table", ["NUMPY_IMPLEMENTED", "NOT_APPLICABLE", "MISSING"])
def test_the_tables_hold_no_stale_entry(table):
    """A listed name exists in numpy and has no handler (one that gained a rule leaves the table)."""
    names = coverage.public()
    for name in getattr(coverage, table):
        assert name in names, f"{table}: np.{name} is not a public numpy callable"
        f = names[name]
        assert f not in FUNCTIONS and not (isinstance(f, np.ufunc) and f in UFUNCS), \
            f"{table}: np.{name} has a rule now; remove it from the table"


def test_no_name_is_listed_twice():
    tables = [set(coverage.NUMPY_IMPLEMENTED), set(coverage.NOT_APPLICABLE), set(coverage.MISSING)]
    assert not (tables[0] & tables[1] or tables[0] & tables[2] or tables[1] & tables[2])


@pytest.mark.parametrize("name", sorted(coverage.NUMPY_IMPLEMENTED))
def test_numpy_implemented_names_have_an_implementation(name):
    """numpy dispatches them to its own Python code (``_implementation``), or they take no array."""
    f = coverage.public()[name]
    assert hasattr(f, "_implementation") or not hasattr(f, "__wrapped__")


def test_the_page_shows_the_current_classification():
    assert coverage.sweep_markdown() in DOC, "regenerate docs/coverage.md: python -m ad.checktools.coverage"
    assert coverage.markdown() in DOC, "regenerate docs/coverage.md: python -m ad.checktools.coverage"
    assert coverage.complex_markdown() in DOC, "regenerate docs/coverage.md: python -m ad.checktools.coverage"
    assert coverage.linear_markdown() in DOC, "regenerate docs/coverage.md: python -m ad.checktools.coverage"

