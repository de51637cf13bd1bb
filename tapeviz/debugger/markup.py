"""The files of ``static/`` (the view's ES module, its stylesheet, the vendored Graphviz) that
every view of the debugger and every static page needs. Escaping is ``tapeviz.escaping``'s: every
user-visible string is escaped where it enters HTML, by ``html_text`` or ``html_attr``.

No view writes a script or an event handler: the ES module listens for clicks on ``data-var``
elements and graph nodes, so the views work under a strict Content-Security-Policy.
"""
from __future__ import annotations

from importlib import resources


def static(name: str) -> str:
    """The text of ``static/<name>``."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")
