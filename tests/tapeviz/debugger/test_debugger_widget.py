"""The debugger driven as a user would, through the messages its view sends (``click``) and its
Python API, asserting on state and on what the view receives (the ``_frame`` and HTML traits)."""
import html
import re

import numpy as np
import pytest

import tapeviz
from ad.examples import mlp_loss
from tapeviz import labels
from tapeviz.debugger.residuals import residuals_html

from tests.support.debug_programs import HOSTILE, answers, click, hostile_loss


def current_lines(markup: str) -> list[int]:
    return [int(i) for i in re.findall(r'class="tv-eq tv-current[^"]*" data-eq="(\d+)"', markup)]


def drawn(markup: str) -> set[int]:
    return {int(i) for i in re.findall(r'data-eq="(\d+)"', markup)}


def shown_current(dbg) -> list[int]:
    """The current lines as the view marks them: the listing it is sent (cursor-free, the same
    for every step inside its window) draws them, the frame names them, and Python's drawing of
    the cursor (the snapshot's) agrees."""
    step = dbg._frame["step"]
    lines = list(range(step["start"], step["stop"]))
    assert set(lines) <= drawn(dbg._listing) and "tv-current" not in dbg._listing
    assert current_lines(dbg.listing_view.render()) == lines
    return lines


def test_buttons_step_and_the_views_follow(mlp_dbg):
    dbg = mlp_dbg
    assert dbg.step == 0 and dbg.current == "%6"
    step = dbg._frame["step"]
    assert step["index"] == 0 and step["current"] == "%6" and step["text"] == dbg.phase_line
    click(dbg, "next")
    assert dbg.step == 1 and dbg._frame["step"]["current"] == dbg.current
    assert shown_current(dbg) == list(range(dbg.model.step.start, dbg.model.step.stop))
    click(dbg, "prev")
    click(dbg, "prev")                          # at the first step: stays
    assert dbg.step == 0
    click(dbg, "last")
    assert dbg.step == dbg.n_steps - 1 and dbg.phase_line.startswith("backward, step ")
    click(dbg, "next")
    assert dbg.step == dbg.n_steps - 1
    click(dbg, "first")
    assert dbg.step == 0
    click(dbg, "step", index=4)                 # the slider sends 0-based indices
    assert dbg.step == 4 and "step 5 of" in dbg._frame["step"]["text"]
    click(dbg, "no such action")                # a newer view's message: ignored
    assert dbg.step == 4


