"""The debugger's forward-mode view (``tapeviz.debug_jvp``): the linearization's tape with each
pushforward block beside its primal equation, stepping through the blocks in forward order, a
value's card beside its tangent's, and a static page's session holding all of it. The tangents
it shows are checked against finite differences, not just against ad.jvp."""
import numpy as np
import pytest

import ad
import tapeviz
from ad.examples import mlp_example, mlp_loss
from ad.checktools.gallery import GALLERY, cube
from ad.primitives import lookup
from tapeviz.debugger import page


def f(x, W):
    return np.sum(np.tanh(W @ np.sin(x)) * x)


X, W = np.linspace(-1.0, 1.0, 3), np.arange(9.0).reshape(3, 3) / 10
TX = np.array([1.0, -2.0, 0.5])


@pytest.fixture
def dbg():
    return tapeviz.debug_jvp(f, (X, W), (TX, None))


def test_steps_run_the_forward_section_then_each_pushforward_in_forward_order(dbg):
    m = dbg.model
    steps = m.step_list
    assert [s.phase for s in steps] == ["forward"] * 5 + ["tangent"] * 5
    assert [(s.kind, s.rule) for s in steps[5:]] == [("pushforward", r) for r in
                                                     ("sin", "matmul", "tanh", "multiply", "sum")]
    forward_outputs = [s.of for s in steps[:5]]
    assert [s.of for s in steps[5:]] == forward_outputs        # pushed forward in the order computed
    dbg.first()
    assert dbg.phase_line == "forward, step 1 of 10: sin \u2192 %2"
    for _ in range(7):
        dbg.next()
    assert dbg.phase_line == "tangent, step 8 of 10: pushforward of %4 (tanh) (3 equations)"
    dbg.prev()
    assert dbg.phase_line.startswith("tangent, step 7 of 10: pushforward of %3 (matmul)")
    dbg.last()
    dbg.next()                                                  # stays on the last step
    assert dbg.step == 9 and dbg._frame["step"]["phase"] == "tangent"
    dbg.set_granularity("primitive")                            # one equation a step, the cursor kept
    assert dbg.phase_line == "tangent, step 17 of 18: pushforward of %6 (sum), equation 1 of 2: sum_to"
    dbg.last()
    assert dbg.phase_line == "tangent, step 18 of 18: pushforward of %6 (sum), equation 2 of 2: reshape"


def test_each_row_pairs_a_primal_equation_with_its_pushforward_block(dbg):
    m = dbg.model
    rows = {r.key: r for r in m.rows}
    tanh_row = rows["%4"]
    assert [m.eqns[i].prim.name for i in tanh_row.forward] == ["tanh"]
    assert [m.eqns[i].prim.name for i in tanh_row.backward] == ["multiply", "subtract", "multiply"]
    assert {m.eqns[i].origin.kind for i in tanh_row.backward} == {"pushforward"}
    html = dbg.listing_view.render()
    assert "tangent \u2193 (its pushforward block" in html and 'data-mode="forward"' in html
    assert "pushforward of %4 (tanh), from its pullback" in html
    assert html.count(">hoisted</span>") == 3                  # cos x and tanh's 1 - y*y run with the forward pass
    dbg.select("%4")                                            # partners: its block on the other side
    assert dbg.model.partners()[0] == set(tanh_row.backward)


