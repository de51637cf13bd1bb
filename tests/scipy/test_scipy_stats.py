"""ad.scipy.stats: scipy's values, gradients by finite differences in the value and every
parameter, closure = lifted = compiled, float32, and the gradients of HIPS autograd.scipy.stats
and torch.distributions where they have the function. The gradient checks of one call
(``differentiates``, shared with the other ad.scipy tests) are in tests/support/rule_checks.py."""
from __future__ import annotations

import autograd
import autograd.numpy as anp
import autograd.scipy.stats as ast
import numpy as np
import pytest
import scipy.stats as st
import torch

import ad
import ad.scipy.stats as ads
from ad.errors import NonDifferentiableError
from tests.support.rule_checks import differentiates


# -- the distributions and where they are checked -----------------------------------------------
X = np.array([-1.5, -0.3, 0.4, 1.2, 2.5])        # values, also outside a support
POS = np.array([0.3, 0.8, 1.4, 2.2, 3.1])
UNIT = np.array([0.15, 0.3, 0.5, 0.7, 0.85])
# name: (shape parameters, where the value is drawn, the domain of each shape parameter)
CONTINUOUS = {
    "norm": ((), X), "t": ((3.5,), X), "cauchy": ((), X), "laplace": ((), X), "logistic": ((), X),
    "gamma": ((2.5,), POS), "chi2": ((3.0,), POS), "expon": ((), POS), "beta": ((2.5, 1.5), UNIT),
}
METHODS = ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf")
# the derivatives scipy.special has no closed form for: these shapes are refused in cdf/sf
NO_SHAPE_GRADIENT = {"t", "gamma", "chi2", "beta"}


