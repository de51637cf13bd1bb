"""``ad.backpropagate``: an overload of a primitive's pullback is honoured by every form (closure,
lifted, compiled, fused, vjp, jvp, linearize, jacfwd, jacrev, hessian, hvp) and by ``ad.check``;
it invalidates the tapes cached before it; removing it (or leaving ``using``) restores the rule."""
import numpy as np
import pytest

import ad
from tests.support.numeric import fd_grad
from tests.support.overloads import kinked_relu as relu, one_at_zero


X = np.array([-1.0, 0.0, 2.0])
GRAD_FORMS, FORWARD_FORMS = ("lifted", "closure", "compiled", "fused"), ("lifted", "compiled", "closure")
RULE, OVERLOAD = [0.0, 0.0, 1.0], [0.0, 1.0, 1.0]


def relu_forms(x) -> dict:
    """The derivative of relu at each element of ``x``, by every form."""
    ones = np.ones_like(x)
    loss = lambda x: np.sum(relu(x))                  # noqa: E731
    half_square = lambda x: np.sum(relu(x) ** 2) / 2  # noqa: E731  (its Hessian is relu'(x)^2)
    out = {f"grad {form}": ad.grad(loss, form=form)(x) for form in GRAD_FORMS}
    out["compile fused"] = ad.compile(ad.grad_tape(loss, x), backend="fused")(x)[1]
    out["vjp"] = ad.vjp(relu, x)[1](ones)[0]
    out.update({f"jvp {form}": ad.jvp(relu, (x,), (ones,), form=form)[1] for form in FORWARD_FORMS})
    out.update({f"linearize {form}": ad.linearize(relu, x, form=form)[1](ones) for form in FORWARD_FORMS[:2]})
    out.update({f"jacfwd {form}": np.diag(ad.jacfwd(relu, form=form)(x)) for form in FORWARD_FORMS})
    out.update({f"jacrev {form}": np.diag(ad.jacrev(relu, form=form)(x)) for form in ("lifted", "compiled")})
    out.update({f"hvp {form}": ad.hvp(half_square, (x,), (ones,), form=form)[1] for form in FORWARD_FORMS})
    out["hessian"] = np.diag(ad.hessian(half_square)(x))
    return out


def assert_all(found: dict, want):
    wrong = {k: v.tolist() for k, v in found.items() if not np.allclose(v, want)}
    assert not wrong, f"forms that do not give {want}: {wrong}"


# -- relu: a subgradient chosen at the kink --------------------------------------------------

def test_every_form_honours_the_relu_overload():
    assert_all(relu_forms(X), RULE)
    with ad.backpropagate.using(relu, one_at_zero):
        assert_all(relu_forms(X), OVERLOAD)
    assert_all(relu_forms(X), RULE)


def test_the_overload_away_from_the_kink_is_the_derivative():
    x = np.array([-1.0, 0.5, 2.0])
    with ad.backpropagate.using(relu, one_at_zero):
        assert_all(relu_forms(x), fd_grad(lambda x: np.sum(relu(x)), x))


def test_decorator_registers_and_remove_restores():
    f = lambda x: np.sum(relu(x))   # noqa: E731
    registered = ad.backpropagate(relu)(one_at_zero)
    try:
        assert registered is one_at_zero                       # the decorator returns the function
        assert relu.primitive.overloads == {"dense": one_at_zero}
        assert ad.grad(f)(X).tolist() == OVERLOAD
    finally:
        assert ad.backpropagate.remove(relu) is one_at_zero
    assert relu.primitive.overloads == {}
    assert ad.grad(f)(X).tolist() == RULE
    with pytest.raises(KeyError, match="no 'dense' overload"):
        ad.backpropagate.remove(relu)


def test_using_restores_the_overload_it_replaced():
    def zero_everywhere(x):
        return lambda dy: (0.0 * dy,)
    f = ad.grad(lambda x: np.sum(relu(x)))
    with ad.backpropagate.using(relu, one_at_zero):
        with ad.backpropagate.using(relu, zero_everywhere):
            assert f(X).tolist() == [0.0, 0.0, 0.0]
        assert f(X).tolist() == OVERLOAD
    assert f(X).tolist() == RULE


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="'Dense'"):
        ad.backpropagate(relu, "Dense")


