"""Writing a tape to a file chosen by its suffix: a diagram (.dot, .svg, .png, .pdf) or the text
listing (.txt), the view that scales to any size.

Laying out a whole large graph takes Graphviz minutes (every tool that tried drowned at a few
thousand nodes), so a rendered diagram of more than ``MAX_NODES`` nodes is refused with the
ways out: a window around a node, the collapsed view, or the DOT source / text listing.
"""
from __future__ import annotations

from pathlib import Path

from ad.tape import Tape, format_eqn

from .draw import VIEWS, draw, parse_window, scene
from .graph import EQUATION_KINDS, neighbourhood, to_networkx
from .renderer import choose, render

SUFFIXES = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".pdf": "pdf", ".txt": "txt"}
FORMATS = ("dot", "svg", "png", "pdf", "txt")
MAX_NODES = 2000


def export(tape, path, *, format: str | None = None, view: str = "joint", window=None,
           collapse=False, depth: int = 1, values=None, checks=None, current=None, tint=(),
           title: str | None = None, legend: bool = True, scopes: bool | None = None,
           renderer: str = "auto", max_nodes: int = MAX_NODES) -> Path:
    """Write ``tape`` (a tape, gradient tape or graph from ``to_networkx``) to ``path``.

    format: taken from the suffix (.dot .gv .svg .png .pdf .txt) unless given.
    view, window, collapse, depth, values, checks, current, tint, title, legend, scopes: as
        ``to_graphviz`` (``collapse="scope"`` folds the user's calls; ``scopes`` draws them as
        nested clusters, by default when there are any).
    renderer: "auto", "dot" or "wasm" (see ``tapeviz.render``).
    max_nodes: the largest diagram rendered to SVG/PNG/PDF (DOT is always written).
    """
    path = Path(path)
    data = export_bytes(tape, format or format_of(path), view=view, window=window,
                        collapse=collapse, depth=depth, values=values, checks=checks, current=current,
                        tint=tint, title=title, legend=legend, scopes=scopes, renderer=renderer,
                        max_nodes=max_nodes)
    path.write_bytes(data)
    return path


def format_of(path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise ValueError(f"cannot tell the format of {str(path)!r} from its suffix; use one of "
                         f"{sorted(SUFFIXES)} or pass format= (one of {FORMATS})")
    return SUFFIXES[suffix]


def export_bytes(tape, format: str, *, view: str = "joint", window=None, collapse=False, depth: int = 1,
                 values=None, checks=None, current=None, tint=(), title=None, legend=True,
                 scopes: bool | None = None, renderer: str = "auto", max_nodes: int = MAX_NODES) -> bytes:
    """The file's contents, for writing elsewhere (a response, a notebook cell)."""
    if format not in FORMATS:
        raise ValueError(f"format={format!r}; choose one of {FORMATS}")
    if format == "txt":
        if collapse:
            raise ValueError("the text listing has no collapsed form; it scales as it is (or pass "
                             "window='%n:k' to list the equations around %n)")
        return (listing(tape, view=view, window=window) + "\n").encode()
    graph, nodes = scene(tape, view, window=window, collapse=collapse, depth=depth, values=values, checks=checks)
    if format != "dot" and len(nodes) > max_nodes:
        raise ValueError(
            f"this {view} diagram has {len(nodes)} nodes; Graphviz lays out more than "
            f"{max_nodes} slowly. Draw a window around a node (window='%12:3'), the collapsed "
            f"view (collapse=True), or export .dot or .txt; or raise max_nodes.")
    labels = "text" if format != "dot" and choose(renderer) == "wasm" else "html"
    source = draw(graph, nodes, view, current=current, tint=tint, legend=legend, title=title,
                  labels=labels, scopes=scopes).source
    if format == "dot":
        return source.encode()
    return render(source, format, renderer=renderer)


def listing(tape: Tape, *, view: str = "joint", window=None) -> str:
    """The jaxpr-like text listing of a view, or of the equations within a window.

    >>> print(tapeviz.listing(ad.trace(lambda x: np.sum(np.sin(x) * x), np.ones(3)), window="%2:1"))
    -- equations within 1 step of %2
        ...
        %2:f64[3] = multiply %1 %0
        %3:f64[] = sum axis=None keepdims=False %2
    """
    if not isinstance(tape, Tape):
        raise TypeError(f"the text listing is made from the tape itself, not a {type(tape).__name__}")
    if view not in VIEWS:
        raise ValueError(f"view={view!r}; choose one of {VIEWS}")
    if view != "joint":
        if not hasattr(tape, "n_forward"):
            if view == "backward":
                raise ValueError("this tape has no backward section; make one with ad.grad_tape")
        elif view == "tangent":
            raise ValueError("a gradient tape has no tangent section; make one with ad.linearize "
                             "(its f_jvp.tape)")
        else:
            tape = tape.forward if view == "forward" else tape.backward
    if window is None:
        return str(tape)
    node, k = parse_window(window)
    graph = to_networkx(tape)
    keep = {graph.nodes[n]["index"] for n in neighbourhood(graph, node, k)
            if graph.nodes[n]["kind"] in EQUATION_KINDS}
    lines, last = [], -1
    for i in sorted(keep):
        if i != last + 1:
            lines.append("    ...")
        lines.append("    " + format_eqn(tape.eqns[i], with_origin=True))
        last = i
    if last != len(tape.eqns) - 1:
        lines.append("    ...")
    return f"-- equations within {k} step{'' if k == 1 else 's'} of {node}\n" + "\n".join(lines)

