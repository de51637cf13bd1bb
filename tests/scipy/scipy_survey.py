"""Which scipy calls trace as plain scipy: docs/scipy.md's measured table, regenerated.

    python -m tests.scipy.scipy_survey [--calls stats.zscore,fft.fft] [--workers 2]

Each call of ``CALLS`` runs inside ``ad.grad`` on a traced float array, in a process of its own,
once with ``SCIPY_ARRAY_API`` unset and once with it set to 1 (scipy reads it once, when it is
imported: this module, imported again by each child, imports it with the child's setting). The
loss is the sum of the squared magnitudes of the call's result, and its gradient is compared with
central finite differences. A call that raises is described by the innermost scipy
frame of the traceback (where scipy converted the traced value, or refused it), or, when no scipy
code ran, as ad's refusal (``refused``: a transform of scipy.fft without a primitive, refused by
ad.scipy.fft's backend). The rows print as markdown.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

import numpy as np
import scipy.fft
import scipy.integrate
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats

import ad
from tests.external.causes import frames, library, normalized
from tests.support import ROOT
from tests.support.numeric import fd_grad

# the traced argument: six floats in (0, 1) (scipy's inputs below are built from it)
X = "np.linspace(0.3, 0.9, 6)"
# name -> the call, a Python expression of the traced ``x``; ``A`` is a traced 3 x 3 matrix built
# from x, ``c`` a traced complex vector, ``X2`` a traced 2 x 3 array
CALLS = {
    "special.gammaln (a ufunc)": "scipy.special.gammaln(x)",
    "special.ndtr (a ufunc)": "scipy.special.ndtr(x)",
    "special.erf (a ufunc)": "scipy.special.erf(x)",
    "special.xlogy (a ufunc)": "scipy.special.xlogy(x, x + 1)",
    "special.logsumexp": "scipy.special.logsumexp(x)",
    "special.softmax": "scipy.special.softmax(x)",
    "special.log_softmax": "scipy.special.log_softmax(x)",
    "special.polygamma": "scipy.special.polygamma(1, x)",
    "special.multigammaln": "scipy.special.multigammaln(x + 3, 2)",
    "stats.norm.logpdf": "scipy.stats.norm.logpdf(x, 0.5, 2.0)",
    "stats.norm.cdf": "scipy.stats.norm.cdf(x)",
    "stats.t.logpdf": "scipy.stats.t.logpdf(x, 3.0)",
    "stats.gamma.logpdf": "scipy.stats.gamma.logpdf(x, 2.0)",
    "stats.poisson.logpmf (traced mu)": "scipy.stats.poisson.logpmf(np.arange(6), x + 1)",
    "stats.multivariate_normal.logpdf": "scipy.stats.multivariate_normal.logpdf(x[:3], np.zeros(3), np.eye(3))",
    "stats.dirichlet.logpdf": "scipy.stats.dirichlet.logpdf(x[:3] / np.sum(x[:3]), np.array([1.5, 2.0, 2.5]))",
    "stats.Normal(...).logpdf": "scipy.stats.Normal(mu=0.5, sigma=2.0).logpdf(x)",
    "stats.zscore": "scipy.stats.zscore(x)",
    "stats.moment": "scipy.stats.moment(x, order=3)",
    "stats.skew": "scipy.stats.skew(x)",
    "stats.gmean": "scipy.stats.gmean(x)",
    "stats.entropy": "scipy.stats.entropy(x)",
    "signal.convolve (direct)": "scipy.signal.convolve(x, x[:3], method='direct')",
    "signal.correlate (direct)": "scipy.signal.correlate(x, x[:3], method='direct')",
    "signal.fftconvolve": "scipy.signal.fftconvolve(x, x[:3])",
    "signal.fftconvolve (a plain kernel)": "scipy.signal.fftconvolve(x, np.array([1.0, -2.0, 0.5]))",
    "linalg.solve_triangular": "scipy.linalg.solve_triangular(np.triu(A), x[:3])",
    "linalg.cho_factor": "scipy.linalg.cho_factor(A @ A.T)[0]",
    "linalg.cho_solve": "scipy.linalg.cho_solve((np.linalg.cholesky(A @ A.T), True), x[:3])",
    "linalg.cholesky": "scipy.linalg.cholesky(A @ A.T)",
    "linalg.solve": "scipy.linalg.solve(A, x[:3])",
    "linalg.det": "scipy.linalg.det(A)",
    "linalg.expm": "scipy.linalg.expm(A)",
    "linalg.sqrtm": "scipy.linalg.sqrtm(A @ A.T)",
    "linalg.solve_sylvester": "scipy.linalg.solve_sylvester(A, 2 * A.T, np.outer(x[:3], x[3:]))",
    "linalg.block_diag": "scipy.linalg.block_diag(A, X2)",
    "linalg.block_diag (a plain block)": "scipy.linalg.block_diag(A, np.eye(2))",
    "integrate.odeint": "scipy.integrate.odeint(lambda y, t: -y, x[:2], np.linspace(0.0, 1.0, 3))",
    "integrate.trapezoid": "scipy.integrate.trapezoid(x)",
    "integrate.cumulative_trapezoid": "scipy.integrate.cumulative_trapezoid(x)",
    "integrate.simpson": "scipy.integrate.simpson(x)",
    "fft.fft": "scipy.fft.fft(x)",
    "fft.ifft": "scipy.fft.ifft(c, norm='ortho')",
    "fft.rfft": "scipy.fft.rfft(x, n=8)",
    "fft.irfft": "scipy.fft.irfft(c)",
    "fft.hfft": "scipy.fft.hfft(c, norm='forward')",
    "fft.ihfft": "scipy.fft.ihfft(x)",
    "fft.fft2": "scipy.fft.fft2(X2)",
    "fft.ifft2": "scipy.fft.ifft2(X2 * (1 + 0.5j))",
    "fft.rfft2": "scipy.fft.rfft2(X2)",
    "fft.irfft2": "scipy.fft.irfft2(X2 * (1 + 0.5j))",
    "fft.fftn": "scipy.fft.fftn(X2, s=(3, 4))",
    "fft.ifftn": "scipy.fft.ifftn(X2 * (1 + 0.5j), axes=0)",
    "fft.rfftn": "scipy.fft.rfftn(X2)",
    "fft.irfftn": "scipy.fft.irfftn(X2 * (1 + 0.5j))",
    "fft.hfft2": "scipy.fft.hfft2(X2 * (1 + 0.5j))",
    "fft.hfftn": "scipy.fft.hfftn(X2 * (1 + 0.5j), norm='ortho')",
    "fft.ihfft2": "scipy.fft.ihfft2(X2)",
    "fft.ihfftn": "scipy.fft.ihfftn(X2)",
    "fft.dct": "scipy.fft.dct(x)",
    "fft.idct": "scipy.fft.idct(x)",
    "fft.dst": "scipy.fft.dst(x)",
    "fft.idst": "scipy.fft.idst(x)",
    "fft.dctn": "scipy.fft.dctn(X2)",
    "fft.idctn": "scipy.fft.idctn(X2)",
    "fft.dstn": "scipy.fft.dstn(X2)",
    "fft.idstn": "scipy.fft.idstn(X2)",
    "fft.fht": "scipy.fft.fht(x, 0.1, 0.5)",
    "fft.ifht": "scipy.fft.ifht(x, 0.1, 0.5)",
    "fft.fftshift": "scipy.fft.fftshift(X2)",
    "fft.ifftshift": "scipy.fft.ifftshift(X2, axes=1)",
    "fft.fftfreq (a traced d)": "scipy.fft.fftfreq(6, d=x[0])",
}
MODES = {"unset": None, "=1": "1"}
SITE = "site-packages" + os.sep


def _run_call(name: str) -> dict:
    """In the child: the verdict on one call (``{"verdict": ..., "detail": ...}``)."""
    def call(x):
        names = {"np": np, "scipy": scipy, "x": x, "c": x[:3] + 1j * x[3:], "X2": np.reshape(x, (2, 3)),
                 "A": np.diag([2.0, 1.5, 1.8]) + 0.3 * np.outer(x[:3], x[3:])}
        return eval(CALLS[name], names)

    def loss(x):
        return np.sum(np.abs(call(x)) ** 2)

    x = eval(X)
    try:
        g = np.asarray(ad.grad(loss)(x))
    except Exception as exc:
        fs = [f for f in frames(exc) if library(f.filename) == "scipy"]
        where = f"{fs[-1].filename.rsplit(SITE, 1)[1]}:{fs[-1].lineno}" if fs else "no scipy code ran"
        if isinstance(exc, ad.ConcretizationError):
            return {"verdict": "fails", "detail": f"converts the tracer to numpy at {where}"}
        if isinstance(exc, ad.UnsupportedFunctionError) and not fs:
            return {"verdict": "refused", "detail": "no primitive: ad's UnsupportedFunctionError at the user's line"}
        message = getattr(exc, "reason", str(exc)).split(": {")[0]     # not the set of namespaces
        return {"verdict": "fails", "detail": f"{type(exc).__name__}: {normalized(message, 70)} ({where})"}
    fd = fd_grad(loss, x)
    if np.allclose(g, fd, rtol=1e-4, atol=1e-6):
        return {"verdict": "traces", "detail": ""}
    return {"verdict": "wrong gradient", "detail": f"max |ad - fd| {np.max(np.abs(g - fd)):.2e}"}


def survey(name: str, mode: str) -> dict:
    """One call in a process of its own, ``SCIPY_ARRAY_API`` as ``mode`` says."""
    env = {k: v for k, v in os.environ.items() if k != "SCIPY_ARRAY_API"}
    if MODES[mode]:
        env["SCIPY_ARRAY_API"] = MODES[mode]
    done = subprocess.run([sys.executable, "-m", "tests.scipy.scipy_survey", "--child", name], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        return {"verdict": "not measured", "detail": f"the process failed: {done.stderr.strip()[-200:]}"}
    return json.loads(lines[-1])


def rows(names, workers: int = 2) -> list[str]:
    """docs/scipy.md's table rows: the call, its verdict in each mode, and what stopped it."""
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        results = {(n, m): pool.submit(survey, n, m) for n in names for m in MODES}
    lines = ["| call | `SCIPY_ARRAY_API` unset | `SCIPY_ARRAY_API=1` | what stops it (unset; =1) |",
             "| --- | --- | --- | --- |"]
    for n in names:
        r = {m: results[n, m].result() for m in MODES}
        cells = [f"**{r[m]['verdict']}**" if r[m]["verdict"] == "traces" else r[m]["verdict"] for m in MODES]
        details = [r[m]["detail"] for m in MODES if r[m]["detail"]]
        why = details[0] if len(set(details)) == 1 and len(details) == 2 else "; ".join(
            f"{m}: {r[m]['detail']}" for m in MODES if r[m]["detail"])
        lines.append(f"| {n} | {cells[0]} | {cells[1]} | {why.replace('|', '/')} |")
    counts = {m: sum(results[n, m].result()["verdict"] == "traces" for n in names) for m in MODES}
    lines.append("")
    lines.append(f"traces: {counts['unset']} of {len(names)} with SCIPY_ARRAY_API unset, "
                 f"{counts['=1']} of {len(names)} with SCIPY_ARRAY_API=1")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", help="comma-separated names of CALLS (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="processes at a time (default 2)")
    parser.add_argument("--child", help=argparse.SUPPRESS)      # one call, in this process
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_run_call(args.child)))
        return 0
    names = args.calls.split(",") if args.calls else list(CALLS)
    print("\n".join(rows(names, args.workers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
