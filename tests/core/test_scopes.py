"""Scopes (``eqn.scope``): the user's calls between the traced function and each operation,
numbered per trace, named explicitly by ``ad.scope``, and the scope tree of a tape."""
import numpy as np
import pytest

import ad
from ad.examples.programs import mlp_example, mlp_loss, rnn_example, rnn_loss


def scopes(tape) -> list:
    return [e.scope for e in tape.eqns]


def distinct(tape) -> list:
    """The scopes of a tape's equations, each once, in order of first appearance."""
    return list(dict.fromkeys(scopes(tape)))


def sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def cell(h, x):
    return np.tanh(h * 0.5 + sig(x))


class Layer:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        return np.tanh(x * self.w)

    def __call__(self, x):
        return self.forward(x)


X = np.linspace(-1.0, 1.0, 3)


def test_a_line_of_the_traced_function_has_the_empty_scope():
    tape = ad.trace(lambda x: np.sum(np.sin(x)), X)
    assert scopes(tape) == [(), ()]


def test_nested_helpers_give_their_chain_outermost_first():
    def f(x):
        return np.sum(cell(x, x))
    assert distinct(ad.trace(f, X)) == [("cell",), ("cell", "sig"), ()]


def test_calls_of_a_helper_in_a_loop_are_siblings_numbered_in_order():
    def f(x):
        h = x
        for _ in range(3):
            h = cell(h, x)
        return np.sum(h)
    tape = ad.trace(f, X)
    tops = [s[0] for s in distinct(tape) if s]
    assert list(dict.fromkeys(tops)) == ["cell#1", "cell#2", "cell#3"]
    assert ("cell#2", "sig") in scopes(tape)
    assert [c.path for c in tape.scopes().children] == [("cell#1",), ("cell#2",), ("cell#3",)]


def test_two_call_sites_of_one_name_are_numbered_too():
    """Two calls of one name under one parent are two scopes, never merged into one."""
    def f(x):
        a = sig(x)
        b = sig(a * 2.0)
        return np.sum(a + b)
    tape = ad.trace(f, X)
    assert [e.scope for e in tape.eqns if e.scope] == [("sig#1",)] * 4 + [("sig#2",)] * 4


def test_numbering_is_per_parent():
    def twice(x):
        return sig(sig(x))

    def f(x):
        return np.sum(twice(x) + twice(x))
    found = set(scopes(ad.trace(f, X)))
    assert {("twice#1", "sig#1"), ("twice#1", "sig#2"), ("twice#2", "sig#1"), ("twice#2", "sig#2")} <= found


def test_methods_are_named_class_dot_method():
    layer = Layer(0.5)
    tape = ad.trace(lambda x: np.sum(layer(x)), X)
    assert distinct(tape) == [("Layer.__call__", "Layer.forward"), ()]


def test_a_method_of_a_class_defined_in_a_function_drops_the_enclosing_function():
    def make():
        class Block:
            def run(self, x):
                return np.exp(x)
        return Block()
    block = make()
    assert distinct(ad.trace(lambda x: np.sum(block.run(x)), X)) == [("Block.run",), ()]


def test_lambdas_and_nested_functions_by_their_own_name():
    square = lambda x: x * x    # noqa: E731

    def f(x):
        def inner(y):
            return np.sin(y)
        return np.sum(inner(square(x)))
    assert distinct(ad.trace(f, X)) == [("<lambda>",), ("inner",), ()]


def test_recursion_nests_and_numbers_siblings():
    def power(x, n):
        return x if n == 1 else x * power(x, n - 1)

    def tree(x, n):
        return np.sin(x) if n == 0 else tree(x, n - 1) + tree(x * 2.0, n - 1)

    assert distinct(ad.trace(lambda x: np.sum(power(x, 3)), X)) == [("power", "power"), ("power",), ()]
    found = set(scopes(ad.trace(lambda x: np.sum(tree(x, 2)), X)))
    assert ("tree", "tree#1", "tree#2") in found and ("tree", "tree#2", "tree#1") in found


