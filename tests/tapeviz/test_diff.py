"""``tapeviz.diff``: two tapes aligned by scope, primitive and position (never by variable
number), what was removed, added and changed, the values that differ, and the three renderings
(text, notebook HTML, the union graph) escaped and deterministic."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest

import ad
from ad.examples import mlp_example, mlp_loss
from ad.examples.programs import rnn_example, rnn_loss
from ad.origins import Origin, OriginKind
from ad.tape import Var
from tapeviz.diffing import Change, TapeDiff, ValueDiff, compare_values, diff
from tapeviz.renderer import available, render
from tests.support import ROOT
from tests.support.needs import needs


# -- helpers ---------------------------------------------------------------------------------

def renumbered(tape, offset=1000):
    """The same tape with every variable a new object numbered ``n + offset`` (origins too):
    what a diff sees when a pass numbers its variables afresh."""
    new = {}

    def var(v):
        if v not in new:
            new[v] = Var(v.n + offset, v.aval)
        return new[v]

    def operand(x):
        return var(x) if type(x) is Var else x

    inputs = tuple(var(v) for v in tape.inputs)
    eqns = []
    for e in tape.eqns:
        ins = tuple(operand(x) for x in e.inputs)
        of = e.origin.of
        origin = Origin(e.origin.kind, var(of) if type(of) is Var and of in new else of, e.origin.rule)
        eqns.append(ad.Eqn(e.prim, ins, e.params, tuple(var(v) for v in e.outputs), e.source, origin, e.scope))
    return tape.replace(inputs=inputs, eqns=tuple(eqns), outputs=tuple(operand(x) for x in tape.outputs), meta={})


def names(eqns):
    return [repr(e.outputs[0]) for e in eqns]


def skeleton(d: TapeDiff):
    """What a diff found, without the variables' numbers."""
    return ([(e.prim.name, e.scope) for e in d.removed], [(e.prim.name, e.scope) for e in d.added],
            [(c.at, c.kind, len(c.reasons), len(c.values)) for c in d.changed], d.same, d.pairs)


@pytest.fixture(scope="module")
def optimised():
    args = mlp_example()
    gt = ad.grad_tape(mlp_loss, *args)
    return gt, ad.optimize(gt), args


# -- a tape and its optimised version ----------------------------------------------------------

def test_the_removed_equations_are_those_the_optimiser_dropped(optimised):
    gt, opt, args = optimised
    d = diff(gt, opt, args)
    # the optimiser keeps the numbers of the equations it keeps (its passes rebuild tapes with
    # the same Var objects), so here the numbers tell which equations it dropped: the oracle
    kept = {e.outputs[0].n: e for e in opt.eqns}
    assert all(gt.producers()[gt.vars[f"%{n}"]].prim is e.prim for n, e in kept.items())
    dropped = [e for e in gt.eqns if e.outputs[0].n not in kept]
    assert d.removed == dropped and len(dropped) == 8
    assert d.added == []
    assert len(d.pairs) == len(opt.eqns) == d.same + len(d.changed)
    assert all(gt.eqns[i].outputs[0].n == opt.eqns[j].outputs[0].n for i, j in d.pairs)
    # values are equal wherever equations are aligned: the changes are in operands only
    assert d.changed and all(c.kind == "changed" and not c.values for c in d.changed)
    for c in d.changed:
        ea, eb = c
        assert ea.prim is eb.prim and all(r.startswith("operand ") for r in c.reasons), c.reasons
    assert d.notes == [] and d and not d.empty


def test_the_alignment_never_reads_variable_numbers(optimised):
    gt, opt, args = optimised
    d = diff(gt, opt, args)
    again = diff(gt, renumbered(opt), args)
    assert skeleton(again) == skeleton(d)
    assert names(again.removed) == names(d.removed)          # a's own numbers
    assert str(again).count("%1") > 0 and "b %1025" in str(again)


