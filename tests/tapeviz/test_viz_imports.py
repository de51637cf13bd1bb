"""``import tapeviz`` gives the model, the drawings and the exports without ipywidgets; the
debugger's public names import the widget on first use and behave as before."""
import inspect
import subprocess
import sys

import numpy as np
import pytest

import tapeviz


def test_import_tapeviz_does_not_import_the_widget():
    code = ("import sys, tapeviz, tapeviz.debugger.model, tapeviz.debugger.graph_pane; "
            "assert 'ipywidgets' not in sys.modules, 'ipywidgets imported'; "
            "assert 'tapeviz.debugger.widget' not in sys.modules, 'the widget imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_debugger_names_are_public_and_work():
    assert {"debug", "TapeDebugger"} <= set(tapeviz.__all__)
    dbg = tapeviz.debug(lambda x: np.sum(np.sin(x)), np.ones(3))
    assert isinstance(dbg, tapeviz.TapeDebugger)
    direct = tapeviz.TapeDebugger(lambda x: np.sum(np.sin(x)), (np.ones(3),))
    assert direct.phase_line == dbg.phase_line and dbg.phase_line.startswith("forward, step 1 of ")
    from tapeviz import TapeDebugger  # the from-import form too
    assert TapeDebugger is tapeviz.TapeDebugger


def test_an_unknown_name_is_still_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        tapeviz.no_such_name


def test_every_public_name_is_there_and_no_module_hides_a_function():
    """``__all__`` names what the package gives; ``tapeviz.collapse``, ``export`` and ``render``
    are the functions, whatever modules were imported (no submodule is named like them)."""
    import tapeviz.commands.cli  # noqa: F401  (loads every layer)
    assert all(hasattr(tapeviz, name) for name in tapeviz.__all__)
    for name in ("collapse", "export", "render", "listing", "residuals"):
        assert inspect.isfunction(getattr(tapeviz, name)), name
