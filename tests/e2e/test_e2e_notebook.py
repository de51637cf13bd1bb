"""The notebook runs headless (nbclient, no browser) and leaves a debugger widget behind: the
cheap check that the browser tests' notebook itself is sound; then the shared scenario in
Notebook 7 (the ``notebook`` package)."""
import nbformat
import pytest
from nbclient import NotebookClient

from tests.support.debugger_notebook import NOTEBOOK, make_notebook
from tests.support.scenario import step_select_zoom_check
from tests.support import ROOT

from .front_ends import notebook7_debugger

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_notebook_executes_and_shows_the_debugger(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))      # the kernel imports this checkout
    nb = nbformat.read(make_notebook(tmp_path / "debugger_demo.ipynb"), as_version=4)
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    views = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(views) == 1
    assert views[0].data["text/plain"].startswith("<TapeDebugger: forward step 1 of 40, ")
    assert "tv-snapshot" in views[0].data["text/html"]
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    debugger = state[views[0].data[WIDGET_VIEW]["model_id"]]
    assert debugger["model_module"] == "anywidget"                    # one widget (and its layout), no tree
    assert {m["model_name"] for m in state.values()} == {"AnyModel", "LayoutModel"}
    assert debugger["state"]["_frame"]["step"]["index"] == 0
    assert debugger["state"]["_dot"].startswith("digraph")


@pytest.mark.browser
def test_notebook7(notebook7_server, page, artifacts):
    root = notebook7_debugger(page, notebook7_server, NOTEBOOK)
    step_select_zoom_check(page, root, artifacts, "notebook7")
