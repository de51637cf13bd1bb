"""Two tapes of one program traced at two numbers of examples, anti-unified into one tape
polymorphic in the number ``n`` (``ad.compiler.examples`` holds what the result records).

The tapes unify when they have the same equations (primitives, graph, outputs) whose params,
literals and shapes are equal or differ only as functions of the number of examples, ``B`` at
the first trace and ``B'`` at the second:

    a shape entry or an int    B vs B', B - k vs B' - k, c*B + d    -> n, n - k, c * n + d
    a float (or a float array) c/d(B) vs c/d(B'), c*d(B) vs c*d(B') -> c / d, c * d

where ``d`` is a size: one the tape's ints took (``4 * n - 1``, the ``ddof=1`` of a variance
over ``(n, 4)``) or ``n - k``. A float's form is kept only if it gives both values bit for bit
as the compiled code computes it at run time (so it holds what a trace at ``n`` holds); two
values fit many forms, and the simplest is taken (``_float_form``). Anything else is refused
naming the equation: a structure that depends on the number of examples (a Python loop over
them), a branch or a literal computed from the data, a size that is no such function.
"""
from __future__ import annotations

import numpy as np

from ..tape import Eqn, Lit, Tape, Var, format_literal, freeze_params
from .examples import Examples, ExamplesError, SizeFloat, SizeInt, Sized, describe, evaluate

_ADVICE = ("examples= needs a program whose equations are the same at any number of examples: no "
           "Python loop or branch over the examples, no value of the data turned into a Python "
           "number (compute it with array operations), or differentiate without examples= (one "
           "tape per number of examples)")


class _Differs(Exception):
    """What differs between two equations that cannot be a function of the number of examples."""


def unify(a: Tape, b: Tape, sizes: tuple[int, int], axis: int) -> Tape:
    """``a`` (traced at ``sizes[0]`` examples) made polymorphic in the number of examples by
    ``b`` (the same program at ``sizes[1]``); the examples inputs are those whose ``axis``
    differs. ExamplesError names what cannot be a function of the number of examples."""
    u = _Unifier(sizes)
    if getattr(a, "fallbacks", ()) or a.captures:
        raise ExamplesError("examples= compiles the gradient, and this one holds rules run as closures "
                            f"or values of an enclosing trace: {getattr(a, 'fallbacks', ())}")
    inputs = []
    for k, (x, y) in enumerate(zip(a.inputs, b.inputs)):
        u.var(x, y, f"input {a.input_names[k]}")
        if x.aval.shape != y.aval.shape:
            if [j for j, s in enumerate(u.shapes[x]) if isinstance(s, SizeInt)] != [axis] \
                    or u.shapes[x][axis].source != "n":
                raise ExamplesError(f"input {a.input_names[k]} of shape {x.aval.shape} holds examples "
                                    f"along axis {axis} only if its size there is the number of examples")
            inputs.append((k, axis))
    if not inputs:
        raise ExamplesError("no input holds examples: examples= names the arguments whose axis "
                            f"{axis} runs over the examples")
    counts = f"{len(a.eqns)} equations at {sizes[0]} examples and {len(b.eqns)} at {sizes[1]}"
    eqns = []
    for i, (e, f) in enumerate(zip(a.eqns, b.eqns)):
        try:
            eqns.append(u.eqn(e, f))
        except _Differs as why:
            more = f" (the program records {counts})" if len(a.eqns) != len(b.eqns) else ""
            raise ExamplesError(f"{describe(e, i)} differs between the traces at {sizes[0]} and "
                                f"{sizes[1]} examples: {why}{more}; {_ADVICE}") from None
    if len(a.eqns) != len(b.eqns):
        raise ExamplesError(f"the program records {counts}, the same ones up to the shorter's end; {_ADVICE}")
    for name in ("n_forward", "n_values", "n_seeds", "wrt", "grad_slots", "grad_tree", "in_tree", "out_tree"):
        if getattr(a, name, None) != getattr(b, name, None):
            raise ExamplesError(f"the gradient tapes traced at {sizes[0]} and {sizes[1]} examples differ in "
                                f"{name}; {_ADVICE}")
    for k, (x, y) in enumerate(zip(a.outputs, b.outputs)):
        if type(x) is Var and u.env.get(y) is x or type(x) is Lit and type(y) is Lit and _same(x.value, y.value):
            continue
        raise ExamplesError(f"output {k} ({x!r}) differs between the traces at {sizes[0]} and {sizes[1]} "
                            f"examples ({y!r}); {_ADVICE}")
    eqns = tuple(eqns)
    examples = Examples(sizes[0], tuple(inputs), u.shapes, u.literals, eqns)
    return a.replace(eqns=eqns, meta={**a.meta, "examples": examples})


