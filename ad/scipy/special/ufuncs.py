"""The rules of scipy.special's ufuncs, registered in ad's dispatch tables.

scipy.special's functions are numpy ufuncs: called on a tracer they reach ``__array_ufunc__``
and the dispatch table as ``np.sin`` does, so user code keeps ``from scipy.special import
gammaln``. Each gets a primitive named ``scipy.special.<name>`` whose impl is the scipy ufunc
itself, declared once here with its samples, and a rule written with scipy.special ufuncs: the
rules lift, and differentiate again (d gammaln = psi, d psi = polygamma(1, x), d polygamma(n, x)
= polygamma(n + 1, x), d iv(v, x) = (iv(v - 1, x) + iv(v + 1, x)) / 2, ...).

Operands without a closed-form derivative (a Bessel order ``v``, the shape ``a`` of
``gammainc``, the exponent of ``zeta``...) refuse loudly when their gradient is asked for
(``NonDifferentiableError``): a zero would be a silently wrong gradient. Integer operands
(``polygamma``'s ``n``) have none. Every ufunc of scipy.special is classified here: a rule,
not differentiable (piecewise constant), or ``MISSING`` with the reason.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import _ufuncs

from ...dispatch import UFUNC_NAMES, UNSUPPORTED_UFUNCS
from ...samples import F, In, Sample, literal, to_integer
from .declarations import (POS, POS_Y, PROB, UNIT, Refused, binary, not_differentiable, of_x, sp, ufunc,
                           ufunc_outputs, ufunc_primitive, unary)
from .functions import polygamma

SQRT_PI, SQRT_2PI = math.sqrt(math.pi), math.sqrt(2 * math.pi)   # Python floats keep float32
TWO_OVER_SQRT_PI, DEG = 2 / SQRT_PI, math.pi / 180
LN2, LN10 = math.log(2), math.log(10)


def _poles(x):
    """The distance to the nearest pole of gamma (0, -1, -2, ...), where gammasgn jumps."""
    return np.where(x > 0, x, np.abs(to_integer(x)))


# -- the ufuncs with rules ---------------------------------------------------------------------
# gamma and beta functions
ufunc(sp.gamma, unary(POS), lambda x, y: y * sp.psi(x))
ufunc(sp.gammaln, unary(POS), lambda x, y: sp.psi(x))
ufunc(sp.loggamma, unary(POS), lambda x, y: sp.psi(x))
ufunc(sp.rgamma, unary(POS), lambda x, y: -y * sp.psi(x))
ufunc(sp.psi, unary(POS), lambda x, y: polygamma(1, x))
not_differentiable(sp.gammasgn, unary(In(lo=-2.9, hi=2.9, avoid=(-2.0, -1.0, 0.0))), _poles)
ufunc(sp.beta, binary(POS, POS_Y), lambda a, b, y: y * (sp.psi(a) - sp.psi(a + b)),
      lambda a, b, y: y * (sp.psi(b) - sp.psi(a + b)))
ufunc(sp.betaln, binary(POS, POS_Y), lambda a, b, y: sp.psi(a) - sp.psi(a + b),
      lambda a, b, y: sp.psi(b) - sp.psi(a + b))
ufunc(sp.poch, binary(POS, POS_Y), lambda z, m, y: y * (sp.psi(z + m) - sp.psi(z)),
      lambda z, m, y: y * sp.psi(z + m))
ufunc(sp.binom, binary(In(lo=3.0, hi=5.0), In("y", lo=0.2, hi=2.5)),
      lambda n, k, y: y * (sp.psi(n + 1) - sp.psi(n - k + 1)),
      lambda n, k, y: y * (sp.psi(n - k + 1) - sp.psi(k + 1)))


def _lgamma(a):
    """gammaln of a parameter; of a Python number, a Python float (numpy's float64 scalar
    would make float32 operands float64)."""
    return math.lgamma(a) if isinstance(a, (int, float)) else sp.gammaln(a)


def _like(x, value):
    """``value`` in the dtype of ``x``: the scipy ufuncs whose double loop comes first compute
    float32 operands in float64."""
    dtype = getattr(x, "dtype", np.dtype(np.float64))
    return value if value.dtype == dtype else value.astype(dtype)


def _gamma_density(a, x):
    """d gammainc(a, x) / dx = x^(a-1) e^-x / Gamma(a), in logs (no overflow)."""
    return np.exp((a - 1) * np.log(x) - x - _lgamma(a))


SHAPE = "scipy.special.{}(a, x) in its shape parameter a"
ufunc(sp.gammainc, of_x(2.5), Refused(SHAPE.format("gammainc")), lambda a, x, y: _gamma_density(a, x))
ufunc(sp.gammaincc, of_x(2.5), Refused(SHAPE.format("gammaincc")), lambda a, x, y: -_gamma_density(a, x))
ufunc(sp.gammaincinv, of_x(2.5, x=PROB), Refused(SHAPE.format("gammaincinv")),
      lambda a, p, y: 1 / _gamma_density(a, y))
ufunc(sp.gammainccinv, of_x(2.5, x=PROB), Refused(SHAPE.format("gammainccinv")),
      lambda a, p, y: -1 / _gamma_density(a, y))


def _beta_density(a, b, x):
    """d betainc(a, b, x) / dx = x^(a-1) (1-x)^(b-1) / B(a, b), in logs."""
    return np.exp((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - _lgamma(a) - _lgamma(b) + _lgamma(a + b))


BETA_SHAPES = "scipy.special.{}(a, b, x) in its shape parameters a, b"
for _uf, _sign in ((sp.betainc, 1), (sp.betaincc, -1)):
    ufunc(_uf, of_x(2.5, 1.5, x=PROB), Refused(BETA_SHAPES.format(_uf.__name__)),
          Refused(BETA_SHAPES.format(_uf.__name__)),
          lambda a, b, x, y, s=_sign: s * _beta_density(a, b, x))
for _uf, _sign in ((sp.betaincinv, 1), (sp.betainccinv, -1)):
    ufunc(_uf, of_x(2.5, 1.5, x=PROB), Refused(BETA_SHAPES.format(_uf.__name__)),
          Refused(BETA_SHAPES.format(_uf.__name__)),
          lambda a, b, p, y, s=_sign: s / _beta_density(a, b, y))

# error functions and the normal distribution
ufunc(sp.erf, unary(), lambda x, y: TWO_OVER_SQRT_PI * np.exp(-x * x))
ufunc(sp.erfc, unary(), lambda x, y: -TWO_OVER_SQRT_PI * np.exp(-x * x))
ufunc(sp.erfcx, unary(), lambda x, y: 2 * x * y - TWO_OVER_SQRT_PI)
ufunc(sp.erfi, unary(), lambda x, y: TWO_OVER_SQRT_PI * np.exp(x * x))
ufunc(sp.erfinv, unary(UNIT), lambda x, y: SQRT_PI / 2 * np.exp(y * y))
ufunc(sp.erfcinv, unary(In(lo=0.1, hi=1.9, domain=(0.0, 2.0))), lambda x, y: -SQRT_PI / 2 * np.exp(y * y))
ufunc(sp.dawsn, unary(), lambda x, y: 1 - 2 * x * y)
ufunc(sp.ndtr, unary(), lambda x, y: np.exp(-x * x / 2) / SQRT_2PI)
ufunc(sp.log_ndtr, unary(In(lo=-6.0, hi=3.0)), lambda x, y: np.exp(-x * x / 2 - y) / SQRT_2PI)
ufunc(sp.ndtri, unary(PROB), lambda p, y: SQRT_2PI * np.exp(y * y / 2))
ufunc(sp.ndtri_exp, unary(In(lo=-3.0, hi=-0.1, domain=(None, 0.0))),
      lambda x, y: SQRT_2PI * np.exp(x + y * y / 2))
ufunc(sp.owens_t, binary(F, In("y", lo=0.2, hi=2.0)),
      lambda h, a, y: -np.exp(-h * h / 2) / SQRT_2PI * sp.erf(a * h / math.sqrt(2)) / 2,
      lambda h, a, y: np.exp(-h * h * (1 + a * a) / 2) / (2 * math.pi * (1 + a * a)))

# logistic, entropies
ufunc(sp.expit, unary(), lambda x, y: y - y * y)
ufunc(sp.logit, unary(PROB), lambda x, y: 1 / (x - x * x))
ufunc(sp.log_expit, unary(), lambda x, y: sp.expit(-x))
ufunc(sp.xlogy, binary(F, POS_Y), lambda x, z, y: np.log(z), lambda x, z, y: x / z)
ufunc(sp.xlog1py, binary(F, In("y", lo=-0.5, hi=2.0, domain=(-1.0, None))),
      lambda x, z, y: np.log1p(z), lambda x, z, y: x / (1 + z))
ufunc(sp.entr, unary(POS), lambda x, y: -(np.log(x) + 1))
ufunc(sp.rel_entr, binary(POS, POS_Y), lambda x, z, y: np.log(x / z) + 1, lambda x, z, y: -x / z)
ufunc(sp.kl_div, binary(POS, POS_Y), lambda x, z, y: np.log(x / z), lambda x, z, y: 1 - x / z)
ufunc(sp.huber, binary(In(lo=1.0, hi=1.5, domain=(0.0, None)), In("y", lo=-3.0, hi=3.0)),
      lambda d, r, y: np.where(np.abs(r) > d, np.abs(r) - d, 0.0),
      lambda d, r, y: np.where(np.abs(r) > d, d * np.sign(r), r))


def _hypot1(d, r):
    return np.sqrt(1 + (r / d) ** 2)


ufunc(sp.pseudo_huber, binary(In(lo=0.5, hi=1.5, domain=(0.0, None)), In("y")),
      lambda d, r, y: 2 * y / d - r * r / (d * _hypot1(d, r)), lambda d, r, y: r / _hypot1(d, r))
NONZERO_LAMBDA = In("y", lo=-1.0, hi=1.0, avoid=(0.0,))   # the formula of d/dlambda is 0/0 at 0
ufunc(sp.boxcox, binary(POS, NONZERO_LAMBDA), lambda x, lm, y: x ** (lm - 1),
      lambda x, lm, y: ((lm * y + 1) * np.log(x) - y) / lm)
ufunc(sp.boxcox1p, binary(POS, NONZERO_LAMBDA), lambda x, lm, y: (1 + x) ** (lm - 1),
      lambda x, lm, y: ((lm * y + 1) * np.log1p(x) - y) / lm)
ufunc(sp.inv_boxcox, binary(In(lo=0.1, hi=1.0), NONZERO_LAMBDA), lambda z, lm, y: y / (lm * z + 1),
      lambda z, lm, y: y * (z / (lm * (lm * z + 1)) - np.log1p(lm * z) / (lm * lm)))
ufunc(sp.inv_boxcox1p, binary(In(lo=0.1, hi=1.0), NONZERO_LAMBDA), lambda z, lm, y: (y + 1) / (lm * z + 1),
      lambda z, lm, y: (y + 1) * (z / (lm * (lm * z + 1)) - np.log1p(lm * z) / (lm * lm)))
ufunc(sp.powm1, binary(POS, In("y", lo=-1.5, hi=1.5)), lambda x, p, y: p * x ** (p - 1),
      lambda x, p, y: (y + 1) * np.log(x))

# Bessel functions: the orders are refused, x is differentiated with the recurrences
ORDER_OF = "scipy.special.{}(v, x) in its order v"
ufunc(sp.i0e, unary(In(avoid=(0.0,))), lambda x, y: sp.i1e(x) - np.sign(x) * y, kink=lambda x: x)
ufunc(sp.i0, unary(), lambda x, y: sp.i1(x))
ufunc(sp.i1, unary(), lambda x, y: (sp.i0(x) + sp.iv(2.0, x)) / 2)
ufunc(sp.i1e, unary(), lambda x, y: (sp.i0e(x) + sp.ive(2.0, x)) / 2 - np.sign(x) * y)
ufunc(sp.j0, unary(), lambda x, y: -sp.j1(x))
ufunc(sp.j1, unary(), lambda x, y: (sp.j0(x) - sp.jv(2.0, x)) / 2)
ufunc(sp.y0, unary(POS), lambda x, y: -sp.y1(x))
ufunc(sp.y1, unary(POS), lambda x, y: (sp.y0(x) - sp.yv(2.0, x)) / 2)
ufunc(sp.k0, unary(POS), lambda x, y: -sp.k1(x))
ufunc(sp.k1, unary(POS), lambda x, y: -(sp.k0(x) + sp.kv(2.0, x)) / 2)
ufunc(sp.k0e, unary(POS), lambda x, y: y - sp.k1e(x))
ufunc(sp.k1e, unary(POS), lambda x, y: y - (sp.k0e(x) + sp.kve(2.0, x)) / 2)
ufunc(sp.iv, of_x(1.5), Refused(ORDER_OF.format("iv")), lambda v, x, y: (sp.iv(v - 1, x) + sp.iv(v + 1, x)) / 2)
ufunc(sp.ive, of_x(1.5), Refused(ORDER_OF.format("ive")),
      lambda v, x, y: (sp.ive(v - 1, x) + sp.ive(v + 1, x)) / 2 - np.sign(x) * y)
ufunc(sp.jv, of_x(1.5), Refused(ORDER_OF.format("jv")), lambda v, x, y: (sp.jv(v - 1, x) - sp.jv(v + 1, x)) / 2)
ufunc(sp.jve, of_x(1.5), Refused(ORDER_OF.format("jve")),   # real x: jve is jv
      lambda v, x, y: (sp.jve(v - 1, x) - sp.jve(v + 1, x)) / 2)
ufunc(sp.yv, of_x(1.5), Refused(ORDER_OF.format("yv")), lambda v, x, y: (sp.yv(v - 1, x) - sp.yv(v + 1, x)) / 2)
ufunc(sp.yve, of_x(1.5), Refused(ORDER_OF.format("yve")),
      lambda v, x, y: (sp.yve(v - 1, x) - sp.yve(v + 1, x)) / 2)
ufunc(sp.kv, of_x(1.5), Refused(ORDER_OF.format("kv")), lambda v, x, y: -(sp.kv(v - 1, x) + sp.kv(v + 1, x)) / 2)
ufunc(sp.kve, of_x(1.5), Refused(ORDER_OF.format("kve")),
      lambda v, x, y: y - (sp.kve(v - 1, x) + sp.kve(v + 1, x)) / 2)
ufunc(sp.yn, of_x(2, dtypes=(np.dtype(np.float64),)), Refused(ORDER_OF.format("yn")),
      lambda n, x, y: (sp.yn(n - 1, x) - sp.yn(n + 1, x)) / 2)
ufunc(sp.kn, of_x(2, dtypes=(np.dtype(np.float64),)), Refused(ORDER_OF.format("kn")),
      lambda n, x, y: -(sp.kn(n - 1, x) + sp.kn(n + 1, x)) / 2)


def _struve_term(v, x):
    """(x/2)^v / (sqrt(pi) Gamma(v + 3/2)): what the Struve recurrences add to Bessel's."""
    return np.exp(v * np.log(x / 2) - sp.gammaln(v + 1.5)) / SQRT_PI


