"""Tracing plain numpy code: tracer objects and the recorder that writes equations.

A ``Tracer`` stands for an array while a function runs. numpy hands it every ufunc call
(``__array_ufunc__``) and every public function (``__array_function__``); both end in
``Primitive.bind``, which asks the tracer's ``Recorder`` to compute the value eagerly and append
one equation.

Python control flow on traced values works the way it does in autograd: ``bool()``, ``int()``,
``__index__`` and conversions to plain arrays use the trace-time value (tracing is eager, so it
is known) and record a *guard* equation stating the assumption (``guard %7 True``); a run whose
inputs break it raises GuardError, and ``ad.grad`` re-traces. What would silently lose a gradient
still raises, naming the user's line: ``float()``, ``.item()`` or ``np.asarray`` of a value that
is being differentiated, and anything that asks for the value of a pullback's cotangent (it has
none while a rule is lifted).

A value of an enclosing trace used inside an inner one (a function passed to ``ad.grad`` that
closes over a variable of an outer ``ad.grad``) is *captured*: it becomes an extra input of the
inner tape, so the inner derivative treats it as a constant and the outer one still sees the
dependence (no perturbation confusion).

In-place code is functionalized: ``t[i] = v``, ``t += v`` and ``out=t`` record a pure equation
and rebind ``t`` to its result. A value that numpy would have made a view of ``t`` and that is
read after ``t`` was mutated raises instead of silently keeping the old value.
"""
from __future__ import annotations

import gc
import itertools
import sys

import numpy as np

from . import dispatch
from .core_prims import guard_p
from .errors import (ConcretizationError, MutationError, PlainArrayWriteError, TraceError, UnsupportedFunctionError,
                     scipy_escape, storing_into_array, user_location, user_site)
from .origins import Origin, OriginKind
from .scopes import CallScopes
from .tape import SCALAR_AVALS, Aval, Eqn, Lit, Var, freeze_params, interned_aval
from .trace_state import ACTIVE, Traced, find_recorder


