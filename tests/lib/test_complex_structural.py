"""Compositions on complex numbers (issue 14). Every line of the composition tables of
tests/support/specs.py and tests/support/specs_numeric.py runs with its float operands complex ("complex"), with
only the first one complex ("mixed") and only the last one ("mixed last"): its traced value is
numpy's, dtype included (or both refuse: ``NUMPY_REFUSES``), and its gradient matches finite
differences (the dot-product test with the real pairing of ad.checks.fd), with closure = lifted =
compiled and complex64 kept complex64; or ad refuses it loudly, naming what has no complex rule,
which only the lines of ``REFUSED`` may. Then what the samples cannot show: numpy's conjugations
(vecdot, vecmat, vdot, correlate, cov), casts between real and complex, and HIPS autograd as an
oracle for the contractions, shapes and statistics."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ad
from ad.checks.fd import dot_product_test
from ad.checks.settings import fd_rtol
from ad.samples import C64, C128, F64, GAP, traced
from tests.support.cases import Case, floats, leaves
from tests.support.complex_cases import complex_weights, inexact, real_loss, seed
from tests.support.needs import module
from tests.support.specs import COMPOSITIONS as BASIC
from tests.support.specs_numeric import NUMERIC

RNG = np.random.default_rng(14)
CASES = [Case(name, s.call, s) for name, s in (BASIC | NUMERIC).items()
         if any(i.kind == "float" for i in s.inputs)]

VARIANTS = ("complex", "mixed", "mixed last")
# numpy refuses complex input, in these variants (ad refuses it too: the value test checks that both raise)
NUMPY_REFUSES = {
    **dict.fromkeys(("np.logaddexp.reduce", "ufunc.outer", "np.quantile", "np.quantile scalar", "np.quantile lower",
                     "np.quantile higher", "np.quantile midpoint", "np.quantile nearest", "np.quantile traced q",
                     "np.percentile", "np.nanquantile", "np.nanpercentile"), VARIANTS),
    "np.interp": ("complex", "mixed"),     # complex x; a complex fp alone is numpy's too ("mixed last")
}
# ad refuses the gradient (or the trace), naming what has no complex rule: numpy orders complex
# numbers lexicographically, an order with no derivative
REFUSED = {
    "np.ptp": "max", "np.max where= initial=": "max", "np.min initial=": "min", "np.nanmax": "max",
    "np.maximum.accumulate": "np.maximum.accumulate", "np.minimum.accumulate": "np.minimum.accumulate",
    "np.imag": "np.real_if_close",     # its dtype would follow the values
}
WORKS = [c.name for c in CASES if c.name not in REFUSED and c.name not in NUMPY_REFUSES]


def _inputs(case, shape, rng, dtype=C128) -> list:
    """Drawn complex, redrawn while a real part lies within GAP of a point the line avoids: numpy
    orders complex numbers by their real parts first, so a threshold at p is a kink at Re z = p
    (ad.samples measures |z - p|)."""
    ins = traced(case.sample.inputs)
    for _ in range(100):
        xs = case.inputs(shape, rng, dtype)
        if all(np.min(np.abs(np.subtract.outer(np.real(x), i.avoid)), initial=np.inf) > GAP
               for x, i in zip(xs, ins) if i.avoid):
            return xs
    raise RuntimeError(f"{case.name}: no complex draw clear of {[i.avoid for i in ins]}")


def _variant(case, shape, rng, variant) -> list:
    """"complex": every float operand complex; "mixed": the first one, "mixed last": the last one."""
    zs = _inputs(case, shape, rng)
    if variant == "complex":
        return zs
    xs = case.inputs(shape, rng, F64)
    which = floats(xs)[0 if variant == "mixed" else -1]
    return [z if i == which else x for i, (z, x) in enumerate(zip(zs, xs))]


def _quiet(fn, *xs, **kwargs):
    """Silences numpy's ComplexWarning where a composition casts to real on purpose (astype)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return fn(*xs, **kwargs)


PARAMS = [pytest.param(c, v, id=f"{c.name}-{v}") for c in CASES
          for v in VARIANTS[:2 + (len(floats(c.inputs(c.sample.shapes[-1], RNG))) > 1)]]


def _numpy_refuses(case, variant) -> bool:
    return variant in NUMPY_REFUSES.get(case.name, ())


