"""scipy.special through ad (ad/scipy/special/): plain scipy code differentiated unchanged.

Every ufunc of scipy.special is classified (a rule, not differentiable, or missing with its
reason); values and gradients equal autograd.scipy.special's and torch.special's; higher
derivatives lift (d gammaln = psi, d psi = polygamma(1, x), ...); the functions that are not
ufuncs (logsumexp, softmax, multigammaln...) keep scipy's signatures and run the checks of
tests/lib/test_rules.py (tests/support/rule_checks.py) as spec lines; unsupported cases refuse
loudly, naming ``scipy.special.X``; ``import ad`` does not import scipy. The ufunc primitives themselves run the registry-wide tests
(tests/lib/test_rules.py, test_spec_values.py) from their declared samples.
"""
import inspect
import json
import os
import subprocess
import sys
import zlib

import autograd
import autograd.numpy as anp
import autograd.scipy.special as asp
import numpy as np
import pytest
import scipy.special as sp
import torch

import ad
import ad.scipy.special as S
from ad.dispatch import UFUNCS
from ad.samples import F, In, Sample
from tests.support.cases import Case
from tests.support.rule_checks import float32_gradients, forms_agree, gradient_matches_finite_differences

tsp = torch.special


# -- the classification ------------------------------------------------------------------------

def scipy_ufuncs() -> dict:
    """Every public ufunc of scipy.special, with its public names (digamma is psi, jn is jv)."""
    found: dict = {}
    for name in dir(sp):
        f = getattr(sp, name)
        if isinstance(f, np.ufunc):
            found.setdefault(f, []).append(name)
    return found


def classification() -> dict[str, list[str]]:
    table = {"rule": [], "not differentiable": [], "missing": [], "unclassified": [], "twice": []}
    for uf, names in scipy_ufuncs().items():
        prim, missing = UFUNCS.get(uf), [n for n in names if n in S.MISSING]
        if prim is not None and prim.rule is None:          # recorded (inside other rules), no rule
            prim = None
        if prim is not None and missing:
            table["twice"].append(names[0])
        elif prim is not None:
            table["rule" if prim.differentiable else "not differentiable"].append(names[0])
        else:
            table["missing" if missing else "unclassified"].append(names[0])
    return table


def test_every_scipy_special_ufunc_is_classified():
    """One table: each ufunc has a rule, is not differentiable, or is in MISSING with a reason."""
    table = classification()
    assert not table["unclassified"], ("scipy.special ufuncs with neither a rule nor a reason in "
                                       f"ad.scipy.special.MISSING: {table['unclassified']}")
    assert not table["twice"], f"ufuncs with a rule that MISSING still lists: {table['twice']}"
    assert set(S.MISSING) <= set(dir(sp)) and all(isinstance(getattr(sp, n), np.ufunc) for n in S.MISSING)
    assert len(table["rule"]) >= 120, {k: len(v) for k, v in table.items()}


def test_the_issue_list_has_rules():
    issue = ("gamma gammaln loggamma rgamma digamma psi beta betaln erf erfc erfinv erfcinv erfcx expit "
             "logit log_expit ndtr ndtri log_ndtr xlogy xlog1py entr rel_entr kl_div i0 i0e i1 i1e iv ive "
             "j0 j1 jv y0 y1 yv kv kve gammainc gammaincc").split()
    assert [n for n in issue if not UFUNCS[getattr(sp, n)].differentiable] == []
    assert not UFUNCS[sp.gammasgn].differentiable
    assert sp.zeta(2.0, np.array([1.5])) is not None and S.polygamma_p.rule is not None


def test_every_scipy_primitive_declares_samples_and_its_scipy_name():
    for prim in S.PRIMITIVES:
        assert prim.samples, prim.name
        assert prim.name.startswith("scipy.special."), prim.name


# -- oracles: autograd.scipy.special and torch.special ---------------------------------------------

POS = (0.3, 3.0)
PROB = (0.05, 0.95)
REAL = (-2.0, 2.0)

