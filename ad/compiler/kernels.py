"""A group of elementwise equations as one C loop (``kernel``), and the Python side of calling it
(``Kernel``): the fused backend's loops (``ad.compiler.fused``, docs/fused.md).

A loop of more than ``PART`` equations is split into C functions of ``PART`` equations: gcc's
optimiser is superlinear in a function's length (one function of the 16-float gradient's 8,623
equations: -O2 10 s of CPU, -O0 0.85 s) and its vectoriser gives up on a loop of a few thousand
statements; split, every loop builds optimised and vectorised. The split loop runs over blocks
of ``BLOCK`` elements, each part over the block, and the values one part leaves to a later one
wait in a scratch array of ``BLOCK`` elements per value (in the cache, where per-element arrays
of the whole length would go to memory).

A loop runs in C or as its equations' numpy lines (``Kernel.numpy_twin``), whichever measured
faster on its first calls (``Kernel.runs``); both give numpy's results to rounding.
"""
from __future__ import annotations

import builtins
import ctypes
import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .emit import eqn_source
from ..core_prims import add_p, astype_p, broadcast_to_p, positive_p, sum_to_p
from ..lib.elementwise import where_p
from ..nn.special import erf_p, relu_p, sigmoid_p
from ..primitives import BY_FUNCTION
from ..origins import OriginKind
from ..tape import Var

PART = 100         # equations per C function of a split loop (docs/fused.md: measured)
BLOCK = 64         # elements a split loop runs through all its parts at a time
MEASURED_CALLS = 3     # calls that time both the C loop and its numpy lines
# A numpy line costs at least this (numpy 2.4: one ufunc call on a 1-element array ~0.27 us, on
# Python floats ~28 ns): a loop faster than its lines could be called runs in C, untimed.
NUMPY_LINE, NUMPY_SCALAR_LINE = 0.2e-6, 0.02e-6
CLOCK = time.thread_time   # what the measurement reads: CPU time, robust to other processes' load

# What every library of kernels starts with: sin and cos declared const, as they are when gcc
# knows them as builtins (it does not where the loops vectorise: ``clib.vector_flags``).
PRELUDE = "#include <math.h>\ndouble sin(double) __attribute__((const));\ndouble cos(double) __attribute__((const));\n"

CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float", np.dtype(np.bool_): "_Bool"}
_BY_VALUE = {np.dtype(np.float64): (ctypes.c_double, float), np.dtype(np.float32): (ctypes.c_float, float),
             np.dtype(np.bool_): (ctypes.c_bool, bool)}

# How a loop spells each primitive it fuses, over its operands {0}, {1}... (C variable names or
# literals). Keyed by the primitive object, as the ONNX exporter's table is. Branches select
# values, never calls, so that the loops vectorise (a call in one branch is not).
_UFUNC_SPELLINGS = {
    np.subtract: "{0} - {1}", np.multiply: "{0} * {1}", np.true_divide: "(double){0} / {1}",
    np.negative: "-{0}", np.power: "pow({0}, {1})", np.square: "{0} * {0}", np.reciprocal: "1 / {0}",
    np.absolute: "fabs({0})", np.fabs: "fabs({0})", np.sqrt: "sqrt({0})", np.cbrt: "cbrt({0})",
    np.exp: "exp({0})", np.exp2: "exp2({0})", np.expm1: "expm1({0})", np.log: "log({0})",
    np.log2: "log2({0})", np.log10: "log10({0})", np.log1p: "log1p({0})",
    np.sin: "sin({0})", np.cos: "cos({0})", np.tan: "tan({0})", np.arcsin: "asin({0})",
    np.arccos: "acos({0})", np.arctan: "atan({0})", np.sinh: "sinh({0})", np.cosh: "cosh({0})",
    np.tanh: "tanh({0})", np.arcsinh: "asinh({0})", np.arccosh: "acosh({0})", np.arctanh: "atanh({0})",
    np.arctan2: "atan2({0}, {1})", np.hypot: "hypot({0}, {1})", np.copysign: "copysign({0}, {1})",
    np.floor: "floor({0})", np.ceil: "ceil({0})", np.trunc: "trunc({0})", np.rint: "rint({0})",
    np.fmax: "fmax({0}, {1})", np.fmin: "fmin({0}, {1})",
    np.maximum: "{0} >= {1} || isnan({0}) ? {0} : {1}", np.minimum: "{0} <= {1} || isnan({0}) ? {0} : {1}",
    np.sign: "{0} > 0 ? 1.0 : {0} < 0 ? -1.0 : {0} == 0 ? 0.0 : {0}",    # numpy's sign(-0.0) is 0.0
    np.less: "{0} < {1}", np.less_equal: "{0} <= {1}", np.greater: "{0} > {1}",
    np.greater_equal: "{0} >= {1}", np.equal: "{0} == {1}", np.not_equal: "{0} != {1}",
    np.logical_and: "{0} && {1}", np.logical_or: "{0} || {1}", np.logical_not: "!{0}",
    np.logical_xor: "!{0} != !{1}", np.isnan: "isnan({0})", np.isinf: "isinf({0})",
    np.isfinite: "isfinite({0})",
}
SPELLINGS = {
    **{BY_FUNCTION[uf]: s for uf, s in _UFUNC_SPELLINGS.items() if uf in BY_FUNCTION},
    add_p: "{0} + {1}", positive_p: "{0}", where_p: "{0} ? {1} : {2}",
    erf_p: "erf({0})", relu_p: "{0} > 0 || isnan({0}) ? {0} : 0.0",
    # ad.nn's split at 0: 1 / (1 + exp(-x)) for x >= 0, exp(x) / (1 + exp(x)) below; one exp
    sigmoid_p: "({0} >= 0 ? 1.0 : exp(-fabs({0}))) / (1.0 + exp(-fabs({0})))",
    astype_p: "{0}",           # the assignment to the output's C type converts
    broadcast_to_p: "{0}",     # the operand's index broadcasts it
}
SUMS = (BY_FUNCTION[np.sum], sum_to_p)   # fused when they sum a loop's values to one number


