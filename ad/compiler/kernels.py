"""A group of elementwise equations as one C loop (``kernel``): the fused backend's loops
(``ad.compiler.fused``, docs/fused.md); ``ad.compiler.calls`` is the Python side of calling one.

A loop runs as nested loops over its shape's axes, adjacent axes merged where every operand
allows (``collapse``), each operand read at constant strides along them, 0 where it broadcasts
(``strides``); reshapes inside it are free (``refine``), and sums along axes add into their
output at its strided index (``reduced``).

A loop of more than ``PART`` equations is split into C functions of ``PART`` equations: gcc's
optimiser is superlinear in a function's length (one function of the 16-float gradient's 8,623
equations: -O2 10 s of CPU, -O0 0.85 s) and its vectoriser gives up on a loop of a few thousand
statements; split, every loop builds optimised and vectorised. The split loop runs over blocks
of ``BLOCK`` elements, each part over the block, and the values one part leaves to a later one
wait in a scratch array of ``BLOCK`` elements per value (in the cache, where per-element arrays
of the whole length would go to memory).

A loop runs in C or as its equations' numpy lines, whichever measured faster on its first calls
(``calls.Kernel``); both give numpy's results to rounding.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from .calls import Kernel
from .views import LARGEST_VIEWED, affine
from ..core_prims import add_p, astype_p, broadcast_to_p, positive_p, reshape_p, sum_to_p
from ..lib.elementwise import where_p
from ..nn.special import erf_p, relu_p, sigmoid_p
from ..primitives import BY_FUNCTION
from ..origins import OriginKind
from ..tape import Lit, Var

PART = 100         # equations per C function of a split loop (docs/fused.md: measured)
BLOCK = 64         # elements a split loop runs through all its parts at a time

# What every library of kernels starts with: sin and cos declared const, as they are when gcc
# knows them as builtins (it does not where the loops vectorise: ``clib.vector_flags``).
PRELUDE = ("#include <math.h>\ndouble sin(double) __attribute__((const));\ndouble cos(double) __attribute__((const));\n"
           "float sinf(float) __attribute__((const));\nfloat cosf(float) __attribute__((const));\n")

CTYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float", np.dtype(np.bool_): "_Bool"}

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
# The functions a float32 loop calls in single precision (``sinf``: libmvec's 16 lanes where the
# double's has 8): those within 2 ulps of numpy's float32 results (measured on 2**20 operands
# each, glibc 2.36: tanh, expm1, log1p... 0, sin, cos, atanh 2). exp (4 ulps) and log (6) stay
# computed in double and rounded, as every other function.
FLOAT32_SPELLINGS = {BY_FUNCTION[uf]: _UFUNC_SPELLINGS[uf].replace("(", "f(", 1) for uf in (
    np.tanh, np.sin, np.cos, np.tan, np.expm1, np.log1p, np.exp2, np.log2, np.log10, np.cbrt, np.sinh, np.cosh,
    np.arcsin, np.arccos, np.arctan, np.arcsinh, np.arctanh) if uf in BY_FUNCTION}
SUMS = (BY_FUNCTION[np.sum], sum_to_p)   # fused when they sum a loop's values to one number
REDUCTIONS = (*SUMS, BY_FUNCTION[np.mean])   # fused along axes (float64): sums into their output


@dataclass
class Group:
    """Equations run in one loop over ``shape`` (no axis of length 1; the finest shape of its
    reshapes); ``made``: their outputs; ``sums``: the sums and reductions along axes made in
    the loop (known only after it)."""
    shape: tuple
    eqns: list = field(default_factory=list)
    made: set = field(default_factory=set)
    sums: set = field(default_factory=set)


def strides(shape: tuple, loop: tuple) -> tuple | None:
    """The element strides of a C-contiguous operand of ``shape`` along each axis of a loop over
    ``loop``: 0 along the axes it broadcasts over (and those of length 1); None if it does not
    broadcast to ``loop``."""
    if len(shape) > len(loop):
        return None
    aligned = (1,) * (len(loop) - len(shape)) + tuple(shape)
    if any(a not in (1, n) for a, n in zip(aligned, loop)):
        return None
    out, step = [], 1
    for a, n in zip(reversed(aligned), reversed(loop)):
        out.append(step if a == n > 1 else 0)
        step *= a
    return tuple(reversed(out))


def refine(a: tuple, b: tuple) -> tuple | None:
    """The coarsest shape both ``a`` and ``b`` are made of by splitting axes (no axis of length
    1), or None: the shape a loop runs over when a reshape joins it (a reshape keeps the flat
    order: (21632, 16) and (32, 13, 2, 13, 2, 16) give the latter; (2, 3) and (3, 2) none)."""
    if math.prod(a) != math.prod(b):
        return None
    cuts = set()
    for shape in (a, b):
        cuts.update(math.prod(shape[k:]) for k in range(len(shape) + 1))
    cuts = sorted(cuts)
    if any(q % p for p, q in zip(cuts, cuts[1:])):
        return None
    return tuple(q // p for p, q in zip(cuts, cuts[1:]))[::-1]


def restride(stride: tuple, shape: tuple, loop: tuple) -> tuple:
    """Strides along the axes of ``shape`` as strides along those of ``loop``, which splits each
    axis of ``shape`` into consecutive axes (``refine``)."""
    out, j = [], 0
    for s, extent in zip(stride, shape):
        axes = []
        while extent > 1:
            axes.append(loop[j])
            extent //= loop[j]
            j += 1
        out += [s * math.prod(axes[k + 1:]) for k in range(len(axes))]
    return tuple(out)


def context(e) -> tuple:
    """The shape against which an equation of a loop broadcasts its operands: its output's, its
    operand's for a sum."""
    return tuple((e.inputs[0] if e.prim in REDUCTIONS else e.outputs[0]).aval.shape)