# name: (the plain scipy call, its input range, autograd's, torch's; None where they have none)
ORACLES = {
    "gamma": (sp.gamma, POS, asp.gamma, None),
    "gammaln": (sp.gammaln, POS, asp.gammaln, tsp.gammaln),
    "digamma": (sp.digamma, POS, asp.digamma, tsp.digamma),
    "psi": (sp.psi, POS, asp.psi, tsp.psi),
    "rgamma": (sp.rgamma, POS, asp.rgamma, None),
    "polygamma(2, x)": (lambda x: S.polygamma(2, x), POS, lambda x: asp.polygamma(2, x),
                        lambda x: tsp.polygamma(2, x)),
    "multigammaln(x, 3)": (lambda x: S.multigammaln(x + 1.5, 3), POS, lambda x: asp.multigammaln(x + 1.5, 3),
                           lambda x: tsp.multigammaln(x + 1.5, 3)),
    "beta(x, 1.5)": (lambda x: sp.beta(x, 1.5), POS, lambda x: asp.beta(x, 1.5), None),
    "betaln(2.0, x)": (lambda x: sp.betaln(2.0, x), POS, lambda x: asp.betaln(2.0, x), None),
    "gammainc(2.5, x)": (lambda x: sp.gammainc(2.5, x), POS, lambda x: asp.gammainc(2.5, x),
                         lambda x: tsp.gammainc(torch.full_like(x, 2.5), x)),
    "gammaincc(2.5, x)": (lambda x: sp.gammaincc(2.5, x), POS, lambda x: asp.gammaincc(2.5, x),
                          lambda x: tsp.gammaincc(torch.full_like(x, 2.5), x)),
    "betainc(2.0, 3.0, x)": (lambda x: sp.betainc(2.0, 3.0, x), PROB, lambda x: asp.betainc(2.0, 3.0, x), None),
    "erf": (sp.erf, REAL, asp.erf, tsp.erf),
    "erfc": (sp.erfc, REAL, asp.erfc, tsp.erfc),
    "erfinv": (sp.erfinv, (-0.9, 0.9), asp.erfinv, tsp.erfinv),
    "erfcinv": (sp.erfcinv, (0.1, 1.9), asp.erfcinv, None),
    "erfcx": (sp.erfcx, REAL, None, tsp.erfcx),
    "expit": (sp.expit, REAL, asp.expit, tsp.expit),
    "logit": (sp.logit, PROB, asp.logit, tsp.logit),
    "log_expit": (sp.log_expit, REAL, None, torch.nn.functional.logsigmoid),
    "ndtr": (sp.ndtr, REAL, None, tsp.ndtr),
    "ndtri": (sp.ndtri, PROB, None, tsp.ndtri),
    "log_ndtr": (sp.log_ndtr, (-6.0, 3.0), None, tsp.log_ndtr),
    "xlogy(x, 2.5)": (lambda x: sp.xlogy(x, 2.5), REAL, None, lambda x: tsp.xlogy(x, 2.5)),
    "xlogy(1.5, x)": (lambda x: sp.xlogy(1.5, x), POS, None, lambda x: tsp.xlogy(1.5, x)),
    "xlog1py(1.5, x)": (lambda x: sp.xlog1py(1.5, x), POS, None, lambda x: tsp.xlog1py(1.5, x)),
    "entr": (sp.entr, POS, None, tsp.entr),
    "i0": (sp.i0, REAL, asp.i0, tsp.i0),
    "i0e": (sp.i0e, POS, None, tsp.i0e),
    "i1": (sp.i1, REAL, asp.i1, tsp.i1),
    "i1e": (sp.i1e, REAL, None, tsp.i1e),
    "iv(1.5, x)": (lambda x: sp.iv(1.5, x), POS, lambda x: asp.iv(1.5, x), None),
    "ive(1.5, x)": (lambda x: sp.ive(1.5, x), POS, lambda x: asp.ive(1.5, x), None),
    "j0": (sp.j0, REAL, asp.j0, tsp.bessel_j0),
    "j1": (sp.j1, REAL, asp.j1, tsp.bessel_j1),
    "jn(2, x)": (lambda x: sp.jn(2, x), REAL, lambda x: asp.jn(2, x), None),
    "y0": (sp.y0, POS, asp.y0, tsp.bessel_y0),
    "y1": (sp.y1, POS, asp.y1, tsp.bessel_y1),
    "yn(2, x)": (lambda x: sp.yn(2, x), POS, lambda x: asp.yn(2, x), None),
    "k0": (sp.k0, POS, None, tsp.modified_bessel_k0),
    "k1": (sp.k1, POS, None, tsp.modified_bessel_k1),
    "k0e": (sp.k0e, POS, None, tsp.scaled_modified_bessel_k0),
    "k1e": (sp.k1e, POS, None, tsp.scaled_modified_bessel_k1),
    "zeta(2.5, x)": (lambda x: sp.zeta(2.5, x), POS, None, lambda x: tsp.zeta(2.5, x)),
    "expm1": (sp.expm1, REAL, None, tsp.expm1),
    "exp2": (sp.exp2, REAL, None, tsp.exp2),
    "log1p": (sp.log1p, POS, None, tsp.log1p),
    "logsumexp": (S.logsumexp, REAL, asp.logsumexp, lambda x: tsp.logsumexp(x, 0)),
    "logsumexp(b=)": (lambda x: S.logsumexp(x, b=np.arange(1.0, 6.0)), REAL,
                      lambda x: asp.logsumexp(x, b=np.arange(1.0, 6.0)), None),
    "softmax": (S.softmax, REAL, None, lambda x: tsp.softmax(x, 0)),
    "log_softmax": (S.log_softmax, REAL, None, lambda x: tsp.log_softmax(x, 0)),
}


