"""Compiling a tape to straight-line numpy source. The source is shown to learners and executed
for speed: a compiled gradient is, by construction, a hand-written gradient. This module plans
the lines (what is written into what, which names are reused, what is deleted) and writes the
function; how a line spells an equation, an operand or a constant is ``ad.compiler.emit``'s,
which the fused backend's driver shares.

A short tape (at most ``LONG`` equations: the ones people read line by line, in the docs and
notebooks) is one line per equation, ``v7`` for ``%7``, a comment with the provenance. Where
the scope (``Eqn.scope``: the user's calls) changes, a comment line names the new one, ``# in
layer#2`` (``# top level`` back in the traced function; a line holding several equations is in
the scope they share). A long one is written as a person writes a long gradient, one line per
step of the loop::

    r1 = np.tanh(r0 * c_0_5)  # %3
    r151 = r151 * c_0_5 * (1 - r1 * r1)  # %900: pullback of %4 (multiply), %3 (tanh)

- a value read once, by the same user line (the same ``Eqn.source``, in the same section), is
  written into its reader's expression (``_plan``; a pullback into another's line only if all of
  it fits; at most ``INLINE`` equations a line; parentheses where Python's precedence needs them);
- names of dead values are reused (``_registers``), so a value dies when its name is taken, with
  no ``del`` line (large ones are still deleted after their last read); the comment names the
  line's tape variable ``%N`` and the pullbacks in it: the link to the tape and its listing;
- a large temporary (``FREE_BYTES``) that an elementwise ufunc reads last is written over by it,
  ``v9 = np.add(v8, v1, out=v8)`` (``_in_place``), as numpy itself does with a temporary inside
  one expression (``np.tanh(x @ W + b)``);
- a float constant among float64 arrays is a read-only 0-d array named for its value (``c_0_9``
  is 0.9, ``c_m1em05`` is -1e-05): numpy converts a Python float operand on every call, about
  0.3 us, which doubles the cost of an operation on a small array.
- the numpy ufuncs and ``math`` functions it calls more than once are made locals in its first
  line (``cos, exp, sin = np.cos, np.exp, np.sin``, ``_hoisted``), as a hand-written inner loop
  does: a call through a module attribute costs 30-40 ns more;
- hundreds of lines that repeat but for their register numbers (an unrolled loop of the user's)
  are written back as a loop (``ad.compiler.reroll``): Python compiles a line in about 11 us, half the
  first call of the 20,000-op chain, and a loop of numpy calls costs 0.06 us a step more.

Why (measured side by side with the one-line-per-equation code, machine shared and loaded):
Python compiles a statement in 10-20 us, and the 10,000-op chain's gradient (30,002 equations)
was 30,944 lines: now 10,007, generated and compiled 2x faster (0.89 -> 0.42 s); the same code
runs faster (a value dies as soon as its name is reused, into numpy's cache of small blocks:
the 2,000-op chain 1.26x faster at length 16, 1.04x at length 1000; bench.workloads' 240-op
vector, with the 0-d constants, 1.25x -> 0.9x the hand-written numpy gradient). The scalar
code (Python floats, ``is_scalar``) is written the same way (1.54x -> 1.3x the hand-written
``math`` gradient). ``python -m bench.bench_compile_time`` measures the compile stage.
"""
from __future__ import annotations

import builtins
import collections
import math
import re

import numpy as np

from .. import pytree
from ..errors import GuardError
from ..gradtape import GradTape
from ..origins import OriginKind
from ..passes.negations import signs
from ..scopes import common_prefix
from ..tape import Tape, Var, gc_paused
from .array_api import ArrayNamespace, namespace
from .examples import is_polymorphic
from .polymorphic import epilogue, prologue
from .emit import (REGISTER, SCALAR_DTYPES, UFUNC_REDUCES, Namespace, comment, eqn_source, guard_source,
                   operand_source, scope_note, value_source, written)
from .reroll import reroll


