"""Jacobians and Hessians from the two modes: ``jacfwd`` (one linearization, one tangent-tape run
per input element), ``jacrev`` (one vjp, one pullback per output element), ``jacobian`` (the
cheaper of the two), ``hessian`` (forward over reverse) and ``hvp``.

Conventions are ``ad.grad``'s: ``argnums`` (an int, or a tuple giving a tuple), pytrees on both
sides. The Jacobian of an output leaf of shape ``so`` with respect to an input leaf of shape
``si`` has shape ``so + si``; the result is shaped like the output, each leaf holding the
structure of the differentiated argument(s) (JAX's layout). Integer and boolean leaves get None.

Complex numbers (docs/complex.md): a real input's Jacobian is ``df/dx`` (complex for a complex
output; ``jacfwd`` computes it, ``jacrev`` refuses, since a real cotangent cannot see an
imaginary part). A complex input has one Jacobian only when ``f`` is holomorphic: pass
``holomorphic=True`` and get ``f'(z)``; otherwise both refuse, as ``jax.jacfwd`` does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import pytree
from .gradients import grad
from .cache import TapeCache, Traced, rules_current, rules_of, signature
from ..compiler.codegen import compile_tape
from ..errors import NonDifferentiableError
from .linearization import FORMS, jvp, linearize_with
from ..passes import optimize as run_passes
from ..reverse_mode.pullback import vjp_tapes
from ..tape import Tape, eval_tape
from ..tracing import concrete, normalize_argnums, trace
from .vectorize import run_batched


def _is_complex(x) -> bool:
    return np.iscomplexobj(concrete(x))


def _is_float(x) -> bool:
    return np.issubdtype(np.result_type(concrete(x)), np.inexact)


def _diff(args, argnums):
    """(the differentiated argument numbers, the leaves and structure of the differentiated
    arguments as one tree: the argument, or a tuple of them)."""
    nums = normalize_argnums(argnums, len(args))
    return nums, pytree.flatten(args[nums[0]] if isinstance(argnums, int) else tuple(args[k] for k in nums))


def _refuse_complex_inputs(leaves, holomorphic: bool, name: str):
    if not holomorphic and any(_is_complex(x) for x in leaves):
        raise NonDifferentiableError(
            f"ad.{name} of a function of a complex input: its Jacobian is f'(z) only for a holomorphic "
            f"f; pass holomorphic=True, or split z into real and imaginary parts (docs/complex.md)")


def _assemble(out_leaves, out_tree, in_leaves, in_tree, block):
    """The Jacobian tree: per output leaf, the input tree of its blocks ``block(i, j)``."""
    return pytree.unflatten(out_tree, [pytree.unflatten(in_tree, [block(i, j) for j in range(len(in_leaves))])
                                       for i in range(len(out_leaves))])


def _basis(x):
    """The unit vectors of a leaf's space, each shaped like it (in its dtype)."""
    shape, dtype = np.shape(x), np.result_type(concrete(x))
    n = int(np.prod(shape))
    return np.eye(n, dtype=dtype).reshape((n,) + shape)


