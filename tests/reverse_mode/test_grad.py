"""Gradient tapes: provenance, structural zeros, fallbacks, re-running, backpropagate, the
three forms, partition, higher order."""
import numpy as np
import pytest

import ad
from ad.gradtape import partition, residuals
from ad.compiler.codegen import compile_tape
from ad.passes import op_counts, optimize
from ad.tape import validate
from tests.support.mlp import mlp_data, mlp_loss
from tests.support.needs import module
from tests.support.numeric import fd_grad


def test_matmul_pullback_is_visible():
    gt = validate(ad.grad_tape(lambda A, B: np.sum(A @ B), np.ones((2, 3)), np.ones((3, 4)), argnums=(0, 1)))
    back = [e for e in gt.eqns[gt.n_forward:] if e.origin.kind == "pullback" and e.origin.rule == "matmul"]
    text = "\n".join(map(str, back))
    assert "matmul" in text and "transpose axes=(1, 0) %1" in text and "transpose axes=(1, 0) %0" in text
    assert all(repr(e.origin.of) == "%2" for e in back)
    assert "pullback of %2 (matmul)" in str(gt)


def test_fan_in_is_an_explicit_add_and_provenance_is_recorded():
    gt = ad.grad_tape(lambda x: np.sum(np.sin(x) * np.cos(x)), np.ones(3))
    acc = [e for e in gt.eqns if e.origin.kind == "accumulate"]
    assert len(acc) == 1 and acc[0].prim.name == "add" and repr(acc[0].origin.of) == "%0"
    assert all(e.origin.is_backward for e in gt.eqns[gt.n_forward:])
    assert all(not e.origin.is_backward for e in gt.eqns[:gt.n_forward])


def test_structural_zeros_skip_pullbacks():
    def f(x, y):
        np.exp(x) * 3.0                 # computed, but does not reach the output
        return np.sum(np.sin(x))
    gt = ad.grad_tape(f, np.ones(2), np.ones(2), argnums=(0, 1))
    backward_rules = {e.origin.rule for e in gt.eqns[gt.n_forward:]}
    assert "sin" in backward_rules and "exp" not in backward_rules and "multiply" not in backward_rules
    zeros = [e for e in gt.eqns if e.origin.kind == "zeros"]
    assert len(zeros) == 1 and repr(zeros[0].origin.of) == "%1"     # y: unreached, explicit zeros
    value, (gx, gy) = gt(np.ones(2), np.ones(2))
    assert np.allclose(gx, np.cos(1.0)) and gy.tolist() == [0.0, 0.0]


def test_unused_and_integer_inputs():
    def f(x, n, idx, unused):
        return np.sum(x[idx] ** n)
    x, idx, unused = np.arange(4.0), np.array([0, 2, 2]), np.ones((2, 2))
    gx, gn, gidx, gu = ad.grad(f, argnums=(0, 1, 2, 3))(x, 2, idx, unused)
    assert gx.tolist() == [0.0, 0.0, 8.0, 0.0]
    assert gn is None and gidx is None
    assert gu.shape == (2, 2) and not gu.any()


def test_mlp_gradient_matches_finite_differences_and_autograd():
    params, x, y = mlp_data()
    g = ad.grad(mlp_loss)(params, x, y)
    for k in params:
        def fk(p, k=k):
            return mlp_loss({**params, k: p}, x, y)
        np.testing.assert_allclose(g[k], fd_grad(fk, params[k]), rtol=1e-6, atol=1e-8)
    autograd = module("autograd")   # an independent oracle (a test extra)
    ref = autograd.grad(mlp_loss)(params, x, y)
    for k in params:
        np.testing.assert_allclose(g[k], ref[k], rtol=1e-10, atol=1e-12)


def test_three_forms_agree_and_tape_reruns_on_new_inputs():
    params, x, y = mlp_data(0)
    gt = ad.grad_tape(mlp_loss, params, x, y)
    params2, x2, y2 = mlp_data(1)
    value, g = gt(params2, x2, y2)                   # re-run on new inputs
    assert np.isclose(value, mlp_loss(params2, x2, y2))
    ref = ad.grad(mlp_loss, form="closure")(params2, x2, y2)
    compiled = compile_tape(optimize(gt))(params2, x2, y2)[1]
    for k in params:
        np.testing.assert_allclose(g[k], ref[k], rtol=1e-12)
        np.testing.assert_allclose(compiled[k], ref[k], rtol=1e-12)


def test_passes_shrink_and_keep_invariants():
    params, x, y = mlp_data()
    gt = ad.grad_tape(mlp_loss, params, x, y)
    opt = optimize(gt)
    validate(opt)
    assert len(opt.eqns) < len(gt.eqns)
    assert sum(op_counts(opt).values()) == len(opt.eqns)
    for name, before, after in opt.meta["passes"]:
        assert after <= before
    v1, g1 = gt(params, x, y)
    v2, g2 = opt(params, x, y)
    for k in params:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-12)


def test_compiled_source_is_readable():
    gt = optimize(ad.grad_tape(lambda A, B: np.sum(np.tanh(A @ B)), np.ones((2, 3)), np.ones((3, 4)), argnums=(0, 1)))
    src = compile_tape(gt).source
    assert "v2 = v0 @ v1" in src and "np.tanh(v2)" in src
    assert "# pullback of %2 (matmul)" in src and "# backward" in src


def test_grad_caches_per_signature():
    g = ad.grad(lambda x: np.sum(x * x), form="compiled")
    g(np.ones(3))
    g(np.ones(3) * 2)
    assert len(g.cache) == 1
    g(np.ones(4))
    assert len(g.cache) == 2