LONG = 200     # a tape of more equations is written compactly (the module docstring)
INLINE = 6     # at most this many equations in one line of a long tape



def _plan(tape: Tape, ns: Namespace) -> tuple[list[int] | range, dict[Var, int]]:
    """The line each equation is written in (its own index, or in a long tape the line of the
    reader it is written into), and where each named variable is last read (the line that
    reads it last; the tape's outputs: past the end; a value written into its reader has no name).

    A value is written into its reader if it is one value of a pure primitive, read once, by an
    equation of the same user line (``Eqn.source``) in the same section, forward or backward,
    and the line stays at most ``INLINE`` equations long; a value of one pullback goes into a
    line of another only if the line has room for all of its pullback's equations so far (so
    that a line is one step of the user's loop, ``g = g * 0.5 * (1 - t * t)``, not one and a
    half). One pass from the end: a value's readers come first."""
    eqns = tape.eqns
    end = len(eqns)
    last: dict[Var, int] = {x: end for x in tape.outputs if type(x) is Var}
    if not ns.compact:
        for i, e in enumerate(eqns):
            for x in e.inputs:
                if type(x) is Var and last.get(x) != end:
                    last[x] = i
        return range(end), last
    n_forward = tape.n_forward if isinstance(tape, GradTape) else end
    runs, so_far = [0] * end, [1] * end      # eqn -> its run (user line), its index in its pullback
    run = 0
    for start, stop in ((0, n_forward), (n_forward, end)):          # no run spans both sections
        source, origin = _NOWHERE, None
        for i in range(start, stop):
            e = eqns[i]
            o, s = e.origin, e.source
            if s != source:
                run += 1
            elif o is origin or o.of is origin.of and o.kind == origin.kind is not OriginKind.PRIMAL \
                    and o.rule == origin.rule:
                so_far[i] = so_far[i - 1] + 1
            runs[i] = run
            source, origin = s, o
    once: dict[Var, int] = {}                 # value -> its reader, while it has one (until defined)
    line, width = [0] * end, [1] * end        # eqn -> its line, line -> its length
    spellings = ns.spellings
    for i in range(end - 1, -1, -1):
        e = eqns[i]
        at = i
        r = once.pop(v := e.outputs[0], None)
        if r is not None and runs[r] == runs[i] and spellings[e.prim].writable:
            reader, into = eqns[r], line[r]
            takes = spellings[reader.prim].takes          # the reader's slots that take an expression
            if width[into] + (1 if r - i < so_far[r] else so_far[i]) <= INLINE \
                    and (takes is None or reader.inputs.index(v) in takes):
                at = into
                width[at] += 1
                del last[v]                   # it has no name: it lives inside the expression
        line[i] = at
        for x in e.inputs:
            if type(x) is Var:
                read = last.get(x)
                if read is None:
                    last[x] = at
                    once[x] = i
                else:
                    once.pop(x, None)
                    if at > read:
                        last[x] = at
    return line, last


_NOWHERE = object()     # the source before a section's first equation: unlike any other


def is_scalar(tape: Tape) -> bool:
    """Can the tape be compiled to Python float arithmetic: every value 0-d float64 or bool,
    every equation a guard or of a primitive that declares its ``scalar_spelling``? (A loop
    that stops at the first array: Compiled asks this of every tape.)"""
    if not tape.eqns or not all(v.aval.shape == () and v.aval.dtype in SCALAR_DTYPES for v in tape.inputs):
        return False
    for e in tape.eqns:
        if e.prim.kind != "guard" and e.prim.scalar_spelling is None:
            return False
        for v in e.outputs:
            if v.aval.shape != () or v.aval.dtype not in SCALAR_DTYPES:
                return False
    return True


