"""The public entry points: trace, grad_tape, grad, value_and_grad, vjp."""
from __future__ import annotations

import inspect

import numpy as np

from . import pytree
from .backward import GradTape, build, partition
from .closure import eval_closure
from .codegen import compile_tape
from .errors import NonDifferentiableError
from .passes import optimize as run_passes
from .tape import Lit, Tape, eval_tape, gc_paused
from .tracer import Recorder, Tracer

FORMS = ("lifted", "closure", "compiled")


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
    the (pytree) arguments are traced; Python ints, bools, None and strings are static.

    >>> tape = ad.trace(lambda x: np.sin(x) * 2.0, np.ones(3))
    >>> print(tape)
    { lambda %0:f64[3] ; let
        %1:f64[3] = sin %0
        %2:f64[3] = multiply %1 2.0
      in (%2) }
    """
    in_tree, leaves = pytree.InTree.build(args, _arg_names(f, len(args)))
    with Recorder() as rec:
        leaves = [rec.new_tracer(_concrete(x)) if t else x for x, t in zip(leaves, in_tree.traced)]
        inputs = tuple(x.variable for x, t in zip(leaves, in_tree.traced) if t)
        out = f(*pytree.unflatten(in_tree.structure, leaves))
        out_leaves, out_tree = pytree.flatten(out)
        outputs = tuple(_output(rec, x) for x in out_leaves)
    return Tape(inputs, tuple(rec.eqns), outputs, in_tree, out_tree, in_tree.traced_paths)


def _output(rec: Recorder, x):
    if isinstance(x, Tracer):
        rec.operand(x)          # checks it belongs to this trace and is not a stale view
        return x.variable
    return Lit.of(x if isinstance(x, (float, int, complex, bool)) else np.asarray(x))


def _argnums_tuple(argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for k in nums:
        if not -nargs <= k < nargs:
            raise ValueError(f"argnums={argnums} but the function was called with {nargs} arguments")
    return tuple(k % nargs for k in nums)


def _wrt(tape: Tape, argnums, nargs: int):
    """(indices of the traced inputs to differentiate, gradient structure, gradient slots)."""
    in_tree = tape.in_tree
    children = in_tree.structure[1]
    nums = _argnums_tuple(argnums, nargs)
    offsets, n = [], 0
    for c in children:
        offsets.append(n)
        n += len(pytree.leaf_paths(c))
    traced_index = {}
    for leaf, t in enumerate(in_tree.traced):
        if t:
            traced_index[leaf] = len(traced_index)
    wrt, slots = [], []
    for k in nums:
        for leaf in range(offsets[k], offsets[k] + len(pytree.leaf_paths(children[k]))):
            i = traced_index.get(leaf)
            if i is not None and tape.inputs[i].aval.is_float:
                slots.append(len(wrt))
                wrt.append(i)
            else:
                slots.append(-1)
    grad_tree = children[nums[0]] if isinstance(argnums, int) else ("tuple", tuple(children[k] for k in nums))
    return wrt, grad_tree, slots


def grad_tape(f, *args, argnums=0) -> GradTape:
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
    concrete = [pytree.unflatten(s, [_concrete(x) for x in pytree.flatten(a)[0]])
                for a, s in ((a, pytree.flatten(a)[1]) for a in args)]
    primal = trace(f, *concrete)
    wrt, grad_tree, slots = _wrt(primal, argnums, len(args))
    values = primal.in_tree.select_traced(pytree.flatten(tuple(concrete))[0])
    return build(primal, [np.asarray(v) if not isinstance(v, np.generic) else v for v in values],
                 wrt, grad_tree=grad_tree, grad_slots=slots)


def _leaf_signature(x):
    if isinstance(x, np.ndarray):
        return (x.shape, x.dtype)
    if pytree.is_traceable_leaf(x):
        return (np.shape(x), np.result_type(_concrete(x)))
    return (type(x), x)


def _has_tracer(leaves) -> bool:
    return any(isinstance(x, Tracer) for x in leaves)


def value_and_grad(f, argnums=0, *, form: str = "lifted", optimize: bool = True):
    """``value_and_grad(f)(*args) -> (f(*args), gradient)``; see ``grad``.

    >>> ad.value_and_grad(lambda x, y: x * y, argnums=(0, 1))(2.0, 3.0)
    (np.float64(6.0), (3.0, 2.0))
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r}; choose one of {FORMS}")
    cache: dict = {}

    def value_and_grad_f(*args):
        leaves, structure = pytree.flatten(args)
        key = (structure,) + tuple(_leaf_signature(x) for x in leaves)
        if form == "closure":
            primal = cache.get(key) or cache.setdefault(key, trace(f, *args))
            return _closure(primal, args, argnums)
        entry = cache.get(key)
        if entry is None:
            gt = grad_tape(f, *args, argnums=argnums)
            if optimize:
                gt = run_passes(gt)
            entry = cache[key] = [gt, None]
        gt = entry[0]
        traced = _has_tracer(leaves)
        if form == "compiled" and not traced:
            if entry[1] is None:
                entry[1] = compile_tape(gt)
            return entry[1].call_flat(gt.in_tree.select_traced(leaves))
        if gt.fallbacks and traced:
            raise NonDifferentiableError(
                "cannot differentiate through a gradient whose rules fell back to closures: "
                + "; ".join(map(str, gt.fallbacks)))
        return gt(*args)
    value_and_grad_f.cache = cache
    return value_and_grad_f