def _point(name, lo, hi):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return rng.uniform(lo, hi, 5), rng.standard_normal(5)


def _ad(f, x, w):
    return ad.value_and_grad(lambda x: np.sum(f(x) * w))(x)


def _torch(f, x, w):
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    y = f(t)
    value = (y * torch.tensor(w)).sum()
    if not y.requires_grad:           # torch has no derivative for it (its Bessel functions)
        return value.item(), None
    value.backward()
    return value.item(), t.grad.numpy()


@pytest.mark.parametrize("name", [n for n, o in ORACLES.items() if o[2] is not None])
def test_against_autograd(name):
    f, (lo, hi), ref, _ = ORACLES[name]
    x, w = _point(name, lo, hi)
    value, grad = _ad(f, x, w)
    ref_value, ref_grad = autograd.value_and_grad(lambda x: anp.sum(ref(x) * w))(x)
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n for n, o in ORACLES.items() if o[3] is not None])
def test_against_torch(name):
    f, (lo, hi), _, ref = ORACLES[name]
    x, w = _point(name, lo, hi)
    value, grad = _ad(f, x, w)
    ref_value, ref_grad = _torch(ref, x, w)
    np.testing.assert_allclose(value, ref_value, rtol=1e-9)
    if ref_grad is not None:
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-12)


def test_oracle_agreement_counts():
    """What the oracle tables cover (the report quotes these numbers)."""
    both = [n for n, o in ORACLES.items() if o[2] is not None and o[3] is not None]
    assert len(both) >= 15 and len(ORACLES) >= 50


# -- higher derivatives: the derivative is itself a covered function --------------------------------

SECOND = {
    "gammaln": (sp.gammaln, asp.gammaln, 1.7),
    "digamma": (sp.digamma, asp.digamma, 1.7),
    "gamma": (sp.gamma, asp.gamma, 1.7),
    "erf": (sp.erf, asp.erf, 0.4),
    "erfinv": (sp.erfinv, asp.erfinv, 0.4),
    "expit": (sp.expit, asp.expit, 0.4),
    "logit": (sp.logit, asp.logit, 0.4),
    "i0": (sp.i0, asp.i0, 0.8),
    "i1": (sp.i1, asp.i1, 0.8),
    "j0": (sp.j0, asp.j0, 0.8),
    "iv(1.5, x)": (lambda x: sp.iv(1.5, x), lambda x: asp.iv(1.5, x), 0.8),
    "y1": (sp.y1, asp.y1, 0.8),
}


