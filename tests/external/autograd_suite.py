"""HIPS autograd's own test suite, run against ``ad`` through the shim in ``autograd_shim``.

    python -m tests.external.autograd_suite [test_numpy.py ...] [--json out.json]

prints, per test file, how many tests pass, fail (an assertion: a wrong value or gradient, an
expected error not raised) or error (an exception), and the causes of the failures grouped by
category and message. autograd's tests are read at run time, never copied here: from
``$AUTOGRAD_TESTS`` (a directory holding autograd's ``tests/``), else from a cache
(``$XDG_CACHE_HOME`` or ``~/.cache``, then ``tapeviz/autograd-tests``) filled on first use from
``$AUTOGRAD_REPO`` (a clone or a bare git directory) or by cloning github.com/HIPS/autograd.

Each file runs in its own pytest process (``--worker``): a crash or a hang costs one file, and
the shim's ``sys.modules`` entries never leak into the caller.
"""
from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from tests.external.autograd_shim import installed
from tests.external.causes import REPO_ROOT, cause, frames, library, raised_in_ad, refused, short_path

AUTOGRAD_URL = "https://github.com/HIPS/autograd"
TEST_TIMEOUT = 120          # seconds per test (pytest-timeout)
FILE_TIMEOUT = 1200         # seconds per file

# The order of the checks in ``classify``: the first category that applies wins.
CATEGORIES = ("autograd-only API", "scipy", "complex", "wrong gradient",
              "ad refuses loudly", "expected error not raised", "crash inside ad",
              "test assertion", "other error")
EXPECTED = ("autograd-only API", "scipy", "complex")   # failures nobody expects ad to pass
CHECK_FAILURES = ("Derivative (VJP) check", "Value mismatch", "VSpace mismatch")   # the shim's checks


@dataclass
class Result:
    """One test's outcome; ``category`` and ``cause`` are empty for passes and skips."""
    file: str
    test: str
    outcome: str              # passed, failed, error, skipped
    category: str = ""
    cause: str = ""
    message: str = ""
    where: str = ""


# -- where autograd's tests come from ----------------------------------------------------------

