"""Mutation testing of the rule library: how many wrong rules would the checker catch?

For every registered primitive with samples, its rule is lifted (``ad.lift``) at one sample
(the first sample's largest shape set, its first dtype) into a pullback template: a small tape
reading the operands, the primal body's values and the cotangent. Each mutation operator
rewrites that tape into a *mutant* (a sign flipped, a term dropped, operands swapped, the wrong
operand transposed, a reduction forgotten, the wrong residual read, a value doubled, the
cotangent returned unchanged, the cotangent written in place). ``template_rule`` turns a
template back into an ordinary rule, so the mutant is checked exactly like a candidate rule:
``check_rule(call, *operands, rule=mutant_rule)``; no registered rule is replaced.

A mutant is *caught* when some check fails. A mutant whose gradient equals the original's is
*equivalent* (no check could or should catch it): that is decided numerically, on the sample's
operands and on fresh draws with random cotangents, after projecting as the builder does, and
named by its structural reason when it has one (the mutated value never reaches a cotangent,
it is zero, a reduction to the same shape). A mutant that cannot even be evaluated (shapes that
do not fit) is *stillborn* and not counted. The score is caught / (caught + survived).

    >>> from ad.checks import mutants
    >>> report = mutants.run(["sin"])
    >>> report.score, len(report.survivors)
    (1.0, 0)
"""
from __future__ import annotations

import itertools
import multiprocessing
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import nn  # noqa: F401  (ad.nn's rules are mutated too)
from ..api import trace
from ..core_prims import add_p, project, sum_to_p, transpose_p
from ..lib.elementwise import multiply_p, negative_p, subtract_p
from ..lib.reductions import mean_p, sum_p
from ..lift import LiftedRule, lift
from ..primitives import REGISTRY, Primitive
from ..samples import C128, caller, operands
from ..scipy import integrate, linalg, signal, special, stats  # noqa: F401  (the whole registry is mutated)
from ..tangents import NoTangent, ZeroTangent, is_zero
from ..tape import Aval, Eqn, Lit, Origin, Var, eval_eqns, eval_tape, format_eqn, freeze_params
from ..tracer import Tracer
from .base import random_cotangent
from .rule import check_rule

OPERATORS = ("sign", "drop_term", "swap", "transpose", "reduction", "residual", "scale",
             "identity", "in_place")
REDUCTIONS = (sum_to_p, sum_p, mean_p)    # forgetting one leaves an unreduced cotangent
RESIDUAL_CHOICES = 2       # wrong residuals tried per read (the first others of the same aval)
EQUIVALENCE_DRAWS = 3      # fresh operand draws (besides the sample's) that must agree


# -- the template a rule is lifted into, and back --------------------------------------------------

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


# -- mutation operators: each yields (site, bwd, grads[, writes]) ---------------------------------

_fresh = itertools.count(10**9)


def _var(aval) -> Var:
    return Var(next(_fresh), aval)


def _eqn(prim, inputs, outputs, params=None, like: Eqn | None = None) -> Eqn:
    return Eqn(prim, tuple(inputs), freeze_params(params or {}), tuple(outputs),
               like.source if like else None, like.origin if like else Origin("pullback"))


def _rewire(eqns, grads, old, new):
    """Equations and grads reading ``new`` wherever they read ``old``."""
    sub = lambda x: new if x is old else x  # noqa: E731
    return (tuple(e if old not in e.inputs else Eqn(e.prim, tuple(map(sub, e.inputs)), e.params, e.outputs,
                                                     e.source, e.origin) for e in eqns),
            tuple(map(sub, grads)))


def _follow(bwd, grads, i, make):
    """Insert ``w = make(v)`` after equation ``i`` (output ``v``) and read ``w`` instead of ``v``."""
    v = bwd[i].outputs[0]
    w = _var(v.aval)
    rest, grads = _rewire(bwd[i + 1:], grads, v, w)
    return bwd[:i + 1] + (make(v, w, bwd[i]),) + rest, grads


