"""ad.save / ad.load round trips: every rule of the library, random programs, pytrees, literals,
gradient tapes of every shape (joint, optimized, vjp seeds, sections, partition halves)."""
import collections
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings

import ad
from ad import pytree
from ad.passes import optimize
from ad.serialize import NotSerializableError, dumps, loads
from tests.support.serialize_cases import (EXTRA, assert_same_tape, closure_only_rule, mlp_args,
                                           mlp_loss, program_function, program_inputs, programs)
from tests.support.cases import CASES, floats, weighted, weights


def round_trip(tape, tmp_path=None, **kw):
    if tmp_path is None:
        back = loads(dumps(tape), **kw)
    else:
        ad.save(tape, tmp_path / "t.json")
        back = ad.load(tmp_path / "t.json", **kw)
    assert_same_tape(tape, back)
    return back


def assert_same_results(a, b):
    for x, y in zip(_leaves(a), _leaves(b)):
        assert np.result_type(x) == np.result_type(y)
        np.testing.assert_array_equal(x, y)


def _leaves(tree):
    return pytree.flatten(tree)[0]


def every_section(gt):
    return [gt, optimize(gt), gt.forward, gt.backward, *ad.partition(gt)]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES + EXTRA])
def test_every_rule_round_trips(case):
    rng = np.random.default_rng(0)
    xs = case.inputs(case.sample.shapes[-1], rng)
    tape = ad.trace(case.fn, *xs)
    if any(callable(v) for e in tape.eqns for _, v in e.params):    # odeint's func: code, not data
        with pytest.raises(NotSerializableError, match="is not data that can be saved"):
            dumps(tape)
        return
    assert_same_results(round_trip(tape)(*xs), tape(*xs))
    if not floats(xs):
        return
    gt = ad.grad_tape(weighted(case.fn, weights(case.fn(*xs), rng)), *xs, argnums=floats(xs))
    if gt.fallbacks:            # a rule that runs as a closure: refused, with its name
        with pytest.raises(NotSerializableError, match=re.escape(gt.fallbacks[0].rule)):
            dumps(gt)
        return
    for t in every_section(gt):
        round_trip(t)
    assert_same_results(round_trip(gt)(*xs), gt(*xs))


@settings(max_examples=30, deadline=None)
@given(programs())
def test_random_programs_round_trip(program):
    f, xs = program_function(program), program_inputs(program)
    gt = ad.grad_tape(f, *xs, argnums=tuple(range(len(xs))))
    for t in every_section(gt):
        round_trip(t)
    new = program_inputs(program, seed=1)   # the loaded tape runs on new inputs too
    assert_same_results(round_trip(gt)(*new), gt(*new))
    assert_same_results(round_trip(optimize(gt))(*new)[1], ad.grad(f, tuple(range(len(xs))))(*new))


def test_mlp_file_round_trip(tmp_path):
    args = mlp_args()
    gt = ad.grad_tape(mlp_loss, *args, argnums=(0, 1, 2, 3))
    back = round_trip(gt, tmp_path)
    assert_same_results(back(*args), gt(*args))
    lines = (tmp_path / "t.json").read_text().splitlines()
    assert sum(1 for line in lines if line.lstrip().startswith('{"prim"')) == len(gt.eqns)
    assert json.loads((tmp_path / "t.json").read_text())["version"] == 2


def test_vjp_tape_with_seeds():
    _, pullback = ad.vjp(lambda x, y: (np.sin(x) * y, x.T @ y), np.ones((2, 3)), np.ones((2, 3)) * 2)
    gt = pullback.tape
    assert gt.n_seeds == 2
    back = round_trip(gt)
    args, cts = (np.ones((2, 3)), np.full((2, 3), 0.5)), [np.full((2, 3), 3.0), np.eye(3)]
    assert_same_results(back(*args, cotangents=cts), gt(*args, cotangents=cts))


Point = collections.namedtuple("Point", ["x", "y"])


def _tree_loss(params, scale, name, opts):
    w = params["w"] * params["bias"][0]
    return np.sum(np.tanh(w * opts.x) ** 2) * scale + np.sum(opts.y) * (len(name) + 1)


