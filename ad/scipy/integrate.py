"""scipy.integrate.odeint for ad, with scipy's signature; its rule is the adjoint method.

scipy's odeint hands the state to Fortran (LSODA), so a traced value cannot pass through it.
Here ``odeint`` is a primitive whose impl is scipy's odeint; its pullback is a second
primitive, ``odeint_adjoint``, one equation of the backward tape whose operands are the
residuals (the solution ``ys``, the times, the cotangent, the parameters ``args``). It solves
the adjoint system backwards from the last time to the first with scipy's odeint, at the
forward solve's tolerances:

    y' = f(y, t, θ),   a' = -a ∂f/∂y,   q' = -a ∂f/∂θ,

restarting at each output time t_i with ``a += g_i``. At t_0, ``a`` is the gradient of y0 and
``q`` that of θ; the gradient of a time t_i (i > 0) is ``g_i · f(y_i, t_i)``, of t_0
``-(a - g_0) · f(y_0, t_0)``. The vector-Jacobian products ``a ∂f/∂y``, ``a ∂f/∂θ`` come from
``ad.grad`` of the user's ``func``: this module sits in the transformations layer
(docs/architecture.md). Its gradients are as accurate as the solves (rtol, atol).

Parameters a gradient should reach go through ``args`` (as in autograd): ``func`` is called by
scipy with plain arrays, so a traced value it closed over would be refused. Second derivatives
(the adjoint of the adjoint) are refused loudly.
"""
from __future__ import annotations

import inspect

import numpy as np
import scipy.integrate as sint

from .. import pytree
from ..transforms.gradients import grad
from ..errors import ConcretizationError, NonDifferentiableError, UnsupportedFunctionError
from ..primitives import Primitive
from ..rules import rrule
from ..samples import F64, MATRIX, In, Sample, literal
from ..tangents import NoTangent
from ..trace_state import Traced

# the options of scipy's odeint that the adjoint solve shares with the forward one
SOLVER = ("rtol", "atol", "h0", "hmax", "hmin", "mxstep", "mxordn", "mxords")


def _call(func, tree, options):
    """func as ``f(y, t, *leaves)``: the args rebuilt from their leaves (a neural ODE passes
    lists of (W, b) tuples), the first two swapped for scipy's ``tfirst``."""
    if dict(options).get("tfirst"):
        return lambda y, t, *leaves: func(t, y, *pytree.unflatten(tree, leaves))
    return lambda y, t, *leaves: func(y, t, *pytree.unflatten(tree, leaves))


def _solve(func, y0, t, args, **options):
    """scipy's odeint; a func that closed over a traced value is refused, saying why."""
    try:
        return sint.odeint(func, y0, t, args=args, **options)
    except ConcretizationError as exc:
        raise ConcretizationError(
            "the function given to odeint returned a traced value: it closed over a value being "
            "differentiated, which scipy cannot integrate. Pass the values a gradient should reach "
            "through odeint(func, y0, t, args=(...)): func(y, t, *args) receives them", exc.location) from None


def _odeint(y0, t, *leaves, func, tree, options):
    return _solve(_call(func, tree, options), y0, t, leaves, **{k: v for k, v in options if k != "tfirst"})


def _floats(args) -> list[int]:
    return [i for i, a in enumerate(args) if np.issubdtype(np.result_type(a), np.inexact)]


def _odeint_adjoint(ys, t, g, *args, func, tree, options):
    """(dy0, dt, *dargs of the float args): the adjoint system solved backwards, interval by
    interval between the output times."""
    f = _call(func, tree, options)
    floats = _floats(args)
    args = [np.asarray(a, dtype=np.float64) if i in floats else a for i, a in enumerate(args)]
    sizes = [args[i].size for i in floats]
    n = ys.shape[1]
    # a ∂f/∂y and a ∂f/∂θ: the gradient of <a, f(y, s, θ)> (one tape, cached by ad.grad)
    vjp = grad(lambda y, s, a, *theta: np.sum(a * f(y, s, *theta)), argnums=(0, *[3 + i for i in floats]))

    def adjoint(state, s):
        y, a = state[:n], state[n:2 * n]
        parts = vjp(y, s, a, *args)
        dtheta = [np.ravel(p) for p in parts[1:]]
        return np.concatenate([np.asarray(f(y, s, *args), dtype=np.float64).ravel(), -parts[0], *[-d for d in dtheta]])

    solver = {k: v for k, v in options if k in SOLVER}
    a, q = g[-1].astype(np.float64), np.zeros(sum(sizes))
    dt = np.zeros(len(t))
    for i in range(len(t) - 1, 0, -1):
        dt[i] = g[i] @ np.ravel(f(ys[i], t[i], *args))    # moving t_i moves y_i along f
        state = sint.odeint(adjoint, np.concatenate([ys[i], a, q]), np.array([t[i], t[i - 1]]), **solver)[-1]
        a, q = state[n:2 * n] + g[i - 1], state[2 * n:]
    dt[0] = -(a - g[0]) @ np.ravel(f(ys[0], t[0], *args))
    dargs = np.split(q, np.cumsum(sizes)[:-1]) if sizes else []
    return (a.astype(ys.dtype), dt.astype(np.result_type(t, 1.0)),
            *[d.reshape(np.shape(args[i])) for d, i in zip(dargs, floats)])