class Recorder:
    """Collects equations for one trace; computes every value eagerly so shapes are known.

    ``source``, ``origin`` and ``scope`` stamp the equations recorded next; a source of None
    is the user's line found on the stack, a scope of None the user's calls below the traced
    function (``follow_calls``: ``calls``, an ``ad.scopes.CallScopes``). ``differentiated``
    holds the variables that carry a gradient
    (concretizing them would lose it), ``symbolic`` those whose trace-time value is a stand-in
    (a pullback's cotangent while a rule is lifted: they may not be concretized at all);
    both propagate through the equations recorded. ``captures`` lists the values of enclosing
    traces this trace read, as (its input variable, the outer tracer).
    """

    def __init__(self, counter=None):
        self.eqns: list[Eqn] = []
        self.counter = counter if counter is not None else itertools.count()
        self.level = len(ACTIVE)
        self.active = False
        self.source: str | None = None
        self.scope: tuple | None = ()
        self.calls: CallScopes | None = None
        self._frame = self._scope = None      # the last equation's innermost user frame, its scope
        self.origin = Origin(OriginKind.PRIMAL)
        self._consts: dict[int, tuple[object, Lit]] = {}
        self.differentiated: set[Var] = set()
        self.symbolic: set[Var] = set()
        self.captures: list[tuple[Var, "Tracer"]] = []
        self._captured: dict[Var, Var] = {}

    def __enter__(self):
        self.level = len(ACTIVE)
        self.active = True
        # the cyclic collector paused while recording (as ``tape.gc_paused``): it would re-scan
        # every tracer and equation made so far, again and again
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        ACTIVE.remove(self)
        self.active = False
        if self._gc_was_enabled:
            gc.enable()

    def follow_calls(self, root) -> None:
        """Scope what is recorded next by the user's calls below the frame ``root`` (``trace_call``)."""
        self.calls, self.scope = CallScopes(root), None
        self.scope_changed()

    def stop_following(self) -> dict:
        """The end of ``follow_calls``: the renumbering of its scopes (``CallScopes.finish``)."""
        renamed = self.calls.finish()
        self.calls, self.scope = None, ()
        self.scope_changed()
        return renamed

    def scope_changed(self) -> None:
        self._frame = self._scope = None

    def _scope_of(self, frame) -> tuple:
        scope = self.calls.of(frame) if frame is not None else ()
        self._frame, self._scope = frame, scope
        return scope

    def new_var(self, aval: Aval) -> Var:
        return Var(next(self.counter), aval)

    def new_tracer(self, value, var: Var | None = None) -> "Tracer":
        if not isinstance(value, (np.ndarray, np.generic)):
            value = np.asarray(value)[()]
        return Tracer(self, var if var is not None else Var(next(self.counter), Aval.of(value)), value)

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
            if x._base is not None:
                x._check_fresh()
            if x._rec is not self:
                return self._capture(x), x.value
            return x.variable, x.value
        aval = SCALAR_AVALS.get(type(x))
        if aval is not None:        # a Python float, bool or complex: the commonest literal
            return Lit(x, aval), x
        if isinstance(x, (list, tuple)) or x is None or isinstance(x, str):
            raise TypeError(f"operand {x!r} is not an array")
        lit = self.literal(x)
        return lit, lit.value

    def _capture(self, x: "Tracer") -> Var:
        """The input variable standing for a value of an enclosing trace (one per variable)."""
        if x._rec.level > self.level:
            raise TraceError("a value traced by an inner trace reached an enclosing one (was it "
                             "stored outside the function being differentiated?)")
        var = self._captured.get(x.variable)
        if var is None:
            var = self._captured[x.variable] = self.new_var(x.aval)
            self.captures.append((var, Tracer(x._rec, x.variable, x.value)))
            if x.variable in x._rec.differentiated:
                self.differentiated.add(var)
        return var

    def record(self, prim, operands, params):
        """Compute ``prim`` on the operands' values and append its equation; returns the output
        tracer(s). Every traced operation runs this: the common cases come first, inline."""
        inputs, values = [], []
        for x in operands:      # operand(x), its common cases inline
            t = type(x)
            if t is Tracer and x._rec is self and x._base is None:
                inputs.append(x.variable)
                values.append(x.value)
            elif t in SCALAR_AVALS:
                inputs.append(Lit(x, SCALAR_AVALS[t]))
                values.append(x)
            else:
                var, value = self.operand(x)
                inputs.append(var)
                values.append(value)
        inputs = tuple(inputs)
        symbolic = self.symbolic
        stand_ins = not symbolic.isdisjoint(inputs) if symbolic else False
        try:
            if stand_ins and prim.checks_values:
                out = values[0]
            else:
                out = prim.impl(*values, **params) if params else prim.impl(*values)
        except Exception as exc:
            exc.add_note(f"while recording {prim.name} at {self.source or user_location(ad_frames=2)}")
            raise
        differentiated = self.differentiated
        gradient = differentiated and prim.differentiable and not differentiated.isdisjoint(inputs)
        if prim.multiple_results:
            tracers = tuple(self.new_tracer(o) for o in out)
            outputs = tuple(t.variable for t in tracers)
            if gradient:
                differentiated.update(v for v in outputs if v.aval.is_float)
        else:           # new_tracer(out), inline
            if not isinstance(out, (np.ndarray, np.generic)):
                out = np.asarray(out)[()]
            var = Var(next(self.counter), interned_aval(out.shape, out.dtype))     # Aval.of(out)
            tracers, outputs = (Tracer(self, var, out),), (var,)
            if gradient and out.dtype.kind in "fc":     # var.aval.is_float, at a fifth of its cost
                differentiated.add(var)
        source, scope = self.source, self.scope
        if scope is None:       # the user's calls (trace_call): looked up when the frame changes
            # record and its caller (Primitive.bind, or another ad function) are ad's own frames
            frame, where = user_site(ad_frames=2)
            if source is None:
                source = where
            scope = self._scope if frame is self._frame else self._scope_of(frame)
        elif source is None:
            source = user_location(ad_frames=2)
        frozen = freeze_params(params) if params else ()
        self.eqns.append(Eqn(prim, inputs, frozen, outputs, source, self.origin, scope))
        if stand_ins:
            self.symbolic.update(outputs)
        if prim.returns_view and prim.returns_view(operands) and isinstance(operands[0], Tracer):
            src = operands[0]
            root, chain = (src._base[0], src._base[3]) if src._base else (src, ())
            step = (prim, params, tuple(operands[1:]))
            for t in tracers:
                t._base = (root, root._version, source, chain + (step,))
        return tracers if prim.multiple_results else tracers[0]


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
    __array_ufunc__ = dispatch.ufunc

    def __array_function__(self, func, types, args, kwargs):
        return dispatch.function(func, args, kwargs, like=self)

    def __array_namespace__(self, /, *, api_version=None):
        """The array API standard's namespace of traced values (``ad.lib.array_api``)."""
        return dispatch.array_namespace(api_version)

    def to_device(self, device, /, *, stream=None):
        """The standard's move to a device: a traced value stays where numpy computes (``"cpu"``)."""
        if device != self.device:
            raise UnsupportedFunctionError(
                f"to_device({device!r}) of {self.variable!r}:{self.aval}: ad traces with numpy, whose one "
                "device is 'cpu'. Keep the traced program on the CPU (device=x.device, or "
                "array_api_compat.device(x), of a traced x), or differentiate it with that device's library.")
        return self

    # -- concrete values: guarded, or loud when a gradient would be lost --------------------
    def _concretize(self, value, what: str, keeps_gradient: bool):
        """``value`` (computed from the trace-time value) after recording the guard that it
        stays what it is now. ``keeps_gradient``: the conversion returns something a gradient
        can flow through (a branch decision, an integer), so differentiated values may take it."""
        var, rec = self.variable, self._rec
        symbolic = var in rec.symbolic
        if symbolic or not keeps_gradient and var in rec.differentiated:
            if storing_into_array(_conversion_caller()):     # buf[i] = t, buf a plain ndarray
                raise PlainArrayWriteError(f"{var!r}:{var.aval}, " + (
                    "derived from a pullback's cotangent, which has no value while its rule is lifted"
                    if symbolic else "being differentiated"))
        if symbolic:
            raise ConcretizationError(
                f"{what} of {var!r}:{var.aval}, which derives from a pullback's cotangent: while a "
                "rule is lifted its cotangent has no value, so a pullback cannot branch on it or "
                "convert it. Fix: write the pullback with numpy functions (np.where for branches).")
        if var in rec.differentiated and not keeps_gradient:
            raise ConcretizationError(
                f"{what} of {var!r}:{var.aval}, a value being differentiated, would drop its "
                "gradient silently (the result is a plain Python or numpy value). Fix: keep it a "
                "traced array (use np.sin instead of math.sin, np.stack or np.array(..., like=x) "
                "instead of np.array([...]), np.zeros(n, like=x) for buffers you write into, "
                "np.dot(A, t) instead of A.dot(t)), or give the function a rule with @ad.primitive.")
        guard_p.bind(self, value)
        return value

    def __array__(self, dtype=None, copy=None):
        value = np.array(self.value, dtype=dtype, copy=True)
        escape = self.variable in self._rec.differentiated and self.aval.is_float and scipy_escape()
        if escape:      # inside a scipy function: name it and ad.scipy's
            raise ConcretizationError(f"{escape[0]} (scipy was converting {self.variable!r}:{self.aval}, "
                                      "a value being differentiated)", escape[1])
        return self._concretize(value, "converting it to a plain numpy array (numpy does this "
                                "to tracers inside a Python list, which its dispatch protocols "
                                "cannot see: np.array([...]), np.r_[...], np.sum([a, b]); also "
                                "writing into a plain ndarray, and functions that coerce)",
                                keeps_gradient=not self.aval.is_float)

    def __bool__(self):
        truth = bool(self.value)          # numpy's error for arrays of more than one element
        if self.dtype != np.bool_:        # guard the truth value, not the number
            return bool(np.not_equal(self, 0))
        return self._concretize(truth, "bool()", keeps_gradient=True)

    def __int__(self):
        if not np.issubdtype(self.dtype, np.integer) and self.dtype != np.bool_:
            return int(dispatch.astype(self, np.int64))      # guard the integer, not the number
        return self._concretize(int(self.value), "int()", keeps_gradient=True)

    def __index__(self):
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError(f"only integer traced values can be used as an index or size, "
                            f"not {self.variable!r}:{self.variable.aval}")
        return self._concretize(int(self.value), "use as an index or size", keeps_gradient=True)

    def __float__(self):
        return self._concretize(float(self.value), "float() (or a math.* function)", keeps_gradient=False)

    def __complex__(self):
        return self._concretize(complex(self.value), "complex()", keeps_gradient=False)

    def item(self, *args):
        return self._concretize(self.value.item(*args), ".item()",
                                keeps_gradient=not self.aval.is_float)

    def tolist(self):
        return self._concretize(self.value.tolist(), ".tolist()", keeps_gradient=not self.aval.is_float)

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
        if new._rec is not self._rec:
            raise MutationError(f"an in-place write into {self.variable!r}, a value of an enclosing "
                                "trace, from inside an inner one (a function passed to ad.grad "
                                "writing into a variable it closes over); write into a copy")
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