@pytest.mark.parametrize("name", SECOND)
@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
def test_second_and_third_derivatives(name, form):
    f, ref, x = SECOND[name]
    d2 = ad.grad(ad.grad(f), form=form)
    d3 = ad.grad(ad.grad(ad.grad(f)), form=form)
    np.testing.assert_allclose(d2(x), autograd.grad(autograd.grad(ref))(x), rtol=1e-9)
    np.testing.assert_allclose(d3(x), autograd.grad(autograd.grad(autograd.grad(ref)))(x), rtol=1e-8)


def test_the_gradient_tape_reads_as_scipy():
    """d gammaln = psi, d psi = polygamma(1, x): the lifted backward names scipy's functions."""
    tape = ad.grad_tape(lambda x: np.sum(sp.gammaln(x)), np.array([1.5, 2.5]))
    assert "scipy.special.psi" in str(tape)
    tape2 = ad.grad_tape(lambda x: np.sum(sp.digamma(x)), np.array([1.5, 2.5]))
    assert "scipy.special.polygamma 1" in str(tape2)


def test_compiled_code_calls_scipy():
    """The compiled gradient calls the scipy ufuncs themselves."""
    x = np.array([0.5, 1.5])
    compiled = ad.compile(ad.grad_tape(lambda x: np.sum(sp.gammaln(x) * sp.iv(1.5, x)), x))
    assert "gammaln(" in compiled.source and "psi(" in compiled.source and "iv(1.5, v0)" in compiled.source
    called = compiled.fn.__globals__
    assert any(v is sp.psi for v in called.values()) or called.get("scipy") is sys.modules["scipy"]
    value, grad = compiled(x)
    np.testing.assert_allclose(grad, sp.psi(x) * sp.iv(1.5, x) + sp.gammaln(x) * (sp.iv(0.5, x) + sp.iv(2.5, x)) / 2)


# -- the functions that are not ufuncs: scipy's signatures, spec lines ----------------------------

@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax", "multigammaln", "polygamma",
                                  "factorial", "comb", "perm"])
def test_scipy_signatures(name):
    assert inspect.signature(getattr(S, name)) == inspect.signature(getattr(sp, name))


def test_ad_scipy_special_stands_in_for_scipy_special():
    assert S.gammaln is sp.gammaln and S.iv is sp.iv and S.zeta is sp.zeta
    with pytest.raises(AttributeError):
        S.no_such_function


def spec(fn, ref, *inputs, shapes=("matrix",)):
    """A spec line: ad's function, scipy's (the value reference), the inputs."""
    return Sample(inputs, shapes=shapes, call=fn), ref