@pytest.mark.parametrize("name", CONTINUOUS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_values_equal_scipy(name, method, dtype):
    shapes, _ = CONTINUOUS[name]
    x = np.linspace(-2.0, 4.0, 25).astype(dtype)          # inside and outside every support
    for loc, scale in ((0.0, 1.0), (0.3, 1.7)):
        got = getattr(getattr(ads, name), method)(x, *shapes, loc=loc, scale=scale)
        want = getattr(getattr(st, name), method)(x, *shapes, loc=loc, scale=scale)
        tol = 1e-10 if dtype == np.float64 else 2e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert np.allclose(getattr(ads, name).entropy(*shapes, scale=2.0), getattr(st, name).entropy(*shapes, scale=2.0))


def test_parameters_pass_as_scipy_takes_them():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(ads.gamma.logpdf(x, a=2.0, scale=3.0), st.gamma.logpdf(x, a=2.0, scale=3.0))
    np.testing.assert_allclose(ads.t.cdf(x, 4.0, 1.0, 2.0), st.t.cdf(x, 4.0, 1.0, 2.0))
    np.testing.assert_allclose(ads.norm(1.0, 2.0).logpdf(x), st.norm(1.0, 2.0).logpdf(x))
    np.testing.assert_allclose(ads.beta(2.0, 3.0).entropy(), st.beta(2.0, 3.0).entropy())
    frozen, theirs = ads.gamma(2.0, scale=3.0), st.gamma(2.0, scale=3.0)
    assert frozen.mean() == theirs.mean() and frozen.logpdf(1.0) == pytest.approx(theirs.logpdf(1.0))
    np.testing.assert_array_equal(frozen.rvs(size=2, random_state=0), theirs.rvs(size=2, random_state=0))
    assert ads.norm.rvs(size=3, random_state=0).shape == (3,)         # scipy's own for the rest
    with pytest.raises(TypeError, match="missing shape parameter"):
        ads.gamma.logpdf(x)
    with pytest.raises(TypeError, match="unexpected parameter"):
        ads.norm.logpdf(x, mu=1.0)


@pytest.mark.parametrize("name", CONTINUOUS)
@pytest.mark.parametrize("method", METHODS)
def test_gradients_in_the_value_and_every_parameter(name, method):
    shapes, x = CONTINUOUS[name]
    f = getattr(getattr(ads, name), method)
    with_shapes = method in ("logpdf", "pdf") or name not in NO_SHAPE_GRADIENT
    if with_shapes:
        differentiates(lambda x, loc, scale, *s: f(x, *s, loc=loc, scale=scale), x * 1.3 + 0.2, 0.2, 1.3, *shapes)
    else:
        differentiates(lambda x, loc, scale: f(x, *shapes, loc=loc, scale=scale), x * 1.3 + 0.2, 0.2, 1.3)


@pytest.mark.parametrize("name", ["t", "gamma", "chi2", "beta"])
def test_a_shape_without_a_closed_form_derivative_refuses(name):
    shapes, x = CONTINUOUS[name]
    with pytest.raises(NonDifferentiableError, match="no closed form"):
        ad.grad(lambda s: np.sum(getattr(ads, name).cdf(x, s, *shapes[1:])))(np.float64(shapes[0]))


@pytest.mark.parametrize("name", CONTINUOUS)
def test_entropy_gradients(name):
    shapes, _ = CONTINUOUS[name]
    differentiates(lambda scale, *s: getattr(ads, name).entropy(*s, scale=scale), 1.3, *shapes)


# -- discrete ---------------------------------------------------------------------------------
K = np.array([0, 1, 2, 3, 5, 7, -1, 2.5])


@pytest.mark.parametrize("name,shapes", [("poisson", (2.3,)), ("binom", (5, 0.3))])
@pytest.mark.parametrize("method", ["logpmf", "pmf", "cdf", "sf", "logcdf", "logsf"])
def test_discrete_values_and_gradients(name, shapes, method):
    f = getattr(getattr(ads, name), method)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(f(K, *shapes), getattr(getattr(st, name), method)(K, *shapes), rtol=1e-10)
    k = np.array([0.0, 1.0, 2.0, 4.0])
    if name == "poisson":
        differentiates(lambda mu: f(k, mu), 2.3)
    else:
        differentiates(lambda p: f(k, 5, p), 0.3, domains=[(0.0, 1.0)])


# -- multivariate -------------------------------------------------------------------------------
RNG = np.random.default_rng(7)
B = RNG.standard_normal((3, 3))
MEAN, PTS = RNG.standard_normal(3), RNG.standard_normal((4, 3))
ALPHA = np.array([1.5, 2.0, 3.0])
SIMPLEX = np.array([[0.2, 0.3, 0.1], [0.3, 0.3, 0.6], [0.5, 0.4, 0.3]])   # components on axis 0


def _cov(b):
    return b @ b.T + np.eye(3)


def test_multivariate_values_equal_scipy():
    mvn, smvn = ads.multivariate_normal, st.multivariate_normal
    C = _cov(B)
    for args in ((PTS, MEAN, C), (PTS[0], MEAN, C), (PTS, MEAN, 2.0), (PTS, MEAN, np.array([1.0, 2.0, 3.0])),
                 (X, None, 2.0), (1.2, 0.5, 2.0), (RNG.standard_normal((2, 4, 3)), MEAN, C)):
        for m in ("logpdf", "pdf"):
            got, want = getattr(mvn, m)(*args), getattr(smvn, m)(*args)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(mvn.entropy(MEAN, C), smvn.entropy(MEAN, C))
    for m in ("logpdf", "pdf"):
        np.testing.assert_allclose(getattr(ads.dirichlet, m)(SIMPLEX, ALPHA), getattr(st.dirichlet, m)(SIMPLEX, ALPHA))
        np.testing.assert_allclose(getattr(ads.dirichlet, m)(SIMPLEX[:2], ALPHA), getattr(st.dirichlet, m)(SIMPLEX[:2], ALPHA))
    for m in ("mean", "var", "entropy"):
        np.testing.assert_allclose(getattr(ads.dirichlet, m)(ALPHA), getattr(st.dirichlet, m)(ALPHA))
    singular = np.diag([1.0, 2.0, 0.0])
    inside = np.concatenate([PTS[:, :2], np.broadcast_to(MEAN[2], (4, 1))], axis=1)
    for x, cov in ((inside, singular), (PTS, singular), (PTS, C), (PTS, np.array([1.0, 2.0, 0.0]))):
        for m in ("logpdf", "pdf"):
            np.testing.assert_allclose(getattr(mvn, m)(x, MEAN, cov, allow_singular=True),
                                       getattr(smvn, m)(x, MEAN, cov, allow_singular=True), rtol=1e-10)


def test_multivariate_gradients():
    differentiates(lambda x, m, c: ads.multivariate_normal.logpdf(x, m, c), PTS, MEAN, _cov(B))   # a full cov
    differentiates(lambda x, m, b: ads.multivariate_normal.pdf(x, m, _cov(b)), PTS, MEAN, B)
    differentiates(lambda x, m, d: ads.multivariate_normal.logpdf(x, m, d), PTS, MEAN, np.array([1.0, 2.0, 3.0]))
    differentiates(lambda x, m, b: ads.multivariate_normal.logpdf(x, m, _cov(b), allow_singular=True), PTS, MEAN, B)
    singular = np.diag([1.0, 2.0, 0.0])      # x and mean moving inside the support
    differentiates(lambda x, m: ads.multivariate_normal.logpdf(np.concatenate([x, m[2:]]), m, singular, allow_singular=True),
                   PTS[0, :2], MEAN)
    differentiates(lambda m, b: ads.multivariate_normal.entropy(m, _cov(b)), MEAN, B)
    differentiates(lambda x, a: ads.dirichlet.logpdf(x, a), SIMPLEX, ALPHA)
    differentiates(lambda a: ads.dirichlet.entropy(a), ALPHA)


# -- oracles --------------------------------------------------------------------------------------
AUTOGRAD = [   # (ad's function, autograd's, its arguments, which of them autograd differentiates)
    (ads.norm.logpdf, ast.norm.logpdf, (X, 0.3, 1.7), (0, 1, 2)),
    (ads.norm.pdf, ast.norm.pdf, (X, 0.3, 1.7), (0, 1, 2)),
    (ads.norm.cdf, ast.norm.cdf, (X, 0.3, 1.7), (0, 1, 2)),
    (ads.norm.sf, ast.norm.sf, (X, 0.3, 1.7), (0, 1, 2)),
    (ads.norm.logcdf, ast.norm.logcdf, (X, 0.3, 1.7), (0, 1, 2)),
    (ads.norm.logsf, ast.norm.logsf, (X, 0.3, 1.7), (0, 1, 2)),
    (ads.t.logpdf, ast.t.logpdf, (X, 3.5, 0.3, 1.7), (0, 1, 2, 3)),
    (ads.t.pdf, ast.t.pdf, (X, 3.5, 0.3, 1.7), (0, 1, 2, 3)),
    (ads.t.cdf, ast.t.cdf, (X, 3.5, 0.3, 1.7), (0, 2)),          # autograd: x and loc only
    (ads.t.logcdf, ast.t.logcdf, (X, 3.5, 0.3, 1.7), (0, 2)),
    (ads.gamma.logpdf, ast.gamma.logpdf, (POS, 2.5), (0, 1)),
    (ads.gamma.pdf, ast.gamma.pdf, (POS, 2.5), (0, 1)),
    (ads.gamma.cdf, ast.gamma.cdf, (POS, 2.5), (0,)),
    (ads.beta.logpdf, ast.beta.logpdf, (UNIT, 2.5, 1.5), (0, 1, 2)),
    (ads.beta.pdf, ast.beta.pdf, (UNIT, 2.5, 1.5), (0, 1, 2)),
    (ads.beta.cdf, ast.beta.cdf, (UNIT, 2.5, 1.5), (0,)),
    (ads.chi2.logpdf, ast.chi2.logpdf, (POS, 3.0), (0,)),
    (ads.chi2.pdf, ast.chi2.pdf, (POS, 3.0), (0,)),
    (ads.chi2.cdf, ast.chi2.cdf, (POS, 3.0), (0,)),
    (ads.poisson.logpmf, ast.poisson.logpmf, (np.array([0.0, 1.0, 3.0]), 2.3), (1,)),
    (ads.poisson.pmf, ast.poisson.pmf, (np.array([0.0, 1.0, 3.0]), 2.3), (1,)),
    (ads.poisson.cdf, ast.poisson.cdf, (np.array([0.0, 1.0, 3.0]), 2.3), (1,)),
    (ads.dirichlet.logpdf, ast.dirichlet.logpdf, (SIMPLEX[:, 0], ALPHA), (0, 1)),
    (ads.dirichlet.pdf, ast.dirichlet.pdf, (SIMPLEX[:, 0], ALPHA), (0, 1)),
    (lambda x, m, b: ads.multivariate_normal.logpdf(x, m, _cov(b)),
     lambda x, m, b: ast.multivariate_normal.logpdf(x, m, anp.dot(b, b.T) + anp.eye(3)), (PTS, MEAN, B), (0, 1, 2)),
    (lambda x, m, b: ads.multivariate_normal.pdf(x, m, _cov(b)),
     lambda x, m, b: ast.multivariate_normal.pdf(x, m, anp.dot(b, b.T) + anp.eye(3)), (PTS, MEAN, B), (0, 1, 2)),
    (lambda m, b: ads.multivariate_normal.entropy(m, _cov(b)),
     lambda m, b: ast.multivariate_normal.entropy(m, anp.dot(b, b.T) + anp.eye(3)), (MEAN, B), (1,)),
]


@pytest.mark.parametrize("ours,theirs,args,argnums", AUTOGRAD,
                         ids=[f"{i}-{getattr(t, '__qualname__', t)}" for i, (_, t, _, _) in enumerate(AUTOGRAD)])
def test_gradients_equal_autograd(ours, theirs, args, argnums):
    args = [np.asarray(a, dtype=np.float64) for a in args]
    np.testing.assert_allclose(ours(*args), theirs(*args), rtol=1e-10)
    for i in argnums:
        want = autograd.grad(lambda *v: anp.sum(theirs(*v)), i)(*args)
        got = ad.grad(lambda *v: np.sum(ours(*v)), i)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12, err_msg=f"argument {i}")


