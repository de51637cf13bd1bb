"""The Python side of calling a fused loop (``Kernel``): operands passed by address, outputs
allocated (or written over a donated operand), and the measured choice between the C loop and
its equations' numpy lines (docs/fused.md: "C or numpy: measured"). ``ad.compiler.kernels``
writes the loops; ``ad.compiler.products`` measures large matrix products the same way.
"""
from __future__ import annotations

import builtins
import ctypes
import math
import time

import numpy as np

from .emit import eqn_source
from ..tape import Var

MEASURED_CALLS = 3     # calls that time both the C loop and its numpy lines
# A numpy line costs at least this (numpy 2.4: one ufunc call on a 1-element array ~0.27 us, on
# Python floats ~28 ns): a loop faster than its lines could be called runs in C, untimed.
NUMPY_LINE, NUMPY_SCALAR_LINE = 0.2e-6, 0.02e-6
CLOCK = time.thread_time   # what the measurement reads: CPU time, robust to other processes' load

_BY_VALUE = {np.dtype(np.float64): (ctypes.c_double, float), np.dtype(np.float32): (ctypes.c_float, float),
             np.dtype(np.bool_): (ctypes.c_bool, bool)}


def _format_time(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} us"


class Kernel:
    """One fused loop: its C function, and the Python side of calling it. Array operands are
    passed by pointer (their size checked: a wrong size would read past the end), 0-d ones by
    value; each array output is a new array, the 0-d outputs of one dtype share one buffer; a
    split loop gets a new scratch array per call (calls from several threads share nothing).

    ``runs``: None until measured, then "C" or "numpy". Each of the first ``MEASURED_CALLS``
    calls times the C loop and its numpy lines on its operands (CPU time of the thread) and
    returns the C loop's results; then the faster runs (``choice()`` says which and why). An
    operand in another memory order (a transposed view) would have to be copied, which costs
    more than fusing saves: such a call runs the numpy lines."""

    def __init__(self, name: str, group, source: str, inputs: list, outputs: list, ns, operands: list,
                 scratch: int | None, views: list):     # group: the kernels.Group it runs
        self.name, self.group, self.source = name, group, source
        n = math.prod(group.shape)
        self.n = n if n > 1 else None     # the loop's length, passed first (no loop for one element)
        self.inputs = inputs        # (dtype, size, by_value)
        self.outputs = outputs      # (variable, dtype, shape)
        self.scratch = scratch      # doubles of scratch a split loop takes last, None if not split
        self.scalars = {}           # dtype -> how many 0-d outputs
        self.slots = []             # per 0-d output: its offset in its dtype's buffer
        for _, dt, shape in outputs:
            self.slots.append(self.scalars.get(dt, 0) if shape == () else None)
            self.scalars[dt] = self.scalars.get(dt, 0) + (shape == ())
        self.fn, self._ns, self._operands, self._twin = None, ns, operands, None
        self.views = views          # the view equations its numpy lines compute from its operands
        self.runs, self.times = None, {"C": [], "numpy": []}
        # output position -> the position of an operand whose buffer it may take (the driver's
        # choice: a fresh array no one reads after); used once measured, read at [i] before written
        self.donors = {}

    def link(self, library: ctypes.CDLL):
        self.fn = getattr(library, self.name)
        self.fn.restype = None
        self.fn.argtypes = [ctypes.c_long] * (self.n is not None) \
            + [_BY_VALUE[dt][0] if by_value else ctypes.c_void_p for dt, _, by_value in self.inputs] \
            + [ctypes.c_void_p] * (len(self.outputs) + (self.scratch is not None))

    def __call__(self, *args):
        if self.runs == "numpy" or any(size > 1 and isinstance(x, np.ndarray) and not x.flags.c_contiguous
                                       for x, (_, size, _) in zip(args, self.inputs)):
            return self.numpy_twin()(*args)
        if self.runs == "C":
            return self._run(args, donate=True)
        return self._measure(args)

    def _timed(self, args) -> tuple:
        start = CLOCK()
        out = self._run(args)
        return out, CLOCK() - start

    def _measure(self, args):
        out, in_c = self._timed(args)
        fast = len(self.group.eqns) * (NUMPY_LINE if self.n else NUMPY_SCALAR_LINE)
        if in_c >= fast and not self.times["C"]:    # a first call pays for binding the library's symbols
            out, in_c = self._timed(args)
        if in_c < fast:
            self._settle("C")
            return out
        twin = self.numpy_twin()
        with np.errstate(all="ignore"):       # the C loop's results are returned: its warnings are numpy's
            start = CLOCK()
            twin(*args)
            self.times["numpy"].append(CLOCK() - start)
        self.times["C"].append(in_c)
        if len(self.times["C"]) >= MEASURED_CALLS:
            self._settle(min(self.times, key=lambda way: min(self.times[way])))
        return out

    def _settle(self, runs: str):
        """Measured: the driver calls the faster way directly from now on, its numpy lines or a
        caller written for this loop (``_caller``), not this object. The generic call costs
        3-4 us a loop, 15-20 us when a large matmul just left the caches cold (measured: the
        softmax cross-entropy after the MLP's last layer, eleven loops)."""
        self.runs = runs
        self._ns.globals[self.name] = self.numpy_twin() if runs == "numpy" else self._caller()

    def _caller(self):
        """The C loop's call, written out for its operands: a C-ordered array of the dtype and
        size the loop was made for passes its address; anything else takes the generic call."""
        if any(self.scalars.values()) or self.scratch is not None:    # (0-d outputs share a buffer)
            return self
        names = [f"a{j}" for j in range(len(self.inputs))]
        scope = {"ndarray": np.ndarray, "empty": np.empty, "address": _address, "buffer": self._buffer,
                 "fn": self.fn, "generic": self}
        checks, cargs = [], [] if self.n is None else [str(self.n)]
        for a, (dt, size, by_value) in zip(names, self.inputs):
            if by_value:
                cargs.append(f"{_BY_VALUE[dt][1].__name__}({a})")
                continue
            scope[f"d_{a}"] = dt
            checks.append(f"type({a}) is not ndarray or {a}.dtype is not d_{a} or {a}.size != {size} "
                          f"or not {a}.flags.c_contiguous")
            cargs.append(f"address({a})")
        lines = [f"def {self.name}({', '.join(names)}):"]
        if checks:
            lines += [f"    if {' or '.join(checks)}:", f"        return generic({', '.join(names)})"]
        results = []
        for o, (_, dt, shape) in enumerate(self.outputs):
            scope[f"d{o}"] = dt
            donor = self.donors.get(o)
            lines.append(f"    o{o} = " + (f"buffer(a{donor}, d{o}, {shape!r})" if donor is not None
                                            else f"empty({shape!r}, d{o})"))
            cargs.append(f"address(o{o})")
            results.append(f"o{o}, ")
        lines += [f"    fn({', '.join(cargs)})", f"    return ({''.join(results)})"]
        exec(builtins.compile("\n".join(lines) + "\n", f"<ad.compiler.fused {self.name}>", "exec"), scope)
        return scope[self.name]

    def choice(self) -> str:
        """How the loop runs, and the measurement that chose it."""
        if self.runs is None:
            return f"{self.name}: not yet measured (its first {MEASURED_CALLS} calls time C and numpy)"
        if not self.times["C"]:
            return (f"{self.name} runs in C: faster than numpy could call its {len(self.group.eqns)} lines "
                    "(not timed against them)")
        way = "in C" if self.runs == "C" else "as numpy lines"
        return (f"{self.name} runs {way}: C {_format_time(min(self.times['C']))}, numpy lines "
                f"{_format_time(min(self.times['numpy']))} (best of {len(self.times['C'])} calls)")

    def _run(self, args, donate: bool = False):
        held, cargs = [], [] if self.n is None else [self.n]
        for x, (dt, size, by_value) in zip(args, self.inputs):
            if by_value:
                cargs.append(_BY_VALUE[dt][1](x))
                continue
            a = np.ascontiguousarray(x, dt)
            if a.size != size:
                raise ValueError(f"{self.name}: an operand of {a.size} elements where the tape has {size}; "
                                 "call the compiled tape with arguments shaped as when it was traced")
            held.append(a)
            cargs.append(_address(a))
        scalars = {dt: np.empty(k, dt) for dt, k in self.scalars.items() if k}
        results = [self._buffer(args[self.donors[o]] if donate and o in self.donors else None, dt, shape)
                   if slot is None else None for o, ((_, dt, shape), slot) in enumerate(zip(self.outputs, self.slots))]
        cargs.extend(_address(r) if slot is None else _address(scalars[dt]) + slot * dt.itemsize
                     for r, (_, dt, _), slot in zip(results, self.outputs, self.slots))
        if self.scratch is not None:
            scratch = np.empty(self.scratch)
            cargs.append(scratch.ctypes.data)
        self.fn(*cargs)
        return tuple(r if slot is None else scalars[dt][slot]
                     for r, (_, dt, _), slot in zip(results, self.outputs, self.slots))

    @staticmethod
    def _buffer(donor, dt, shape) -> np.ndarray:
        """An output's array: the donor's if it owns its memory, writable, of the output's shape
        and C order (not a view some other value shares), else a new one."""
        if isinstance(donor, np.ndarray) and donor.flags.owndata and donor.flags.writeable \
                and donor.flags.c_contiguous and donor.dtype == dt and donor.shape == shape:
            return donor
        return np.empty(shape, dt)

    def numpy_twin(self):
        """The loop's equations as numpy lines, a function of the same operands."""
        if self._twin is None:
            params = [f"v{x.n}" if type(x) is Var else f"_k{j}" for j, x in enumerate(self._operands)]
            lines = [f"def {self.name}_numpy({', '.join(params)}):",
                     *(f"    v{e.outputs[0].n} = {eqn_source(e, self._ns)}" for e in self.views + self.group.eqns),
                     f"    return ({''.join(f'v{y.n}, ' for y, _, _ in self.outputs)})"]
            exec(builtins.compile("\n".join(lines) + "\n", f"<ad.compiler.fused {self.name}_numpy>", "exec"), self._ns.globals)
            self._twin = self._ns.globals[f"{self.name}_numpy"]
        return self._twin


def _address(a: np.ndarray) -> int:
    """Where an array's data starts: through ctypes' buffer protocol, a third of the time of
    ``a.ctypes.data`` (which builds an object per call), which a read-only array still takes."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except TypeError:
        return a.ctypes.data
