"""The static page's JavaScript run under Node, to prove it writes what the kernel writes: the
session a page embeds, read back as the browser reads it, and a script run against the page's
module (``static/debugger.js``) with JSON inputs."""
from __future__ import annotations

import base64
import gzip
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import tapeviz.debugger as package
from tests.support.needs import needs

SESSION = re.compile(r'<script type="application/gzip" class="tv-session">([^<]*)</script>')
MODULE = Path(package.__file__).parent / "static" / "debugger.js"
needs_node = needs(shutil.which("node") is not None, "Node, to run the page's module")


def page_session(dbg, folder: Path) -> dict:
    """The session ``dbg.to_html`` embeds, unpacked from the written page."""
    html = dbg.to_html(folder / "page.html").read_text(encoding="utf-8")
    return json.loads(gzip.decompress(base64.b64decode(SESSION.search(html).group(1))))


class NodeRunner:
    """``run(*inputs)``: ``script`` (an ES module reading ``process.argv``: the page's module's
    URL, then one JSON file per input) run by Node in ``folder``; its stdout, parsed as JSON."""

    def __init__(self, folder: Path, script: str):
        self.folder = folder
        self.module = folder / "debugger.mjs"          # .mjs: Node loads it as an ES module
        self.module.write_text(MODULE.read_text(encoding="utf-8"), encoding="utf-8")
        (folder / "run.mjs").write_text(script, encoding="utf-8")
        self._files = itertools.count()

    def __call__(self, *inputs, timeout: int = 300):
        paths = []
        for data in inputs:
            path = self.folder / f"input{next(self._files)}.json"
            path.write_text(json.dumps(data), encoding="utf-8")
            paths.append(str(path))
        done = subprocess.run(["node", str(self.folder / "run.mjs"), self.module.as_uri(), *paths],
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