def test_a_generator_is_one_call_however_often_it_resumes():
    def steps(x):
        for k in range(3):
            yield np.sin(x * float(k))

    def f(x):
        total = 0.0
        for y in steps(x):
            total = total + np.cos(y)      # the consumer's own lines: not in the generator
        return np.sum(total)
    tape = ad.trace(f, X)
    assert {e.scope for e in tape.eqns if e.prim.name in ("sin", "multiply")} == {("steps",)}
    assert {e.scope for e in tape.eqns if e.prim.name == "cos"} == {()}


def test_comprehensions_are_not_calls_of_their_own():
    def f(x):
        parts = [np.sin(x * k) for k in (1.0, 2.0)]
        total = sum(np.cos(p) for p in parts)
        return np.sum(total + sum({k: np.exp(x) for k in "a"}.values()))
    assert set(scopes(ad.trace(f, X))) == {()}


def test_the_machinery_records_in_the_scope_of_the_line_that_caused_it():
    """Broadcasts, sum_to in a pullback, guards of a branch, and a rule's own equations."""
    def helper(x, b):
        y = x[:, None] + b               # broadcasting
        if np.sum(y) > -100.0:           # a guard
            y = y * 2.0
        return np.sum(y, axis=0)

    def f(x, b):
        return np.sum(helper(x, b))
    x, b = X, np.ones(4)
    tape = ad.trace(f, x, b)
    assert {e.scope for e in tape.eqns if e.prim.name != "sum" or e.kwargs.get("axis") == 0} == {("helper",)}
    assert any(e.prim.name == "guard" and e.scope == ("helper",) for e in tape.eqns)
    gt = ad.grad_tape(f, x, b)
    assert any(e.prim.name == "sum_to" and e.origin.is_backward and e.scope == ("helper",) for e in gt.eqns)


def test_explicit_scopes_with_blocks_and_decorators():
    @ad.scope("norm")
    def normalise(x):
        return x / np.sum(x * x)

    @ad.scope
    def plain(x):
        return np.exp(x)

    def f(x):
        with ad.scope("encoder"):
            h = np.tanh(x)
            with ad.scope("inner"):
                h = normalise(h)
        return np.sum(plain(h))
    assert distinct(ad.trace(f, X)) == [("encoder",), ("encoder", "inner", "norm"), ("plain",), ()]
    assert normalise.__name__ == "normalise"      # decorated functions are returned unchanged


def test_an_explicit_scope_entered_in_a_loop_is_numbered():
    block = ad.scope("block")

    def f(x):
        for _ in range(2):
            with block:
                x = np.sin(x)
        return np.sum(x)
    assert distinct(ad.trace(f, X)) == [("block#1",), ("block#2",), ()]


def test_a_decorated_traced_function_appears_as_its_scope():
    @ad.scope("model")
    def model(x):
        return np.sum(np.sin(x))
    assert set(scopes(ad.trace(model, X))) == {("model",)}


def test_scopes_opened_outside_the_trace_do_not_appear():
    with ad.scope("outside"):
        tape = ad.trace(lambda x: np.sum(sig(x)), X)
    assert set(scopes(tape)) == {("sig",), ()}


def test_scope_names_are_checked():
    with pytest.raises(TypeError, match="non-empty name"):
        ad.scope("")
    with pytest.raises(TypeError, match="no code of its own"):
        ad.scope("x")(np.sin)
    with pytest.raises(TypeError, match="no code of its own"):
        ad.scope(Layer)


def test_helpers_inside_ad_and_numpy_never_appear():
    """np.linalg.norm, np.cov, ad.nn.softmax, ad.scipy.stats run Python code of numpy and ad:
    no scope of theirs."""
    from ad.scipy.stats import norm

    def f(x):
        return (np.linalg.norm(x) + np.sum(ad.nn.softmax(x)) + np.sum(np.cov(np.stack([x, x * x])))
                + np.sum(norm.logpdf(x)))
    assert set(scopes(ad.trace(f, X))) == {()}