def test_transforms_made_before_the_overload_follow_it():
    loss = lambda x: np.sum(relu(x))   # noqa: E731
    cached = {f"grad {form}": ad.grad(loss, form=form) for form in GRAD_FORMS}
    cached.update({"jacfwd": lambda x, j=ad.jacfwd(relu): np.diag(j(x)),
                   "jacrev": lambda x, j=ad.jacrev(relu): np.diag(j(x)),
                   "hessian": lambda x, h=ad.hessian(lambda x: np.sum(relu(x) ** 2) / 2): np.diag(h(x))})

    def run():
        return {name: fn(X) for name, fn in cached.items()}
    assert_all(run(), RULE)
    ad.backpropagate(relu)(one_at_zero)
    try:
        assert_all(run(), OVERLOAD)
    finally:
        ad.backpropagate.remove(relu)
    assert_all(run(), RULE)
    with ad.backpropagate.using(relu, one_at_zero):
        assert_all(run(), OVERLOAD)
    assert_all(run(), RULE)


def test_check_passes_with_the_overload():
    with ad.backpropagate.using(relu, one_at_zero):
        report = ad.check(lambda x: np.sum(relu(x)), X)
    assert report.ok, report


# -- matmul: an overload told apart by its values, one that is the derivative ----------------

def doubled(a, b):
    """matmul's pullback, doubled; it computes the transposes before returning the pullback."""
    at, bt = a.T, b.T
    return lambda dy: (2.0 * (dy @ bt), 2.0 * (at @ dy))


def by_einsum(a, b):
    """matmul's pullback, written with einsum."""
    return lambda dy: (np.einsum("ik,jk->ij", dy, b), np.einsum("ki,kj->ij", a, dy))


RNG = np.random.default_rng(0)
A, B, V = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal((2, 3))


def matmul_forms(a, b) -> dict:
    """dloss/dA by every first-order form (the jvps along ``V``, as <J V, 1>), and the Hessian of
    the loss along ``V``."""
    loss = lambda a, b: np.sum(np.sin(a @ b))   # noqa: E731
    ones = np.ones((2, 4))
    out = {f"grad {form}": ad.grad(loss, form=form)(a, b) for form in GRAD_FORMS}
    out["vjp"] = ad.vjp(lambda a: np.sin(a @ b), a)[1](ones)[0]
    jac = {"jacfwd": ad.jacfwd(lambda a: np.sin(a @ b))(a), "jacrev": ad.jacrev(lambda a: np.sin(a @ b))(a)}
    out.update({k: np.sum(j, axis=(0, 1)) for k, j in jac.items()})
    along = {f"jvp {form}": np.sum(ad.jvp(lambda a: np.sin(a @ b), (a,), (V,), form=form)[1])
             for form in FORWARD_FORMS}
    along["linearize"] = np.sum(ad.linearize(lambda a: np.sin(a @ b), a)[1](V))
    hvps = {f"hvp {form}": ad.hvp(lambda a: loss(a, b), (a,), (V,), form=form)[1] for form in FORWARD_FORMS}
    hvps["hessian"] = np.tensordot(ad.hessian(lambda a: loss(a, b))(a), V, 2)
    return out, along, hvps


def test_every_form_honours_a_matmul_overload():
    grads, along, hvps = matmul_forms(A, B)
    g = grads["grad lifted"]
    assert_all(grads, g)
    assert_all(along, np.sum(g * V))
    assert_all(hvps, hvps["hvp lifted"])
    with ad.backpropagate.using(np.matmul, doubled):
        grads2, along2, hvps2 = matmul_forms(A, B)
    assert_all(grads2, 2 * g)
    assert_all(along2, 2 * np.sum(g * V))
    # the matmul of the gradient program (in the overload's pullback) doubles too: 2 * 2 * 2
    assert_all(hvps2, 8 * hvps["hvp lifted"])
    assert_all(matmul_forms(A, B)[0], g)