def full_sum(e) -> bool:
    """Does ``e`` sum a loop's values to one number (an accumulator in the loop)?"""
    return e.prim in SUMS and e.outputs[0].aval.size == 1


def reduced(e) -> tuple | None:
    """Where an axis reduction (``sum_to``, ``np.sum`` or ``np.mean`` along axes, to more than
    one element) adds each element of its operand into its output: strides along the operand's
    axes, 0 along those it reduces; None for any other equation."""
    if e.prim not in REDUCTIONS or e.outputs[0].aval.size == 1:
        return None
    shape, params = context(e), dict(e.params)
    if e.prim is sum_to_p:
        return strides(tuple(params["shape"]), shape)
    axis = range(len(shape)) if params["axis"] is None else params["axis"]
    axes = {a % len(shape) for a in (axis if isinstance(axis, (tuple, range)) else (axis,))}
    return strides(tuple(1 if k in axes else extent for k, extent in enumerate(shape)), shape)


def collapse(loop: tuple, reads: list) -> tuple[tuple, list]:
    """The axes a loop over ``loop`` runs as nested loops, and each operand's strides along them
    (``reads``: strides along ``loop``'s axes): axes of length 1 dropped, and two adjacent axes
    merged into one where every operand is contiguous across them or broadcast along both, so
    that same-shape operands make one flat loop and a (256, 512) loop with a (512,) bias two."""
    dims, cols = [], [[] for _ in reads]
    for k, extent in enumerate(loop):
        if extent == 1:
            continue
        if dims and all(col[-1] == s[k] * extent for col, s in zip(cols, reads)):
            dims[-1] *= extent
            for col, s in zip(cols, reads):
                col[-1] = s[k]
        else:
            dims.append(extent)
            for col, s in zip(cols, reads):
                col.append(s[k])
    return tuple(dims), [tuple(col) for col in cols]


