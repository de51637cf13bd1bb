"""The public entry points of forward mode: ``jvp`` and ``linearize`` (its ``f_jvp`` is a
``LinearMap``), on the tangent tapes ``ad.forward_mode`` builds, kept in a tape cache as
``ad.grad``'s are (``linearize_with``: ``ad.jacfwd`` keeps one across calls).

``linearize(f, *primals)`` traces ``f``, runs the forward section and returns the tangent tape
(an ordinary Tape: residuals and tangents in, output tangents out); ``jvp`` runs it once, or
(``form="closure"``) pushes the tangents through the rules eagerly.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import pytree
from ..compiler.codegen import compile_tape
from ..errors import NonDifferentiableError
from ..forward_mode.build import Linearized, build_linearized
from ..forward_mode.closure import eval_closure_jvp
from ..passes import optimize as run_passes
from ..tape import Tape, Var, eval_tape
from ..tracer import Tracer
from ..tracing import ValueKeepingRecorder, differentiated_inputs, has_tracer, input_values, trace_call
from .cache import TapeCache, Traced, rules_current, rules_of
from .vectorize import run_batched

FORMS = ("lifted", "closure", "compiled")


class LinearMap:
    """``f_jvp(*tangents)``: the output tangent, one tangent per differentiated argument (a
    pytree like it; None leaves are zeros). ``tape``: the tangent tape (residuals, then the
    tangents -> one tangent per float output); ``residuals``: their values at the primal point;
    ``forward``: the tape that computed them; ``fallbacks``: rules without a transposed
    pushforward. With ``form="compiled"`` the tangent tape runs as generated numpy source."""

    def __init__(self, primal: Tape, argnums, wrt, slots, lin: Linearized, residuals, compiled=None,
                 batched: dict | None = None):
        self.tape, self.forward, self.fallbacks = lin.tangent, lin.forward, lin.fallbacks
        self.residuals = residuals
        self._primal, self._argnums, self._wrt, self._slots, self._lin = primal, argnums, wrt, slots, lin
        self._compiled = compiled
        self._batched = {} if batched is None else batched      # input leaf -> its batched tangent tape

    def __call__(self, *tangents):
        return output_tangents(self._primal, self._lin.tangent_slots, self._run(
            tangent_leaves(self._primal, self._argnums, self._wrt, self._slots, tangents)))

    def _run(self, tangents: list) -> list:
        flat = list(self.residuals) + tangents
        return list(self._compiled.call_flat(flat) if self._compiled else eval_tape(self.tape, flat))

    def columns(self, leaf: int) -> list | None:
        """The tangent tape run on each unit vector of the differentiated input leaf ``leaf``
        (zeros elsewhere): per element, the output leaves' tangents (None for integer ones);
        None for a leaf without a tangent. ``ad.jacfwd``'s inner loop, without the pytrees."""
        slot = self._slots[leaf]
        if slot < 0:
            return None
        avals = [self._primal.inputs[i].aval for i in self._wrt]
        flat = [np.zeros(a.shape, a.dtype) for a in avals]
        out = []
        for e in np.eye(avals[slot].size, dtype=avals[slot].dtype):
            flat[slot] = e.reshape(avals[slot].shape)
            ts = self._run(flat)
            out.append([None if s < 0 else ts[s] for s in self._lin.tangent_slots])
        return out


    def batched_columns(self, leaf: int) -> list | None:
        """``columns`` at once: the tangent tape batched over the unit vectors of the input leaf
        ``leaf`` (``ad.vmap``'s batching, the tape kept for the next call), per output leaf its
        tangents stacked along a first axis (None for integer ones); None for a leaf without one."""
        slot = self._slots[leaf]
        if slot < 0:
            return None
        avals = [self._primal.inputs[i].aval for i in self._wrt]
        flat = [np.zeros(a.shape, a.dtype) for a in avals]
        flat[slot] = np.eye(avals[slot].size, dtype=avals[slot].dtype).reshape((avals[slot].size,) + avals[slot].shape)
        n = len(self.residuals)
        ts = run_batched(self.tape, list(self.residuals) + flat, {n + slot}, self._batched, slot,
                         compiled=self._compiled is not None)
        return [None if s < 0 else ts[s] for s in self._lin.tangent_slots]


