"""The debugger on imported networks: a ResNet-style CNN exported by PyTorch opens collapsed by
layer (the outline's entries are its modules, as the importer reads them from the node names),
and the calls view draws each layer as one node beside its pullback, the weights only that
layer reads drawn in it (``reads 25 parameters``, ``gives 25 gradients``), so the top level is a
few dozen nodes instead of one per weight; the sums that make a weight's gradient out of an
unrolled LSTM's steps are drawn in its pullback. The page's half: test_calls_static.py."""
import re
import shutil

import numpy as np
import pytest

import ad
from tests.support.needs import module as optional_module
import tapeviz
from ad.origins import OriginKind
from tapeviz.debugger.calls_drawing import calls_dot
from tapeviz.debugger.dot import DOT

from tests.support.needs import needs
from tests.tapeviz.debugger.test_calls_view import columns, edge_lines, nodes

imported_networks = optional_module("tests.support.imported_networks")    # torch and onnx; in CI, required


@pytest.fixture
def resnet():
    return imported_networks.debugger("resnet")


def closed_top(dbg) -> str:
    """The calls view's drawing with every call closed."""
    dbg.graph_view = "calls"
    for path in sorted(dbg.opened, key=len, reverse=True):
        dbg.close_call(path)
    return dbg._dot


def parameters_of(prefix: str) -> int:
    """How many of the model's weights live under a module path (PyTorch's names)."""
    module, _, _ = imported_networks.imported("resnet")
    return sum(1 for name, _ in module.state_dict().items() if name.startswith(prefix + ".")
               and not name.endswith("num_batches_tracked"))


def test_an_imported_resnet_opens_collapsed_by_layer(resnet):
    """The outline's entries are the model's modules in PyTorch's order, each layer's its two
    blocks (named as the exporter spells a Sequential's children); only the cursor's module is
    opened."""
    module, _, _ = imported_networks.imported("resnet")
    outline = resnet.outline()
    assert [c["name"] for c in outline["children"]] == [name for name, _ in module.named_children()]
    for layer in ("layer1", "layer2", "layer3", "layer4"):
        entry = next(c for c in outline["children"] if c["name"] == layer)
        assert [c["name"] for c in entry["children"]] == [f"{layer}.{n}" for n in range(2)]
    assert resnet.scope == ("conv1",) and resnet.opened == {("conv1",)}
    assert resnet._frame["pane"]["opened"] == [] and resnet._frame["pane"]["closed"] == []


def test_the_top_level_draws_each_layer_with_its_weights_inside(resnet):
    dot = closed_top(resnet)
    drawn = nodes(dot)
    layers = [name for name, _ in imported_networks.imported("resnet")[0].named_children()]
    number = {layer: resnet.calls.number((layer,)) for layer in layers}
    calls = [n for n in drawn if n.startswith("call/")]
    assert sorted(calls) == sorted(f"call/{c}/{number[layer]}" for layer in layers for c in "fb")
    inputs = {repr(v) for v in resnet.model.gt.inputs}
    assert len(inputs) == 103 and not inputs & set(drawn)          # x and the 102 weights: in the layers
    own = resnet.calls.data["scopes"]["own"][0]                    # the loss and the model's own ops
    assert len(drawn) <= len(calls) + len(own) + 4 and len(drawn) < 40      # 137 before
    for layer in layers:                  # each says how many weights it reads and gives gradients of
        n = parameters_of(layer)
        reads = f"1 input and {n} parameter" if layer == "conv1" else f"{n} parameters"
        assert re.search(rf'"call/f/{number[layer]}" \[label=<.*>reads {reads}<', dot), layer
        assert re.search(rf'"call/b/{number[layer]}" \[label=<.*>gives {n} gradients?<', dot), layer
    flows = edge_lines(dot)                 # the data flow: layer to layer, no edge across the columns
    for a, b in zip(layers[2:5], layers[3:6]):
        assert (f"call/f/{number[a]}", f"call/f/{number[b]}") in flows
    column = columns(dot)
    assert all(column[t] == column[h] for t, h in flows)


