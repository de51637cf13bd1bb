"""Mutation testing (ad.checktools.mutants): each operator makes the template change it names, the
mutants of a sample of the registry are caught, equivalent mutants are recognised, and
``ad-check --mutants`` runs on a filter. The full run over the registry is a benchmark
(bench/bench_mutants.py), not a test: these take about 15 s."""
import numpy as np

import ad
from ad.checks import check_rule
from ad.checktools import mutants
from ad.checktools.cli import main
from ad.core_prims import sum_to_p, transpose_p
from ad.lib.elementwise import multiply_p, negative_p, subtract_p
from ad.tape import Lit


@ad.primitive
def blend(x, y):
    return x * y + np.sin(x) - y ** 2 / 2


@ad.rrule(blend)
def _blend_rule(x, y):
    def pullback(g):
        g * 3.0                      # computed and dropped: its mutants are equivalent
        return g * y + g * np.cos(x), g * x - g * y
    return blend(x, y), pullback


def _blend_target(seed=0):
    rng = np.random.default_rng(seed)
    t = mutants.target(blend, rng.standard_normal(3), rng.standard_normal(3),
                       draw=lambda: [rng.standard_normal(3), rng.standard_normal(3)])
    assert isinstance(t, mutants.Target)
    return t


def _env(t):
    env = {}
    t.lifted.evaluate(t.inputs, [np.ones(c.aval.shape, c.aval.dtype) for c in t.lifted.cts], env)
    return env


def _new(m, t):
    """The mutant's equations that are not the template's."""
    return [e for e in m.bwd if not any(e is o for o in t.lifted.bwd)]


def _readers(eqns, v):
    return [e for e in eqns if v in e.inputs]


def test_sign_and_scale_insert_one_equation_after_the_value_and_read_it_instead():
    t = _blend_target()
    for op, prim in (("sign", negative_p), ("scale", multiply_p)):
        ms = [m for m in mutants.mutants(t, _env(t)) if m.operator == op]
        assert len(ms) == sum(e.outputs[0].aval.is_float for e in t.lifted.bwd)
        for m in ms:
            inserted = [e for e in _new(m, t) if e.prim is prim and e.outputs[0].n >= 10**9]
            assert len(inserted) == 1 and len(m.bwd) == len(t.lifted.bwd) + 1
            old, new = inserted[0].inputs[0], inserted[0].outputs[0]
            if op == "scale":
                assert type(inserted[0].inputs[1]) is Lit and inserted[0].inputs[1].value == 2.0
            later = m.bwd[m.bwd.index(inserted[0]) + 1:]
            assert not _readers(later, old) and old not in m.grads      # every reader reads the new value
            was_read = _readers(t.lifted.bwd, old) or old in t.lifted.grads
            assert _readers(later, new) or new in m.grads or not was_read


def test_drop_term_swap_residual_identity_and_in_place():
    t = _blend_target()
    ms = mutants.mutants(t, _env(t))
    by = {op: [m for m in ms if m.operator == op] for op in mutants.OPERATORS}
    add = next(e for e in t.lifted.bwd if e.prim is ad.core_prims.add_p)
    sub = next(e for e in t.lifted.bwd if e.prim is subtract_p)
    # a + b becomes a or b; a - b becomes a or -b
    dropped = [m.grads[0] for m in by["drop_term"] if m.grads[1] is t.lifted.grads[1]]
    assert set(dropped) == set(add.inputs)
    kept = [m for m in by["drop_term"] if m.grads[0] is t.lifted.grads[0]]
    assert sub.inputs[0] in [m.grads[1] for m in kept]
    assert any(e.prim is negative_p and e.inputs[0] is sub.inputs[1] for m in kept for e in _new(m, t))
    # swap: only the non-commutative subtract (multiply's and add's swaps would be equivalent)
    assert [tuple(e.inputs) for m in by["swap"] for e in _new(m, t)] == [tuple(sub.inputs[::-1])]
    # the wrong residual: x read for y or y for x (same aval), nothing else changed
    x, y = (a for a in t.lifted.args)
    for m in by["residual"]:
        (e,) = _new(m, t)
        original = t.lifted.bwd[m.bwd.index(e)]
        changed = [(a, b) for a, b in zip(original.inputs, e.inputs) if a is not b]
        assert len(changed) == 1 and set(changed[0]) <= {x, y} | set(v for f in t.lifted.fwd for v in f.outputs)
    assert by["residual"]
    # the cotangent returned unchanged
    assert sorted(m.grads.index(t.lifted.cts[0]) for m in by["identity"]) == [0, 1]
    # in place: the pullback doubles its (writable) cotangent after use
    (m,) = by["in_place"]
    ct = np.ones(3)
    _, pb = mutants.template_rule(t, m)(*t.inputs)
    pb(ct)
    assert np.all(ct == 2.0)


def test_transpose_and_forgotten_reduction():
    rng = np.random.default_rng(1)
    t = mutants.target(np.matmul, rng.standard_normal((3, 3)), rng.standard_normal((3, 3)))
    ms = [m for m in mutants.mutants(t, _env(t)) if m.operator == "transpose"]
    assert ms
    for m in ms:
        tr = [e for e in _new(m, t) if e.prim is transpose_p]
        assert len(tr) == 1 and dict(tr[0].params)["axes"] == (1, 0)
        assert tr[0].inputs[0].aval.shape == (3, 3)
    t = mutants.target(np.multiply, rng.standard_normal((3, 1)), rng.standard_normal((1, 4)))
    ms = [m for m in mutants.mutants(t, _env(t)) if m.operator == "reduction"]
    sums = [e for e in t.lifted.bwd if e.prim is sum_to_p]
    assert len(ms) == len(sums) == 2
    for m, e in zip(ms, sums):
        assert not any(f.prim is sum_to_p and f.inputs[0] is e.inputs[0] for f in m.bwd)
        assert e.inputs[0] in m.grads