ufunc(sp.struve, of_x(1.5), Refused(ORDER_OF.format("struve")),
      lambda v, x, y: (sp.struve(v - 1, x) - sp.struve(v + 1, x) + _struve_term(v, x)) / 2)
ufunc(sp.modstruve, of_x(1.5), Refused(ORDER_OF.format("modstruve")),
      lambda v, x, y: (sp.modstruve(v - 1, x) + sp.modstruve(v + 1, x) + _struve_term(v, x)) / 2)
# Kelvin functions: ber' = berp, ..., and berp' from Kelvin's equation x^2 w'' + x w' = i x^2 w
ufunc(sp.ber, unary(POS), lambda x, y: sp.berp(x))
ufunc(sp.bei, unary(POS), lambda x, y: sp.beip(x))
ufunc(sp.ker, unary(POS), lambda x, y: sp.kerp(x))
ufunc(sp.kei, unary(POS), lambda x, y: sp.keip(x))
ufunc(sp.berp, unary(POS), lambda x, y: -y / x - sp.bei(x))
ufunc(sp.beip, unary(POS), lambda x, y: -y / x + sp.ber(x))
ufunc(sp.kerp, unary(POS), lambda x, y: -y / x - sp.kei(x))
ufunc(sp.keip, unary(POS), lambda x, y: -y / x + sp.ker(x))
ufunc_outputs(sp.airy, unary(), lambda x, ai, aip, bi, bip: (aip, x * ai, bip, x * bi))
# integrals of Bessel and Struve functions: their derivative is the integrand
ufunc_outputs(sp.iti0k0, unary(POS), lambda x, i, k: (sp.i0(x), sp.k0(x)))
ufunc_outputs(sp.itj0y0, unary(POS), lambda x, j, y: (sp.j0(x), sp.y0(x)))
ufunc_outputs(sp.it2i0k0, unary(POS), lambda x, i, k: ((sp.i0(x) - 1) / x, -sp.k0(x) / x))
ufunc_outputs(sp.it2j0y0, unary(POS), lambda x, j, y: ((1 - sp.j0(x)) / x, -sp.y0(x) / x))
ufunc(sp.itstruve0, unary(POS), lambda x, y: _like(x, sp.struve(0.0, x)))
ufunc(sp.it2struve0, unary(POS), lambda x, y: -_like(x, sp.struve(0.0, x)) / x)
ufunc(sp.itmodstruve0, unary(POS), lambda x, y: _like(x, sp.modstruve(0.0, x)))
# parabolic cylinder functions: (value, derivative), and Weber's equation for the second one
PARABOLIC = of_x(0.5, x=In(lo=-2.0, hi=2.0))
ufunc_outputs(sp.pbdv, PARABOLIC, lambda v, x, d, dp: (dp, (x * x / 4 - v - 0.5) * d), "its order v")
ufunc_outputs(sp.pbvv, PARABOLIC, lambda v, x, d, dp: (dp, (x * x / 4 - v - 0.5) * d), "its order v")
ufunc_outputs(sp.pbwa, PARABOLIC, lambda a, x, w, wp: (wp, (a - x * x / 4) * w), "its parameter a")