def test_a_matmul_overload_that_is_the_derivative():
    loss = lambda a, b: np.sum(np.sin(a @ b))   # noqa: E731
    with ad.backpropagate.using(np.matmul, by_einsum):
        gt = ad.grad_tape(loss, A, B, argnums=(0, 1))
        assert any(e.prim.name == "einsum" for e in gt.eqns[gt.n_forward:])
        grads, along, hvps = matmul_forms(A, B)
        want = fd_grad(lambda a: loss(a, B), A)
        assert_all(grads, want)
        assert_all(along, np.sum(want * V))
        assert_all(hvps, fd_grad(lambda a: np.sum(ad.grad(loss)(a, B) * V), A))
        report = ad.check(loss, A, B)
    assert report.ok, report


# -- the "zero" kind: some output of a multi-output primitive has no cotangent ---------------

@ad.primitive(multiple_results=True)
def sincos(x):
    return np.sin(x), np.cos(x)


@ad.rrule(sincos)
def sincos_rule(x):
    s, c = sincos(x)
    return (s, c), lambda cts: (cts[0] * c - cts[1] * s,)


def tripled(x):
    """sincos's pullback, tripled: told apart from the rule's by its values."""
    return lambda cts: (3.0 * (cts[0] * np.cos(x) - cts[1] * np.sin(x)),)


def sincos_forms(f, x) -> dict:
    ones = np.ones_like(x)
    out = {f"grad {form}": ad.grad(lambda x: np.sum(f(x)), form=form)(x)
           for form in GRAD_FORMS}
    out["vjp"] = ad.vjp(f, x)[1](ones)[0]
    out.update({f"jvp {form}": ad.jvp(f, (x,), (ones,), form=form)[1] for form in FORWARD_FORMS})
    out["jacfwd"] = np.diag(ad.jacfwd(f)(x))
    out["jacrev"] = np.diag(ad.jacrev(f)(x))
    return out


def test_the_zero_kind_serves_outputs_some_of_which_have_no_cotangent():
    x = np.array([0.3, -1.2])
    def sin_only(x):
        return sincos(x)[0]           # cos has no cotangent

    def both(x):
        s, c = sincos(x)
        return s + c
    with ad.backpropagate.using(sincos, tripled, "zero"):
        assert_all(sincos_forms(sin_only, x), 3 * np.cos(x))
        assert_all(sincos_forms(both, x), np.cos(x) - np.sin(x))       # dense: the rule's
    with ad.backpropagate.using(sincos, tripled, "dense"):
        assert_all(sincos_forms(sin_only, x), np.cos(x))               # zero: the rule's
        assert_all(sincos_forms(both, x), 3 * (np.cos(x) - np.sin(x)))
    assert_all(sincos_forms(sin_only, x), np.cos(x))


# -- an overload that cannot be lifted ---------------------------------------------------------

def test_an_overload_that_cannot_be_lifted_is_refused_by_name_where_it_would_be_lifted():
    def coerces(x):
        return lambda dy: (np.where(x >= 0, float(np.sum(dy)), 0.0),)
    f = lambda x: np.sum(relu(x))   # noqa: E731
    with ad.backpropagate.using(relu, coerces):
        assert ad.grad(f, form="closure")(X).tolist() == [0.0, 3.0, 3.0]     # closures run as they are
        with pytest.raises(ad.NonDifferentiableError, match="coerces"):
            ad.grad(f)(X)
        with pytest.raises(ad.NonDifferentiableError, match="coerces"):
            ad.jvp(relu, (X,), (np.ones(3),))


def test_a_library_function_stands_for_its_primitive():
    """``ad.nn.relu`` is ``relu_p``'s spelling (``ad.primitives.binds``): an overload registered
    on the function is the primitive's, and removing it through the primitive restores the rule."""
    loss = lambda x: np.sum(ad.nn.relu(x))            # noqa: E731
    ad.backpropagate(ad.nn.relu, "dense")(one_at_zero)
    try:
        assert ad.nn.relu_p.overloads["dense"] is one_at_zero
        assert_all({form: ad.grad(loss, form=form)(X) for form in GRAD_FORMS}, OVERLOAD)
    finally:
        ad.backpropagate.remove(ad.nn.relu_p, "dense")
    assert_all({form: ad.grad(loss, form=form)(X) for form in GRAD_FORMS}, RULE)
    assert ad.primitives.lookup(ad.nn.softmax) is ad.nn.softmax_p
    assert ad.check_rule(ad.nn.log_softmax, np.linspace(-1.0, 2.0, 6).reshape(2, 3)).ok
