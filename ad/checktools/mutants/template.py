"""The template a rule is lifted into (``Target``: one rule instance, its pullback lifted into a
small tape), a ``Mutant`` of it, and back: ``template_rule`` turns a template into an ordinary
rule, so a mutant is checked exactly like a candidate rule and no registered rule is replaced.
``targets`` finds the instances to mutate in the registry's samples."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ... import nn  # noqa: F401  (ad.nn's rules are mutated too)
from ...primitives import REGISTRY, Primitive
from ...reverse_mode.lift import LiftedRule, lift
from ...samples import C128, caller, operands
from ...scipy import integrate, linalg, signal, special, stats  # noqa: F401  (the whole registry is mutated)
from ...tangents import NoTangent, ZeroTangent, is_zero
from ...tape import Aval, Var, eval_eqns, eval_tape
from ...tracer import Tracer
from ...tracing import trace


@dataclass
class Target:
    """One rule instance to mutate: a call, its inputs and the lifted template of the rule it
    fires; ``draw()`` gives fresh inputs like them (None: the sample's point alone)."""
    prim: Primitive
    label: str
    call: object
    inputs: list
    lifted: LiftedRule
    params: dict
    rule: object            # the registered rule the template was lifted from
    draw: object = None
    kink: bool = False      # the inputs are a kink point the samples declare

    @property
    def n_cts(self) -> int:
        return len(self.lifted.cts)


@dataclass(frozen=True)
class Mutant:
    """A pullback template with one mutation; ``writes`` is the output whose cotangent the
    pullback multiplies in place (the one mutation an SSA tape cannot hold)."""
    operator: str
    site: str
    bwd: tuple
    grads: tuple
    writes: int | None = None


def rule_operands(call, inputs):
    """The single equation ``call(*inputs)`` records, and its operands as ``check_rule`` passes
    them to the rule (None if the call records a composition)."""
    with np.errstate(all="ignore"):
        tape = trace(call, *inputs)
        if len(tape.eqns) != 1:
            return None, None
        env: dict = {}
        eval_tape(tape, tape.flatten_args(tuple(inputs)), env)
    e = tape.eqns[0]
    ops = [(env[x] if isinstance(env[x], np.generic) else np.asarray(env[x])) if type(x) is Var else x.value
           for x in e.inputs]
    return e, ops


def template_rule(target: Target, mutant: Mutant):
    """An ordinary rule computing with the template: the primal body, then (in the pullback) the
    mutant's backward equations. Operands standing as literals in the template are ignored. At
    other avals or params (the primitive inside its own pullback, transposed or differentiated
    again) it is the registered rule: the template holds for its instance alone."""
    lifted, prim = target.lifted, target.prim
    zeros = [ZeroTangent() if type(a) is Var and a.aval.is_float else NoTangent() for a in lifted.args]
    avals = [a.aval for a in lifted.args]

    def rule(*values, **params):
        if params != target.params or [_aval(v) for v in values] != avals:
            return target.rule(*values, **params)
        env = {a: v for a, v in zip(lifted.args, values) if type(a) is Var}
        eval_eqns(lifted.fwd, env)
        ys = [_read(env, o) for o in lifted.outs]

        def pullback(ct):
            cts = tuple(ct) if prim.multiple_results else (ct,)
            local = dict(env)
            local.update(zip(lifted.cts, cts))
            eval_eqns(mutant.bwd, local)
            grads = tuple(z if g is None else _read(local, g) for g, z in zip(mutant.grads, zeros))
            if mutant.writes is not None and isinstance(cts[mutant.writes], np.ndarray):
                cts[mutant.writes][...] = cts[mutant.writes] * 2
            return grads
        return (tuple(ys) if prim.multiple_results else ys[0]), pullback
    rule.__qualname__ = f"{mutant.operator} mutant of {prim.name}'s rule ({mutant.site})"
    return rule


def _aval(v) -> Aval:
    return v.aval if isinstance(v, Tracer) else Aval.of(v)


def original(target: Target) -> Mutant:
    return Mutant("original", "unchanged", target.lifted.bwd, target.lifted.grads)


def _read(env, x):
    return env[x] if type(x) is Var else x.value


# -- targets --------------------------------------------------------------------------------------

def targets(names=None, seed: int = 0) -> tuple[list[Target], dict]:
    """The targets of every differentiable sampled primitive (its first dtype; complex128 too
    for a rule declaring ``complex_rule``; its kink points), and why the others have none."""
    found, skipped = [], {}
    for prim in REGISTRY.values():
        if not prim.samples or (names is not None and prim.name not in names):
            continue
        if not prim.differentiable:
            skipped[prim.name] = "declared non-differentiable: its rule is never called"
            continue
        rng = np.random.default_rng([seed, zlib.crc32(prim.name.encode())])
        dtypes = [np.dtype(prim.samples[0].dtypes[0])] + ([C128] if prim.complex_rule else [])
        ts = [_target(prim, rng, dtype) for dtype in dtypes] + _kinks(prim)
        if isinstance(ts[0], str):
            skipped[prim.name] = ts[0]
        found.extend(t for t in ts if isinstance(t, Target))
    return found, skipped


def _kinks(prim) -> list:
    """A target at every kink point the samples declare (ties of maximum, abs at 0): mutants of
    what a rule does there alone are invisible anywhere else."""
    out = []
    for n, sample in enumerate(prim.samples):
        for k, point in enumerate(sample.kinks):
            t = target(caller(prim, sample), *[np.array(p) if np.ndim(p) else p for p in point])
            if isinstance(t, Target):
                t.label, t.kink = f"{prim.name} sample {n} kink {k}", True
                out.append(t)
    return out


def _target(prim, rng, dtype):
    """The first sample's target at ``dtype`` (its largest shape set), or why there is none."""
    reason = "every sample records a composition (checked as a program, not as one rule)"
    for sample in prim.samples:
        shape_set = sample.shapes[-1]

        def draw(sample=sample, shape_set=shape_set):
            return operands(sample, rng, shape_set, dtype)
        try:
            t = target(caller(prim, sample), *draw(), draw=draw)
        except TypeError:           # numpy refuses complex operands here (rfftn's input)
            continue
        if isinstance(t, Target):
            t.label = f"{prim.name} {shape_set} {dtype.name}"
            return t
        if t is not None:
            reason = t
    return reason


def target(call, *inputs, draw=None) -> Target | str | None:
    """The target of the one rule ``call(*inputs)`` fires (a user's rule too); ``draw()`` gives
    fresh inputs for the equivalence test. A string says why there is none (None: the call
    records a composition)."""
    e, ops = rule_operands(call, inputs)
    if e is None:
        return None
    diff = tuple(type(x) is Var and x.aval.is_float for x in e.inputs)
    if not any(diff):
        return "no float operand to differentiate"
    with np.errstate(all="ignore"):
        lifted = lift(e.prim, e.params, ops, diff)
    if lifted.fallback:
        return f"its rule does not lift ({lifted.fallback}): no template to mutate"
    return Target(e.prim, e.prim.name, call, list(inputs), lifted, dict(e.params), e.prim.rule, draw)


# -- comparing values -----------------------------------------------------------------------------

def same(a, b, tol=1e-9) -> bool:
    """Equal to ``tol`` (a zero tangent equals zeros, NaN equals NaN): how a mutant's values are
    told from the original's."""
    if is_zero(a) or is_zero(b):
        return (is_zero(a) or not np.any(a)) and (is_zero(b) or not np.any(b))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if not (np.issubdtype(a.dtype, np.inexact) and np.issubdtype(b.dtype, np.inexact)):
        return bool(np.array_equal(a, b))
    with np.errstate(all="ignore"):
        scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), 1.0)
        close = (np.abs(a - b) <= tol * scale) | (np.isnan(a) & np.isnan(b)) | (a == b)
    return bool(np.all(close))
