"""Complex numbers, until a rule is written and checked for them (tests/lib/test_complex.py): a gradient
through a rule with complex values is refused loudly, never computed with a real rule (HIPS
autograd's own tests found abs, norms, svd, eigh and conjugate silently wrong that way)."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from tests.support.cases import PRIMITIVE_CASES, floats, leaves

RNG = np.random.default_rng(0)


def _complex_operands(case):
    xs = case.inputs(case.sample.shapes[0], RNG)
    wrt = floats(xs)
    return [x * (1 + 0.5j) if i in wrt else x for i, x in enumerate(xs)], wrt


# the samples of differentiable primitives that have a float operand to make complex
CASES = [(c, *_complex_operands(c)) for c in PRIMITIVE_CASES
         if c.primitive.differentiable and c.primitive.kind == "pure" and c.sample.call is None
         and not c.primitive.complex_rule]


@pytest.mark.parametrize("case, xs", [pytest.param(c, xs, id=c.name) for c, xs, wrt in CASES if wrt])
def test_every_rule_refuses_complex_operands_or_numpy_does(case, xs):
    try:
        leaves(case.fn(*xs))
    except (TypeError, ValueError, np.linalg.LinAlgError):
        return                                  # numpy itself refuses complex input here
    # the refusal names this primitive, or the one its sample derives an operand with
    with pytest.raises(ad.UnsupportedFunctionError, match="the gradient of .* with complex values"):
        y, pullback = ad.vjp(case.fn, *xs)
        pullback(y)


def test_real_programs_are_untouched():
    assert ad.grad(lambda x: np.abs(x))(-1.5) == -1.0