@pytest.mark.parametrize("case,variant", PARAMS)
def test_complex_value_is_numpys(case, variant):
    xs = _variant(case, case.sample.shapes[-1], seed(case.name, "value", variant), variant)
    if _numpy_refuses(case, variant):
        with pytest.raises((TypeError, ValueError)):
            _quiet(case.fn, *xs)
        with pytest.raises((TypeError, ValueError, ad.UnsupportedFunctionError)):
            _quiet(ad.vjp, case.fn, *xs)
        return
    want = _quiet(case.fn, *xs)
    try:
        got, _ = _quiet(ad.vjp, case.fn, *xs)
    except ad.UnsupportedFunctionError as exc:    # refused while tracing: say so, never a value
        assert case.name in REFUSED, f"{case.name} refused: {exc}"
        return
    for g, w in zip(leaves(got), leaves(want)):
        assert np.result_type(g) == np.result_type(w)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _refused(case, fn) -> bool:
    """Runs ``fn``: True if ad refused it loudly, which only the lines of REFUSED may."""
    try:
        fn()
    except ad.UnsupportedFunctionError as exc:
        assert case.name in REFUSED, f"{case.name} refused: {exc}"
        assert REFUSED[case.name] in str(exc)
        return True
    assert case.name not in REFUSED, f"{case.name} is no longer refused: take it off REFUSED"
    return False


@pytest.mark.parametrize("case,variant", [p for p in PARAMS if not _numpy_refuses(*p.values)])
def test_complex_gradient_matches_finite_differences(case, variant):
    shape = case.sample.shapes[-1]
    rng = seed(case.name, shape, variant)
    xs = _variant(case, shape, rng, variant)
    out = {}

    def run():
        y, pullback = _quiet(ad.vjp, case.fn, *xs)
        out["checks"] = _quiet(lambda: list(dot_product_test(case.fn, pullback, xs, rng=rng,
                                                             domains=case.domains, wrt=inexact(xs))))
        out["rtol"] = fd_rtol([np.result_type(v) for v in (*xs, *leaves(y))])
    if _refused(case, run):
        return
    for lhs, rhs, est in out["checks"]:
        assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
        assert abs(lhs - rhs) <= out["rtol"] * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


@pytest.mark.parametrize("case", [c for c in CASES if c.name in WORKS], ids=lambda c: c.name)
def test_complex_forms_agree(case):
    """closure, lifted, lifted without passes and compiled give the same complex gradient."""
    rng = seed(case.name, "forms")
    xs = _inputs(case, case.sample.shapes[-1], rng)
    loss = real_loss(case.fn, complex_weights(_quiet(case.fn, *xs), rng))
    argnums = inexact(xs)
    ref = _quiet(ad.grad(loss, argnums, form="closure"), *xs)
    for form, optimize in (("lifted", False), ("lifted", True), ("compiled", True)):
        got = _quiet(ad.grad(loss, argnums, form=form, optimize=optimize), *xs)
        for r, g in zip(ref, got):
            assert np.result_type(g) == np.result_type(r)
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-12, err_msg=f"{form} optimize={optimize}")


@pytest.mark.parametrize("case", [c for c in CASES if c.name in WORKS], ids=lambda c: c.name)
def test_complex64_stays_complex64(case):
    rng = seed(case.name, "c64")
    xs = _inputs(case, case.sample.shapes[-1], rng, C64)
    argnums = inexact(xs)
    y = _quiet(case.fn, *xs)
    ws = [w.astype(C64) if np.iscomplexobj(w) else w.astype(np.result_type(v))
          for w, v in zip(complex_weights(y, rng), leaves(y))]
    for g, x in zip(_quiet(ad.grad(real_loss(case.fn, ws), argnums), *xs), xs):
        assert np.result_type(g) == np.result_type(x)


# -- numpy's conjugations ---------------------------------------------------------------------------

