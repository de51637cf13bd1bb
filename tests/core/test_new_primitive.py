"""Adding a primitive touches one module: this one. ``softsign`` is declared below, once, with
its rule, samples, spelling and ONNX lowering; then the whole system takes it: tracing, lifting,
the checker, the compiled form, saving and loading, and the ONNX export run in onnxruntime.
docs/architecture.md walks through the same example."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.checks.library import check_library, sampled
from ad.onnx.lowering import LOWERINGS, lowers
from ad.primitives import REGISTRY
from ad.samples import Sample, In
from tests.support.needs import module

# -- the one place: what a rule author writes (a fixture here, so that the registry-wide tests
#    of the rest of the suite never see a test's primitive) -----------------------------------

def declare_softsign():
    softsign_p = ad.Primitive(
        "test_softsign", lambda x: x / (1 + np.abs(x)), elementwise=True,
        doc="x / (1 + |x|): a smooth sign.",
        samples=(Sample((In(lo=-3.0, hi=3.0),)),),          # where it is checked and tested
        spelling="{0} / (1 + np.abs({0}))")                    # how generated code spells it
    ad.scalar_rule(softsign_p, lambda x, y: (1 - np.abs(y)) ** 2)   # d/dx = 1 / (1 + |x|)^2

    @lowers(softsign_p)
    def _softsign_onnx(g, e):
        return g.op("Softsign", g.x(e.inputs[0], e.outputs[0].aval.dtype))
    return softsign_p


@pytest.fixture(scope="module", autouse=True)
def softsign_p():
    prim = declare_softsign()
    yield prim
    del REGISTRY[prim.name], LOWERINGS[prim]


def softsign(x):
    return REGISTRY["test_softsign"].bind(x)


# -- and everything else just works ---------------------------------------------------------------


def loss(w, x):
    return np.sum(softsign(x @ w) ** 2)


W, X = np.linspace(-1, 1, 6).reshape(3, 2), np.linspace(0.5, -1.5, 12).reshape(4, 3)


def test_traced_lifted_and_the_forms_agree():
    gt = ad.grad_tape(loss, W, X)
    assert not gt.fallbacks and "test_softsign" in str(gt)
    assert any(e.origin.rule == "test_softsign" for e in gt.eqns[gt.n_forward:])
    grads = [ad.grad(loss, form=form)(W, X) for form in ("lifted", "closure", "compiled")]
    for g in grads[1:]:
        np.testing.assert_allclose(g, grads[0], rtol=1e-12)
    h = 1e-6
    fd = np.zeros_like(W)
    for i in np.ndindex(W.shape):
        d = np.zeros_like(W)
        d[i] = h
        fd[i] = (loss(W + d, X) - loss(W - d, X)) / (2 * h)
    np.testing.assert_allclose(grads[0], fd, rtol=1e-6)


def test_the_checker_takes_it_from_its_samples(softsign_p):
    assert softsign_p in sampled()
    report = ad.check_rule(softsign_p, np.linspace(-2, 2, 5))
    assert report.ok, str(report)
    cases = check_library({"test_softsign"})
    assert cases and all(r.ok for r in cases), [str(r) for r in cases if not r.ok]


def test_compiled_source_uses_its_spelling():
    source = ad.compile(ad.optimize(ad.grad_tape(loss, W, X))).source
    assert "/ (1 + np.abs(" in source


def test_saved_and_loaded(tmp_path):
    gt = ad.optimize(ad.grad_tape(loss, W, X))
    ad.save(gt, tmp_path / "softsign.tape.json")
    value, grad = ad.load(tmp_path / "softsign.tape.json")(W, X)
    np.testing.assert_allclose(grad, ad.grad(loss)(W, X), rtol=1e-12)


def test_exported_to_onnx_and_run_in_onnxruntime():
    ort = module("onnxruntime")
    model = ad.to_onnx(ad.optimize(ad.grad_tape(loss, W, X)))
    assert "Softsign" in {n.op_type for n in model.graph.node}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    value, grad = session.run(None, dict(zip(names, (W, X))))
    np.testing.assert_allclose(grad, ad.grad(loss)(W, X), rtol=1e-10)
