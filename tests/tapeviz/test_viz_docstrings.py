"""The examples in tapeviz's docstrings run and print what they say (``np``, ``ad`` and
``tapeviz`` are imported for them)."""
import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import ad
import tapeviz

MODULES = ["tapeviz"] + sorted(m.name for m in pkgutil.walk_packages(tapeviz.__path__, "tapeviz.")
                               if not m.name.rpartition(".")[2].startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"np": np, "ad": ad, "tapeviz": tapeviz},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (output above)"


def test_the_public_api_has_examples():
    finder = doctest.DocTestFinder()
    examples = {t.name for name in MODULES for t in finder.find(importlib.import_module(name)) if t.examples}
    assert {"tapeviz", "tapeviz.debug", "tapeviz.graph.to_networkx"} <= examples