def at(stride: tuple, dims: tuple, flat: bool, offset: int = 0) -> str:
    """Where a loop over ``dims`` reads an operand of these strides (C), from ``offset`` on:
    ``i`` (the element's flat index: same shape), ``0`` (one element, read once before the
    loop), else the sum of the counters ``i0, i1...`` of the nested loops times the strides,
    or, in a loop over flat blocks (a split loop), of the axes' indices taken from ``i`` by
    division."""
    terms = []
    if stride == tuple(math.prod(dims[k + 1:]) for k in range(len(dims))) and any(stride):
        terms.append("i")
    else:
        for k, (s, extent) in enumerate(zip(stride, dims)):
            inner = math.prod(dims[k + 1:])
            counter = "i" if len(dims) == 1 else f"i{k}"      # a loop of one axis counts in i
            if s and not flat:
                terms.append(counter if s == 1 else f"{counter} * {s}")
            elif s:
                axis = f"i / {inner}" if k == 0 else f"i % {extent}" if inner == 1 else f"i / {inner} % {extent}"
                terms.append(axis if s == 1 else f"({axis}) * {s}")
    return " + ".join(terms + [str(offset)] * bool(offset)) or "0"


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


def _converted(source: str, x, dtype) -> str:
    """A bool operand as a number of ``dtype`` written as a select: gcc 12 vectorises no loop
    that converts a ``_Bool`` variable by assignment (measured: the ReLU pullback's loop)."""
    if type(x) is Var and x.aval.dtype == np.bool_ and dtype != np.bool_:
        one, zero = ("1.0f", "0.0f") if dtype == np.float32 else ("1.0", "0.0")
        return f"({source} ? {one} : {zero})"
    return source


def _c_comment(e) -> str:
    return f"  /* {e.origin.describe().replace('*/', '* /')} */" if e.origin.kind is not OriginKind.PRIMAL else ""


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


