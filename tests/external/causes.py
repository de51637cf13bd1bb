"""Naming the cause of a failure so the external suites' reports can group them: an
exception's first sentence with its numbers blotted out, and where in the code it came from."""
from __future__ import annotations

import os
import re
import traceback

from ad.errors import GuardError, TraceError
from tests.support import ROOT

REPO_ROOT = ROOT
AD_DIR = str(REPO_ROOT / "ad") + os.sep
_SITE = "site-packages" + os.sep


def normalized(text: str, limit: int = 90) -> str:
    """A message's first sentence with numbers and array contents blotted out, so failures
    that differ only in values group together."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    line = re.split(r"\. | \(", line)[0]
    line = re.sub(r"array\(.*?\)|\[[-+.\deEj\s,]*\]", "[...]", line)
    line = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?", "#", line)
    return line[:limit]


def short_path(frame) -> str:
    """``file:line``, relative to this repository or to site-packages (else the file's name)."""
    path = frame.filename
    for root in (str(REPO_ROOT) + os.sep, _SITE):
        if root in path:
            return f"{path.split(root, 1)[1]}:{frame.lineno}"
    return f"{os.path.basename(path)}:{frame.lineno}"


def library(filename: str) -> str:
    """The installed package a file belongs to ('numpy', 'scipy', ...), or ''."""
    return filename.split(_SITE, 1)[1].split(os.sep, 1)[0] if _SITE in filename else ""


def frames(exc: BaseException) -> list:
    return traceback.extract_tb(exc.__traceback__)


def raised_in_ad(fs) -> bool:
    """Whether the innermost frame outside numpy is ad's (numpy raising on what ad passed it
    is ad's crash too)."""
    own = [f for f in fs if library(f.filename) != "numpy"]
    return bool(own) and own[-1].filename.startswith(AD_DIR)


def refused(exc: BaseException) -> bool:
    """One of ad's errors, or a NotImplementedError ad raises on purpose (some refusals are not
    yet in the TraceError family)."""
    return isinstance(exc, (TraceError, GuardError)) or isinstance(exc, NotImplementedError) \
        and raised_in_ad(frames(exc))


def site(fs, ours: bool) -> str:
    """Where an error came from. For ad's own errors, where ``ad`` was entered (and the library,
    numpy or scipy, that called it); for a crash inside ad its innermost frame; else the
    innermost frame outside numpy."""
    inside = [i for i, f in enumerate(fs) if f.filename.startswith(AD_DIR)]
    if not ours and fs:
        own = [f for f in fs if library(f.filename) != "numpy"] or fs
        return f" [at {short_path(fs[inside[-1]] if raised_in_ad(fs) else own[-1])}]"
    if not inside:
        return ""
    i = inside[-1]
    while i > 0 and fs[i - 1].filename.startswith(AD_DIR):
        i -= 1
    entry = f"{short_path(fs[i])} {fs[i].name}"
    return f" [via {short_path(fs[i - 1])} -> {entry}]" if i > 0 and library(fs[i - 1].filename) else f" [{entry}]"


def cause(exc: BaseException) -> str:
    """``Type: first sentence [site]``; ad's errors give their reason without the location."""
    return f"{type(exc).__name__}: {normalized(getattr(exc, 'reason', str(exc)))}{site(frames(exc), refused(exc))}"