def _float_outputs(bwd):
    return [i for i, e in enumerate(bwd) if len(e.outputs) == 1 and e.outputs[0].aval.is_float]


def op_sign(t: Target):
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i in _float_outputs(bwd):
        yield f"negate {format_eqn(bwd[i])}", *_follow(
            bwd, grads, i, lambda v, w, e: _eqn(negative_p, [v], [w], like=e))


def op_scale(t: Target):
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i in _float_outputs(bwd):
        yield f"double {format_eqn(bwd[i])}", *_follow(
            bwd, grads, i, lambda v, w, e: _eqn(multiply_p, [v, Lit.of(2.0)], [w], like=e))


def op_drop_term(t: Target):
    """``a + b`` becomes ``a`` or ``b``; ``a - b`` becomes ``a`` or ``-b``."""
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if e.prim not in (add_p, subtract_p) or len(e.inputs) != 2:
            continue
        out = e.outputs[0]
        for k in (0, 1):
            kept = e.inputs[1 - k]
            if e.prim is subtract_p and k == 0:
                w = _var(kept.aval)
                rest, g = _rewire(bwd[i + 1:], grads, out, w)
                yield (f"drop {e.inputs[0]!r} from {format_eqn(e)}",
                       bwd[:i] + (_eqn(negative_p, [kept], [w], like=e),) + rest, g)
            else:
                rest, g = _rewire(bwd[i + 1:], grads, out, kept)
                yield f"drop {e.inputs[k]!r} from {format_eqn(e)}", bwd[:i] + rest, g


def op_swap(t: Target, env):
    """Swap the operands of a binary equation, where that changes its value (commutative
    operations, and equal operands, are skipped: the mutant would be equivalent by construction)."""
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if len(e.inputs) != 2 or len(e.outputs) != 1 or e.inputs[0] is e.inputs[1]:
            continue
        swapped = Eqn(e.prim, e.inputs[::-1], e.params, e.outputs, e.source, e.origin)
        try:
            with np.errstate(all="ignore"):
                same = _same(env[e.outputs[0]], eval_eqns([swapped], dict(env))[e.outputs[0]])
        except Exception:
            same = False        # shapes that do not fit: a stillborn mutant, sorted out later
        if not same:
            yield f"swap the operands of {format_eqn(e)}", bwd[:i] + (swapped,) + bwd[i + 1:], grads


def op_transpose(t: Target):
    """Transpose an operand (its last two axes) of a matmul-like equation (multilinear and not
    elementwise: matmul, einsum, matvec): ``dy @ B.T`` becomes ``dy @ B``."""
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if e.prim.linear is None or e.prim.linear.jointly or e.prim.elementwise or len(e.inputs) < 2:
            continue
        for k, x in enumerate(e.inputs):
            if type(x) is not Var or x.aval.ndim < 2:
                continue
            axes = tuple(range(x.aval.ndim - 2)) + (x.aval.ndim - 1, x.aval.ndim - 2)
            xt = _var(Aval(tuple(x.aval.shape[a] for a in axes), x.aval.dtype))
            inputs = e.inputs[:k] + (xt,) + e.inputs[k + 1:]
            new = (_eqn(transpose_p, [x], [xt], {"axes": axes}, like=e),
                   Eqn(e.prim, inputs, e.params, e.outputs, e.source, e.origin))
            yield f"transpose {x!r} in {format_eqn(e)}", bwd[:i] + new + bwd[i + 1:], grads


def op_reduction(t: Target):
    bwd, grads = t.lifted.bwd, t.lifted.grads
    for i, e in enumerate(bwd):
        if e.prim in REDUCTIONS:
            rest, g = _rewire(bwd[i + 1:], grads, e.outputs[0], e.inputs[0])
            whose = ", project()'s" if e.origin.kind == "project" else ""
            yield f"forget {format_eqn(e)}{whose}", bwd[:i] + rest, g


