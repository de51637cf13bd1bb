"""Comparing the forms of one function's gradient: every form that applies against the closure
form, finite differences, forward mode, the second derivative, per-example gradients
(``ad.vmap`` of the gradient over a batch, against the loop), HIPS autograd, the JSON round
trip and the ONNX export. What a run covered is kept in a ``Tally`` its caller owns."""
from __future__ import annotations

import os
import types
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ... import serialize, to_onnx
from ...batching import RaggedBatchError
from ...checks.fd import directional_derivative, dot_product_test, pair, random_like
from ...compiler import fused
from ...compiler.codegen import compile_tape
from ...errors import BatchedBranchError, GuardError, NonDifferentiableError
from ...transforms.linearization import jvp
from ...passes import optimize
from ...primitives import REGISTRY
from ...transforms.gradients import grad, grad_tape
from ...transforms.vectorize import vmap
from ...tracing import trace

EXACT = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-3}


class FuzzFailure(AssertionError):
    """Forms of one program's gradient disagree (or one raised); the message is a pytest test."""


@dataclass
class Oracles:
    """Which of the expensive comparisons run (the cheap ones always do)."""
    onnx: bool = True
    autograd: bool = True
    second_order: bool = True
    json: bool = True
    fused: bool = False         # the fused backend: C loops, a compiler run per new kernel


