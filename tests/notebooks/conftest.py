"""The teaching notebooks, rendered once per session by the render command, and a headless
Chromium (Debian's, driven by the playwright package's bundled driver) that may only reach
loopback: every other request is aborted and recorded, so a test can assert there was none."""
from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import pytest
from tests.support import ROOT

LOCAL = re.compile(r"^(https?|wss?)://(127\.0\.0\.1|localhost|\[::1\])[:/]|^(data|blob|about):")


class Site:
    """The output of one ``python -m tapeviz.commands.notebooks render`` run."""

    def __init__(self, out: Path, status: int, stderr: str):
        self.out, self.status, self.stderr = out, status, stderr

    def executed(self, notebook: Path):
        import nbformat
        path = self.out / f"{notebook.stem}.ipynb"
        assert path.is_file(), f"the render command wrote no {path.name}:\n{self.stderr}"
        return nbformat.read(path, as_version=4)

    def page(self, notebook: Path) -> Path:
        return self.out / f"{notebook.stem}.html"


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    """Every notebook executed and rendered to HTML, by the command itself."""
    import contextlib
    import io

    from tapeviz.commands.notebooks import main

    out = tmp_path_factory.mktemp("site")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        status = main(["render", str(ROOT / "notebooks"), "--out", str(out)])
    return Site(out, status, stderr.getvalue())


@pytest.fixture(scope="session")
def server(site):
    """The rendered site over HTTP on 127.0.0.1 (pages load their scripts relative to it)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(Quiet, directory=str(site.out)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def page(browser):
    """A fresh page; ``page.external`` lists the non-loopback requests it tried (all aborted),
    ``page.errors`` its uncaught exceptions."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    external: list[str] = []

    def route(r):
        if LOCAL.match(r.request.url):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()
    context.route("**/*", route)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    pg.external = external
    pg.errors = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    yield pg
    context.close()