class _Unifier:
    def __init__(self, sizes: tuple[int, int]):
        self.sizes = sizes
        self.env: dict[Var, Var] = {}          # b's variable -> a's
        self.shapes: dict[Var, tuple] = {}     # a's variable -> its symbolic shape
        self.literals: dict[Lit, Sized] = {}
        self.known: dict[str, None] = {}       # the int sizes found so far (sources), in order

    def int_source(self, x, y) -> str | None:
        source = _int_source(x, y, self.sizes)
        if source is not None:
            self.known[source] = None
        return source

    def var(self, x: Var, y: Var, what: str) -> None:
        """``y`` of the second trace stands for ``x``; their shapes unified."""
        if x.aval.dtype != y.aval.dtype or len(x.aval.shape) != len(y.aval.shape):
            raise _Differs(f"{what} is {x.aval} in one trace and {y.aval} in the other")
        if x.aval.shape != y.aval.shape:
            shape = []
            for s, t in zip(x.aval.shape, y.aval.shape):
                source = s if s == t else self.int_source(s, t)
                if source is None:
                    raise _Differs(f"{what} has shape {x.aval.shape} in one trace and {y.aval.shape} in "
                                   f"the other: {s} vs {t} is no function of the number of examples")
                shape.append(s if s == t else SizeInt(s, source))
            self.shapes[x] = tuple(shape)
        self.env[y] = x

    def eqn(self, e: Eqn, f: Eqn) -> Eqn:
        if e.prim is not f.prim:
            raise _Differs(f"its primitive is {f.prim.name} in the other trace")
        if len(e.inputs) != len(f.inputs) or len(e.outputs) != len(f.outputs):
            raise _Differs("it has another number of operands or results in the other trace")
        inputs, changed = [], False
        for k, (x, y) in enumerate(zip(e.inputs, f.inputs)):
            if type(x) is Var:
                if type(y) is not Var or self.env.get(y) is not x:
                    raise _Differs(f"operand {k} is {x!r} in one trace and {y!r} in the other")
                inputs.append(x)
            elif type(y) is not Lit:
                raise _Differs(f"operand {k} is a literal in one trace and a variable in the other")
            elif _same(x.value, y.value):
                inputs.append(x)
            elif e.prim.kind == "guard":
                raise _Differs(f"a branch or value of the data: the trace assumed {x!r} at {self.sizes[0]} "
                               f"examples and {y!r} at {self.sizes[1]}")
            else:
                lit = Lit(x.value, x.aval)      # its own: a template's literal may be shared
                self.literals[lit] = self.literal(x.value, y.value, f"operand {k}")
                inputs.append(lit)
                changed = True
        params = e.params
        if params != f.params:          # then some value of it follows the number of examples
            if [k for k, _ in params] != [k for k, _ in f.params]:
                raise _Differs("its params are named differently in the other trace")
            params = freeze_params({k: self.param(v, w, k) for (k, v), (_, w) in zip(e.params, f.params)})
            changed = True
        for k, (x, y) in enumerate(zip(e.outputs, f.outputs)):
            self.var(x, y, f"result {k}")
        if not changed:
            return e
        return Eqn(e.prim, tuple(inputs), params, e.outputs, e.source, e.origin, e.scope)

    def param(self, v, w, name: str):
        """A param's value, with ``SizeInt``/``SizeFloat`` where it follows the number of examples."""
        if type(v) is not type(w):
            raise _Differs(f"param {name} is {v!r} in one trace and {w!r} in the other")
        if isinstance(v, tuple) and len(v) == len(w):
            return tuple(self.param(x, y, name) for x, y in zip(v, w))
        if isinstance(v, slice):
            return slice(*(self.param(x, y, name) for x, y in
                           zip((v.start, v.stop, v.step), (w.start, w.stop, w.step))))
        if _same(v, w):
            return v
        if type(v) is int:
            source = self.int_source(v, w)
            if source is not None:
                return SizeInt(v, source)
        elif type(v) is float:
            form = _float_form(v, w, self.sizes, self.known)
            if form is not None:
                return SizeFloat(v, str(form))
        raise _Differs(f"param {name} is {v!r} in one trace and {w!r} in the other, no function of the "
                       "number of examples")

    def literal(self, x, y, what: str) -> Sized:
        if type(x) is type(y) and np.shape(x) == np.shape(y) and np.result_type(x) == np.result_type(y):
            kind = np.result_type(x).kind
            if kind in "iu" and np.ndim(x) == 0:
                source = self.int_source(x, y)
                if source is not None:
                    return Sized(source, integer=None if type(x) is int else np.result_type(x).name)
            elif kind == "f":
                form = _float_form(x, y, self.sizes, self.known)
                if form is not None:
                    return form
        if np.shape(x) != np.shape(y):
            raise _Differs(f"{what} is a constant {format_literal(x)} of one trace and {format_literal(y)} of the "
                           "other: an array made in Python to the number of examples (np.zeros((len(X), 4)), "
                           "np.arange(len(X))) is a constant of the trace; make it traced (np.zeros((len(X), "
                           "4), like=X), np.zeros_like), or pass it as an examples argument")
        raise _Differs(f"{what} is {format_literal(x)} in one trace and {format_literal(y)} in the other, no "
                       "function of the number of examples (a value computed from the data?)")


