"""The autograd-suite runner, offline: the shim maps autograd's names onto numpy and ad, and the
runner classifies the outcomes of a small suite written here in autograd's style."""
from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

from tests.external import autograd_shim, autograd_suite
from tests.external.autograd_shim import installed
from tests.support.needs import module


def test_the_shim_maps_autograd_onto_numpy_and_ad():
    with installed():
        import autograd
        import autograd.numpy as anp
        import autograd.numpy.random as npr
        from autograd import elementwise_grad, grad, jacobian, value_and_grad
        from autograd.test_util import check_grads
        assert anp is np and npr is np.random
        assert grad(lambda x, y: x * y, 1)(2.0, 3.0) == 2.0
        assert value_and_grad(lambda x: x ** 2)(3.0) == (9.0, 6.0)
        x = np.array([0.1, 0.2])
        np.testing.assert_allclose(elementwise_grad(np.sin)(x), np.cos(x))
        np.testing.assert_allclose(jacobian(lambda x: x[::-1] * 2.0)(x), [[0.0, 2.0], [2.0, 0.0]])
        check_grads(lambda x: np.sum(np.tanh(x) ** 2), order=1)(x)
        np.testing.assert_allclose(autograd.make_jvp(np.sin)(1.0)(2.0), (np.sin(1.0), 2 * np.cos(1.0)))
        np.testing.assert_allclose(autograd.hessian(lambda x: np.sum(x ** 3))(x), np.diag(6 * x))
        with pytest.raises(ImportError):
            from autograd.core import vspace  # noqa: F401  (autograd's internals are not mapped)
        shim = autograd
    assert sys.modules.get("autograd") is not shim           # the real autograd, if it was imported


def test_the_shims_check_grads_catches_a_wrong_rule_like_autograds():
    # check_grads projects on random directions, as autograd's does: a 0.05 % error in the rule is
    # caught unless the directions' product is below 1e-3 (about one draw in 200), so they are seeded.
    state = np.random.get_state()
    np.random.seed(0)
    try:
        _check_grads_catches_a_wrong_rule()
    finally:
        np.random.set_state(state)


def _check_grads_catches_a_wrong_rule():
    with installed():
        from autograd.extend import defvjp, primitive

        @primitive
        def double(x):
            return x * 2.0
        defvjp(double, lambda ans, x: lambda g: g * 2.001)
        with pytest.raises(AssertionError, match=r"\(VJP\) check of double failed"):
            autograd_shim.check_grads(double, modes=["rev"])(1.0)


def test_scipy_is_reached_through_autograd_scipy():
    scipy_special = module("scipy.special")
    with installed():
        import autograd.scipy.special as special
        assert special.erf is scipy_special.erf


SUITE = '''
import pytest
import autograd.numpy as np
from autograd import grad, make_jvp
from autograd.extend import defvjp, primitive
from autograd.test_util import check_grads

def test_passes():
    check_grads(np.tanh, order=1)(np.ones(3))

def test_wrong_gradient():
    @primitive
    def double(x):
        return x * 2.0
    defvjp(double, lambda ans, x: lambda g: g * 3.0)
    check_grads(double, modes=["rev"])(1.0)

def test_forward_mode():
    assert make_jvp(np.sin)(0.0)(2.0) == (0.0, 2.0)

def test_refused():
    grad(lambda x: float(x) * x)(1.0)

def test_internals():
    from autograd.core import vspace

def test_assertion():
    assert grad(lambda x: x * x)(3.0) == 7.0

def test_expected_error():
    with pytest.raises(TypeError):
        grad(lambda x: x * 2.0)(1.0)
'''
BROKEN = '''
from autograd.tracer import Box

def test_one():
    pass

def test_two():
    pass
'''


def test_the_runner_classifies_a_small_suite(tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(SUITE))
    (tmp_path / "test_broken.py").write_text(textwrap.dedent(BROKEN))
    got = {}
    for path in autograd_suite.suite_files(tmp_path):
        for r in autograd_suite.run_file(path)[0]:
            got[r.test] = (r.outcome, r.category)
    assert got == {
        "test_passes": ("passed", ""), "test_wrong_gradient": ("failed", "wrong gradient"),
        "test_forward_mode": ("passed", ""), "test_refused": ("error", "ad refuses loudly"),
        "test_internals": ("error", "autograd-only API"), "test_assertion": ("failed", "test assertion"),
        "test_expected_error": ("failed", "expected error not raised"),
        "test_one": ("error", "autograd-only API"), "test_two": ("error", "autograd-only API"),
    }


def test_classify_groups_by_message_without_numbers():
    a = autograd_suite.classify(ValueError("shapes (3,) and (4,) differ by 1.5"), "test_x.py")
    b = autograd_suite.classify(ValueError("shapes (5,) and (2,) differ by 0.25"), "test_x.py")
    assert a == b == ("other error", "ValueError: shapes")
    assert autograd_suite.classify(TypeError("no"), "test_x.py", "test_complex_dot")[0] == "complex"
    assert autograd_suite.classify(TypeError("no"), "test_scipy.py")[0] == "scipy"
