"""``ad-check``: run the checker from a terminal, with a progress bar on stderr.

    ad-check --library                         every rule of ad.lib at its sample inputs
    ad-check --library --only sin matmul --profile interface
    ad-check --gallery                         the wrong rules of ad.checktools.gallery, each caught
    ad-check --mutants --workers 2             mutation testing: mutants of every rule's template, the score
    ad-check --mutants --only sin matmul --record docs/checks.md
    ad-check --mutants --batching              mutants of every batching rule, caught by batching.loop
    ad-check mypkg.model:loss --randn 3,4 4    a program at random standard-normal arguments
    ad-check path/to/file.py:f --example path/to/file.py:make_args --rule
    ad-check mypkg.model:f --randn 3 --complex --holomorphic    complex arguments, f asserted holomorphic

Exit status: 0 when every check passes, 1 when one fails, 2 for usage errors.
"""
from __future__ import annotations

import argparse
import json
import os
import pkgutil
import runpy
import sys
import time

import numpy as np

from .. import nn  # noqa: F401  (its primitives join the registry: --library checks them too)
from . import mutants
from .mutants import batching as batching_mutants
from .gallery import GALLERY
from ..checks.library import check_library
from ..checks.program import check
from ..checks.rule import check_rule


class Progress:
    """``[=====     ] 120/532 label`` rewritten in place on a terminal; on other streams a
    line at every tenth of the way."""

    def __init__(self, stream=None, width: int = 30):
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = -1

    def __call__(self, done: int, total: int, label: str):
        filled = self.width * done // max(total, 1)
        line = f"[{'=' * filled}{' ' * (self.width - filled)}] {done}/{total} {label}"
        if self.tty:
            self.stream.write("\r" + line[:100].ljust(100) + ("\n" if done == total else ""))
        elif done * 10 // max(total, 1) != self.last:
            self.last = done * 10 // max(total, 1)
            self.stream.write(line + "\n")
        self.stream.flush()


def load(ref: str):
    """The object named ``package.module:name`` or ``path/to/file.py:name``."""
    module, sep, name = ref.partition(":")
    if not sep or not name:
        raise ValueError(f"{ref!r}: write MODULE:NAME (e.g. mypkg.model:loss or model.py:loss)")
    if module.endswith(".py"):
        if not os.path.exists(module):
            raise FileNotFoundError(f"no such file: {module}")
        namespace = runpy.run_path(module)
        if name not in namespace:
            raise AttributeError(f"{module} defines no {name!r}")
        return namespace[name]
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return pkgutil.resolve_name(ref)


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(",") if n.strip()) if text.strip() not in ("", "()") else ()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ad-check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("function", nargs="?", metavar="MODULE:FUNCTION", help="a program (or, with --rule, a rule's call)")
    what.add_argument("--library", action="store_true", help="check every rule of the library")
    what.add_argument("--gallery", action="store_true", help="run the gallery of wrong rules")
    what.add_argument("--mutants", action="store_true", help="mutation testing: check mutants of every rule's "
                      "lifted pullback template and print the mutation score (ad.checktools.mutants)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="with --library/--gallery/--mutants: only these "
                   "primitives/entries")
    p.add_argument("--workers", type=int, default=1, help="with --mutants: processes to run them in")
    p.add_argument("--record", metavar="FILE", help="with --mutants: rewrite the generated section of FILE "
                   "(docs/checks.md) with the figures")
    p.add_argument("--batching", action="store_true", help="with --mutants: mutate the batching rules instead "
                   "(ad.checktools.mutants.batching)")
    given = p.add_mutually_exclusive_group()
    given.add_argument("--randn", nargs="+", metavar="SHAPE", help="one standard-normal argument per shape, e.g. 3,4")
    given.add_argument("--example", metavar="MODULE:FACTORY", help="a function returning the arguments tuple")
    p.add_argument("--rule", action="store_true", help="check the one rule the call fires (ad.check_rule)")
    p.add_argument("--profile", choices=("full", "interface"), default="full")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--directions", type=int, default=2)
    p.add_argument("--second-order", action="store_true")
    p.add_argument("--complex", action="store_true", help="with --randn: complex128 arguments (standard-normal "
                   "real and imaginary parts)")
    p.add_argument("--holomorphic", action="store_true", help="assert the function is holomorphic in its "
                   "complex arguments (complex.holomorphic, program.holomorphic)")
    p.add_argument("--batched", action="store_true", help="also check the program's batched gradient "
                   "(program.batched_grad, as gradcheck's check_batched_grad)")
    p.add_argument("--json", metavar="FILE", help="also write every report as JSON")
    p.add_argument("--verbose", action="store_true", help="print every report, not only the failing ones")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.mutants:
        return _mutants(args)
    options = {"seed": args.seed, "profile": args.profile, "directions": args.directions}
    if args.second_order:
        options["second_order"] = True
    if args.holomorphic:
        options["holomorphic"] = True
    if args.batched:
        options["batched"] = True
    start = time.perf_counter()
    try:
        reports, failed = _run(args, options)
    except (ValueError, TypeError, KeyError, AttributeError, ImportError, OSError) as exc:
        print(f"ad-check: error: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    for r in reports:
        if args.verbose or r in failed or (not args.gallery and r.warnings):
            print(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.to_dict() for r in reports], f, indent=1)
    what = "wrong rule(s) caught" if args.gallery else "report(s) ok"
    warned = sum(bool(r.warnings) for r in reports)
    print(f"{len(reports) - len(failed)} of {len(reports)} {what}, {len(failed)} failed"
          + ("" if args.gallery else f", {warned} with warnings") + f", in {elapsed:.1f} s (seed {args.seed})")
    return 1 if failed else 0


