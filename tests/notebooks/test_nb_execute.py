"""The notebooks as stored, executed and rendered: each runs without errors in a fresh kernel,
and the render command writes a page for each that loads nothing from the network, with every
debugger's session embedded."""
from __future__ import annotations

import html
from html.parser import HTMLParser

import nbformat
import pytest

from tapeviz.debugger.page import SESSION_MIME, unpack
from tapeviz.commands.notebooks import NotebookError, execute, find_notebooks, main, title
from tests.support import ROOT

NOTEBOOKS = find_notebooks([ROOT / "notebooks"])

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_the_course_has_its_eleven_notebooks():
    assert [p.name[:3] for p in NOTEBOOKS] == ["01_", "02_", "03_", "04_", "05_", "06_", "07_", "08_", "09_",
                                               "10_", "11_"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_clean(notebook):
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_without_errors(site, notebook):
    nb = site.executed(notebook)
    errors = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert not errors, "\n".join(f"cell {i}: {o.ename}: {o.evalue}\n" + "\n".join(o.traceback)
                                 for i, o in errors)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "not every cell ran"
    assert any(c.outputs for c in code)


def test_render_command_writes_a_page_per_notebook(site):
    assert site.status == 0, site.stderr
    for notebook in NOTEBOOKS:
        text = site.page(notebook).read_text(encoding="utf-8")
        heading = title(nbformat.read(notebook, as_version=4))
        assert text.startswith("<!DOCTYPE html>") and f"<title>{html.escape(heading)}</title>" in text
    tour = site.page(NOTEBOOKS[0]).read_text(encoding="utf-8")
    assert f'href="{NOTEBOOKS[1].stem}.html"' in tour and ".ipynb\"" not in tour   # pages link pages
    index = (site.out / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{n.stem}.html"' in index for n in NOTEBOOKS)
    assert sorted(p.name for p in site.out.iterdir() if p.is_dir()) == []      # no manager to copy


def test_each_debugger_embeds_its_session_and_its_page_the_scripts_once(site):
    """The tour, the rule (in forward mode), the bug hunt, the spectra, the scipy model, the imported ONNX
    model and the real programs (the first of their two: the 40-step RNN) show a debugger each; its
    page carries the session it had when the cell showed it, and the view's module, stylesheet and
    Graphviz once."""
    sessions = {}
    for notebook in NOTEBOOKS:
        outputs = [o for c in site.executed(notebook).cells for o in c.get("outputs", ())]
        embedded = [o.data[SESSION_MIME] for o in outputs if SESSION_MIME in o.get("data", {})]
        page = site.page(notebook).read_text(encoding="utf-8")
        assert page.count('class="tv-static"') == len(embedded)
        assert page.count('id="tv-graphviz"') == (1 if embedded else 0)
        assert WIDGET_STATE not in page and WIDGET_VIEW not in page
        if embedded:
            sessions[notebook.stem] = unpack(embedded[0]["packed"])
    tour = sessions.pop(NOTEBOOKS[0].stem)
    assert tour["start"]["selected"] == "%3" and tour["start"]["granularity"] == "pullback"
    assert tour["steps"]["pullback"][tour["start"]["index"]]["text"].endswith("pullback of %3 (tanh) (3 equations)")
    bugs = sessions.pop(next(n.stem for n in NOTEBOOKS if "bugs" in n.stem))
    assert bugs["checks"]["state"] == "fail" and bugs["checks"]["alerts"]
    spectra = sessions.pop(next(n.stem for n in NOTEBOOKS if "complex" in n.stem))
    assert spectra["start"]["selected"] == "%1"             # the complex spectrum, at abs's pullback
    card = spectra["html"][spectra["vars"]["%1"]["inspector"]]
    assert "complex128" in card and "|z|" in card and "∠" in card     # magnitude and phase
    rule = sessions.pop(next(n.stem for n in NOTEBOOKS if "writing_a_rule" in n.stem))
    assert rule["steps"]["pullback"][rule["start"]["index"]]["text"].startswith("tangent, step")   # forward mode
    scipy = sessions.pop(next(n.stem for n in NOTEBOOKS if "scipy" in n.stem))
    assert "scipy.special.gammaln" in scipy["steps"]["pullback"][scipy["start"]["index"]]["text"]
    imported = sessions.pop(next(n.stem for n in NOTEBOOKS if "onnx_import" in n.stem))
    assert imported["steps"]["pullback"][imported["start"]["index"]]["text"].endswith("pullback of %9 (im2col)")
    real = sessions.pop(next(n.stem for n in NOTEBOOKS if "real_programs" in n.stem))
    at = real["steps"]["pullback"][real["start"]["index"]]     # the 40-step RNN, at cell#17's pullback
    assert at["phase"] == "backward" and at["scope"] == ["cell#17"] and real["start"]["selected"] == "%107"
    assert at["text"].endswith("pullback of %107 (tanh) (3 equations)")
    group = real["outline"]["children"][0]
    assert group["kind"] == "group" and group["name"] == "cell" and group["calls"] == 40
    batching = sessions.pop(next(n.stem for n in NOTEBOOKS if "batching" in n.stem))
    at = batching["steps"]["pullback"][batching["start"]["index"]]       # the hidden layer, batched
    assert at["text"].endswith("tanh → %10") and batching["start"]["selected"] == "%10"
    assert "(5, 1, 8)" in batching["html"][batching["vars"]["%10"]["inspector"]]
    assert not sessions, f"unexpected debuggers in {sorted(sessions)}"


def test_real_programs_shows_what_its_prose_says(site):
    """The chapter on real programs: the numbers its prose states are the ones its cells print,
    and its second debugger embeds the session stopped at the planted NaN."""
    notebook = next(n for n in NOTEBOOKS if "real_programs" in n.stem)
    outputs = [o for c in site.executed(notebook).cells for o in c.get("outputs", ())]
    text = "\n".join(o.text for o in outputs if o.output_type == "stream")
    assert "244 equations traced, 771 in the gradient tape" in text
    assert "15 nodes; [('cell#1', 'cell#40', 40), ('cell#39', 'cell#2', 38)]" in text      # the ×40 fold
    assert "cell ×40" in text and "... 37 more" in text                                  # the outline, folded
    for line in ("breakpoint cell#17: forward", "breakpoint %185: forward", "breakpoint cell#17: backward"):
        assert line in text                                                           # cont() forward, then back
    assert "loss: nan | NaN in the gradients of ['Wh', 'Wx', 'b', 'Wo']" in text
    assert "NaN or Inf in %51 | forward, step 46 of 108: divide → %51 | ('padded_cell#5', 'unit')" in text
    assert "44 removed, 0 added, 41 changed, 686 same" in text
    assert "Counter({'transpose': 38, 'full': 1, 'multiply': 1, 'reshape': 1, 'broadcast_to': 1, 'power': 1, 'negative': 1})" in text
    assert "Counter({'matmul': 38, 'multiply': 2, 'transpose': 1})" in text and "moved from cell#40 to top level" in text
    assert "1 removed, 1 added, 3 changed, 47 same (values compared)" in text and "@@ layer#1 @@" in text
    assert "open at cell#17's pullback: [('cell',), ('cell#17',)]" in text          # the graph, by call
    assert "open at the first step:     []" in text
    svgs = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) == 4              # the collapsed RNN, the MLP's clusters, cell#17 opened, the rule diff
    assert "layer#1" in svgs[1].data["image/svg+xml"] and "log_softmax" in svgs[1].data["image/svg+xml"]
    assert "cell#17" in svgs[2].data["image/svg+xml"]
    assert "tape diff: 1 removed, 1 added, 3 changed" in svgs[3].data["image/svg+xml"]
    embedded = [o.data[SESSION_MIME] for o in outputs if SESSION_MIME in o.get("data", {})]
    assert len(embedded) == 3 and all("packed" in e for e in embedded)
    nan = unpack(embedded[1]["packed"])
    at = nan["steps"]["pullback"][nan["start"]["index"]]
    assert at["scope"] == ["padded_cell#5", "unit"] and nan["start"]["selected"] == "%51"
    shown = unpack(embedded[2]["packed"])["diff"]           # the MLP's debugger, its diff pane open
    assert shown["shown"] and shown["summary"].startswith("1 removed, 1 added, 3 changed")


def test_batching_shows_what_its_prose_says(site):
    """The chapter on batching: per-example gradients equal to the loop, the batched tapes with the
    batch axis in their avals, the batched Hessian, the fallback loop and the refused branch."""
    notebook = next(n for n in NOTEBOOKS if "batching" in n.stem)
    outputs = [o for c in site.executed(notebook).cells for o in c.get("outputs", ())]
    text = "\n".join(o.text for o in outputs if o.output_type == "stream")
    assert "per-example gradients equal the loop: True" in text
    assert "'W0': (256, 64, 32)" in text and "x faster" in text
    assert "%14:f64[4,3,2] = multiply %12 %13" in text                  # a weight gradient per example
    assert "49 equations; inputs: %0:f64[64,32]" in text and "%4:f64[256,1,64]" in text
    assert "batched Hessian equals the loop over basis vectors: True" in text and "(3, 6, 6) True" in text
    assert "fallback_loop dims=(0,) params=() primitive='scipy.linalg.expm' size=3 %0" in text
    assert "expm is batched by: loop | sin by: derived | matmul by: hand" in text
    assert "BatchedBranchError: a branch" in text and "in soft_sign" in text and "np.sum(x) > 0" in text
    assert "forward, step 5 of 42: tanh → %10" in text


class _Resources(HTMLParser):
    """Every URL a page would fetch by itself: script, link, img, iframe, source, object."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("src", "href", "data") if tag != "a" else ():
            if attrs.get(key):
                self.urls.append(attrs[key])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_page_fetches_only_relative_urls(site, notebook):
    parser = _Resources()
    parser.feed(site.page(notebook).read_text(encoding="utf-8"))
    remote = [u for u in parser.urls if "//" in u.split("#")[0] and not u.startswith("data:")]
    assert not remote, remote


def test_render_names_the_failing_cell_and_still_writes_the_page(tmp_path, capsys):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("1 / (x - 1)")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    path = tmp_path / "broken.ipynb"
    nbformat.write(nb, path)
    assert main(["render", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "broken.ipynb: cell 1 (In [2]) raised ZeroDivisionError: division by zero" in err
    assert "ZeroDivisionError" in (tmp_path / "out" / "broken.html").read_text(encoding="utf-8")


def test_a_cell_that_hangs_is_stopped_and_named(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time; time.sleep(60)")],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(NotebookError, match=r"slow.ipynb: cell 0 \(In \[1\]\) failed: CellTimeoutError"):
        execute(path, timeout=2)


def test_find_notebooks_explains_a_wrong_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a notebook"):
        find_notebooks([tmp_path / "missing.ipynb"])
    with pytest.raises(FileNotFoundError, match="no notebooks"):
        find_notebooks([tmp_path])
    assert [p.name for p in NOTEBOOKS] == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