def _z(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _grads(f, *xs):
    """Gradient of the real loss Re(sum(w * f(xs))) in all three forms, checked to agree."""
    w = _z(*np.shape(f(*xs)))
    loss = real_loss(f, [w])
    argnums = tuple(range(len(xs)))
    ref = ad.grad(loss, argnums, form="closure")(*xs)
    for form in ("lifted", "compiled"):
        for r, g in zip(ref, ad.grad(loss, argnums, form=form)(*xs)):
            np.testing.assert_allclose(g, r, rtol=1e-12)
    return w, ref


def test_vecdot_conjugates_its_first_operand():
    """vecdot(a, b) = sum(conj(a) b): dL/da = conj(w b), dL/db = w conj(a) (autograd's convention)."""
    a, b = _z(3, 4), _z(4)
    np.testing.assert_allclose(ad.vjp(np.vecdot, a, b)[0], np.sum(np.conj(a) * b, axis=-1))
    w, (da, db) = _grads(np.vecdot, a, b)
    np.testing.assert_allclose(da, np.conj(w[:, None] * b), rtol=1e-12)
    np.testing.assert_allclose(db, np.sum(w[:, None] * np.conj(a), axis=0), rtol=1e-12)


def test_vecmat_conjugates_its_vector_and_matvec_conjugates_nothing():
    v, m = _z(3), _z(2, 3, 4)
    w, (dv, dm) = _grads(np.vecmat, v, m)
    np.testing.assert_allclose(dv, np.conj(np.einsum("bij,bj->i", m, w)), rtol=1e-12)
    np.testing.assert_allclose(dm, np.conj(v)[None, :, None] * w[:, None, :], rtol=1e-12)
    m, v = _z(2, 3, 4), _z(4)
    w, (dm, dv) = _grads(np.matvec, m, v)
    np.testing.assert_allclose(dm, w[..., :, None] * v, rtol=1e-12)
    np.testing.assert_allclose(dv, np.einsum("bi,bij->j", w, m), rtol=1e-12)


def test_vdot_correlate_and_cov_conjugate_as_numpy():
    a, b = _z(3, 2), _z(3, 2)
    assert ad.vjp(np.vdot, a, b)[0] == pytest.approx(np.vdot(a, b), rel=1e-14)
    v = _z(3)
    for mode in ("full", "same", "valid"):
        np.testing.assert_allclose(ad.vjp(lambda a, v: np.correlate(a, v, mode), a[:, 0], v)[0],
                                   np.correlate(a[:, 0], v, mode), rtol=1e-13)
    np.testing.assert_allclose(ad.vjp(np.cov, a)[0], np.cov(a), rtol=1e-13)
    np.testing.assert_allclose(ad.vjp(np.corrcoef, a)[0], np.corrcoef(a), rtol=1e-13)


SECOND = {   # real losses whose gradients are differentiated again (the pullbacks' conj and gathers lift)
    "vecdot": lambda a, A, w: np.sum(np.real(w[:, 0] * np.vecdot(a, a @ A))),
    "vecmat": lambda a, A, w: np.sum(np.real(np.vecmat(a[0], A * a[1]) ** 2)),
    "matvec": lambda a, A, w: np.sum(np.real(np.matvec(A, a[0]) * a[1])),
    "vdot, einsum": lambda a, A, w: np.real(np.vdot(a, a) * np.einsum("ij,ij->", a, w)),
    "getitem, concatenate": lambda a, A, w: np.sum(np.real(np.concatenate([a[1:], a[:1] ** 2]) ** 2 * w)),
}


@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
@pytest.mark.parametrize("name", SECOND)
def test_second_derivatives(name, form):
    """vjp of the complex gradient matches finite differences of that gradient."""
    a, A, w = _z(3, 4), _z(4, 4), _z(3, 4)
    g = ad.grad(lambda a: SECOND[name](a, A, w), form=form)
    _, pullback = ad.vjp(g, a)
    for lhs, rhs, est in dot_product_test(g, pullback, [a], rng=RNG):
        assert est.converged
        assert abs(lhs - rhs) <= 1e-6 * max(1.0, abs(lhs), abs(rhs)), (lhs, rhs)


# -- casts between real and complex -----------------------------------------------------------------

@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
def test_astype_between_real_and_complex(form):
    """real -> complex is x + 0i (the real operand gets Re g); complex -> real keeps Re z, as numpy
    (with its ComplexWarning), so its cotangent is real; complex128 <-> complex64 keeps both parts."""
    x, z = RNG.standard_normal(3), _z(3)
    w = _z(3)
    g = ad.grad(lambda x: np.sum(np.real(w * x.astype(np.complex128))), form=form)(x)
    assert g.dtype == F64
    np.testing.assert_allclose(g, np.real(w))
    with pytest.warns(np.exceptions.ComplexWarning):
        g = ad.grad(lambda z: np.sum(w.real * z.astype(np.float64)), form=form)(z)
    assert g.dtype == C128
    np.testing.assert_allclose(g, w.real + 0j)
    g = ad.grad(lambda z: np.sum(np.real(w * z.astype(np.complex64))), form=form)(z)
    assert g.dtype == C128
    np.testing.assert_allclose(g, w, rtol=1e-6)


@pytest.mark.parametrize("fn", [lambda z: np.concatenate([z, z], dtype=np.float64),
                                lambda z: np.stack([z, z], dtype=np.float64),
                                lambda z: np.ediff1d(np.real(z), to_begin=z[:1])], ids=["concatenate", "stack", "ediff1d"])
def test_a_cast_numpy_refuses_is_refused(fn):
    """complex to real under casting="same_kind": numpy raises, so ad does (never drops Im z)."""
    z = _z(3)
    with pytest.raises(TypeError):
        fn(z)
    with pytest.raises(TypeError):
        ad.vjp(fn, z)


def test_a_real_operand_of_a_complex_contraction_gets_the_real_part():
    A, z = RNG.standard_normal((3, 4)), _z(4)
    w = _z(3)
    g = ad.grad(lambda A: np.sum(np.real(w * (A @ z))))(A)
    assert g.dtype == F64
    np.testing.assert_allclose(g, np.real(w[:, None] * z[None, :]), rtol=1e-12)


# -- HIPS autograd as an oracle ---------------------------------------------------------------------

anp = module("autograd.numpy")
autograd = module("autograd")

ORACLE = {   # name: (ad's function, autograd's, operand shapes)
    "np.dot": (np.dot, anp.dot, ((3, 4), (4, 2))),
    "np.tensordot": (lambda a, b: np.tensordot(a, b, axes=([1], [0])),
                     lambda a, b: anp.tensordot(a, b, axes=([1], [0])), ((3, 4), (4, 2))),
    "np.inner": (np.inner, anp.inner, ((3, 4), (2, 4))),
    "np.outer": (np.outer, anp.outer, ((3,), (4,))),
    "np.vdot": (np.vdot, lambda a, b: anp.dot(anp.conj(anp.ravel(a)), anp.ravel(b)), ((3, 4), (3, 4))),
    "np.kron": (np.kron, anp.kron, ((2, 3), (2, 2))),
    "np.trace": (np.trace, anp.trace, ((3, 3),)),
    "np.einsum": (lambda a, b: np.einsum("ij,jk->ik", a, b), lambda a, b: anp.einsum("ij,jk->ik", a, b),
                  ((3, 4), (4, 2))),
    "np.cross": (np.cross, anp.cross, ((4, 3), (4, 3))),
    "np.var": (lambda x: np.var(x, axis=0, ddof=1), lambda x: anp.var(x, axis=0, ddof=1), ((3, 4),)),
    "np.std": (np.std, anp.std, ((3, 4),)),
    "np.cumsum": (lambda x: np.cumsum(x, axis=1), lambda x: anp.cumsum(x, axis=1), ((3, 4),)),
    "np.concatenate": (lambda a, b: np.concatenate([a, b], axis=1), lambda a, b: anp.concatenate([a, b], axis=1),
                       ((3, 4), (3, 2))),
    "np.roll": (lambda x: np.roll(x, 2, axis=1), lambda x: anp.roll(x, 2, axis=1), ((3, 4),)),
    "np.diff": (lambda x: np.diff(x, axis=0), lambda x: anp.diff(x, axis=0), ((3, 4),)),
    "matmul batched": (np.matmul, anp.matmul, ((2, 3, 4), (4, 2))),
    "np.pad": (lambda x: np.pad(x, ((1, 0), (0, 2))), lambda x: anp.pad(x, ((1, 0), (0, 2)), "constant"), ((3, 4),)),
    "np.tile": (lambda x: np.tile(x, (2, 1)), lambda x: anp.tile(x, (2, 1)), ((3, 4),)),
    "np.repeat": (lambda x: np.repeat(x, 2, axis=0), lambda x: anp.repeat(x, 2, axis=0), ((3, 4),)),
    "np.triu": (np.triu, anp.triu, ((3, 4),)),
    "np.stack": (lambda a, b: np.stack([a, b], axis=1), lambda a, b: anp.stack([a, b], axis=1), ((3, 4), (3, 4))),
    "np.sort": (np.sort, anp.sort, ((5,),)),     # lexicographic: by real part (they are distinct)
}


@pytest.mark.parametrize("name", ORACLE)
def test_against_autograd(name):
    """The gradient of Re(sum(w * f(z))) equals autograd's (same convention) at complex operands."""
    ours, theirs, shapes = ORACLE[name]
    zs = [_z(*s) for s in shapes]
    y = ours(*zs)
    np.testing.assert_allclose(y, theirs(*zs), rtol=1e-12)
    w = _z(*np.shape(y)) if np.iscomplexobj(y) else RNG.standard_normal(np.shape(y))
    argnums = tuple(range(len(zs)))
    got = ad.grad(lambda *z: np.sum(np.real(w * ours(*z))), argnums)(*zs)
    want = autograd.grad(lambda *z: anp.sum(anp.real(w * theirs(*z))), argnums)(*zs)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)
