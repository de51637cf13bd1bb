"""The public entry points: trace, grad_tape, grad, value_and_grad, vjp."""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from . import pytree
from .backward import GradTape, build, check_seed, partition
from .cache import TapeCache, rules_current, rules_of
from .closure import eval_closure
from .codegen import compile_tape
from .errors import NonDifferentiableError, unwrapping_numpy
from .fused import Fused
from .lift import ExemplarRecorder
from .passes import optimize as run_passes
from .tape import Lit, Tape, eval_tape, gc_paused
from .tracer import Recorder, Tracer

FORMS = ("lifted", "closure", "compiled", "fused")


def _arg_names(f, n: int) -> list[str]:
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:n]]
    return names + [f"args[{i}]" for i in range(len(names), n)]


def _concrete(x):
    return x.value if isinstance(x, Tracer) else x


@gc_paused
def trace(f, *args) -> Tape:
    """Record ``f(*args)`` (plain numpy code) into a tape. Arrays, floats and numpy scalars in
    the (pytree) arguments are traced; Python ints, bools, None and strings are static. Branches
    on traced values are recorded as guards (see ``ad.tracer``).

    >>> tape = ad.trace(lambda x: np.sin(x) * 2.0, np.ones(3))
    >>> print(tape)
    { lambda %0:f64[3] ; let
        %1:f64[3] = sin %0
        %2:f64[3] = multiply %1 2.0
      in (%2) }
    """
    return _trace(f, args, None)


class _KeepingRecorder(Recorder):
    """A Recorder that keeps the values it computes, by variable."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def record(self, prim, operands, params):
        out = super().record(prim, operands, params)
        self.values.update((t.variable, t.value) for t in (out if prim.multiple_results else (out,)))
        return out


def _trace(f, args, argnums, rec: Recorder | None = None) -> Tape:
    """``trace``, with the float inputs of ``argnums`` (all, for None) marked as differentiated:
    converting them to plain values would lose their gradient, so the tracer refuses it.
    ``rec``: the recorder, if one that keeps values (``_KeepingRecorder``: ``linearize`` reuses
    them instead of running the primal again; ``ExemplarRecorder``: ``build`` lifts at them)."""
    in_tree, leaves = pytree.InTree.build(args, _arg_names(f, len(args)))
    differentiated = None if argnums is None else set(_leaves_of(in_tree, argnums, len(args)))
    with rec or Recorder() as rec:
        leaves = [rec.new_tracer(_concrete(x)) if t else x for x, t in zip(leaves, in_tree.traced)]
        inputs = tuple(x.variable for x, t in zip(leaves, in_tree.traced) if t)
        rec.differentiated.update(
            x.variable for i, (x, t) in enumerate(zip(leaves, in_tree.traced))
            if t and x.aval.is_float and (differentiated is None or i in differentiated))
        with unwrapping_numpy():
            out = f(*pytree.unflatten(in_tree.structure, leaves))
        out_leaves, out_tree = pytree.flatten(out)
        outputs = tuple(_output(rec, x) for x in out_leaves)
    captured = tuple(v for v, _ in rec.captures)
    return Tape(inputs + captured, tuple(rec.eqns), outputs, in_tree, out_tree,
                in_tree.traced_paths + tuple(f"captured {t.variable!r}" for _, t in rec.captures),
                captures=tuple(t for _, t in rec.captures))


def _output(rec: Recorder, x):
    if isinstance(x, Tracer):
        return rec.operand(x)[0]    # checks it is not a stale view; captures outer values
    return Lit.of(x if isinstance(x, (float, int, complex, bool)) else np.asarray(x))


def _argnums_tuple(argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if not -nargs <= k < nargs:
            raise ValueError(f"argnums={argnums} but the function was called with {nargs} arguments")
    return tuple(k % nargs for k in nums)


def _leaves_of(in_tree, argnums, nargs: int) -> list[int]:
    """The indices of the leaves of the arguments ``argnums``, in order."""
    children = in_tree.structure[1]
    offsets, n = [], 0
    for c in children:
        offsets.append(n)
        n += len(pytree.leaf_paths(c))
    return [leaf for k in _argnums_tuple(argnums, nargs)
            for leaf in range(offsets[k], offsets[k] + len(pytree.leaf_paths(children[k])))]


def _wrt(tape: Tape, argnums, nargs: int):
    """(indices of the traced inputs to differentiate, gradient structure, gradient slots)."""
    in_tree = tape.in_tree
    children = in_tree.structure[1]
    nums = _argnums_tuple(argnums, nargs)
    traced_index = {}
    for leaf, t in enumerate(in_tree.traced):
        if t:
            traced_index[leaf] = len(traced_index)
    wrt, slots = [], []
    for leaf in _leaves_of(in_tree, argnums, nargs):
        i = traced_index.get(leaf)
        if i is not None and tape.inputs[i].aval.is_float:
            slots.append(len(wrt))
            wrt.append(i)
        else:
            slots.append(-1)
    grad_tree = children[nums[0]] if isinstance(argnums, int) else ("tuple", tuple(children[k] for k in nums))
    return wrt, grad_tree, slots


def grad_tape(f, *args, argnums=0, holomorphic: bool = False) -> GradTape:
    """The joint gradient tape of a scalar function: forward section, lifted backward section.

    ``gt(*new_args)`` returns ``(value, gradients)``; ``gt.forward``/``gt.backward`` are the two
    sections; ``gt.fallbacks`` lists rules that could not be lifted.

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
    return _grad_tape(f, args, argnums, holomorphic)[1]


