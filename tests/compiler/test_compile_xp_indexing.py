"""numpy's indexing in compiled array code (docs/arrays.md): the standard gathers (``xp.take``)
and has no scatter, so an index known when compiling (basic indexing, constant index arrays and
masks) is written as the positions it selects, a constant (``ad.core_prims.POSITIONS``). The
gradient of a program with every kind of static index (repeats, negative indices and steps, a
mask, writes) runs on array_api_strict, PyTorch, JAX (and CuPy on a GPU) and equals numpy's
compiled gradient, which equals jax.grad of the same program in jax.numpy; numpy as the
namespace gives numpy's bits; nothing moves to the host; positions that follow the number of
examples are refused when compiling. An index array the program computes is gathered with
positions computed on the device (numpy's bits everywhere) and written with the library's own
scatter: the gradients of sort, median, take_along_axis and fancy indexing on PyTorch and JAX
equal numpy's and jax.grad's; array_api_strict, without a scatter, refuses the write."""
from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import ad
import array_api_strict as xps
from ad.compiler.array_api import ArrayAPIError
from tests.compiler.xp_support import (CPU, DEVICE, LIBRARIES, assert_same_as_numpy, jax_float64, marks,  # noqa: F401
                                       on, transfers)

ROWS = np.array([2, 0, -3, 1])                      # a constant index: row 2 twice (2 and -3)
MASK = np.array([True, False, True, True, False])


def _indexing_loss(x, w):
    a = x[ROWS, 1:] * w[1:]                    # a gather with a repeat: index_add with repeats back
    b = x[MASK][:, ::-2]                       # a constant mask; a negative step
    c = x[..., None, -1]
    y = np.zeros((5, 4), like=x)
    y[1:4:2, ROWS[:2]] = x[:2, :2] * w[:2]     # a write at a slice and an index array
    y[ROWS[1:3]] += x[:2]                      # read, add, write back
    y[[4, 4]] = x[:2]                          # a repeated write: the last one stays (numpy's)
    np.add.at(y, ROWS, 2.0 * x[1:])            # an index_add with a repeat
    return np.sum(a ** 2) + np.sum(np.tanh(b)) + np.sum(c * c) + np.sum(y ** 2)


def _indexing_loss_in_jax(x, w):
    """The same program in jax.numpy, its writes as JAX spells them."""
    a = x[ROWS, 1:] * w[1:]
    b = x[MASK][:, ::-2]
    c = x[..., None, -1]
    y = jnp.zeros((5, 4)).at[1:4:2, ROWS[:2]].set(x[:2, :2] * w[:2])
    y = y.at[ROWS[1:3]].add(x[:2])
    y = y.at[4].set(x[1])
    y = y.at[ROWS].add(2.0 * x[1:])
    return jnp.sum(a ** 2) + jnp.sum(jnp.tanh(b)) + jnp.sum(c * c) + jnp.sum(y ** 2)


def _compiled(loss, x):
    """The gradient tape of ``loss`` at ``x`` and fixed weights, its flat inputs, numpy's compiled outputs."""
    w = np.linspace(0.5, 2.0, 4)
    gt = ad.optimize(ad.grad_tape(loss, x, w, argnums=(0, 1)))
    flat = gt.flatten_args((x, w))
    return gt, flat, ad.compile(gt).run(flat)


@pytest.fixture(scope="module")
def indexing():
    return _compiled(_indexing_loss, np.random.default_rng(7).standard_normal((5, 4)))


def _equals_jax(compiled, loss_in_jax):
    gt, (x, w), (value, dx, dw) = compiled
    want_value, (want_dx, want_dw) = jax.value_and_grad(loss_in_jax, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(value, want_value, rtol=1e-13)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-13, atol=1e-13)


def test_numpys_gradient_is_jaxs(indexing):
    """The independent oracle: what the array code must equal is jax.grad's gradient."""
    _equals_jax(indexing, _indexing_loss_in_jax)


@pytest.mark.parametrize("library", [pytest.param(lib, marks=marks(lib)) for lib in LIBRARIES])
def test_static_indexing_runs_on_each_library(indexing, library):
    gt, flat, want = indexing
    compiled = ad.compile(gt, xp=library)
    source = compiled.source
    assert "= index_add(v" in source and "= setitem(v" in source and "= getitem(v" in source, source
    assert "v3 = v1[1:, ...]" in source                              # basic slicing stays slicing
    assert_same_as_numpy(compiled.run(on(compiled.xp, flat)), want, f"indexing on {library}:\n{source}")


