"""The public entry points of reverse mode: grad_tape, grad, value_and_grad, vjp (``ad.trace``
is ``ad.tracing``'s)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import pytree
from ..gradtape import GradTape
from ..reverse_mode.build import build, check_seed
from .cache import TapeCache, rules_current, rules_of
from ..reverse_mode.closure import eval_closure
from ..compiler.array_api import host_arguments, keyed_arguments, namespace, unkeyed
from ..compiler.codegen import compile_tape
from ..errors import NonDifferentiableError
from ..compiler.fused import Fused
from ..reverse_mode.lift import ExemplarRecorder
from ..reverse_mode.pullback import pullback_of
from ..passes import optimize as run_passes
from ..tape import Tape
from ..tracing import concrete, differentiated_inputs, has_tracer, input_values, trace_call
from .examples import polymorphic, value_and_grad as examples_value_and_grad

FORMS = ("lifted", "closure", "compiled", "fused")


def grad_tape(f, *args, argnums=0, holomorphic: bool = False, examples=None, examples_axis: int = 0) -> GradTape:
    """The joint gradient tape of a scalar function: forward section, lifted backward section.

    ``gt(*new_args)`` returns ``(value, gradients)``; ``gt.forward``/``gt.backward`` are the two
    sections; ``gt.fallbacks`` lists rules that could not be lifted.

    ``examples=``: the positions of the arguments that hold the examples (along
    ``examples_axis``); the tape, optimized, is then polymorphic in their number ``n``
    (``ad.transforms.examples``), and ``ad.compile`` writes it for any number of examples:

    >>> loss = lambda w, X, y: np.mean((X @ w - y) ** 2)
    >>> gt = ad.grad_tape(loss, np.zeros(2), np.ones((8, 2)), np.ones(8), examples=(1, 2))
    >>> g = ad.compile(gt)
    >>> "n = v1.shape[0]" in g.source, g(np.zeros(2), np.ones((3, 2)), np.ones(3))[1]
    (True, array([-2., -2.]))

    >>> gt = ad.grad_tape(lambda A, B: np.sum(A @ B), np.ones((2, 3)), np.ones((3, 2)))
    >>> print(gt.backward)                  # dA = dy @ B.T, visible; B is the residual
    { lambda %1:f64[3,2] ; let
        %4:f64[] = full dtype=f64 fill_value=1 shape=()    # output cotangent
        %5:f64[1,1] = reshape shape=(1, 1) %4    # pullback of %3 (sum)
        %6:f64[2,2] = broadcast_to shape=(2, 2) %5    # pullback of %3 (sum)
        %7:f64[2,3] = transpose axes=(1, 0) %1    # pullback of %2 (matmul)
        %8:f64[2,3] = matmul %6 %7    # pullback of %2 (matmul)
      in (%8) }
    >>> value, dA = gt(np.ones((2, 3)), np.ones((3, 2)))
    >>> dA
    array([[2., 2., 2.],
           [2., 2., 2.]])
    """
    if examples is not None:
        return polymorphic(lambda a: run_passes(_grad_tape(f, a, argnums, holomorphic)[1]), args, examples,
                           examples_axis)
    return _grad_tape(f, args, argnums, holomorphic)[1]


def primal_and_grad_tape(f, *args, argnums=0, holomorphic: bool = False) -> tuple[Tape, GradTape]:
    """``grad_tape``, and the primal tape (as ``ad.trace`` records it) the gradient tape was
    built from: one trace for a tool that shows both (the tape debugger), whose primal variables
    are the keys of ``gt.meta["primal_map"]``.

    >>> primal, gt = ad.transforms.gradients.primal_and_grad_tape(lambda x: np.sum(np.sin(x)), np.ones(3))
    >>> [e.prim.name for e in primal.eqns], set(gt.meta["primal_map"]) == set(primal.vars.values())
    (['sin', 'sum'], True)
    """
    return _grad_tape(f, args, argnums, holomorphic)


def _grad_tape(f, args, argnums, holomorphic: bool) -> tuple[Tape, GradTape]:
    """``grad_tape``, and the primal tape it was built from."""
    values = tuple(pytree.unflatten(s, [concrete(x) for x in pytree.flatten(a)[0]])
                   for a, s in ((a, pytree.flatten(a)[1]) for a in args))
    rec = ExemplarRecorder()
    primal = trace_call(f, values, argnums, rec)
    wrt, grad_tree, slots = differentiated_inputs(primal, argnums, len(args))
    return primal, build(primal, input_values(primal, values), wrt, grad_tree=grad_tree, grad_slots=slots,
                         holomorphic=holomorphic, exemplars=rec.exemplars)


@dataclass(frozen=True)
class _Traced:
    """What ``grad``'s cache keeps per trace: the tape (the gradient tape; the primal one for the
    closure form) and the rules it inlined (``ad.transforms.cache.rules_of``)."""
    tape: Tape
    rules: tuple

    @property
    def captures(self):
        return self.tape.captures


def value_and_grad(f, argnums=0, *, form: str = "lifted", optimize: bool = True,
                   max_traces: int = 8, holomorphic: bool = False, examples=None, examples_axis: int = 0,
                   xp=None):
    """``value_and_grad(f)(*args) -> (f(*args), gradient)``; see ``grad``.

    Tapes are cached per argument signature and, within one, per outcome of the guards the trace
    recorded (the branches it took): a call that breaks every cached tape's guards re-traces, so
    every call gets the eager answer. ``max_traces`` bounds the tapes kept per signature; past it
    the oldest is dropped (a function whose guards change on every call still works, and
    ``cache_info()`` says how often it re-traced and why).

    >>> ad.value_and_grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
    (np.float64(6.0), (3.0, 2.0))
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r}; choose one of {FORMS}")
    if xp is not None and form != "compiled":
        raise ValueError(f"xp= runs the compiled gradient on that array library: pass form='compiled' "
                         f"(not form={form!r})")
    xp = None if xp is None else namespace(xp)
    if examples is not None:     # one compiled program for any number of examples, Dask arrays too
        def gradient_tape(args):
            gt = _grad_tape(f, args, argnums, holomorphic)[1]
            return run_passes(gt) if optimize else gt
        return examples_value_and_grad(gradient_tape, examples, examples_axis, form, xp)
    cache = TapeCache(max_traces)

    def new_tape(args):
        if xp is not None:               # ad traces numpy code: on a host copy, once per trace
            args = host_arguments(args)
        if form == "closure":
            primal = trace_call(f, args, argnums)
            return _Traced(primal, rules_of(primal))
        primal, gt = _grad_tape(f, args, argnums, holomorphic)
        return _Traced(run_passes(gt) if optimize else gt, rules_of(primal))

    def run(entry, args, leaves):
        if not rules_current(entry.tape.rules):     # a rule registered since: the tape inlined the old one
            entry.tape, entry.compiled = new_tape(args), None
        tape = entry.tape.tape
        if form == "closure":
            return _closure(tape, args, argnums, holomorphic)
        traced = has_tracer(leaves) or bool(tape.captures)
        if form in ("compiled", "fused") and not traced:
            if entry.compiled is None:
                entry.compiled = compile_tape(tape, xp=xp) if form == "compiled" else Fused(tape)
            return entry.compiled.call_flat(tape.in_tree.select_traced(unkeyed(leaves) if xp else leaves))
        if xp is not None:
            raise NonDifferentiableError("xp= runs the compiled gradient on its arrays, which cannot run inside "
                                         "another trace (a transform of this gradient): call it without xp=")
        if tape.fallbacks and traced:
            raise NonDifferentiableError(
                "cannot differentiate through a gradient whose rules fell back to closures: "
                + "; ".join(map(str, tape.fallbacks)))
        return tape(*args)

    def value_and_grad_f(*args):
        return cache.call(args if xp is None else keyed_arguments(args), new_tape, run)
    value_and_grad_f.cache = cache
    value_and_grad_f.cache_info = cache.info
    return value_and_grad_f