def test_an_equation_cse_moved_to_a_common_scope_is_moved_not_removed():
    args = rnn_example(steps=3)
    gt = ad.grad_tape(rnn_loss, *args)
    d = diff(gt, ad.optimize(gt), args)
    moved = [c for c in d.changed if any(r.startswith("moved from cell#") for r in c.reasons)]
    assert moved and all(c[1].prim.name == "transpose" and c[1].scope == () for c in moved)
    assert not [c for c in d.changed if c.values]


# -- two versions of a rule ----------------------------------------------------------------------

@ad.primitive(name="diff_test_cube")
def cube(x):
    return x * x * x


@ad.rrule(cube)
def cube_rule(x):
    return cube(x), lambda dy: (3 * x * x * dy,)


def wrong_constant(x):
    return cube(x), lambda dy: (2 * x * x * dy,)


def wrong_sign(x):
    return cube(x), lambda dy: (-(3 * x * x * dy),)


def helper(x):
    return np.sin(cube(x))


def program(x):
    return np.sum(helper(x) * 2.0)


X = np.linspace(0.1, 1.0, 4)


def test_a_rule_edit_names_the_pullback_equation_that_changed_and_its_values():
    before = ad.grad_tape(program, X)
    with ad.using_rule(cube, wrong_constant):
        after = ad.grad_tape(program, X)
    d = diff(before, after, (X,))
    assert d.removed == d.added == [] and d.notes == []
    first = d.changed[0]
    ea, eb = first
    assert isinstance(first, Change) and first.kind == "changed"
    assert eb.origin.kind is OriginKind.PULLBACK and eb.origin.rule == "diff_test_cube" and eb.scope == ("helper",)
    assert first.reasons == ("operand 0: 3 -> 2",)
    # 3x vs 2x: the difference is x itself, largest at x = 1
    assert first.values == (ValueDiff(repr(ea.outputs[0]), repr(eb.outputs[0]), pytest.approx(1.0), pytest.approx(1 / 3)),)
    # what reads it reads the same operands and computes other values: listed, as values only
    rest = d.changed[1:]
    assert rest and all(c.kind == "values" and not c.reasons and c.values for c in rest)
    assert rest[-1][1].outputs[0] is after.outputs[-1]             # down to the gradient
    assert all(c[1].origin.rule == "diff_test_cube" for c in rest)
    text = str(d)
    assert "@@ helper @@" in text and "~ a " + str(ea) in text and "    operand 0: 3 -> 2" in text
    assert "max |diff| 1, max rel 0.333" in text
    # the forward section is untouched
    assert all(j >= after.n_forward for _, j in (c.at for c in d.changed))


def test_a_rule_edit_with_another_structure_adds_its_equation_in_the_scope():
    before = ad.grad_tape(program, X)
    with ad.using_rule(cube, wrong_sign):
        after = ad.grad_tape(program, X)
    d = diff(before, after, (X,))
    assert [(e.prim.name, e.scope, e.origin.kind.value) for e in d.added] == [("negative", ("helper",), "pullback")]
    assert d.removed == [] and d.notes == [f"output 1: {before.outputs[1]!r} -> {after.outputs[1]!r} do not correspond"]
    assert "+ b " + str(d.added[0]) in str(d)


def test_without_args_only_the_structure_is_compared():
    before = ad.grad_tape(program, X)
    with ad.using_rule(cube, wrong_constant):
        after = ad.grad_tape(program, X)
    d = diff(before, after)
    assert [c.reasons for c in d.changed] == [("operand 0: 3 -> 2",)] and not d.compared_values
    assert d.same == len(before.eqns) - 1


# -- two versions of a program -------------------------------------------------------------------

def version(extra: bool = False, axis: int = 0):
    def layer(x):
        y = np.tanh(x * 2.0)
        return y + 1.0 if extra else y

    def f(x):
        return np.sum(np.sum(layer(x) ** 2, axis=axis))
    return f


XS = np.arange(6.0).reshape(2, 3) / 10