def test_tangents_are_the_directional_derivatives(dbg):
    m = dbg.model
    eps = 1e-6

    def forward_values(x):
        s = np.sin(x)
        h = np.tanh(W @ s)
        return {"%2": s, "%3": W @ s, "%4": h, "%5": h * x, "%6": np.sum(h * x)}
    plus, minus = forward_values(X + eps * TX), forward_values(X - eps * TX)
    assert set(m.tangents) == {"%0", *plus}
    for name in plus:
        fd = (plus[name] - minus[name]) / (2 * eps)
        np.testing.assert_allclose(m.values[m.tangents[name]], fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(m.values[m.tangents["%0"]], TX)
    assert "%1" not in m.tangents                               # W has no tangent: a constant


def test_selection_shows_a_value_beside_its_tangent(dbg):
    dbg.select("%4")
    inspector = dbg._inspector
    tangent = dbg.model.tangents["%4"]
    assert f'data-var="%4" data-partner="{tangent}"' in inspector
    assert 'data-role="tangent"' in inspector and "tangent value" in inspector
    assert dbg._frame["sel"]["name"] == "%4"
    dbg.select(tangent)                                         # and back: a tangent's primal
    assert f'data-var="{tangent}" data-partner="%4"' in dbg._inspector
    assert 'data-role="primal"' in dbg._inspector
    dbg.select("%1")                                            # W: constant along this direction
    assert "no tangent" in dbg._inspector and "constant: no tangent" in dbg._inspector


def test_the_graph_model_marks_the_tangent_phase(dbg):
    graph = dbg.model.graph
    phases = {d["phase"] for d in graph.nodes.values()}
    assert phases == {"forward", "tangent"}
    assert graph.nodes["%0"]["kind"] == "parameter" and graph.nodes["%1"]["kind"] == "input"
    tx = dbg.model.tangents["%0"]
    assert (graph.nodes[tx]["kind"], graph.nodes[tx]["phase"], graph.nodes[tx]["label"]) == ("tangent", "tangent", "t_x")
    out = dbg.model.tangents["%6"]
    assert graph.nodes[out]["output"] == "tangent out" and graph.nodes[out]["tangent_of"] == "%6"
    block = tapeviz.pushforward_block(graph, "%4")
    assert [graph.nodes[n]["primitive"] for n in block if n.startswith("eq/")] == ["multiply", "subtract", "multiply"]
    dot = dbg.graph.dot()
    assert "cluster_tangent" in dot and 'cluster_pushforward_%2' in dot


def test_the_static_session_holds_every_step_and_the_tangents(dbg):
    dbg.step_to(6)
    dbg.select("%3")
    data = page.session(dbg)
    assert data["start"] == {"granularity": "pullback", "index": 6, "selected": "%3", "closure": False, "view": "around"}
    texts = [s["text"] for s in data["steps"]["pullback"]]
    assert texts[5:] == ["tangent, step 6 of 10: pushforward of %2 (sin) (2 equations)",
                         "tangent, step 7 of 10: pushforward of %3 (matmul) (3 equations)",
                         "tangent, step 8 of 10: pushforward of %4 (tanh) (3 equations)",
                         "tangent, step 9 of 10: pushforward of %5 (multiply) (3 equations)",
                         "tangent, step 10 of 10: pushforward of %6 (sum) (2 equations)"]
    card = data["html"][data["vars"]["%3"]["inspector"]]
    assert f'data-partner="{dbg.model.tangents["%3"]}"' in card
    assert "tangent \u2193" in data["listing"]


def test_the_mlp_linearization_has_a_block_per_rule_and_agrees_with_jvp():
    params, x, y = mlp_example()
    rng = np.random.default_rng(0)
    t = {k: rng.standard_normal(np.shape(v)) for k, v in params.items()}
    dbg = tapeviz.debug_jvp(mlp_loss, (params, x, y), (t, None, None))
    m = dbg.model
    _, ty = ad.jvp(mlp_loss, (params, x, y), (t, None, None))
    assert np.allclose(m.values[m.tangents[m.step_list[-1].of]], ty)
    blocks = [s for s in m.step_list if s.phase == "tangent"]
    forward = [s.of for s in m.step_list if s.phase == "forward" and s.of in m.tangents]
    assert [s.of for s in blocks if s.kind == "pushforward"] == forward
    assert not m.fallbacks and "vjp of its pullback" not in dbg.listing_view.render()


def test_refusals_name_the_cause():
    with pytest.raises(ValueError, match="every tangent is None"):
        tapeviz.debug_jvp(f, (X, W), (None, None))
    with pytest.raises(TypeError, match="as tuples"):
        tapeviz.debug_jvp(f, X, TX)
    with pytest.raises(ValueError, match="shape"):
        tapeviz.debug_jvp(f, (X, W), (np.ones(2), None))


def test_a_pushforward_by_the_vjp_of_its_pullback_is_flagged():
    from ad.scipy.linalg import expm

    def g(A):
        return np.sum(expm(A) * 2.0)
    A, T = np.eye(2) * 0.1, np.ones((2, 2))
    dbg = tapeviz.debug_jvp(g, (A,), (T,))
    assert [fb.rule for fb in dbg.model.fallbacks] == ["scipy.linalg.expm"]
    dbg.step_to(3)
    assert dbg.phase_line.startswith("tangent, step 4 of 6: pushforward of %1 (scipy.linalg.expm), "
                                     "by the vjp of its pullback (")
    m = dbg.model
    eps = 1e-6
    fd = (g(A + eps * T) - g(A - eps * T)) / (2 * eps)
    np.testing.assert_allclose(m.values[m.tangents["%3"]], fd, rtol=1e-6)


def tanh_wrong_sign(x):
    y = np.tanh(x)
    return y, lambda dy: (-dy * (1 - y * y),)


def test_checks_pin_their_findings_on_the_primal_equation_and_its_pushforward():
    """ad.check in the differentiated arguments: the wrong tanh rule fails program.jvp (forward
    mode against finite differences) and its rule checks; the cursor jumps to tanh's pushforward
    block, both sides of its row carry the mark and the graph tints it."""
    with ad.using_rule(np.tanh, tanh_wrong_sign):
        dbg = tapeviz.debug_jvp(f, (X, W), (TX, None))
    report = dbg.run_checks()                         # the rule is registered again for the checks
    assert not report.ok and {"program.jvp", "fd.jvp"} <= {a.check for a in dbg.alerts}
    m = dbg.model
    tanh = m.producer_index["%4"]
    assert {a.eqn for a in dbg.alerts if a.status == "fail"} == {tanh}
    assert dbg.phase_line == "tangent, step 8 of 10: pushforward of %4 (tanh) (4 equations)"
    assert dbg.selected == "%4" and dbg._frame["checks"]["state"] == "fail"
    block = m.rows[m.row_of_eqn[tanh]].backward
    assert tanh in m.marks and block[0] in m.marks
    assert "tv-badge tv-fail" in dbg.listing_view.render()
    assert "#fecaca" in dbg._dot                      # the failed equation's tint
    eps = 1e-6                                        # the tangents shown are the wrong rule's
    fd = (f(X + eps * TX, W) - f(X - eps * TX, W)) / (2 * eps)
    assert not np.isclose(m.values[m.tangents["%6"]], fd)
    assert tapeviz.debug_jvp(f, (X, W), (TX, None)).run_checks().ok


def test_closure_and_lifted_pushforwards_side_by_side():
    dbg = tapeviz.debug_jvp(f, (X, W), (TX, None))
    m = dbg.model
    dbg.select(m.tangents["%4"])                      # a tangent names its primal equation
    dbg.show_closure(True)
    c = dbg.comparison()
    assert c.name == "%4" and c.ok and [r.lifted_var for r in c.rows] == [m.tangents["%4"]]
    y = np.arange(9.0).reshape(3, 3) / 10 @ np.sin(X)
    t3 = m.values[m.tangents["%3"]]
    np.testing.assert_allclose(c.rows[0].result.closure, (1 - np.tanh(y) ** 2) * t3)   # d tanh = 1 - tanh^2
    assert 'data-mode="forward"' in dbg._closure and "closure and lifted agree" in dbg._closure
    assert dbg.comparison("%1") is None               # W has no tangent: nothing is pushed through it
    assert "belongs to no pushforward" in dbg.closure_panel("%1")


def test_closure_and_lifted_pushforwards_that_disagree_are_flagged():
    """A rule whose primal is wrong (x*x for a cube): the tangent tape's multiply reads the rule's
    x*x, while the closure form pushes the recorded operands' tangents through the product rule."""
    entry = GALLERY["wrong primal"]
    x = np.linspace(0.5, 1.5, 3)
    with ad.using_rule(entry.target, entry.rule):
        dbg = tapeviz.debug_jvp(lambda x: np.sum(cube(x) * x), (x,), (np.ones(3),))
    m = dbg.model
    product = next(e for e in m.eqns if e.prim is lookup(np.multiply) and e.origin.kind == "primal")
    a, b = (repr(v) for v in product.inputs)
    c = dbg.comparison(repr(product.outputs[0]))
    r = c.rows[0].result
    value, tangent = m.values.get, lambda v: m.values[m.tangents[v]]
    np.testing.assert_allclose(r.closure, tangent(a) * value(b) + value(a) * tangent(b))
    assert not c.ok and r.max_abs > 1
    assert "DIFFER" in dbg.closure_panel(repr(product.outputs[0]))


def test_the_legend_lists_the_kinds_of_value_of_its_mode(mlp_dbg):
    forward = tapeviz.debug_jvp(f, (X, W), (TX, None))
    assert "tangent value (forward mode)" in forward._legend and "cotangent" not in forward._legend
    assert "tangent value" not in mlp_dbg._legend and "backward value (cotangent)" in mlp_dbg._legend
    assert page.session(forward)["legend"] == forward._legend


def test_a_tangent_whose_primal_was_merged_away_shows_why():
    """``sin(x*w)`` twice: the linearization keeps one ``sin`` (CSE), so the second one's
    tangent points at a primal the tape no longer has; selecting it says so instead of failing."""
    x, w = np.linspace(0.0, 1.0, 4), np.full(4, 0.5)
    merged = tapeviz.debug_jvp(lambda x, w: np.sum(2 * np.sin(x * w) + np.sin(x * w)), (x, w),
                               (np.ones(4), np.zeros(4)))
    orphans = [n for n, d in merged.model.var_attrs.items()
               if d.get("tangent_of") and d["tangent_of"] not in merged.model.var_attrs]
    assert orphans, "the program no longer has a merged primal: pick another"
    for name in orphans:
        merged.select(name)
        assert merged.selected == name
        assert "merged it with an equal one" in merged._inspector