# exponential and trigonometric integrals, elementary functions
ufunc(sp.expn, of_x(2, dtypes=(np.dtype(np.float64),)), Refused("scipy.special.expn(n, x) in its order n"),
      lambda n, x, y: -sp.expn(n - 1, x))
ufunc(sp.exp1, unary(POS), lambda x, y: -np.exp(-x) / x)
ufunc(sp.expi, unary(POS), lambda x, y: np.exp(x) / x)
ufunc_outputs(sp.sici, unary(POS), lambda x, si, ci: (np.sin(x) / x, np.cos(x) / x))
ufunc_outputs(sp.shichi, unary(POS), lambda x, shi, chi: (np.sinh(x) / x, np.cosh(x) / x))
ufunc_outputs(sp.fresnel, unary(), lambda x, s, c: (np.sin(math.pi / 2 * x * x), np.cos(math.pi / 2 * x * x)))
ufunc(sp.spence, unary(In(lo=0.2, hi=3.0, avoid=(1.0,), domain=(0.0, None))), lambda x, y: np.log(x) / (1 - x))
ufunc(sp.wrightomega, unary(), lambda x, y: y / (1 + y))
ufunc(sp.cosm1, unary(), lambda x, y: -np.sin(x))
ufunc(sp.sindg, unary(In(lo=-170.0, hi=170.0)), lambda x, y: DEG * sp.cosdg(x))
ufunc(sp.cosdg, unary(In(lo=-170.0, hi=170.0)), lambda x, y: -DEG * sp.sindg(x))
ufunc(sp.tandg, unary(In(lo=-60.0, hi=60.0)), lambda x, y: DEG * (1 + y * y))
ufunc(sp.cotdg, unary(In(lo=20.0, hi=160.0)), lambda x, y: -DEG * (1 + y * y))
ufunc(sp.exp10, unary(), lambda x, y: LN10 * y)
ufunc(sp.exp2, unary(), lambda x, y: LN2 * y)
ufunc(sp.expm1, unary(), lambda x, y: y + 1)
ufunc(sp.log1p, unary(In(lo=-0.5, hi=2.0, domain=(-1.0, None))), lambda x, y: 1 / (1 + x))
ufunc(sp.cbrt, unary(In(avoid=(0.0,))), lambda x, y: 1 / (3 * y * y))
not_differentiable(sp.round, unary(In(avoid=(-1.5, -0.5, 0.5, 1.5))), lambda x: to_integer(x - 0.5))

