"""The primitive registry: names are unique (they identify primitives in saved tapes), so a
collision is refused loudly and a user's functions get distinct names; passes keep a gradient
tape's variable maps (``meta``) pointing at variables that exist."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.primitives import REGISTRY, Primitive


def test_a_name_collision_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="'sin' is already registered.*must be unique"):
        Primitive("sin", np.sin)
    assert REGISTRY["sin"].function is np.sin


def test_two_lambdas_become_two_primitives_and_old_tapes_stay_valid():
    square = ad.primitive(lambda x: x * x)
    ad.rrule(square)(lambda x: (square(x), lambda dy: (2 * x * dy,)))
    first = ad.trace(lambda x: square(x), np.ones(2))
    cube = ad.primitive(lambda x: x * x * x)
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))
    assert square.primitive.name != cube.primitive.name
    assert "<lambda>" in square.primitive.name and "<lambda>" in cube.primitive.name
    ad.validate(first)                      # the first primitive is still the registered one
    assert REGISTRY[square.primitive.name] is square.primitive
    np.testing.assert_allclose(ad.grad(lambda x: np.sum(cube(x)))(np.full(2, 2.0)), [12.0, 12.0])
    np.testing.assert_allclose(first(np.full(2, 3.0)), [9.0, 9.0])


def test_an_explicit_name_that_collides_is_refused():
    ad.primitive(lambda x: x, name="my_identity_for_the_collision_test")
    with pytest.raises(ValueError, match="already registered"):
        ad.primitive(lambda x: x, name="my_identity_for_the_collision_test")


def _defined(tape) -> set:
    return set(tape.inputs).union(*(e.outputs for e in tape.eqns))


def test_optimize_keeps_the_variable_maps_of_a_gradient_tape_valid():
    """README example: after ``ad.optimize`` every variable ``meta`` names is in the tape."""
    def loss(W, x):
        return np.sum(np.tanh(x @ W) ** 2)
    gt = ad.grad_tape(loss, np.ones((3, 2)) / 3, np.ones((4, 3)))
    opt = ad.optimize(gt)
    assert len(opt.eqns) < len(gt.eqns)
    defined = _defined(opt)
    cotangents = opt.meta["cotangents"]
    stale = {v for kv in gt.meta["cotangents"].items() for v in kv if type(v) is ad.Var} - defined
    assert stale                        # passes removed variables the unoptimised map names
    assert cotangents and all(k in defined for k in cotangents)
    for mapping in (cotangents, opt.meta["primal_map"]):
        assert all(v in defined for v in mapping.values() if type(v) is ad.Var)
    # the map still says where each forward value's cotangent is: the gradient of W
    W = opt.inputs[0]
    assert opt.outputs[opt.n_values] is cotangents[W]
