"""PyTorch's OpInfo database as a yardstick for ``ad``'s gradients.

    python -m tests.external.opinfo_suite [--ops abs,sin] [--samples 16] [--budget 20] [--json out.json]

For every OpInfo with a NumPy reference (``op.ref``) and float64 gradients, the first 16 of its
sample inputs (``op.sample_inputs('cpu', torch.float64, requires_grad=True)``) are converted to
numpy, and ``ad.grad`` of ``sum(ref(x, *args, **kwargs) * w)`` (random ``w``; every float output
counts) with respect to the first float tensor ``x`` is compared, in each form, with
``torch.autograd.grad`` of the torch op. A sample whose reference value differs from the op's is
skipped: the two functions are not the same. When the gradients differ, central differences of
the reference along a random direction decide which one is wrong.

Classes, worst first: ``wrong gradient`` (ad differs from torch *and* from finite differences),
``crash inside ad`` (an exception that is not ad's own, raised inside ``ad``), ``ad refuses``
(one of ad's errors, raised on the reference's own numpy code), ``ref not traceable`` (the
reference leaves numpy: scipy, Python's math, torch), ``differs from torch`` (ad agrees with
finite differences, torch does not: a subgradient convention), ``pass``, ``skipped``.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import itertools
import json
import re
import signal
import sys
import time
import types
import unittest
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch

import ad

from tests.external.causes import cause, frames, library, normalized, raised_in_ad, refused

FORMS = ("lifted", "closure", "compiled")
CLASSES = ("wrong gradient", "crash inside ad", "ad refuses", "ref not traceable", "differs from torch",
           "pass", "skipped")
RTOL, ATOL = 1e-5, 1e-7


@dataclass
class Sample:
    """One sample's verdict; ``cause`` says why (the error, or the numbers that differ)."""
    op: str
    index: int
    verdict: str
    cause: str = ""
    form: str = ""
    shapes: str = ""
    numbers: dict = field(default_factory=dict)


def load_op_db():
    """(op_db, seconds to import it). torch's testing internals import ``expecttest``, a test-only
    package torch does not install; without it a stand-in is registered (``op_db`` only needs its
    ``TestCase`` as a base class)."""
    start = time.perf_counter()
    try:
        import expecttest  # noqa: F401
    except ModuleNotFoundError:
        sys.modules["expecttest"] = types.SimpleNamespace(TestCase=unittest.TestCase, ACCEPT=False)
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db, time.perf_counter() - start


# -- one sample ---------------------------------------------------------------------------------

class OverBudget(BaseException):
    """The op's time budget ran out during a sample (a BaseException, so that the handlers of
    the errors a sample may raise let it through)."""