def _int_source(x, y, sizes) -> str | None:
    """``x`` at ``sizes[0]`` examples and ``y`` at ``sizes[1]`` as ``c * n + d`` (``n``,
    ``n - 1``, ``4 * n - 1``, ``2 * n``), c and d ints; None if not an int."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        return None
    (m, m2), x, y = sizes, int(x), int(y)
    c, rest = divmod(x - y, m - m2)
    if rest or not c:
        return None
    d = x - c * m
    term = "n" if c == 1 else f"{c} * n"
    return term if not d else f"{term} + {d}" if d > 0 else f"{term} - {-d}"


def _float_form(x, y, sizes, known=()) -> Sized | None:
    """A float (scalar or array) ``x`` at ``sizes[0]`` examples and ``y`` at ``sizes[1]`` as
    ``c / d`` or ``c * d``, ``c`` of ``x``'s type and ``d`` a size: one of the ``known`` sizes of
    the tape (``4 * n - 1``), or ``n - k`` with ``k`` solved from the first element that differs
    (``d`` positive at both sizes). ``c`` is rounded where it is a short decimal, and a form
    kept only if it gives both values bit for bit. Two values fit many forms (64.0 and 63.0 are
    ``1.0 * n``, and also ``-4032.0 / (n - 127)``): the simplest is taken, a short ``c`` first,
    then a size of the tape, then the smallest ``k``."""
    m, m2 = sizes
    xs, ys = np.asarray(x, np.float64), np.asarray(y, np.float64)
    differ = np.flatnonzero(xs != ys)
    if not differ.size:
        return None
    p, q = xs.flat[differ[0]], ys.flat[differ[0]]
    sizes_tried = {source: (1, 0) for source in known}
    for offset in ((p * m - q * m2) / (p - q), (p * m2 - q * m) / (p - q)):    # for c / d, c * d
        if np.isfinite(offset) and abs(offset - round(offset)) <= 1e-6 * max(1.0, abs(offset)):
            k = int(round(offset))
            sizes_tried.setdefault("n" if k == 0 else f"n - {k}" if k > 0 else f"n + {-k}", (2, abs(k)))
    found = []
    for size, rank in sizes_tried.items():
        d, d2 = evaluate(size, m), evaluate(size, m2)
        if d < 1 or d2 < 1:
            continue
        for op, c in (("/", xs * d), ("*", xs / d)):
            rounded = np.round(c, 6)
            nice = np.isclose(c, rounded, rtol=1e-9, atol=0)
            c = np.where(nice, rounded, c)
            c = c.astype(x.dtype) if isinstance(x, np.ndarray) else type(x)(c)
            form = Sized(f"c {op} {size if size == 'n' else f'({size})'}", c)
            if _same(form.at(m), x) and _same(form.at(m2), y):
                found.append(((not np.all(nice),) + rank, form))
    return min(found, key=lambda f: f[0])[1] if found else None


def _same(x, y) -> bool:
    """The same value, type and bits (nan equal to nan)."""
    if type(x) is not type(y):
        return False
    if isinstance(x, np.ndarray):
        return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
    try:
        return bool(x == y) or (x != x and y != y)
    except (TypeError, ValueError):
        return x is y