@dataclass
class Group:
    """Equations run in one loop over ``shape``; ``made``: their outputs; ``sums``: those
    summed in the loop (known only after it)."""
    shape: tuple
    eqns: list = field(default_factory=list)
    made: set = field(default_factory=set)
    sums: set = field(default_factory=set)


def index(shape: tuple, loop: tuple) -> str | None:
    """How a loop over ``loop``-shaped values reads an operand of ``shape`` (C, flat index
    ``i``): ``i``, ``0`` (one element), ``i % m`` (a trailing block: a bias), ``i / m`` (constant
    along the trailing axes: ``x - np.max(x, axis=1, keepdims=True)``), ``i / m % k`` (a middle
    block: a per-channel bias); None if it broadcasts any other way."""
    if shape == loop:
        return "i"
    if math.prod(shape) == 1:
        return "0"
    if len(shape) > len(loop):
        return None
    aligned = (1,) * (len(loop) - len(shape)) + tuple(shape)
    kept = [k for k, (a, n) in enumerate(zip(aligned, loop)) if a != 1]
    first, last = kept[0], kept[-1] + 1
    if any(aligned[k] != loop[k] for k in range(first, last)):
        return None
    inner, block = math.prod(loop[last:]), math.prod(loop[first:last])
    at = f"i / {inner}" if inner > 1 else "i"
    return at if first == 0 or all(n == 1 for n in loop[:first]) else f"{at} % {block}"


def _c_literal(v, single: bool = False) -> str:
    """A C literal; ``single``: a float32 one (``0.1f``), as numpy takes a Python number next
    to float32 values (``x > 0.1`` compares with float32(0.1), not with the double 0.1)."""
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    v = float(np.float32(v)) if single else float(v)
    text = repr(v) if math.isfinite(v) else ("NAN" if math.isnan(v) else "INFINITY" if v > 0 else "-INFINITY")
    text += "f" if single and math.isfinite(v) else ""
    return f"({text})" if text.startswith("-") else text


def _single(e) -> bool:
    """Are the equation's Python-number literals float32 (its arrays are, none is float64)?"""
    kinds = {np.dtype(x.aval.dtype if type(x) is Var else getattr(x.value, "dtype", np.float64))
             for x in e.inputs if type(x) is Var or isinstance(x.value, (np.ndarray, np.generic))}
    return np.dtype(np.float32) in kinds and np.dtype(np.float64) not in kinds


