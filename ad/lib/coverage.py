"""Which numpy names have a rule or a decomposition: read from the dispatch tables, so the list
cannot drift from the code. ``python -m ad.lib.coverage`` prints it as markdown (the first part
of docs/coverage.md).

Functions whose own numpy implementation runs on tracers (it calls only supported functions, e.g.
``np.fix``, ``np.rollaxis``) work too but are not listed: they have no entry to read.
"""
from __future__ import annotations

from ..dispatch import FUNCTIONS, UFUNC_METHODS, UFUNCS, _fname


def supported() -> dict[str, list[str]]:
    """{numpy namespace: sorted names}: ufuncs, ufunc methods and functions with a handler."""
    groups: dict[str, set[str]] = {"ufuncs": {f"np.{u.__name__}" for u in UFUNCS},
                                   "ufunc methods": {f"np.{u.__name__}.{m}" for u, m in UFUNC_METHODS}}
    for f in FUNCTIONS:
        name = _fname(f)
        groups.setdefault(name.rpartition(".")[0] + " functions", set()).add(name)
    return {k: sorted(v) for k, v in sorted(groups.items())}


def markdown() -> str:
    lines = []
    for group, names in supported().items():
        lines += [f"### {group} ({len(names)})", "", ", ".join(f"`{n}`" for n in names), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