@gc_paused
def generate(tape: Tape, name: str = "f", scalar: bool = False, xp=None) -> tuple[str, dict]:
    """(source, globals) of a Python function computing the tape: numpy code, or with
    ``scalar`` (see ``is_scalar``) Python float code, whose results are numpy float64 scalars as
    numpy's would be, or with ``xp`` code over that array namespace (``ad.compiler.array_api``,
    which refuses here a tape the namespace cannot run, naming the tape's own equations). numpy
    code has its negations moved first (``signs``: exact, it only drops operations)."""
    polymorphic = is_polymorphic(tape)           # in the number of examples: ad.compiler.polymorphic
    if xp is None and not polymorphic:           # (its meta["examples"] describes the tape itself)
        tape = signs(tape)
    eqns = tape.eqns
    ns = Namespace(scalar, compact=len(eqns) > LONG) if xp is None else ArrayNamespace(xp, compact=len(eqns) > LONG)
    head = prologue(tape, ns) if polymorphic else []        # (for Dask, refuses first what needs all of them)
    if xp is not None:
        ns.check(tape)
    line, last = _plan(tape, ns)
    reuse = scalar or ns.compact
    lines = [f"def {name}({', '.join(f'v{v.n}' for v in tape.inputs)}):", *head]
    zero_d = [v for v in tape.inputs if v.aval.shape == () and v.aval.dtype.kind in "fc"]
    if not scalar and zero_d and xp is None:
        lines.append(f"    {', '.join(f'v{v.n}' for v in zero_d)} = "
                     f"{', '.join(f'{value_source(v.aval.dtype, ns)}(v{v.n})' for v in zero_d)}"
                     "  # numpy scalars: numpy's arithmetic on Python floats (x / 0.0 is inf)")
    dying, dead = _last_reads(tape, last)
    if reuse:
        ns.names = names = _registers(tape, last, line, dying, dead)
    into = _in_place(tape, line, last) if xp is None and not scalar and not polymorphic else {}
    grad = isinstance(tape, GradTape)
    n_forward = tape.n_forward if grad else len(eqns)
    exprs: dict[Var, tuple[str, int]] = {}       # the sources written into a later line
    origins: dict[int, list] = {}                # line -> the backward origins written into it
    rolled = ns.compact and not scalar           # then the scope notes go to reroll, apart
    notes: dict[int, str] = {}                   # (rolled) line of lines[1:] -> its scope's note
    scopes: dict[int, tuple] = {}                # line -> the scope its written-in equations share
    top = note = scope_note(())
    scope_now, scoped = (), False                # the scope of the last line; was any other's?
    spellings = ns.spellings
    if n_forward:
        lines.append("    # forward")
    for i, e in enumerate(eqns):
        if i == n_forward and grad:
            lines.append("    # backward")
        spelling, origin = spellings[e.prim], e.origin
        out = into.get(i)
        rhs = guard_source(e, ns) if spelling.guard else eqn_source(
            e, ns, exprs, spelling, None if out is None else names[out] if reuse else f"v{out.n}")
        if (at := line[i]) != i:
            exprs[e.outputs[0]] = (rhs, spelling.precedence)
            if origin.kind is not OriginKind.PRIMAL:
                seen = origins.get(at)
                if seen is None:
                    origins[at] = [origin]
                elif seen[-1] is not origin:
                    seen.append(origin)
            shared = scopes.get(at)
            scopes[at] = e.scope if shared is None else common_prefix(shared, e.scope)
            continue
        scope = e.scope
        if scopes:
            shared = scopes.pop(i, None)
            if shared is not None:
                scope = common_prefix(shared, scope)
        if scope != scope_now:
            scope_now, note, scoped = scope, scope_note(scope), True
            if not rolled:
                lines.append(note)
        if rolled:
            notes[len(lines) - 1] = note
        outs = e.outputs
        if len(outs) == 1:
            lhs = (names[outs[0]] if reuse else f"v{outs[0].n}") + ("," if e.prim.multiple_results else "")
        else:
            lhs = ", ".join(operand_source(v, ns) for v in outs)
        if reuse:
            seen = origins.pop(i, None)
            if seen is not None:
                if seen[-1] is not origin:
                    seen.append(origin)
            elif origin.kind is not OriginKind.PRIMAL:
                seen = (origin,)
            lines.append(f"    {lhs} = {rhs}  # {comment(outs, seen)}")
        elif origin.kind is not OriginKind.PRIMAL:
            lines.append(f"    {lhs} = {rhs}  # {origin.describe()}")
        else:
            lines.append(f"    {lhs} = {rhs}")
        deleted = dead[i]
        if deleted:
            lines.append(f"    del {', '.join(operand_source(v, ns) for v in deleted)}")
    inputs = set(tape.inputs)
    outs = ", ".join(_output_src(x, ns, inputs) for x in tape.outputs)
    if polymorphic:
        lines.append(epilogue(tape, outs, ns))
    lines.append(f"    return ({outs}{',' if len(tape.outputs) == 1 else ''})")
    if xp is not None:                    # the device and the constants, known once all is written
        preamble = ns.preamble(tape)
    elif reuse:
        preamble = _hoisted(lines, ns.globals)
    else:
        preamble = []
    if preamble:
        lines[1:1] = preamble
        notes = {k + len(preamble): note for k, note in notes.items()}
    # registers and the comments' %N are holes (ad.compiler.emit): a long tape's numpy code is
    # rolled from them, and every text is written as a reader sees it
    if rolled:
        per_line = [notes.get(k) for k in range(len(lines) - 1)] if scoped else None
        return f"{lines[0]}\n{reroll(lines[1:], ns.globals, per_line, top)}\n", ns.globals
    return written("\n".join(lines)) + "\n", ns.globals


