"""Every docstring example in ``ad`` runs (a claim in a docstring is a test), and every example of
the pages in docs/. The checker's and the serializer's examples run in tests/check and
tests/serialize, tapeviz's in tests/tapeviz."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import ad
from tests.support import ROOT

OWN_TESTS = ("ad.checks", "ad.serialize")     # packages whose examples run in their own folder


def _modules():
    names = ["ad"] + [m.name for m in pkgutil.walk_packages(ad.__path__, "ad.")]
    return [n for n in names if not n.startswith(OWN_TESTS)]


def _examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    for name in _modules():
        module = importlib.import_module(name)
        for test in finder.find(module, name, globs={"np": np, "ad": ad}):
            if test.examples and test.name.startswith(name):
                yield pytest.param(test, id=test.name)


def _pages():
    parser = doctest.DocTestParser()
    for page in sorted((ROOT / "docs").glob("*.md")):
        test = parser.get_doctest(page.read_text(), {"np": np, "ad": ad}, f"docs/{page.name}", str(page), 0)
        if test.examples:
            yield pytest.param(test, id=test.name)


EXAMPLES = list(_examples()) + list(_pages())


def test_the_public_api_has_examples():
    names = {t.values[0].name for t in EXAMPLES}
    for fn in ("ad.tracing.trace", "ad.transforms.gradients.grad", "ad.transforms.gradients.vjp", "ad.rules.rrule", "ad.rules.backpropagate",
               "docs/complex.md"):
        assert fn in names, f"{fn} lost its docstring example"


@pytest.mark.parametrize("test", EXAMPLES)
def test_docstring_example(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)       # examples that save files write them here
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {test.name} failed"