# zeta: the Hurwitz zeta(x, q) is differentiated in q; the exponent x is refused
# (scipy.special.zeta is a Python function calling one of two private ufuncs)
ufunc(_ufuncs._zeta, of_x(2.5, x=In(lo=0.5, hi=3.0, domain=(0.0, None))),
      Refused("scipy.special.zeta(x, q) in its exponent x"), lambda x, q, y: -x * sp.zeta(x + 1, q),
      name="zeta")
UFUNC_NAMES.update({_ufuncs._zeta: "scipy.special.zeta", _ufuncs._riemann_zeta: "scipy.special.zeta",
                    _ufuncs._lambertw: "scipy.special.lambertw"})

# hypergeometric functions: d/dx shifts the parameters; the parameters are refused
HYPER = "scipy.special.{} in its parameters"
ufunc(sp.hyp0f1, of_x(1.5, x=F), Refused(HYPER.format("hyp0f1")), lambda v, z, y: sp.hyp0f1(v + 1, z) / v)
ufunc(sp.hyp1f1, of_x(1.5, 2.5, x=F), *[Refused(HYPER.format("hyp1f1"))] * 2,
      lambda a, b, x, y: a / b * sp.hyp1f1(a + 1, b + 1, x))
ufunc(sp.hyp2f1, of_x(1.5, 0.5, 2.5, x=In(lo=-0.5, hi=0.5)), *[Refused(HYPER.format("hyp2f1"))] * 3,
      lambda a, b, c, x, y: a * b / c * sp.hyp2f1(a + 1, b + 1, c + 1, x))