def test_every_constant_moved_to_the_device_is_read(indexing):
    """The positions replace the constant index arrays: those are not moved to the device."""
    gt, _, _ = indexing
    lines = ad.compile(gt, xp=xps).source.splitlines()
    at = next(k for k, line in enumerate(lines) if "= on_device(device)" in line)
    moved = [name.strip() for name in lines[at].split("=")[0].split(",")]
    body = "\n".join(lines[at + 1:])
    assert moved and all(re.search(rf"\b{name}\b", body) for name in moved), (moved, body)


def test_numpy_as_the_namespace_gives_numpys_bits(indexing):
    """Takes and one layer of addends at a time, in numpy's order: no other rounding."""
    gt, flat, want = indexing
    for g, w in zip(ad.compile(gt, xp=np).run(flat), want):
        assert np.array_equal(g, w)


def test_nothing_moves_to_the_host(indexing, transfers):
    gt, flat, want = indexing
    compiled = ad.compile(gt, xp=xps)
    got = compiled.run(on(xps, flat, DEVICE))
    assert transfers == []
    assert all(g.device == DEVICE for g in got)
    assert_same_as_numpy([g.to_device(CPU) for g in got], want, "indexing on device1")


def test_float32_values_written_into_float64_are_cast_as_numpy_casts():
    def loss(x, v):
        y = np.zeros(6, like=x)
        y[::2] = v                               # a float32 value into float64
        return np.sum(y * x) + np.sum(v ** 2)
    args = (np.linspace(1.0, 2.0, 6), np.array([0.5, 1.5, 2.5], np.float32))
    gt = ad.grad_tape(loss, *args, argnums=(0, 1))
    want = ad.compile(gt).run(list(args))
    for library in ("array_api_strict", "torch"):
        compiled = ad.compile(gt, xp=library)
        assert_same_as_numpy(compiled.run(on(compiled.xp, args)), want, library)


def _sorted_loss(x):
    return np.sum(x[np.argsort(x)] * np.arange(4.0))      # an index the program computes


def test_a_computed_scatter_refuses_on_array_api_strict_at_compile_time_naming_it():
    """The gather compiles everywhere; the scatter of its gradient needs a library's own."""
    gt = ad.grad_tape(_sorted_loss, np.array([3.0, 1.0, 4.0, 1.5]))
    with pytest.raises(ArrayAPIError) as info:
        ad.compile(gt, xp=xps)
    message = str(info.value)
    assert "cannot write index_add" in message and "its index arrays (%1) are values the program computes" in message
    assert "array_api_strict has no scatter" in message and "x[np.argsort(x)]" in message   # the user's line
    ad.compile(ad.trace(_sorted_loss, np.array([3.0, 1.0, 4.0, 1.5])), xp=xps)   # the gather alone compiles


# index arrays the program computes, against every kind of item around them
COMPUTED_INDEXES = {
    "one array": lambda x, i, j: x[i],
    "negative, a slice after": lambda x, i, j: x[-1 - i, 1:],
    "two arrays broadcast": lambda x, i, j: x[i[:, None], j],
    "a slice between (axes first)": lambda x, i, j: x[i[:2], ::2, j[:2]],
    "None, ellipsis, an int": lambda x, i, j: x[None, ..., 1, j],
    "an int and an array apart": lambda x, i, j: x[1, :, j],
    "constant and computed": lambda x, i, j: x[np.array([0, 2]), :, j[:2]],
}


def _indexed(fn):
    def program(x):
        i = np.argsort(x[:, 0, 0])                          # computed: rows by their first entry
        j = np.argsort(x[0, 0, :3]) - 3                     # computed and negative
        return fn(x, i, j)
    return program


@pytest.mark.parametrize("name", COMPUTED_INDEXES)
def test_a_computed_gather_is_numpys_bits_on_each_library(name):
    x = np.random.default_rng(11).standard_normal((4, 3, 5))
    tape = ad.trace(_indexed(COMPUTED_INDEXES[name]), x)
    want = ad.compile(tape).run([x])
    for library in ("array_api_strict", "torch", "jax"):
        compiled = ad.compile(tape, xp=library)
        (got,) = compiled.run(on(compiled.xp, [x]))
        got = np.asarray(got.to_device(CPU)) if library == "array_api_strict" else np.asarray(got)
        assert got.shape == want[0].shape and np.array_equal(got, want[0]), (name, library, compiled.source)


def _order_statistics(x, w):
    a = np.sum(np.sort(x, axis=1) * w)                            # gather and scatter along an axis
    b = np.sum(np.median(x, axis=0) ** 2)                         # the middle of each column
    c = np.sum(np.take_along_axis(x, np.argsort(x, axis=0), axis=0)[:2] * w)
    d = np.sum(np.tanh(x[np.argmax(x, axis=0), 1:]))              # a fancy index, repeats possible
    return a + b + c + d