def _c_comment(e) -> str:
    return f"  /* {e.origin.describe().replace('*/', '* /')} */" if e.origin.kind is not OriginKind.PRIMAL else ""


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

    def __init__(self, name: str, group: Group, source: str, inputs: list, outputs: list, ns, operands: list,
                 scratch: int | None):
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
        self.runs, self.times = None, {"C": [], "numpy": []}

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
            return self._run(args)
        return self._measure(args)

    def _measure(self, args):
        start = CLOCK()
        out = self._run(args)
        in_c = CLOCK() - start
        if in_c < len(self.group.eqns) * (NUMPY_LINE if self.n else NUMPY_SCALAR_LINE):
            self.runs = "C"
            return out
        twin = self.numpy_twin()
        with np.errstate(all="ignore"):       # the C loop's results are returned: its warnings are numpy's
            start = CLOCK()
            twin(*args)
            self.times["numpy"].append(CLOCK() - start)
        self.times["C"].append(in_c)
        if len(self.times["C"]) >= MEASURED_CALLS:
            self.runs = min(self.times, key=lambda way: min(self.times[way]))
        return out

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

    def _run(self, args):
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
            cargs.append(a.ctypes.data)
        scalars = {dt: np.empty(k, dt) for dt, k in self.scalars.items() if k}
        results = [np.empty(shape, dt) if slot is None else None
                   for (_, dt, shape), slot in zip(self.outputs, self.slots)]
        cargs.extend(r.ctypes.data if slot is None else scalars[dt].ctypes.data + slot * dt.itemsize
                     for r, (_, dt, _), slot in zip(results, self.outputs, self.slots))
        if self.scratch is not None:
            scratch = np.empty(self.scratch)
            cargs.append(scratch.ctypes.data)
        self.fn(*cargs)
        return tuple(r if slot is None else scalars[dt][slot]
                     for r, (_, dt, _), slot in zip(results, self.outputs, self.slots))

    def numpy_twin(self):
        """The loop's equations as numpy lines, a function of the same operands."""
        if self._twin is None:
            params = [f"v{x.n}" if type(x) is Var else f"_k{j}" for j, x in enumerate(self._operands)]
            lines = [f"def {self.name}_numpy({', '.join(params)}):",
                     *(f"    v{e.outputs[0].n} = {eqn_source(e, self._ns)}" for e in self.group.eqns),
                     f"    return ({''.join(f'v{y.n}, ' for y, _, _ in self.outputs)})"]
            exec(builtins.compile("\n".join(lines) + "\n", f"<ad.compiler.fused {self.name}_numpy>", "exec"), self._ns.globals)
            self._twin = self._ns.globals[f"{self.name}_numpy"]
        return self._twin


def _slots(parts: list, home: dict) -> tuple[dict, int]:
    """A scratch slot per value a later part reads, and how many slots: a slot is reused once
    every part that reads its value has run."""
    last = {}
    for q, part in enumerate(parts):
        for e in part:
            last.update((x, q) for x in e.inputs if type(x) is Var and home.get(x, q) < q)
    slots, free, busy, count = {}, [], [], 0       # busy: a heap of (the last part reading it, slot)
    for q, part in enumerate(parts):
        while busy and busy[0][0] < q:
            free.append(heapq.heappop(busy)[1])
        for y in (e.outputs[0] for e in part if e.outputs[0] in last):
            if not free:
                free.append(count)
                count += 1
            slots[y] = free.pop()
            heapq.heappush(busy, (last[y], slots[y]))
    return slots, count


