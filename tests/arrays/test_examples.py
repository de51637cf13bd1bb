"""Gradients polymorphic in the number of examples (``examples=``): one tape traced on a sample,
compiled once, run on any number of examples, equal to a fresh trace at that number and to
central differences; and the programs it refuses, named by equation and line."""
import dataclasses

import numpy as np
import pytest

import ad
from tests.support.needs import module as optional_module
from ad.compiler.examples import ExamplesError, SizeInt
from tests.support.numeric import fd_grad

RNG = np.random.default_rng(0)


def logistic(w, b, X, y):
    z = X @ w + b
    return np.mean(np.logaddexp(0, z) - y * z)


def mlp(W1, b1, W2, X, y):
    """A hidden layer whose units are summed in pairs by a reshape that keeps the examples axis."""
    h = np.tanh(X @ W1 + b1)
    h = h.reshape(h.shape[0], 2, -1).sum(axis=1)
    return np.mean((h @ W2 - y) ** 2)


def spread(w, X, y):
    """var and std with ddof: their sizes are n - 1 and n - 2."""
    r = X @ w - y
    return np.var(r, ddof=1) + np.std(X @ w, ddof=2)


def scaled(w, X):
    """The number of examples as a factor (c * n) and a divisor (len(X))."""
    return np.sum(np.tanh(X @ w)) / len(X) + X.shape[0] * np.sum(w ** 2)


def weighted(w, X):
    """Weights of 1 / len(X) made by a fill: a float param that follows the number of examples."""
    return np.sum(np.full_like(X[:, 0], 1.0 / len(X)) * np.tanh(X @ w))


def data(n, d=5, dtype=np.float64):
    return RNG.normal(size=(n, d)).astype(dtype), (RNG.random(n) > 0.5).astype(dtype)


# (loss, parameters, examples arguments at a size, argnums, examples positions)
PROGRAMS = {
    "logistic": (logistic, lambda: (RNG.normal(size=5), 0.1), lambda n: data(n), (0, 1)),
    "logistic-f32": (logistic, lambda: (RNG.normal(size=5).astype(np.float32), np.float32(0.1)),
                     lambda n: data(n, dtype=np.float32), (0, 1)),
    "mlp": (mlp, lambda: (RNG.normal(size=(5, 8)), np.zeros(8), RNG.normal(size=4)), lambda n: data(n), (0, 1, 2)),
    "spread": (spread, lambda: (RNG.normal(size=5),), lambda n: data(n), 0),
    "scaled": (scaled, lambda: (RNG.normal(size=5),), lambda n: data(n)[:1], 0),
    "weighted": (weighted, lambda: (RNG.normal(size=5),), lambda n: data(n)[:1], 0),
}


def compiled(name, sample=64):
    loss, params, make, argnums = PROGRAMS[name]
    ps, xs = params(), make(sample)
    examples = tuple(range(len(ps), len(ps) + len(xs)))
    gt = ad.grad_tape(loss, *ps, *xs, argnums=argnums, examples=examples)
    return loss, ps, make, argnums, gt, ad.compile(gt)


@pytest.mark.parametrize("name", PROGRAMS)
def test_one_compiled_gradient_equals_a_fresh_trace_at_every_number_of_examples(name):
    """Bit for bit: the sizes are read and the constants divided at run time as the trace at that
    number computes them."""
    loss, ps, make, argnums, gt, g = compiled(name)
    for n in (3, 7, 64, 65, 300):
        xs = make(n)
        got = g(*ps, *xs)
        want = ad.grad_tape(loss, *ps, *xs, argnums=argnums)(*ps, *xs)
        for a, b in zip(ad.pytree.flatten(got)[0], ad.pytree.flatten(want)[0]):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(a, b, err_msg=f"{name} at {n} examples")


@pytest.mark.parametrize("name", ["logistic", "mlp", "spread", "scaled", "weighted"])
def test_the_gradient_at_other_numbers_of_examples_matches_central_differences(name):
    loss, ps, make, argnums, gt, g = compiled(name)
    argnums = (argnums,) if isinstance(argnums, int) else argnums
    for n in (5, 200):
        xs = make(n)
        value, grads = g(*ps, *xs)
        grads = (grads,) if len(argnums) == 1 else grads
        assert np.isclose(value, loss(*ps, *xs), rtol=1e-12)
        for k, grad in zip(argnums, grads):
            def at(p, k=k):
                args = list(ps)
                args[k] = p
                return loss(*args, *xs)
            np.testing.assert_allclose(grad, fd_grad(at, ps[k]), rtol=1e-6, atol=1e-8)


