"""Compiled gradients on other array libraries (``ad.compile(tape, xp=...)``, ``ad.grad(f,
form="compiled", xp=...)``, docs/arrays.md): the MLP and the CNN examples run on
array_api_strict, PyTorch CPU tensors, JAX arrays (and CuPy on a GPU) and equal numpy's
compiled gradient to rounding, in numpy's dtypes, and PyTorch's own autograd on the MLP; numpy
as the namespace gives numpy's bits; the inputs' device is where everything runs, and nothing
moves to the host (counted on array_api_strict's second device); what a namespace cannot write
is refused when compiling, naming the primitive, the equation, the user's line and the fix."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

import ad
import array_api_strict as xps
from ad.compiler.array_api import ArrayAPIError, namespace
from ad.examples.networks import digits_cnn
from ad.examples.programs import mlp_example, mlp_loss, mlp_loss_for
from tests.compiler.xp_support import (CPU, DEVICE, LIBRARIES, assert_same_as_numpy, jax_float64, marks,  # noqa: F401
                                       on, transfers)


def _cnn_args(dtype):
    model = digits_cnn(dtype=dtype)
    return model.loss, (model.params, model.x[:16], model.y[:16])


def _mlp_args(dtype):
    return mlp_loss, mlp_example(dtype=dtype)


PROGRAMS = {"mlp": _mlp_args, "cnn": _cnn_args}


@pytest.fixture(scope="module")
def tapes():
    """(gradient tape, flat inputs, numpy's compiled outputs) per program and dtype."""
    out = {}
    for name, make in PROGRAMS.items():
        for dtype in (np.float64, np.float32):
            loss, args = make(dtype)
            gt = ad.optimize(ad.grad_tape(loss, *args))
            flat = gt.flatten_args(args)
            out[name, dtype] = gt, flat, ad.compile(gt).run(flat)
    return out


def _library_cases():
    """Each library, program and dtype; JAX's CNN at float64 alone, and marked slow: JAX compiles
    each operation of a new shape on its first call (the CNN's first call: about 20 s)."""
    for library in LIBRARIES:
        for program in PROGRAMS:
            for dtype in (np.float64, np.float32):
                slow = library == "jax" and program == "cnn"
                if slow and dtype == np.float32:
                    continue
                yield pytest.param(library, program, dtype, id=f"{library}-{program}-{np.dtype(dtype).name}",
                                   marks=marks(library) + ([pytest.mark.slow] if slow else []))


@pytest.mark.parametrize("library,program,dtype", list(_library_cases()))
def test_the_examples_gradients_run_on_each_library(tapes, library, program, dtype):
    """The same numbers as numpy's compiled gradient, in numpy's dtypes (float64 stays float64
    on PyTorch, whose default is float32; float32 stays float32), as the library's arrays."""
    gt, flat, want = tapes[program, dtype]
    compiled = ad.compile(gt, xp=library)
    xp = compiled.xp
    got = compiled.run(on(xp, flat))
    kind = type(xp.asarray(0.0))
    assert all(type(g) is kind for g in got), [type(g) for g in got]
    assert_same_as_numpy(got, want, f"{program} on {library}")


def test_the_source_is_the_numpy_source_in_the_standards_names():
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    numpy_source, xp_source = ad.compile(gt).source, ad.compile(gt, xp=xps).source
    assert "xp.permute_dims(v2, axes=(1, 0))" in xp_source and "np.transpose(v2, axes=(1, 0))" in numpy_source
    assert "xp.tanh(" in xp_source and "np." not in xp_source
    assert "xp.full((), 1, dtype=xp.float64, device=device)" in xp_source     # created where the inputs are
    assert "v43 = v42 * xp.astype(v39, xp.float64)" in xp_source             # numpy's promotion of a bool, written
    assert len(xp_source.splitlines()) == len(numpy_source.splitlines()) + 1   # + the device line


@pytest.mark.parametrize("xp", [np, "numpy", "array_api_compat.numpy"])
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_numpy_as_the_namespace_gives_numpys_bits(tapes, xp, program):
    gt, flat, want = tapes[program, np.float64]
    xp = importlib.import_module(xp) if xp == "array_api_compat.numpy" else xp
    got = ad.compile(gt, xp=xp).run(flat)
    for g, w in zip(got, want):
        assert np.array_equal(g, w) and np.result_type(g) == np.result_type(w)


def test_the_mlp_gradient_on_torch_is_torch_autograds():
    """An independent oracle: the same MLP written over array_api_compat.torch and differentiated
    by PyTorch."""
    import torch
    xt = namespace("torch")
    params, x, y = mlp_example()
    tensors = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    loss = mlp_loss_for(xt)(tensors, torch.tensor(x), torch.tensor(y))
    want = torch.autograd.grad(loss, list(tensors.values()))
    value, grads = ad.value_and_grad(mlp_loss, form="compiled", xp="torch")(
        {k: torch.tensor(v) for k, v in params.items()}, torch.tensor(x), torch.tensor(y))
    assert abs(float(value) - float(loss.detach())) <= 1e-12 * abs(float(loss.detach()))
    for g, w in zip(grads.values(), want):
        assert g.dtype == torch.float64
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-14)


# -- devices: everything runs where the inputs are ----------------------------------------------

