"""The notebook runs headless (nbclient, no browser) and leaves a debugger widget behind: the
cheap check that the browser tests' notebook itself is sound."""
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from debugger_notebook import make_notebook

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
ROOT = Path(__file__).resolve().parents[2]


def test_notebook_executes_and_shows_the_debugger(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))      # the kernel imports this checkout
    nb = nbformat.read(make_notebook(tmp_path / "debugger_demo.ipynb"), as_version=4)
    NotebookClient(nb, timeout=120, startup_timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    views = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(views) == 1
    state = nb.metadata["widgets"][WIDGET_STATE]["state"]
    root = state[views[0].data[WIDGET_VIEW]["model_id"]]["state"]
    assert "tv-root" in root["_dom_classes"]
    html = [m["state"]["value"] for m in state.values() if m["model_name"] == "HTMLModel"]
    assert any('data-step="0"' in h and "tv-phase" in h for h in html)
    assert any("<svg" in h and "tv-graph-pane" in h for h in html)