def test_the_source_reads_n_and_writes_the_sizes_as_functions_of_it():
    _, ps, make, _, gt, g = compiled("spread")
    assert "n = v1.shape[0]  # the number of examples: axis 0 of X, y" in g.source
    assert "check_examples(n, v2.shape[0])" in g.source
    assert "(1.0 / n)" in g.source and "/ (n - 1)" in g.source
    assert "64" not in g.source and "63" not in g.source and "0.015625" not in g.source
    source, tape = compiled("mlp")[-1].source, str(compiled("mlp")[-2])   # a reshape and a broadcast
    assert "np.reshape(v7, shape=(n, 2, 4))" in source and "np.broadcast_to(v28, shape=(n, 2, 4))" in source
    assert "broadcast_to shape=(n, 2, 4)" in tape        # the printer shows the symbol


def test_the_tape_still_runs_as_traced_at_the_sample():
    """Every reader of tapes (the interpreter, the debugger) sees the sample's sizes."""
    _, ps, make, _, gt, g = compiled("mlp")
    xs = make(64)
    value, grads = gt(*ps, *xs)
    cvalue, cgrads = g(*ps, *xs)
    assert value == cvalue
    for a, b in zip(grads, cgrads):
        np.testing.assert_array_equal(a, b)
    reshape = next(e for e in gt.eqns if e.prim.name == "reshape")
    shape = reshape.kwargs["shape"]
    assert shape == (64, 2, 4) and isinstance(shape[0], SizeInt) and repr(shape) == "(n, 2, 4)"
    ad.validate(gt)


def test_grad_with_examples_traces_once_for_every_number():
    g = ad.grad(logistic, (0, 1), form="compiled", examples=(2, 3))
    w = RNG.normal(size=5)
    for n in (10, 11, 500):
        X, y = data(n)
        got = g(w, 0.2, X, y)
        want = ad.grad(logistic, (0, 1))(w, 0.2, X, y)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        assert np.isclose(got[1], want[1], rtol=1e-13)
    assert g.cache_info().traces == 1 and g.cache_info().hits == 2


def test_examples_along_another_axis_and_inside_a_pytree():
    def loss(W, batch):
        XT, YT = batch                      # features by examples, targets by examples
        return np.mean((W @ XT - YT) ** 2)
    W = RNG.normal(size=(2, 3))
    g = ad.value_and_grad(loss, form="compiled", examples=1, examples_axis=1)
    for n in (4, 9):
        batch = (RNG.normal(size=(3, n)), RNG.normal(size=(2, n)))
        value, grad = g(W, batch)
        want = ad.value_and_grad(loss)(W, batch)
        assert np.isclose(value, want[0], rtol=1e-13)
        np.testing.assert_allclose(grad, want[1], rtol=1e-13)


def test_a_branch_the_trace_took_is_checked_and_retraced():
    def loss(w, X):
        return np.mean(X @ w) if np.mean(X) > 0 else np.mean((X @ w) ** 2)
    g = ad.grad(loss, form="compiled", examples=1)
    w = np.ones(2)
    up, down = np.abs(RNG.normal(size=(6, 2))), -np.abs(RNG.normal(size=(9, 2)))
    np.testing.assert_allclose(g(w, up), ad.grad(loss)(w, up))
    np.testing.assert_allclose(g(w, down), ad.grad(loss)(w, down))
    assert g.cache_info().guard_failures == 1 and g.cache_info().traces == 2


def refusal(loss, *args, examples=(1, 2)):
    with pytest.raises(ExamplesError) as info:
        ad.grad_tape(loss, *args, examples=examples)
    return str(info.value)