def test_equivalent_mutants_are_recognised_and_the_others_caught():
    t = _blend_target()
    rows, baseline = mutants.score_target(t)
    assert baseline is None
    equivalent = [o for o in rows if o.status == "equivalent"]
    # the dropped g * 3.0: negated or doubled, it reaches no cotangent
    dead = [o for o in equivalent if o.why == "the mutated value reaches no cotangent"]
    assert {o.operator for o in dead} == {"sign", "scale"} and all("3.0" in o.site for o in dead)
    counted = [o for o in rows if o.status in ("caught", "survived")]
    assert counted and all(o.status == "caught" for o in counted), [o for o in counted if o.status != "caught"]
    # numerically equivalent: a mutant computing the same cotangents is never run through the checker
    for o in equivalent:
        assert not o.checks


def test_forgetting_the_projection_is_equivalent():
    rows, _ = mutants.score_target(mutants.target(np.multiply, np.ones((3, 1)) * 0.5, np.arange(4.0)[None]))
    forgot = [o for o in rows if o.operator == "reduction"]
    assert forgot and all(o.status == "equivalent" and "project()" in o.why for o in forgot)


def test_a_sample_of_the_registry_is_caught():
    report = mutants.run(["sin", "matmul", "max_unpool", "fmod"])
    assert report.score == 1.0 and not report.survivors and not report.baseline
    assert set(report.by_primitive()) == {"sin", "matmul", "max_unpool", "fmod"}
    # max_unpool selects by equality with x: a cotangent for x is caught by the flat-sides check
    unpool = [o for o in report.outcomes if o.primitive == "max_unpool" and o.operator == "identity"
              and o.status == "caught" and "operand 1" in o.site]
    assert unpool and all("fd.dot_product" in o.checks for o in unpool)
    # fmod's sample keeps |a| < |b|, so its divisor's term -trunc(a/b) is zero there: caught at a fresh draw
    assert any(o.primitive == "fmod" and o.status == "caught" and o.why.startswith("caught at fresh draw")
               for o in report.outcomes)


@ad.primitive
def pick(g, x, y):
    return np.where(x == y, g, 0.0)


def test_a_cotangent_for_an_operand_only_compared_for_equality_fails():
    """The check the mutants found missing: the function is flat on both sides of the point along
    x (it jumps only where x == y), so x's cotangent must be zero; the warning became a failure."""
    g, y = np.array([1.0, -2.0, 3.0]), np.array([0.5, 0.25, 2.0])
    x = np.array([0.5, 1.0, 2.0])
    with ad.using_rule(pick, lambda g, x, y: (pick(g, x, y), lambda d: (np.where(x == y, d, 0.0), d, None))):
        report = check_rule(pick, g, x, y)
    fd = report["fd.dot_product"]
    assert fd.status == "fail" and "constant on both sides" in fd.message and fd.numbers["failing_arguments"] == [1]
    right = lambda g, x, y: (pick(g, x, y), lambda d: (np.where(x == y, d, 0.0), None, None))  # noqa: E731
    assert check_rule(pick, g, x, y, rule=right)["fd.dot_product"].status == "pass"


def test_the_cli_runs_on_a_filter_and_records(capsys, tmp_path):
    assert main(["--mutants", "--only", "sin", "negative"]) == 0
    out = capsys.readouterr().out
    assert "mutation score" in out and "100.0%" in out
    doc = tmp_path / "checks.md"
    doc.write_text(f"# Checks\n\n## Mutation testing\n\n{mutants.BEGIN}\nold\n{mutants.END}\n\n## Next\n")
    assert main(["--mutants", "--only", "sin", "--record", str(doc)]) == 0
    text = doc.read_text()
    assert "old" not in text and "non-equivalent mutants caught" in text and text.endswith("## Next\n")
    assert main(["--mutants", "--only", "no_such_primitive"]) == 2


def test_a_tie_split_into_shares_not_summing_to_one_fails_at_every_seed():
    """The other check the mutants found missing: maximum's rule giving x all of a tie's
    cotangent and y half stays between the one-sided derivatives along a random direction about
    half the time; moving both operands by +1 (fd.jvp, at a kink) sees it every time."""
    def wrong(x, y):
        def pullback(g):
            tie = x == y
            return np.where(x > y, g, np.where(tie, g, 0.0)), np.where(x < y, g, np.where(tie, 0.5 * g, 0.0))
        return np.maximum(x, y), pullback
    x, y = np.array([1.0, 2.0, -1.0, 0.3]), np.array([1.0, 0.0, -1.0, 0.5])
    for seed in range(3):
        assert check_rule(np.maximum, x, y, rule=wrong, seed=seed)["fd.jvp"].status == "fail"
        assert check_rule(np.maximum, x, y, seed=seed).ok


def test_another_subgradient_at_a_kink_is_equivalent():
    (t,) = [t for t in mutants.targets(["absolute"])[0] if t.label == "absolute sample 0 kink 1"]
    rows, _ = mutants.score_target(t)
    (o,) = [o for o in rows if o.operator == "identity"]          # |x|'s cotangent g at 0: a subgradient
    assert o.status == "equivalent" and o.why == mutants.SUBGRADIENT