@pytest.mark.parametrize("program", list(PROGRAMS))
def test_inputs_stay_on_their_device_and_nothing_moves_to_the_host(tapes, transfers, program):
    gt, flat, want = tapes[program, np.float64]
    compiled = ad.compile(gt, xp=xps)
    args = on(xps, flat, DEVICE)
    got = compiled.run(args)
    got_again = compiled.run(args)
    assert transfers == []
    assert all(g.device == DEVICE for g in got + got_again)
    assert_same_as_numpy([g.to_device(CPU) for g in got], want, program)


def test_constants_move_to_each_device_once(tapes):
    """The CNN's gradient binds a numpy constant: moved once per device the code runs on."""
    gt, flat, want = tapes["cnn", np.float64]
    compiled = ad.compile(gt, xp=xps)
    assert "= on_device(device)" in compiled.source
    for device in (DEVICE, CPU, DEVICE, CPU):
        got = compiled.run(on(xps, flat, device))
        assert all(g.device == device for g in got)
    moved = compiled.fn.__globals__["on_device"].moved
    assert set(moved) == {DEVICE, CPU} and all(c.device == d for d, cs in moved.items() for c in cs)


def test_grad_traces_on_a_host_copy_once_then_runs_on_the_device(transfers):
    """``ad.grad(form="compiled", xp=...)``: the first call of a signature traces the numpy code
    on a copy of the arguments (one copy per array); later calls move nothing."""
    params, x, y = mlp_example()
    vg = ad.value_and_grad(mlp_loss, form="compiled", xp=xps)
    args = ({k: v for k, v in zip(params, on(xps, params.values(), DEVICE))}, *on(xps, (x, y), DEVICE))
    value, grads = vg(*args)
    assert len(transfers) == len(params) + 2
    del transfers[:]
    for _ in range(2):
        value, grads = vg(*args)
    assert transfers == [] and vg.cache_info().traces == 1 and vg.cache_info().hits == 2
    want_value, want = ad.value_and_grad(mlp_loss, form="compiled")(params, x, y)
    assert value.device == DEVICE and all(g.device == DEVICE for g in grads.values())
    assert_same_as_numpy([value, *grads.values()], [want_value, *want.values()], "grad on device1")


# -- what refuses, and how ----------------------------------------------------------------------

def _scaled_loss(x):
    return np.sum(np.ldexp(x, 3) * x)      # np.ldexp: numpy's, not the standard's


def test_a_numpy_only_function_refuses_at_compile_time_naming_it():
    gt = ad.grad_tape(_scaled_loss, np.linspace(1.0, 2.0, 4))
    with pytest.raises(ArrayAPIError) as info:
        ad.compile(gt, xp=xps)
    message = str(info.value)
    assert isinstance(info.value, NotImplementedError)
    assert "cannot write ldexp" in message and "%1:f64[4] = ldexp %0 3" in message  # the primitive, the equation
    assert "test_compile_xp.py" in message and "np.ldexp(x, 3) * x" in message      # the user's line
    assert "array_api_spelling=" in message and "without xp=" in message            # what to do
    assert info.value.location == gt.eqns[0].source
    with pytest.raises(ArrayAPIError, match="cannot write ldexp"):    # not the standard's: not taken from
        ad.compile(gt, xp="torch")                                     # a library that has one (torch.ldexp)


def test_a_library_that_has_the_function_runs_it_where_the_standard_does_not():
    """einsum is not the standard's: array_api_strict refuses it, PyTorch and JAX run it."""
    def loss(a, b):
        return np.sum(np.einsum("ij,jk->ik", a, b) ** 2)
    args = (np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4) / 10)
    gt = ad.grad_tape(loss, *args, argnums=(0, 1))
    with pytest.raises(ArrayAPIError, match="cannot write einsum over the array namespace: the namespace has no xp.einsum"):
        ad.compile(gt, xp=xps)
    want = ad.compile(gt).run(list(args))
    for library in ("torch", "jax"):
        compiled = ad.compile(gt, xp=library)
        assert_same_as_numpy(compiled.run(on(compiled.xp, args)), want, library)


def test_grad_refuses_at_its_first_call_and_asks_for_the_compiled_form():
    with pytest.raises(ArrayAPIError, match="cannot write ldexp"):
        ad.grad(_scaled_loss, form="compiled", xp=xps)(xps.asarray([1.0, 2.0]))
    with pytest.raises(ValueError, match="pass form='compiled'"):
        ad.grad(_scaled_loss, xp=xps)


def test_namespaces_by_module_or_shortcut():
    import array_api_compat.torch
    import torch
    assert namespace("torch") is array_api_compat.torch and namespace(torch) is array_api_compat.torch
    assert namespace(xps) is xps and namespace("numpy") is np
    with pytest.raises(ValueError, match="one of .*'torch'"):
        namespace("tensorflow")
    with pytest.raises(TypeError, match="takes no option 'xp'"):
        ad.compile(ad.trace(np.sin, np.ones(3)), backend="fused", xp=xps)


def test_jax_without_float64_refuses_a_float64_tape():
    """JAX makes float32 arrays of float64 unless x64 is on: refused, not silently float32."""
    import jax
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ArrayAPIError, match="come out float32: turn the library's float64 on"):
            ad.compile(gt, xp="jax")
        float32 = ad.grad_tape(mlp_loss, *mlp_example(dtype=np.float32))
        compiled = ad.compile(float32, xp="jax")
        flat = float32.flatten_args(mlp_example(dtype=np.float32))
        assert_same_as_numpy(compiled.run(on(compiled.xp, flat)), ad.compile(float32).run(flat), "jax f32")
    finally:
        jax.config.update("jax_enable_x64", True)