def test_a_program_whose_structure_follows_the_number_of_examples_is_refused():
    X, y = data(8)
    said = refusal(lambda w, X, y: sum(np.tanh(x @ w) for x in X), np.ones(5), X, y)
    assert "getitem index=(7,)" in said and "its primitive is" in said
    assert "the program records 62 equations at 8" in said
    assert "test_examples.py" in said and "no Python loop" in said


def test_a_constant_array_of_the_number_of_examples_is_refused():
    X, y = data(8)
    said = refusal(lambda w, X, y: np.mean((X @ w - y) ** 2 * np.arange(len(X))), np.ones(5), X, y)
    assert "multiply" in said and "test_examples.py" in said and "pass it as an examples argument" in said


def test_a_branch_on_the_data_that_differs_between_the_traces_is_refused():
    X = RNG.normal(size=(8, 5))
    y = np.zeros(8)
    y[-1] = 1.0                              # the last example turns the branch
    said = refusal(lambda w, X, y: np.mean(X @ w) if np.sum(y) > 0.5 else np.mean(np.tanh(X @ w)),
                   np.ones(5), X, y)
    assert "guard" in said and "a branch or value of the data" in said and "test_examples.py" in said


def test_refusals_of_the_arguments():
    X, y = data(2)
    with pytest.raises(ExamplesError, match="at least 3"):
        ad.grad_tape(logistic, np.ones(5), 0.1, X, y, examples=(2, 3))
    X, y = data(8)
    with pytest.raises(ExamplesError, match="disagree on the number of examples.*8.*5"):
        ad.grad_tape(logistic, np.ones(5), 0.1, X, y[:5], examples=(2, 3))
    with pytest.raises(ExamplesError, match="name the positions"):
        ad.grad_tape(logistic, np.ones(5), 0.1, X, y, examples=(7,))
    with pytest.raises(ValueError, match="form='compiled'"):
        ad.grad(logistic, examples=(2, 3))


def test_compiled_code_checks_the_examples_inputs_agree():
    _, ps, make, _, gt, g = compiled("logistic")
    X, y = make(10)
    with pytest.raises(ExamplesError, match="disagree.*X has 10.*y has 9"):
        g(*ps, X, y[:9])


def test_a_tape_changed_after_it_was_made_polymorphic_is_refused():
    """A pass rebuilds params from the sample's shapes: its tape is not compiled with stale sizes."""
    _, ps, make, _, gt, g = compiled("logistic")
    changed = gt.replace(eqns=tuple(e for e in gt.eqns))
    with pytest.raises(ExamplesError, match="changed since"):
        ad.compile(changed)


def test_compiled_code_checks_the_outputs_against_their_symbolic_shapes():
    """The last guard: a record whose sizes do not follow what the code computes is refused when
    it runs at another number of examples (here the gradient of X, recorded as one longer)."""
    loss = lambda w, X: np.mean(np.tanh(X @ w))                       # noqa: E731
    gt = ad.grad_tape(loss, np.ones(3), RNG.normal(size=(8, 3)), argnums=(0, 1), examples=1)
    ex = gt.meta["examples"]
    dX = gt.outputs[-1]
    wrong = dataclasses.replace(ex, shapes={**ex.shapes, dX: (SizeInt(8, "n + 1"), 3)})
    g = ad.compile(gt.replace(meta={**gt.meta, "examples": wrong}))
    with pytest.raises(ExamplesError, match=r"output 2 has shape \(5, 3\) at 5 examples where the tape says \(6, 3\)"):
        g(np.ones(3), RNG.normal(size=(5, 3)))


def test_the_polymorphic_gradient_over_another_array_namespace():
    """``ad.compile(..., xp=)``: the same program, n read from the namespace's arrays."""
    xps = optional_module("array_api_strict")
    loss, ps, make, argnums, gt, g = compiled("mlp")
    on = ad.compile(gt, xp=xps)
    assert "n = v3.shape[0]" in on.source and "xp.reshape(v7, shape=(n, 2, 4))" in on.source
    xs = make(37)
    value, grads = on(*(xps.asarray(p) for p in ps), *(xps.asarray(x) for x in xs))
    want = g(*ps, *xs)
    assert np.isclose(float(value), want[0], rtol=1e-13)
    for a, b in zip(grads, want[1]):
        np.testing.assert_allclose(np.asarray(a), b, rtol=1e-12)