def cpu_time() -> float:
    """CPU seconds of this process and its finished children (the fused backend's compiler)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass
class Tally:
    """What a run covered, kept by whoever runs it (several runs may share one or not)."""
    counts: Counter = field(default_factory=Counter)    # form -> programs it compared
    times: dict = field(default_factory=dict)           # form -> seconds of CPU spent in it
    skipped: Counter = field(default_factory=Counter)   # why a form did not apply -> how often

    @contextmanager
    def timed(self, form: str):
        """Charge the CPU time of the block to ``form``; count it compared if nothing raised."""
        start = cpu_time()
        try:
            yield
        finally:
            self.times[form] = self.times.get(form, 0.0) + cpu_time() - start
        self.counts[form] += 1


def _close(got, want, rtol, what):
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        if np.shape(a) != np.shape(b) or not np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True):
            worst = float(np.max(np.abs(a - b), initial=0.0)) if np.shape(a) == np.shape(b) else np.nan
            raise FuzzFailure(f"{what}: gradient {k} differs (max abs diff {worst:.3g})\n  got  {a!r}\n  want {b!r}")


def _differentiable(xs) -> tuple:
    return tuple(k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.inexact))


def _exact(xs) -> float:
    return max(EXACT.get(np.dtype(np.result_type(x)).type(0).real.dtype, 1e-9) for x in xs
               if np.issubdtype(np.result_type(x), np.inexact))


def compare(f, xs, *, smooth: bool = True, numpy_only: bool = False, family: str = "real",
            domains=None, oracles: Oracles | None = None, rng=None, tally: Tally | None = None) -> list[str]:
    """Every form of ``grad(f)`` at ``xs`` that applies, against the closure form (and finite
    differences, autograd...). Returns the forms compared; raises FuzzFailure at the first
    disagreement. ``numpy_only``: ``f`` reads numpy as the global ``np`` and calls nothing else
    that traces, so autograd differentiates it with ``np`` rebound to ``autograd.numpy``.
    ``family="control"``: see ``compare_control``. ``tally``: where to count (a fresh one if None)."""
    oracles = oracles or Oracles()
    tally = Tally() if tally is None else tally
    rng = rng or np.random.default_rng(0)
    anp = _module("autograd.numpy") if numpy_only and oracles.autograd else None
    f_autograd = None if anp is None else _with_numpy(f, anp)
    if family == "control":
        return compare_control(f, xs, f_autograd=f_autograd, rng=rng, tally=tally)
    argnums = _differentiable(xs)
    rtol = _exact(xs)
    done = ["closure"]
    with np.errstate(all="ignore"):
        with tally.timed("closure"):
            ref = grad(f, argnums, form="closure")(*xs)
        with tally.timed("lifted"):
            raw = grad_tape(f, *xs, argnums=argnums)
            _close(raw(*xs)[1], ref, rtol, "lifted")
        with tally.timed("lifted+passes"):
            gt = optimize(raw)
            _close(gt(*xs)[1], ref, rtol, "lifted+passes")
        with tally.timed("compiled"):
            _close(compile_tape(gt)(*xs)[1], ref, rtol, "compiled")
        done += ["lifted", "lifted+passes", "compiled"]
        if oracles.fused:
            with tally.timed("fused"):
                try:
                    run_fused = fused.Fused(gt)
                except fused.FusedUnavailable:
                    tally.skipped["fused: no C compiler"] += 1
                else:
                    _close(run_fused(*xs)[1], ref, max(rtol, 1e-7), "compiled, fused backend")
                    done.append("fused")
        with tally.timed("vmap"):
            if _per_example(f, xs, argnums, rtol, domains, rng, tally):
                done.append("vmap")
        precise = rtol < 1e-6
        if smooth and precise:
            with tally.timed("finite differences"):
                _finite_differences(f, xs, argnums, ref, domains, rng)
            done.append("finite differences")
        us = [random_like(xs[k], rng) for k in argnums]
        tangents = [None] * len(xs)
        for k, u in zip(argnums, us):
            tangents[k] = u.astype(np.result_type(xs[k]))
        want = sum(pair(g, u) for g, u in zip(ref, us))
        for form in ("lifted", "closure", "compiled"):
            label = "jvp" if form == "lifted" else f"jvp {form}"
            with tally.timed(label):
                try:
                    _, ty = jvp(f, tuple(xs), tuple(tangents), form=form)
                except NonDifferentiableError as exc:      # a declared refusal (odeint), loud
                    tally.skipped[f"{label}: {_refusal(exc)}"] += 1
                    continue
                if not abs(float(np.real(ty)) - want) <= 100 * rtol * max(1.0, abs(want)):
                    raise FuzzFailure(f"{label}: <J u, 1> = {float(np.real(ty))!r} but <u, grad> = {want!r}")
            done.append(label)
        if oracles.second_order and smooth and precise and family == "real" and len(argnums) >= 1:
            with tally.timed("grad of grad"):
                try:
                    _second_order(f, xs, argnums[-1], rng, domains)    # a registry operand, if any
                    done.append("grad of grad")
                except NonDifferentiableError as exc:      # a declared refusal (odeint), loud
                    tally.skipped[f"grad of grad: {_refusal(exc)}"] += 1
        if oracles.json:
            with tally.timed("json"):
                if _json_round_trip(gt, xs, ref, tally):
                    done.append("json")
        if oracles.onnx and family == "real" and not any(np.iscomplexobj(x) for x in xs):
            with tally.timed("onnx"):
                if _onnx(gt, xs, ref, rtol, tally):
                    done.append("onnx")
        if f_autograd is not None:
            with tally.timed("autograd"):
                want = _autograd().grad(f_autograd, argnums)(*xs)
                _close(ref, want, max(rtol, 1e-8), "ad (closure) against HIPS autograd")
            done.append("autograd")
    return done


def _per_example(f, xs, argnums, rtol, domains, rng, tally: Tally, size: int = 3) -> bool:
    """``vmap(grad(f))`` over a batch of ``xs`` and copies of it scaled elementwise by factors in
    [0.9, 1.1] (integer arguments shared) against the closure gradient example by example. A
    branch on a batched value refuses by design (BatchedBranchError): counted as skipped."""
    axes = tuple(0 if k in argnums else None for k in range(len(xs)))
    batch = [list(xs)]
    for _ in range(size - 1):
        ex = []
        for k, x in enumerate(xs):
            if k in argnums:
                x = np.asarray(x * rng.uniform(0.9, 1.1, np.shape(x)), dtype=np.result_type(x))
                if domains is not None and domains[k] is not None and not np.iscomplexobj(x):
                    x = np.clip(x, *domains[k]).astype(np.result_type(xs[k]))
            ex.append(x)
        batch.append(ex)
    stacked = [np.stack([ex[k] for ex in batch]) if a == 0 else xs[k] for k, a in enumerate(axes)]
    try:
        got = vmap(grad(f, argnums), in_axes=axes)(*stacked)
    except (BatchedBranchError, RaggedBatchError, NonDifferentiableError) as exc:
        tally.skipped[f"vmap: {type(exc).__name__}"] += 1
        return False
    for b, ex in enumerate(batch):
        want = grad(f, argnums, form="closure")(*ex)
        _close([g[b] for g in got], want, max(rtol, 1e-9), f"vmap(grad) example {b} against grad")
    return True


def _refusal(exc) -> str:
    """The primitive a NonDifferentiableError names (its message's first words otherwise)."""
    names = [name for name in REGISTRY if f" {name}:" in str(exc) or f" {name} " in str(exc)]
    return max(names, key=len) if names else " ".join(str(exc).split()[:6])


def _finite_differences(f, xs, argnums, ref, domains, rng):
    cts = [None] * len(xs)
    for k, g in zip(argnums, ref):
        cts[k] = g

    def pullback(v):
        return [None if c is None else c * v for c in cts]
    for lhs, rhs, est in dot_product_test(f, pullback, xs, rng=rng, directions=1, domains=domains,
                                          wrt=list(argnums)):
        if not abs(lhs - rhs) <= 1e-6 * max(1.0, abs(lhs)) + 10 * est.error:
            raise FuzzFailure(f"finite differences: <J u, v> = {lhs!r} but <u, J^T v> = {rhs!r} "
                              f"(estimate error {est.error:.2g})")


def _second_order(f, xs, k, rng, domains):
    """grad of (grad f . v) with respect to x_k against finite differences of grad f . v."""
    v = random_like(xs[k], rng)
    g = grad(f, k)

    def gv(x):
        return np.sum(np.real(g(*xs[:k], x, *xs[k + 1:]) * v))
    hvp = grad(gv)(xs[k])
    u = random_like(xs[k], rng)
    est = directional_derivative(gv, [xs[k]], [u], domains=None if domains is None else [domains[k]])
    want, got = float(est.value[0]), pair(hvp, u)
    if not abs(got - want) <= 1e-5 * max(1.0, abs(want)) + 10 * est.error:
        raise FuzzFailure(f"grad of grad: <H v, u> = {got!r} but finite differences of <grad, v> give {want!r}")


def _json_round_trip(gt, xs, ref, tally: Tally) -> bool:
    try:
        text = serialize.dumps(gt)
    except serialize.NotSerializableError:
        tally.skipped["json: NotSerializableError"] += 1
        return False
    loaded = serialize.loads(text)
    _, grads = loaded(*xs)
    _close(grads, ref, _exact(xs), "the gradient tape saved as JSON and loaded")
    return True


def _onnx(gt, xs, ref, rtol, tally: Tally) -> bool:
    ort = _module("onnxruntime")
    if ort is None:
        return False
    try:
        model = to_onnx(gt, guards="branch")          # run at the inputs that took the branch
    except (NotImplementedError, serialize.NotSerializableError) as exc:    # LoweringError: no lowering
        tally.skipped[f"onnx: {type(exc).__name__}"] += 1
        return False
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as exc:        # onnxruntime has no kernel for an operator at this dtype
        if "NOT_IMPLEMENTED" not in str(exc):
            raise
        tally.skipped["onnx: " + str(exc).split("implementation for ")[-1].split(" node")[0]] += 1
        return False
    feeds = {i.name: np.asarray(x) for i, x in zip(sess.get_inputs(), xs)}
    got = sess.run(None, feeds)[1:]
    _close(got, ref, max(rtol, 1e-7), "the ONNX export run in onnxruntime")
    return True


def _with_numpy(f, xp):
    """``f`` with the global ``np`` rebound to ``xp`` (autograd.numpy)."""
    return types.FunctionType(f.__code__, {**f.__globals__, "np": xp}, f.__name__, f.__defaults__, f.__closure__)


def _module(name):
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


def _autograd():
    return _module("autograd")


def compare_control(f, xs, *, f_autograd=None, rng=None, tally: Tally | None = None) -> list[str]:
    """Control flow: ``grad(f)`` in every form, called at ``xs`` and at two points that tend to
    take other branches (it must re-trace), against autograd (when given) or the closure form; a
    tape traced at the first point, run at the others, gives the eager value or raises
    GuardError; finite differences where the branches do not change nearby; the compiled
    gradient tape of the first point refuses other branches (GuardError) or is right."""
    rng = rng or np.random.default_rng(0)
    tally = Tally() if tally is None else tally
    x0, x1 = xs
    points = [(x0, x1), (-x0, -x1), (2.5 * x0, 0.5 * x1)]
    grads = {form: grad(f, (0, 1), form=form) for form in ("closure", "lifted", "compiled")}
    oracle = _autograd().grad(f_autograd, (0, 1)) if f_autograd is not None and _autograd() else None
    first_tape = trace(f, *points[0])
    compiled = compile_tape(optimize(grad_tape(f, *points[0], argnums=(0, 1))))
    with np.errstate(all="ignore"), tally.timed("control"):
        for p in points:
            want = oracle(*p) if oracle else grads["closure"](*p)
            for form, g in grads.items():
                _close(g(*p), want, 1e-8, f"{form} at a re-trace" + (" against autograd" if oracle else ""))
            if _same_branches(first_tape, p):
                if not np.allclose(first_tape(*p), f(*p), rtol=1e-12):
                    raise FuzzFailure("a tape run on inputs taking its branches gives another value")
            _control_fd(f, trace(f, *p), p, want, rng)
            try:
                value, got = compiled(*p)
            except GuardError:
                continue
            if not np.allclose(value, f(*p), rtol=1e-12):
                raise FuzzFailure("the compiled gradient tape ran another branch without GuardError")
            _close(got, want, 1e-8, "the compiled gradient tape of the first trace")
        for form, g in grads.items():                     # back to the first point: no re-trace
            before = g.cache_info().traces
            _close(g(*points[0]), grads["closure"](*points[0]), 1e-8, form)
            if g.cache_info().traces != before:
                raise FuzzFailure(f"{form}: the first inputs were traced again")
    return ["closure", "lifted", "compiled", "guards"] + (["autograd"] if oracle else [])


def _same_branches(tape, xs) -> bool:
    try:
        tape(*xs)
    except GuardError:
        return False
    return True


def _control_fd(f, tape, xs, grads, rng):
    us = [rng.standard_normal(np.shape(x)) for x in xs]
    h = 1e-4
    stencil = [[x + s * u for x, u in zip(xs, us)] for s in (h, -h, h / 2, -h / 2)]
    if not all(_same_branches(tape, p) for p in stencil):
        return
    plus, minus, plus2, minus2 = (f(*p) for p in stencil)
    fd = (4 * (plus2 - minus2) / h - (plus - minus) / (2 * h)) / 3
    got = sum(float(np.dot(np.ravel(g), np.ravel(u))) for g, u in zip(grads, us))
    if not abs(got - fd) <= 1e-6 * max(1.0, abs(fd)):
        raise FuzzFailure(f"finite differences: {fd!r}, the gradient says {got!r}")