def op_residual(t: Target):
    """Read another forward value of the same aval in place of a residual."""
    lifted = t.lifted
    pool = [a for a in lifted.args if type(a) is Var] + [v for e in lifted.fwd for v in e.outputs]
    residuals = set(lifted.residuals)
    for i, e in enumerate(lifted.bwd):
        for k, x in enumerate(e.inputs):
            if x not in residuals:
                continue
            others = [v for v in pool if v is not x and v.aval == x.aval][:RESIDUAL_CHOICES]
            for other in others:
                inputs = e.inputs[:k] + (other,) + e.inputs[k + 1:]
                new = Eqn(e.prim, inputs, e.params, e.outputs, e.source, e.origin)
                yield (f"read {other!r} for {x!r} in {format_eqn(e)}",
                       lifted.bwd[:i] + (new,) + lifted.bwd[i + 1:], lifted.grads)


def op_identity(t: Target):
    """Return an output's cotangent unchanged as an operand's cotangent."""
    lifted = t.lifted
    for k, a in enumerate(lifted.args):
        if type(a) is not Var or not a.aval.is_float:
            continue
        for j, ct in enumerate(lifted.cts):
            if lifted.grads[k] is ct:
                continue
            grads = lifted.grads[:k] + (ct,) + lifted.grads[k + 1:]
            yield f"return cotangent {j} as operand {k}'s", lifted.bwd, grads


def op_in_place(t: Target):
    for j in range(t.n_cts):
        yield f"double cotangent {j} in place after use", t.lifted.bwd, t.lifted.grads, j


def mutants(t: Target, env: dict) -> list[Mutant]:
    """Every mutant of the target's template, operator by operator (``env``: the template's
    values at the sample, which tell commutative swaps apart)."""
    made = {"sign": op_sign(t), "drop_term": op_drop_term(t), "swap": op_swap(t, env),
            "transpose": op_transpose(t), "reduction": op_reduction(t), "residual": op_residual(t),
            "scale": op_scale(t), "identity": op_identity(t), "in_place": op_in_place(t)}
    return [Mutant(op, *m) for op in OPERATORS for m in made[op]]


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


# -- equivalence ----------------------------------------------------------------------------------

def _same(a, b, tol=1e-9) -> bool:
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


def _run_pullback(t: Target, m: Mutant, ops, cts):
    """The mutant's raw cotangents at ``ops`` and ``cts``, and the cotangents afterwards."""
    cts = [np.array(c, copy=True) for c in cts]
    with np.errstate(all="ignore"):
        _, pb = template_rule(t, m)(*ops, **t.params)
        raw = pb(tuple(cts) if t.prim.multiple_results else cts[0])
    return raw, cts


def _projected(t: Target, raw) -> list | None:
    """Cotangents projected as the builder does (None if one cannot be: a wrong shape)."""
    try:
        with np.errstate(all="ignore"):
            return [project(a.aval, g) for a, g in zip(t.lifted.args, raw)]
    except ValueError:
        return None


@dataclass
class Point:
    """Where mutants are compared: the call's inputs, the rule's operands, random cotangents."""
    inputs: list
    ops: list
    cts: list


def draws(t: Target, rng: np.random.Generator) -> list[Point]:
    """The sample's point, then fresh draws of the same avals (a draw the call turns into other
    avals is left out), each with random cotangents."""
    avals = [a.aval for a in t.lifted.args]
    inputs = [t.inputs] + ([t.draw() for _ in range(EQUIVALENCE_DRAWS)] if t.draw is not None else [])
    points = []
    for xs in inputs:
        _, ops = rule_operands(t.call, xs)
        if ops is not None and all(np.shape(v) == a.shape for v, a in zip(ops, avals)):
            cts = [random_cotangent(c.aval.shape, c.aval.dtype, rng) for c in t.lifted.cts]
            points.append(Point(xs, ops, cts))
    return points


def differs(t: Target, m: Mutant, point: Point, want) -> bool:
    """Do the mutant's projected cotangents (or the cotangents it leaves behind) differ from the
    original's (``want``: its projected cotangents and cotangents afterwards) at ``point``?"""
    raw, after = _run_pullback(t, m, point.ops, point.cts)
    got = _projected(t, raw)
    return got is None or not all(_same(g, w) for g, w in zip(got, want[0])) \
        or not all(_same(a, c) for a, c in zip(after, want[1]))


