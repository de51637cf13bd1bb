"""Check reports: every sub-check with its status, numbers, equation and source line, shown as
a terminal table, an escaped HTML table for notebooks, and JSON.

A report never stops at the first failure; ``raise_on_failure`` raises one ``CheckFailure``
listing all of them.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

import numpy as np

from .settings import ORDER

STATUSES = ("pass", "fail", "warn", "skipped")
_COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "warn": "#9a6700", "skipped": "#6e7781"}


class CheckFailure(AssertionError):
    """A check report has failures; the message lists every one of them.

    >>> def wrong_sign(x):
    ...     return np.sin(x), lambda dy: (-dy * np.cos(x),)
    >>> with ad.using_rule(np.sin, wrong_sign):
    ...     ad.check_rule(np.sin, np.ones(3), raise_on_failure=True)
    Traceback (most recent call last):
    ...
    ad.checks.report.CheckFailure: check_rule sin: 2 check(s) failed (seed 0)
      fd.dot_product: <J u, v> = ... from the pullback (the opposite sign), at a smooth point; ...
      fd.jvp: J u from the pushforward derived from the pullback differs from finite differences ...
    """

    def __init__(self, report: "Report"):
        self.report = report
        lines = [f"{report.title}: {len(report.failures)} check(s) failed (seed {report.seed})"]
        for c in report.failures:
            where = " ".join(filter(None, [c.equation and f"[{c.equation}]", c.source and f"at {c.source}"]))
            lines.append(f"  {c.name}: {c.message}" + (f"\n      {where}" if where else ""))
        super().__init__("\n".join(lines))


@dataclass
class CheckResult:
    """One sub-check. ``numbers`` holds the quantities behind the verdict (JSON-able);
    ``equation`` and ``source`` say what it concerns (the printed equation, ``file:line``).

    >>> result = ad.check_rule(np.sin, np.ones(2))["fd.dot_product"]
    >>> result.status, sorted(result.numbers)
    ('pass', ['directions', 'rtol'])
    """
    name: str
    status: str
    message: str = ""
    numbers: dict = field(default_factory=dict)
    equation: str | None = None
    source: str | None = None

    @property
    def reason(self) -> str | None:
        """Why a check was skipped."""
        return self.message if self.status == "skipped" else None

    def to_dict(self) -> dict:
        return {"name": self.name, "status": self.status, "message": self.message,
                "numbers": plain(self.numbers), "equation": self.equation, "source": self.source}


def plain(x):
    """A JSON-able copy: arrays become lists, numpy scalars Python numbers, non-finite floats
    the strings "nan", "inf", "-inf"."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, np.generic):
        return plain(x.item())
    if isinstance(x, float) and not np.isfinite(x):
        return "nan" if np.isnan(x) else ("inf" if x > 0 else "-inf")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return repr(x)