@contextlib.contextmanager
def deadline(seconds: float):
    """Raise OverBudget in the block after ``seconds`` (a timer signal: Unix, main thread)."""
    def expire(signum, frame):
        raise OverBudget(f"over the time budget of {seconds:.0f} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _first_float_tensor(sample):
    """The path to the first float tensor among (input, args, kwargs) that requires grad."""
    candidates = [(("input",), sample.input)]
    if isinstance(sample.input, (list, tuple)):
        candidates = [(("input", i), t) for i, t in enumerate(sample.input)]
    candidates += [(("args", i), t) for i, t in enumerate(sample.args)]
    candidates += [(("kwargs", k), t) for k, t in sample.kwargs.items()]
    for path, t in candidates:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad:
            return path, t
    return None, None


def _get(parts, path):
    inp, args, kwargs = parts
    where = {"input": inp, "args": args, "kwargs": kwargs}[path[0]]
    return where if len(path) == 1 else where[path[1]]


def _put(parts, path, x):
    """(input, args, kwargs) with the value at ``path`` replaced by ``x``."""
    inp, args, kwargs = parts
    if path == ("input",):
        return x, args, kwargs
    kind, key = path
    if kind == "input":
        return [x if i == key else v for i, v in enumerate(inp)], args, kwargs
    if kind == "args":
        return inp, tuple(x if i == key else v for i, v in enumerate(args)), kwargs
    return inp, args, {**kwargs, key: x}


def _outputs(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _numpy_parts(sample):
    """The sample as numpy (copies: a reference that writes into its input must not change
    the torch tensors)."""
    def to_numpy(t):
        if isinstance(t, torch.Tensor):
            return t.detach().cpu().numpy().copy()
        if isinstance(t, torch.dtype):
            return torch.empty(0, dtype=t).numpy().dtype.type
        return t
    n = sample.transform(to_numpy)
    return n.input, n.args, n.kwargs


def _shapes(parts) -> str:
    def one(v):
        if isinstance(v, np.ndarray):
            return "x".join(map(str, v.shape)) or "0-d"
        if isinstance(v, (list, tuple)):
            return "[" + ",".join(one(u) for u in v) + "]"
        return repr(v)[:30]
    inp, args, kwargs = parts
    text = ", ".join([one(inp)] + [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])
    return text[:160]


def _foreign_ufunc(exc: BaseException) -> bool:
    """ad names every ufunc without a rule ``np.<name>``, scipy's too: is it one of numpy's?"""
    named = re.match(r"np\.(\w+) has no rule", getattr(exc, "reason", ""))
    via_ufunc = any(f.name == "__array_ufunc__" for f in frames(exc))
    return bool(named) and via_ufunc and not isinstance(getattr(np, named.group(1), None), np.ufunc)


def _error_verdict(exc: BaseException) -> tuple[str, str]:
    """How ``ad.grad`` of the reference failed: the reference leaving numpy (scipy's or torch's
    code, or a scipy ufunc, met ad), a crash inside ad, or one of ad's errors on the reference's
    own numpy code."""
    fs = frames(exc)
    why = cause(exc)
    if _foreign_ufunc(exc) or any(library(f.filename) == "scipy" or library(f.filename) == "torch"
                                  and "testing" not in f.filename for f in fs):
        return "ref not traceable", why
    if refused(exc):
        return "ad refuses", why
    return ("crash inside ad" if raised_in_ad(fs) else "ref not traceable"), why


def _directional_fd(loss, x, u):
    """Central differences of ``loss`` at ``x`` along ``u``, Richardson-extrapolated from two
    steps: (value, error estimate)."""
    def at(h):
        return (loss(x + h * u) - loss(x - h * u)) / (2 * h)
    h = 1e-5 * max(1.0, float(np.max(np.abs(x), initial=0.0)))
    a, b = at(h), at(h / 2)
    return (4 * b - a) / 3, abs(a - b)


@dataclass
class Case:
    """A sample ready to compare: the reference's loss as a function of ``x``, torch's gradient."""
    loss: Callable
    x: np.ndarray
    torch_grad: np.ndarray


def prepare(op, sample, parts, rng) -> Case | str:
    """The comparison to make on one sample, or why there is none."""
    path, x_t = _first_float_tensor(sample)
    if path is None:
        return "no float tensor input that requires grad"
    out_t = _outputs(op(sample.input, *sample.args, **sample.kwargs))
    if any(isinstance(o, torch.Tensor) and o.is_complex() for o in out_t):
        return "complex output"
    floats = [i for i, o in enumerate(out_t)
              if isinstance(o, torch.Tensor) and o.is_floating_point() and o.requires_grad]
    if not floats:
        return "torch gives no gradient"
    try:
        ref_out = _outputs(op.ref(parts[0], *parts[1], **parts[2]))
        same = len(ref_out) == len(out_t) and all(
            np.shape(ref_out[i]) == tuple(out_t[i].shape)
            and np.allclose(np.asarray(ref_out[i], dtype=float), out_t[i].detach().numpy(),
                            rtol=1e-5, atol=1e-6, equal_nan=True) for i in floats)
    except Exception as exc:     # the reference is broken on plain numpy: nothing to compare
        return f"the reference raises on numpy: {type(exc).__name__}: {normalized(str(exc))}"
    if not same:
        return "the reference's value differs from the op's"
    weights = [(i, rng.standard_normal(tuple(out_t[i].shape))) for i in floats]
    loss_t = sum((out_t[i] * torch.from_numpy(w)).sum() for i, w in weights)
    (g_t,) = torch.autograd.grad(loss_t, x_t, allow_unused=True)

    def loss(x):
        inp, args, kwargs = _put(parts, path, x)
        outs = _outputs(op.ref(inp, *args, **kwargs))
        return sum(np.sum(outs[i] * w) for i, w in weights)
    return Case(loss, np.array(_get(parts, path)),
                np.zeros(tuple(x_t.shape)) if g_t is None else g_t.detach().numpy())


def compare(case: Case, form: str, rng) -> tuple[str, str, dict]:
    """(verdict, cause, numbers) of ``ad.grad`` in one form against torch's gradient."""
    try:
        g = np.asarray(ad.grad(case.loss, form=form)(case.x), dtype=float)
    except Exception as exc:
        return (*_error_verdict(exc), {})
    g_t = case.torch_grad
    scale = max(1.0, float(np.max(np.abs(g_t), initial=0.0)))
    if g.shape == g_t.shape and np.allclose(g, g_t, rtol=RTOL, atol=ATOL * scale):
        return "pass", "", {}
    u = rng.standard_normal(case.x.shape)
    fd, err = _directional_fd(case.loss, case.x, u)
    ours = float(np.sum(g * u)) if g.shape == u.shape else float("nan")
    theirs = float(np.sum(g_t * u))
    tol = 1e-4 * max(1.0, abs(fd)) + 10 * err
    numbers = {"ad": ours, "torch": theirs, "finite differences": fd, "fd error": err}
    if abs(ours - fd) <= tol:
        return "differs from torch", "ad agrees with finite differences", numbers
    return "wrong gradient", ("torch agrees with finite differences" if abs(theirs - fd) <= tol
                              else "neither agrees with finite differences (a kink?)"), numbers


def check_sample(op, index: int, sample, rng, forms=FORMS) -> Sample:
    """The verdict on one sample: its worst form's (see the module docstring)."""
    parts = _numpy_parts(sample)
    verdict = Sample(op.full_name, index, "skipped", shapes=_shapes(parts))
    case = prepare(op, sample, parts, rng)
    if isinstance(case, str):
        verdict.cause = case
        return verdict
    verdict.verdict = "pass"
    for form in forms:
        result, why, numbers = compare(case, form, rng)
        if CLASSES.index(result) < CLASSES.index(verdict.verdict):
            verdict.verdict, verdict.cause, verdict.form, verdict.numbers = result, why, form, numbers
    return verdict


# -- the database ------------------------------------------------------------------------------

def _skip_reason(op) -> str | None:
    if op.ref is None:
        return "no NumPy reference"
    if torch.float64 not in op.supported_backward_dtypes("cpu"):
        return "no float64 gradient"
    return None


def check_op(op, samples: int, budget: float, seed: int = 0) -> list[Sample]:
    """The verdicts on the first ``samples`` samples of one op, within ``budget`` seconds."""
    name = op.full_name
    reason = _skip_reason(op)
    if reason:
        return [Sample(name, -1, "skipped", reason)]
    rng = np.random.default_rng(seed)
    results = []
    try:
        with deadline(budget), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            torch.manual_seed(seed)
            for index, sample in enumerate(itertools.islice(op.sample_inputs("cpu", torch.float64, requires_grad=True),
                                                            samples)):
                results.append(check_sample(op, index, sample, rng))
    except OverBudget as exc:
        results.append(Sample(name, len(results), "skipped", str(exc)))
    except Exception as exc:   # the sample generator or the torch op itself failed
        results.append(Sample(name, len(results), "skipped",
                              f"torch's samples or op raise: {type(exc).__name__}: {normalized(str(exc))}"))
    return results


def op_verdict(samples: list[Sample]) -> str:
    """An op's verdict: its worst sample's (skipped only when every sample was)."""
    tried = [s.verdict for s in samples if s.verdict != "skipped"]
    return min(tried, key=CLASSES.index) if tried else "skipped"


def report(results: list[Sample], import_seconds: float, run_seconds: float, n_ops: int) -> str:
    """The shares of each class (of ops and of samples), the reasons for skipping, every wrong
    gradient, crash and disagreement with torch, and the refusals grouped by cause."""
    by_op = collections.defaultdict(list)
    for s in results:
        by_op[s.op].append(s)
    op_classes = collections.Counter(op_verdict(ss) for ss in by_op.values())
    tested_ops = sum(n for c, n in op_classes.items() if c != "skipped")
    tried = [s for s in results if s.verdict != "skipped"]
    sample_classes = collections.Counter(s.verdict for s in tried)
    lines = [f"PyTorch OpInfo against ad: {n_ops} OpInfos; importing op_db took {import_seconds:.1f} s, "
             f"checking {run_seconds:.1f} s", "",
             "| class | ops | share of tested ops | samples | share of tested samples |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for c in CLASSES[:-1]:
        lines.append(f"| {c} | {op_classes[c]} | {_pct(op_classes[c], tested_ops)} | {sample_classes[c]} | "
                     f"{_pct(sample_classes[c], len(tried))} |")
    lines.append(f"| tested | {tested_ops} | | {len(tried)} | |")
    skips = collections.Counter(s.cause for ss in by_op.values() if op_verdict(ss) == "skipped" for s in ss[:1])
    lines += ["", "ops skipped, by reason of their first sample:"]
    lines += [f"- {n} {cause}" for cause, n in skips.most_common()]
    sample_skips = collections.Counter(s.cause for s in results if s.verdict == "skipped" and s.index >= 0)
    lines += ["", "samples skipped, by reason:"] + [f"- {n} {cause}" for cause, n in sample_skips.most_common()]
    for c in ("wrong gradient", "crash inside ad", "differs from torch"):
        bad = [s for s in results if s.verdict == c]
        lines += ["", f"{c} ({len(bad)} samples):"]
        lines += [f"- {s.op} sample {s.index} ({s.shapes}) [{s.form}]: {s.cause}; "
                  + ", ".join(f"{k} {v:.6g}" for k, v in s.numbers.items() if v is not None) for s in bad]
    for c in ("ad refuses", "ref not traceable"):
        causes = collections.defaultdict(set)
        for s in results:
            if s.verdict == c:
                causes[s.cause].add(s.op)
        lines += ["", f"{c}, by cause (ops):"]
        lines += [f"- {len(ops)} {cause}: {', '.join(sorted(ops))}"
                  for cause, ops in sorted(causes.items(), key=lambda kv: -len(kv[1]))]
    return "\n".join(lines)


def _pct(n: int, total: int) -> str:
    return f"{100 * n / total:.0f}%" if total else "-"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated op names (default: all)")
    parser.add_argument("--samples", type=int, default=16, help="samples per op (default 16)")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per op (default 20)")
    parser.add_argument("--json", help="also write every sample's verdict to this file")
    args = parser.parse_args(argv)
    op_db, import_seconds = load_op_db()
    names = set(args.ops.split(",")) if args.ops else None
    ops = [op for op in op_db if names is None or op.name in names or op.full_name in names]
    start = time.perf_counter()
    results = [s for op in ops for s in check_op(op, args.samples, args.budget)]
    print(report(results, import_seconds, time.perf_counter() - start, len(ops)))
    if args.json:
        with open(args.json, "w") as out:
            json.dump([asdict(s) for s in results], out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