def _grad_tape(f, args, argnums, holomorphic: bool) -> tuple[Tape, GradTape]:
    """``grad_tape``, and the primal tape it was built from."""
    concrete = tuple(pytree.unflatten(s, [_concrete(x) for x in pytree.flatten(a)[0]])
                     for a, s in ((a, pytree.flatten(a)[1]) for a in args))
    rec = ExemplarRecorder()
    primal = _trace(f, concrete, argnums, rec)
    wrt, grad_tree, slots = _wrt(primal, argnums, len(args))
    return primal, build(primal, _values(primal, concrete), wrt, grad_tree=grad_tree, grad_slots=slots,
                         holomorphic=holomorphic, exemplars=rec.exemplars)


def _values(primal: Tape, args) -> list:
    """The concrete values of a tape's inputs (the arguments', then the captured ones')."""
    values = primal.flatten_args(args)
    return [np.asarray(v) if not isinstance(v, np.generic) else v for v in map(_concrete, values)]


def _has_tracer(leaves) -> bool:
    return any(isinstance(x, Tracer) for x in leaves)


@dataclass(frozen=True)
class _Traced:
    """What ``grad``'s cache keeps per trace: the tape (the gradient tape; the primal one for the
    closure form) and the rules it inlined (``ad.cache.rules_of``)."""
    tape: Tape
    rules: tuple

    @property
    def captures(self):
        return self.tape.captures


def value_and_grad(f, argnums=0, *, form: str = "lifted", optimize: bool = True,
                   max_traces: int = 8, holomorphic: bool = False):
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
    cache = TapeCache(max_traces)

    def new_tape(args):
        if form == "closure":
            primal = _trace(f, args, argnums)
            return _Traced(primal, rules_of(primal))
        primal, gt = _grad_tape(f, args, argnums, holomorphic)
        return _Traced(run_passes(gt) if optimize else gt, rules_of(primal))

    def run(entry, args, leaves):
        if not rules_current(entry.tape.rules):     # a rule registered since: the tape inlined the old one
            entry.tape, entry.compiled = new_tape(args), None
        tape = entry.tape.tape
        if form == "closure":
            return _closure(tape, args, argnums, holomorphic)
        traced = _has_tracer(leaves) or bool(tape.captures)
        if form in ("compiled", "fused") and not traced:
            if entry.compiled is None:
                entry.compiled = compile_tape(tape) if form == "compiled" else Fused(tape)
            return entry.compiled.call_flat(tape.in_tree.select_traced(leaves))
        if tape.fallbacks and traced:
            raise NonDifferentiableError(
                "cannot differentiate through a gradient whose rules fell back to closures: "
                + "; ".join(map(str, tape.fallbacks)))
        return tape(*args)

    def value_and_grad_f(*args):
        return cache.call(args, new_tape, run)
    value_and_grad_f.cache = cache
    value_and_grad_f.cache_info = cache.info
    return value_and_grad_f