def test_a_nested_grad_records_in_the_scope_of_its_call():
    def inner(x):
        return ad.grad(lambda y: np.sum(sig(y)))(x)

    def f(x):
        return np.sum(inner(x))
    tape = ad.trace(f, X)
    assert {s[0] for s in scopes(tape) if s} == {"inner"}


# -- the backward mirrors the forward ---------------------------------------------------------

def test_the_gradient_tape_of_the_rnn_mirrors_its_calls():
    gt = ad.grad_tape(rnn_loss, *rnn_example(steps=5))
    assert_mirrored(gt)
    tree = gt.scopes()
    assert [c.path for c in tree.children] == [(f"cell#{k}",) for k in range(1, 6)]
    for c in tree.children:
        assert len(c.forward) == len(tree.children[0].forward) and c.backward
        assert c.residual_bytes > 0
    # the parameters' fan-in sums (every cell reads Wh) are in the traced function's scope
    sums = [e for e in gt.eqns if e.origin.kind is ad.OriginKind.ACCUMULATE]
    assert sums and {e.scope for e in sums if e.origin.of in gt.inputs} == {()}


def test_the_mlp_has_one_scope_per_layer():
    gt = ad.grad_tape(mlp_loss, *mlp_example())
    assert [c.path for c in gt.scopes().children] == [("layer#1",), ("layer#2",), ("log_softmax",)]
    assert_mirrored(gt)


def test_scopes_survive_the_optimiser_and_cse_keeps_the_common_prefix():
    gt = ad.grad_tape(rnn_loss, *rnn_example(steps=4))
    opt = ad.optimize(gt)
    assert set(scopes(opt)) <= set(scopes(gt)) | {()}
    assert {s[0] for s in scopes(opt) if s} == {f"cell#{k}" for k in range(1, 5)}

    def f(x):
        with ad.scope("a"):
            with ad.scope("left"):
                p = np.exp(x)
            with ad.scope("right"):
                q = np.exp(x)         # the same equation: CSE merges it into the first
        return np.sum(p * q)
    merged = ad.optimize(ad.trace(f, X))
    assert [e.scope for e in merged.eqns if e.prim.name == "exp"] == [("a",)]


def test_tangent_equations_carry_their_forward_equations_scope():
    from ad.forward_mode.build import build_linearized
    from ad.tracing import input_values
    args = rnn_example(steps=3)
    primal = ad.trace(rnn_loss, *args)
    lin = build_linearized(primal, input_values(primal, args), list(range(len(primal.inputs))))
    assert_tangents_mirrored(lin.forward, lin.tangent)
    assert {e.scope[0] for e in lin.tangent.eqns if e.scope} == {"cell#1", "cell#2", "cell#3"}


def test_the_scope_tree_of_a_tape():
    def f(x):
        h = cell(x, x)
        return np.sum(cell(h, x))
    gt = ad.grad_tape(f, X)
    root = gt.scopes()
    assert root.path == () and root.name == ""
    assert [c.path for c in root.children] == [("cell#1",), ("cell#2",)]
    one = root.find("cell#1/sig")
    assert one.path == ("cell#1", "sig") and root.find(("cell#2",)).children[0].name == "sig"
    assert all(gt.eqns[i].scope[:2] == ("cell#1", "sig") for i in one.forward + one.backward)
    assert sorted(root.equations) == list(range(len(gt.eqns)))
    assert root.find("cell#1").residual_bytes >= one.residual_bytes > 0
    with pytest.raises(KeyError, match="cell#3"):
        root.find("cell#3")
    assert [s.path for s in root.walk()] == [(), ("cell#1",), ("cell#1", "sig"), ("cell#2",), ("cell#2", "sig")]


# -- registry-wide: every rule's backward and tangent equations mirror their forward's ------------

def producers(eqns) -> dict:
    return {v: e for e in eqns for v in e.outputs}


