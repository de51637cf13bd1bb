"""The fused backend of ``ad.compile``: each chain of elementwise equations, with the reshapes
and sums that read it, becomes one C loop (nested over its axes), compiled by the machine's C
compiler and called through ctypes; every other equation (matmul, indexing, row sums...) stays
the numpy line the numpy backend writes (``ad.compiler.emit``), in the Python driver that calls the loops.
This module groups the equations and writes the driver; ``ad.compiler.kernels`` writes each
loop's C (vectorised, long ones split into functions) and chooses by measurement between it and
numpy; ``ad.compiler.clib`` builds and caches the libraries (docs/fused.md).

Why C: measured on the 240-op length-16 gradient (docs/fused.md), one gcc-compiled loop runs in
a tenth of the hand-written numpy gradient and compiles in ~0.1 s, where numba needs ~2 s to
compile the same kernel (and 17 s for the 16-float one) and runs slower, and numexpr evaluates
one expression per call, so it cannot share the forward values with the backward pass.

What the loops compute follows numpy: IEEE arithmetic without fast-math, maximum and minimum
propagate NaN, sigmoid is split at 0 as ``ad.nn`` computes it. Sums add in loop order where numpy
adds pairwise, and the math functions are the C library's (or its vector variants'), so results
agree to rounding.
"""
from __future__ import annotations

import builtins
import ctypes
import math

import numpy as np

from ..gradtape import GradTape
from .clib import build
from .views import VIEWS, views
from .contractions import unroll_small_matmuls
from .codegen import FREE_BYTES, Compiled
from .emit import Namespace, eqn_source, guard_source, operand_source
from .calls import Kernel
from .kernels import CTYPES, PRELUDE, REDUCTIONS, SPELLINGS, SUMS, Group, kernel, reduced, refine, strides
from .products import Product, measured
from ..core_prims import astype_p, broadcast_to_p, reshape_p
from ..origins import OriginKind
from ..primitives import BY_FUNCTION
from ..passes.negations import signs
from ..tape import Tape, Var, gc_paused

MATMUL = BY_FUNCTION[np.matmul]     # its result is a new array, which a loop may write over

# -- grouping ---------------------------------------------------------------------------------

def _scalar(x) -> bool:
    return isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating))


def _reads_ok(e, loop: tuple) -> bool:
    for x in e.inputs:
        if type(x) is Var or isinstance(x.value, np.ndarray):
            aval = x.aval if type(x) is Var else x.value
            if aval.dtype not in CTYPES or strides(tuple(aval.shape), loop) is None:
                return False
        elif not _scalar(x.value):
            return False
    return True


def _keeps_last_axis(e) -> bool:
    """Does an axis reduction keep its operand's last axis (of more than one element)? Then the
    loop's lanes add into distinct elements and it vectorises; a row sum stays a numpy line."""
    where = reduced(e)
    return where is not None and next((s for s, extent in zip(where[::-1], e.inputs[0].aval.shape[::-1])
                                       if extent > 1), 0) != 0


def _loop_shape(e) -> tuple | None:
    """The shape of the loop ``e`` can join, or None if it cannot be fused (nor is an empty
    array's: a loop of no elements is numpy's to run, a kernel would read its first)."""
    if e.prim.kind != "pure" or len(e.outputs) != 1 or e.outputs[0].aval.dtype not in CTYPES:
        return None
    if e.prim in REDUCTIONS:      # to one number (sums), or along axes in float64 (into the output)
        x, size = e.inputs[0], e.outputs[0].aval.size
        if type(x) is Var and x.aval.dtype.kind == "f" and x.aval.size and (
                size == 1 and e.prim in SUMS
                or size > 1 and x.aval.dtype == e.outputs[0].aval.dtype == np.float64 and _keeps_last_axis(e)):
            return tuple(x.aval.shape)
        return None
    if e.prim not in SPELLINGS or (e.params and e.prim not in (astype_p, broadcast_to_p)):
        return None
    loop = tuple(e.outputs[0].aval.shape)
    return loop if math.prod(loop) and _reads_ok(e, loop) else None