def _run(args, options) -> tuple[list, list]:
    """(reports, the failing ones): for the gallery, a failing report is a wrong rule its check missed."""
    if args.library:
        reports = check_library(args.only, progress=Progress(), **options)
    elif args.gallery:
        return _gallery(args.only, options)
    else:
        reports = [_program(args, options)]
    return reports, [r for r in reports if not r.ok]


def _mutants(args) -> int:
    """Print the mutation score and every survivor; exit status 1 if a mutant survived."""
    unknown = sorted(set(args.only or ()) - {p.name for p in mutants.REGISTRY.values()})
    if unknown:
        print(f"ad-check: error: no primitives {unknown}", file=sys.stderr)
        return 2
    if args.batching and args.record:
        print("ad-check: error: --record writes the pullback mutants' section; it takes no --batching", file=sys.stderr)
        return 2
    if args.batching:
        report = batching_mutants.run(args.only, seed=args.seed, progress=Progress())
    else:
        report = mutants.run(args.only, workers=args.workers, seed=args.seed, progress=Progress())
    print(report.summary(every_primitive=args.verbose))
    if args.record:
        mutants.record(report, args.record, command="ad-check " + " ".join(sys.argv[1:]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([vars(o) for o in report.outcomes], f, indent=1)
    return 1 if report.survivors else 0


def _program(args, options):
    f = load(args.function)
    if args.example:
        call_args = load(args.example)()
        call_args = call_args if isinstance(call_args, tuple) else (call_args,)
    elif args.randn:
        rng = np.random.default_rng(args.seed)
        call_args = tuple(rng.standard_normal(_shape(s)) + (1j * rng.standard_normal(_shape(s)) if args.complex else 0)
                          for s in args.randn)
    else:
        raise ValueError("give the arguments: --randn SHAPE ... or --example MODULE:FACTORY")
    progress = Progress()
    progress(0, 1, getattr(f, "__name__", args.function))
    report = (check_rule if args.rule else check)(f, *call_args, **options)
    progress(1, 1, "done")
    return report


def _gallery(only, options) -> tuple[list, list]:
    """Every wrong rule of the gallery, run with the check built to catch it."""
    unknown = sorted(set(only or ()) - set(GALLERY))
    if unknown:
        raise KeyError(f"no gallery entries {unknown}; entries are {sorted(GALLERY)}")
    entries = [e for name, e in GALLERY.items() if not only or name in only]
    progress, reports, missed = Progress(), [], []
    for k, e in enumerate(entries):
        progress(k, len(entries), e.name)
        r = e.run(**options)
        caught = r[e.check].status == e.expect
        r.title = f"{'caught' if caught else 'MISSED'}: {e.name} ({e.bug}), by {e.check}"
        reports.append(r)
        if not caught:
            missed.append(r)
    progress(len(entries), len(entries), "done")
    return reports, missed


if __name__ == "__main__":
    sys.exit(main())
