"""The debugger's diff mode in the browser: JupyterLab, Notebook 7, Voila and marimo, and a static
page. The same scenario everywhere (``diff_scenario``): the "diff" toggle opens the pane with
the tape diffed with ``ad.optimize`` of it (a dead equation, a repeated subexpression, the seed
folded, a sum factored: removed, added and changed entries), the union graph drawn by the browser's
Graphviz with each kind's colour, a click on an entry and on a graph node moves the debugger to
that equation (checked against a twin debugger in the test's process), and stepping goes on with
the pane open. A page written while no diff was shown disables the toggle, saying why."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from playwright.sync_api import expect

from tapeviz.debugger.diff_pane import NOT_ON_PAGE
from tapeviz.diffing import LOOKS
from tests.support.browser import assert_offline, open_offline
from tests.support.scenario import KERNEL_TIMEOUT_MS, at, view_errors

from .front_ends import lab_debugger, notebook7_debugger, shown, start_marimo, start_voila

pytestmark = pytest.mark.browser

DIFF_NOTEBOOK = "debugger_diff.ipynb"

# a program with something to optimise: a dead equation, a repeated subexpression (x * w and its
# sine), the seed (folded into a literal) and a sum of products of one cotangent (factored)
CELL = r'''
import numpy as np
import tapeviz


def program(x, w, v):
    unused = np.exp(v) * 3.0
    y = np.sin(x * w)
    return np.sum(2.0 * y + 3.0 * np.tanh(y) + np.sin(x * w))


x = np.linspace(0.1, 1.0, 4)
dbg = tapeviz.debug(program, x, np.full(4, 0.5), x, argnums=(0, 2))
dbg
'''.strip()

COUNTS = {"removed": 12, "added": 1, "changed": 6}


def twin():
    """The debugger the notebook's cell makes, made here: where the view must go."""
    namespace: dict = {}
    exec(CELL, namespace)
    return namespace["dbg"]


def make_diff_notebook(path: Path) -> Path:
    nb = new_notebook(cells=[new_code_cell(CELL)],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                               "language": "python"}, "language_info": {"name": "python"}})
    nbformat.write(nb, path)
    return path


def make_diff_marimo_app(path: Path) -> Path:
    body = "\n".join("    " + line if line else "" for line in CELL.splitlines()[:-1])
    path.write_text("import marimo\n\napp = marimo.App(width=\"full\")\n\n\n@app.cell\ndef _():\n"
                    f"    import marimo as mo\n{body}\n    widget = mo.ui.anywidget(dbg)\n    widget\n"
                    "    return (widget,)\n\n\nif __name__ == \"__main__\":\n    app.run()\n")
    return path