def test_an_opened_layer_draws_its_blocks_with_their_weights(resnet):
    closed_top(resnet)
    resnet.open_call(("layer2",))
    dot = resnet._dot
    for block in ("layer2.0", "layer2.1"):
        k = resnet.calls.number(("layer2", block))
        n = parameters_of(block)
        assert n == (15 if block == "layer2.0" else 10)             # the first block's shortcut: 5 more
        assert re.search(rf'"call/f/{k}" \[label=<.*>reads {n} parameters<', dot)
        assert re.search(rf'"call/b/{k}" \[label=<.*>gives {n} gradients<', dot)
    assert f'"call/f/{resnet.calls.number(("layer2",))}"' not in dot
    assert not {repr(v) for v in resnet.model.gt.inputs} & set(nodes(dot))


@needs(bool(shutil.which("dot")), "Graphviz's dot")
def test_the_folded_drawing_is_valid_graphviz(resnet):
    dot = closed_top(resnet)
    svg = DOT.svg(dot)
    assert svg and len(re.findall(r'class="node[ "]', svg)) == len(nodes(dot))


def test_an_lstms_gradient_sums_are_drawn_in_its_pullback():
    """The importer unrolls the LSTM into one call (``lstm``) that reads each weight at every
    step: the sums of the steps' parts of a weight's gradient run at the top level (in the
    weight's scope) and are drawn in the pullback's node, which the cursor on one of them
    frames."""
    dbg = imported_networks.debugger("lstm")
    dot = closed_top(dbg)
    m = dbg.model
    inputs = set(m.gt.inputs)
    sums = [i for i, e in enumerate(m.eqns) if e.origin.kind is OriginKind.ACCUMULATE and e.origin.of in inputs]
    assert len(sums) >= 4 and all(m.eqns[i].scope == () for i in sums)
    k = dbg.calls.number(("lstm",))
    drawn = set(nodes(dot))
    assert not {repr(m.eqns[i].outputs[0]) for i in sums} & drawn and not {repr(v) for v in inputs} & drawn
    assert re.search(rf'"call/f/{k}" \[label=<.*>reads 1 input and 4 parameters<', dot)
    assert re.search(rf'"call/b/{k}" \[label=<.*>gives 4 gradients<', dot)
    assert len(drawn) == 11                                  # 24 before: the 5 inputs and 8 sums
    shown = dbg.calls.shown()
    shown["cursor"] = sums[-1]
    framed = calls_dot(dbg.calls.data, shown, dbg.calls.equations)
    assert f'id="tvc_b{k}" class="tv-current"' in framed and framed.count("tv-current") == 1


def shared_and_own(params, x):
    """W read by two calls, c and x by one each."""
    with ad.scope("a"):
        x = np.tanh(x @ params["W"])
    with ad.scope("b"):
        x = np.tanh(x @ params["W"] + params["c"])
    return np.sum(x)


def test_a_weight_two_calls_read_stays_drawn_with_its_gradients_sum():
    params = {"W": np.eye(3) * 0.5, "c": np.ones(3)}
    dbg = tapeviz.debug(shared_and_own, params, np.ones((2, 3)))
    dot = closed_top(dbg)
    m = dbg.model
    W, c = m.gt.inputs[:2]
    flows = set(edge_lines(dot))
    a, b = dbg.calls.number(("a",)), dbg.calls.number(("b",))
    assert {(repr(W), f"call/f/{a}"), (repr(W), f"call/f/{b}")} <= flows and repr(c) not in nodes(dot)
    total = next(e for e in m.eqns if e.origin.kind is OriginKind.ACCUMULATE and e.origin.of is W)
    assert repr(total.outputs[0]) in nodes(dot)                # W's gradient: the sum of the two calls'
    assert re.search(rf'"call/f/{a}" \[label=<.*>reads 1 input<', dot)               # x
    assert re.search(rf'"call/f/{b}" \[label=<.*>reads 1 parameter<', dot)           # c
    assert re.search(rf'"call/b/{b}" \[label=<.*>gives 1 gradient<', dot)
    assert not re.search(rf'"call/b/{a}" \[label=<.*>gives', dot)