_MODULE_CALL = re.compile(r"\b(np|math)\.([a-z]\w*)(?=\()")
HOIST = 2        # a numpy ufunc or math function called this often in long code is made a local


def _hoisted(lines: list[str], taken: dict) -> list[str]:
    """The line making locals of the numpy ufuncs and ``math`` functions that the code of a long
    tape calls repeatedly (``sin, exp = np.sin, np.exp``), as a hand-written inner loop does;
    ``lines`` then call them by the local name. A call through a module attribute costs 30-40 ns
    more than through a local, 10-15 % of a ufunc call on a 16-element array (measured: the
    240-op vector's gradient 2.5 % faster). Names of the code's globals and builtins are left."""
    modules = {"np": np, "math": math}
    counts: collections.Counter = collections.Counter()
    for line in lines[1:]:
        code = line.partition("  #")[0]
        counts.update(m.groups() for m in _MODULE_CALL.finditer(code))
    hoisted = {}
    for (module, name), n in sorted(counts.items(), key=lambda item: item[0][1]):
        f = getattr(modules[module], name, None)
        if (n >= HOIST and (isinstance(f, np.ufunc) or module == "math" and callable(f))
                and name not in taken and not hasattr(builtins, name) and name not in hoisted):
            hoisted[name] = module
    if not hoisted:
        return []
    calls = re.compile(r"\b(" + "|".join(f"{m}\\.{n}" for n, m in hoisted.items()) + r")(?=\()")
    for k in range(1, len(lines)):
        code, mark, note = lines[k].partition("  #")
        lines[k] = calls.sub(lambda m: m[0].partition(".")[2], code) + mark + note
    return [f"    {', '.join(hoisted)} = {', '.join(f'{m}.{n}' for n, m in hoisted.items())}"
            "  # called by a local name: faster than an attribute"]


def _output_src(x, ns: Namespace, inputs: set) -> str:
    """An output; in scalar code a computed float as the numpy float64 numpy would give."""
    src = operand_source(x, ns)
    if ns.scalar and type(x) is Var and x.aval.dtype == np.float64 and x not in inputs:
        return f"np.float64({src})"
    return src