def _t(x):
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)


TD = torch.distributions
TORCH = [   # (ad's log density of (x, *params), torch's distribution of params, x, params)
    (lambda x, m, s: ads.norm.logpdf(x, m, s), TD.Normal, X, (0.3, 1.7)),
    (lambda x, df, m, s: ads.t.logpdf(x, df, m, s), TD.StudentT, X, (3.5, 0.3, 1.7)),
    (lambda x, m, s: ads.cauchy.logpdf(x, m, s), TD.Cauchy, X, (0.3, 1.7)),
    (lambda x, m, s: ads.laplace.logpdf(x, m, s), TD.Laplace, X, (0.3, 1.7)),
    (lambda x, a, rate: ads.gamma.logpdf(x, a, scale=1 / rate), TD.Gamma, POS, (2.5, 0.7)),
    (lambda x, a, b: ads.beta.logpdf(x, a, b), TD.Beta, UNIT, (2.5, 1.5)),
    (lambda x, df: ads.chi2.logpdf(x, df), TD.Chi2, POS, (3.0,)),
    (lambda x, rate: ads.expon.logpdf(x, scale=1 / rate), TD.Exponential, POS, (0.7,)),
    (lambda k, mu: ads.poisson.logpmf(k, mu), TD.Poisson, np.array([0.0, 1.0, 3.0]), (2.3,)),
    (lambda k, p: ads.binom.logpmf(k, 5, p), lambda p: TD.Binomial(5, probs=p), np.array([0.0, 1.0, 3.0]), (0.3,)),
    (lambda x, a: ads.dirichlet.logpdf(x.T, a), TD.Dirichlet, SIMPLEX.T, (ALPHA,)),
    (lambda x, m, c: ads.multivariate_normal.logpdf(x, m, c),
     lambda m, c: TD.MultivariateNormal(m, scale_tril=torch.linalg.cholesky(c)), PTS, (MEAN, _cov(B))),
]


