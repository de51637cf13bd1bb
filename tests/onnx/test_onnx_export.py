"""ONNX export: the MLP (joint, forward, lifted backward, partition), the CNN, random programs
and random indexing run in onnxruntime with ad's values and gradients; opaque rules and
primitives without a lowering are refused with readable reasons."""
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ad
from ad.passes import optimize
from tests.support.serialize_cases import (closure_only_rule, mlp_args, mlp_loss, program_function,
                                           program_inputs, programs, run_onnx)

from tests.support.needs import module
onnx = module("onnx")
module("onnxruntime")
from ad.onnx import (LOWERINGS, NOT_LOWERED, LoweringError, NotSerializableError, export_partition)  # noqa: E402
from ad.onnx.lowering import lowers, not_lowered  # noqa: E402
from tests.support.onnx_coverage import library_primitives  # noqa: E402


def close(got, want, rtol=1e-12, atol=1e-13):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * max(1.0, float(np.max(np.abs(w), initial=0))))


def run_partition(gt, *args):
    """The fwd model on ``args``, then the bwd model on its residuals (and seed ones, if the
    seed was not folded into a constant)."""
    fwd, bwd = export_partition(gt)
    for m in (fwd, bwd):
        onnx.checker.check_model(m, full_check=True)
    out = run_onnx(fwd, *args)
    residuals = out[gt.n_values:]
    seeds = [np.ones(())] * (len(bwd.graph.input) - len(residuals))
    return out[:gt.n_values] + run_onnx(bwd, *residuals, *seeds)


def exported(tape):
    model = ad.to_onnx(tape)
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture(scope="module")
def mlp():
    args = mlp_args()
    gt = ad.grad_tape(mlp_loss, *args, argnums=(0, 1, 2, 3))
    value, grads = gt(*args)
    return args, gt, [value, *grads]


def test_mlp_joint_tape(mlp):
    args, gt, want = mlp
    model = exported(gt)
    assert [i.name for i in model.graph.input] == ["W1", "b1", "W2", "b2", "X", "Y"]
    assert [o.name for o in model.graph.output] == ["out0", "grad0", "grad1", "grad2", "grad3"]
    close(run_onnx(model, *args), want)
    close(run_onnx(model, *args), [ad.value_and_grad(mlp_loss, (0, 1, 2, 3))(*args)[0],
                                   *ad.grad(mlp_loss, (0, 1, 2, 3))(*args)])
    close(run_onnx(exported(optimize(gt)), *args), want)


def test_mlp_forward_and_lifted_backward(mlp):
    args, gt, want = mlp
    close(run_onnx(exported(gt.forward), *args), want[:1])
    bwd = gt.backward                          # inputs: the residuals it reads (no seeds: seed 1)
    residuals = dict(zip(gt.inputs, args))
    from ad.tape import eval_tape
    env: dict = {}
    eval_tape(gt.forward, list(args), env)
    feeds = [env[v] if v in env else residuals[v] for v in bwd.inputs]
    close(run_onnx(exported(bwd), *feeds), want[1:])


def test_mlp_partition(mlp):
    args, gt, want = mlp
    close(run_partition(gt, *args), want)
    close(run_partition(optimize(gt), *args), want)


def test_mlp_float32():
    args = mlp_args(dtype=np.float32)
    gt = ad.grad_tape(mlp_loss, *args, argnums=(0, 1, 2, 3))
    value, grads = gt(*args)
    close(run_onnx(exported(gt), *args), [value, *grads], rtol=1e-5, atol=1e-6)


def test_vjp_tape_takes_cotangents():
    _, pullback = ad.vjp(lambda x, y: np.tanh(x) * y, np.full((2, 3), 0.3), np.full((2, 3), 2.0))
    gt = pullback.tape
    x, y, ct = np.linspace(-1, 1, 6).reshape(2, 3), np.full((2, 3), 2.0), np.arange(6.0).reshape(2, 3)
    model = exported(gt)
    assert [i.name for i in model.graph.input] == ["x", "y", "ct0"]
    value, grads = gt(x, y, cotangents=[ct])
    close(run_onnx(model, x, y, ct), [value, *grads])


def test_cnn():
    examples = module("ad.examples.networks")
    module("sklearn", "the CNN example loads scikit-learn's digits")
    model = examples.digits_cnn()
    args = (model.params, model.x[:16], model.y[:16])
    gt = ad.grad_tape(model.loss, *args)
    value, grads = ad.value_and_grad(model.loss)(*args)
    feeds = [model.params[k] for k in model.params] + list(args[1:])
    close(run_onnx(exported(gt), *feeds), [value, *(grads[k] for k in model.params)], rtol=1e-11)
    close(run_partition(gt, *feeds), [value, *(grads[k] for k in model.params)], rtol=1e-11)


@settings(max_examples=25, deadline=None)
@given(programs())
def test_random_programs(program):
    f, xs = program_function(program), program_inputs(program)
    argnums = tuple(range(len(xs)))
    gt = ad.grad_tape(f, *xs, argnums=argnums)
    new = program_inputs(program, seed=5)       # the model runs on other inputs than traced
    want = [ad.value_and_grad(f, argnums)(*new)[0], *ad.grad(f, argnums)(*new)]
    close(run_onnx(exported(gt), *new), want, rtol=1e-10)
    close(run_partition(optimize(gt), *new), want, rtol=1e-10)


# -- indexing: random index expressions against numpy and ad ----------------------------------------

