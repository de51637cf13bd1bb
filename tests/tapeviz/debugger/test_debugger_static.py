"""The debugger without a kernel, at the Python level: a static page's session embeds the tape
once (the step table, each equation's operands and results, what the graph pane's drawings are
made of, one value card and one closure panel per variable) and grows with the tape, not with
steps x graph; it packs small, embeds safely, is refused with a message naming values=False when
too large; values=False leaves the value cards out; the notebook renderer turns a debugger's
output into it. What the browser derives from it (the step's part, the graph pane's source, the
selection's partners) is compared with the kernel's in tests/e2e/test_e2e_static.py."""
import copy
import hashlib
import html
import json
import warnings

import numpy as np
import pytest

import tapeviz
from ad.examples import mlp_example, mlp_loss
from ad.examples.programs import rnn_example, rnn_loss
from tapeviz.commands.notebooks import static_outputs
from tapeviz.debugger import page
from tapeviz.debugger.frames import EDGE_KINDS, PHASES
from tapeviz.debugger.inspector import inspector_html
from tapeviz.debugger.listing import Listing
from tapeviz.debugger.markup import static

from tests.support.debug_programs import HOSTILE, hostile_loss

STEP_KEYS = ("start", "stop", "phase", "text", "scope")


def size(data) -> int:
    return len(json.dumps(data, separators=(",", ":")))


def inspector(data: dict, name: str) -> str:
    """The inspector's pair of cards as the browser composes it (``Session.inspector``)."""
    v, texts = data["vars"][name], data["html"]
    if "card" in v:
        partner = texts[v["card"]]
    elif "empty" in v:
        partner = texts[v["empty"]]
    else:
        own = texts[data["vars"][v["partner"]]["inspector"]]
        partner = page.role_card(own[own.index(page.CARD):], v["role"])
    return texts[v["inspector"]] + partner + "</div>"


def closure_panel(data: dict, name: str) -> str:
    return "".join(data["html"][x] if isinstance(x, int) else x for x in data["vars"][name]["closure"])


def test_the_session_holds_the_step_table_and_the_tape_once(mlp_dbg):
    dbg = mlp_dbg
    dbg.step_to(5)
    dbg.select("%9")
    data = page.session(dbg)
    m = dbg.model
    assert data["start"] == {"granularity": "pullback", "index": 5, "selected": "%9", "closure": False, "view": "around"}
    assert dbg.step == 5 and dbg.selected == "%9"                      # the cursor is restored
    for g, steps in m.steps.items():
        assert [s["start"] for s in data["steps"][g]] == [s.start for s in steps]
    dbg.set_granularity("primitive")
    dbg.step_to(17)                                   # a static step is the live widget's step, in part
    live = dbg._frame["step"]
    assert data["steps"]["primitive"][17] == {k: live[k] for k in STEP_KEYS}
    tape = data["tape"]
    assert tape["vars"] == list(m.var_attrs)
    for i, e in enumerate(m.eqns):
        assert [tape["vars"][v] for v in tape["outputs"][i]] == [repr(v) for v in e.outputs]
        operands = tape["inputs"][i]
        assert [tape["vars"][v] for v in operands[::2]] == list(dict.fromkeys(repr(x) for x in e.inputs
                                                                              if repr(x) in m.var_attrs))
        assert all(EDGE_KINDS[k] in ("data", "residual", "accumulate") for k in operands[1::2])
        assert PHASES[tape["phase"][i]] == e.origin.kind.phase and tape["row"][i] == m.row_of_eqn[i]
    assert set(data["vars"]) == set(m.var_attrs)
    assert "dot" not in data["steps"]["pullback"][0]                    # no drawing per step
    assert len(data["graph"]["eq"]["cells"]) == len(m.eqns) and len(data["graph"]["var"]["cells"]) == len(m.var_attrs)


@pytest.mark.parametrize("program", ["mlp", "forward", "hostile"])
def test_each_card_is_embedded_once_and_the_pairs_are_the_inspectors(program, mlp_args, hostile_args):
    if program == "mlp":
        dbg = tapeviz.debug(mlp_loss, *mlp_args)
        dbg.run_checks()
    elif program == "forward":
        params, x, y = mlp_args
        rng = np.random.default_rng(0)
        dbg = tapeviz.debug_jvp(mlp_loss, (params, x, y), ({k: rng.standard_normal(np.shape(v))
                                                             for k, v in params.items()}, None, None))
    else:
        dbg = tapeviz.debug(hostile_loss, *hostile_args)
    data = page.session(dbg)
    m = dbg.model
    full = Listing(m, rows_each_side=len(m.rows))
    for name in m.var_attrs:
        assert inspector(data, name) == inspector_html(m, full.var, name)
        assert closure_panel(data, name) == dbg.closure_panel(name)
    entries = [data["html"][v["inspector"]] for v in data["vars"].values()]
    assert len(set(entries)) == len(entries) == len(m.var_attrs)        # one card each, no pairs
    assert sum(text.count('<div class="tv-card"') for text in entries) == len(entries)
    assert not any("card" in v for v in data["vars"].values())          # every partner's card is its own


