"""scipy's array-API functions traced through ad's namespace, in a process with SCIPY_ARRAY_API=1
(scipy reads it when it is imported): tests/array_api/scipy_check.py. About 3 s."""
import json
import os
import subprocess
import sys

import pytest

from tests.support import ROOT

TRACE = ["special.logsumexp", "special.softmax", "special.log_softmax", "special.xlogy", "special.rel_entr",
         "stats.zscore", "stats.moment", "stats.skew", "stats.kurtosis", "stats.gmean", "stats.hmean", "stats.pmean",
         "stats.sem", "stats.variation", "integrate.trapezoid", "integrate.cumulative_trapezoid",
         "signal.fftconvolve", "linalg.block_diag"]


@pytest.fixture(scope="module")
def results():
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    out = subprocess.run([sys.executable, "-m", "tests.array_api.scipy_check"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    return {r.pop("name"): r for r in map(json.loads, out.splitlines())}


def test_scipys_array_namespace_of_a_tracer_is_ads(results):
    assert results["array_namespace"]["is_ads"]


@pytest.mark.parametrize("name", TRACE)
def test_a_scipy_function_written_against_the_standard_traces_with_the_gradient_of_finite_differences(results, name):
    assert results[name]["traces"], results[name]["error"]
    assert results[name]["fd_difference"] < 1e-6


def test_what_scipy_converts_itself_is_refused_naming_the_way_out(results):
    assert "ad.scipy.special.gammaln" in results["special.gammaln"]["error"]
    assert "ad.scipy.stats" in results["stats.norm.logpdf"]["error"]


def test_a_plain_numpy_argument_next_to_a_traced_one_gets_the_namespaces_advice(results):
    error = results["special.logsumexp(b=ndarray)"]["error"]
    assert "Multiple namespaces" in error and "trace it too" in error
