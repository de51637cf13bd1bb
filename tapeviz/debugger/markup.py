"""What every view of the debugger needs to write HTML: escaping (every user-visible string is
escaped where it enters HTML), attributes, and the files of ``static/`` (the stylesheet and the
inline click handlers).

Clicking a ``data-var`` element in any view selects that variable: a tiny inline handler writes
its name into the debugger's selection box (``.tv-pick``), which the kernel observes, so the click
works in Voila and JupyterLab without any frontend extension.
"""
from __future__ import annotations

import html
from importlib import resources


def static(name: str) -> str:
    """The text of ``static/<name>``."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def handler(name: str) -> str:
    """An inline event handler from ``static/``, on one line and without its leading comment:
    it goes out with every redraw."""
    body = static(name).split("*/", 1)[1]
    return " ".join(line.strip() for line in body.splitlines() if line.strip())


PICK_JS = handler("pick.js")
GRAPH_PICK_JS = handler("graph-pick.js")
SCROLL_JS = handler("scroll.js")


def esc(text) -> str:
    return html.escape(str(text), quote=True)


def attr(name: str, value) -> str:
    return f' {name}="{esc(value)}"'


def onclick(js: str) -> str:
    return attr("onclick", js)


def scroller() -> str:
    """An image that fails at once: the one hook an HTML widget offers to run ``scroll.js``."""
    return f'<img class="tv-scroll-hook" src="data:," alt="" style="display:none"{attr("onerror", SCROLL_JS)}>'
