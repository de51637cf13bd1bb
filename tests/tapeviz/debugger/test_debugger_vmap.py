"""The debugger on batched programs (``ad.vmap``): the gradient of a function that calls
``ad.vmap`` (the batch axis in every batched equation's aval), of one that traces
``ad.vmap(ad.grad(loss))`` (per-example gradients, whose norms it sums), and of one whose batched
program loops a primitive without a batching rule (``fallback_loop``): each opens, steps to the
end, shows batched values in the inspector, gives ad's gradients, and runs its checks (the
batched gradient's too); a branch on a batched value refuses before any widget is built."""
import json

import numpy as np
import pytest

import ad
import tapeviz
from ad.examples import mlp_example, mlp_loss
from ad.scipy.linalg import expm
from tapeviz.debugger import page

B = 5
PARAMS, X, Y = mlp_example(batch=B, sizes=(4, 8, 3))
XB, YB = X[:, None], Y[:, None]          # B examples of one row each


def mean_of_per_example_losses(params, xb, yb):
    return np.mean(ad.vmap(mlp_loss, in_axes=(None, 0, 0))(params, xb, yb))


def per_example_gradient_norms(params, xb, yb):
    """The sum of the per-example gradients' squared norms (what DP-SGD clips)."""
    grads = ad.vmap(ad.grad(mlp_loss), in_axes=(None, 0, 0))(params, xb, yb)
    return sum(np.sum(g ** 2) for g in grads.values())


def looped_expm(A):
    return np.sum(ad.vmap(expm)(A) ** 2)


def avals(dbg) -> list[str]:
    return [str(v.aval) for e in dbg.model.eqns for v in e.outputs]


def test_the_gradient_of_a_function_calling_vmap_opens_with_the_batch_axis_in_its_avals():
    dbg = tapeviz.debug(mean_of_per_example_losses, PARAMS, XB, YB)
    shapes = [v.aval.shape for e in dbg.model.eqns for v in e.outputs]
    assert (B, 1, 8) in shapes and (B, 1, 3) in shapes           # hidden and logits, one row per example
    listing = dbg.listing_view.render()
    assert "f64[5,1,8]" in listing and "matmul" in listing
    dbg.last()
    assert dbg.phase_line.startswith("backward, step ") and dbg.step == dbg.n_steps - 1
    want = ad.grad(mean_of_per_example_losses)(PARAMS, XB, YB)
    np.testing.assert_allclose(dbg.model.values[dbg.model.cotangents["%0"]], want["W0"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(want["W0"], ad.grad(mlp_loss)(PARAMS, X, Y)["W0"], rtol=1e-12, atol=1e-15)


def test_the_inspector_shows_a_batched_value():
    dbg = tapeviz.debug(mean_of_per_example_losses, PARAMS, XB, YB)
    hidden = next(repr(e.outputs[0]) for e in dbg.model.eqns if e.outputs[0].aval.shape == (B, 1, 8))
    dbg.select(hidden)
    card = dbg._inspector
    assert f'data-var="{hidden}"' in card and "(5, 1, 8)" in card


def test_per_example_gradients_traced_inside_a_loss_open_and_match_ad():
    dbg = tapeviz.debug(per_example_gradient_norms, PARAMS, XB, YB)
    shapes = [v.aval.shape for e in dbg.model.eqns for v in e.outputs]
    assert (B, 4, 8) in shapes                                    # one W0 gradient per example
    dbg.last()
    assert dbg.phase_line.startswith("backward")
    want = ad.grad(per_example_gradient_norms)(PARAMS, XB, YB)
    np.testing.assert_allclose(dbg.model.values[dbg.model.cotangents["%0"]], want["W0"], rtol=1e-10, atol=1e-14)
    report = dbg.run_checks(batched=True, equations=False)
    assert report["program.batched_grad"].status == "pass", report
    assert report["program.dot_product"].status == "pass"


def test_a_fallback_loop_is_listed_with_the_primitive_it_loops_and_stepped_through():
    A = np.stack([np.array([[0.1, 0.2], [0.0, -0.3]]) * k for k in (1.0, 0.5, -1.0)])
    dbg = tapeviz.debug(looped_expm, A)
    loops = [e for e in dbg.model.eqns if e.prim.name == "fallback_loop"]
    assert loops and dict(loops[0].params)["primitive"] == "scipy.linalg.expm"
    listing = dbg.listing_view.render()
    assert "fallback_loop" in listing and "scipy.linalg.expm" in listing
    assert "f64[3,2,2]" in listing                                # the loop's output: the batch first
    pullbacks = [s for s in dbg.model.step_list if s.kind == "pullback" and s.rule == "fallback_loop"]
    assert len(pullbacks) == 1
    dbg.last()
    want = np.stack([ad.grad(lambda a: np.sum(expm(a) ** 2))(a) for a in A])
    np.testing.assert_allclose(dbg.model.values[dbg.model.cotangents["%0"]], want, rtol=1e-10, atol=1e-14)


def test_a_branch_on_a_batched_value_refuses_with_the_line():
    def branchy(x):
        return np.sum(x) if np.sum(x) > 0 else -np.sum(x)        # the line the message names

    def loss(xs):
        return np.sum(ad.vmap(branchy)(xs))
    with pytest.raises(ad.BatchedBranchError, match="differs across the batch") as info:
        tapeviz.debug(loss, np.array([[1.0, 2.0], [-3.0, 1.0]]))
    assert "test_debugger_vmap.py" in info.value.location and "np.sum(x) > 0" in str(info.value)


def test_a_static_page_of_a_batched_program(tmp_path):
    A = np.stack([np.eye(2) * 0.1 * k for k in (1.0, 2.0, 3.0)])
    text = tapeviz.debug(looped_expm, A).to_html(tmp_path / "batched.html").read_text(encoding="utf-8")
    data = page.unpack(text.split('class="tv-session">')[1].split("</script>")[0])
    listing = json.dumps(data)
    assert "fallback_loop" in listing and "f64[3,2,2]" in listing
    assert len(data["steps"]["pullback"]) == tapeviz.debug(looped_expm, A).n_steps