POS_IN, B = In(lo=0.2, hi=3.0), In("y", lo=0.5, hi=2.0)
NEG_B = In("y", lo=-2.0, hi=-0.5)       # a negative sum: log|sum| with return_sign stays smooth
ALL = ("scalar", "vector", "matrix")
SPECS = {
    "logsumexp": spec(S.logsumexp, sp.logsumexp, F, shapes=ALL),
    "logsumexp axis=1 keepdims": spec(lambda x: S.logsumexp(x, axis=1, keepdims=True),
                                      lambda x: sp.logsumexp(x, axis=1, keepdims=True), F),
    "logsumexp axis=(0, 1)": spec(lambda x: S.logsumexp(x, axis=(0, 1)), lambda x: sp.logsumexp(x, axis=(0, 1)), F),
    "logsumexp b=": spec(lambda x, b: S.logsumexp(x, axis=0, b=b), lambda x, b: sp.logsumexp(x, axis=0, b=b), F, B),
    "logsumexp b= broadcast": spec(lambda x, b: S.logsumexp(x, axis=-1, b=b[0]),
                                   lambda x, b: sp.logsumexp(x, axis=-1, b=b[0]), F, B),
    "logsumexp return_sign": spec(lambda x, b: S.logsumexp(x, axis=1, b=b, return_sign=True),
                                  lambda x, b: sp.logsumexp(x, axis=1, b=b, return_sign=True), F, NEG_B),
    "softmax": spec(S.softmax, sp.softmax, F, shapes=ALL),
    "softmax axis=0": spec(lambda x: S.softmax(x, axis=0), lambda x: sp.softmax(x, axis=0), F),
    "log_softmax": spec(S.log_softmax, sp.log_softmax, F, shapes=ALL),
    "log_softmax axis=1": spec(lambda x: S.log_softmax(x, axis=1), lambda x: sp.log_softmax(x, axis=1), F),
    "multigammaln d=3": spec(lambda a: S.multigammaln(a, 3), lambda a: sp.multigammaln(a, 3),
                             In(lo=1.2, hi=4.0), shapes=ALL),
    "factorial": spec(S.factorial, sp.factorial, In(lo=-1.0, hi=3.0, avoid=(0.0,)), shapes=ALL),
    "comb": spec(S.comb, sp.comb, In(lo=3.0, hi=5.0), In("y", lo=0.2, hi=2.5)),
    "comb repetition": spec(lambda n, k: S.comb(n, k, repetition=True), lambda n, k: sp.comb(n, k, repetition=True),
                            In(lo=1.0, hi=3.0), In("y", lo=0.2, hi=2.5)),
    "perm": spec(S.perm, sp.perm, In(lo=3.0, hi=5.0), In("y", lo=0.2, hi=2.5)),
    "plain scipy: gammaln(x) * xlogy(x, y) + kl_div(x, y)": spec(
        lambda x, y: sp.gammaln(x) * sp.xlogy(x, y) + sp.kl_div(x, y), None, POS_IN, In("y", lo=0.2, hi=3.0)),
}
CASES = {name: Case(name, s.call, s) for name, (s, _) in SPECS.items()}
PARAMS = [pytest.param(name, shape, id=f"{name}-{shape}") for name, (s, _) in SPECS.items() for shape in s.shapes]


@pytest.mark.parametrize("name,shape", PARAMS)
def test_spec_finite_differences(name, shape):
    gradient_matches_finite_differences(CASES[name], shape)


@pytest.mark.parametrize("name,shape", PARAMS)
def test_spec_forms_agree(name, shape):
    forms_agree(CASES[name], shape)


@pytest.mark.parametrize("name,shape", PARAMS)
def test_spec_float32(name, shape):
    float32_gradients(CASES[name], shape)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,shape", PARAMS)
def test_spec_values_equal_scipy(name, shape, dtype):
    """The traced value equals scipy's own function's (dtype and shape too)."""
    sample, ref = SPECS[name]
    xs = CASES[name].inputs(shape, np.random.default_rng(0), dtype)
    expected = (ref or sample.call)(*xs)
    got = ad.trace(sample.call, *xs)(*xs)
    for g, e in zip(np.atleast_1d(got) if isinstance(got, tuple) else (got,),
                    expected if isinstance(expected, tuple) else (expected,)):
        assert np.shape(g) == np.shape(e) and np.result_type(g) == np.result_type(e)
        np.testing.assert_allclose(g, e, rtol=1e-12 if dtype == np.float64 else 1e-5)


def test_logsumexp_of_minus_infinity():
    x = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(ad.trace(lambda x: S.logsumexp(x, axis=1), x)(x), sp.logsumexp(x, axis=1))
        g = ad.grad(lambda x: S.logsumexp(x, axis=1)[1])(x)
    np.testing.assert_allclose(g[1], sp.softmax(x[1]))