def grad(f, argnums=0, *, form: str = "lifted", optimize: bool = True):
    """The gradient of a scalar function, shaped like the differentiated argument(s).

    form: "lifted" (default) runs the lifted backward tape; "closure" calls the rules' pullback
    closures in reverse; "compiled" runs generated numpy source. All three agree. Tapes are
    cached per argument signature, so repeated calls do not retrace.

    >>> ad.grad(lambda x: np.sum(np.sin(x)))(np.zeros(3))
    array([1., 1., 1.])
    """
    vg = value_and_grad(f, argnums, form=form, optimize=optimize)

    def grad_f(*args):
        return vg(*args)[1]
    grad_f.cache = vg.cache
    return grad_f


def _closure(primal: Tape, args, argnums):
    """Closure form: the traced program's rules run eagerly and their pullbacks are called."""
    wrt, grad_tree, slots = _wrt(primal, argnums, len(args))
    flat = primal.in_tree.select_traced(pytree.flatten(args)[0])
    if len(primal.outputs) != 1 or primal.outputs[0].aval.shape != ():
        raise NonDifferentiableError("grad needs a function returning one float scalar; use ad.vjp")
    outs, grads = eval_closure(primal, flat, wrt, [np.ones((), primal.outputs[0].aval.dtype)])
    leaves = [None if s < 0 else grads[s] for s in slots]
    return pytree.unflatten(primal.out_tree, outs), pytree.unflatten(grad_tree, leaves)


def vjp(f, *args):
    """``y, pullback = ad.vjp(f, *args)``; ``pullback(dy)`` returns one cotangent per positional
    argument (shaped like it; None for leaves without a gradient).

    >>> y, pullback = ad.vjp(lambda x: x * 2.0, np.arange(3.0))
    >>> pullback(np.ones(3))
    (array([2., 2., 2.]),)
    """
    primal = trace(f, *args)
    nargs = len(args)
    wrt, grad_tree, slots = _wrt(primal, tuple(range(nargs)), nargs)
    values = primal.in_tree.select_traced(pytree.flatten(args)[0])
    gt = build(primal, values, wrt, seed="input", grad_tree=grad_tree, grad_slots=slots)
    fwd, bwd = partition(gt)
    out = eval_tape(fwd, values)
    n = gt.n_values
    residual_values = out[n:]
    y = pytree.unflatten(primal.out_tree, out[:n])

    def pullback(dy):
        cts, tree = pytree.flatten(dy)
        if tree != primal.out_tree:
            raise TypeError(f"the cotangent's structure {tree} differs from the output's {primal.out_tree}")
        grads = eval_tape(bwd, residual_values + [np.asarray(c) for c in cts])
        leaves = [None if s < 0 else grads[s] for s in slots]
        return tuple(pytree.unflatten(grad_tree, leaves))
    pullback.tape = gt
    return y, pullback