# the frames of the conversions themselves: the frame past them is the one that asked
_CONVERSIONS = frozenset(getattr(Tracer, name).__code__ for name in (
    "_concretize", "__array__", "__bool__", "__int__", "__index__", "__float__", "__complex__", "item", "tolist"))


def _conversion_caller():
    """The frame that asked for the conversion under way: the first one past the conversion
    methods (numpy's C code, which converts the value ``buf[i] = t`` stores, has no frame, so
    for a store it is the frame running the store)."""
    f = sys._getframe(1)
    while f is not None and f.f_code in _CONVERSIONS:
        f = f.f_back
    return f


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


def _operator(ufunc):
    """``t + u``, ``-t``: numpy hands a ufunc call to the leftmost operand's ``__array_ufunc__``,
    here ours, so it is recorded directly, as ``dispatch.ufunc`` and ``Primitive.bind`` would
    (without numpy's search for it and those two calls: every operator pays them)."""
    def op(*operands):
        prim = dispatch.UFUNCS.get(ufunc)
        if prim is None:
            return dispatch.ufunc(operands[0], ufunc, "__call__", *operands)
        return find_recorder(operands).record(prim, operands, {})
    return op


def _binary(ufunc):
    """``t + u`` and ``u + t``: for ``u + t`` numpy decides (``u``'s own ``__array_ufunc__`` may
    come first)."""
    return _operator(ufunc), lambda self, other: ufunc(other, self)