def test_one_more_operation_in_a_helper_is_added_in_its_scope():
    d = diff(ad.trace(version(), XS), ad.trace(version(extra=True), XS), (XS,))
    assert [(e.prim.name, e.scope) for e in d.added] == [("add", ("layer",))] and d.removed == []
    power = d.changed[0]
    assert power[0].prim.name == "power" and power.reasons[0].startswith("operand 0: ")
    assert power.values and power.values[0].max_abs > 0
    text = str(d)
    assert text.index("@@ layer @@") < text.index("+ b ") < text.index("@@ top level @@")
    # in the gradient tapes too: forward addition, and every downstream value differs
    g = diff(ad.grad_tape(version(), XS), ad.grad_tape(version(extra=True), XS), (XS,))
    assert [(e.prim.name, e.scope) for e in g.added] == [("add", ("layer",))] and g.removed == []
    assert {c.kind for c in g.changed} == {"changed", "values"}


def test_a_changed_param_is_a_change_not_a_removal():
    d = diff(ad.trace(version(), XS), ad.trace(version(axis=1), XS), (XS,))
    assert d.removed == d.added == [] and len(d.changed) == 1
    (c,) = d.changed
    assert c.reasons == ("params: axis=(0,) keepdims=False -> axis=(1,) keepdims=False", "result: f64[3] -> f64[2]")
    assert c.values[0].max_abs is None and "shapes differ" in str(d)


# -- identical tapes -----------------------------------------------------------------------------

def test_identical_tapes_give_an_empty_diff(optimised):
    gt, _, args = optimised
    for b in (gt, ad.grad_tape(mlp_loss, *args), renumbered(gt)):
        d = diff(gt, b, args)
        assert d.empty and not d and d.same == len(gt.eqns)
        assert (d.removed, d.added, d.changed, d.notes) == ([], [], [], [])
        assert "@@" not in str(d) and "tv-diff-row" not in d._repr_html_()
        assert repr(d) == f"<TapeDiff: 0 removed, 0 added, 0 changed, {len(gt.eqns)} same>"


def test_diff_takes_tapes():
    with pytest.raises(TypeError, match="b is a ufunc .make tapes with ad.trace"):
        diff(ad.trace(np.sin, 1.0), np.sin)


def test_values_compare_like_the_checker():
    assert compare_values(np.ones(3), np.ones(3)) is None
    assert compare_values(np.array([np.nan, np.inf]), np.array([np.nan, np.inf])) is None
    assert compare_values(np.array([1.0, np.nan]), np.array([1.0, 2.0])) == (np.inf, np.inf)
    assert compare_values(np.ones(3), np.ones(3) * (1 + 1e-9)) is not None
    assert compare_values(np.ones(3), np.ones(3) * (1 + 1e-9), rtol=1e-6) is None
    assert compare_values(np.ones(2), np.ones(3)) == (None, None)
    assert compare_values(np.array([True, False]), np.array([True, True])) == (1.0, 1.0)
    assert compare_values(np.array([1j]), np.array([2j])) == (1.0, 0.5)


# -- renderings -----------------------------------------------------------------------------------

def test_the_union_graph_colours_each_kind_and_has_a_legend(optimised):
    gt, opt, args = optimised
    d = diff(gt, opt, args)
    source = d.to_graphviz().source
    assert source.count('COLOR="#dc2626" BGCOLOR="#fee2e2" STYLE="dashed"') == len(d.removed)
    assert source.count('CELLPADDING="2" COLOR="#d97706" BGCOLOR="#fef3c7"') == len(d.changed)
    assert "removed (only in a)" in source and "tape diff: 8 removed, 0 added, 5 changed, 38 same" in source
    assert 'subgraph "cluster_' in source and "<log_softmax>" in source
    nodes = {line.split('"')[1] for line in source.splitlines() if line.lstrip().startswith('"') and "->" not in line}
    assert len([n for n in nodes if n[0] in "ab"]) == len(opt.eqns) + len(d.removed)
    near = d.to_graphviz(context=0).source            # only what differs (and the inputs it reads)
    drawn = {line.split('"')[1] for line in near.splitlines() if line.lstrip().startswith('"') and "->" not in line}
    assert {n for n in drawn if n[0] in "ab"} == {f"a{gt.eqns.index(e)}" for e in d.removed} | {f"b{c.at[1]}" for c in d.changed}
    assert d.to_graphviz(labels="text").source.count('style="filled,dashed"') == len(d.removed)
    with pytest.raises(ValueError, match="labels="):
        d.to_graphviz(labels="svg")