def _registers(tape: Tape, last: dict[Var, int], line: list[int] | range, dying: list,
               dead: list) -> dict[Var, str]:
    """Names that reuse a dead value's name (``r3 = r3 * 0.9``), as a hand-written gradient
    does, for scalar code and long tapes (the tape's own names are in the comments). A Python
    frame with one local per equation, thousands of them, is slow to make and keeps every value
    alive: on Python floats 1.7x slower (bench.workloads' scalar workload); on small arrays a
    new one misses numpy's cache of small blocks (the 2,000-op chain of length 16 is 1.26x
    faster), and ``del`` lines cost Python as much to compile as the lines they free. A line's
    values take the names of the small values it reads last; a large one's name is free after
    its ``del`` (``_last_reads``). A register is written as a hole (``ad.compiler.emit``)."""
    names = {v: f"v{v.n}" for v in tape.inputs}
    free, n = [], 0
    for i, e, at in zip(range(len(line)), tape.eqns, line):
        if at != i:
            continue
        for x in dying[i]:
            free.append(names[x])
        for v in e.outputs:
            if free:
                names[v] = free.pop()
            else:
                names[v] = f"{REGISTER}{n}"
                n += 1
            if v not in last:                    # never read
                free.append(names[v])
        for x in dead[i]:
            free.append(names[x])
    return names


FREE_BYTES = 1 << 16   # temporaries at least this large are deleted right after their last use


def _in_place(tape: Tape, line: list[int] | range, last: dict[Var, int]) -> dict[int, Var]:
    """Per equation, the operand whose buffer it writes its result into (``np.add(v8, v1,
    out=v8)``): a large array (``FREE_BYTES``) of the result's shape and dtype, made on its own
    line by an elementwise ufunc or a matmul (a new array), which nothing reads after this line,
    itself or through a view (a transpose...), which no line that may return it again reads
    (``np.real``), and which is neither an input nor an output. numpy elides such a temporary
    inside one expression (``np.tanh(x @ W + b)`` adds into the product's array); a named one
    it cannot see. Measured: the MLP's numpy gradient 1.2 % faster."""
    keep = set(tape.inputs) | {x for x in tape.outputs if type(x) is Var}
    base: dict[Var, Var] = {}            # a declared view -> the value whose array it reads
    shared: set = set()                  # values some line may have returned (part of) again
    for e in tape.eqns:
        bases = {base.get(x, x) for x in e.inputs if type(x) is Var}
        if e.prim.returns_view and e.prim.returns_view(e.inputs):
            base.update((y, b) for y in e.outputs for b in bases)    # (one operand: its base)
        elif not _new_array(e):          # np.real(z) is a view of z, sum_to(x) can be x reshaped
            shared |= bases
    read_until: dict[Var, int] = {}      # a value -> the last line reading it or a view of it
    for v, i in last.items():
        b = base.get(v, v)
        read_until[b] = max(read_until.get(b, i), i)
    fresh: set = set()                   # the values made as new arrays, named
    into: dict[int, Var] = {}
    for i, (e, at) in enumerate(zip(tape.eqns, line)):
        if at != i or not _new_array(e):
            continue
        y = e.outputs[0]
        aval = y.aval
        if _elementwise(e) and aval.shape and aval.size * aval.dtype.itemsize >= FREE_BYTES:
            into_x = next((x for x in e.inputs if type(x) is Var and x in fresh and read_until.get(x) == i
                           and x not in keep and x not in shared and x.aval.shape == aval.shape
                           and x.aval.dtype == aval.dtype), None)
            if into_x is not None:
                into[i] = into_x
        fresh.add(y)
    return into


def _elementwise(e) -> bool:
    """Is ``e`` one elementwise ufunc call (it can write into an operand's array)?"""
    fn = e.prim.function
    return isinstance(fn, np.ufunc) and fn.signature is None and fn.nout == 1 and not e.params


def _new_array(e) -> bool:
    """Does ``e``'s line return a new array, sharing no operand's memory: an elementwise ufunc, a
    matmul, a reduction (a ufunc's reduce, the mean)?"""
    fn = e.prim.function
    return _elementwise(e) or fn is np.matmul or fn is np.mean or fn in UFUNC_REDUCES