def assert_mirrored(gt) -> None:
    """Every equation of a gradient tape is in the scope of the user's equation it comes from:
    a rule's primal body and pullback in its instance's, a fan-in sum in its variable's producer's
    (an input's: the traced function's), the seed in the traced function's."""
    made = producers(gt.eqns[:gt.n_forward])
    kinds = ad.OriginKind
    for e in gt.eqns:
        o = e.origin
        if o.kind is kinds.SEED:
            assert e.scope == (), e
        elif o.of is not None:
            owner = made.get(o.of)
            expected = owner.scope if owner is not None else ()
            assert e.scope == expected, f"{e} ({o.describe()}): scope {e.scope}, its forward's {expected}"


def assert_tangents_mirrored(forward, tangent) -> None:
    made = producers(forward.eqns)
    for e in list(forward.eqns) + list(tangent.eqns):
        o = e.origin
        if o.kind.phase == "tangent" and o.kind is not ad.OriginKind.TANGENT_ZEROS and o.of in made:
            assert e.scope == made[o.of].scope, f"{e} ({o.describe()})"


def restamped(tape):
    """``tape`` with a scope of its own on every equation, nested two deep: what the mirror is
    checked against (the user's program has no helpers here)."""
    return tape.replace(eqns=tuple(e.with_scope((f"part#{i % 3}", f"op#{i}")) for i, e in enumerate(tape.eqns)))


def _registry_calls():
    from ad.samples import draw
    from tests.support.cases import CASES, floats, weighted, weights
    from tests.support.nn_specs import CASES as NN_CASES
    rng = np.random.default_rng(0)
    for case in CASES:
        xs = case.inputs(case.sample.shapes[-1], rng)
        if floats(xs):
            yield case.name, weighted(case.fn, weights(case.fn(*xs), np.random.default_rng(1))), xs, floats(xs)
    for case in NN_CASES:
        xs = draw(case.args, rng)
        if floats(xs):
            yield f"{case.of}[{case.setting}]", weighted(case.fn, weights(case.fn(*xs), np.random.default_rng(1))), xs, floats(xs)


def test_every_rule_mirrors_scopes_in_reverse_and_forward_mode():
    from ad.forward_mode.build import build_linearized
    from ad.reverse_mode.build import build
    from ad.tracing import input_values
    checked = 0
    for name, loss, xs, argnums in _registry_calls():
        primal = restamped(ad.trace(loss, *xs))
        values = input_values(primal, tuple(xs))
        wrt = [i for i in argnums if primal.inputs[i].aval.is_float]
        gt = build(primal, values, wrt)
        try:
            assert_mirrored(gt)
        except AssertionError as exc:
            raise AssertionError(f"{name}: {exc}") from None
        try:
            lin = build_linearized(primal, values, wrt)
        except ad.NonDifferentiableError:
            continue             # no pushforward (tests/forward_mode names these)
        try:
            assert_tangents_mirrored(lin.forward, lin.tangent)
        except AssertionError as exc:
            raise AssertionError(f"{name} (forward mode): {exc}") from None
        checked += 1
    assert checked > 300


def test_generated_programs_mirror_scopes():
    from hypothesis import given

    from ad.reverse_mode.build import build
    from ad.tracing import input_values
    from tests.support.generated_programs import GENERATED, SETTINGS, build as build_program, program_data, scalar

    @SETTINGS
    @given(GENERATED)
    def check(program):
        x0, x1, _, _ = program_data(0)
        f = scalar(build_program(program, np), np)
        primal = restamped(ad.trace(f, x0, x1))
        gt = build(primal, input_values(primal, (x0, x1)), [0, 1])
        assert_mirrored(gt)
        assert_mirrored_optimised(ad.optimize(gt), primal)
    check()


def assert_mirrored_optimised(gt, primal) -> None:
    """After optimisation an equation may be shared (CSE: a common prefix), never moved to a
    scope that is not one of the program's or a prefix of one."""
    allowed = {e.scope[:k] for e in primal.eqns for k in range(len(e.scope) + 1)}
    assert {e.scope for e in gt.eqns} <= allowed
