"""Every primitive that declares samples, driven with Python-scalar, numpy-scalar and 0-d-array
operands where its sample runs at the "scalar" shape set (issue 13): the traced value and its
dtype equal numpy's eager answer (Python scalars weak, as numpy promotes them), and the gradient
in the lifted and compiled forms matches finite differences.

Variants of one scalar-shape-set call (each 0-d operand converted, the others left as drawn):

* ``python`` / ``numpy`` / ``0d``: every 0-d operand a Python scalar, a numpy scalar, a 0-d
  array, all of them traced;
* ``const<i>``: operand ``i`` a Python scalar baked into the function (a weak constant), the
  others traced 0-d arrays: float32 operands stay float32, as numpy keeps them.
"""
import zlib

import numpy as np
import pytest

import ad
from ad.checks.fd import directional_derivative
from ad.checks.settings import fd_rtol
from ad.checks.library import sampled
from ad.samples import F64, draw, traced
from tests.support.cases import floats, leaves, sample_call, weighted, weights

FORMS = {"python": lambda x: x.item(), "numpy": lambda x: np.asarray(x)[()], "0d": np.asarray}


def _samples():
    for p in sampled():
        for k, s in enumerate(p.samples):
            if "scalar" in s.shapes:
                yield pytest.param(p, s, id=p.name if len(p.samples) == 1 else f"{p.name}#{k}")


SAMPLES = list(_samples())


def _draw(prim, sample, dtype):
    rng = np.random.default_rng(zlib.crc32(prim.name.encode()))
    return [np.asarray(x) for x in draw(sample.inputs, rng, "scalar", dtype)]


def _variants(xs):
    """(label, values, which positions are constants) per variant of one call."""
    zero_d = [i for i, x in enumerate(xs) if x.ndim == 0]
    for label, form in FORMS.items():
        yield label, [form(x) if i in zero_d else x for i, x in enumerate(xs)], ()
    if len(xs) > 1:
        for i in zero_d:
            yield f"const{i}", [x.item() if j == i else x for j, x in enumerate(xs)], (i,)


def _bake(fn, values, consts):
    """``fn`` of the non-constant operands, the constants closed over."""
    def f(*args):
        it = iter(args)
        return fn(*[values[i] if i in consts else next(it) for i in range(len(values))])
    return f, [v for i, v in enumerate(values) if i not in consts]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("prim,sample", SAMPLES)
def test_scalar_operands_value_and_dtype(prim, sample, dtype):
    fn = sample_call(prim, sample)
    for label, values, consts in _variants(_draw(prim, sample, np.dtype(dtype))):
        expected = fn(*values)
        f, args = _bake(fn, values, consts)
        got = ad.trace(f, *args)(*args)
        for g, e in zip(leaves(got), leaves(expected)):
            where = f"{prim.name} {label} {[type(v).__name__ for v in values]}"
            assert np.shape(g) == np.shape(e), where
            assert np.result_type(g) == np.result_type(e), where
            tol = 1e-12 if dtype == np.float64 else 1e-5
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=where)


GRADIENT = [p for p in SAMPLES if any(i.kind == "float" for i in p.values[1].inputs)]


@pytest.mark.parametrize("form", ["lifted", "compiled"])
@pytest.mark.parametrize("prim,sample", GRADIENT)
def test_scalar_operands_gradient(prim, sample, form):
    fn = sample_call(prim, sample)
    domains = [i.domain for i in traced(sample.inputs)]
    rng = np.random.default_rng(3)
    for label, values, consts in _variants(_draw(prim, sample, F64)):
        if consts:
            continue
        argnums = floats(values)
        ws = weights(fn(*values), rng)
        loss = weighted(fn, ws)
        grads = ad.grad(loss, argnums, form=form)(*values)
        us = [rng.standard_normal(np.shape(v)) if i in argnums else np.zeros(np.shape(v))
              for i, v in enumerate(values)]
        est = directional_derivative(fn, values, us, domains=domains)   # J u, outputs flattened
        assert est.converged, f"{prim.name} {label}: finite differences did not converge"
        got = sum(float(np.sum(us[i] * np.asarray(g, dtype=np.float64))) for i, g in zip(argnums, grads))
        lhs = float(np.dot(est.value, np.concatenate([np.ravel(w) for w in ws])))
        rtol = fd_rtol([np.result_type(v) for v in (*values, *leaves(fn(*values)))])
        assert abs(lhs - got) <= rtol * max(1.0, abs(lhs), abs(got)), (prim.name, label, lhs, got)
        for i, g in zip(argnums, grads):
            assert np.shape(g) == np.shape(values[i]), (prim.name, label)


# -- the calls issue 13 found failing, each against numpy's own answer (or numpy's own error) ------

def _masked_write(x, m):
    y = x.copy()
    y[m] = 2.5 * y[m]
    return y