def hostile():
    """Two versions of a program whose scope, argument key and primitive names are markup and
    DOT escapes."""
    evil = ad.primitive(name="diff_test_<i>&\"'\\N")(lambda x: x * 1.0)
    ad.rrule(evil)(lambda x: (evil(x), lambda dy: (dy * 1.0,)))

    def version(extra):
        def f(params):
            with ad.scope('<script>alert("x")</script>&amp;\\G'):
                y = evil(np.tanh(params["<b>k'</b>"]))
                y = y * 2.0 if extra else y
            return np.sum(y)
        return f
    p = {"<b>k'</b>": np.ones(2)}
    return ad.grad_tape(version(False), p), ad.grad_tape(version(True), p), (p,)


HOSTILE = hostile()
RAW = ("<script", "<b>k", "<i>", "alert(\"x\")", "k'")


def test_hostile_names_are_escaped_in_the_html():
    a, b, args = HOSTILE
    page = diff(a, b, args)._repr_html_()
    assert not any(raw in page for raw in RAW)
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;\\G" in page
    assert "diff_test_&lt;i&gt;&amp;&quot;&#x27;\\N" in page
    tags = []                                # nothing opened an element of its own
    parser = HTMLParser()
    parser.handle_starttag = lambda tag, attrs: tags.append((tag, [k for k, _ in attrs]))
    parser.feed(page)
    assert {t for t, _ in tags} == {"div", "details", "summary", "b"}
    assert {k for _, keys in tags for k in keys} == {"class", "style", "open", "data-scope"}


@needs("dot" in available(), "the system Graphviz (the wasm build has no HTML labels)")
@pytest.mark.parametrize("labels", ["html", "text"])
def test_hostile_names_are_escaped_in_the_svg(labels):
    a, b, args = HOSTILE
    d = diff(a, b, args)
    svg = render(d.to_graphviz(labels=labels), "svg").decode()
    root = ET.fromstring(svg)
    text = "".join(root.itertext())
    # shown as written in both label kinds (escaping.dot_text writes "&" as "&amp;")
    assert '<script>alert("x")</script>&amp;\\G' in text
    assert "diff_test_<i>&\"'\\N" in text and "<b>k'</b>" in text
    assert "<script" not in svg and "<b>k" not in svg


def test_the_same_diff_gives_the_same_bytes():
    def outputs():
        before = ad.grad_tape(program, X)
        with ad.using_rule(cube, wrong_sign):
            after = ad.grad_tape(program, X)
        d = diff(before, after, (X,))
        return str(d), d._repr_html_(), d.to_graphviz().source
    first, second = outputs(), outputs()
    assert first == second
    d = diff(*HOSTILE[:2], HOSTILE[2])
    assert render(d.to_graphviz(), "svg") == render(d.to_graphviz(), "svg")


def test_the_renderings_do_not_depend_on_the_hash_seed():
    code = ("import hashlib, numpy as np, ad; from tapeviz.diffing import diff;"
            "from ad.examples.programs import rnn_example, rnn_loss;"
            "args = rnn_example(steps=3); gt = ad.grad_tape(rnn_loss, *args);"
            "d = diff(gt, ad.optimize(gt), args);"
            "print(hashlib.sha256((str(d) + d._repr_html_() + d.to_graphviz().source).encode()).hexdigest())")
    runs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(runs) == 1 and len(runs.pop().strip()) == 64
