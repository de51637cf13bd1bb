"""The examples in ad.serialize's docstrings run (save and load write loss.tape.json into a
temporary directory)."""
import doctest
import pkgutil
from importlib import import_module

import numpy as np
import pytest

import ad
import ad.serialize

MODULES = [import_module(f"ad.serialize.{m.name}") for m in pkgutil.iter_modules(ad.serialize.__path__)]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(module, globs={"np": np, "ad": ad}):
        runner.run(test)
    assert runner.failures == 0, f"{runner.failures} docstring example(s) failed (output above)"


def test_public_functions_have_examples():
    for fn in (ad.serialize.save, ad.serialize.load, ad.serialize.to_json, ad.serialize.from_json,
               ad.serialize.dumps, ad.serialize.loads):
        assert ">>> " in fn.__doc__, fn.__name__
