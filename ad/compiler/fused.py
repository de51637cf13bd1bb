"""The fused backend of ``ad.compile``: each chain of elementwise equations, with the full sums
that read it, becomes one C loop, compiled by the machine's C compiler and called through
ctypes; every other equation (matmul, indexing, reductions along an axis...) stays the numpy
line the numpy backend writes (``ad.compiler.emit``), in the Python driver that calls the loops.

Why C: measured on the 240-op length-16 gradient (docs/fused.md), one gcc-compiled loop runs in
a tenth of the hand-written numpy gradient and compiles in ~0.1 s, where numba needs ~2 s to
compile the same kernel (and 17 s for the 16-float one) and runs slower, and numexpr evaluates
one expression per call, so it cannot share the forward values with the backward pass.

Kernels are cached on disk by the hash of their source, the compiler and its flags
(``$TAPEVIZ_FUSED_CACHE``, else ``~/.cache/tapeviz/fused``): a kernel compiles once per machine;
the least recently used are deleted past ``$TAPEVIZ_FUSED_CACHE_MB`` (512 MB).
What the loops compute follows numpy: IEEE arithmetic without fast-math, maximum and minimum
propagate NaN, sigmoid is split at 0 as ``ad.nn`` computes it. Sums add in loop order where numpy
adds pairwise, so results agree to rounding.
"""
from __future__ import annotations

import builtins
import contextlib
import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

from ..gradtape import GradTape
from .codegen import FREE_BYTES, Compiled
from .emit import Namespace, eqn_source, guard_source, operand_source
from ..core_prims import add_p, astype_p, broadcast_to_p, positive_p, sum_to_p
from ..lib.elementwise import where_p
from ..nn.special import erf_p, relu_p, sigmoid_p
from ..primitives import BY_FUNCTION
from ..origins import OriginKind
from ..tape import Tape, Var, gc_paused

# No fast-math and no fused multiply-adds (-march=native would contract a*b+c): numpy's rounding.
FLAGS = ("-fno-math-errno", "-ffp-contract=off", "-shared", "-fPIC")
# gcc's optimiser is superlinear in a function's length (measured on the 16-float gradient, 8,623
# equations in one block: -O2 10 s, -O1 3.6 s, -O0 0.85 s of CPU), so long kernels skip it;
# they run ~3x slower, still ~0.06x of the hand-written numpy gradient.
OPTIMISE_UP_TO = 2000
CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float", np.dtype(np.bool_): "_Bool"}
_BY_VALUE = {np.dtype(np.float64): (ctypes.c_double, float), np.dtype(np.float32): (ctypes.c_float, float),
             np.dtype(np.bool_): (ctypes.c_bool, bool)}

# How a loop spells each primitive it fuses, over its operands {0}, {1}... (C variable names or
# literals). Keyed by the primitive object, as the ONNX exporter's table is.
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
    sigmoid_p: "{0} >= 0 ? 1.0 / (1.0 + exp(-{0})) : exp({0}) / (1.0 + exp({0}))",
    astype_p: "{0}",           # the assignment to the output's C type converts
    broadcast_to_p: "{0}",     # the operand's index broadcasts it
}
SUMS = (BY_FUNCTION[np.sum], sum_to_p)   # fused when they sum a loop's values to one number


class FusedUnavailable(RuntimeError):
    """The fused backend needs a C compiler, and none was found."""


# -- grouping ---------------------------------------------------------------------------------

def _index(shape: tuple, loop: tuple) -> str | None:
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
    index = f"i / {inner}" if inner > 1 else "i"
    return index if first == 0 or all(n == 1 for n in loop[:first]) else f"{index} % {block}"


def _scalar(x) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


def _reads_ok(e, loop: tuple) -> bool:
    for x in e.inputs:
        if type(x) is Var or isinstance(x.value, np.ndarray):
            aval = x.aval if type(x) is Var else x.value
            if aval.dtype not in CTYPES or _index(tuple(aval.shape), loop) is None:
                return False
        elif not _scalar(x.value):
            return False
    return True