ufunc(sp.hyperu, of_x(1.5, 0.5, x=POS), *[Refused(HYPER.format("hyperu"))] * 2,
      lambda a, b, x, y: -a * sp.hyperu(a + 1, b + 1, x))

# elliptic integrals (parameter m) and functions
M = In(lo=0.1, hi=0.9, domain=(None, 1.0))
ufunc(sp.ellipk, unary(M), lambda m, y: (sp.ellipe(m) - (1 - m) * y) / (2 * m * (1 - m)))
ufunc(sp.ellipe, unary(M), lambda m, y: (y - sp.ellipk(m)) / (2 * m))
ufunc(sp.ellipkm1, unary(In(lo=0.1, hi=0.9, domain=(0.0, None))),
      lambda p, y: -(sp.ellipe(1 - p) - p * y) / (2 * p * (1 - p)))


def _delta(phi, m):
    return np.sqrt(1 - m * np.sin(phi) ** 2)


ufunc(sp.ellipkinc, binary(F, In("y", lo=0.1, hi=0.9, domain=(None, 1.0))),
      lambda phi, m, y: 1 / _delta(phi, m),
      lambda phi, m, y: (sp.ellipeinc(phi, m) / (1 - m) - y) / (2 * m)
      - np.sin(2 * phi) / (4 * (1 - m) * _delta(phi, m)))