def equivalence(t: Target, m: Mutant, points, reference) -> str | None:
    """Why the mutant computes what the original does (None if it does not, at some point)."""
    if any(differs(t, m, p, want) for p, want in zip(points, reference)):
        return None
    where = ("at the kink point (a kink target has no other)" if t.kink else
             f"at the sample and {len(points) - 1} fresh draw(s), random cotangents")
    return _why(t, m) or f"equal cotangents {where}"


def _why(t: Target, m: Mutant) -> str | None:
    """A structural reason, where one is plain."""
    if m.writes is not None:
        return None
    if m.operator == "reduction" and m.site.endswith("project()'s"):
        return "the forgotten sum_to is project()'s, and the builder projects every cotangent again"
    used = {g for g in m.grads if type(g) is Var}
    for e in reversed(m.bwd):
        if any(v in used for v in e.outputs):
            used.update(x for x in e.inputs if type(x) is Var)
    new = [e for e in m.bwd if not any(e is o for o in t.lifted.bwd)]
    if new and m.grads == t.lifted.grads and not any(v in used for e in new for v in e.outputs):
        return "the mutated value reaches no cotangent"
    return None


# -- running ---------------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What became of one mutant: caught (``checks`` names the failing checks), survived,
    equivalent (``why``) or stillborn (``why``: it cannot be evaluated)."""
    primitive: str
    label: str
    operator: str
    site: str
    status: str
    checks: tuple = ()
    why: str = ""


@dataclass
class MutationReport:
    outcomes: list
    skipped: dict
    baseline: dict = field(default_factory=dict)   # primitive -> checks its unmutated template fails
    seconds: float = 0.0                             # wall time
    cpu: dict = field(default_factory=dict)          # primitive -> CPU seconds of its mutants

    def counted(self, rows=None):
        return [o for o in (self.outcomes if rows is None else rows) if o.status in ("caught", "survived")]

    @property
    def score(self) -> float:
        rows = self.counted()
        return sum(o.status == "caught" for o in rows) / max(len(rows), 1)

    @property
    def survivors(self) -> list:
        return [o for o in self.outcomes if o.status == "survived"]

    def by_status(self) -> Counter:
        return Counter(o.status for o in self.outcomes)

    def by_check(self) -> Counter:
        """How many counted mutants each check catches (a mutant may be caught by several)."""
        return Counter(c for o in self.counted() for c in o.checks)

    def by_operator(self) -> dict:
        return {op: self._score([o for o in self.counted() if o.operator == op]) for op in OPERATORS}

    def by_primitive(self) -> dict:
        names = dict.fromkeys(o.primitive for o in self.outcomes)
        return {n: self._score([o for o in self.counted() if o.primitive == n]) for n in names}

    @staticmethod
    def _score(rows) -> tuple[int, int]:
        return sum(o.status == "caught" for o in rows), len(rows)

    def summary(self, every_primitive: bool = False) -> str:
        """The score, per operator, per check, the primitives below 100% (every one's score with
        ``every_primitive``), and each survivor."""
        s = self.by_status()
        rows = self.counted()
        lines = [f"mutation score: {s['caught']} of {len(rows)} non-equivalent mutants caught "
                 f"({100 * self.score:.1f}%); {s['equivalent']} equivalent, {s['stillborn']} stillborn; "
                 f"{len({o.primitive for o in self.outcomes})} primitives, {len(self.skipped)} without a "
                 f"template, {len(self.baseline)} whose template fails unmutated; {self.seconds:.0f} s "
                 f"({sum(self.cpu.values()):.0f} s of CPU in the workers)"]
        lines.append("by operator: " + ", ".join(f"{op} {c}/{n}" for op, (c, n) in self.by_operator().items()))
        lines.append("by check (mutants each catches, of the counted): " + ", ".join(
            f"{name} {k} ({100 * k / max(len(rows), 1):.0f}%)"
            for name, k in sorted(self.by_check().items(), key=lambda kv: -kv[1])))
        weak = [(n, c, k) for n, (c, k) in self.by_primitive().items() if c < k or every_primitive]
        if weak:
            lines.append(("by primitive: " if every_primitive else "primitives below 100%: ")
                         + ", ".join(f"{n} {c}/{k}" for n, c, k in weak))
        for o in self.survivors:
            lines.append(f"SURVIVED {o.label}: {o.operator}: {o.site}")
        for name, checks in self.baseline.items():
            lines.append(f"BASELINE {name}: the unmutated template fails {checks}")
        return "\n".join(lines)


def score_target(t: Target, seed: int = 0, **options) -> tuple[list[Outcome], list | None]:
    """Every mutant of one target with its outcome; the second item lists the checks the
    unmutated template fails (None when it passes: only then are its mutants meaningful).
    A mutant equal to the original at the sample but not at a fresh draw is checked there too."""
    rng = np.random.default_rng(seed)
    base = check_rule(t.call, *t.inputs, rule=template_rule(t, original(t)), seed=seed, **options)
    if not base.ok:
        return [], [f.name for f in base.failures]
    points = draws(t, rng)
    reference = [_run_pullback(t, original(t), p.ops, p.cts) for p in points]
    reference = [(_projected(t, raw), after) for raw, after in reference]
    env: dict = {}
    t.lifted.evaluate(points[0].ops, points[0].cts, env)
    out = []
    for m in mutants(t, env):
        row = dict(primitive=t.prim.name, label=t.label, operator=m.operator, site=m.site)
        try:
            _run_pullback(t, m, points[0].ops, points[0].cts)
        except Exception as exc:
            out.append(Outcome(**row, status="stillborn", why=f"{type(exc).__name__}: {exc}"[:200]))
            continue
        why = equivalence(t, m, points, reference)
        if why is not None:
            out.append(Outcome(**row, status="equivalent", why=why))
            continue
        failed, where = (), ""
        for k, (p, want) in enumerate(zip(points, reference)):
            if k > 0 and not differs(t, m, p, want):
                continue
            report = check_rule(t.call, *p.inputs, rule=template_rule(t, m), seed=seed, **options)
            failed = tuple(f.name for f in report.failures)
            if failed:
                where = "" if k == 0 else f"caught at fresh draw {k} (at the sample it equals the original)"
                break
        if not failed and _one_subgradient(t):
            out.append(Outcome(**row, status="equivalent", why=SUBGRADIENT))
            continue
        out.append(Outcome(**row, status="caught" if failed else "survived", checks=failed, why=where))
    return out, None


SUBGRADIENT = ("another subgradient at a kink: the primitive is elementwise in its one differentiated operand, "
               "so the one-sided bracket it passes (fd.dot_product) is the whole subdifferential")


def _one_subgradient(t: Target) -> bool:
    """At a kink of an elementwise primitive differentiated in one operand, every value between
    the one-sided derivatives is a correct rule (relu's 0 or 1 at 0, |x|'s -1 to 1)."""
    return t.kink and t.prim.elementwise and sum(type(a) is Var and a.aval.is_float for a in t.lifted.args) == 1


def _score_one(args):
    """Every target of one primitive: its outcomes, the checks its unmutated templates fail
    (None if none), its CPU seconds."""
    name, seed, options = args
    start = time.process_time()
    found, _ = targets([name], seed=seed)
    rows, failing = [], []
    for t in found:
        more, base = score_target(t, seed=seed, **options)
        rows.extend(more)
        failing.extend(f"{t.label}: {c}" for c in base or ())
    return name, (rows, failing or None, time.process_time() - start)


def run(names=None, *, workers: int = 1, seed: int = 0, progress=None, **options) -> MutationReport:
    """Mutate and check every target (``names``: only these primitives), with ``workers``
    processes; ``progress(done, total, label)`` as the CLI's bar."""
    start = time.perf_counter()
    found, skipped = targets(names, seed=seed)
    todo = [(name, seed, options) for name in dict.fromkeys(t.prim.name for t in found)]
    outcomes, baseline, cpu = [], {}, {}
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.imap(_score_one, todo)
            results = _collect(results, todo, progress)
    else:
        results = _collect(map(_score_one, todo), todo, progress)
    for name, (rows, base, seconds) in results:
        outcomes.extend(rows)
        cpu[name] = seconds
        if base is not None:
            baseline[name] = base
    return MutationReport(outcomes, skipped, baseline, time.perf_counter() - start, cpu)