def _loop_shape(e) -> tuple | None:
    """The shape of the loop ``e`` can join, or None if it cannot be fused (nor is an empty
    array's: a loop of no elements is numpy's to run, a kernel would read its first)."""
    if e.prim.kind != "pure" or len(e.outputs) != 1 or e.outputs[0].aval.dtype not in CTYPES:
        return None
    if e.prim in SUMS:
        x = e.inputs[0]
        if type(x) is Var and e.outputs[0].aval.size == 1 and x.aval.dtype.kind == "f" and x.aval.size:
            return tuple(x.aval.shape)
        return None
    if e.prim not in SPELLINGS or (e.params and e.prim not in (astype_p, broadcast_to_p)):
        return None
    loop = tuple(e.outputs[0].aval.shape)
    return loop if math.prod(loop) and _reads_ok(e, loop) else None


@dataclass
class Group:
    """Equations run in one loop over ``shape``; ``made``: their outputs; ``sums``: those
    summed in the loop (known only after it)."""
    shape: tuple
    eqns: list = field(default_factory=list)
    made: set = field(default_factory=set)
    sums: set = field(default_factory=set)


def fuse(tape: Tape) -> list:
    """The tape's equations in an order to run them: equations, and Groups of two or more. An
    equation joins the open group if it loops over the same shape and reads none of its sums;
    a pure equation that cannot be fused and reads nothing of the open group runs before it."""
    plan, group = [], None

    def close():
        if group is not None:
            plan.extend([group] if len(group.eqns) > 1 else group.eqns)

    for e in tape.eqns:
        loop = _loop_shape(e)
        if loop is not None:
            if group is None or loop != group.shape or any(type(x) is Var and x in group.sums for x in e.inputs):
                close()
                group = Group(loop)
            group.eqns.append(e)
            group.made.update(e.outputs)
            if e.prim in SUMS:
                group.sums.add(e.outputs[0])
            continue
        if group is not None and (e.prim.kind != "pure" or any(type(x) is Var and x in group.made for x in e.inputs)):
            close()
            group = None
        plan.append(e)
    close()
    return plan


# -- kernels ----------------------------------------------------------------------------------

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


class Kernel:
    """One fused loop: its C function, and the Python side of calling it. Array operands are
    passed by pointer (their size checked: a wrong size would read past the end), 0-d ones by
    value; each array output is a new array, the 0-d outputs of one dtype share one buffer.

    An operand in another memory order (a transposed view) would have to be copied, which
    costs more than fusing saves: then the loop's equations run as numpy lines instead
    (``numpy_twin``, made on first use), with the same results to rounding."""

    def __init__(self, name: str, group: Group, source: str, inputs: list, outputs: list, ns, operands: list):
        self.name, self.group, self.source = name, group, source
        n = math.prod(group.shape)
        self.n = n if n > 1 else None     # the loop's length, passed first (no loop for one element)
        self.inputs = inputs        # (dtype, size, by_value)
        self.outputs = outputs      # (variable, dtype, shape)
        self.scalars = {}           # dtype -> how many 0-d outputs
        self.slots = []             # per 0-d output: its offset in its dtype's buffer
        for _, dt, shape in outputs:
            self.slots.append(self.scalars.get(dt, 0) if shape == () else None)
            self.scalars[dt] = self.scalars.get(dt, 0) + (shape == ())
        self.fn, self._ns, self._operands, self._twin = None, ns, operands, None

    def link(self, library: ctypes.CDLL):
        self.fn = getattr(library, self.name)
        self.fn.restype = None
        self.fn.argtypes = [ctypes.c_long] * (self.n is not None) \
            + [_BY_VALUE[dt][0] if by_value else ctypes.c_void_p for dt, _, by_value in self.inputs] \
            + [ctypes.c_void_p] * len(self.outputs)

    def __call__(self, *args):
        held, cargs = [], [] if self.n is None else [self.n]
        for x, (dt, size, by_value) in zip(args, self.inputs):
            if by_value:
                cargs.append(_BY_VALUE[dt][1](x))
                continue
            if size > 1 and isinstance(x, np.ndarray) and not x.flags.c_contiguous:
                return self.numpy_twin()(*args)
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


