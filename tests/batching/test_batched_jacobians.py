"""Batched Jacobians: ``ad.jacrev`` and ``ad.jacfwd`` push all basis vectors through one batched
pullback or tangent tape (the default) and agree with the loop over them (``batched=False``) on
every composition of the spec table, on pytrees with integer leaves, zero-size leaves and under
an enclosing trace (``ad.hessian`` is jacfwd of grad); the batched tapes are kept per signature."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad import pytree
from tests.support.cases import COMPOSITIONS, Case

def _float_positions(xs):
    return tuple(k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.floating))


def _real_cases():
    """The compositions with a real float operand to differentiate (and no complex one)."""
    out = []
    for name, s in COMPOSITIONS.items():
        case = Case(name, s.call, s)
        xs = case.inputs(s.shapes[-1], np.random.default_rng(0))
        if _float_positions(xs) and not any(np.iscomplexobj(x) for x in xs):
            out.append(case)
    return out


CASES = _real_cases()


def _compare(a, b, what):
    la, lb = pytree.flatten(a)[0], pytree.flatten(b)[0]
    assert len(la) == len(lb), what
    for x, y in zip(la, lb):
        if x is None or y is None:
            assert x is None and y is None, what
            continue
        assert np.shape(x) == np.shape(y), what
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("jac", [ad.jacrev, ad.jacfwd], ids=["jacrev", "jacfwd"])
def test_batched_jacobians_equal_the_loop_on_the_spec_table(case, jac):
    xs = case.inputs(case.sample.shapes[-1], np.random.default_rng(0))
    pos = _float_positions(xs)
    try:
        want = jac(case.fn, argnums=pos, batched=False)(*xs)
    except (ad.NonDifferentiableError, NotImplementedError) as exc:
        with pytest.raises(type(exc)):
            jac(case.fn, argnums=pos)(*xs)
        return
    _compare(jac(case.fn, argnums=pos)(*xs), want, case.name)


def test_pytrees_integer_and_empty_leaves():
    def f(p):
        return {"y": np.sin(p["x"]) * p["s"], "n": p["k"] * 2, "e": p["x"][:0]}
    p = {"x": np.arange(3.0), "s": 2.0, "k": np.arange(2)}
    for jac in (ad.jacrev, ad.jacfwd):
        _compare(jac(f)(p), jac(f, batched=False)(p), jac.__name__)


def test_hessian_under_an_enclosing_trace():
    f = lambda x: np.sum(np.tanh(x) ** 3)      # noqa: E731
    x = np.linspace(-1, 1, 4)
    g = ad.grad(lambda x: np.sum(ad.hessian(f)(x) ** 2))(x)
    eps = 1e-6
    fd = [(np.sum(ad.hessian(f)(x + eps * e) ** 2) - np.sum(ad.hessian(f)(x - eps * e) ** 2)) / (2 * eps)
          for e in np.eye(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)


def test_the_batched_tapes_are_kept_per_signature():
    A = np.random.default_rng(0).standard_normal((6, 3))
    j = ad.jacrev(lambda x: np.tanh(A @ x))
    j(np.ones(3))
    j(np.zeros(3))
    assert j.cache_info().traces == 1 and j.cache_info().hits == 1