def _inplace(ufunc):
    def op(self, other):
        return ufunc(self, other, out=self)
    return op


def _bitwise(logical, bitwise):
    """``t & u``, ``t |= u``, ``~t``: numpy's operators are bitwise; on booleans that is the
    logical ufunc (the same values), on integers the bitwise one, and on floats numpy's
    TypeError (never a logical result in place of the bits)."""
    def pick(*operands):
        boolean = all(np.result_type(getattr(x, "dtype", x)) == np.bool_ for x in operands)
        return logical if boolean else bitwise

    def op(self, other):
        return pick(self, other)(self, other)

    def reflected(self, other):
        return pick(other, self)(other, self)

    def inplace(self, other):
        return pick(self, other)(self, other, out=self)
    return op, reflected, inplace


for _name, _uf in {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                   "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
                   "lshift": np.left_shift, "rshift": np.right_shift, "matmul": np.matmul}.items():
    _f, _r = _binary(_uf)
    setattr(Tracer, f"__{_name}__", _f)
    setattr(Tracer, f"__r{_name}__", _r)
    if _name != "matmul":
        setattr(Tracer, f"__i{_name}__", _inplace(_uf))
for _name, _ufs in {"and": (np.logical_and, np.bitwise_and), "or": (np.logical_or, np.bitwise_or),
                    "xor": (np.logical_xor, np.bitwise_xor)}.items():
    for _prefix, _f in zip(("", "r", "i"), _bitwise(*_ufs)):
        setattr(Tracer, f"__{_prefix}{_name}__", _f)
for _name, _uf in {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                   "eq": np.equal, "ne": np.not_equal}.items():
    setattr(Tracer, f"__{_name}__", _binary(_uf)[0])
for _name, _uf in {"neg": np.negative, "pos": np.positive, "abs": np.absolute}.items():
    setattr(Tracer, f"__{_name}__", _operator(_uf))
Tracer.__invert__ = lambda self: (np.logical_not if self.dtype == np.bool_ else np.invert)(self)


def _method(func):
    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)
    method.__name__ = func.__name__
    method.__doc__ = f"Same as np.{func.__name__}(self, ...)."
    return method


for _func in (np.sum, np.mean, np.prod, np.max, np.min, np.std, np.var, np.argmax, np.argmin,
              np.any, np.all, np.cumsum, np.cumprod, np.clip, np.dot, np.squeeze, np.ravel,
              np.swapaxes, np.repeat, np.take, np.round, np.diagonal, np.trace, np.conj,
              np.nonzero, np.sort, np.argsort, np.ptp, np.argpartition, np.choose,
              np.searchsorted, np.put):
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
Tracer.flat = property(lambda self: np.ravel(self))
Tracer.itemsize = property(lambda self: self.dtype.itemsize)
Tracer.nbytes = property(lambda self: self.size * self.dtype.itemsize)
Tracer.device = "cpu"


def _fill(self, value):
    """In place, like ndarray.fill: recorded as a write of the whole array."""
    self[...] = value


def _partition(self, kth, axis=-1, kind="introselect", order=None):
    """In place, like ndarray.partition."""
    self._assign(np.partition(self, kth, axis=axis))


Tracer.compress = lambda self, condition, axis=None: np.compress(condition, self, axis=axis)
Tracer.fill = _fill
Tracer.partition = _partition

# ndarray attributes a traced value cannot have, and why (anything else missing is unknown)
_NO_BUFFER = ("a traced value is not a block of memory; for a cast use x.astype(dtype)",
              "base", "ctypes", "data", "flags", "strides", "byteswap", "getfield", "setfield",
              "setflags", "tobytes", "tofile", "dump", "dumps", "view", "__dlpack__", "__dlpack_device__")
_NO_RESIZE = ("a traced value cannot change its size in place; use np.resize(a, shape) or "
              "np.pad", "resize")
_REFUSED = {name: reason for reason, *names in (_NO_BUFFER, _NO_RESIZE) for name in names}


def _missing(self, name):
    if name in _REFUSED:
        raise AttributeError(f"ndarray.{name} is not supported on traced values "
                             f"({self.variable!r}:{self.variable.aval}): {_REFUSED[name]}")
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r} (traced "
                         f"values support the ndarray methods that numpy functions mirror: "
                         f"call np.{name}(x, ...) if numpy has it)")


Tracer.__getattr__ = _missing