def kernel(name: str, group: Group, needed: set, ns: Namespace) -> tuple[Kernel, list]:
    """The C function of a group, and the driver's sources of its operands."""
    n = math.prod(group.shape)
    params, operands, pre, body, post, arrays = [], [], [], [], [], {}
    inputs, outputs = [], []

    def read(x, single: bool = False) -> str:
        if type(x) is not Var and (not isinstance(x.value, np.ndarray) or x.value.size == 1):
            value = x.value.reshape(-1)[0] if isinstance(x.value, np.ndarray) else x.value
            return _c_literal(value, single or getattr(value, "dtype", None) == np.float32)
        if type(x) is Var and x in group.made:
            return f"v{x.n}"
        key = x if type(x) is Var else id(x.value)
        if key not in arrays:
            aval = x.aval if type(x) is Var else x.value
            dt, shape = np.dtype(aval.dtype), tuple(aval.shape)
            local = f"v{x.n}" if type(x) is Var else f"k{len(arrays)}"
            arrays[key] = local
            by_value = shape == ()
            inputs.append((dt, math.prod(shape), by_value))
            operands.append(x)
            if by_value:
                params.append(f"{CTYPES[dt]} {local}")
            else:
                pointer = "p" + local[1:] if type(x) is Var else f"{local}p"
                params.append(f"const {CTYPES[dt]} *{pointer}")
                index = _index(shape, group.shape) if n > 1 else "0"
                (pre if index == "0" else body).append(f"{CTYPES[dt]} {local} = {pointer}[{index}];")
        return arrays[key]

    for e in group.eqns:
        y = e.outputs[0]
        ctype = CTYPES[y.aval.dtype]
        if e.prim in SUMS:
            pre.append(f"double v{y.n} = 0;  /* summed in double */")
            body.append(f"v{y.n} += {read(e.inputs[0])};{_c_comment(e)}")
        else:
            single = _single(e)
            sources = [read(x, single) for x in e.inputs]
            body.append(f"{ctype} v{y.n} = {SPELLINGS[e.prim].format(*sources)};{_c_comment(e)}")
    for y in sorted(needed & group.made, key=lambda v: v.n):
        params.append(f"{CTYPES[y.aval.dtype]} *p{y.n}")
        outputs.append((y, np.dtype(y.aval.dtype), tuple(y.aval.shape)))
        in_loop = y not in group.sums and n > 1
        (body if in_loop else post).append(f"p{y.n}[{'i' if in_loop else 0}] = v{y.n};")
    if n > 1:
        params.insert(0, "long n")
    lines = [f"/* {name}: {len(group.eqns)} equations{' in one loop' * (n > 1)} */",
             f"void {name}({', '.join(params)}) {{", *(f"    {s}" for s in pre)]
    if n > 1:
        lines += ["    for (long i = 0; i < n; i++) {", *(f"        {s}" for s in body), "    }"]
    else:
        lines += [f"    {s}" for s in body]
    lines += [*(f"    {s}" for s in post), "}"]
    return Kernel(name, group, "\n".join(lines) + "\n", inputs, outputs, ns, operands), operands


# -- building ---------------------------------------------------------------------------------

def cache_dir() -> str:
    """Where compiled kernels are kept: ``$TAPEVIZ_FUSED_CACHE``, else the user's cache."""
    default = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tapeviz", "fused")
    return os.environ.get("TAPEVIZ_FUSED_CACHE") or default


_COMPILER: list = []   # (path, version line), found once per process


def compiler() -> tuple[str, str]:
    """The C compiler (``$CC``, else ``cc``) and its version, which keys the cache."""
    if not _COMPILER:
        cc = shutil.which(os.environ.get("CC", "cc"))
        if cc is None:
            raise FusedUnavailable(
                "ad.compile(backend='fused') compiles its loops with the machine's C compiler and found "
                f"none ({os.environ.get('CC', 'cc')!r} is not on PATH): install one (apt-get install gcc), "
                "point $CC at one, or use backend='numpy'")
        version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        _COMPILER.append((cc, version))
    return _COMPILER[0]