def fuse(tape: Tape) -> list:
    """The tape's equations in an order to run them: equations, and Groups of two or more. An
    equation joins the open group if it loops over as many elements, in shapes one reshape of
    the other (``refine``: the loop runs over the finer), and reads none of its sums; a reshape
    of the group's value joins it (the flat order is the same); a pure equation that cannot be
    fused and reads nothing of the open group runs before it."""
    plan, group = [], None

    def close():
        if group is not None:
            plan.extend([group] if len(group.eqns) > 1 else group.eqns)

    for e in tape.eqns:
        loop = _loop_shape(e)
        if e.prim is reshape_p and group is not None and type(e.inputs[0]) is Var and e.inputs[0] in group.made \
                and e.inputs[0] not in group.sums and refine(tuple(e.outputs[0].aval.shape), group.shape):
            loop = tuple(e.outputs[0].aval.shape)      # a reshape of the loop's value: free
        shape = None if group is None or loop is None else refine(loop, group.shape)
        if loop is not None:
            if shape is None or any(type(x) is Var and x in group.sums for x in e.inputs):
                close()
                group = Group(refine(loop, loop))
            else:
                group.shape = shape
            group.eqns.append(e)
            group.made.update(e.outputs)
            if e.prim in REDUCTIONS:
                group.sums.add(e.outputs[0])
            continue
        if group is not None and (e.prim.kind != "pure" or any(type(x) is Var and x in group.made for x in e.inputs)):
            close()
            group = None
        plan.append(e)
    close()
    return plan


# -- the compiled object ----------------------------------------------------------------------

