"""What the pictures say about values: every variable's value when a tape runs (``values_of``) and
the one-line summaries of arrays that the graph's nodes, the listings and the debugger show
(``summarize``; ``summaries`` of a whole tape's, as ``to_networkx(tape, values=...)`` takes them).
"""
from __future__ import annotations

import numpy as np

from ad.tape import Tape, eval_tape


def values_of(tape: Tape, *args, cotangents=()) -> dict[str, object]:
    """Every variable's value when the tape runs on ``args`` (and, for vjp tapes, the output
    cotangents), keyed by ``%n`` name: what ``to_networkx(tape, values=...)`` summarises.

    >>> tape = ad.trace(lambda x: np.sum(x * 2.0), np.ones(3))
    >>> tapeviz.values_of(tape, np.arange(3.0))
    {'%0': array([0., 1., 2.]), '%1': array([0., 2., 4.]), '%2': np.float64(6.0)}
    """
    env: dict = {}
    eval_tape(tape, tape.flatten_args(args) + list(cotangents), env)
    return {repr(v): x for v, x in env.items()}


def summaries(values) -> dict[str, str]:
    """``summarize`` of each value, by name. Its commonest case inline (a few floats), each text
    made once per distinct bytes: the values of a long loop repeat (4,370 texts for 100,000)."""
    if not values:
        return {}
    ndarray, few = np.ndarray, "{:.4g}".format
    texts: dict = {}                  # (dtype, bytes) -> text; the bytes tell -0.0 from 0.0
    out = {}
    for k, v in values.items():
        if type(v) is ndarray and v.ndim == 1 and v.dtype.kind == "f" and 0 < v.size <= 4:
            key = (v.dtype.str, v.tobytes())
            text = texts.get(key)
            if text is None:
                text = texts[key] = f"[{', '.join(map(few, v.tolist()))}]"
        else:
            text = summarize(v)
        out[k if isinstance(k, str) else repr(k)] = text
    return out


def summarize(value) -> str:
    """One line about an array: the numbers when few, else mean and range; non-finite counted;
    complex numbers by magnitude and phase.

    >>> tapeviz.summarize(np.arange(3.0)), tapeviz.summarize(np.array([1, np.nan, 3, 4, 5]))
    ('[0, 1, 2]', 'mean 3.25 in [1, 5]; 1 nan')
    >>> tapeviz.summarize(1 + 1j)
    '|z|=1.41 ∠45°'
    """
    if callable(value):
        return "closure"
    a = np.asarray(value)
    if a.dtype == object:
        return "object"
    if a.size == 0:
        return "empty"
    if a.dtype == bool:
        return f"{int(a.sum())}/{a.size} true"
    if np.iscomplexobj(a):
        return _summarize_complex(a)
    if a.size <= 4:
        body = ", ".join(f"{x:.4g}" for x in a.ravel().tolist())
        return body if a.ndim == 0 else f"[{body}]"
    finite = np.isfinite(a)
    notes = _non_finite(a, finite)
    a = a[finite]
    if a.size:
        notes.insert(0, f"mean {a.mean():.3g} in [{a.min():.3g}, {a.max():.3g}]")
    return "; ".join(notes)


def _non_finite(a, finite) -> list[str]:
    if finite.all():
        return []
    return [f"{int(n)} {what}" for n, what in ((np.isnan(a).sum(), "nan"), (np.isposinf(a).sum(), "+inf"),
                                               (np.isneginf(a).sum(), "-inf")) if n]


def polar(z: complex) -> str:
    """A complex number by magnitude and phase, ``1.41∠45°`` (a zero or non-finite magnitude
    has no phase worth showing)."""
    r = abs(z)
    if r == 0 or not np.isfinite(r):
        return f"{r:.3g}"
    return f"{r:.3g}\u2220{np.degrees(np.angle(z)):.3g}\u00b0"


def _summarize_complex(a: np.ndarray) -> str:
    """Magnitude and phase: ``|z|=1.41 ∠45°`` for a scalar, ``|z|∠ [1.41∠45°, 2∠-90°]`` for a
    few numbers, else the range of the magnitudes and of the phases; an element with a NaN
    part counts as nan, one with an infinite part as +inf (its magnitude)."""
    if a.ndim == 0:
        return "|z|=" + polar(complex(a)).replace("\u2220", " \u2220")
    if a.size <= 4:
        return "|z|\u2220 [" + ", ".join(polar(z) for z in a.ravel().tolist()) + "]"
    r = np.abs(a)
    finite = np.isfinite(r)
    notes = _non_finite(r, finite)
    z, r = a[finite], r[finite]
    if z.size:
        phase = np.degrees(np.angle(z[r > 0]))
        notes.insert(0, f"|z| in [{r.min():.3g}, {r.max():.3g}]" + (
            f", \u2220 in [{phase.min():.3g}\u00b0, {phase.max():.3g}\u00b0]" if phase.size else ""))
    return "; ".join(notes)
