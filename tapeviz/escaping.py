r"""Escaping, one function per place a string from the user can land. Names of inputs, dict keys,
params, sources and messages come from user code and may hold any character; each is escaped
exactly once, by the function of the format it is written into, where it is written:

``html_text``      text between the tags of an HTML page (the debugger's views, static pages,
                   the notebooks' index)
``html_attr``      an attribute of an HTML element, written whole: `` name="value"``
``dot_html_text``  text inside a Graphviz HTML-like label (``<<TABLE>...</TABLE>>``)
``dot_text``       plain DOT text: a label or tooltip that is not HTML-like
``dot_value``      an attribute value in DOT source, quoted (or an HTML-like label, as it is)

>>> html_text('<b>&"x"</b>')
'&lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;'
>>> html_attr("data-var", "p['W']")
' data-var="p[&#x27;W&#x27;]"'
>>> print(dot_html_text("p['\\N']"))
p[&#x27;\\N&#x27;]
>>> print(dot_value(dot_text('a\\l "b"')))
"a\\l \"b\""
"""
from __future__ import annotations

import html
import re

import graphviz
from graphviz.quoting import NoHtml


def html_text(text) -> str:
    """``str(text)`` for the text of an HTML element: ``&``, ``<`` and ``>`` become entities, so
    nothing in it can open a tag, close the element or start an entity; so do ``"`` and ``'``,
    which text does not need: a name is then spelled the same in a page's text as in its
    attributes (``html_attr``), so one escaped form finds it in both."""
    return html.escape(str(text), quote=True)


def html_attr(name: str, value) -> str:
    """`` name="value"``: the attribute written whole, so its value is always double-quoted;
    ``&``, ``<``, ``>``, ``"`` and ``'`` in ``str(value)`` become entities (a quote would end the
    value and let the rest be read as more attributes, an event handler among them). ``name`` is
    the code's own, never the user's."""
    return f' {name}="{html.escape(str(value), quote=True)}"'


_DOT_HTML_SPECIAL = re.compile(r"[&<>\"'\\]")


def dot_html_text(text) -> str:
    """``str(text)`` for the inside of a Graphviz HTML-like label (a cell's text, or a value of
    one of its attributes such as ``COLOR="..."``). The label is XML to Graphviz, so ``&``,
    ``<``, ``>``, ``"`` and ``'`` become entities, as in HTML. Graphviz then expands backslash
    escapes in label text (``\\N`` is the node's name, ``\\G`` the graph's) even in HTML-like
    labels, after decoding entities, so a backslash is doubled rather than written as an
    entity. Newlines and other whitespace are left to the caller (``labels.shorten`` collapses
    them)."""
    text = str(text)
    if not _DOT_HTML_SPECIAL.search(text):
        return text
    return html.escape(text, quote=True).replace("\\", "\\\\")


def dot_text(text: str) -> str:
    """A plain (not HTML-like) DOT label or tooltip that shows ``text`` literally:
    ``graphviz.escape``, which doubles backslashes (``\\N``, ``\\l`` stay text) and marks the
    string as not HTML-like, so a ``<...>`` in it is not read as markup by ``dot_value``.
    Append layout escapes (``\\l``: end a left-aligned line) after escaping, wrapped in
    ``graphviz.nohtml``. Graphviz reads entities in plain labels too (``&lt;`` shows ``<``), so
    an ampersand is written as ``&amp;``."""
    return graphviz.escape(text.replace("&", "&amp;"))


def dot_value(value: str) -> str:
    """A value as DOT source writes it after ``name=``: an HTML-like label (``<...>``, its text
    escaped by ``dot_html_text``) as it is; any other string in double quotes, its quotes
    escaped and its backslashes doubled, but those of ``dot_text`` (or ``graphviz.nohtml``),
    whose backslashes are already escaped or are layout escapes."""
    if value.startswith("<") and value.endswith(">") and not isinstance(value, NoHtml):
        return value
    if not isinstance(value, NoHtml):
        value = value.replace("\\", "\\\\")
    return '"' + value.replace('"', '\\"') + '"'
