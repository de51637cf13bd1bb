"""``check``: a whole traced program. The program is prepared once (``program_record``), then
every check of ``settings.PROGRAM_CHECKS`` (``program_checks``) runs on that record, in the
table's order, in one loop.
"""
from __future__ import annotations

import numpy as np

from . import program_checks  # noqa: F401  (it registers the checks)
from .base import CHECKS, Verdict, result
from .captures import describe, raised_at
from .program_record import ProgramRecord, prepare
from .report import CheckResult, ProgramReport
from .settings import PROGRAM_CHECKS, Options


def check(f, *args, argnums=None, equations: bool = True, raise_on_failure: bool = False,
          progress=None, **options) -> ProgramReport:
    """Check the gradient of ``f`` at ``args`` (all float inputs, or those of ``argnums``).

    ``equations=False`` skips the per-equation rule checks (and the culprit search).
    ``progress(done, total, what)`` is called as the equations are checked (a progress bar).
    Options: see ``ad.checks.settings.Options``.

    >>> ad.check(lambda x: np.sum(np.sin(x) * x), np.linspace(0, 1, 4)).ok
    True
    """
    opts = Options.make(**options)
    record = None
    with np.errstate(all="ignore"):
        try:
            record = prepare(f, args, argnums, opts, progress, equations)
        except Exception as exc:   # a program that cannot be differentiated is a finding
            failed = Verdict("fail", f"tracing or building the gradient tape raised {describe(exc)}",
                             source=raised_at(exc))
            results = [result("program.build", failed, opts)]
            results += [CheckResult(name, "skipped", "the gradient tape could not be built")
                        for name, _, _ in PROGRAM_CHECKS[1:]]
        else:
            results = [_run(name, record, opts) for name, _, _ in PROGRAM_CHECKS]
    report = ProgramReport(f"check {getattr(f, '__name__', 'program')}", opts.seed, opts.as_dict(), results,
                           source=record and record.source, equations=record.equation_reports if record else [],
                           culprit=record and record.culprit)
    return report.raise_on_failure() if raise_on_failure else report


def _run(name: str, record: ProgramRecord, opts: Options) -> CheckResult:
    if opts.level(name) == "off":
        return CheckResult(name, "skipped", f"turned off (profile {opts.profile!r} / severity)")
    try:
        verdict = CHECKS[name](record)
    except Exception as exc:   # a rule or the program raising is a finding, never a crash
        verdict = Verdict("fail", f"the check raised {describe(exc)}", source=raised_at(exc))
    return result(name, verdict, opts)