def _last_reads(tape: Tape, last: dict[Var, int]) -> tuple[list, list]:
    """Per line (its equation's index), the temporaries it reads last: the small ones, and the
    large ones, deleted after it. Straight-line code would otherwise keep every intermediate
    alive to the end (a long tape's reused names, until the name is used again), so each new
    array lands in fresh memory and pays its page faults (measured: 2.7x slower on the CNN
    gradient of bench/bench_cnn.py). Small ones are not worth a line: Python compiles a
    statement in 10-20 us."""
    keep, end = set(tape.inputs), len(tape.eqns)
    large: dict[int, bool] = {}                  # id(aval) -> is it large (avals are shared)
    dying: list = [()] * end                     # line -> its small last reads (a list, if any)
    dead: list = [()] * end                      # line -> its large ones
    for v, i in last.items():
        if i >= end or v in keep:
            continue
        aval = v.aval
        big = large.get(id(aval))
        if big is None:
            big = large[id(aval)] = aval.size * aval.dtype.itemsize >= FREE_BYTES
        at = dead if big else dying
        if at[i]:
            at[i].append(v)
        else:
            at[i] = [v]
    return dying, dead


def _define(tape: Tape, name: str, scalar: bool, xp=None):
    source, namespace = generate(tape, name, scalar, xp)
    exec(compile(source, f"<ad.compile {name}>", "exec"), namespace)
    return source, namespace[name]


class Compiled:
    """A tape compiled to numpy source. ``.source`` is the code; calling it runs the code.

    A tape of Python floats (``is_scalar``) is compiled to ``math`` and float arithmetic, 5x
    faster than numpy on scalars (``scalar=False`` keeps numpy); where ``math`` raises on a
    value numpy answers with inf or nan (``math.log(0.0)``, ``1.0 / 0.0``, overflow), that call
    reruns the numpy code, so results are numpy's either way. With ``xp`` (an array namespace,
    ``ad.compiler.array_api.namespace``) the code runs on that library's arrays, on their device."""

    scalar = False           # compiled to Python float code
    numpy_fn = None          # then the numpy code too, made on its first use

    def __init__(self, tape: Tape, name: str = "f", scalar: bool | None = None, xp=None):
        self.tape, self.name = tape, name
        self.xp = None if xp is None else namespace(xp)
        if self.xp is not None and scalar:
            raise ValueError("scalar=True compiles Python float code, which runs on no array namespace: "
                             "drop scalar= or xp=")
        self.scalar = self.xp is None and (is_scalar(tape) if scalar is None else scalar and is_scalar(tape))
        self.source, self.fn = _define(tape, name, self.scalar, self.xp)

    def __call__(self, *args, cotangents=()):
        flat = self.tape.flatten_args(args)
        if not is_polymorphic(self.tape):      # (polymorphic code checks its sizes itself)
            self.tape.check_shapes(flat)
        return self.call_flat(flat + list(cotangents))

    def run(self, flat: list) -> tuple:
        """The generated function on the flat inputs."""
        if not self.scalar:
            return self.fn(*flat)
        try:
            return self.fn(*flat)
        except GuardError:
            raise
        except (ArithmeticError, ValueError):     # math refuses what numpy answers with inf/nan
            if self.numpy_fn is None:
                self.numpy_fn = _define(self.tape, self.name, False)[1]
            return self.numpy_fn(*flat)

    def call_flat(self, flat: list):
        """Run on the flat traced inputs; results shaped like the tape's outputs."""
        tape = self.tape
        out = list(self.run(flat))
        if isinstance(tape, GradTape):
            return tape.split(out)
        return pytree.unflatten(tape.out_tree, out) if tape.out_tree is not None else tuple(out)

    def __repr__(self) -> str:
        return self.source

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.source}```"


def compile_tape(tape: Tape, name: str = "f", scalar: bool | None = None, xp=None) -> Compiled:
    """Compile a (gradient) tape to a callable with readable ``.source``; a tape of Python
    floats to ``math`` unless ``scalar=False``; with ``xp``, to code over that array namespace."""
    return Compiled(tape, name, scalar, xp)