"""The debugger driven as a user would, through its widgets (``button.click()``, setting a
widget's value as the browser does) and its Python API, asserting on state and rendered HTML."""
import base64
import html
import re

import numpy as np

import tapeviz
from ad.examples import mlp_loss
from tapeviz import labels

from debug_programs import HOSTILE, hostile_loss


def current_lines(markup: str) -> list[int]:
    return [int(i) for i in re.findall(r'class="tv-eq tv-current[^"]*" data-eq="(\d+)"', markup)]


def test_buttons_step_and_the_views_follow(mlp_dbg):
    dbg = mlp_dbg
    assert dbg.step == 0 and dbg.current == "%6"
    assert 'data-step="0"' in dbg.phase.value and 'data-current="%6"' in dbg.phase.value
    dbg.next_button.click()
    assert dbg.step == 1 and dbg.slider.value == 2
    assert f'data-current="{dbg.current}"' in dbg.phase.value
    assert current_lines(dbg.listing.value) == list(range(dbg.model.step.start, dbg.model.step.stop))
    dbg.prev_button.click()
    dbg.prev_button.click()                     # at the first step: stays
    assert dbg.step == 0
    dbg.last_button.click()
    assert dbg.step == dbg.n_steps - 1 and dbg.phase_line.startswith("backward, step ")
    dbg.next_button.click()
    assert dbg.step == dbg.n_steps - 1
    dbg.first_button.click()
    assert dbg.step == 0
    dbg.slider.value = 5                         # the slider counts from 1, like the phase line
    assert dbg.step == 4 and "step 5 of" in dbg.phase.value