def test_partition_into_fwd_and_bwd():
    params, x, y = mlp_data()
    gt = ad.grad_tape(mlp_loss, params, x, y)
    fwd, bwd = partition(gt)
    validate(fwd)
    validate(bwd)
    flat = gt.flatten_args((params, x, y))
    out = fwd(*flat)
    n_res = len(residuals(gt))
    assert len(out) == 1 + n_res
    grads = bwd(*out[1:], np.float64(1.0))
    value, ref = gt(params, x, y)
    for got, want in zip(grads, [ref[k] for k in params]):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- fallbacks ------------------------------------------------------------------------------

@ad.primitive
def wobble(x, *, k=2.0):
    return k * np.sin(x) + x


@ad.rrule(wobble)
def _wobble_rule(x, k=2.0):
    y = wobble(x, k=k)

    def pullback(dy):
        dy = np.asarray(dy)          # escapes: cannot be lifted
        return (dy * (k * np.cos(x) + 1),)
    return y, pullback


def test_untraceable_rule_falls_back_and_stays_correct():
    f = lambda x: np.sum(wobble(x * 1.5, k=3.0) ** 2)   # noqa: E731
    x = np.array([0.1, 0.7, -0.3])
    gt = ad.grad_tape(f, x)
    assert not gt.serializable
    (fb,) = gt.fallbacks
    assert fb.rule.endswith("wobble") and "test_grad.py" in fb.source and "ConcretizationError" in fb.reason
    assert any(e.prim.name == "opaque_rrule" for e in gt.eqns[:gt.n_forward])
    assert any(e.prim.name == "opaque_pullback" for e in gt.eqns[gt.n_forward:])
    x2 = np.array([1.0, -2.0, 0.5])                  # new inputs: no baked trace-time residuals
    np.testing.assert_allclose(gt(x2)[1], fd_grad(f, x2), rtol=1e-6)
    np.testing.assert_allclose(ad.grad(f, form="compiled")(x2), fd_grad(f, x2), rtol=1e-6)
    with pytest.raises(ad.NonDifferentiableError, match="fell back"):
        ad.grad(lambda z: np.sum(ad.grad(f)(z)))(x2)


# -- backpropagate -----------------------------------------------------------------------------

def test_backpropagate_overload_replaces_the_template():
    f = lambda a, b: np.sum(np.maximum(a, b))   # noqa: E731
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0, 5.0])   # a tie at index 0
    default = ad.grad(f, argnums=(0, 1))(a, b)
    assert default[0][0] == 0.5                       # ties split evenly by the rule

    @ad.backpropagate(np.maximum, "dense")
    def ties_to_first(x, y):
        return lambda dy: (np.where(x >= y, dy, 0), np.where(x >= y, 0, dy))
    try:
        gt = ad.grad_tape(f, a, b, argnums=(0, 1))
        ga, gb = gt(a, b)[1]
        assert ga.tolist() == [1.0, 1.0, 0.0] and gb.tolist() == [0.0, 0.0, 1.0]
        assert any(e.prim.name == "greater_equal" for e in gt.eqns[gt.n_forward:])
    finally:
        ad.backpropagate.remove(np.maximum, "dense")
    assert ad.grad(f, argnums=(0, 1))(a, b)[0][0] == 0.5      # the rule's again


# -- higher order ----------------------------------------------------------------------------

def test_hessian_vector_product_and_grad_of_grad_norm():
    f = lambda x: np.sum(np.sin(x) * x ** 2)   # noqa: E731
    g = ad.grad(f)
    x = np.array([0.3, -0.5, 1.2])
    v = np.array([1.0, 2.0, -1.0])
    hvp = ad.grad(lambda y: np.sum(g(y) * v))(x)
    np.testing.assert_allclose(hvp, fd_grad(lambda y: np.sum(g(y) * v), x), rtol=1e-6)
    gnorm = ad.grad(lambda y: np.sum(g(y) ** 2))(x)
    np.testing.assert_allclose(gnorm, fd_grad(lambda y: np.sum(g(y) ** 2), x), rtol=1e-6)


def test_vjp_returns_one_cotangent_per_argument():
    y, pb = ad.vjp(lambda a, b: (a * b, np.sum(a)), np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    da, db = pb((np.ones(2), 1.0))
    assert da.tolist() == [4.0, 5.0] and db.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_grad_accepts_any_output_of_size_one(shape):
    f = lambda x: np.reshape(np.sum(x * x), shape)          # noqa: E731
    x = np.array([1.0, -2.0])
    for form in ("lifted", "closure", "compiled"):
        np.testing.assert_allclose(ad.grad(f, form=form)(x), 2 * x)


def test_grad_of_a_larger_output_suggests_vjp():
    with pytest.raises(ad.NonDifferentiableError, match="size 1.*ad.vjp"):
        ad.grad(lambda x: x * 2.0)(np.ones(2))


@pytest.mark.parametrize("form", ["lifted", "closure", "compiled", "fused"])
def test_a_rule_registered_after_grad_cached_its_tape_is_used(form, tmp_path, monkeypatch):
    """A cached gradient tape inlined the pullbacks of the rules of its day: re-registering an
    rrule of one of its primitives re-traces instead of answering with the old gradient."""
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path))
    cube = ad.primitive(lambda x: x * x * x, name=f"test_grad_cube_cached_{form}")
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))
    x = np.array([1.0, 2.0])
    g = ad.grad(lambda x: np.sum(cube(x)), form=form)
    np.testing.assert_allclose(g(x), 3 * x * x)
    np.testing.assert_allclose(g(x), 3 * x * x)
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (5 * x * x * dy,)))   # visibly not the derivative
    np.testing.assert_allclose(g(x), 5 * x * x)
    np.testing.assert_allclose(g(x), 5 * x * x)
    info = g.cache_info()
    assert (info.signatures, info.tapes) == (1, 1)     # the new tape replaced the stale one