def tangent_leaves(primal: Tape, argnums, wrt, slots, tangents) -> list:
    """The flat tangents of the differentiated inputs, checked against the primals' structure,
    shapes and dtypes (a real input takes a real tangent; None is zeros)."""
    children = primal.in_tree.structure[1]
    if len(tangents) != len(argnums):
        raise TypeError(f"{len(tangents)} tangents for {len(argnums)} differentiated arguments")
    leaves = []
    for k, t in zip(argnums, tangents):
        ls, tree = pytree.flatten(t)
        if tree != children[k] and t is not None:
            raise TypeError(f"the tangent of argument {k} has structure {tree}, its primal {children[k]}")
        leaves += ls if t is not None else [None] * len(pytree.leaf_paths(children[k]))
    out = []
    for leaf, s in zip(leaves, slots):
        if s < 0:
            continue
        v = primal.inputs[wrt[s]]
        if leaf is None:
            out.append(np.zeros(v.aval.shape, v.aval.dtype))
            continue
        if np.shape(leaf) != v.aval.shape:
            raise ValueError(f"the tangent of {primal.input_names[wrt[s]]} has shape {np.shape(leaf)}, "
                             f"its primal {v.aval.shape}")
        dtype = np.result_type(leaf)
        if np.issubdtype(dtype, np.complexfloating) and not np.issubdtype(v.aval.dtype, np.complexfloating):
            raise TypeError(f"a complex tangent for the real {primal.input_names[wrt[s]]}: a real input "
                            "moves along real directions")
        out.append(leaf if isinstance(leaf, Tracer) and leaf.dtype == v.aval.dtype else
                   leaf.astype(v.aval.dtype) if isinstance(leaf, Tracer) else np.asarray(leaf, v.aval.dtype))
    return out


def output_tangents(primal: Tape, tangent_slots, outs: list):
    """The output tangents shaped like the output (None for integer and boolean leaves; a 0-d
    array as a numpy scalar, as numpy returns them)."""
    outs = [t[()] if isinstance(t, np.ndarray) and t.ndim == 0 else t for t in outs]
    return pytree.unflatten(primal.out_tree, [None if s < 0 else outs[s] for s in tangent_slots])


@dataclass(frozen=True)
class _Linearization(Traced):
    """One trace of ``f`` linearized, as the tape cache keeps it."""
    wrt: list
    slots: list
    lin: Linearized
    batched: dict = field(default_factory=dict, compare=False)     # LinearMap.batched_columns's tapes


def linearize(f, *primals, argnums=None, form: str = "lifted", optimize: bool = True, max_traces: int = 8):
    """``y, f_jvp = ad.linearize(f, *primals)``: ``f_jvp(*tangents)`` is the Jacobian of ``f`` at
    ``primals`` applied to tangents (one per argument, or per ``argnums``), run from a tangent
    tape (``f_jvp.tape``, an ordinary Tape: it prints, optimises, compiles, saves). What the
    pushforwards compute from the primals alone runs once, in the forward section; the tangent
    tape holds the linear part. Complex inputs move along complex directions, ``t = dx + i dy``
    (docs/complex.md).

    Each call traces ``f`` (a one-shot transform keeps no tapes: see ``ad.transforms.cache``); ``f_jvp``
    runs the tangent tape as often as wanted.

    >>> y, f_jvp = ad.linearize(lambda x: np.sin(x) * 2.0, np.zeros(2))
    >>> f_jvp(np.ones(2))
    array([2., 2.])
    >>> print(f_jvp.tape)                  # cos(x), read by sin's pushforward, is a residual
    { lambda %4:f64[2] %3:f64[2] ; let
        %5:f64[2] = multiply %3 %4    # pushforward of %1 (sin), from its pullback
        %6:f64[2] = multiply %5 2.0    # pushforward of %2 (multiply), from its pullback
      in (%6) }
    """
    if form not in ("lifted", "compiled"):
        raise ValueError(f"linearize form={form!r}: choose 'lifted' or 'compiled' (the closure form "
                         "has no tape: use ad.jvp(..., form='closure'))")
    argnums = tuple(range(len(primals))) if argnums is None else argnums
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    cache = TapeCache(max_traces)
    return linearize_with(cache, f, primals, argnums, form, optimize)


