"""Executing notebooks and rendering them to static HTML whose widgets work offline.

    python -m tapeviz.commands.notebooks render [NOTEBOOK ...] --out out/notebooks

Each notebook runs in a fresh kernel with nbclient, in its own folder (as Jupyter runs it), with
``tapeviz.debugger.page.EMBED_ENV`` set: every tape debugger a cell shows then adds its whole
session (every step and selection, precomputed) to its output. nbconvert writes a page in which
each debugger steps, selects and compares from those states with no kernel: the page carries
the debugger's ES module, stylesheet and Graphviz (WebAssembly) itself, once, and loads nothing:
no RequireJS, no MathJax, no CDN, no widget manager. Other widgets show their text fallback. The
executed notebook is written beside the page, so a failure can be read in either.
"""
from __future__ import annotations

import argparse
import copy
import os
import re
import sys
from pathlib import Path

from ..debugger.page import EMBED_ENV, SESSION_MIME, assets, mount_html, too_large_html
from ..escaping import html_attr, html_text

TEMPLATE = Path(__file__).parent.parent / "static" / "nbconvert" / "offline.html.j2"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CELL_TIMEOUT = 300                                 # seconds per cell
DEFAULT_FOLDER = Path("notebooks")


class NotebookError(RuntimeError):
    """A notebook failed to execute; the message names the notebook, the cell and the error.
    ``notebook`` holds the outputs up to the failure (the failing cell's error included)."""

    def __init__(self, message: str, notebook=None):
        super().__init__(message)
        self.notebook = notebook


def execute(path, *, timeout: int = CELL_TIMEOUT):
    """Run every cell of the notebook at ``path`` in a fresh kernel (its ``kernelspec``, else
    python3) with the notebook's folder as working directory and the debuggers' sessions
    embedded in their outputs; returns the executed ``NotebookNode``. A cell that raises, runs
    longer than ``timeout`` seconds or kills the kernel raises ``NotebookError``."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, shutdown_kernel="immediate",
                            resources={"metadata": {"path": str(path.parent.resolve())}})
    try:
        client.execute(env={**os.environ, EMBED_ENV: "1"})
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        ran = [(i, c.execution_count) for i, c in enumerate(nb.cells)
               if c.cell_type == "code" and c.execution_count is not None]
        where = f"cell {ran[-1][0]} (In [{ran[-1][1]}])" if ran else "a cell"
        what = (f"raised {exc.ename}: {exc.evalue}\n{exc}" if isinstance(exc, CellExecutionError)
                else f"failed: {type(exc).__name__}: {exc}")
        raise NotebookError(f"{path}: {where} {what}", nb) from None
    return nb


def to_html(nb) -> str:
    """The page of an executed notebook, titled by its first heading, its debuggers drawn from
    their embedded sessions."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", template_file=str(TEMPLATE))
    body, _ = exporter.from_notebook_node(static_outputs(nb), resources={"metadata": {"name": title(nb)}})
    return body


def static_outputs(nb):
    """A copy of ``nb`` whose outputs need no kernel: a debugger's output becomes its static page
    (the scripts it needs go with the first one), or its snapshot and the reason when its session
    was too large to embed; other widgets keep only their text or HTML fallback."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    first = True
    for cell in nb.cells:
        for output in cell.get("outputs", ()):
            data = output.get("data", {})
            data.pop(WIDGET_VIEW, None)
            embedded = data.pop(SESSION_MIME, None)
            if embedded is None:
                continue
            if "packed" in embedded:
                data["text/html"] = (assets() if first else "") + mount_html(embedded["packed"])
                first = False
            else:
                data["text/html"] = too_large_html(embedded["error"], data.get("text/html", ""))
    return nb


def title(nb, default: str = "Notebook") -> str:
    """The first Markdown heading of a notebook."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return default


def render(paths, out) -> list[Path]:
    """Execute each notebook and write ``<name>.html`` and the executed ``<name>.ipynb`` into
    ``out``, plus an ``index.html``. Every notebook is attempted; if any
    fails, a ``NotebookError`` lists all failures after the others are written."""
    import nbformat

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in paths]
    stems = {p.stem for p in paths}
    pages, titles, failures = [], [], []
    for path in paths:
        try:
            nb = execute(path)
        except NotebookError as exc:
            nb = exc.notebook
            failures.append(str(exc))
        nbformat.write(nb, out / f"{path.stem}.ipynb")
        page = out / f"{path.stem}.html"
        page.write_text(_link_pages(to_html(nb), stems), encoding="utf-8")
        pages.append(page)
        titles.append(title(nb, path.stem))
    (out / "index.html").write_text(_index(pages, titles), encoding="utf-8")
    if failures:
        raise NotebookError(f"{len(failures)} of {len(pages)} notebook(s) failed:\n\n"
                            + "\n\n".join(failures))
    return pages


def _link_pages(text: str, stems: set[str]) -> str:
    """Links between the notebooks rendered together lead to their pages."""
    def page(m):
        return f'href="{m[1]}.html"' if m[1] in stems else m[0]
    return re.sub(r'href="([\w.-]+)\.ipynb"', page, text)


def _index(pages: list[Path], titles: list[str]) -> str:
    items = "".join(f'<li><a{html_attr("href", p.name)}>{html_text(t)}</a></li>'
                    for p, t in zip(pages, titles))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>tapeviz notebooks'
            f'</title></head><body><h1>tapeviz notebooks</h1><ul>{items}</ul></body></html>\n')


def find_notebooks(paths) -> list[Path]:
    """The notebooks named (files or folders), or those of ``notebooks/`` when none is."""
    paths = [Path(p) for p in paths] or [DEFAULT_FOLDER]
    found = []
    for p in paths:
        if p.is_dir():
            found.extend(sorted(p.glob("*.ipynb")))
        elif p.suffix == ".ipynb" and p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"{p} is not a notebook (.ipynb) or a folder of notebooks")
    if not found:
        raise FileNotFoundError(f"no notebooks (*.ipynb) in {', '.join(map(str, paths))}; run this "
                                "from the repository's root or name the notebooks")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tapeviz.commands.notebooks",
                                     description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("render", help="execute notebooks and write static HTML pages")
    cmd.add_argument("paths", nargs="*", help="notebooks or folders (default: notebooks/)")
    cmd.add_argument("--out", default="out/notebooks", help="output folder (default: out/notebooks)")
    args = parser.parse_args(argv)
    try:
        pages = render(find_notebooks(args.paths), args.out)
    except (NotebookError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for page in pages:
        print(page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
