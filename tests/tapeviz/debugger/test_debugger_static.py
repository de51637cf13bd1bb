"""The debugger without a kernel, at the Python level: a static page's session holds every state
the view can show (and agrees with the live widget's frames), packs small, embeds safely, is
refused with a message when too large; the notebook renderer turns a debugger's output into it."""
import copy
import hashlib
import html

import pytest

import tapeviz
from tapeviz.debugger import page
from tapeviz.debugger.markup import static
from tapeviz.commands.notebooks import static_outputs

from tests.support.debug_programs import HOSTILE, hostile_loss


def test_the_session_holds_every_step_and_variable(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(5)
    dbg.select("%9")
    data = page.session(dbg)
    m = dbg.model
    assert data["start"] == {"granularity": "pullback", "index": 5, "selected": "%9", "closure": False}
    assert dbg.step == 5 and dbg.selected == "%9"                      # the cursor is restored
    for g, steps in m.steps.items():
        assert [s["start"] for s in data["steps"][g]] == [s.start for s in steps]
    dbg.set_granularity("primitive")
    dbg.step_to(17)                                   # a static step is the live widget's step
    live = dbg._frame["step"]
    assert {**data["steps"]["primitive"][17], "dot": None} == {**live, "dot": None}
    assert data["dots"][data["steps"]["primitive"][17]["dot"]] == dbg._dot
    assert set(data["vars"]) == set(m.var_attrs)
    assert data["vars"]["%9"]["sel"] == dbg._frame["sel"]
    assert data["html"][data["vars"]["%9"]["closure"]] == dbg.closure_panel("%9")
    assert len(data["dots"]) < sum(len(s) for s in data["steps"].values())      # shared, not repeated


def test_a_packed_session_is_small_and_round_trips(mlp_dbg):
    data = page.session(mlp_dbg)
    packed = page.pack(data)
    assert page.unpack(packed) == data and packed == page.pack(data)          # reproducible
    assert len(packed) < len(str(data)) / 5


def test_embedded_scripts_cannot_end_their_element():
    for name in ("debugger.js", "page.js", "graphviz/graphviz.js"):
        assert page.script_text(static(name))
    with pytest.raises(ValueError, match="cannot be embedded"):
        page.script_text("x = '</SCRIPT>'")


def test_the_vendored_graphviz_is_the_recorded_build_with_its_licence():
    readme = static("graphviz/README.md")
    digest = hashlib.sha256(static("graphviz/graphviz.js").encode()).hexdigest()
    assert digest in readme and "Apache License" in static("graphviz/LICENSE")


def test_the_snapshot_and_the_page_escape_names(hostile_args, tmp_path):
    dbg = tapeviz.debug(hostile_loss, *hostile_args)
    snapshot = dbg._repr_mimebundle_()[0]["text/html"]
    assert html.escape(f"params[{HOSTILE!r}]", quote=True) in snapshot and HOSTILE not in snapshot
    text = dbg.to_html(tmp_path / "p.html").read_text(encoding="utf-8")
    assert HOSTILE not in text and "<title>tape debugger: hostile_loss</title>" in text


def test_a_session_too_large_is_refused_with_what_to_do(mlp_dbg):
    with pytest.raises(page.SessionTooLarge, match="51-equation .* over the limit of 0.1 MB .* raise max_bytes"):
        page.session(mlp_dbg, max_bytes=100_000)


def test_the_renderer_turns_debugger_outputs_into_pages(mlp_dbg, monkeypatch):
    import nbformat
    monkeypatch.setenv(page.EMBED_ENV, "1")
    bundle = mlp_dbg._repr_mimebundle_()[0]
    assert "packed" in bundle[page.SESSION_MIME]
    too_big = {**bundle, page.SESSION_MIME: {"error": "too large: debug a smaller tape"}}
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("dbg", outputs=[
        nbformat.v4.new_output("display_data", data=copy.deepcopy(d)) for d in (bundle, bundle, too_big)])])
    outs = [o.data for o in static_outputs(nb).cells[0].outputs]
    assert all(list(o) == ["text/plain", "text/html"] for o in outs)     # no widget view left
    assert outs[0]["text/html"].count('id="tv-graphviz"') == 1 and 'class="tv-static"' in outs[0]["text/html"]
    assert 'id="tv-graphviz"' not in outs[1]["text/html"] and 'class="tv-static"' in outs[1]["text/html"]
    assert "too large: debug a smaller tape" in outs[2]["text/html"] and "tv-snapshot" in outs[2]["text/html"]
    assert nb.cells[0].outputs[0].data == bundle                          # the notebook is untouched
