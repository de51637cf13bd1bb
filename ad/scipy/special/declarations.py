"""How ad.scipy.special declares a scipy.special ufunc: its primitive (the ufunc itself, in the
dispatch table), its sample inputs (ad.samples), and its rule from one partial derivative per
operand, or ``Refused`` for an operand whose derivative has no closed form (its gradient raises:
a zero would be silently wrong). ``sp`` is scipy.special with its ufuncs themselves, which the
rules and the compositions call.
"""
from __future__ import annotations

import numpy as np
import scipy.special as scipy_special
from scipy.special import _ufuncs

from ...dispatch import UFUNCS
from ...errors import NonDifferentiableError
from ...primitives import Primitive
from ...rules import non_differentiable, rrule
from ...samples import BINARY, F, In, Sample, literal
from ...tangents import NoTangent, Thunk


class _Ufuncs:
    """scipy.special, with its ufuncs themselves: under ``SCIPY_ARRAY_API=1`` scipy wraps many of
    them in Python functions that convert their arguments to numpy (no tracer gets through)."""

    def __getattr__(self, name: str):
        f = getattr(_ufuncs, name, None)
        return f if isinstance(f, np.ufunc) else getattr(scipy_special, name)


sp = _Ufuncs()

# -- sample inputs (ad.samples) ---------------------------------------------------------------
POS = In(lo=0.2, hi=3.0, domain=(0.0, None))
POS_Y = In("y", lo=0.2, hi=3.0, domain=(0.0, None))
PROB = In(lo=0.1, hi=0.9, domain=(0.0, 1.0))
UNIT = In(lo=-0.9, hi=0.9, domain=(-1.0, 1.0))


def unary(inp=F, **kw) -> tuple:
    """Samples of a one-operand ufunc."""
    return (Sample((inp,), **kw),)


def binary(a, b, **kw) -> tuple:
    """Samples of a two-operand ufunc, also with broadcast operands."""
    return (Sample((a, b), shapes=BINARY, **kw),)


def of_x(*params, x=POS, **kw) -> tuple:
    """Samples of ``f(*params, x)`` with constant leading parameters."""
    return (Sample((*map(literal, params), x), **kw),)


# -- declarations -----------------------------------------------------------------------------

class Refused:
    """The partial of an operand whose derivative scipy has no function for (``what`` names
    it). Asking for its gradient raises; a constant there (a Python number, an integer) has
    none to ask for. Its thunk is forced only when the operand is differentiated."""

    def __init__(self, what: str):
        self.what = what

    def cotangent(self, operand):
        dtype = getattr(operand, "dtype", None)
        if dtype is None or not np.issubdtype(dtype, np.inexact):
            return NoTangent()
        return Thunk(self.refuse)

    def refuse(self):
        raise NonDifferentiableError(
            f"the derivative of {self.what} has no closed form in scipy.special, so ad has no "
            "rule for it (a zero would be a silently wrong gradient). Keep that operand "
            "constant: differentiate with respect to the others only.")


def ufunc_primitive(uf, samples, kink=None, name=None) -> Primitive:
    """The primitive ``scipy.special.<name>`` of a scipy ufunc, in the dispatch table (its rule
    is declared apart: a primitive without one is still recorded inside other rules)."""
    prim = Primitive(f"scipy.special.{name or uf.__name__}", uf, function=uf, elementwise=True,
                     multiple_results=uf.nout > 1, samples=samples, kink=kink)
    UFUNCS[uf] = prim
    return prim


def elementwise_rule(prim, *partials):
    """A rule from one partial derivative per operand, ``lambda *xs, y: ...`` (as for
    ``ad.scalar_rule``), or ``Refused(...)``."""
    def rule(*xs):
        y = prim.bind(*xs)

        def pullback(dy):
            return tuple(d.cotangent(x) if isinstance(d, Refused) else Thunk(lambda d=d: dy * d(*xs, y))
                         for d, x in zip(partials, xs))
        return y, pullback
    rule.__qualname__ = rule.__name__ = f"{prim.name}_rule"
    rrule(prim)(rule)


def ufunc(uf, samples, *partials, kink=None, name=None) -> Primitive:
    """A scipy ufunc with one output and its rule (``elementwise_rule``)."""
    prim = ufunc_primitive(uf, samples, kink, name)
    elementwise_rule(prim, *partials)
    return prim


def ufunc_outputs(uf, samples, derivatives, params: str = "", x: int = -1) -> Primitive:
    """A scipy ufunc with several outputs of one variable, its operand ``x`` (the last by
    default): ``derivatives(*xs, *ys)`` gives each output's derivative in it; the other
    operands (named in ``params``) are refused."""
    prim = ufunc_primitive(uf, samples)
    x = x % uf.nin
    refuse = Refused(f"scipy.special.{uf.__name__} in {params}")

    def rule(*xs):
        ys = prim.bind(*xs)

        def pullback(dys):
            dx = Thunk(lambda: sum(dy * d for dy, d in zip(dys, derivatives(*xs, *ys))))
            return tuple(dx if i == x else refuse.cotangent(xs[i]) for i in range(uf.nin))
        return ys, pullback
    rule.__qualname__ = rule.__name__ = f"{prim.name}_rule"
    rrule(prim)(rule)
    return prim


def not_differentiable(uf, samples, kink) -> Primitive:
    """A piecewise-constant scipy ufunc (no gradient); ``kink`` gives the distance to its jumps."""
    prim = ufunc_primitive(uf, samples, kink)
    non_differentiable(prim)
    return prim