def tests_dir() -> Path:
    """The directory holding autograd's test files (see the module docstring)."""
    if os.environ.get("AUTOGRAD_TESTS"):
        return Path(os.environ["AUTOGRAD_TESTS"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tapeviz" / "autograd-tests"
    if not (cache / "test_numpy.py").exists():
        _fill_cache(cache)
    return cache


def _fill_cache(cache: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.environ.get("AUTOGRAD_REPO")
        if not repo:
            repo = os.path.join(tmp, "autograd")
            subprocess.run(["git", "clone", "--quiet", "--depth", "1", AUTOGRAD_URL, repo], check=True)
        git = ["git", "-C", repo]
        commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout
        archive = subprocess.run(git + ["archive", "HEAD", "tests"], check=True, capture_output=True).stdout
    cache.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                (cache / Path(member.name).relative_to("tests")).write_bytes(tar.extractfile(member).read())
    (cache / "COMMIT").write_text(commit)


def suite_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("test_*.py"))


# -- classification -----------------------------------------------------------------------------

def classify(exc: BaseException, test_file: str, test_name: str = "") -> tuple[str, str]:
    """(category, cause) of the exception a test raised; see CATEGORIES."""
    text = str(exc)
    fs = frames(exc)
    checked = isinstance(exc, AssertionError) and text.startswith(CHECK_FAILURES)
    why = f"AssertionError: {text.splitlines()[0].split(' failed')[0]}" if checked else cause(exc)
    notes = " ".join(getattr(exc, "__notes__", ()))
    if isinstance(exc, ImportError) and (exc.name or "").startswith("autograd") \
            or isinstance(exc, AttributeError) and text.startswith(("module 'autograd", "module 'numpy")):
        return "autograd-only API", why
    if test_file == "test_scipy.py" or any(library(f.filename) == "scipy" for f in fs):
        return "scipy", why
    if "complex" in notes or "complex" in text.lower() or "complex" in test_name:
        return "complex", why
    if checked:
        return "wrong gradient", why
    if refused(exc):
        return "ad refuses loudly", why
    if "DID NOT RAISE" in text:
        return "expected error not raised", why
    if raised_in_ad(fs):
        return "crash inside ad", why
    if isinstance(exc, AssertionError):
        return "test assertion", why
    return "other error", why


# -- the worker: one file under pytest, with the shim installed ---------------------------------

class _Recorder:
    """A pytest plugin collecting one Result per test (and per file that fails to import)."""

    def __init__(self, path: Path):
        self.path, self.results, self.errors = path, {}, {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.excinfo is not None:
            self.errors[report.nodeid] = call.excinfo.value
        return report

    def pytest_exception_interact(self, node, call, report):
        exc = call.excinfo.value
        while type(exc).__name__ == "CollectError" and exc.__cause__ is not None:
            exc = exc.__cause__         # pytest wraps a test module's ImportError
        self.errors.setdefault(report.nodeid, exc)

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::", 1)[-1]
        previous = self.results.get(name)
        if previous is not None and previous.outcome != "passed":
            return                      # keep the first failing phase
        if report.failed:
            exc = self.errors.get(report.nodeid)
            outcome = "failed" if report.when == "call" and _is_assertion(exc) else "error"
            self.results[name] = self._result(name, outcome, exc)
        elif report.skipped or report.when == "call":
            self.results[name] = Result(self.path.name, name, report.outcome)

    def pytest_collectreport(self, report):
        if report.failed:
            exc = self.errors.get(report.nodeid)
            for name in _static_tests(self.path):
                self.results[name] = self._result(name, "error", exc)

    def _result(self, name, outcome, exc) -> Result:
        r = Result(self.path.name, name, outcome)
        if exc is not None:
            r.category, r.cause = classify(exc, self.path.name, name)
            r.message = str(exc)[:600]
            fs = frames(exc)
            r.where = short_path(fs[-1]) if fs else ""
        return r


def _is_assertion(exc) -> bool:
    return isinstance(exc, AssertionError) or "DID NOT RAISE" in str(exc)


def _static_tests(path: Path) -> list[str]:
    """The test functions a file defines (for a file that fails to import, so that each of its
    tests counts as an error rather than the file counting as one)."""
    tree = ast.parse(path.read_text())
    return [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
            and n.col_offset <= 4]


def _work(path: Path, out: Path) -> None:
    recorder = _Recorder(path)
    with installed():
        pytest.main([str(path), "-q", "-p", "no:cacheprovider", "--rootdir", str(path.parent),
                     "-c", os.devnull, f"--timeout={TEST_TIMEOUT}", "-W", "ignore"], plugins=[recorder])
    out.write_text(json.dumps([asdict(r) for r in recorder.results.values()]))


def run_file(path: Path) -> tuple[list[Result], float]:
    """Run one of autograd's test files in a worker process: its results and wall time."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
        start = time.perf_counter()
        try:
            subprocess.run([sys.executable, "-m", "tests.external.autograd_suite", "--worker", str(path), str(out)],
                           cwd=REPO_ROOT, env=env, capture_output=True, timeout=FILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return [Result(path.name, "*", "error", "other error", f"the file took over {FILE_TIMEOUT} s")], FILE_TIMEOUT
        seconds = time.perf_counter() - start
        if not out.exists():
            return [Result(path.name, "*", "error", "other error", "the worker process died")], seconds
        return [Result(**r) for r in json.loads(out.read_text())], seconds


# -- the report -------------------------------------------------------------------------------

OUTCOMES = ("passed", "failed", "error", "skipped")


def _share(n: int, total: int) -> str:
    return f"{100 * n / total:.0f}%" if total else "-"


def report(results: list[Result], seconds: dict[str, float], title: str) -> str:
    """The tables: per file (with each worker's wall time), per category, the top causes, and
    every wrong gradient."""
    lines = [title, ""]
    lines.append(f"| file | tests | {' | '.join(OUTCOMES)} | passing | seconds |")
    lines.append("| --- | ---: | " + "---: | " * len(OUTCOMES) + "---: | ---: |")
    by_file = collections.defaultdict(list)
    for r in results:
        by_file[r.file].append(r)
    for name, rs in sorted(by_file.items()) + [("**all**", results)]:
        counts = collections.Counter(r.outcome for r in rs)
        lines.append(f"| {name} | {len(rs)} | " + " | ".join(str(counts[o]) for o in OUTCOMES)
                     + f" | {_share(counts['passed'], len(rs))} | {seconds.get(name, sum(seconds.values())):.1f} |")
    bad = [r for r in results if r.outcome in ("failed", "error")]
    passed = sum(r.outcome == "passed" for r in results)
    in_scope = passed + sum(r.category not in EXPECTED for r in bad)
    lines += ["", f"passing outside the expected failures ({', '.join(EXPECTED)}): {passed} of {in_scope}, "
                  f"{_share(passed, in_scope)}"]
    lines += ["", "| category | tests | share of all tests |", "| --- | ---: | ---: |"]
    by_category = collections.Counter(r.category for r in bad)
    for category in CATEGORIES:
        if by_category[category]:
            lines.append(f"| {category} | {by_category[category]} | {_share(by_category[category], len(results))} |")
    lines += ["", "| tests | category | cause |", "| ---: | --- | --- |"]
    for (category, cause), n in collections.Counter((r.category, r.cause) for r in bad).most_common(40):
        lines.append(f"| {n} | {category} | {cause.replace('|', '/')} |")
    wrong = [r for r in bad if r.category == "wrong gradient"]
    lines += ["", f"wrong gradients ({len(wrong)}):"]
    lines += [f"- {r.file}::{r.test}: {' '.join(r.message.split())[:300]}" for r in wrong]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="test files to run (default: all)")
    parser.add_argument("--json", help="also write every result to this file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--worker", nargs=2, metavar=("FILE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _work(Path(args.worker[0]), Path(args.worker[1]))
        return 0
    directory = tests_dir()
    paths = [directory / f for f in args.files] if args.files else suite_files(directory)
    results, seconds, start = [], {}, time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for path, (rs, s) in zip(paths, pool.map(run_file, paths)):
            results += rs
            seconds[path.name] = s
    commit = (directory / "COMMIT").read_text().strip()[:12] if (directory / "COMMIT").exists() else "unknown"
    print(report(results, seconds, f"autograd's test suite (commit {commit}) against ad: {len(paths)} files, "
                                   f"{time.perf_counter() - start:.0f} s wall with {args.jobs} workers"))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