ZERO_D, VECTOR = np.array(0.7), np.array([0.3, -1.2, 0.8, 2.0, -0.4])
TRUE, FALSE = np.array(True), np.array(False)
EXPLICIT = {
    "prod axis=0": (lambda x: np.prod(x, axis=0), (ZERO_D,)),
    "prod axis=-1": (lambda x: np.prod(x, axis=-1), (ZERO_D,)),
    "amin axis=0": (lambda x: np.amin(x, axis=0), (ZERO_D,)),
    "amax axis=-1 keepdims": (lambda x: np.amax(x, axis=-1, keepdims=True), (ZERO_D,)),
    "sum axis=0": (lambda x: np.sum(x, axis=0), (ZERO_D,)),
    "add.reduce axis=0": (lambda x: np.add.reduce(x, axis=0), (ZERO_D,)),
    "any axis=0": (lambda x: np.any(x, axis=0), (ZERO_D,)),
    "argmax axis=0": (lambda x: np.argmax(x, axis=0), (ZERO_D,)),
    "nansum axis=0": (lambda x: np.nansum(x, axis=0), (ZERO_D,)),
    "ptp axis=0": (lambda x: np.ptp(x, axis=0), (ZERO_D,)),
    "cumsum axis=0": (lambda x: np.cumsum(x, axis=0), (ZERO_D,)),
    "sum axis=(0,) (numpy refuses)": (lambda x: np.sum(x, axis=(0,)), (ZERO_D,)),
    "sum axis=1 (numpy refuses)": (lambda x: np.sum(x, axis=1), (ZERO_D,)),
    "mean axis=0 (numpy refuses)": (lambda x: np.mean(x, axis=0), (ZERO_D,)),
    "0-d x[True]": (lambda x: x[TRUE], (ZERO_D,)),
    "0-d x[False]": (lambda x: x[FALSE], (ZERO_D,)),
    "vector x[True]": (lambda x: x[TRUE], (VECTOR,)),
    "vector x[False]": (lambda x: x[FALSE], (VECTOR,)),
    "vector x[True, [0, 2]]": (lambda x: x[TRUE, [0, 2]], (VECTOR,)),
    "x[traced 0-d mask]": (lambda x, m: x[m], (VECTOR, TRUE)),
    "x[traced 0-d mask] (False)": (lambda x, m: x[m], (VECTOR, FALSE)),
    "0-d x[m] = v": (lambda x: _masked_write(x, TRUE), (ZERO_D,)),
    "vector x[m] = v": (lambda x: _masked_write(x, TRUE), (VECTOR,)),
    "vector x[False] = v": (lambda x: _masked_write(x, FALSE), (VECTOR,)),
    "x[traced m] = v": (_masked_write, (VECTOR, TRUE)),
    "array_split(x, 0-d int)": (lambda x: np.array_split(x, np.array(2))[0], (VECTOR,)),
    "array_split(x, numpy int) last": (lambda x: np.array_split(x, np.int64(3))[-1], (VECTOR,)),
    "split(x, 0-d int) unequal (numpy refuses)": (lambda x: np.split(x, np.array(2)), (VECTOR,)),
    "split(x, 0-d int)": (lambda x: np.split(x, np.array(5))[1], (VECTOR,)),
    "vsplit of a vector (numpy refuses)": (lambda x: np.vsplit(x, 5), (VECTOR,)),
}


def _outcome(f, args):
    try:
        return f(*args), None
    except Exception as exc:   # noqa: BLE001  (numpy's error is the expected answer)
        return None, exc


@pytest.mark.parametrize("name", list(EXPLICIT))
def test_issue_13_scalar_calls_match_numpy(name):
    f, args = EXPLICIT[name]
    expected, error = _outcome(f, args)
    if error is not None:
        with pytest.raises(type(error)):
            ad.trace(f, *args)
        return
    got = ad.trace(f, *args)(*args)
    for g, e in zip(leaves(got), leaves(expected)):
        assert np.shape(g) == np.shape(e) and np.result_type(g) == np.result_type(e)
        np.testing.assert_allclose(g, e)


@pytest.mark.parametrize("form", ["lifted", "compiled", "closure"])
@pytest.mark.parametrize("name", [n for n in EXPLICIT if "refuses" not in n and "argmax" not in n
                                  and "any" not in n])
def test_issue_13_scalar_calls_gradient(name, form):
    f, args = EXPLICIT[name]
    rng = np.random.default_rng(4)
    ws = weights(f(*args), rng)
    loss = weighted(f, ws)
    grad = ad.grad(loss, 0, form=form)(*args)
    u = rng.standard_normal(np.shape(args[0]))
    est = directional_derivative(lambda x: f(np.asarray(x), *args[1:]), args[:1], [u])
    expected = float(np.dot(est.value, np.concatenate([np.ravel(w) for w in ws]))) if ws else 0.0
    assert np.shape(grad) == np.shape(args[0])
    np.testing.assert_allclose(float(np.sum(u * grad)), expected, rtol=1e-6, atol=1e-9)


def test_vjp_of_a_python_scalar():
    y, pullback = ad.vjp(np.sum, 3.5)
    assert y == 3.5
    (g,) = pullback(np.float64(2.0))
    assert np.shape(g) == () and g == 2.0