@dataclass
class Report:
    title: str
    seed: int
    options: dict
    checks: list[CheckResult]
    equation: str | None = None
    source: str | None = None

    def __post_init__(self):
        self.checks.sort(key=lambda c: ORDER.get(c.name, len(ORDER)))

    @property
    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def warnings(self) -> list[CheckResult]:
        return [c for c in self.checks if c.status == "warn"]

    @property
    def ok(self) -> bool:
        return not self.failures

    def __getitem__(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"no check {name!r} in this report; it has {[c.name for c in self.checks]}")

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for c in self.checks if c.status == s) for s in STATUSES}

    def summary(self) -> str:
        n = self.counts()
        return (f"{n['pass']} passed, {n['fail']} failed, {n['warn']} warnings, {n['skipped']} skipped "
                f"(seed {self.seed})")

    def raise_on_failure(self) -> "Report":
        if not self.ok:
            raise CheckFailure(self)
        return self

    # -- rendering -------------------------------------------------------------------------
    def header(self) -> list[str]:
        lines = [self.title]
        if self.equation:
            lines.append(f"  equation: {self.equation}")
        if self.source:
            lines.append(f"  source:   {self.source}")
        return lines

    def __str__(self) -> str:
        width = max([len(c.name) for c in self.checks] + [10])
        lines = self.header()
        for c in self.checks:
            lines.append(f"  {c.status.upper():7s} {c.name:{width}s}  {c.message}")
            if c.status in ("fail", "warn") and (c.equation or c.source):
                where = "  ".join(filter(None, [c.equation, c.source and f"at {c.source}"]))
                lines.append(f"  {'':7s} {'':{width}s}  {where}")
        lines.append(f"  {self.summary()}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def _rows_html(self) -> str:
        rows = []
        for c in self.checks:
            numbers = json.dumps(plain(c.numbers)) if c.numbers else ""
            detail = (f"<details><summary>numbers</summary><pre>{html.escape(numbers)}</pre></details>"
                      if numbers else "")
            rows.append(
                f"<tr><td style='color:{_COLOURS[c.status]};font-weight:bold'>{html.escape(c.status)}</td>"
                f"<td><code>{html.escape(c.name)}</code></td><td>{html.escape(c.message)}{detail}</td>"
                f"<td><code>{html.escape(c.equation or '')}</code></td>"
                f"<td>{html.escape(c.source or '')}</td></tr>")
        return "".join(rows)

    def _repr_html_(self) -> str:
        head = "".join(f"<div>{html.escape(line.strip())}</div>" for line in self.header())
        return (f"<div class='ad-check-report'>{head}<table><thead><tr><th>status</th><th>check</th>"
                f"<th>message</th><th>equation</th><th>source</th></tr></thead><tbody>"
                f"{self._rows_html()}</tbody></table><div>{html.escape(self.summary())}</div></div>")

    def to_dict(self) -> dict:
        return {"title": self.title, "ok": self.ok, "seed": self.seed, "options": plain(self.options),
                "equation": self.equation, "source": self.source, "counts": self.counts(),
                "checks": [c.to_dict() for c in self.checks]}

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)


@dataclass
class RuleReport(Report):
    """The checks of one rule at one set of operands (``ad.check_rule``).

    >>> report = ad.check_rule(np.tanh, np.linspace(-1, 1, 3))
    >>> report.primitive, report.ok, report["algebra.zero"].status
    ('tanh', True, 'pass')
    >>> report.summary()
    '25 passed, 0 failed, 0 warnings, 9 skipped (seed 0)'
    """
    primitive: str | None = None


@dataclass
class ProgramReport(Report):
    """The checks of a whole program (``ad.check``): program-level checks, then one RuleReport
    per differentiated equation at its recorded values. ``culprit`` is the first equation in
    reverse (backward) order whose own checks fail.

    >>> report = ad.check(lambda x: np.sum(np.sin(x) ** 2), np.linspace(0, 1, 3))
    >>> report.ok, [r.primitive for r in report.equations], report.culprit
    (True, ['sin', 'power', 'sum'], None)
    >>> report.to_dict()["counts"]
    {'pass': 13, 'fail': 0, 'warn': 0, 'skipped': 2}
    """
    equations: list[RuleReport] = field(default_factory=list)
    culprit: RuleReport | None = None

    @property
    def failures(self) -> list[CheckResult]:
        own = [c for c in self.checks if c.status == "fail"]
        return own + [c for r in self.equations for c in r.failures]

    def __str__(self) -> str:
        lines = [super().__str__()]
        if self.culprit is not None:
            lines.append(f"  culprit: {self.culprit.equation}  at {self.culprit.source}")
        bad = [r for r in self.equations if not r.ok or r.warnings]
        for r in bad:
            names = ", ".join(c.name for c in r.failures + r.warnings)
            lines.append(f"  {'FAIL' if not r.ok else 'WARN'}  {r.equation}  ({names})  at {r.source}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        own = super()._repr_html_()
        parts = []
        if self.culprit is not None:
            parts.append(f"<div style='color:{_COLOURS['fail']}'>culprit: <code>"
                         f"{html.escape(self.culprit.equation or '')}</code> at "
                         f"{html.escape(self.culprit.source or '')}</div>")
        for r in self.equations:
            if not r.ok or r.warnings:
                parts.append(f"<details><summary><code>{html.escape(r.equation or '')}</code> "
                             f"{html.escape(r.summary())}</summary>{r._repr_html_()}</details>")
        return own + "".join(parts)

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["ok"] = self.ok
        out["culprit"] = None if self.culprit is None else self.culprit.equation
        out["equations"] = [r.to_dict() for r in self.equations]
        return out
