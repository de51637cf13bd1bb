"""Tracing plain numpy code: tracer objects and the recorder that writes equations.

A ``Tracer`` stands for an array while a function runs. numpy hands it every ufunc call
(``__array_ufunc__``) and every public function (``__array_function__``); both end in
``Primitive.bind``, which asks the tracer's ``Recorder`` to compute the value eagerly and append
one equation. Everything that would turn a tracer into a concrete value (``float()``, ``bool()``,
``np.asarray``) raises, naming the user's line: a silent constant is a silent wrong gradient.

In-place code is functionalized: ``t[i] = v``, ``t += v`` and ``out=t`` record a pure equation
and rebind ``t`` to its result. A value that numpy would have made a view of ``t`` and that is
read after ``t`` was mutated raises instead of silently keeping the old value.
"""
from __future__ import annotations

import itertools

import numpy as np

from . import dispatch
from .errors import ConcretizationError, MutationError, TraceError, user_location
from .tape import Aval, Eqn, Lit, Origin, Var, freeze_params
from .trace_state import ACTIVE, Traced

class Recorder:
    """Collects equations for one trace; computes every value eagerly so shapes are known.

    ``source`` and ``origin`` stamp the equations recorded next; by default the source is the
    user's line found on the stack.
    """

    def __init__(self, counter=None):
        self.eqns: list[Eqn] = []
        self.counter = counter if counter is not None else itertools.count()
        self.level = len(ACTIVE)
        self.active = False
        self.source: str | None = None
        self.origin = Origin("primal")
        self._consts: dict[int, tuple[object, Lit]] = {}

    def __enter__(self):
        self.level = len(ACTIVE)
        self.active = True
        ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        ACTIVE.remove(self)
        self.active = False

    def new_var(self, aval: Aval) -> Var:
        return Var(next(self.counter), aval)

    def new_tracer(self, value, var: Var | None = None) -> "Tracer":
        value = _as_value(value)
        return Tracer(self, var if var is not None else self.new_var(Aval.of(value)), value)

    def literal(self, x) -> Lit:
        """Constants become literals; arrays are snapshotted once per trace (later mutation of
        the user's array cannot change the tape)."""
        if isinstance(x, np.ndarray):
            hit = self._consts.get(id(x))
            if hit is None:
                frozen = np.array(x, copy=True)
                frozen.flags.writeable = False
                hit = self._consts[id(x)] = (x, Lit(frozen, Aval.of(frozen)))
            return hit[1]
        return Lit.of(x)

    def operand(self, x):
        """(equation input, concrete value) of one operand."""
        if isinstance(x, Tracer):
            if x._rec is not self:
                raise TraceError(
                    "a value traced by an enclosing trace reached an inner trace (for example a "
                    "function passed to ad.grad closes over a variable of an outer ad.grad); pass "
                    "that value as an argument instead")
            x._check_fresh()
            return x.variable, x.value
        if isinstance(x, (list, tuple)) or x is None or isinstance(x, str):
            raise TypeError(f"operand {x!r} is not an array")
        lit = self.literal(x)
        return lit, lit.value

    def record(self, prim, operands, params):
        pairs = [self.operand(x) for x in operands]
        try:
            out = prim.impl(*(v for _, v in pairs), **params)
        except Exception as exc:
            exc.add_note(f"while recording {prim.name} at {self.source or user_location()}")
            raise
        outs = tuple(out) if prim.multiple_results else (out,)
        tracers = [self.new_tracer(o) for o in outs]
        source = self.source if self.source is not None else user_location()
        self.eqns.append(Eqn(prim, tuple(i for i, _ in pairs), freeze_params(params),
                             tuple(t.variable for t in tracers), source, self.origin))
        if prim.returns_view and prim.returns_view(operands) and isinstance(operands[0], Tracer):
            src = operands[0]
            root, chain = (src._base[0], src._base[3]) if src._base else (src, ())
            step = (prim, params, tuple(operands[1:]))
            for t in tracers:
                t._base = (root, root._version, source, chain + (step,))
        return tuple(tracers) if prim.multiple_results else tracers[0]


def _as_value(value):
    if isinstance(value, np.ndarray | np.generic):
        return value
    return np.asarray(value)[()]