ufunc(sp.ellipeinc, binary(F, In("y", lo=0.1, hi=0.9, domain=(None, 1.0))),
      lambda phi, m, y: _delta(phi, m), lambda phi, m, y: (y - sp.ellipkinc(phi, m)) / (2 * m))
ufunc_outputs(sp.ellipj, (Sample((F, literal(0.5))),),
              lambda u, m, sn, cn, dn, ph: (cn * dn, -sn * dn, -m * sn * cn, dn), "its parameter m", x=0)


# orthogonal polynomials: derivatives in x are polynomials of the next family (Gegenbauer's
# d/dx C_n^(a) = 2a C_(n-1)^(a+1)); the degree is refused, the family parameters too
DEGREE = "scipy.special.{} in its degree and parameters"
POLY = of_x(3, x=UNIT)
SHIFTED = of_x(3, x=In(lo=0.05, hi=0.95, domain=(0.0, 1.0)))


def _poly(uf, samples, derivative, n_params=1):
    return ufunc(uf, samples, *[Refused(DEGREE.format(uf.__name__))] * n_params, derivative)


_poly(sp.eval_chebyt, POLY, lambda n, x, y: n * sp.eval_chebyu(n - 1, x))
_poly(sp.eval_chebyu, POLY, lambda n, x, y: 2 * sp.eval_gegenbauer(n - 1, 2.0, x))
_poly(sp.eval_legendre, POLY, lambda n, x, y: sp.eval_gegenbauer(n - 1, 1.5, x))
_poly(sp.eval_chebyc, of_x(3, x=In(lo=-1.8, hi=1.8)), lambda n, x, y: n * sp.eval_chebys(n - 1, x))
_poly(sp.eval_chebys, of_x(3, x=In(lo=-1.8, hi=1.8)), lambda n, x, y: sp.eval_gegenbauer(n - 1, 2.0, x / 2))
_poly(sp.eval_sh_legendre, SHIFTED, lambda n, x, y: 2 * sp.eval_gegenbauer(n - 1, 1.5, 2 * x - 1))
_poly(sp.eval_sh_chebyt, SHIFTED, lambda n, x, y: 2 * n * sp.eval_chebyu(n - 1, 2 * x - 1))
_poly(sp.eval_sh_chebyu, SHIFTED, lambda n, x, y: 4 * sp.eval_gegenbauer(n - 1, 2.0, 2 * x - 1))
_poly(sp.eval_laguerre, of_x(3, x=POS), lambda n, x, y: -sp.eval_genlaguerre(n - 1, 1.0, x))
_poly(sp.eval_hermitenorm, of_x(3, x=F, dtypes=(np.dtype(np.float64),)),
      lambda n, x, y: n * sp.eval_hermitenorm(np.maximum(n - 1, 0), x))