def kernel(name: str, group: Group, needed: set, ns, views: dict) -> tuple[Kernel, list]:
    """The C function of a group (and of its parts if it is split), and the driver's sources
    of its operands. ``views``: variable -> (base, indices in it, equations) of the operands
    the loop may read where their base holds them (``views.views``)."""
    n = math.prod(group.shape)
    parts = [group.eqns[k:k + PART] for k in range(0, len(group.eqns), PART)]
    split = len(parts) > 1
    home = {e.outputs[0]: p for p, part in enumerate(parts) for e in part}
    slots, n_slots = _slots(parts, home) if split else ({}, 0)
    width = min(BLOCK, n)     # a split loop's elements at a time: a constant, so no remainder loop
    sums = [e.outputs[0] for e in group.eqns if full_sum(e)]
    axis_sums = [e for e in group.eqns if reduced(e) is not None]
    outputs = [(y, np.dtype(y.aval.dtype), tuple(y.aval.shape)) for y in sorted(needed & group.made, key=lambda v: v.n)]
    params, names, operands, inputs, arrays = [], [], [], [], {}
    chains: dict = {}        # the view equations of the operands read through views, in order
    steps: dict = {}         # (view, equation) -> where the loop reads it in its base, or None

    def along(x, e) -> tuple:
        """Where an operand of ``e`` is read: the key of the array read (a view's base), its
        strides along the loop's axes, the offset of its first element."""
        shape = tuple((x.aval if type(x) is Var else x.value).shape)
        where = through(x, e)
        if where is not None:
            base = views[x][0]
            return (base if type(base) is Var else id(base.value), *where)
        return x if type(x) is Var else id(x.value), restride(strides(shape, context(e)), context(e), group.shape), 0

    def through(x, e) -> tuple | None:
        """Where a view operand of ``e`` is read in its base: strides, offset (``affine``)."""
        if type(x) is not Var or x not in views or n > LARGEST_VIEWED:
            return None
        if (x, id(e)) not in steps:
            at = np.broadcast_to(views[x][1], context(e)).reshape(group.shape)
            steps[x, id(e)] = affine(at)
        return steps[x, id(e)]

    found = list(dict.fromkeys(along(x, e) for e in group.eqns for x in e.inputs
                               if (x not in group.made if type(x) is Var else isinstance(x.value, np.ndarray))))
    found += [(e.outputs[0], restride(reduced(e), context(e), group.shape), 0) for e in axis_sums]
    dims, reads = collapse(group.shape, [st for _, st, _ in found])
    stride_of = dict(zip(found, reads))

    def target_of(e) -> tuple:
        """An axis sum's output's strides along the loop's (collapsed) axes."""
        return stride_of[e.outputs[0], restride(reduced(e), context(e), group.shape), 0]

    # an axis sum's output is zeroed before the loop, a mean's divided by its count after it
    zero = [f"for (long k = 0; k < n / {n // e.outputs[0].aval.size}; k++) p{e.outputs[0].n}[k] = 0;"
            for e in axis_sums]
    divide = [f"for (long k = 0; k < n / {n // e.outputs[0].aval.size}; k++) p{e.outputs[0].n}[k] /= "
              f"{n // e.outputs[0].aval.size};" for e in axis_sums if e.prim not in SUMS]
    nested = len(dims) > 1 and not split      # nested loops; a split loop runs over flat blocks

    def operand(x, e) -> tuple:
        """The kernel's parameter for an operand of ``e``: (local name, C type, pointer or None,
        index, read once); an operand read at two indices (through a reshape, or two views of
        one array) has a local name for each."""
        key, _, offset = where = along(x, e)
        if through(x, e) is not None:
            chains.update(dict.fromkeys(views[x][2]))
            x = views[x][0]
        if key not in arrays:
            aval = x.aval if type(x) is Var else x.value
            dt, shape = np.dtype(aval.dtype), tuple(aval.shape)
            local = f"v{x.n}" if type(x) is Var else f"k{len(arrays)}"
            inputs.append((dt, math.prod(shape), shape == ()))
            if type(x) is not Var and not x.value.flags.c_contiguous:     # a constant view (x.T): copied once
                x = Lit.of(np.ascontiguousarray(x.value))
            operands.append(x)
            pointer = None if shape == () else "p" + local[1:] if type(x) is Var else f"{local}p"
            params.append(f"{CTYPES[dt]} {local}" if pointer is None else f"const {CTYPES[dt]} *{pointer}")
            names.append(local if pointer is None else pointer)
            arrays[key] = (local, CTYPES[dt], pointer, {})
        local, ctype, pointer, locals_at = arrays[key]
        index = at(stride_of[where] if n > 1 else (), dims, split, offset)
        name = locals_at.setdefault(index, local if not locals_at else f"{local}_{len(locals_at)}")
        return name, ctype, pointer, index, n == 1 or not any(stride_of[where])

    def lines_of(p: int, part: list) -> list:
        pre, body, here = [], [], set()

        def read(x, e, single: bool = False) -> str:
            if type(x) is not Var and (not isinstance(x.value, np.ndarray) or x.value.size == 1):
                value = x.value.reshape(-1)[0] if isinstance(x.value, np.ndarray) else x.value
                return _c_literal(value, single or getattr(value, "dtype", None) == np.float32)
            if type(x) is Var and x in group.made:
                if home[x] != p and f"v{x.n}" not in here:     # left by an earlier part
                    here.add(f"v{x.n}")
                    body.append(f"{CTYPES[x.aval.dtype]} v{x.n} = s[{slots[x] * width}{' + j' * (n > 1)}];")
                return f"v{x.n}"
            local, ctype, pointer, index, once = operand(x, e)
            if pointer is not None and local not in here:
                here.add(local)
                (pre if once else body).append(f"{ctype} {local} = {pointer}[{index}];")
            return local

        for e in part:
            y = e.outputs[0]
            if reduced(e) is not None:       # added into its output where the loop's element goes
                x = read(e.inputs[0], e)
                target = at(target_of(e), dims, split)
                body.append(f"p{y.n}[{target}] += {f'j >= skip ? {x} : 0.0' if split else x};{_c_comment(e)}")
            elif e.prim in SUMS:
                pre.append(f"double v{y.n} = 0;  /* summed in double */")
                x = read(e.inputs[0], e)      # the last block of a split loop overlaps: sum its new elements
                body.append(f"v{y.n} += {f'j >= skip ? {x} : 0.0' if split and n > 1 else x};{_c_comment(e)}")
            else:
                single = _single(e)
                sources = [read(x, e, single) for x in e.inputs]
                for k in (1, 2) if e.prim is where_p else (0,) if e.prim is astype_p else ():
                    sources[k] = _converted(sources[k], e.inputs[k], y.aval.dtype)
                spelling = SPELLINGS[e.prim] if e.prim is not reshape_p else "{0}"     # a reshape keeps the flat order
                if single and y.aval.dtype == np.float32:
                    spelling = FLOAT32_SPELLINGS.get(e.prim, spelling)
                body.append(f"{CTYPES[y.aval.dtype]} v{y.n} = {spelling.format(*sources)};{_c_comment(e)}")
        mine = [y for y, _, _ in outputs if home[y] == p]
        element = "i" if n > 1 else "0"
        stores = [f"p{y.n}[{element}] = v{y.n};" for y in mine if y not in group.sums]
        stores += [f"s[{slots[y] * width}{' + j' * (n > 1)}] = v{y.n};" for y in leaving[p]]
        post = [f"acc[{sums.index(y)}] += v{y.n};" if split else f"p{y.n}[0] = v{y.n};"
                for y in (e.outputs[0] for e in part if full_sum(e)) if split or y in needed]
        if n == 1:
            return pre + body + stores + post
        summed = [f"v{e.outputs[0].n}" for e in part if full_sum(e)]
        simd = "#pragma omp simd" + (f" reduction(+:{', '.join(summed)})" if summed else "")
        # lanes must not add into one element: an axis sum whose output repeats along the
        # innermost loop (a row sum; any in a loop over flat blocks) runs that loop unvectorised
        if any(split or not target_of(e)[-1] for e in part if reduced(e) is not None):
            simd = "/* not vectorised: lanes would add into one element of an axis sum */"
        if split:
            return [*pre, simd, f"for (long j = 0; j < {width}; j++) {{", "    long i = lo + j;",
                    *(f"    {s}" for s in body + stores), "}", *post]
        if not nested:
            return [*pre, simd, "for (long i = 0; i < n; i++) {", *(f"    {s}" for s in body + stores), "}", *post]
        last, pad = len(dims) - 1, "    " * (len(dims) - 1)
        bounds = [f"n / {math.prod(dims[1:])}", *dims[1:]]
        flat = " + ".join(f"i{k} * {math.prod(dims[k + 1:])}" for k in range(last)) + f" + i{last}"
        return [*pre, *(f"{'    ' * k}for (long i{k} = 0; i{k} < {bounds[k]}; i{k}++) {{" for k in range(last)),
                pad + simd, f"{pad}for (long i{last} = 0; i{last} < {dims[last]}; i{last}++) {{",
                f"{pad}    long i = {flat};", *(f"{pad}    {s}" for s in body + stores),
                *(f"{'    ' * k}}}" for k in reversed(range(last + 1))), *post]

    leaving = [[] for _ in parts]      # per part, the values it leaves to later ones
    for y in sorted(slots, key=lambda v: v.n):
        leaving[home[y]].append(y)
    texts = [lines_of(p, part) for p, part in enumerate(parts)]
    params += [f"{CTYPES[dt]} *p{y.n}" for y, dt, _ in outputs]
    names += [f"p{y.n}" for y, _, _ in outputs]
    if not split:
        head = f"/* {name}: {len(group.eqns)} equations{' in one loop' * (n > 1)} */"
        lines = [head, f"void {name}({', '.join(['long n'] * (n > 1) + params)}) {{",
                 *(f"    {s}" for s in zero + texts[0] + divide), "}"]
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
                  *([f"    double acc[{len(sums)}] = {{0}};"] if sums else []), *(f"    {c}" for c in zero + calls + divide),
                  *(f"    p{y.n}[0] = acc[{sums.index(y)}];" for y, _, _ in outputs if y in sums), "}"]
    scratch = n_slots * width if split else None
    return Kernel(name, group, "\n".join(lines) + "\n", inputs, outputs, ns, operands, scratch, list(chains)), operands