@pytest.mark.parametrize("ours,dist,x,params", TORCH, ids=[str(i) for i in range(len(TORCH))])
def test_log_densities_equal_torch(ours, dist, x, params):
    """torch.distributions' log_prob and its gradients in the value (continuous ones) and the
    parameters (the integer k of a discrete one too: both differentiate its formula); a
    covariance reaches torch through its lower Cholesky factor, so both read its lower triangle."""
    tx, tps = _t(x), [_t(p) for p in params]
    want = dist(*tps).log_prob(tx)
    want.sum().backward()
    argnums = tuple(range(len(params) + 1))
    got = ad.grad(lambda *v: np.sum(ours(*v)), argnums)(np.asarray(x, dtype=np.float64), *map(np.float64, params))
    np.testing.assert_allclose(ours(x, *params), want.detach().numpy(), rtol=1e-10)
    for i, (g, t) in enumerate(zip(got, [tx, *tps])):
        want_g = t.grad.numpy()
        if want_g.ndim == 2 and t is not tx:      # a covariance: the gradient on its lower triangle
            want_g = np.tril(want_g + want_g.T) - np.diag(np.diag(want_g))
        np.testing.assert_allclose(g, want_g, rtol=1e-8, atol=1e-10, err_msg=f"argument {i}")


# -- plain scipy on a traced value: the error names scipy's function and ad.scipy's -------------------