def test_what_changed_is_tinted(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(20)
    written = dbg.model.written()
    assert dbg._frame["step"]["written"] == written          # the view tints these names
    key = next(k for k in dbg.graph._cache if k[0] == "eq/" + dbg.current)
    assert dict(key[1]) == dict.fromkeys(written, labels.TINT)
    for v in written:                                         # and so does the graph pane
        assert f'"{v}"' in dbg._dot and labels.TINT in dbg._dot


def test_granularity_buttons(mlp_dbg):
    dbg = mlp_dbg
    block = next(i for i, s in enumerate(dbg.model.step_list) if s.kind == "pullback" and s.stop - s.start > 2)
    dbg.step_to(block)
    start = dbg.model.step.start
    click(dbg, "granularity", value="primitive")
    assert dbg.granularity == "primitive" and dbg.model.step.start == start
    assert dbg._frame["step"]["n"] == dbg.n_steps == len(dbg.model.eqns)
    assert dbg._frame["granularity"] == "primitive"
    assert len(shown_current(dbg)) == 1


def test_select_highlights_partners_in_the_listing(mlp_dbg):
    dbg = mlp_dbg
    name = next(s.of for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "matmul")
    click(dbg, "select", name=name)              # what a click on a variable sends
    assert dbg.selected == name and dbg._frame["selected"] == name
    partners = dbg.model.partners()[0]
    marked = {int(i) for i in re.findall(r'class="tv-eq [^"]*tv-partner[^"]*" data-eq="(\d+)"',
                                         dbg.listing_view.render())}
    assert marked == partners == set(dbg._frame["sel"]["partners"])   # the view marks the frame's
    assert f'data-var="{name}"' in dbg._inspector.split(">", 1)[0]
    click(dbg, "goto")                           # the cursor follows the selection
    assert dbg.model.step.start <= dbg.model.producer_index[name] < dbg.model.step.stop
    click(dbg, "select", name="%99999")          # a bad name is reported, not raised
    assert dbg.selected == name and "not a variable" in dbg._frame["message"]
    click(dbg, "select", name="eq/%7")           # a graph node names its equation
    assert dbg.selected == "%7" and dbg._frame["message"] == ""
    click(dbg, "select", name="")
    assert dbg.selected is None and dbg._frame["sel"] is None


def test_inspector_shows_value_cotangent_and_heatmap(mlp_dbg, mlp_args):
    dbg = mlp_dbg
    dbg.select("%0")                   # params['W0'], f64[4,8]
    page = dbg._inspector
    assert "params[&#x27;W0&#x27;]" in page and "(4, 8)" in page
    assert page.count("<table class=\"tv-heat\">") == 2              # the value and its cotangent
    value_card, ct_card = page.split('<div class="tv-card"')[1:3]
    assert value_card.count("<td") == 32 and 'data-role="cotangent"' in ct_card
    ct = dbg.model.values[dbg.model.cotangents["%0"]]
    assert f"{ct.min():.4g}" in ct_card and f"{ct.max():.4g}" in ct_card


def test_nan_and_inf_are_marked():
    dbg = tapeviz.debug(lambda x: np.sum(np.log(x) * x), np.array([[0.0, 1.0], [-1.0, 2.0]]))
    log_out = next(repr(e.outputs[0]) for e in dbg.model.eqns if e.prim.name == "log")
    dbg.select(log_out)
    page = dbg._inspector
    value_card = page.split('<div class="tv-card"')[1]
    assert re.search(r'class="tv-bad"><b>NaN</b> 1<', value_card)
    assert re.search(r'class="tv-bad"><b>Inf</b> 1<', value_card)
    assert value_card.count('class="tv-nan"') == 1 and value_card.count('class="tv-inf"') == 1


def test_big_arrays_show_a_corner():
    dbg = tapeviz.debug(lambda x: np.sum(np.sin(x)), np.ones((100, 60)))
    dbg.select("%0")
    page = dbg._inspector.split('<div class="tv-card"')[1]
    assert page.count("<td") == 24 * 32 and "showing 24\u00d732 of (100, 60)" in page


def test_hostile_names_are_escaped_everywhere(hostile_args, monkeypatch):
    dbg = tapeviz.debug(hostile_loss, *hostile_args)
    raw = html.escape(f"params[{HOSTILE!r}]", quote=True)
    assert raw in dbg._listing
    name = next(repr(v) for v, n in zip(dbg.model.gt.inputs, dbg.model.gt.input_names) if HOSTILE in n)
    sent = answers(dbg, monkeypatch)
    dbg.select(name)
    dbg.show_closure(True)
    dbg.last()
    click(dbg, "export", format="dot")
    views = [dbg._listing, dbg._inspector, dbg._residuals, dbg._closure, dbg._repr_mimebundle_()[0]["text/html"]]
    assert raw in dbg._inspector and raw in dbg._residuals
    for markup in views:
        assert HOSTILE not in markup and "<b>&" not in markup
    assert "<b>&" not in dbg.graph_svg and "&lt;b&gt;" in dbg.graph_svg
    assert sent[-1]["kind"] == "file"           # the view shows file names and frames as text
    assert HOSTILE not in repr(dbg)


def test_graph_pane_is_a_window_around_the_cursor(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(10)
    assert dbg._dot.startswith("digraph") and f'id="tvn_{dbg.current}"' in dbg._dot
    ids = set(re.findall(r'<g id="tvn_([^"]*)" class="node"', dbg.graph_svg))
    assert dbg.current in ids and ids <= set(dbg.model.graph)     # clicks map back to tape names
    n_nodes = dbg.graph_svg.count('class="node"')
    assert 0 < n_nodes < len(dbg.model.graph)
    before = dbg._dot
    dbg.select("%3")                             # the view tints the selection: the DOT stays
    assert dbg._dot == before and dbg._frame["selected"] == "%3"


def test_the_view_gets_graphviz_and_the_kernels_drawing_on_request(mlp_dbg, monkeypatch):
    dbg = mlp_dbg
    sent = answers(dbg, monkeypatch)
    click(dbg, "hello")
    click(dbg, "graphviz")
    click(dbg, "svg", dot=dbg._dot)              # a page whose CSP forbids WebAssembly
    assert [m["kind"] for m in sent] == ["hello", "graphviz", "svg"]
    assert "Graphviz" in sent[1]["source"] and len(sent[1]["source"]) > 500_000
    assert sent[2]["dot"] == dbg._dot and sent[2]["svg"].startswith("<svg")
    assert all("graphviz" not in key for key in dbg.get_state())   # never saved with the notebook


def test_export_keeps_the_file_and_offers_it(mlp_dbg, monkeypatch):
    dbg = mlp_dbg
    dbg.step_to(7)
    sent = answers(dbg, monkeypatch)
    click(dbg, "export", format="svg")
    svg = dbg.last_export
    assert svg.name == "tape-step-8.svg" and svg.mime == "image/svg+xml" and b"<svg" in svg.data
    assert sent[-1] == {"kind": "file", "name": svg.name, "mime": svg.mime, "size": len(svg.data),
                        "data": svg.data.decode()}
    dbg.export("dot")
    assert dbg.last_export.data.startswith(b"digraph") and f'"{dbg.current}"'.encode() in dbg.last_export.data


def test_residuals_table_and_live_rows(mlp_dbg):
    dbg = mlp_dbg
    dbg.last()
    rows = re.findall(r'<tr( class="tv-live")? data-var="(%\d+)" data-first="(-?\d+)" data-last="(-?\d+)"',
                      dbg._residuals)
    table = dbg.model.residual_table()
    assert [n for _, n, _, _ in rows] == [r["name"] for r in table]
    assert [(int(a), int(b)) for _, _, a, b in rows] == [(r["first"], r["last"]) for r in table]
    assert not any(cls for cls, _, _, _ in rows)        # the view marks the live rows, by the frame
    step = dbg.model.step
    sent = dbg._residuals
    dbg.prev()
    assert dbg._residuals == sent                       # a step that keeps the rows sends nothing
    dbg.next()
    drawn = residuals_html(dbg.model, dbg.listing_view, rows_each_side=len(table))   # Python's drawing
    live = set(re.findall(r'<tr class="tv-live" data-var="(%\d+)"', drawn))
    assert live == {r["name"] for r in table if r["first"] <= step.start <= r["last"]}


def test_displays_as_an_anywidget_with_a_text_and_html_fallback(mlp_dbg):
    import anywidget
    dbg = mlp_dbg
    assert isinstance(dbg, anywidget.AnyWidget)
    dbg.last()
    bundle, _ = dbg._repr_mimebundle_()
    m = dbg.model
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == dbg.model_id
    assert bundle["text/plain"] == f"<TapeDebugger: backward step {m.n_steps} of {m.n_steps}, {len(m.eqns)} equations>"
    snapshot = bundle["text/html"]
    assert "tv-snapshot" in snapshot and "<script" not in snapshot and "onclick" not in snapshot
    assert html.escape(dbg.phase_line) in snapshot and current_lines(snapshot)
    state = dbg.get_state()
    assert {"_esm", "_css", "_frame", "_listing", "_dot"} <= set(state)
    assert "export default" in state["_esm"] and ".tv-root" in state["_css"]


def test_the_view_module_uses_no_inline_handlers():
    from tapeviz.debugger.markup import static
    esm = static("debugger.js")
    assert "innerHTML" in esm and "addEventListener" in esm
    for forbidden in ("onclick", "onerror", "eval(", "new Function", "setAttribute(\"on"):
        assert forbidden not in esm


def test_debug_takes_argnums(mlp_args):
    dbg = tapeviz.debug(mlp_loss, *mlp_args, argnums=1)
    assert dbg.model.gt.wrt == (4,)
    assert "x" in dbg.model.gt.input_names and "grad x" in dbg._listing


def test_steps_sent_ahead_are_what_a_step_to_them_sends(mlp_dbg, monkeypatch):
    """The view repaints a click from the steps it was sent ahead: each must equal what the
    kernel sends when it moves there, and the kernel's frame echoes the view's action number."""
    dbg = mlp_dbg
    dbg.step_to(3)
    sent = answers(dbg, monkeypatch)
    click(dbg, "ahead", indices=[2, 4, 5, 10_000, -1])
    (reply,) = sent
    assert reply["context"] == dbg._frame["context"] and [s["index"] for s in reply["steps"]] == [2, 4, 5]
    assert dbg.step == 3                                 # the cursor did not move
    for part in reply["steps"]:
        listing = reply["texts"][part["listing"]] if "listing" in part else dbg._listing
        click(dbg, "step", index=part["index"], seq=part["index"] + 100, view="v1")
        assert (dbg._frame["seq"], dbg._frame["by"]) == (part["index"] + 100, "v1")
        assert dbg._frame["step"] == part["step"]
        assert dbg._frame["window"] == part["window"] and dbg._listing == listing
        assert (dbg._dot, dbg._inspector, dbg._residuals) == tuple(
            reply["texts"][part[k]] for k in ("dot", "inspector", "residuals"))
        dbg.step_to(3)
    with pytest.raises(IndexError):                      # refused (out of range), still confirmed
        click(dbg, "step", index=10**6, seq=7)
    assert dbg._frame["seq"] == 7 and dbg.step == 3
    dbg.select("%3")
    assert dbg._frame["context"] != reply["context"]     # the view drops what it was sent