def grad(f, argnums=0, *, form: str = "lifted", optimize: bool = True, max_traces: int = 8,
         holomorphic: bool = False):
    """The gradient of a scalar function, shaped like the differentiated argument(s).

    form: "lifted" (default) runs the lifted backward tape; "closure" calls the rules' pullback
    closures in reverse; "compiled" runs generated numpy source; "fused" runs it with its
    elementwise chains fused into C loops (docs/fused.md). All agree (to rounding). Tapes are
    cached per argument signature (and branch taken: see ``value_and_grad``), so repeated calls
    do not retrace; ``grad(f).cache_info()`` counts traces, hits and guard failures. Any output
    of size 1 is accepted (``f64[]``, ``f64[1]``, ``f64[1,1]``).

    Complex inputs (docs/complex.md): for a real ``f`` of complex ``z = x + iy`` the gradient is
    ``df/dx - i df/dy``, HIPS autograd's and JAX's convention (PyTorch returns its conjugate);
    ``holomorphic=True`` accepts a complex output of complex inputs and returns ``f'(z)``.

    >>> ad.grad(lambda x: np.sum(np.sin(x)))(np.zeros(3))
    array([1., 1., 1.])
    >>> ad.grad(lambda z: np.abs(z) ** 2)(1 + 2j)
    np.complex128(2-4j)
    >>> ad.grad(lambda z: z ** 3, holomorphic=True)(1j)
    np.complex128(-3+0j)
    """
    vg = value_and_grad(f, argnums, form=form, optimize=optimize, max_traces=max_traces,
                        holomorphic=holomorphic)

    def grad_f(*args):
        return vg(*args)[1]
    grad_f.cache = vg.cache
    grad_f.cache_info = vg.cache_info
    return grad_f


def _closure(primal: Tape, args, argnums, holomorphic: bool):
    """Closure form: the traced program's rules run eagerly and their pullbacks are called."""
    wrt, grad_tree, slots = _wrt(primal, argnums, len(args))
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
    return _vjp(f, args)


def _vjp(f, args, overloads: bool = True):
    """``vjp``; ``overloads=False`` pulls back with the rules' pullbacks, not their overloads
    (``backpropagate``): forward mode transposes a pullback with it, and a linear map has one
    transpose."""
    primal, gt, fwd, bwd, grad_tree, slots = vjp_tapes(f, args, tuple(range(len(args))), overloads)
    out = eval_tape(fwd, primal.flatten_args(args))      # tracers of an enclosing trace, if any
    n = gt.n_values
    residual_values = out[n:]
    y = pytree.unflatten(primal.out_tree, out[:n])

    def pullback(dy):
        cts, tree = pytree.flatten(dy)
        if tree != primal.out_tree:
            raise TypeError(f"the cotangent's structure {tree} differs from the output's {primal.out_tree}")
        # cotangents stay tracers when the pullback is differentiated again (vjp of a vjp)
        grads = eval_tape(bwd, residual_values + [c if isinstance(c, Tracer) else np.asarray(c)
                                                  for c in cts])
        leaves = [None if s < 0 else grads[s] for s in slots]
        return tuple(pytree.unflatten(grad_tree, leaves))
    pullback.tape = gt
    return y, pullback


def vjp_tapes(f, args, argnums: tuple, overloads: bool = True):
    """What ``vjp`` builds: the primal tape, its gradient tape seeded by an input cotangent, that
    split into forward (inputs -> outputs, residuals) and backward (residuals, cotangents ->
    gradients) tapes, the gradients' structure and slots (``jacrev`` caches them)."""
    rec = ExemplarRecorder()
    primal = _trace(f, args, argnums, rec)
    wrt, grad_tree, slots = _wrt(primal, argnums, len(args))
    gt = build(primal, _values(primal, args), wrt, seed="input", grad_tree=grad_tree, grad_slots=slots,
               exemplars=rec.exemplars, overloads=overloads)
    return (primal, gt) + partition(gt) + (grad_tree, slots)