def grad(f, argnums=0, *, form: str = "lifted", optimize: bool = True, max_traces: int = 8,
         holomorphic: bool = False, examples=None, examples_axis: int = 0, xp=None):
    """The gradient of a scalar function, shaped like the differentiated argument(s).

    form: "lifted" (default) runs the lifted backward tape; "closure" calls the rules' pullback
    closures in reverse; "compiled" runs generated numpy source (with ``xp=``, an array namespace
    or a shortcut such as ``"torch"``: the same code in the array API standard's names, run on
    that library's arrays where they are, the function traced on a host copy of the arguments
    once per trace, docs/arrays.md); "fused" runs it with its
    elementwise chains fused into C loops (docs/fused.md). All agree (to rounding). Tapes are
    cached per argument signature (and branch taken: see ``value_and_grad``), so repeated calls
    do not retrace; ``grad(f).cache_info()`` counts traces, hits and guard failures. Any output
    of size 1 is accepted (``f64[]``, ``f64[1]``, ``f64[1,1]``).

    Complex inputs (docs/complex.md): for a real ``f`` of complex ``z = x + iy`` the gradient is
    ``df/dx - i df/dy``, HIPS autograd's and JAX's convention (PyTorch returns its conjugate);
    ``holomorphic=True`` accepts a complex output of complex inputs and returns ``f'(z)``.

    ``examples=`` (with ``form="compiled"``): the positions of the arguments holding the
    examples along ``examples_axis``; one program, traced once, for any number of them
    (``grad_tape``'s), and on Dask arrays chunked along them a lazy Dask graph
    (``dask.compute(*grads)``; docs/arrays.md).

    >>> ad.grad(lambda x: np.sum(np.sin(x)))(np.zeros(3))
    array([1., 1., 1.])
    >>> ad.grad(lambda z: np.abs(z) ** 2)(1 + 2j)
    np.complex128(2-4j)
    >>> ad.grad(lambda z: z ** 3, holomorphic=True)(1j)
    np.complex128(-3+0j)
    """
    vg = value_and_grad(f, argnums, form=form, optimize=optimize, max_traces=max_traces,
                        holomorphic=holomorphic, examples=examples, examples_axis=examples_axis, xp=xp)

    def grad_f(*args):
        return vg(*args)[1]
    grad_f.cache = vg.cache
    grad_f.cache_info = vg.cache_info
    return grad_f


def _closure(primal: Tape, args, argnums, holomorphic: bool):
    """Closure form: the traced program's rules run eagerly and their pullbacks are called."""
    wrt, grad_tree, slots = differentiated_inputs(primal, argnums, len(args))
    flat = primal.flatten_args(args)
    check_seed(primal, wrt, holomorphic)
    out = primal.outputs[0]
    outs, grads = eval_closure(primal, flat, wrt, [np.ones(out.aval.shape, out.aval.dtype)])
    leaves = [None if s < 0 else grads[s] for s in slots]
    return pytree.unflatten(primal.out_tree, outs), pytree.unflatten(grad_tree, leaves)


def vjp(f, *args):
    """``y, pullback = ad.vjp(f, *args)``; ``pullback(dy)`` returns one cotangent per positional
    argument (shaped like it; None for leaves without a gradient).

    >>> y, pullback = ad.vjp(lambda x: x * 2.0, np.arange(3.0))
    >>> pullback(np.ones(3))
    (array([2., 2., 2.]),)
    """
    return pullback_of(f, args)