class Tracer(Traced):
    """An array being traced. Behaves like an ndarray for numpy code; knows its trace-time value."""

    __slots__ = ("variable", "value", "_base", "_version", "__weakref__")
    __array_priority__ = 1000.0

    def __init__(self, rec: Recorder, var: Var, value):
        self._rec = rec
        self.variable = var
        self.value = value
        self._base = None        # views: (root tracer, its version when taken, source, steps)
        self._version = 0        # bumped by every in-place write

    # -- array attributes ------------------------------------------------------------------
    aval = property(lambda self: self.variable.aval)
    shape = property(lambda self: self.variable.aval.shape)
    dtype = property(lambda self: self.variable.aval.dtype)
    ndim = property(lambda self: len(self.variable.aval.shape))
    size = property(lambda self: self.variable.aval.size)
    T = property(lambda self: np.transpose(self))
    mT = property(lambda self: np.swapaxes(self, -1, -2))
    real = property(lambda self: np.real(self))
    imag = property(lambda self: np.imag(self))

    def __repr__(self) -> str:
        return f"Tracer({self.variable!r}:{self.variable.aval})"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d traced array")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    # -- numpy dispatch --------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return dispatch.ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return dispatch.function(func, args, kwargs, like=self)

    # -- escapes: loud, never a silent constant ---------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise ConcretizationError(
            f"a traced value ({self.variable!r}:{self.variable.aval}) was converted to a plain numpy array. "
            "This happens with np.array/np.asarray without like=, writing a traced value into a "
            "plain ndarray (a[i] = t), ndarray methods given a traced argument (A.dot(t)), or "
            "numpy functions that coerce internally. Fix: create buffers from the traced value "
            "(np.zeros(n, like=x), np.array([...], like=x)), or call the numpy function instead "
            "of the ndarray method (np.dot(A, t)).")

    def _concrete(self, what):
        raise ConcretizationError(
            f"{what} of a traced value ({self.variable!r}:{self.variable.aval}) would bake its trace-time "
            "value into the tape (a data-dependent branch or conversion). Fix: use np.where for "
            "branches, keep values as arrays, or mark the function as a primitive with "
            "@ad.primitive and give it a rule.")

    def __bool__(self):
        self._concrete("bool() (an `if`, `while`, `and`/`or` or assert)")

    def __float__(self):
        self._concrete("float() (or a math.* function, or writing it into a plain ndarray)")

    def __int__(self):
        self._concrete("int()")

    def __complex__(self):
        self._concrete("complex()")

    def __index__(self):
        self._concrete("use as an index or size")

    def item(self, *args):
        self._concrete(".item()")

    def tolist(self):
        self._concrete(".tolist()")

    def __hash__(self):
        return id(self)

    # -- views and in-place writes -----------------------------------------------------------
    def _check_fresh(self):
        if self._base is not None:
            base, version, where, _ = self._base
            if base._version != version:
                raise MutationError(
                    f"{self.variable!r} is a view (taken at {where}) of an array that was modified "
                    "in place afterwards; numpy would show the modification through the view, but "
                    "a tape records values. Fix: take the view after the write, or .copy() it "
                    "before the write.")

    def _assign(self, new: "Tracer"):
        """Rebind this tracer to ``new`` (the functional result of an in-place write). A write
        into a view is written through to its base, as numpy would."""
        if self._base is not None:
            self._check_fresh()
            root, _, where, chain = self._base
            root._assign(_write_through(root, chain, new))
            self._base = (root, root._version, where, chain)
        self.variable, self.value = new.variable, new.value
        self._version += 1
    def __setitem__(self, index, value):
        self._assign(dispatch.setitem(self, index, value))

    def __getitem__(self, index):
        return dispatch.getitem(self, index)


def _write_through(root: Tracer, chain, new):
    """The new value of ``root`` after writing ``new`` into the view ``chain`` derives from it
    (each step's primitive declares how a write goes through it)."""
    bases = [root]
    for prim, params, rest in chain[:-1]:
        bases.append(prim.bind(bases[-1], *rest, **params))
    for (prim, params, rest), base in reversed(list(zip(chain, bases))):
        if prim.write_through is None:
            raise MutationError(f"in-place write through a {prim.name} view is not supported "
                                "(numpy makes such views read-only or copies); write into the "
                                "original array instead")
        new = prim.write_through(base, new, *rest, **params)
    return new


def _binary(ufunc):
    return (lambda self, other: ufunc(self, other), lambda self, other: ufunc(other, self))


def _inplace(ufunc):
    def op(self, other):
        return ufunc(self, other, out=self)
    return op


for _name, _uf in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                   "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
                   "matmul": np.matmul, "and": np.logical_and, "or": np.logical_or,
                   "xor": np.logical_xor}.items():
    _f, _r = _binary(_uf)
    setattr(Tracer, f"__{_name}__", _f)
    setattr(Tracer, f"__r{_name}__", _r)
    if _name != "matmul":
        setattr(Tracer, f"__i{_name}__", _inplace(_uf))
for _name, _uf in {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                   "eq": np.equal, "ne": np.not_equal}.items():
    setattr(Tracer, f"__{_name}__", _binary(_uf)[0])
for _name, _uf in {"neg": np.negative, "pos": np.positive, "abs": np.absolute,
                   "invert": np.logical_not}.items():
    setattr(Tracer, f"__{_name}__", lambda self, _uf=_uf: _uf(self))


def _method(func):
    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)
    method.__name__ = func.__name__
    method.__doc__ = f"Same as np.{func.__name__}(self, ...)."
    return method


for _func in (np.sum, np.mean, np.prod, np.max, np.min, np.std, np.var, np.argmax, np.argmin,
              np.any, np.all, np.cumsum, np.cumprod, np.clip, np.dot, np.squeeze, np.ravel,
              np.swapaxes, np.repeat, np.take, np.round, np.diagonal, np.trace, np.conj,
              np.nonzero, np.sort, np.argsort, np.ptp):
    setattr(Tracer, _func.__name__, _method(_func))
Tracer.conj = Tracer.conjugate


def _reshape(self, *shape, order="C"):
    return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)


def _transpose(self, *axes):
    return np.transpose(self, axes[0] if len(axes) == 1 else (axes or None))


def _astype(self, dtype, copy=True, **kwargs):
    return dispatch.astype(self, dtype)


Tracer.reshape = _reshape
Tracer.transpose = _transpose
Tracer.astype = _astype
Tracer.flatten = lambda self, order="C": np.copy(np.ravel(self, order=order))
Tracer.copy = lambda self, order="C": np.copy(self)
