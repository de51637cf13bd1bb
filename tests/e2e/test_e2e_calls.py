"""The graph pane's calls view on the 40-step RNN in JupyterLab, Notebook 7, Voila and marimo:
the shared scenario (``calls_view``: switch to it, ``cell x40`` one node, open it, open
``cell#5``, go to ``cell#17`` (the weights drawn as stubs; a click on one selects it), close the
group from its title, expand it in the outline); and on a static page,
offline, where the page's ``CallsSource`` draws what the kernel would. The Python half:
tests/tapeviz/debugger/test_calls_view.py."""
import pytest

import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from tests.support.browser import assert_offline, open_offline
from tests.support.debugger_notebook import OUTLINE_NOTEBOOK, make_rnn_notebook
from tests.support.scenario import calls_view

from .front_ends import lab_debugger, notebook7_debugger, shown
from .test_e2e_outline import rnn_marimo, rnn_voila  # noqa: F401  (module fixtures: the RNN's servers)

pytestmark = pytest.mark.browser


def test_lab_calls(lab_server, page, artifacts):
    make_rnn_notebook(lab_server.cwd / OUTLINE_NOTEBOOK)
    root = lab_debugger(page, lab_server, OUTLINE_NOTEBOOK)
    calls_view(page, root, artifacts, "lab")


def test_notebook7_calls(notebook7_server, page, artifacts):
    make_rnn_notebook(notebook7_server.cwd / OUTLINE_NOTEBOOK)
    root = notebook7_debugger(page, notebook7_server, OUTLINE_NOTEBOOK)
    calls_view(page, root, artifacts, "notebook7")


def test_voila_calls(rnn_voila, page, artifacts):  # noqa: F811
    root = shown(page, rnn_voila.url("/"))
    calls_view(page, root, artifacts, "voila")


def test_marimo_calls(rnn_marimo, page, artifacts):  # noqa: F811
    root = shown(page, rnn_marimo.base_url + "/")
    calls_view(page, root, artifacts, "marimo")


def test_static_page_calls(browser, artifacts, tmp_path):
    """The same scenario on the RNN's static page, offline: the page draws the calls view itself."""
    path = tapeviz.debug(rnn_loss, *rnn_example()).to_html(tmp_path / "rnn.html")
    context, pg, requests, errors = open_offline(browser, path)
    pg.js_errors = errors                                  # assert_offline checks them all
    calls_view(pg, pg.locator(".tv-root"), artifacts, "static_page", kernel=False)
    assert_offline(path, requests, errors)
    context.close()