# -- refusals and errors ------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["closure", "lifted", "compiled"])
def test_a_shape_parameter_refuses_its_gradient(form):
    """gammainc's a has no closed-form derivative: asking for it raises, naming the function;
    x alone differentiates, with a traced or a constant a."""
    x = np.array([0.5, 1.5])
    with pytest.raises(ad.NonDifferentiableError, match=r"scipy\.special\.gammainc\(a, x\) in its shape parameter a"):
        ad.grad(lambda a, x: np.sum(sp.gammainc(a, x)), form=form)(np.array([2.0, 3.0]), x)
    got = ad.grad(lambda a, x: np.sum(sp.gammainc(a, x)), argnums=1, form=form)(np.array([2.0, 3.0]), x)
    np.testing.assert_allclose(got, np.exp(-x) * x ** np.array([1.0, 2.0]) / sp.gamma([2.0, 3.0]))


@pytest.mark.parametrize("call,match", [
    (lambda v: sp.iv(v, 1.5), r"scipy\.special\.iv\(v, x\) in its order v"),
    (lambda s: sp.zeta(s, 1.5), r"scipy\.special\.zeta\(x, q\) in its exponent x"),
    (lambda a: sp.hyp1f1(a, 2.0, 0.5), r"scipy\.special\.hyp1f1 in its parameters"),
    (lambda m: sp.ellipj(0.5, m)[0], r"scipy\.special\.ellipj in its parameter m"),
])
def test_parameters_without_closed_form_refuse(call, match):
    with pytest.raises(ad.NonDifferentiableError, match=match):
        ad.grad(lambda p: np.sum(call(p)))(np.array([1.5, 2.5]))


def test_integer_orders_have_no_tangent():
    n = np.array([1, 2])
    got = ad.grad(lambda x: np.sum(sp.yn(n, x) + S.polygamma(n, x)))(np.array([1.5, 2.5]))
    x = np.array([1.5, 2.5])
    np.testing.assert_allclose(got, (sp.yn(n - 1, x) - sp.yn(n + 1, x)) / 2 + sp.polygamma(n + 1, x))


@pytest.mark.parametrize("name", sorted(S.MISSING))
def test_a_ufunc_without_rule_is_named_as_scipy(name):
    """The error names scipy.special.X (not np.X) and says why it has no rule."""
    uf = getattr(sp, name)
    if uf in UFUNCS:       # recorded for the pullbacks that compute with it (elliprd): its gradient refuses
        with pytest.raises(NotImplementedError, match=f"^scipy.special.{name} has no rule, so its gradient is unknown"):
            ad.grad(lambda x: np.sum(uf(*[x] * uf.nin)))(np.array([0.5, 0.7]))
        return
    with pytest.raises(ad.UnsupportedFunctionError) as info:
        ad.trace(lambda x: uf(*[x] * uf.nin), np.array([0.5, 0.7]))
    message = str(info.value)
    assert message.startswith(f"scipy.special.{name} has no rule in ad"), message
    reason = S.MISSING[name]
    assert reason[0].upper() + reason[1:] in message


def test_elliprf_lifts_and_its_second_derivative_refuses():
    """elliprf's pullback computes with elliprd, which has no rule: the first derivative lifts,
    the second refuses loudly."""
    x = np.array([0.5, 1.5])
    gt = ad.grad_tape(lambda x: np.sum(sp.elliprf(x, 1.0, 2.0)), x)
    assert not gt.fallbacks and "scipy.special.elliprd" in str(gt.backward)
    np.testing.assert_allclose(gt(x)[1], -sp.elliprd(1.0, 2.0, x) / 6, rtol=1e-14)
    with pytest.raises(NotImplementedError, match="scipy.special.elliprd has no rule"):
        ad.grad(lambda x: np.sum(ad.grad(lambda x: np.sum(sp.elliprf(x, 1.0, 2.0)))(x)))(x)


def test_the_riemann_zeta_names_the_public_function():
    """...and the user's line, not scipy's (zeta(x) calls the ufunc inside scipy/special/_basic.py)."""
    with pytest.raises(ad.UnsupportedFunctionError, match=r"^scipy\.special\.zeta has no rule in ad\. The Riemann") as info:
        ad.grad(lambda x: np.sum(sp.zeta(x)))(np.array([2.5]))
    assert "test_scipy_special.py" in str(info.value) and "_basic.py" not in str(info.value)


