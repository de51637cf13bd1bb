"""What every view of the debugger needs to write HTML: escaping (every user-visible string is
escaped where it enters HTML), attributes, and the files of ``static/`` (the view's ES module,
its stylesheet, the vendored Graphviz).

No view writes a script or an event handler: the ES module listens for clicks on ``data-var``
elements and graph nodes, so the views work under a strict Content-Security-Policy.
"""
from __future__ import annotations

import html
from importlib import resources


def static(name: str) -> str:
    """The text of ``static/<name>``."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def attr(name: str, value) -> str:
    return f' {name}="{esc(value)}"'
