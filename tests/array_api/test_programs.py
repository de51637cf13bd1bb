"""Programs written against the array API standard only (tests/array_api/programs.py), traced by
ad with numpy inputs (``array_namespace`` of a tracer is ad's namespace, ad/lib/array_api.py):
their gradient in every form equals central finite differences and ``jax.grad`` of the very same
function run on jax.numpy arrays (``array_namespace`` then picks jax.numpy), ``ad.check`` passes on
the whole programs, and generated programs over the standard's part of the shared vocabulary
(tests/support/generated_programs.py) agree with jax. About 35 s of CPU, most of it jax's."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ad
from tests.array_api.programs import FUNCTIONS, NO_JAX, PROGRAMS, loss
from tests.support.generated_programs import OPS, SETTINGS, build, program_inputs
from tests.support.needs import module
from tests.support.numeric import fd_grad

array_api_compat = module("array_api_compat")
strict = module("array_api_strict")

FORMS = ("lifted", "closure", "compiled")


def _jax():
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def _partial(f, args, k):
    """``f`` as a function of its argument ``k`` alone (the others fixed)."""
    return lambda v: f(*args[:k], v, *args[k + 1:])


def _assert_gradients(f, args, argnums, fd=True, jax=True, rtol=1e-9):
    """ad's gradient of ``f`` at ``args`` in every form against finite differences and jax.grad."""
    want = [fd_grad(_partial(f, args, k), args[k]) for k in argnums] if fd else None
    if jax:
        jx = _jax()
        oracle = jx.grad(f, argnums=argnums)(*[jx.numpy.asarray(a) for a in args])
    value, _ = ad.value_and_grad(f, argnums)(*args)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)           # (f on numpy: array_api_compat.numpy)
    for form in FORMS:
        for k, g in enumerate(ad.grad(f, argnums, form=form)(*args)):
            assert g.shape == np.shape(args[argnums[k]]) and g.dtype == np.float64, (form, k)
            if fd:
                np.testing.assert_allclose(g, want[k], rtol=1e-5, atol=1e-6, err_msg=f"{form}, argument {argnums[k]}")
            if jax:
                np.testing.assert_allclose(g, np.asarray(oracle[k]), rtol=rtol, atol=1e-12,
                                           err_msg=f"{form} vs jax.grad, argument {argnums[k]}")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_has_the_gradient_of_finite_differences_and_of_jax(name):
    f, inputs, argnums = PROGRAMS[name]
    _assert_gradients(f, inputs(0), argnums)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_ad_check_passes_on_a_program(name):
    f, inputs, argnums = PROGRAMS[name]
    report = ad.check(f, *inputs(1), argnums=argnums)
    assert report.ok, report


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_function_of_the_standard_has_the_gradient_of_finite_differences_and_of_jax(name):
    x = np.random.default_rng(3).standard_normal((3, 4))
    _assert_gradients(loss(name), (x,), (0,), jax=name not in NO_JAX, rtol=1e-8 if "linalg" in name else 1e-9)


def test_unique_values_with_repeats_send_the_gradient_to_one_of_the_equal_elements():
    """With repeated values finite differences have no single answer: the gradient of each unique
    value v (of the loss, the sum of v**4) goes to the first of its equal elements (a stable
    sort's), as a gather would."""
    x = np.array([[2.0, -1.0, 2.0], [0.5, -1.0, 3.0]])
    g = ad.grad(loss("unique_values"))(x)
    np.testing.assert_array_equal(g, [[4 * 2.0 ** 3, 4 * -1.0, 0.0], [4 * 0.5 ** 3, 0.0, 4 * 3.0 ** 3]])


# -- generated programs ---------------------------------------------------------------------------

def _in_the_standard(name) -> bool:
    """Whether an op of the shared vocabulary is written with the standard's names alone: it runs
    on array_api_strict, which has nothing else."""
    arity, op = OPS[name]
    x = strict.asarray(np.linspace(-1.0, 1.0, 4))
    try:
        op(strict, *(x, x)[:arity])
    except (AttributeError, TypeError, IndexError):
        return False
    return True


STANDARD_OPS = sorted(name for name in OPS if _in_the_standard(name))
STANDARD_PROGRAMS = st.lists(st.tuples(st.sampled_from(STANDARD_OPS), st.integers(0, 100), st.integers(0, 100)),
                             min_size=1, max_size=10)


def test_the_standard_part_of_the_vocabulary_is_most_of_it():
    """(``outer_sum`` is not: its sum takes the axis by position, the standard by keyword.)"""
    assert len(STANDARD_OPS) >= 15 and {"softmax", "centre", "hypot", "roll", "logaddexp"} <= set(STANDARD_OPS)
    assert "outer_sum" not in STANDARD_OPS and "concat_split" not in STANDARD_OPS


def _standard_program(program):
    """The generated program with its namespace taken from its inputs."""
    def f(x0, x1):
        xp = array_api_compat.array_namespace(x0, x1)
        y = build(program, xp)(x0, x1)
        return xp.sum(y * y)
    return f


@settings(SETTINGS, max_examples=25)
@given(program=STANDARD_PROGRAMS, seed=st.integers(0, 2 ** 16))
def test_a_generated_program_of_the_standard_has_the_gradient_of_jax(program, seed):
    _assert_gradients(_standard_program(program), program_inputs(seed), (0, 1), fd=False, rtol=1e-8)