def jacfwd(f, argnums=0, *, form: str = "lifted", holomorphic: bool = False, max_traces: int = 8,
           batched: bool = True):
    """The Jacobian of ``f`` by forward mode: one linearization (``ad.linearize``, its tapes
    cached per argument signature under their guards, ``jacfwd(f).cache_info()``), then its
    tangent tape run on every element of the differentiated inputs: at once, all unit vectors
    through one batched tangent tape (``ad.vmap``'s), or with ``batched=False`` one by one.
    Cheap for few inputs and many outputs (tall Jacobians), and batched also for the wide ones.
    ``form``: "lifted", "compiled" (the tangent tape as numpy source) or "closure" (``ad.jvp``'s
    closure form, per column, traced every call).

    >>> ad.jacfwd(lambda x: np.sin(x) * 2.0)(np.zeros(2))
    array([[2., 0.],
           [0., 2.]])
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r}; choose one of {FORMS}")
    cache = TapeCache(max_traces)

    def jacfwd_f(*args):
        nums, (in_leaves, in_tree) = _diff(args, argnums)
        _refuse_complex_inputs(in_leaves, holomorphic, "jacfwd")
        stacked = [None] * len(in_leaves)       # batched: per input leaf, per output, a stack of columns
        if form == "closure":
            y = f(*args)
            columns = [_closure_columns(f, args, nums, argnums, in_leaves, in_tree, j)
                       for j in range(len(in_leaves))]
        else:
            y, f_jvp = linearize_with(cache, f, args, nums, form)
            columns = [None] * len(in_leaves)   # per input leaf, per element, per output
            for j, x in enumerate(in_leaves):
                if batched and np.size(concrete(x)):
                    stacked[j] = f_jvp.batched_columns(j)
                else:
                    columns[j] = f_jvp.columns(j)
        out_leaves, out_tree = pytree.flatten(y)

        def block(i, j):
            if not _is_float(out_leaves[i]):      # an integer leaf has no tangent
                return None
            shape = np.shape(out_leaves[i]) + np.shape(in_leaves[j])
            if stacked[j] is not None:
                return None if stacked[j][i] is None else np.moveaxis(stacked[j][i], 0, -1).reshape(shape)
            if columns[j] is None:
                return None
            if not columns[j]:                  # a zero-size input: no column, an empty block
                return np.zeros(shape, np.result_type(concrete(out_leaves[i])))
            return np.stack([c[i] for c in columns[j]], axis=-1).reshape(shape)
        return _assemble(out_leaves, out_tree, in_leaves, in_tree, block)
    jacfwd_f.cache_info = cache.info
    return jacfwd_f


def _closure_columns(f, args, nums, argnums, in_leaves, in_tree, j):
    """``LinearMap.columns`` by ``ad.jvp``'s closure form, one call per element."""
    if not _is_float(in_leaves[j]):
        return None
    cols = []
    for e in _basis(in_leaves[j]):
        leaves = [None] * len(in_leaves)
        leaves[j] = e
        ts = pytree.unflatten(in_tree, leaves)
        tangents = [None] * len(args)
        for k, t in zip(nums, (ts,) if isinstance(argnums, int) else ts):
            tangents[k] = t
        cols.append(pytree.flatten(jvp(f, args, tuple(tangents), form="closure")[1])[0])
    return cols



@dataclass(frozen=True)
class _VjpTapes(Traced):
    """One trace of ``f`` for ``jacrev``: its forward and backward tapes, the gradients'
    structure and slots."""
    fwd: Tape
    bwd: Tape
    grad_tree: object
    slots: list
    batched: dict = field(default_factory=dict, compare=False)    # output leaf -> its batched pullback


def jacrev(f, argnums=0, *, form: str = "lifted", holomorphic: bool = False, max_traces: int = 8,
           batched: bool = True):
    """The Jacobian of ``f`` by reverse mode: one vjp, its pullback run on every element of the
    outputs: at once, all basis vectors through one batched pullback tape (``ad.vmap``'s), or
    with ``batched=False`` one by one. Cheap for many inputs and few outputs (wide Jacobians),
    and batched also for the tall ones. Its tapes are cached per
    argument signature under their guards, as ``ad.grad``'s; ``form``: "lifted" or "compiled"
    (the backward tape as numpy source). A complex output needs ``holomorphic=True`` (of a
    real input: use ``jacfwd``).

    >>> ad.jacrev(lambda x: np.sum(x ** 2, keepdims=True))(np.arange(3.0))
    array([[0., 2., 4.]])
    """
    if form not in ("lifted", "compiled"):
        raise ValueError(f"jacrev form={form!r}: choose 'lifted' or 'compiled'")
    cache = TapeCache(max_traces)

    def jacrev_f(*args):
        nums, (in_leaves, in_tree) = _diff(args, argnums)
        _refuse_complex_inputs(in_leaves, holomorphic, "jacrev")

        def new_tape(args):
            primal, _, fwd, bwd, grad_tree, slots = vjp_tapes(f, args, nums)
            return _VjpTapes(primal, rules_of(primal), run_passes(fwd), run_passes(bwd), grad_tree, slots)

        def run(entry, args, leaves):
            if not rules_current(entry.tape.rules):     # a rule registered since it was traced
                entry.tape, entry.compiled = new_tape(args), None
            t = entry.tape
            out = eval_tape(t.fwd, t.primal.flatten_args(args))
            n = len(t.primal.outputs)
            if form == "compiled" and entry.compiled is None:
                entry.compiled = compile_tape(t.bwd)
            pull = entry.compiled.call_flat if form == "compiled" else (lambda flat: eval_tape(t.bwd, flat))
            return t, out[:n], out[n:], pull
        t, ys, residuals, pull = cache.call(args, new_tape, run)
        if not holomorphic and any(_is_complex(v) for v in ys):
            raise NonDifferentiableError(
                "ad.jacrev of a complex output of real inputs: a cotangent sees only the real part; "
                "use ad.jacfwd (or holomorphic=True for a holomorphic f)")
        zeros = [np.zeros(np.shape(v), np.result_type(concrete(v))) for v in ys]
        rows = []           # per output leaf: per row, the gradient leaves (batched: stacked)
        for i, v in enumerate(ys):
            if not _is_float(v):
                rows.append(None)
                continue
            if batched and np.size(concrete(v)):
                flat = list(residuals) + [_basis(v) if k == i else z for k, z in enumerate(zeros)]
                grads = run_batched(t.bwd, flat, {len(residuals) + i}, t.batched, i, form == "compiled")
                rows.append([None if s < 0 else grads[s] for s in t.slots])
                continue
            rs = []
            for e in _basis(v):
                ct = list(zeros)
                ct[i] = e
                grads = pull(list(residuals) + ct)
                rs.append([None if s < 0 else grads[s] for s in t.slots])
            rows.append(rs)

        def block(i, j):
            if rows[i] is None or t.slots[j] < 0:          # an integer leaf has no gradient
                return None
            shape = np.shape(ys[i]) + np.shape(in_leaves[j])
            if not rows[i]:                     # a zero-size output: no row, an empty block
                return np.zeros(shape, np.result_type(concrete(in_leaves[j])))
            if batched:
                return np.reshape(rows[i][j], shape)
            return np.stack([r[j] for r in rows[i]]).reshape(shape)
        return _assemble(ys, t.primal.out_tree, in_leaves, in_tree, block)
    jacrev_f.cache_info = cache.info
    return jacrev_f


