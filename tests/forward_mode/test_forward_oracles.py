"""Forward mode against other systems: ``ad.jvp`` against ``jax.jvp`` and ``torch.func.jvp`` on
the spec table's ufunc samples and on generated programs (hypothesis); ``ad.jacfwd``,
``ad.jacrev`` and ``ad.hessian`` against HIPS autograd's ``jacobian``/``hessian`` and
``torch.autograd.functional.jacobian``/``hessian`` on the same generated programs. The programs
are written once over a module ``m`` (numpy, jax.numpy, torch or autograd.numpy), in
tests/support/generated_programs.py, where tests/forward_mode/test_forward.py and
tests/transforms/test_jacobians.py draw their generated programs too. About 25 s of
CPU, importing jax and torch included."""
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ad
from tests.support.cases import PRIMITIVE_CASES, leaves
from tests.support.generated_programs import GENERATED, SETTINGS, build, program_data, scalar
from tests.support.needs import module

ORACLE_SETTINGS = settings(SETTINGS, max_examples=25)       # the oracles are slower


def _jax():
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


# -- the spec table ---------------------------------------------------------------------------

# numpy ufuncs the oracles do not differentiate, or differentiate wrongly
NO_ORACLE = {"nextafter": "jax and torch have no derivative rule for it (ad's: 1 in x, 0 in y, as autograd's)"}
WRONG_ORACLE = {("ldexp", "torch"): "torch.func.jvp computes d ldexp(x, e)/dx = 2**e in integers: 0 for e < 0"}


def _ufunc_cases():
    """The samples of primitives that are numpy ufuncs called without params (jax.numpy spells
    them alike; torch where it has the name)."""
    return [pytest.param(c, id=c.name) for c in PRIMITIVE_CASES
            if isinstance(c.primitive.function, np.ufunc) and getattr(np, c.primitive.function.__name__, None)
            is c.primitive.function and c.primitive.function.__name__ not in NO_ORACLE and not c.sample.params
            and c.sample.call is None and c.sample.derive is None and c.primitive.differentiable]


def _split(case, rng):
    """The sample's operands (at its first shape set), its float positions and a tangent each."""
    xs = case.inputs(case.sample.shapes[0], rng)
    floats = [k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.floating)]
    return xs, floats, [rng.standard_normal(np.shape(xs[k])) for k in floats]


def _over(fn, xs, floats):
    """``fn`` as a function of the float operands alone (the others fixed)."""
    def g(*fx):
        args = list(xs)
        for k, v in zip(floats, fx):
            args[k] = v
        return fn(*args)
    return g


def _literal_call(case, fn, array):
    """``fn`` called like the sample's ``bind``: its literal operands in place (as ``array``s)."""
    def call(*values):
        it = iter(values)
        return fn(*[array(i.value) if i.kind == "literal" else next(it) for i in case.sample.inputs])
    return call


@pytest.mark.parametrize("case", _ufunc_cases())
def test_spec_table_jvp_against_jax_and_torch(case):
    jax, jnp = _jax()
    torch = module("torch")
    name = case.primitive.function.__name__
    xs, floats, ts = _split(case, np.random.default_rng(zlib.crc32(case.name.encode())))
    assert floats, f"{case.name}: a differentiable sample with no float operand"
    y, ty = ad.jvp(_over(case.fn, xs, floats), tuple(xs[k] for k in floats), tuple(ts))
    oracles = [(jax.jvp, jnp, jnp.asarray)] + [(torch.func.jvp, torch, torch.as_tensor)] * (
        hasattr(torch, name) and (name, "torch") not in WRONG_ORACLE)
    for jvp, m, array in oracles:
        fn = _over(_literal_call(case, getattr(m, name), array), [array(x) for x in xs], floats)
        _, want = jvp(fn, tuple(array(xs[k]) for k in floats), tuple(map(array, ts)))
        for a, b in zip(leaves(ty), leaves(want)):
            if a is not None:               # an integer output (frexp's exponent) has no tangent
                np.testing.assert_allclose(a, np.asarray(b), rtol=1e-9, atol=1e-12, err_msg=f"{name}: {m.__name__}")


def test_the_spec_table_comparison_covers_the_ufuncs():
    jnp = _jax()[1]
    compared = {c.values[0].primitive.function.__name__ for c in _ufunc_cases()
                if hasattr(jnp, c.values[0].primitive.function.__name__)}
    assert len(compared) >= 50 and {"sin", "arctan2", "hypot", "logaddexp", "power"} <= compared, sorted(compared)


# -- generated programs -------------------------------------------------------------------------

@ORACLE_SETTINGS
@given(GENERATED, st.integers(0, 2**16))
def test_generated_programs_jvp_against_jax_and_torch(program, seed):
    jax, jnp = _jax()
    torch = module("torch")
    x0, x1, t0, t1 = program_data(seed)
    _, ty = ad.jvp(build(program, np), (x0, x1), (t0, t1))
    _, jty = jax.jvp(build(program, jnp), tuple(map(jnp.asarray, (x0, x1))), tuple(map(jnp.asarray, (t0, t1))))
    np.testing.assert_allclose(ty, np.asarray(jty), rtol=1e-9, atol=1e-12)
    _, tty = torch.func.jvp(build(program, torch), tuple(map(torch.as_tensor, (x0, x1))),
                            tuple(map(torch.as_tensor, (t0, t1))))
    np.testing.assert_allclose(ty, tty.numpy(), rtol=1e-9, atol=1e-12)


@ORACLE_SETTINGS
@given(GENERATED, st.integers(0, 2**16))
def test_generated_programs_jacobians_and_hessians_against_autograd_and_torch(program, seed):
    agrad = module("autograd")
    anp = module("autograd.numpy")
    torch = module("torch")
    x0, x1, _, _ = program_data(seed)
    f, loss = build(program, np), scalar(build(program, np), np)
    J = ad.jacobian(f, argnums=(0, 1))(x0, x1)
    H = ad.hessian(loss, argnums=(0, 1))(x0, x1)
    tx = tuple(map(torch.as_tensor, (x0, x1)))
    tJ = torch.autograd.functional.jacobian(build(program, torch), tx)
    tH = torch.autograd.functional.hessian(scalar(build(program, torch), torch), tx)
    for k in range(2):
        aJ = agrad.jacobian(build(program, anp), k)(x0, x1)
        np.testing.assert_allclose(J[k], aJ, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ad.jacfwd(f, k)(x0, x1), tJ[k].numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ad.jacrev(f, k)(x0, x1), tJ[k].numpy(), rtol=1e-9, atol=1e-12)
        for j in range(2):
            np.testing.assert_allclose(H[k][j], tH[k][j].numpy(), rtol=1e-8, atol=1e-10)
    aH = agrad.hessian(scalar(build(program, anp), anp), 0)(x0, x1)
    np.testing.assert_allclose(H[0][0], aH, rtol=1e-8, atol=1e-10)