@pytest.mark.parametrize("call,named,advice", [
    (lambda v: st.norm.logpdf(v, 0.0, 1.0), "scipy.stats.norm.logpdf", "from ad.scipy.stats import norm"),
    (lambda v: st.norm(0.0, 2.0).cdf(v), "scipy.stats.norm.cdf", "from ad.scipy.stats import norm"),
    (lambda v: st.multivariate_normal.logpdf(v, np.zeros(3)), "scipy.stats.multivariate_normal.logpdf",
     "from ad.scipy.stats import multivariate_normal"),
    (lambda v: st.zscore(v), "scipy.stats.zscore", "ad.scipy has no scipy.stats.zscore yet"),
    (lambda v: ads.norm.ppf(v), "scipy.stats.norm.ppf", "ad.scipy has no scipy.stats.norm.ppf yet"),
])
def test_plain_scipy_on_a_traced_value_names_its_ad_scipy_equivalent(call, named, advice):
    with pytest.raises(ad.errors.ConcretizationError) as info:
        ad.grad(lambda v: np.sum(call(v)))(np.array([0.1, 0.2, 0.3]))
    message = str(info.value)
    assert message.startswith(named) and advice in message
    assert info.value.location.startswith(__file__)       # the user's line, not scipy's


# -- multivariate_normal.cdf / logcdf: scipy's integration, differentiated ---------------------------
C2 = np.array([[1.3, 0.4], [0.4, 0.8]])
C3 = _cov(B) / 3


def test_multivariate_cdf_values_equal_scipy():
    """scipy's values (the same seed: scipy's own integration), its shapes and broadcasting;
    logcdf of a negative oriented probability is complex, as in scipy."""
    mvn, smvn = ads.multivariate_normal, st.multivariate_normal
    for args, kw in (((PTS[:, :2], MEAN[:2], C2), {}), ((PTS[0, :2], MEAN[:2], C2), {}),
                     ((PTS[:, :2], MEAN[:2], C2), {"lower_limit": np.array([-1.0, -0.5])}),
                     ((X, 0.5, 2.0), {"lower_limit": 0.0}),     # limits swapped: negative
                     ((PTS[0, :2], MEAN[:2], C2), {"lower_limit": PTS[0, :2] + [1.0, -1.0]}),
                     ((X, 0.5, 2.0), {}), ((1.2, 0.5, 2.0), {"lower_limit": -0.3}),     # one dimension: ndtr
                     ((RNG.standard_normal((2, 4, 2)), MEAN[:2], np.array([1.0, 2.0])), {}),
                     ((PTS[:2], MEAN, C3), {"abseps": 1e-7, "rng": 3}), ((PTS[:2], MEAN, C3), {})):
        for m in ("cdf", "logcdf"):
            got, want = getattr(mvn, m)(*args, **kw), getattr(smvn, m)(*args, **{"rng": 0, **kw})
            assert np.shape(got) == np.shape(want) and np.iscomplexobj(got) == np.iscomplexobj(want)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(mvn(MEAN[:2], C2).cdf(PTS[:, :2]), smvn(MEAN[:2], C2).cdf(PTS[:, :2]), rtol=1e-12)
    with pytest.raises(NonDifferentiableError, match="allow_singular=True"):
        ad.grad(lambda x: mvn.cdf(x, cov=C2, allow_singular=True))(PTS[0, :2])


def test_multivariate_cdf_gradients_in_two_dimensions():
    """Exact integration in 2-d: every check at the ordinary tolerance, x broadcast over points,
    the mean, cov and a lower limit."""
    lower = np.array([-1.5, -2.0])
    differentiates(lambda x, m, c: ads.multivariate_normal.cdf(x, m, c), PTS[:, :2], MEAN[:2], C2)
    differentiates(lambda x, m, c, lo: ads.multivariate_normal.logcdf(x, m, c, lower_limit=lo),
                   PTS[:, :2] + 1.0, MEAN[:2], C2, lower)
    differentiates(lambda x, c, lo: ads.multivariate_normal.cdf(x, MEAN[:2], c, lower_limit=lo),   # swapped: oriented
                   PTS[0, :2], C2, PTS[0, :2] + np.array([1.0, -1.0]))
    differentiates(lambda x, d: ads.multivariate_normal.cdf(x, np.zeros(2), d), PTS[:, :2], np.array([1.0, 2.0]))
    differentiates(lambda x, s: ads.multivariate_normal.cdf(x, 0.5, s), X, 2.0)          # 1-d: ndtr


