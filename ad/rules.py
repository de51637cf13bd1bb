"""Writing rules: the ``@rrule`` decorator and helpers for the common kinds.

A rule takes the primal operands (and static keyword parameters) and returns ``(y, pullback)``;
``pullback(dy)`` returns one cotangent per operand (``NoTangent()`` for those that have none).
Rules are written with numpy calls on their arguments, so running them on tracers *lifts* them.
Broadcasting is undone in one place, ``ad.core_prims.project``, applied by the driver to every
cotangent a pullback returns; rules never unbroadcast themselves.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Callable

import numpy as np

from .errors import UnsupportedFunctionError
from .primitives import Primitive, lookup, unique_name
from .tangents import NoTangent, Thunk, ZeroTangent, unthunk


def rrule(f):
    """Register the rule of a primitive: ``@ad.rrule(np.matmul)`` or ``@ad.rrule(my_primitive)``.

    >>> @ad.primitive
    ... def cube(x):
    ...     return x * x * x
    >>> @ad.rrule(cube)
    ... def cube_rule(x):
    ...     return cube(x), lambda dy: (3 * x * x * dy,)
    """
    prim = lookup(f)

    def register(rule):
        prim.rule = rule
        return rule
    return register


@contextlib.contextmanager
def using_rule(f, rule):
    """Temporarily register ``rule`` for ``f`` (checking a candidate rule, a gallery of wrong
    rules); the previous rule is restored on exit."""
    prim = lookup(f)
    old = prim.rule
    prim.rule = rule
    try:
        yield prim
    finally:
        prim.rule = old


def primitive(f=None, *, name: str | None = None, multiple_results: bool = False,
              complex_rule: bool = False, linear_in=(), multilinear_in=()):
    """Mark a function as primitive: its calls record as one equation (give it a rule with
    ``@ad.rrule``). Positional arguments are operands; keyword arguments are static params.
    Without ``name``, the function's qualified name, made unique (``<lambda>_2``): names
    identify primitives in saved tapes. ``complex_rule=True`` declares that its rule is written
    for complex operands (docs/complex.md); without it a gradient with complex values refuses.
    ``linear_in``/``multilinear_in`` declare the operands it is linear in (``ad.Primitive``):
    then ``ad.transpose`` and forward mode transpose it through its rule."""
    if f is None:
        return functools.partial(primitive, name=name, multiple_results=multiple_results,
                                 complex_rule=complex_rule, linear_in=linear_in,
                                 multilinear_in=multilinear_in)
    prim = Primitive(name or unique_name(f.__qualname__), f, multiple_results=multiple_results,
                     function=f, complex_rule=complex_rule, linear_in=linear_in,
                     multilinear_in=multilinear_in)

    @functools.wraps(f)
    def wrapper(*operands, **params):
        return prim.bind(*operands, **params)
    wrapper.primitive = prim
    return wrapper


def _partial_ct(dy, d, xs, y):
    """The cotangent ``dy * d(xs, y)``; ``1``/``-1`` stand for the identity and its negation."""
    if isinstance(d, int):
        return dy if d == 1 else -dy
    return Thunk(lambda: dy * d(*xs, y))


def scalar_rule(f, *partials):
    """An elementwise rule from partial derivatives (ChainRules' ``@scalar_rule``).

    Each partial is ``lambda *xs, y: ...`` (``y`` is the primal output, so ``tanh`` can reuse it),
    ``1`` or ``-1`` for the identity and its negation, or ``None`` for "no gradient".
    ``ad.scalar_rule(np.sin, lambda x, y: np.cos(x))``.
    """
    prim = lookup(f)

    def rule(*xs, **params):
        y = prim.bind(*xs, **params)

        def pullback(dy):
            return tuple(NoTangent() if d is None else _partial_ct(dy, d, xs, y) for d in partials)
        return y, pullback
    rule.__qualname__ = rule.__name__ = f"{prim.name}_rule"
    prim.rule = rule
    return rule


def linear_rule(f, transpose):
    """A rule for an operation linear in its first operand: ``transpose(dy, *xs, **params)``
    returns that operand's cotangent; other operands get ``NoTangent``."""
    prim = lookup(f)

    def rule(*xs, **params):
        y = prim.bind(*xs, **params)

        def pullback(dy):
            return (transpose(dy, *xs, **params),) + (NoTangent(),) * (len(xs) - 1)
        return y, pullback
    rule.__qualname__ = rule.__name__ = f"{prim.name}_rule"
    prim.rule = rule
    return rule


def batch_rule(f):
    """Register the batching rule of a primitive (``ad.vmap``), beside its rrule.

    ``rule(args, dims, **params)``: ``dims[i]`` is the batch axis of operand ``i``, or None for an
    operand shared by the whole batch (at least one is batched); it returns ``(out, out_dim)``
    (a tuple of dims for multiple results), or NotImplemented where it does not apply, and the
    loop over the batch (``ad.batching.fallback``) runs the equation instead. Like a pullback,
    it is numpy code: run on tracers, it records the batched program.

    >>> cube = ad.primitive(lambda x: x * x * x)
    >>> @ad.batch_rule(cube)
    ... def cube_batched(args, dims):
    ...     return cube(args[0]), dims[0]       # elementwise: any batch axis stays where it is
    """
    prim = lookup(f)

    def register(rule):
        prim.batch = rule
        return rule
    return register


def to_front(x, dim):
    """``x`` with its batch axis ``dim`` moved first (a shared operand, None, as it is): what most
    batching rules do first."""
    return x if dim is None or dim == 0 else np.moveaxis(x, dim, 0)


def non_differentiable(*fs):
    """Declare functions whose outputs carry no gradient (comparisons, sign, argmax...)."""
    for f in fs:
        prim = lookup(f)

        def rule(*xs, _prim=prim, **params):
            y = _prim.bind(*xs, **params)
            return y, lambda dy: (NoTangent(),) * len(xs)
        rule.__qualname__ = rule.__name__ = f"{prim.name}_rule"
        prim.rule = rule
        prim.differentiable = False


def rule_of(e):
    """The rule that differentiates equation ``e``; refuses loudly what has no checked rule: a
    primitive without one, or complex values through a rule not written for them (a real rule
    applied to complex numbers gives a silently wrong gradient)."""
    prim = e.prim
    if prim.rule is None:
        raise NotImplementedError(
            f"{prim.name} has no rule, so its gradient is unknown (at {e.source}). Register one "
            f"with @ad.rrule({prim.name}) returning (y, pullback).")
    if not prim.complex_rule and any(v.aval.is_complex for v in (*e.inputs, *e.outputs)):
        raise UnsupportedFunctionError(
            f"the gradient of {prim.name} with complex values: its rule is written for real "
            "numbers and would give a wrong gradient. Complex differentiation is not supported "
            "yet; differentiate real and imaginary parts as separate real arrays.", location=e.source)
    return prim.rule


# -- backpropagate: the overload point of a rule's pullback -------------------------------------

OVERLOAD_KINDS = ("dense", "zero")


def backpropagate(prim, kind: str = "dense"):
    """Overload the pullback of ``prim`` for cotangents of ``kind`` (the proposal of
    ChainRulesCore #53: a dispatch point between a rule and its use).

    The overload takes the operands and params like a rule and returns a pullback, which every
    form then uses instead of the rule's: the closure form calls it, the lifted forms trace it
    (so it must be numpy code with rules; they refuse one that is not), forward mode transposes
    it (an ``@ad.frule`` belongs to the rule it replaces). Kinds: "dense" (every output has a
    cotangent) and "zero" (some output of a multi-output primitive has none, so it gets zeros;
    in forward mode, some output reaches no output of the program). Tapes cached before an
    overload changes are traced again. ``backpropagate.remove(prim, kind)`` removes one and
    returns it; ``with backpropagate.using(prim, overload, kind):`` registers one for a block.

    >>> relu = ad.primitive(lambda x: np.maximum(x, 0.0))
    >>> _ = ad.rrule(relu)(lambda x: (relu(x), lambda dy: (np.where(x > 0, dy, 0.0),)))
    >>> @ad.backpropagate(relu, "dense")
    ... def relu_subgradient_one_at_zero(x):
    ...     return lambda dy: (np.where(x >= 0, dy, 0.0),)
    >>> g = ad.grad(lambda x: np.sum(relu(x)))
    >>> g(np.array([-1.0, 0.0, 2.0]))
    array([0., 1., 1.])
    >>> _ = ad.backpropagate.remove(relu, "dense")
    >>> g(np.array([-1.0, 0.0, 2.0]))
    array([0., 0., 1.])
    """
    p = lookup(prim)
    _check_kind(kind)

    def register(fn):
        p.overloads[kind] = fn
        return fn
    return register


def _remove(prim, kind: str = "dense"):
    """Remove the overload of ``prim``'s pullback for ``kind`` and return it: the rule's pullback
    is used again."""
    p = lookup(prim)
    if kind not in p.overloads:
        raise KeyError(f"{p.name} has no {kind!r} overload of its pullback")
    return p.overloads.pop(kind)


@contextlib.contextmanager
def _using(prim, overload, kind: str = "dense"):
    """Overload ``prim``'s pullback for ``kind`` within a block (comparing subgradients, a
    test); the overload it replaced, if any, is restored on exit."""
    p = lookup(prim)
    _check_kind(kind)
    old = p.overloads.get(kind)
    p.overloads[kind] = overload
    try:
        yield p
    finally:
        p.overloads.pop(kind, None)
        if old is not None:
            p.overloads[kind] = old


backpropagate.remove = _remove
backpropagate.using = _using


def _check_kind(kind: str) -> None:
    if kind not in OVERLOAD_KINDS:
        raise ValueError(f"backpropagate kind {kind!r}; choose one of {OVERLOAD_KINDS}")


def overload_rule(prim: Primitive, overload: Callable) -> Callable:
    """An overload as a rule (the primitive's value, the overload's pullback), one object per
    pair: templates are cached by rule."""
    rule = _OVERLOAD_RULES.get((prim, overload))
    if rule is None:
        def rule(*xs, **params):
            return prim.bind(*xs, **params), overload(*xs, **params)
        rule.__qualname__ = rule.__name__ = getattr(overload, "__qualname__", repr(overload))
        _OVERLOAD_RULES[(prim, overload)] = rule
    return rule


_OVERLOAD_RULES: dict = {}