def _collect(results, todo, progress):
    done = []
    for k, r in enumerate(results):
        if progress is not None:
            progress(k, len(todo), r[0])
        done.append(r)
    if progress is not None:
        progress(len(todo), len(todo), "done")
    return done


# -- the record in docs/checks.md ------------------------------------------------------------------

BEGIN, END = "<!-- mutants: generated by ad-check --mutants --record; do not edit -->", "<!-- mutants: end -->"


def markdown(report: MutationReport, command: str, date: str) -> str:
    """The generated part of the "Mutation testing" section: figures, survivors, equivalents."""
    s, rows = report.by_status(), report.counted()
    lines = [f"Run {date}, `{command}` ({report.seconds:.0f} s, {sum(report.cpu.values()):.0f} s of CPU): **{s['caught']} of {len(rows)} "
             f"non-equivalent mutants caught ({100 * report.score:.2f}%)** over "
             f"{len({o.primitive for o in report.outcomes})} primitives; {s['equivalent']} equivalent and "
             f"{s['stillborn']} stillborn mutants are not counted.", "",
             "| operator | caught / mutants | equivalent | stillborn |", "| --- | --- | --- | --- |"]
    for op, (c, n) in report.by_operator().items():
        eq = sum(o.operator == op and o.status == "equivalent" for o in report.outcomes)
        sb = sum(o.operator == op and o.status == "stillborn" for o in report.outcomes)
        lines.append(f"| {op} | {c} / {n} | {eq} | {sb} |")
    lines += ["", "| check | mutants it fails | share of the counted |", "| --- | ---: | ---: |"]
    lines += [f"| `{name}` | {k} | {100 * k / max(len(rows), 1):.1f}% |"
              for name, k in sorted(report.by_check().items(), key=lambda kv: (-kv[1], kv[0]))]
    lines += ["", "Why the equivalent mutants are equivalent:", ""]
    reasons = Counter(o.why.split(" at ")[0] if o.why.startswith("equal cotangents") else o.why
                      for o in report.outcomes if o.status == "equivalent")
    lines += [f"- {why}: {k}" for why, k in reasons.most_common()]
    weak = [(n, c, k) for n, (c, k) in report.by_primitive().items() if c < k]
    lines += ["", "Primitives below 100%: " + (", ".join(f"`{n}` {c}/{k}" for n, c, k in weak) or "none") + "."]
    lines += ["", "Surviving mutants:" if report.survivors else "Surviving mutants: none.", ""]
    lines += [f"- `{o.label}`, {o.operator}: {o.site}" for o in report.survivors]
    if report.skipped:
        lines += ["", "Primitives without a template to mutate: " + "; ".join(
            f"`{n}` ({why})" for n, why in report.skipped.items()) + "."]
    if report.baseline:
        lines += ["", "Templates failing unmutated (their mutants are not run): " + "; ".join(
            f"`{n}` ({', '.join(c)})" for n, c in report.baseline.items()) + "."]
    return "\n".join(lines)


def record(report: MutationReport, path: str, command: str):
    """Rewrite the generated part of ``path`` (between ``BEGIN`` and ``END``) with the report."""
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} has no generated mutation-testing section (the lines {BEGIN!r} and {END!r})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = markdown(report, command, time.strftime("%Y-%m-%d", time.gmtime()))
    with open(path, "w") as f:
        f.write(f"{head}{BEGIN}\n{body}\n{END}{tail}")