def linearize_with(cache, f, primals, argnums: tuple, form: str, optimize: bool = True):
    """``linearize`` keeping its tapes in ``cache`` (``ad.hvp`` keys them by the function whose
    gradient it linearizes)."""
    nargs = len(primals)
    fresh: dict = {}        # id of a tape traced in this call -> the forward outputs its building computed

    def new_tape(args):
        computed: dict = {}
        primal = trace_call(f, args, argnums, ValueKeepingRecorder(computed))
        wrt, _, slots = differentiated_inputs(primal, argnums, nargs)
        plain = all(type(a) is np.ndarray for a in primal.flatten_args(args))    # no tracer, no Python scalar
        known: dict = {}
        lin = build_linearized(primal, input_values(primal, args), wrt, known, computed if plain else None)
        out = [known[x] if type(x) is Var else x.value for x in lin.forward.outputs]
        if optimize:
            lin = replace(lin, forward=run_passes(lin.forward), tangent=run_passes(lin.tangent))
        traced = _Linearization(primal, rules_of(primal), wrt, slots, lin)
        if plain:
            fresh[id(traced)] = out         # what running the forward tape would give, computed once
        return traced

    def run(entry, args, leaves):
        if not rules_current(entry.tape.rules):     # a rule registered since: its pushforward changed
            entry.tape, entry.compiled = new_tape(args), None
        t = entry.tape
        out = fresh.pop(id(t), None)
        if out is None:
            out = eval_tape(t.lin.forward, t.primal.flatten_args(args))     # tracers of an enclosing trace, if any
        if t.lin.fallbacks and has_tracer(out):
            raise NonDifferentiableError("cannot differentiate through a linearization whose rules fell "
                                         "back to closures: " + "; ".join(map(str, t.lin.fallbacks)))
        if form == "compiled" and entry.compiled is None:
            entry.compiled = compile_tape(t.lin.tangent)
        y = pytree.unflatten(t.primal.out_tree, out[:t.lin.n_values])
        return y, LinearMap(t.primal, argnums, t.wrt, t.slots, t.lin, out[t.lin.n_values:], entry.compiled,
                            t.batched)
    return cache.call(tuple(primals), new_tape, run)


def jvp(f, primals, tangents, *, form: str = "lifted"):
    """``y, ty = ad.jvp(f, primals, tangents)``: ``f(*primals)`` and its Jacobian applied to
    ``tangents`` (a tuple like ``primals``; a None entry leaves that argument constant).

    form: "lifted" runs the tangent tape of the pushforwards derived from the rules' pullbacks
    (``linearize``); "compiled" runs it as generated numpy source; "closure" calls each rule's
    pushforward eagerly (its frule, or the vjp of its pullback closure). All three agree.

    >>> ad.jvp(lambda x, y: x * y, (2.0, 3.0), (1.0, 0.0))
    (np.float64(6.0), np.float64(3.0))
    """
    if form not in FORMS:
        raise ValueError(f"form={form!r}; choose one of {FORMS}")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp takes primals and tangents as tuples: ad.jvp(f, (x,), (t,))")
    if len(primals) != len(tangents):
        raise TypeError(f"{len(primals)} primals and {len(tangents)} tangents")
    argnums = tuple(k for k, t in enumerate(tangents) if t is not None)
    given = [tangents[k] for k in argnums]
    if form != "closure":
        y, f_jvp = linearize(f, *primals, argnums=argnums, form=form)
        return y, f_jvp(*given)
    primal = trace_call(f, tuple(primals), argnums)
    wrt, _, slots = differentiated_inputs(primal, argnums, len(primals))
    outs, touts = eval_closure_jvp(primal, primal.flatten_args(tuple(primals)), wrt,
                                   tangent_leaves(primal, argnums, wrt, slots, given))
    tangent_slots, k = [], 0
    for v in primal.outputs:
        tangent_slots.append(k if v.aval.is_float else -1)
        k += v.aval.is_float
    return (pytree.unflatten(primal.out_tree, outs),
            output_tangents(primal, tangent_slots, [t for t, v in zip(touts, primal.outputs) if v.aval.is_float]))