_poly(sp.eval_hermite, of_x(3, x=F, dtypes=(np.dtype(np.float64),)),
      lambda n, x, y: 2 * n * sp.eval_hermite(np.maximum(n - 1, 0), x))
_poly(sp.eval_gegenbauer, of_x(3, 1.5, x=UNIT), lambda n, a, x, y: 2 * a * sp.eval_gegenbauer(n - 1, a + 1, x), 2)
_poly(sp.eval_genlaguerre, of_x(3, 0.5, x=POS), lambda n, a, x, y: -sp.eval_genlaguerre(n - 1, a + 1, x), 2)
_poly(sp.eval_jacobi, of_x(3, 0.5, 1.5, x=UNIT),
      lambda n, a, b, x, y: (n + a + b + 1) / 2 * sp.eval_jacobi(n - 1, a + 1, b + 1, x), 3)

# Carlson's symmetric elliptic integral R_F (and R_C = R_F(x, y, y)): dR_F/dx = -R_D(y, z, x)/6
CARLSON = (Sample((POS, In(lo=0.2, hi=3.0, domain=(0.0, None)), In(lo=0.2, hi=3.0, domain=(0.0, None)))),)
# elliprd has no derivative in closed form (it stays in MISSING), but elliprf's pullback computes
# with it: a primitive without a rule records it, and its own gradient refuses (ad.rules.rule_of)
ELLIPRD = ufunc_primitive(sp.elliprd, ())
ufunc(sp.elliprf, CARLSON, lambda x, y, z, r: -sp.elliprd(y, z, x) / 6,
      lambda x, y, z, r: -sp.elliprd(z, x, y) / 6, lambda x, y, z, r: -sp.elliprd(x, y, z) / 6)

# distribution functions: derivatives in x (and in a rate) are densities
DF = "scipy.special.{} in its degrees of freedom or shape"
ufunc(sp.chdtr, of_x(3.0), Refused(DF.format("chdtr")), lambda v, x, y: _gamma_density(v / 2, x / 2) / 2)
ufunc(sp.chdtrc, of_x(3.0), Refused(DF.format("chdtrc")), lambda v, x, y: -_gamma_density(v / 2, x / 2) / 2)
ufunc(sp.pdtr, of_x(2.0), Refused(DF.format("pdtr")), lambda k, m, y: -_gamma_density(k + 1, m))
ufunc(sp.pdtrc, of_x(2.0), Refused(DF.format("pdtrc")), lambda k, m, y: _gamma_density(k + 1, m))
for _uf, _sign in ((sp.gdtr, 1), (sp.gdtrc, -1)):       # gammainc(b, a x): a is a rate
    ufunc(_uf, (Sample((In(lo=0.5, hi=2.0, domain=(0.0, None)), literal(2.5), POS)),),
          lambda a, b, x, y, s=_sign: s * x * _gamma_density(b, a * x), Refused(DF.format(_uf.__name__)),
          lambda a, b, x, y, s=_sign: s * a * _gamma_density(b, a * x))


def _t_density(df, t):
    log = math.log if isinstance(df, (int, float)) else np.log
    log_norm = _lgamma((df + 1) / 2) - _lgamma(df / 2) - log(df * math.pi) / 2
    return np.exp(log_norm - (df + 1) / 2 * np.log1p(t * t / df))