def kernel(name: str, group: Group, needed: set, ns) -> tuple[Kernel, list]:
    """The C function of a group (and of its parts if it is split), and the driver's sources
    of its operands."""
    n = math.prod(group.shape)
    parts = [group.eqns[k:k + PART] for k in range(0, len(group.eqns), PART)]
    split = len(parts) > 1
    home = {e.outputs[0]: p for p, part in enumerate(parts) for e in part}
    slots, n_slots = _slots(parts, home) if split else ({}, 0)
    width = min(BLOCK, n)     # a split loop's elements at a time: a constant, so no remainder loop
    sums = [e.outputs[0] for e in group.eqns if e.prim in SUMS]
    outputs = [(y, np.dtype(y.aval.dtype), tuple(y.aval.shape)) for y in sorted(needed & group.made, key=lambda v: v.n)]
    params, names, operands, inputs, arrays = [], [], [], [], {}

    def operand(x) -> tuple:
        """The kernel's parameter for an operand: (local name, C type, pointer or None, index)."""
        key = x if type(x) is Var else id(x.value)
        if key not in arrays:
            aval = x.aval if type(x) is Var else x.value
            dt, shape = np.dtype(aval.dtype), tuple(aval.shape)
            local = f"v{x.n}" if type(x) is Var else f"k{len(arrays)}"
            inputs.append((dt, math.prod(shape), shape == ()))
            operands.append(x)
            pointer = None if shape == () else "p" + local[1:] if type(x) is Var else f"{local}p"
            params.append(f"{CTYPES[dt]} {local}" if pointer is None else f"const {CTYPES[dt]} *{pointer}")
            names.append(local if pointer is None else pointer)
            arrays[key] = (local, CTYPES[dt], pointer, index(shape, group.shape) if n > 1 else "0")
        return arrays[key]

    def lines_of(p: int, part: list) -> list:
        pre, body, here = [], [], set()

        def read(x, single: bool = False) -> str:
            if type(x) is not Var and (not isinstance(x.value, np.ndarray) or x.value.size == 1):
                value = x.value.reshape(-1)[0] if isinstance(x.value, np.ndarray) else x.value
                return _c_literal(value, single or getattr(value, "dtype", None) == np.float32)
            if type(x) is Var and x in group.made:
                if home[x] != p and f"v{x.n}" not in here:     # left by an earlier part
                    here.add(f"v{x.n}")
                    body.append(f"{CTYPES[x.aval.dtype]} v{x.n} = s[{slots[x] * width}{' + j' * (n > 1)}];")
                return f"v{x.n}"
            local, ctype, pointer, at = operand(x)
            if pointer is not None and local not in here:
                here.add(local)
                (pre if at == "0" else body).append(f"{ctype} {local} = {pointer}[{at}];")
            return local

        for e in part:
            y = e.outputs[0]
            if e.prim in SUMS:
                pre.append(f"double v{y.n} = 0;  /* summed in double */")
                x = read(e.inputs[0])      # the last block of a split loop overlaps: sum its new elements
                body.append(f"v{y.n} += {f'j >= skip ? {x} : 0.0' if split and n > 1 else x};{_c_comment(e)}")
            else:
                single = _single(e)
                sources = [read(x, single) for x in e.inputs]
                body.append(f"{CTYPES[y.aval.dtype]} v{y.n} = {SPELLINGS[e.prim].format(*sources)};{_c_comment(e)}")
        mine = [y for y, _, _ in outputs if home[y] == p]
        at = "i" if n > 1 else "0"
        stores = [f"p{y.n}[{at}] = v{y.n};" for y in mine if y not in group.sums]
        stores += [f"s[{slots[y] * width}{' + j' * (n > 1)}] = v{y.n};" for y in leaving[p]]
        post = [f"acc[{sums.index(y)}] += v{y.n};" if split else f"p{y.n}[0] = v{y.n};"
                for y in (e.outputs[0] for e in part if e.prim in SUMS) if split or y in needed]
        if n == 1:
            return pre + body + stores + post
        summed = [f"v{e.outputs[0].n}" for e in part if e.prim in SUMS]
        head = f"for (long j = 0; j < {width}; j++) {{" if split else "for (long i = 0; i < n; i++) {"
        return [*pre, "#pragma omp simd" + (f" reduction(+:{', '.join(summed)})" if summed else ""), head,
                *(["    long i = lo + j;"] if split else []), *(f"    {s}" for s in body + stores), "}", *post]

    leaving = [[] for _ in parts]      # per part, the values it leaves to later ones
    for y in sorted(slots, key=lambda v: v.n):
        leaving[home[y]].append(y)
    texts = [lines_of(p, part) for p, part in enumerate(parts)]
    params += [f"{CTYPES[dt]} *p{y.n}" for y, dt, _ in outputs]
    names += [f"p{y.n}" for y, _, _ in outputs]
    if not split:
        head = f"/* {name}: {len(group.eqns)} equations{' in one loop' * (n > 1)} */"
        lines = [head, f"void {name}({', '.join(['long n'] * (n > 1) + params)}) {{", *(f"    {s}" for s in texts[0]), "}"]
    else:
        extra = ["double *s"] + ["double *acc"] * bool(sums)
        lines = [f"/* {name}: {len(group.eqns)} equations{' in one loop' * (n > 1)}, in {len(parts)} functions "
                 f"of up to {PART}{f' run over {width} elements at a time' * (n > 1)} */"]
        for p, text in enumerate(texts):
            lines += [f"static __attribute__((noinline)) void {name}_{p}"
                      f"({', '.join(['long lo', 'long skip'] * (n > 1) + params + extra)}) {{",
                      *(f"    {s}" for s in text), "}"]
        calls = [f"{name}_{p}({', '.join(['start', 'lo - start'] * (n > 1) + names + ['s'] + ['acc'] * bool(sums))});"
                 for p in range(len(parts))]
        if n > 1:       # the last block ends at n, over elements the one before ran too
            calls = [f"for (long lo = 0; lo < n; lo += {width}) {{",
                     f"    long start = lo + {width} <= n ? lo : n - {width};", *(f"    {c}" for c in calls), "}"]
        lines += [f"void {name}({', '.join(['long n'] * (n > 1) + params + ['double *s'])}) {{",
                  *([f"    double acc[{len(sums)}] = {{0}};"] if sums else []), *(f"    {c}" for c in calls),
                  *(f"    p{y.n}[0] = acc[{sums.index(y)}];" for y, _, _ in outputs if y in group.sums), "}"]
    scratch = n_slots * width if split else None
    return Kernel(name, group, "\n".join(lines) + "\n", inputs, outputs, ns, operands, scratch), operands