def test_what_changed_is_tinted(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(20)
    written = dbg.model.written()
    style = re.search(r"<style>(.*?)</style>", dbg.listing.value).group(1)
    for v in written:
        assert f'.tv-var[data-var="{v}"]{{background:' in style
    svg_key = next(k for k in dbg.graph._cache if k[0] == "eq/" + dbg.current)
    assert dict(svg_key[1]) == dict.fromkeys(written, labels.TINT)


def test_granularity_buttons(mlp_dbg):
    dbg = mlp_dbg
    block = next(i for i, s in enumerate(dbg.model.step_list) if s.kind == "pullback" and s.stop - s.start > 2)
    dbg.step_to(block)
    start = dbg.model.step.start
    dbg.granularity_buttons.value = "primitive"
    assert dbg.granularity == "primitive" and dbg.model.step.start == start
    assert dbg.slider.max == dbg.n_steps == len(dbg.model.eqns)
    assert 'data-granularity="primitive"' in dbg.phase.value
    assert len(current_lines(dbg.listing.value)) == 1


def test_select_highlights_partners_in_the_listing(mlp_dbg):
    dbg = mlp_dbg
    name = next(s.of for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "matmul")
    dbg.pick.value = name                        # what a click on a variable does in the browser
    assert dbg.selected == name and f'data-selected="{name}"' in dbg.phase.value
    partners = dbg.model.partners()[0]
    marked = {int(i) for i in re.findall(r'class="tv-eq [^"]*tv-partner[^"]*" data-eq="(\d+)"', dbg.listing.value)}
    assert marked == partners
    assert f'data-var="{name}"' in dbg.inspector.value.split(">", 1)[0]
    dbg.goto_button.click()                      # the cursor follows the selection
    assert dbg.model.step.start <= dbg.model.producer_index[name] < dbg.model.step.stop
    dbg.pick.value = "%99999"                    # a bad name is reported, not raised
    assert dbg.selected == name and "not a variable" in dbg.message.value
    dbg.select(None)
    assert dbg.selected is None


def test_inspector_shows_value_cotangent_and_heatmap(mlp_dbg, mlp_args):
    dbg = mlp_dbg
    dbg.select("%0")                   # params['W0'], f64[4,8]
    page = dbg.inspector.value
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
    page = dbg.inspector.value
    value_card = page.split('<div class="tv-card"')[1]
    assert re.search(r'class="tv-bad"><b>NaN</b> 1<', value_card)
    assert re.search(r'class="tv-bad"><b>Inf</b> 1<', value_card)
    assert value_card.count('class="tv-nan"') == 1 and value_card.count('class="tv-inf"') == 1


def test_big_arrays_show_a_corner():
    dbg = tapeviz.debug(lambda x: np.sum(np.sin(x)), np.ones((100, 60)))
    dbg.select("%0")
    page = dbg.inspector.value.split('<div class="tv-card"')[1]
    assert page.count("<td") == 24 * 32 and "showing 24\u00d732 of (100, 60)" in page


def test_hostile_names_are_escaped_everywhere(hostile_args):
    dbg = tapeviz.debug(hostile_loss, *hostile_args)
    raw = html.escape(f"params[{HOSTILE!r}]", quote=True)
    assert raw in dbg.listing.value
    name = next(repr(v) for v, n in zip(dbg.model.gt.inputs, dbg.model.gt.input_names) if HOSTILE in n)
    dbg.select(name)
    dbg.show_closure(True)
    dbg.last()
    dbg.export("dot")
    views = [dbg.listing.value, dbg.inspector.value, dbg.residuals.value, dbg.phase.value,
             dbg.graph_pane.value, dbg.closure_panel.value, dbg.download.value]
    assert raw in dbg.inspector.value and raw in dbg.residuals.value
    for markup in views:
        assert HOSTILE not in markup and "<b>&" not in markup
    assert "<b>&" not in dbg.graph_svg and "&lt;b&gt;" in dbg.graph_svg


def test_graph_pane_is_a_window_around_the_cursor(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(10)
    assert "<svg" in dbg.graph_svg and f'data-focus="{dbg.current}"' in dbg.graph_pane.value
    ids = set(re.findall(r'<g id="tvn_([^"]*)" class="node"', dbg.graph_svg))
    assert dbg.current in ids and ids <= set(dbg.model.graph)     # clicks map back to tape names
    n_nodes = dbg.graph_svg.count('class="node"')
    assert 0 < n_nodes < len(dbg.model.graph)


def test_play_defers_the_graph_until_it_stops(mlp_dbg):
    dbg = mlp_dbg
    before = dbg.graph_svg
    dbg.play.playing = True
    dbg.slider.value = 12                        # the Play widget moves the slider (jslink)
    assert dbg.step == 11 and dbg.graph_svg == before
    dbg.play.playing = False
    assert dbg.graph_svg != before and f'data-step="11"' in dbg.graph_pane.value


def test_export_buttons_keep_the_file_and_offer_a_link(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(7)
    dbg.export_svg_button.click()
    svg = dbg.last_export
    assert svg.name == "tape-step-8.svg" and svg.mime == "image/svg+xml" and b"<svg" in svg.data
    href = re.search(r'href="data:image/svg\+xml;base64,([^"]+)"', dbg.download.value).group(1)
    assert base64.b64decode(href) == svg.data
    dbg.export_dot_button.click()
    assert dbg.last_export.data.startswith(b"digraph") and f'"{dbg.current}"'.encode() in dbg.last_export.data


def test_residuals_table_and_live_rows(mlp_dbg):
    dbg = mlp_dbg
    dbg.last()
    rows = re.findall(r'<tr( class="tv-live")? data-var="(%\d+)"', dbg.residuals.value)
    assert [n for _, n in rows] == [r["name"] for r in dbg.model.residual_table()]
    live = {n for cls, n in rows if cls}
    step = dbg.model.step
    assert live == {r["name"] for r in dbg.model.residual_table() if r["first"] <= step.start <= r["last"]}


def test_displays_as_its_root_widget(mlp_dbg):
    bundle = mlp_dbg._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == mlp_dbg.root.model_id
    assert "tv-root" in mlp_dbg.root._dom_classes
    classes = {c for wid in mlp_dbg.root.children for c in getattr(wid, "_dom_classes", ())}
    assert {"tv-phase-w"} <= classes
    for cls in ("tv-next", "tv-prev", "tv-check", "tv-first", "tv-last"):
        assert any(cls in b._dom_classes for b in (mlp_dbg.next_button, mlp_dbg.prev_button, mlp_dbg.check_button,
                                                    mlp_dbg.first_button, mlp_dbg.last_button))
    assert 'class="tv-forward"' in mlp_dbg.listing.value and 'class="tv-backward"' in mlp_dbg.listing.value
    assert "tv-graph" in mlp_dbg.graph_pane._dom_classes


def test_debug_takes_argnums(mlp_args):
    dbg = tapeviz.debug(mlp_loss, *mlp_args, argnums=1)
    assert dbg.model.gt.wrt == (4,)
    assert "x" in dbg.model.gt.input_names and "grad x" in dbg.listing.value