ufunc(sp.stdtr, of_x(3.0, x=F), Refused(DF.format("stdtr")), lambda df, t, y: _t_density(df, t))
F64_ONLY = (np.dtype(np.float64),)   # float32 would pick scipy's all-float loop: integer k, n as floats
# nbdtr(k, n, p) = betainc(n, k + 1, p), bdtr(k, n, p) = betainc(n - k, k + 1, 1 - p)
ufunc(sp.nbdtr, of_x(2, 3, x=PROB, dtypes=F64_ONLY), *[Refused(DF.format("nbdtr"))] * 2,
      lambda k, n, p, y: _beta_density(n, k + 1, p))
ufunc(sp.nbdtrc, of_x(2, 3, x=PROB, dtypes=F64_ONLY), *[Refused(DF.format("nbdtrc"))] * 2,
      lambda k, n, p, y: -_beta_density(n, k + 1, p))
ufunc(sp.bdtr, of_x(2, 5, x=PROB, dtypes=F64_ONLY), *[Refused(DF.format("bdtr"))] * 2,
      lambda k, n, p, y: -_beta_density(n - k, k + 1, 1 - p))
ufunc(sp.bdtrc, of_x(2, 5, x=PROB, dtypes=F64_ONLY), *[Refused(DF.format("bdtrc"))] * 2,
      lambda k, n, p, y: _beta_density(n - k, k + 1, 1 - p))

# -- ufuncs without a rule, and why --------------------------------------------------------------
COMPLEX = "complex values (complex differentiation of scipy.special is not covered yet)"
NO_FORM = "its derivative has no closed form in scipy.special functions"
INVERSE = "an inverse in a distribution parameter: its derivative needs the density in that parameter"
PARAM = "a distribution function of its parameters, not covered yet"
MISSING = {
    **dict.fromkeys(("hankel1", "hankel1e", "hankel2", "hankel2e", "kelvin", "modfresnelm", "modfresnelp",
                     "wofz"), COMPLEX),
    **dict.fromkeys(("agm", "besselpoly", "exprel", "kolmogorov", "kolmogi", "smirnov", "smirnovi",
                     "lpmv", "log_wright_bessel", "wright_bessel", "radian", "voigt_profile", "tklmbda",
                     "elliprd", "elliprg", "elliprj", "elliprc", "eval_sh_jacobi", "itairy",
                     "airye", "obl_cv", "pro_cv", "mathieu_a", "mathieu_b", "zetac"), NO_FORM),
    **dict.fromkeys(("mathieu_cem", "mathieu_sem", "mathieu_modcem1", "mathieu_modcem2", "mathieu_modsem1",
                     "mathieu_modsem2", "obl_ang1", "obl_ang1_cv", "obl_rad1", "obl_rad1_cv", "obl_rad2",
                     "obl_rad2_cv", "pro_ang1", "pro_ang1_cv", "pro_rad1", "pro_rad1_cv", "pro_rad2",
                     "pro_rad2_cv"), "Mathieu and spheroidal wave functions: their second derivatives "
                                     "need the characteristic values, not covered yet"),
    **dict.fromkeys(("bdtri", "bdtrik", "bdtrin", "btdtria", "btdtrib", "chdtri", "chdtriv", "chndtridf",
                     "chndtrinc", "chndtrix", "fdtri", "fdtridfd", "gdtria", "gdtrib", "gdtrix", "nbdtri",
                     "nbdtrik", "nbdtrin", "ncfdtri", "ncfdtridfd", "ncfdtridfn", "ncfdtrinc", "nctdtridf",
                     "nctdtrinc", "nctdtrit", "nrdtrimn", "nrdtrisd", "pdtri", "pdtrik", "stdtridf",
                     "stdtrit"), INVERSE),
    **dict.fromkeys(("chndtr", "fdtr", "fdtrc", "ncfdtr", "nctdtr"), PARAM),
}
UNSUPPORTED_UFUNCS.update({getattr(sp, name): reason for name, reason in MISSING.items()})
UNSUPPORTED_UFUNCS[_ufuncs._riemann_zeta] = ("the Riemann zeta function (zeta(x) without q): " + NO_FORM
                                             + "; zeta(x, q) has a gradient in q")
UNSUPPORTED_UFUNCS[_ufuncs._lambertw] = COMPLEX
