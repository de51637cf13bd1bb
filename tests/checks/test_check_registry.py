"""The registered checks and the declared tables of ``settings`` agree, and the program checks
read only the prepared record: the order they run in does not change what they find."""
import numpy as np
import pytest

import ad
from ad.checks import check
from ad.checks.base import CHECKS
from ad.checks.base import computes as register
from ad.checks.program_record import prepare
from ad.checks.settings import PROGRAM_CHECKS, RULE_CHECKS, Options


def test_every_declared_check_is_registered_once_and_nothing_else_is():
    declared = [name for name, _, _ in RULE_CHECKS + PROGRAM_CHECKS]
    at_trace_time = {n for n in declared if n.startswith("registration.")}   # check_rule's setup
    assert len(set(declared)) == len(declared)
    assert set(CHECKS) == set(declared) - at_trace_time


def test_an_undeclared_check_cannot_be_registered():
    with pytest.raises(ValueError, match="not a check of settings"):
        register("program.typo")


def test_program_checks_find_the_same_in_any_order():
    def wrong_exp(x):
        y = np.exp(x)
        return y, lambda dy: (dy * y * 1.01,)

    def f(x):
        return np.sum(np.maximum(np.exp(x), 1.0) * np.sin(x))
    x = np.array([-1.0, 0.0, 0.5, 1.0])
    with ad.using_rule(np.exp, wrong_exp):
        report = check(f, x)
        record = prepare(f, (x,), None, Options())
        backwards = {name: CHECKS[name](record) for name, _, _ in reversed(PROGRAM_CHECKS)}
    assert not report.ok and report["program.kinks"].status == "warn"
    for c in report.checks:
        assert (c.status, c.message, c.equation) == (backwards[c.name].status, backwards[c.name].message,
                                                      backwards[c.name].equation), c.name
