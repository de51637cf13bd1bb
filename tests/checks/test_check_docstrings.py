"""The docstring examples of ad.checks run: every module's, with ``np`` and ``ad`` in scope."""
import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import ad
import ad.checks

MODULES = sorted(f"ad.checks.{m.name}" for m in pkgutil.iter_modules(ad.checks.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"np": np, "ad": ad}, optionflags=doctest.ELLIPSIS,
                             raise_on_error=False, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail (run with -s)"


def test_the_public_api_has_examples():
    from ad.checks import CheckResult, ProgramReport, RuleReport, check, check_rule
    for obj in (check, check_rule, RuleReport, ProgramReport, CheckResult):
        assert ">>>" in (obj.__doc__ or ""), f"{obj.__qualname__} has no example"
