"""scipy's own functions traced through ad's namespace: scipy writes many of them against the array
API standard, and with ``SCIPY_ARRAY_API=1`` (read once, when scipy is imported) it asks the
namespace of its arguments (its vendored ``scipy._lib._array_api.array_namespace``), which for a
tracer is ad's. ``SCIPY_ARRAY_API=1 python -m tests.array_api.scipy_check`` prints one JSON line
per function of ``CASES``: whether its gradient traces (else the error), and its largest difference
to central finite differences over the three forms (relative to the gradient's largest entry, or
absolute below 1); tests/array_api/test_scipy.py runs it."""
import json

import numpy as np
import scipy.integrate as integrate
import scipy.linalg as linalg
import scipy.signal as signal
import scipy.special as special
import scipy.stats as stats
from scipy._lib._array_api import array_namespace

import ad
from ad.lib.array_api import NAMESPACE
from tests.support.numeric import fd_grad

X = np.random.default_rng(0).standard_normal((3, 4))
POSITIVE = np.abs(X) + 0.5

# name: (a scalar function of a 3x4 array, the point)
CASES = {
    "special.logsumexp": (lambda x: special.logsumexp(x, axis=1).sum(), X),
    "special.softmax": (lambda x: (special.softmax(x, axis=0) ** 2).sum(), X),
    "special.log_softmax": (lambda x: (special.log_softmax(x, axis=1) ** 2).sum(), X),
    "special.xlogy": (lambda x: special.xlogy(x, x * x + 1.0).sum(), X),
    "special.rel_entr": (lambda x: special.rel_entr(x, 2.0).sum(), POSITIVE),
    "stats.zscore": (lambda x: (stats.zscore(x, axis=0) * np.arange(4.0)).sum(), X),
    "stats.moment": (lambda x: stats.moment(x, order=3, axis=1).sum(), X),
    "stats.skew": (lambda x: stats.skew(x, axis=1).sum(), X),
    "stats.kurtosis": (lambda x: stats.kurtosis(x, axis=1).sum(), X),
    "stats.gmean": (lambda x: stats.gmean(x, axis=1).sum(), POSITIVE),
    "stats.hmean": (lambda x: stats.hmean(x, axis=1).sum(), POSITIVE),
    "stats.pmean": (lambda x: stats.pmean(x, 2.0, axis=1).sum(), POSITIVE),
    "stats.sem": (lambda x: stats.sem(x, axis=1).sum(), X),
    "stats.variation": (lambda x: stats.variation(x, axis=1).sum(), POSITIVE),
    "integrate.trapezoid": (lambda x: integrate.trapezoid(x ** 2, axis=1).sum(), X),
    "integrate.cumulative_trapezoid": (lambda x: (integrate.cumulative_trapezoid(x, axis=1) ** 2).sum(), X),
    "signal.fftconvolve": (lambda x: (signal.fftconvolve(x[0], x[1]) ** 2).sum(), X),
    "linalg.block_diag": (lambda x: (linalg.block_diag(x[:, :2], x[:, 2:]) * np.arange(24.0).reshape(6, 4)).sum(), X),
    # what scipy converts with numpy itself, and a plain numpy array next to a traced one
    "special.gammaln": (lambda x: special.gammaln(x).sum(), POSITIVE),
    "stats.norm.logpdf": (lambda x: stats.norm.logpdf(x).sum(), X),
    "special.logsumexp(b=ndarray)": (lambda x: special.logsumexp(x, b=np.ones(4)).sum(), X),
}


def run(f, x) -> dict:
    try:
        want = fd_grad(f, x)
        worst = 0.0
        for form in ("lifted", "closure", "compiled"):
            value, g = ad.value_and_grad(f, form=form)(x)
            assert np.isclose(value, f(x), rtol=1e-12), (form, value, f(x))
            worst = max(worst, float(np.max(np.abs(g - want)) / max(1.0, np.max(np.abs(want)))))
    except Exception as exc:      # a function that does not trace: its error is the finding
        return {"traces": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"traces": True, "fd_difference": worst}


def main():
    found = []
    ad.trace(lambda x: found.append(array_namespace(x) is NAMESPACE) or x, X)
    print(json.dumps({"name": "array_namespace", "is_ads": found[0]}))
    for name, (f, x) in CASES.items():
        print(json.dumps({"name": name, **run(f, x)}))


if __name__ == "__main__":
    main()