def test_pytrees_static_leaves_and_namedtuples(tmp_path):
    args = ({"w": np.arange(6.0).reshape(2, 3) / 6, "bias": [np.float32(1.5), 3]}, 2.0, "abc",
            Point(np.ones(3), np.zeros(2)))
    gt = ad.grad_tape(_tree_loss, *args, argnums=(0, 3))
    back = round_trip(gt, tmp_path, namedtuples={"Point": Point})
    assert_same_results(back(*args), gt(*args))
    # without the class, the namedtuple is rebuilt from its stored name and fields
    made = ad.load(tmp_path / "t.json").in_tree.structure[1][3][1]
    assert made is not Point and made.__name__ == "Point" and made._fields == ("x", "y")


def test_literals_inline_and_base64():
    big = np.linspace(0, 1, 100).reshape(10, 10).astype(np.float32)
    odd = np.array([np.inf, -np.inf, np.nan, 1.0])

    def f(x):
        return np.sum(x * big) + np.sum(np.where(np.isfinite(odd), odd, 0.0)) + np.float32(2.5) * x[0, 0] \
            + np.sum(x[np.array([1, -1])]) + np.sum(x > np.int8(3))
    x = np.ones((10, 10), np.float32)
    tape = ad.trace(f, x)
    text = dumps(tape)
    assert '"base64"' in text and '"nan"' not in text.lower().replace('"float": "nan"', "")
    back = round_trip(tape)
    lits = {id(x.value): x for e in back.eqns for x in e.inputs if type(x) is ad.Lit}
    assert any(isinstance(x.value, np.ndarray) and not x.value.flags.writeable for x in lits.values())
    assert_same_results(back(x), tape(x))


def test_shared_literal_stays_shared():
    c = np.arange(20.0)
    tape = ad.trace(lambda x: x * c + c, np.ones(20))
    back = round_trip(tape)
    assert back.eqns[0].inputs[1] is back.eqns[1].inputs[1]
    assert len(json.loads(dumps(tape))["literals"]) == 1


def test_fallback_tape_refused_with_rules_and_lines():
    with closure_only_rule() as doubled:
        gt = ad.grad_tape(lambda x: np.sum(doubled(x) ** 2), np.ones(3))
    assert gt.fallbacks
    with pytest.raises(NotSerializableError) as info:
        ad.save(gt, "/nonexistent/never_written.json")
    msg = str(info.value)
    assert "serialize_tests.doubled" in msg and "test_json_roundtrip.py" in msg
    assert "np.sum(doubled(x) ** 2)" in msg          # the user's source line
    with pytest.raises(NotSerializableError, match="serialize_tests.doubled"):
        dumps(gt.forward)                             # the opaque forward equation alone


def test_check_shapes_can_be_turned_off():
    gt = ad.grad_tape(mlp_loss, *mlp_args(), argnums=0)
    assert_same_tape(loads(dumps(gt), check_shapes=False), gt)


def test_unsaveable_static_argument_is_named():
    tape = ad.trace(lambda x, fn: fn(x), np.ones(2), np.sin)
    with pytest.raises(NotSerializableError, match=r"static argument fn: a ufunc"):
        dumps(tape)


def test_saved_scipy_tapes_load_in_a_fresh_process(tmp_path):
    """ad.scipy's rules are deferred by ``import ad`` (ad.primitives.defer); a saved tape that
    names scipy.special's and scipy.stats's primitives loads them in a process that never
    imported them."""
    code = ("import numpy as np, ad, scipy.special as S\n"
            "from ad.scipy.stats import multivariate_normal\n"
            "f = lambda x: S.gammaln(x).sum() + multivariate_normal.cdf(x[:2], np.zeros(2), np.eye(2))\n"
            f"ad.save(ad.trace(f, np.array([1.5, 2.0, 3.0])), {str(tmp_path / 't.json')!r})\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    load = ("import sys, numpy as np, ad\n"
            "assert not any(m.startswith('ad.scipy') for m in sys.modules)\n"
            f"t = ad.load({str(tmp_path / 't.json')!r})\n"
            "print(sorted({e.prim.name for e in t.eqns if e.prim.name.startswith('scipy')}))\n")
    out = subprocess.run([sys.executable, "-c", load], check=True, capture_output=True, text=True).stdout
    assert "scipy.special.gammaln" in out and "scipy.stats.multivariate_normal.cdf" in out, out
