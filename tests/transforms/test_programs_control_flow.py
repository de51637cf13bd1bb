"""Property-based tests: random programs with Python control flow on traced values (``if`` on
traced comparisons, ``and``, ``while`` loops with traced conditions, ``int()`` of a traced value
and traced integer arrays indexing constant tables), drawn by the library's generator
(``ad.checktools.fuzz``, control family). ``fuzz.compare_control`` differentiates each with ad in
every form and with HIPS autograd, the oracle, at three points that tend to take other branches
(the same ``ad.grad`` object must re-trace); a tape run on them either gives the eager answer or
raises GuardError; so does the compiled gradient tape of the first trace; finite differences
agree wherever the branches do not change nearby; back at the first point nothing re-traces.
"""
from hypothesis import HealthCheck, assume, given, settings

from ad.checktools import fuzz
from tests.support.needs import module

module("autograd")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fuzz.programs("control"))
def test_branching_programs_match_autograd_in_every_form_across_retraces(program):
    forms = fuzz.run(program)
    assume(forms is not None)
    assert "autograd" in forms and "guards" in forms, forms