def test_where_and_keywords_name_scipy():
    x = np.array([0.5, 1.5])
    with pytest.raises(ad.UnsupportedFunctionError, match=r"scipy\.special\.gammaln\(\.\.\., where=\.\.\.\)"):
        ad.grad(lambda x: np.sum(sp.gammaln(x, where=x > 1)))(x)
    with pytest.raises(ad.UnsupportedFunctionError, match=r"^np\.sin\(\.\.\., where"):
        ad.grad(lambda x: np.sum(np.sin(x, where=x > 1)))(x)


def test_numpy_ufuncs_keep_their_names():
    from ad.dispatch import public_name
    assert public_name(np.sin) == "np.sin" and public_name(np.linalg.inv) == "np.linalg.inv"
    assert public_name(sp.gammaln) == "scipy.special.gammaln" and public_name(sp.digamma) == "scipy.special.psi"
    assert public_name(sp._ufuncs._beta_pdf) == "scipy.special._ufuncs._beta_pdf"


# -- import cost -------------------------------------------------------------------------------

def test_import_ad_does_not_import_scipy_and_the_first_scipy_ufunc_loads_the_rules():
    code = ("import sys, numpy as np, ad\n"
            "assert 'scipy.special' not in sys.modules and 'ad.scipy.special' not in sys.modules\n"
            "from scipy.special import gammaln, psi\n"
            "assert 'ad.scipy.special' not in sys.modules\n"
            "assert abs(ad.grad(gammaln)(1.5) - psi(1.5)) < 1e-15\n"
            "assert 'ad.scipy.special' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- compiled code and saved files ---------------------------------------------------------------

def _loss(x):
    return np.sum(sp.gammaln(x) * sp.expit(x))


def test_compiled_code_calls_scipy_by_its_public_names():
    x = np.array([1.5, 2.5])
    compiled = ad.compile(ad.grad_tape(_loss, x))
    assert "scipy.special.gammaln(v0)" in compiled.source and "scipy.special.psi(v0)" in compiled.source
    np.testing.assert_allclose(compiled(x)[1], ad.grad(_loss, form="closure")(x), rtol=1e-14)


def test_a_saved_scipy_tape_loads_in_a_fresh_process(tmp_path):
    """import ad defers ad.scipy; loading a file that names scipy.special primitives loads it."""
    x = np.array([1.5, 2.5])
    ad.save(ad.grad_tape(_loss, x), tmp_path / "g.json")
    code = ("import json, sys, numpy as np, ad\n"
            "assert 'scipy' not in sys.modules\n"
            f"print(json.dumps(ad.load({str(tmp_path / 'g.json')!r})(np.array([1.5, 2.5]))[1].tolist()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    np.testing.assert_allclose(json.loads(out), ad.grad(_loss)(x), rtol=1e-14)


def test_under_scipy_array_api_the_rules_load_and_the_error_says_why(tmp_path):
    """SCIPY_ARRAY_API=1 makes many scipy.special functions Python wrappers that convert to
    numpy: ad.scipy.special still loads (its rules are on the ufuncs themselves) and works, and
    plain scipy's refusal names the variable and the fix."""
    code = ("import numpy as np, scipy.special as sp, ad, ad.scipy.special as S\n"
            "x = np.array([1.5, 2.5])\n"
            "assert np.allclose(ad.grad(lambda x: np.sum(S.gammaln(x)))(x), sp.psi(x))\n"
            "try:\n"
            "    ad.grad(lambda x: np.sum(sp.gammaln(x)))(x)\n"
            "except ad.ConcretizationError as e:\n"
            "    print(e)\n")
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert "with SCIPY_ARRAY_API set" in out and "ad.scipy.special.gammaln" in out and "<string>:5" in out