def build(source: str, n_eqns: int = 0, optimise: bool = True) -> ctypes.CDLL:
    """Compile C source to a shared library, or load it from the cache: the file is named by
    the hash of the source, the compiler's version and the flags, and written whole (renamed
    into place), so a stale or half-written library is never loaded."""
    cc, version = compiler()
    flags = ("-O2" if optimise and n_eqns <= OPTIMISE_UP_TO else "-O0", *FLAGS)
    key = hashlib.sha256("\0".join((version, *flags, source)).encode()).hexdigest()[:32]
    folder = cache_dir()
    path = os.path.join(folder, f"{key}.so")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            c_file, so_file = os.path.join(tmp, "kernels.c"), os.path.join(tmp, "kernels.so")
            with open(c_file, "w") as f:
                f.write(source)
            done = subprocess.run([cc, *flags, "-o", so_file, c_file, "-lm"], capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"ad.compile(backend='fused'): the C compiler refused the generated kernels "
                                   f"(a bug in ad.compiler.fused; use backend='numpy' meanwhile):\n{done.stderr[:2000]}")
            os.replace(so_file, path)
        prune(folder, keep=path)
    else:
        with contextlib.suppress(OSError):      # a read-only shared cache stays as it is
            os.utime(path)                      # recently used: pruned last
    return ctypes.CDLL(path)


def cache_limit() -> int:
    """The kernel cache's size bound in bytes: ``$TAPEVIZ_FUSED_CACHE_MB`` megabytes, else 512."""
    return int(float(os.environ.get("TAPEVIZ_FUSED_CACHE_MB", 512)) * 2**20)


def prune(folder: str, keep: str) -> None:
    """Delete the least recently used libraries until the cache fits ``cache_limit()``, so a
    long-lived cache does not grow without end; ``keep`` (the one just built) stays. A process
    that has a deleted library loaded keeps its mapping; the next one rebuilds it. Another
    process pruning at the same time may remove a file first: that is not an error."""
    entries = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".so") and entry.path != keep:
            with contextlib.suppress(FileNotFoundError):
                st = entry.stat()
                entries.append((st.st_mtime, st.st_size, entry.path))
    total = sum(size for _, size, _ in entries) + os.path.getsize(keep)
    for _, size, path in sorted(entries):
        if total <= cache_limit():
            break
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        total -= size


# -- the compiled object ----------------------------------------------------------------------

