"""Guards: what Python control flow on traced values costs. A 50-step loop whose every step
branches on a traced value (``if np.sum(x) > 0``), against the same program with the branch
taken written out (no guards) and with ``np.where`` (both branches computed, no guards), each
re-run on inputs that keep the branches, and against the very same tape with its guard equations
deleted (what the guards themselves cost); and what a call that breaks a guard costs (it
re-traces) against a call that keeps them."""
from __future__ import annotations

import time

from bench.common import format_time, measure, table

import numpy as np  # noqa: E402

import ad  # noqa: E402

STEPS, N = 50, 16


def branchy(x):
    for _ in range(STEPS):
        if np.sum(x) > 0:
            x = np.sin(x) * 0.9
        else:
            x = np.cos(x) * 0.9
    return np.sum(x)


def straight(x):
    for _ in range(STEPS):
        x = np.sin(x) * 0.9
    return np.sum(x)


def branchless(x):
    for _ in range(STEPS):
        x = np.where(np.sum(x) > 0, np.sin(x), np.cos(x)) * 0.9
    return np.sum(x)


def grad_by_hand(x, branches=True):
    """The gradient of ``branchy`` (or, without branches, of ``straight``) written by hand."""
    steps = []
    for _ in range(STEPS):
        up = np.sum(x) > 0 if branches else True
        steps.append((x, up))
        x = (np.sin(x) if up else np.cos(x)) * 0.9
    g = np.ones_like(x)
    for x, up in reversed(steps):
        g = g * 0.9 * (np.cos(x) if up else -np.sin(x))
    return g


def run() -> str:
    x = np.abs(np.random.default_rng(0).standard_normal(N)) + 1.0      # every step takes `if`
    parts = []
    np.testing.assert_allclose(ad.grad(branchy)(x), grad_by_hand(x), rtol=1e-12)
    contenders = {"numpy by hand, with the ifs": lambda: grad_by_hand(x),
                  "numpy by hand, branch written out": lambda: grad_by_hand(x, branches=False)}
    guarded = ad.optimize(ad.grad_tape(branchy, x))
    unguarded = guarded.replace(eqns=tuple(e for e in guarded.eqns if e.prim.kind != "guard"),
                                n_forward=guarded.n_forward - STEPS)
    contenders["ad compiled: the same tape, its guards deleted"] = (
        lambda c=ad.compile(unguarded): c(x))
    for form in ("compiled", "lifted"):
        guarded, taken, where = (ad.grad(f, form=form) for f in (branchy, straight, branchless))
        np.testing.assert_allclose(guarded(x), taken(x), rtol=1e-12)
        np.testing.assert_allclose(guarded(x), where(x), rtol=1e-12)
        contenders[f"ad {form}: if on traced values ({STEPS} guards)"] = lambda g=guarded: g(x)
        contenders[f"ad {form}: branch written out"] = lambda g=taken: g(x)
        contenders[f"ad {form}: np.where (both branches)"] = lambda g=where: g(x)
    times = measure(contenders)
    parts.append(table(f"Guards kept (length-{N} vector, {STEPS} steps)", times,
                       "numpy by hand, with the ifs"))
    retrace = []
    for k in range(6):                 # alternate two inputs that take different branches
        g = ad.grad(branchy)
        g(x)
        t0 = time.process_time()
        g(-x)                           # breaks the first guard: re-traces
        broken = time.process_time() - t0
        t0 = time.process_time()
        g(x)
        kept = time.process_time() - t0
        retrace.append((broken, kept))
    broken = sorted(b for b, _ in retrace)[len(retrace) // 2]
    kept = sorted(k for _, k in retrace)[len(retrace) // 2]
    parts.append(f"A call that breaks a guard (re-trace, lift, optimise): {format_time(broken)}; "
                 f"a call that keeps them: {format_time(kept)} ({broken / kept:.0f}x).\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(run())
