"""The notebook the browser tests open: a debugger on the built-in MLP whose tanh rule has the
wrong sign (registered with ``ad.using_rule`` while the debugger is built, as a user chasing a
bug would), with a parameter named by a hostile dict key to prove every label is escaped.

``python tests/support/debugger_notebook.py OUT.ipynb`` writes it; the fixtures write it into a
throw-away folder for each run, and the same program as a marimo app (``make_marimo_app``),
where the cell shows ``mo.ui.anywidget(dbg)``. ``FORWARD_NOTEBOOK`` holds the forward-mode
view (``tapeviz.debug_jvp``) of the same wrong rule; ``OUTLINE_NOTEBOOK`` (``make_rnn_notebook``)
the 40-step RNN, whose outline folds its 40 ``cell`` calls.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HOSTILE = '<b>&"x{|}'
NOTEBOOK = "debugger_demo.ipynb"
FORWARD_NOTEBOOK = "debugger_forward.ipynb"
MARIMO_APP = "debugger_demo.py"

CELL = r'''
import numpy as np
import ad
import tapeviz
from ad.examples import mlp_example, mlp_loss

HOSTILE = HOSTILE_REPR


def loss(params, x, y):
    return mlp_loss(params["mlp"], x, y) + 1e-3 * np.sum(params[HOSTILE] ** 2)


def tanh_wrong_sign(x):
    y = np.tanh(x)
    return y, lambda dy: (-dy * (1 - y * y),)


mlp, x, y = mlp_example()
with ad.using_rule(np.tanh, tanh_wrong_sign):
    dbg = tapeviz.debug(loss, {"mlp": mlp, HOSTILE: np.ones(3)}, x, y)
dbg
'''.strip().replace("HOSTILE_REPR", repr(HOSTILE))


FORWARD_CELL = r'''
import numpy as np
import ad
import tapeviz


def f(x, W):
    return np.sum(np.tanh(W @ np.sin(x)) * x)


def tanh_wrong_sign(x):
    y = np.tanh(x)
    return y, lambda dy: (-dy * (1 - y * y),)


with ad.using_rule(np.tanh, tanh_wrong_sign):
    dbg = tapeviz.debug_jvp(f, (np.linspace(-1, 1, 3), np.eye(3)), (np.ones(3), None))
dbg
'''.strip()


OUTLINE_NOTEBOOK = "debugger_rnn.ipynb"

# the 40-step RNN: one `cell` call per step (scopes cell#1 ... cell#40), for the outline and
# stepping by call (tests/e2e/test_e2e_outline.py)
RNN_CELL = r'''
import tapeviz
from ad.examples.programs import rnn_example, rnn_loss

dbg = tapeviz.debug(rnn_loss, *rnn_example())
dbg
'''.strip()


def make_rnn_notebook(path) -> Path:
    nb = new_notebook(
        cells=[new_markdown_cell("# A 40-step RNN, by call\n\nThe outline lists the calls; step into, over "
                                 "and out of them, set breakpoints, continue."),
               new_code_cell(RNN_CELL)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"},
                  "language_info": {"name": "python"}})
    path = Path(path)
    nbformat.write(nb, path)
    return path


def make_rnn_marimo_app(path) -> Path:
    """The RNN's debugger as a marimo app (``mo.ui.anywidget(dbg)``)."""
    body = "\n".join("    " + line if line else "" for line in RNN_CELL.splitlines()[:-1])
    path = Path(path)
    path.write_text(
        "import marimo\n\napp = marimo.App(width=\"full\")\n\n\n@app.cell\ndef _():\n"
        f"    import marimo as mo\n{body}\n    widget = mo.ui.anywidget(dbg)\n    widget\n"
        "    return (widget,)\n\n\nif __name__ == \"__main__\":\n    app.run()\n")
    return path


def make_notebook(path, forward: bool = False) -> Path:
    nb = new_notebook(
        cells=[new_markdown_cell("# Debugging an MLP whose tanh rule has the wrong sign\n\n"
                                 "Step with *next*, press *run checks* to find the culprit."),
               new_code_cell(FORWARD_CELL if forward else CELL)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"},
                  "language_info": {"name": "python"}})
    path = Path(path)
    nbformat.write(nb, path)
    return path


def make_marimo_app(path) -> Path:
    body = "\n".join("    " + line if line else "" for line in CELL.splitlines()[:-1])
    path = Path(path)
    path.write_text(
        "import marimo\n\napp = marimo.App(width=\"full\")\n\n\n@app.cell\ndef _():\n"
        f"    import marimo as mo\n{body}\n    widget = mo.ui.anywidget(dbg)\n    widget\n"
        "    return (widget,)\n\n\nif __name__ == \"__main__\":\n    app.run()\n")
    return path


if __name__ == "__main__":
    print(make_notebook(sys.argv[1] if len(sys.argv) > 1 else NOTEBOOK))