def diff_scenario(pg, root, artifacts, name: str, live: bool = True) -> None:
    """Open the pane (unless a static page shows it already), see its three kinds of entries and
    its graph, click an entry and a node, step on."""
    dbg = twin()
    phase = root.locator(".tv-phase")
    expect(phase).to_have_attribute("data-step", "0", timeout=KERNEL_TIMEOUT_MS)
    toggle = root.locator("button.tv-diff-toggle")
    pane = root.locator(".tv-diff-w")
    if live:
        expect(pane).to_be_hidden()
        expect(toggle).to_have_attribute("title", re.compile(r"^diff this tape \(a\) with ad\.optimize of it \(b\)"))
        toggle.click()
    expect(pane).to_be_visible(timeout=KERNEL_TIMEOUT_MS)
    expect(toggle).to_have_attribute("aria-pressed", "true")
    expect(toggle).to_have_attribute("title", "hide the diff of this tape (a) and ad.optimize of it (b)")
    d = dbg.show_diff()
    assert {kind: len(getattr(d, kind)) for kind in COUNTS} == COUNTS
    for kind, n in COUNTS.items():
        expect(pane.locator(f'.tv-diff-row[data-kind="{kind}"]')).to_have_count(n)
        expect(pane.locator(f'.tv-diff-row[data-kind="{kind}"]').first).to_have_css(
            "border-left-color", rgb(LOOKS[kind][1]))
    expect(pane.locator(".tv-diff-head")).to_contain_text(d.summary())
    # the union graph, laid out in the browser: a node per equation drawn, filled with its kind's colour
    svg = pane.locator('.tv-diff-graph[data-state="drawn"] svg')
    expect(svg).to_have_count(1, timeout=KERNEL_TIMEOUT_MS)
    for kind, n in COUNTS.items():
        expect(svg.locator(f'g.node polygon[fill="{LOOKS[kind][2]}"]')).to_have_count(n)
    statements = [line for line in d.to_graphviz().source.splitlines() if line.startswith('\t"') and "->" not in line]
    expect(svg.locator("g.node")).to_have_count(len(statements))
    pane.scroll_into_view_if_needed()
    pg.screenshot(path=str(artifacts / f"diff_{name}.png"), full_page=True)
    zoom = pane.locator("button.tv-diff-zoom")               # fitted to the pane's width, or at 1:1
    fitted = svg.bounding_box()["width"]
    zoom.click()
    expect(zoom).to_have_text("fit")
    assert svg.bounding_box()["width"] > 1.5 * fitted
    zoom.click()
    expect(zoom).to_have_text("1:1")

    # an entry of the session's tape: the seed the optimiser folded, in the backward pass
    seed = next(i for i, e in enumerate(d.a.eqns) if e in d.removed and e.origin.kind.value == "seed")
    entry = pane.locator(f'.tv-diff-row[data-diff-eqn="{seed}"]')
    entry.click()
    dbg._go_to_diff_entry(seed)
    at(root, dbg)
    expect(phase).to_have_attribute("data-selected", dbg.selected)
    expect(entry).to_have_class(re.compile(r"\btv-diff-here\b"))
    expect(root.locator(f'.tv-listing .tv-eq.tv-current[data-eq="{seed}"]')).to_have_count(1)
    phase.scroll_into_view_if_needed()                    # the phase line and the listing at the entry
    pg.screenshot(path=str(artifacts / f"diff_{name}_entry.png"), full_page=True)

    # a node of the graph: the dead exp, a's equation 0 (drawn as "a0")
    node = svg.locator("g.node").filter(has=pg.locator("title", has_text=re.compile(r"^a0$")))
    node.click()
    dbg._go_to_diff_entry(0)
    at(root, dbg)
    expect(phase).to_have_attribute("data-selected", "%3")

    # the debugger steps on with the pane open, and the toggle closes it
    root.locator("button.tv-next").click()
    dbg.next()
    at(root, dbg)
    expect(pane).to_be_visible()
    toggle.click()
    expect(pane).to_be_hidden()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    toggle.click()                                        # the same diff again
    expect(pane.locator('.tv-diff-graph[data-state="drawn"] svg')).to_have_count(1, timeout=KERNEL_TIMEOUT_MS)
    if live:
        assert not view_errors(pg), view_errors(pg)


def rgb(colour: str) -> str:
    """A #rrggbb colour as the browser's computed style writes it."""
    r, g, b = (int(colour[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def test_lab_diff(lab_server, page, artifacts):
    make_diff_notebook(lab_server.cwd / DIFF_NOTEBOOK)
    root = lab_debugger(page, lab_server, DIFF_NOTEBOOK)
    diff_scenario(page, root, artifacts, "lab")


def test_notebook7_diff(notebook7_server, page, artifacts):
    make_diff_notebook(notebook7_server.cwd / DIFF_NOTEBOOK)
    root = notebook7_debugger(page, notebook7_server, DIFF_NOTEBOOK)
    diff_scenario(page, root, artifacts, "notebook7")


@pytest.fixture(scope="module")
def diff_voila(tmp_path_factory):
    """Voila on the diff's notebook (the shared Voila server shows the MLP's)."""
    server = start_voila(tmp_path_factory, "diff", make_diff_notebook, DIFF_NOTEBOOK)
    yield server
    server.stop()


def test_voila_diff(diff_voila, page, artifacts):
    root = shown(page, diff_voila.url("/"))
    diff_scenario(page, root, artifacts, "voila")


@pytest.fixture(scope="module")
def diff_marimo(tmp_path_factory):
    """``marimo run`` of the diff's program, shown as ``mo.ui.anywidget(dbg)``."""
    server = start_marimo(tmp_path_factory, "diff", make_diff_marimo_app, "diff_app.py")
    yield server
    server.stop()


def test_marimo_diff(diff_marimo, page, artifacts):
    root = shown(page, diff_marimo.base_url + "/")
    diff_scenario(page, root, artifacts, "marimo")


def test_static_page_shows_the_diff_it_embeds(browser, artifacts, tmp_path):
    dbg = twin()
    dbg.show_diff()
    path = dbg.to_html(tmp_path / "diff.html")
    context, pg, requests, errors = open_offline(browser, path)
    diff_scenario(pg, pg.locator(".tv-root"), artifacts, "static", live=False)
    assert_offline(path, requests, errors)
    context.close()


def test_a_static_page_without_a_diff_disables_the_toggle_saying_why(browser, tmp_path):
    path = twin().to_html(tmp_path / "no_diff.html")
    context, pg, requests, errors = open_offline(browser, path)
    toggle = pg.locator(".tv-root button.tv-diff-toggle")
    expect(toggle).to_be_disabled()
    expect(toggle).to_have_attribute("title", NOT_ON_PAGE)
    expect(pg.locator(".tv-root .tv-diff-w")).to_be_hidden()
    assert_offline(path, requests, errors)
    context.close()