class Fused(Compiled):
    """A tape compiled by the fused backend: ``.source`` is the Python driver (numpy lines, and
    a call per fused loop), ``.kernel_source`` the C loops; calling it runs them. ``optimise=False``
    compiles the loops at -O0 (``build``); ``link=False`` leaves them to ``compile_all``."""

    @gc_paused
    def __init__(self, tape: Tape, name: str = "f", link: bool = True, optimise: bool = True):
        self.tape, self.name = tape, name
        self.kernels, self.source, self._namespace = _generate(tape, name)
        self.kernel_source = "#include <math.h>\n\n" + "\n".join(k.source for k in self.kernels) \
            if self.kernels else ""
        self.n_fused = sum(len(k.group.eqns) for k in self.kernels)
        self.fn = None
        if link:
            self.link(build(self.kernel_source, self.n_fused, optimise) if self.kernels else None)

    def link(self, library: ctypes.CDLL | None):
        """Bind the loops to their compiled functions, then define the driver."""
        for k in self.kernels:
            k.link(library)
        exec(builtins.compile(self.source, f"<ad.compile fused {self.name}>", "exec"), self._namespace)
        self.fn = self._namespace[self.name]

    def __repr__(self) -> str:
        return self.source + ("\n" + self.kernel_source if self.kernels else "")

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}```" + (f"\n\n```c\n{self.kernel_source}```" if self.kernels else "")


def _generate(tape: Tape, name: str) -> tuple[list, str, dict]:
    """The kernels, the driver's source and its globals."""
    ns = Namespace()
    plan = fuse(tape)
    maker = {y: g for g in plan if isinstance(g, Group) for y in g.made}    # a loop's values
    read_outside: set = {x for x in tape.outputs if type(x) is Var}          # needed outside it
    for item in plan:
        for e in item.eqns if isinstance(item, Group) else (item,):
            read_outside.update(x for x in e.inputs if type(x) is Var and maker.get(x, item) is not item)
    n_forward = tape.n_forward if isinstance(tape, GradTape) else len(tape.eqns)
    kernels, statements = [], []            # (first equation's index, line, variables read)
    position = {id(e): i for i, e in enumerate(tape.eqns)}
    for item in plan:
        if isinstance(item, Group):
            k, operands = kernel(f"{name}_loop{len(kernels)}", item, read_outside, ns)
            kernels.append(k)
            fn = ns.bind(k, k.name, numbered=False)
            outs = [f"v{y.n}" for y in sorted(read_outside & item.made, key=lambda v: v.n)]
            lhs = ", ".join(outs) + ("," if len(outs) == 1 else "")
            args = ", ".join(operand_source(x, ns) for x in operands)
            n, where = math.prod(item.shape), {position[id(e)] < n_forward for e in item.eqns}
            line = (f"{lhs} = {fn}({args})  # {len(item.eqns)} equations"
                    + (" (forward and backward)" if isinstance(tape, GradTape) and len(where) == 2 else "")
                    + " fused" + (f" into one loop over {n} elements" if n > 1 else ""))
            statements.append((position[id(item.eqns[0])], line, [x for x in operands if type(x) is Var]))
        else:
            lhs = ", ".join(f"v{v.n}" for v in item.outputs)
            lhs += "," if len(item.outputs) == 1 and item.prim.multiple_results else ""
            rhs = eqn_source(item, ns) if item.prim.kind != "guard" else guard_source(item, ns)
            line = f"{lhs} = {rhs}" + (f"  # {item.origin.describe()}" if item.origin.kind is not OriginKind.PRIMAL else "")
            statements.append((position[id(item)], line, [x for x in item.inputs if type(x) is Var]))
    last = {}
    for k, (_, _, reads) in enumerate(statements):
        for x in reads:
            last[x] = k
    keep = {x for x in tape.outputs if type(x) is Var} | set(tape.inputs)
    dead: dict[int, list] = {}
    for v, k in last.items():
        if v not in keep and v.aval.size * v.aval.dtype.itemsize >= FREE_BYTES:
            dead.setdefault(k, []).append(v)
    lines = [f"def {name}({', '.join(f'v{v.n}' for v in tape.inputs)}):"]
    section = None
    for k, (first, line, _) in enumerate(statements):
        here = "forward" if first < n_forward and section != "backward" else "backward"
        if isinstance(tape, GradTape) and here != section:
            lines.append(f"    # {here}")
            section = here
        lines.append(f"    {line}")
        if k in dead:
            lines.append(f"    del {', '.join(f'v{v.n}' for v in dead[k])}")
    outs = ", ".join(operand_source(x, ns) for x in tape.outputs)
    lines.append(f"    return ({outs}{',' if len(tape.outputs) == 1 else ''})")
    return kernels, "\n".join(lines) + "\n", ns.globals


def compile_all(tapes: list, name: str = "f", optimise: bool = True) -> list[Fused]:
    """Several tapes compiled with one run of the C compiler (``name0``, ``name1``...), each
    distinct loop once: the compiler's start-up (~0.07 s) is paid once. ``optimise=False``
    compiles at -O0: the same results (IEEE arithmetic either way), slower loops, a quarter of
    the compile time (the test suite's spec table: 2,161 loops, 4 s instead of 17 s)."""
    compiled = [Fused(t, f"{name}{k}", link=False) for k, t in enumerate(tapes)]
    first: dict[str, Kernel] = {}        # a loop's text with its name left out -> its first kernel
    for k in (k for c in compiled for k in c.kernels):
        k.name = first.setdefault(k.source.replace(k.name, "@"), k).name
    text = "\n".join(k.source for k in first.values())
    n = max((c.n_fused for c in compiled), default=0)
    library = build("#include <math.h>\n\n" + text, n, optimise) if text else None
    for c in compiled:
        c.link(library)
    return compiled