class Fused(Compiled):
    """A tape compiled by the fused backend: ``.source`` is the Python driver (numpy lines, and
    a call per fused loop), ``.kernel_source`` the C loops; calling it runs them; ``repr`` adds
    how each loop runs, in C or as numpy lines, as measured (``Kernel.choice``). ``optimise=False``
    compiles the loops at -O0 (``clib.flags``); ``link=False`` leaves them to ``compile_all``."""

    @gc_paused
    def __init__(self, tape: Tape, name: str = "f", link: bool = True, optimise: bool = True):
        self.tape, self.name = tape, name
        self.kernels, self.products, self.source, self._namespace = _generate(tape, name)
        self.kernel_source = PRELUDE + "\n" + "\n".join(k.source for k in self.kernels) \
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
        choices = "".join(f"/* {k.choice()} */\n" for k in self.kernels)
        products = "".join(f"# {p.choice()}\n" for p in self.products)
        return self.source + products + ("\n" + self.kernel_source + "\n" + choices if self.kernels else "")

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}```" + (f"\n\n```c\n{self.kernel_source}```" if self.kernels else "")


def _donatable(tape: Tape, plan: list) -> set:
    """The values whose buffers a loop may write its outputs into: new arrays (a matmul's, a
    loop's but the two sides of a reshape or broadcast, which its numpy lines return as views)
    read by that loop alone and neither the tape's input nor its output. Saves allocating (and faulting in) an array a call."""
    readers: dict = {}
    for item in plan:
        made = item.made if isinstance(item, Group) else set()
        for x in {x for e in (item.eqns if isinstance(item, Group) else (item,)) for x in e.inputs
                  if type(x) is Var and x not in made}:
            readers[x] = readers.get(x, 0) + 1
    fresh = set()
    for item in plan:
        if isinstance(item, Group):
            shared = {v for e in item.eqns if e.prim.returns_view for v in (e.inputs[0], e.outputs[0])}
            fresh.update(item.made - shared)
        elif item.prim is MATMUL:
            fresh.update(item.outputs)
    kept = set(tape.inputs) | {x for x in tape.outputs if type(x) is Var}
    return {x for x in fresh if readers.get(x) == 1 and x not in kept}


def _donate(k: Kernel, operands: list, donatable: set):
    """Which operand's buffer each output of an unsplit loop takes (``Kernel.donors``): never
    one it reads through a view (elsewhere than where it writes)."""
    if k.scratch is not None:      # a later part could read an operand an earlier one wrote over
        return
    viewed = {e.inputs[0] for e in k.views}
    free = [j for j, x in enumerate(operands) if type(x) is Var and x in donatable and x not in viewed]
    for o, (y, dt, shape) in enumerate(k.outputs):
        j = next((j for j in free if operands[j].aval.dtype == dt and tuple(operands[j].aval.shape) == shape), None)
        if j is not None and y not in k.group.sums:
            k.donors[o] = j
            free.remove(j)


def _generate(tape: Tape, name: str) -> tuple[list, list, str, dict]:
    """The kernels, the measured products, the driver's source and its globals (negations moved
    first: ``signs``; small matrix products unrolled into the loops: ``contractions``; a large
    one whose result only leaves the program in the faster orientation: ``products``)."""
    tape = unroll_small_matmuls(signs(tape))
    ns = Namespace()
    plan = fuse(tape)
    in_place = views(plan, {x for g in plan if isinstance(g, Group) for e in g.eqns for x in e.inputs
                            if type(x) is Var and x not in g.made})      # what loops may read in its base
    maker = {y: g for g in plan if isinstance(g, Group) for y in g.made}    # a loop's values
    read_outside: set = {x for x in tape.outputs if type(x) is Var}          # needed outside it
    for item in plan:
        for e in item.eqns if isinstance(item, Group) else (item,):
            read_outside.update(x for x in e.inputs if type(x) is Var and maker.get(x, item) is not item)
    n_forward = tape.n_forward if isinstance(tape, GradTape) else len(tape.eqns)
    kernels, statements = [], []            # (first equation's index, line, variables read)
    views_made = []                         # per statement: the view it makes, if it is one
    position = {id(e): i for i, e in enumerate(tape.eqns)}
    donatable = _donatable(tape, plan)
    read = {x for e in tape.eqns for x in e.inputs if type(x) is Var}
    products = []
    for item in plan:
        if isinstance(item, Group):
            k, operands = kernel(f"{name}_loop{len(kernels)}", item, read_outside, ns, in_place)
            _donate(k, operands, donatable)
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
            views_made.append(None)
        else:
            lhs = ", ".join(f"v{v.n}" for v in item.outputs)
            lhs += "," if len(item.outputs) == 1 and item.prim.multiple_results else ""
            rhs = eqn_source(item, ns) if item.prim.kind != "guard" else guard_source(item, ns)
            if item.prim is MATMUL and measured(item, read):
                products.append(Product(f"{name}_product{len(products)}", ns.globals))
                rhs = f"{ns.bind(products[-1], products[-1].name, numbered=False)}({', '.join(operand_source(x, ns) for x in item.inputs)})"
            line = f"{lhs} = {rhs}" + (f"  # {item.origin.describe()}" if item.origin.kind is not OriginKind.PRIMAL else "")
            statements.append((position[id(item)], line, [x for x in item.inputs if type(x) is Var]))
            views_made.append(item.outputs[0] if item.prim in VIEWS else None)
    wanted = {x for x in tape.outputs if type(x) is Var}     # a view only loops read is not made
    for k in reversed(range(len(statements))):
        if views_made[k] is not None and views_made[k] not in wanted:
            del statements[k]
        else:
            wanted.update(statements[k][2])
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
    return kernels, products, "\n".join(lines) + "\n", ns.globals


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
    n = sum(len(k.group.eqns) for k in first.values())
    library = build(PRELUDE + "\n" + text, n, optimise) if text else None
    for c in compiled:
        c.link(library)
    return compiled