def test_a_session_grows_with_the_tape_not_with_steps_times_graph():
    small, large = (page.session(tapeviz.debug(rnn_loss, *rnn_example(steps=n))) for n in (10, 40))
    n_small, n_large = len(small["tape"]["outputs"]), len(large["tape"]["outputs"])
    assert n_large == 771
    assert size(large) / size(small) < 1.15 * n_large / n_small                  # linear in the equations
    # about 5 kB an equation (4.997 kB in /work/main; the tooltips carry the source files' paths,
    # so a checkout in a longer folder weighs more: 5.0003 kB in /tmp/tmp.XXXXXXXXXX/p)
    assert size(large) < 5_100 * n_large
    assert len(page.pack(large)) < 700_000                                       # was refused: 70 MB of states
    no_values = page.session(tapeviz.debug(rnn_loss, *rnn_example(steps=40)), values=False)
    assert size(no_values) < 3_000 * n_large


def test_a_packed_session_is_small_and_round_trips(mlp_dbg):
    data = page.session(mlp_dbg)
    packed = page.pack(data)
    assert page.unpack(packed) == data and packed == page.pack(data)          # reproducible
    assert len(packed) < len(str(data)) / 5


def test_values_false_leaves_the_value_cards_out(mlp_dbg, tmp_path):
    data, no_values = page.session(mlp_dbg), page.session(mlp_dbg, values=False)
    assert size(no_values) < 0.6 * size(data)
    assert no_values["frame"]["values"] is False and "values=False" in no_values["note"]
    m = mlp_dbg.model
    for name in m.var_attrs:
        pair = inspector(no_values, name)
        assert "tv-heat" not in pair and "tv-stats" not in pair and page.VALUES_LEFT_OUT in pair
        assert html.escape(m.var_attrs[name]["aval"]) in pair                  # the header stays
    assert any("tv-heat" in inspector(data, name) for name in m.var_attrs)
    assert no_values["graph"] == data["graph"] and no_values["dots"] == data["dots"]    # summaries in the graph stay
    text = mlp_dbg.to_html(tmp_path / "p.html", values=False).read_text(encoding="utf-8")
    assert page.unpack(text.split('class="tv-session">')[1].split("</script>")[0])["frame"]["values"] is False


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
    data = page.session(dbg)
    assert not any(HOSTILE in t for t in data["dots"] + data["html"])         # escaped before embedding
    assert any("&lt;b&gt;&amp;&quot;x{|}" in t for t in data["dots"])          # in a label, as Graphviz reads it


def test_a_session_too_large_is_refused_naming_values_false(mlp_dbg):
    with pytest.raises(page.SessionTooLarge, match=r"51-equation .* over the limit of 0\.1 MB \(max_bytes\): the value "
                                                   r"cards take .* values=False .* raise max_bytes"):
        page.session(mlp_dbg, max_bytes=100_000)
    with pytest.raises(page.SessionTooLarge) as refused:
        page.session(mlp_dbg, max_bytes=100_000)
    assert refused.value.without_values                     # values=False may help: the renderer tries it
    with pytest.raises(page.SessionTooLarge, match=r"over the limit of 0\.01 MB .* even with values=False \(no value "
                                                   r"cards\): debug a smaller tape .* raise max_bytes") as refused:
        page.session(mlp_dbg, max_bytes=10_000, values=False)
    assert "leave them out" not in str(refused.value) and not refused.value.without_values


def test_a_tape_far_too_large_is_refused_at_once():
    dbg = tapeviz.debug(rnn_loss, *rnn_example(steps=40))
    with pytest.raises(page.SessionTooLarge, match="771-equation .* too much even with values=False") as refused:
        page.session(dbg, max_bytes=page.LEAST_PER_EQUATION * 771 // 2)
    assert not refused.value.without_values


def test_a_large_page_is_written_with_a_warning_that_offers_to_drop_values(mlp_dbg, tmp_path, monkeypatch):
    monkeypatch.setattr(page, "WARN_BYTES", 100_000)
    with pytest.warns(UserWarning, match=r"p\.html: the page is .* MB \(a 51-equation tape; the value cards are "
                                         r"about \d+% of what it embeds: to_html\(path, values=False\) leaves them out"):
        mlp_dbg.to_html(tmp_path / "p.html")
    with pytest.warns(UserWarning) as caught:
        mlp_dbg.to_html(tmp_path / "q.html", values=False)
    assert "values=False" not in str(caught[0].message)
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mlp_dbg.to_html(tmp_path / "r.html")                                   # under 5 MB: no warning


def test_the_renderer_embeds_a_session_without_values_when_they_pass_the_limit(mlp_dbg, monkeypatch):
    with_values, without = size(page.session(mlp_dbg)), size(page.session(mlp_dbg, values=False))
    monkeypatch.setattr(page, "MAX_BYTES", (with_values + without) // 2)
    embedded = page.session_or_reason(mlp_dbg)
    assert page.unpack(embedded["packed"])["frame"]["values"] is False
    monkeypatch.setattr(page, "MAX_BYTES", without // 2)
    assert "even with values=False" in page.session_or_reason(mlp_dbg)["error"]


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