def decay(y, t, k):
    """A sample system: a damped oscillator with rates k (the samples' func)."""
    return np.stack([y[1] * k[0] - 0.1 * y[0], -y[0] * k[1] - 0.2 * y[1] * np.sin(t)])


TIGHT = (("atol", 3e-14), ("rtol", 3e-14))     # near LSODA's floor: the checks hold the pullback linear to rounding
odeint_p = Primitive(
    "scipy.integrate.odeint", _odeint, params=("func", "tree", "options"),
    doc="The solution of y' = func(y, t, *args) at the times t, from y0 (LSODA).",
    samples=(Sample((In((2,), 0.5, 1.5), literal(np.linspace(0.0, 1.5, 4)), In((2,), 0.5, 1.5)),
                    {"func": decay, "tree": pytree.flatten((0.0,))[1], "options": TIGHT}, MATRIX, dtypes=(F64,)),))
odeint_adjoint_p = Primitive(
    "scipy.integrate.odeint_adjoint", _odeint_adjoint, params=("func", "tree", "options"), multiple_results=True,
    doc="The pullback of odeint: the adjoint system solved backwards (gradients of y0, t, the float args).")


@rrule(odeint_p)
def _odeint_rule(y0, t, *args, func, tree, options):
    ys = odeint_p.bind(y0, t, *args, func=func, tree=tree, options=options)
    floats = _floats(args)

    def pullback(g):
        dy0, dt, *dargs = odeint_adjoint_p.bind(ys, t, g, *args, func=func, tree=tree, options=options)
        it = iter(dargs)
        return (dy0, dt, *[next(it) if i in floats else NoTangent() for i in range(len(args))])
    return ys, pullback


@rrule(odeint_adjoint_p)
def _odeint_adjoint_rule(*operands, func, tree, options):
    raise NonDifferentiableError(
        "second derivatives through scipy.integrate.odeint (the adjoint of its adjoint solve) are "
        "not supported")


def odeint(func, y0, t, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None, mu=None, rtol=None,
           atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0, mxstep=0, mxhnil=0, mxordn=12,
           mxords=5, printmessg=0, tfirst=False):
    """``scipy.integrate.odeint``: y at the times t of ``dy/dt = func(y, t, *args)``,
    differentiable in y0, t and the float leaves of ``args`` (arrays, or nested lists, tuples
    and dicts of them: a neural ODE's layers), by the adjoint method."""
    if not isinstance(args, tuple):
        args = (args,)
    given = dict(Dfun=Dfun, col_deriv=col_deriv, ml=ml, mu=mu, rtol=rtol, atol=atol, h0=h0, hmax=hmax,
                 hmin=hmin, ixpr=ixpr, mxstep=mxstep, mxhnil=mxhnil, mxordn=mxordn, mxords=mxords,
                 printmessg=printmessg, tfirst=tfirst)
    traced = any(isinstance(x, Traced) for x in (y0, t, *pytree.flatten(args)[0]))
    if not traced:
        return _solve(func, y0, t, args, full_output=full_output, tcrit=tcrit, **given)
    if full_output:
        raise UnsupportedFunctionError("ad.scipy.integrate.odeint(..., full_output=True) of traced values: "
                                       "its info dictionary has no gradient; call it without full_output")
    if np.ndim(y0) > 1:
        raise ValueError("Initial condition y0 must be one-dimensional.")
    options = {k: v for k, v in given.items() if v is not DEFAULTS[k]}     # a short tape
    if tcrit is not None:
        options["tcrit"] = tuple(np.ravel(tcrit))      # hashable: params key the lifted templates
    leaves, tree = pytree.flatten(args)
    return odeint_p.bind(np.reshape(y0, (-1,)), t, *leaves, func=func, tree=tree,
                         options=tuple(sorted(options.items())))


DEFAULTS = {k: p.default for k, p in inspect.signature(odeint).parameters.items()}


def tolerance(options) -> float:
    """The relative accuracy to expect of odeint's gradients: what the solves reach (their
    rtol and atol, scipy's default 1.49e-8), amplified by a differentiation of them (finite
    differences divide their error by a step of about 1e-4): the checker's and the tests'
    tolerance for this primitive."""
    given = dict(options)
    solver = max(given.get("rtol") or 1.49012e-8, given.get("atol") or 1.49012e-8)
    return max(1e-6, 1e4 * solver)


PRIMITIVES = (odeint_p, odeint_adjoint_p)