def _order_statistics_in_jax(x, w):
    a = jnp.sum(jnp.sort(x, axis=1) * w)
    b = jnp.sum(jnp.median(x, axis=0) ** 2)
    c = jnp.sum(jnp.take_along_axis(x, jnp.argsort(x, axis=0), axis=0)[:2] * w)
    d = jnp.sum(jnp.tanh(x[jnp.argmax(x, axis=0), 1:]))
    return a + b + c + d


@pytest.fixture(scope="module")
def order_statistics():
    x = np.random.default_rng(5).standard_normal((5, 4))
    x[3, 1] = x[0, 2] = np.max(x) + 1.0                       # row 0 and row 3 both hold a maximum: repeats
    return _compiled(_order_statistics, x)


def test_order_statistics_gradient_is_jaxs(order_statistics):
    _equals_jax(order_statistics, _order_statistics_in_jax)


@pytest.mark.parametrize("library", ["numpy", "torch", "jax",
                                     pytest.param("cupy", marks=marks("cupy"))])
def test_order_statistics_gradient_runs_on_each_library_with_a_scatter(order_statistics, library):
    """numpy's np.add.at is numpy's bits; PyTorch's and JAX's scatter-adds may sum a
    position's repeats in another order: equal to rounding."""
    gt, flat, want = order_statistics
    compiled = ad.compile(gt, xp=library)
    assert "axes=(" in compiled.source and "= index_add(v" in compiled.source, compiled.source
    got = compiled.run(on(compiled.xp, flat))
    if library == "numpy":
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
    assert_same_as_numpy(got, want, f"order statistics on {library}:\n{compiled.source}")


def _written(x, v):
    y = np.zeros((4, 3), like=x)
    y[np.argsort(x[:, 0]) % 2, 1:] = v[:, None] * x[:, 1:]   # computed positions, each written twice
    y[np.argmin(x, axis=0)] += x[0]                          # read, add, write back
    return np.sum(y * x[:, ::-1]) + np.sum(v ** 2)


def _written_in_jax(x, v):
    rows = jnp.argsort(x[:, 0]) % 2
    last = jnp.array([int(np.max(np.nonzero(np.asarray(rows) == r)[0])) for r in range(2)])
    y = jnp.zeros((4, 3)).at[rows[last], 1:].set((v[:, None] * x[:, 1:])[last])   # numpy's last write
    y = y.at[jnp.argmin(x, axis=0)].set(y[jnp.argmin(x, axis=0)] + x[0])
    return jnp.sum(y * x[:, ::-1]) + jnp.sum(v ** 2)


def test_a_computed_write_keeps_numpys_last_write_on_each_library():
    x = np.random.default_rng(2).standard_normal((4, 3))
    v = np.array([0.5, 1.5, -2.0, 3.0])
    gt = ad.optimize(ad.grad_tape(_written, x, v, argnums=(0, 1)))
    flat = gt.flatten_args((x, v))
    want = ad.compile(gt).run(flat)
    want_value, want_grads = jax.value_and_grad(_written_in_jax, argnums=(0, 1))(x, v)
    np.testing.assert_allclose(want[0], want_value, rtol=1e-13)
    for g, w in zip(want[1:], want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)
    for library in ("numpy", "torch", "jax"):
        compiled = ad.compile(gt, xp=library)
        assert "= setitem(v" in compiled.source and "axes=(" in compiled.source, compiled.source
        assert_same_as_numpy(compiled.run(on(compiled.xp, flat)), want, f"writes on {library}")


def test_a_computed_gather_moves_nothing_to_the_host(transfers):
    x = np.random.default_rng(4).standard_normal((4, 3, 5))
    tape = ad.trace(_indexed(COMPUTED_INDEXES["two arrays broadcast"]), x)
    want = ad.compile(tape).run([x])
    got = ad.compile(tape, xp=xps).run(on(xps, [x], DEVICE))
    assert transfers == [] and got[0].device == DEVICE
    assert np.array_equal(np.asarray(got[0].to_device(CPU)), want[0])


def test_positions_that_follow_the_number_of_examples_refuse():
    """A polymorphic tape (examples=) runs at any number of examples: positions computed at
    the sample's would be wrong at another."""
    def loss(w, X):
        return np.mean(np.tanh(X[:, [0, 2, 2]] @ w))
    X = np.random.default_rng(3).standard_normal((8, 4))
    gt = ad.grad_tape(loss, np.ones(3), X, argnums=0, examples=(1,))
    with pytest.raises(ArrayAPIError) as info:
        ad.compile(gt, xp=xps)
    assert "cannot write getitem" in str(info.value)
    assert "the positions it selects follow the number of examples" in str(info.value)