def jacobian(f, argnums=0, *, form: str = "lifted", holomorphic: bool = False):
    """The Jacobian of ``f``, by ``jacfwd`` when the differentiated inputs have no more elements
    than the outputs (or an output is complex and the inputs real), else by ``jacrev``. The
    output size is found by tracing ``f`` once per argument signature. ``form``: "lifted" or
    "compiled".

    >>> ad.jacobian(lambda x: np.outer(x, x))(np.ones(2)).shape
    (2, 2, 2)
    """
    if form not in ("lifted", "compiled"):
        raise ValueError(f"jacobian form={form!r}: choose 'lifted' or 'compiled'")
    fwd = jacfwd(f, argnums, form=form, holomorphic=holomorphic)
    rev = jacrev(f, argnums, form=form, holomorphic=holomorphic)
    sizes: dict = {}

    def jacobian_f(*args):
        leaves, structure = pytree.flatten(args)
        key = (structure,) + signature(leaves)
        if key not in sizes:
            outs = trace(f, *args).outputs
            sizes[key] = (sum(v.aval.size for v in outs),
                          any(np.issubdtype(v.aval.dtype, np.complexfloating) for v in outs))
        n_out, complex_out = sizes[key]
        n_in = sum(int(np.size(x)) for x in _diff(args, argnums)[1][0])
        use_fwd = n_in <= n_out or complex_out and not holomorphic
        return (fwd if use_fwd else rev)(*args)
    return jacobian_f


def hessian(f, argnums=0, *, form: str = "lifted", holomorphic: bool = False):
    """The Hessian of a scalar ``f``: ``jacfwd`` of ``ad.grad(f)`` (forward over reverse), shaped
    ``x.shape + x.shape`` for one array argument (a nested tree per pair for pytrees or a tuple
    of ``argnums``). ``form`` is the gradient's and the tangent tape's. For a complex input,
    ``holomorphic=True`` gives ``f''(z)`` of a holomorphic ``f``.

    >>> ad.hessian(lambda x: np.sum(x ** 3))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    g = grad(f, argnums, form=form, holomorphic=holomorphic)
    return jacfwd(g, argnums, form=form, holomorphic=holomorphic)


def hvp(f, primals, tangents, *, form: str = "lifted"):
    """``g, Hv = ad.hvp(f, primals, tangents)``: the gradient of a scalar ``f`` and its Hessian
    applied to ``tangents``, by ``ad.jvp`` of ``ad.grad(f)`` (forward over reverse: about one
    gradient's cost). The differentiated arguments are those with a tangent (None leaves the
    argument constant); ``g`` and ``Hv`` are shaped like it, or tuples of them for several.

    >>> ad.hvp(lambda x: np.sum(x ** 3), (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    (array([ 3., 12.]), array([6., 0.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)) \
            or len(primals) != len(tangents):
        raise TypeError("hvp takes primals and tangents as tuples of one length: ad.hvp(f, (x,), (v,))")
    nums = tuple(k for k, t in enumerate(tangents) if t is not None)
    argnums = nums[0] if len(nums) == 1 else nums
    if form == "closure":
        return jvp(grad(f, argnums, form=form), tuple(primals), tuple(tangents), form=form)
    cache = TapeCache()       # one-shot: traced on every call (see ad.transforms.cache)
    g, f_jvp = linearize_with(cache, grad(f, argnums, form=form), tuple(primals), nums, form)
    return g, f_jvp(*(tangents[k] for k in nums))
