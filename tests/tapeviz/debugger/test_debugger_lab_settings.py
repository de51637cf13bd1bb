"""The JupyterLab default tapeviz ships: widget state saved in notebooks (so a notebook saved in
Lab shows its debuggers again with no kernel, instead of "Error displaying widget: model not
found"). The file is a package data file that a wheel installs where Lab reads package defaults,
``{sys.prefix}/share/jupyter/lab/settings/overrides.d`` (jupyterlab_server's ``overrides.d``);
the browser test (tests/e2e/test_e2e_lab.py) saves and reopens a notebook with it. Cost: the
import of jupyterlab (1-2 s; 20 s on the loaded machine)."""
import json
import sys
import tomllib
from pathlib import Path

from jupyterlab.commands import get_app_dir
from jupyterlab_server.settings_utils import _get_overrides
from tests.support import ROOT

TARGET = "share/jupyter/lab/settings/overrides.d"
PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"


def test_the_package_installs_a_lab_default_that_saves_widget_state(monkeypatch):
    data_files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    assert data_files[TARGET] == [f"{TARGET}/tapeviz.json"]
    monkeypatch.delenv("JUPYTERLAB_DIR", raising=False)
    assert Path(get_app_dir(), "settings") == Path(sys.prefix, "share/jupyter/lab/settings")  # where a wheel puts it
    overrides, error = _get_overrides(str(ROOT / "share/jupyter/lab/settings"))
    assert not error and overrides[PLUGIN] == {"saveState": True}


def test_the_setting_is_one_the_widget_manager_declares():
    schemas = Path(sys.prefix, "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager/schemas")
    schema = json.loads((schemas / "@jupyter-widgets/jupyterlab-manager/plugin.json").read_text())
    assert schema["properties"]["saveState"]["type"] == "boolean" and not schema["additionalProperties"]
