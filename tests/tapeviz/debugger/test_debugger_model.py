"""The debugger's state model, without widgets: steps at both granularities, rows pairing rule
instances with their pullback blocks, partners, cotangents (checked against an analytic oracle
and the closure form), and the residuals table."""
import numpy as np
import pytest

import ad
from ad.examples import mlp_loss
from tapeviz import pullback_block, residuals
from tapeviz.debugger.model import DebugModel, build_steps
from tapeviz.graph import BACKWARD_BLOCK


@pytest.fixture
def model(mlp_args):
    return DebugModel(ad.grad_tape(mlp_loss, *mlp_args), mlp_args)


@pytest.mark.parametrize("granularity", ["pullback", "primitive"])
def test_steps_cover_every_equation_once_in_order(model, granularity):
    steps = build_steps(model.gt, granularity)
    covered = [i for s in steps for i in range(s.start, s.stop)]
    assert covered == list(range(len(model.eqns)))
    if granularity == "primitive":
        assert len(steps) == len(model.eqns)
    for s in steps:
        origins = {(model.eqns[i].origin.kind in BACKWARD_BLOCK, model.eqns[i].origin.of)
                   for i in range(s.start, s.stop)}
        assert len(origins) == 1, s          # one rule body, or one pullback block, per step


def test_pullback_steps_are_rule_instances_and_blocks(model):
    steps = model.steps["pullback"]
    forward = [s for s in steps if s.phase == "forward"]
    assert len(forward) == len(model.graph.graph["instances"])
    blocks = [s for s in steps if s.kind == "pullback"]
    for s in blocks:
        block = [n for n in pullback_block(model.graph, s.of) if n.startswith("eq/")]
        assert [model.graph.nodes[n]["index"] for n in block] == list(range(s.start, s.stop))
    fan_in = [s for s in steps if s.kind == "accumulate"]
    assert fan_in and all(s.stop - s.start == 1 for s in fan_in)     # fan-in is a step of its own
    assert all("fan-in" in model.title(s) for s in fan_in)


def test_phase_line_names_the_step(model):
    block = next(i for i, s in enumerate(model.step_list) if s.kind == "pullback" and s.rule == "matmul")
    model.step_to(block)
    s = model.step
    assert model.phase_line() == (f"backward, step {block + 1} of {model.n_steps}: pullback of {s.of} "
                                  f"(matmul) ({s.stop - s.start} equations)")
    assert model.current == repr(model.eqns[s.start].outputs[0])
    assert model.written() == [repr(v) for e in model.eqns[s.start:s.stop] for v in e.outputs]


def test_granularity_switch_keeps_the_equation(model):
    block = next(i for i, s in enumerate(model.step_list) if s.kind == "pullback" and s.stop - s.start > 1)
    model.step_to(block)
    start = model.step.start
    model.set_granularity("primitive")
    assert model.step.start == start and model.step.stop == start + 1
    assert "equation 1 of" in model.phase_line()
    model.step_to(model.index + 1)
    model.set_granularity("pullback")
    assert model.index == block                # the equation's block, not the next step
    with pytest.raises(ValueError, match="choose one of"):
        model.set_granularity("by pullback")


def test_step_to_out_of_range_says_how_many(model):
    with pytest.raises(IndexError, match=rf"{model.n_steps} steps"):
        model.step_to(model.n_steps)
    assert model.step_to(-1) == model.n_steps - 1


def test_rows_pair_each_instance_with_its_backward_equations(model):
    seen_fwd = [i for r in model.rows for i in r.forward]
    seen_bwd = sorted(i for r in model.rows for i in r.backward)
    assert seen_fwd == list(range(model.gt.n_forward))
    assert seen_bwd == list(range(model.gt.n_forward, len(model.eqns)))
    for row in model.rows[1:]:
        outs = {repr(v) for i in row.forward for v in model.eqns[i].outputs}
        for i in row.backward:
            assert repr(model.eqns[i].origin.of) in outs     # about this instance's outputs


def test_partners_of_a_forward_and_a_backward_equation(model):
    name = next(s.of for s in model.step_list if s.kind == "pullback" and s.rule == "matmul")
    model.select(name)
    eqns, _ = model.partners()
    block = {model.graph.nodes[n]["index"] for n in pullback_block(model.graph, name) if n.startswith("eq/")}
    assert block <= eqns
    # from the block's first equation back to its forward origin and the residuals it reads
    first = min(block)
    model.select(repr(model.eqns[first].outputs[0]))
    eqns, read = model.partners()
    assert model.producer_index[name] in eqns
    reads = {repr(x) for x in model.eqns[first].inputs if type(x) is ad.Var}
    assert read == {r for r in reads if model.var_attrs[r].get("residual")}
    assert read


def test_select_rejects_unknown_names(model):
    with pytest.raises(KeyError, match="not a variable of this tape"):
        model.select("%99999")
    assert model.select("eq/%7") == "%7"


def test_cotangents_match_the_analytic_softmax_gradient(model, mlp_args):
    params, x, y = mlp_args
    h = np.tanh(x @ params["W0"] + params["b0"])
    logits = h @ params["W1"] + params["b1"]
    name = next(n for n, v in model.values.items() if model.var_attrs[n]["phase"] == "forward"
                and np.shape(v) == logits.shape and np.allclose(v, logits) and n in model.producer_index)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.values[model.cotangents[name]], (p - y) / len(x), rtol=1e-10, atol=1e-14)


def test_parameter_cotangents_are_the_closure_form_gradients(model, mlp_args):
    grads = ad.grad(mlp_loss, form="closure")(*mlp_args)
    for v, label in zip(model.gt.inputs, model.gt.input_names):
        if label.startswith("params"):
            key = label.split("'")[1]
            np.testing.assert_allclose(model.values[model.cotangents[repr(v)]], grads[key], rtol=1e-12)


def test_residual_table_lists_every_residual_with_its_lifetime(model):
    table = model.residual_table()
    expected = residuals(model.graph)
    assert [r["name"] for r in table] == [r.var for r in expected]
    for row, ref in zip(table, expected):
        assert row["consumers"] == [model.graph.nodes[c]["index"] for c in ref.consumers]
        assert row["bytes"] == np.asarray(model.values[row["name"]]).nbytes
        assert row["last"] == max(row["consumers"]) >= model.gt.n_forward
        assert row["first"] == (-1 if ref.producer is None else model.graph.nodes[ref.producer]["index"])