@st.composite
def indices(draw, shape=(4, 5, 6), unique=False):
    """A numpy index for ``shape``: ints, slices (negative steps too), integer arrays (all of
    one length, so they broadcast), None and Ellipsis."""
    k = draw(st.integers(1, 3))
    items = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["int", "slice", "array", "full"]))
        if kind == "int":
            items.append(draw(st.integers(-4, 3)))
        elif kind == "slice":
            bound = st.none() | st.integers(-7, 7)
            items.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1, -2, 3]))))
        elif kind == "array":
            values = draw(st.lists(st.integers(0, 3), min_size=k, max_size=k, unique=unique))
            items.append(np.array([v - 4 if draw(st.booleans()) else v for v in values]))
        else:
            items.append(slice(None))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), None)
    if len([i for i in items if i is not None]) < 3 and draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


def _result_shape(index, shape=(4, 5, 6)):
    try:
        return np.zeros(shape)[index].shape
    except IndexError:
        assume(False)


@settings(max_examples=60, deadline=None)
@given(indices(), st.booleans())
def test_random_getitem(index, traced_index):
    """x[index]; with ``traced_index`` the integer arrays are computed from x (traced operands)."""
    out_shape = _result_shape(index)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 5, 6)), rng.standard_normal(out_shape)

    def f(x):
        idx = index
        if traced_index:   # the same integers, but read from a traced array
            idx = tuple(np.round(x[0, 0, 0] * 0).astype(np.int64) + i if isinstance(i, np.ndarray) else i
                        for i in index)
        return np.sum(np.tanh(x[idx]) * w)
    gt = ad.grad_tape(f, x)
    close(run_onnx(exported(gt), x), [gt(x)[0], gt(x)[1]], rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(indices(unique=True), st.booleans())
def test_random_setitem_and_add_at(index, add):
    out_shape = _result_shape(index)
    rng = np.random.default_rng(1)
    x, v = rng.standard_normal((4, 5, 6)), rng.standard_normal(out_shape)

    def f(x, v):
        z = x * 1.0
        if add:
            np.add.at(z, index, v * 2.0)
        else:
            z[index] = v * 2.0
        return np.sum(np.sin(z) * np.arange(120.0).reshape(4, 5, 6) / 100)
    gt = ad.grad_tape(f, x, v, argnums=(0, 1))
    value, grads = gt(x, v)
    close(run_onnx(exported(gt), x, v), [value, *grads], rtol=1e-12)


# -- refusals -----------------------------------------------------------------------------------

def test_closure_only_rule_is_refused_with_reason():
    with closure_only_rule() as doubled:
        gt = ad.grad_tape(lambda x: np.sum(doubled(np.sin(x)) ** 2), np.ones(3))
    assert [f.rule for f in gt.fallbacks] == ["serialize_tests.doubled"]
    with pytest.raises(NotSerializableError) as info:
        ad.to_onnx(gt)
    msg = str(info.value)
    assert "cannot be exported to ONNX" in msg and "serialize_tests.doubled" in msg
    assert "ConcretizationError" in msg                       # why the rule could not be lifted
    assert "np.sum(doubled(np.sin(x)) ** 2)" in msg           # the user's line
    with pytest.raises(NotSerializableError, match="serialize_tests.doubled"):
        ad.to_onnx(gt.forward)


def test_primitive_without_lowering_is_named():
    gt = ad.grad_tape(lambda x: np.sum(np.nextafter(x, 2.0) * x), np.ones(3))
    with pytest.raises(LoweringError, match=r"no ONNX lowering for nextafter \(1x, first equation 0"):
        ad.to_onnx(gt)
    tape = ad.trace(lambda x: x.astype(np.longdouble), np.ones(3))
    with pytest.raises(LoweringError, match="dtype float128 has no ONNX tensor type: cannot lower %1"):
        ad.to_onnx(tape)


# -- the lowering table ----------------------------------------------------------------------------

def test_every_library_primitive_lowers_or_says_why():
    """The table is keyed by the primitive objects; nothing is left without a lowering unless
    NOT_LOWERED (or, for ad.scipy's primitives, not_lowered) says why."""
    assert all(isinstance(p, ad.Primitive) for p in [*LOWERINGS, *NOT_LOWERED])
    missing = [n for n in library_primitives()
               if ad.REGISTRY[n] not in LOWERINGS and not not_lowered(ad.REGISTRY[n])]
    assert not missing, f"library primitives with neither a lowering nor a reason: {missing}"
    assert not set(LOWERINGS) & set(NOT_LOWERED)


def test_a_new_primitive_registers_its_lowering_by_object():
    halve = ad.Primitive("test_onnx_halve", lambda x: x / 2, elementwise=True)
    lowers(halve)(lambda g, e: g.op("Div", g.x(e.inputs[0]), g.const(np.asarray(2.0))))
    try:
        tape = ad.trace(lambda x: halve.bind(np.sin(x)), np.arange(3.0))
        close(run_onnx(exported(tape), np.arange(3.0)), [np.sin(np.arange(3.0)) / 2])
    finally:
        del LOWERINGS[halve]


def test_ad_imports_without_onnx():
    code = ("import sys; sys.modules['onnx'] = None; import numpy as np, ad; "
            "t = ad.trace(np.sin, np.ones(2)); ad.loads = None\n"
            "try:\n    ad.to_onnx(t)\nexcept ImportError:\n    print('refused')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "refused"