def _fd(f, x, h=1e-3):
    """Central differences, one coordinate at a time (error h^2/6 times a third derivative: 1e-8 here)."""
    out = np.zeros(np.shape(x))
    for i in np.ndindex(np.shape(x)):
        e = np.zeros(np.shape(x))
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def test_multivariate_cdf_gradients_in_three_dimensions_follow_the_integration_error():
    """3-d: scipy's randomized lattice rule (seeded) at abseps 1e-7. The gradient's conditional
    cdfs are 2-d (exact), the value is not: finite differences of scipy's estimate differ from
    the gradient by the derivative of its integration error, measured up to 1e-7 (x) and 5e-6
    (cov) at this abseps (2e-6 and 3e-5 at scipy's default 1e-5); the tolerance is 1e-5. The
    Hessian in x (through the 2-d primitive: exact whatever abseps) matches at 1e-7."""
    x, lower, kw = PTS[0] + 0.5, PTS[0] - 2.0, {"abseps": 1e-7, "rng": 0}

    def scipy_cdf(x, c, m=MEAN):
        return st.multivariate_normal.cdf(x, m, np.tril(c) + np.tril(c, -1).T, lower_limit=lower, **kw)
    gx, gm, gc = ad.grad(lambda x, m, c: ads.multivariate_normal.cdf(x, m, c, lower_limit=lower, **kw),
                         (0, 1, 2))(x, MEAN, C3)
    np.testing.assert_allclose(gx, _fd(lambda t: scipy_cdf(t, C3), x), atol=1e-5)
    np.testing.assert_allclose(gm, _fd(lambda t: scipy_cdf(x, C3, t), MEAN), atol=1e-5)
    np.testing.assert_allclose(gc, _fd(lambda t: scipy_cdf(x, t), C3), atol=1e-5)
    coarse = {"abseps": 1e-3, "rng": 0}
    grad_x = ad.grad(lambda x: ads.multivariate_normal.cdf(x, MEAN, C3, **coarse))
    hess = ad.hessian(lambda x: ads.multivariate_normal.cdf(x, MEAN, C3, **coarse))(x)
    np.testing.assert_allclose(hess, np.stack([_fd(lambda t: grad_x(t)[k], x) for k in range(3)]), atol=1e-7)


def test_multivariate_cdf_checker():
    """The checker on the primitive: every check, second order too, in 2-d (exact); in 3-d the
    checks without finite differences (those hold the integration error to the per-dtype
    tolerance, which a per-primitive one would fix: the test above sets it)."""
    two = ad.check_rule(lambda u, c, lo: ads.mvn_cdf_p.bind(u, c, lo, **ads.EXACT), PTS[:, :2] + 1.0, C2,
                        PTS[:, :2] - 1.0, second_order=True)
    assert two.ok and not two.warnings, two
    three = ad.check_rule(lambda u, c: ads.mvn_cdf_p.bind(u, c, **{**ads.EXACT, "abseps": 1e-6}), PTS[:2], C3,
                          profile="interface")
    assert three.ok, three


# -- discrete entropies -------------------------------------------------------------------------------

def test_discrete_entropies():
    """Values equal scipy's (whose own sum stops short for a large mu: poisson.entropy(1e4) is off
    by 2.5e-3 there, ad's sum to mu + 10 sqrt(mu) + 40 is not), gradients by finite
    differences and forms, binom's and its gradient equal torch's."""
    mus = np.array([1e-3, 0.7, 2.3, 55.5, 400.0])
    np.testing.assert_allclose(ads.poisson.entropy(mus), st.poisson.entropy(mus), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ads.poisson.entropy(1e4), 0.5 * np.log(2 * np.pi * np.e * 1e4) - 1 / 12e4, rtol=1e-9)
    for n, p in ((5, 0.3), (1, 0.5), (40, 0.9), (np.array([3, 5, 8]), np.array([0.2, 0.5, 0.7]))):
        np.testing.assert_allclose(ads.binom.entropy(n, p), st.binom.entropy(n, p), rtol=1e-12)
    assert ads.poisson(2.3, loc=1).entropy() == pytest.approx(st.poisson(2.3, loc=1).entropy(), rel=1e-12)
    differentiates(lambda mu: ads.poisson.entropy(mu), np.array([0.4, 2.3, 12.0]))
    differentiates(lambda p: ads.binom.entropy(np.array([3, 5, 8]), p), np.array([0.2, 0.5, 0.7]),
                   domains=[(0.0, 1.0)])
    tp = _t(0.3)
    want = TD.Binomial(5, probs=tp).entropy()
    want.backward()
    np.testing.assert_allclose(ads.binom.entropy(5, 0.3), want.item(), rtol=1e-12)
    np.testing.assert_allclose(ad.grad(lambda p: ads.binom.entropy(5, p))(0.3), tp.grad.item(), rtol=1e-10)
