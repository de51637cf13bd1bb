"""The debugger's diff mode (``tapeviz/debugger/diff_pane.py``): ``show_diff`` compares the
session's tape with ``ad.optimize`` of it, with another version of a rule, or with another
debugger's tape; the view receives the pane (summary, entries, the union graph's DOT); a click on
an entry of the session's tape moves the cursor there; every name is escaped; a static page
embeds the diff shown, or says why it has none."""
from html.parser import HTMLParser

import numpy as np
import pytest

import ad
import tapeviz
from ad.examples.programs import rnn_example, rnn_loss
from ad.origins import OriginKind
from tapeviz.debugger import page
from tapeviz.debugger.diff_pane import CONTEXT, CONTEXT_FROM, NO_DIFF, NOT_ON_PAGE, OPTIMIZED
from tapeviz.diffing import LOOKS, TapeDiff
from tapeviz.escaping import html_text
from tapeviz.renderer import available

from tests.support.debug_programs import answers, click
from tests.support.needs import needs


def program(x, w, v):
    unused = np.exp(v) * 3.0                  # dead: nothing reads it (and v's gradient is a zero)
    y = np.sin(x * w)
    return np.sum(2.0 * y + 3.0 * np.tanh(y) + np.sin(x * w))     # x * w and its sine twice


X, W = np.linspace(0.1, 1.0, 4), np.full(4, 0.5)
ARGS = (X, W, X)


@pytest.fixture
def dbg():
    return tapeviz.debug(program, *ARGS, argnums=(0, 2))


class Tags(HTMLParser):
    """The elements and attribute names of a piece of HTML, and its rows' ``data-diff-eqn``."""

    def __init__(self, markup: str):
        super().__init__()
        self.tags, self.attrs, self.eqns = set(), set(), []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs |= {k for k, _ in attrs}
        self.eqns += [int(v) for k, v in attrs if k == "data-diff-eqn"]


# -- the tape and ad.optimize of it ----------------------------------------------------------------

def test_the_default_diff_is_with_the_optimised_tape(dbg):
    gt = dbg.model.gt
    d = dbg.show_diff()
    assert isinstance(d, TapeDiff) and dbg.diff is d and d.a is gt and d.compared_values
    opt = ad.optimize(gt)
    assert str(d) == str(tapeviz.diff(gt, opt, ARGS)) and len(d.pairs) == len(opt.eqns) - len(d.added)
    removed = [str(e) for e in d.removed]
    assert {"%3:f64[4] = exp %2", "%4:f64[4] = multiply %3 3.0"} <= set(removed)      # the dead equations
    assert "%11:f64[4] = multiply %0 %1" in removed and "%12:f64[4] = sin %11" in removed    # the repeats
    assert "%15:f64[] = full dtype=f64 fill_value=1 shape=()" in removed                 # the seed, folded
    assert [(e.prim.name, e.origin.kind) for e in d.added] == [("add", OriginKind.PULLBACK)]   # factored
    assert {c.kind for c in d.changed} == {"changed"} and any(c.values for c in d.changed)
    assert (len(d.removed), len(d.added), len(d.changed)) == (12, 1, 6)
    part = dbg._diff
    assert part["shown"] and part["about"] == OPTIMIZED and part["summary"] == d.summary()
    assert part["dot"] == d.to_graphviz().source                  # small: the whole union graph
    head = 'data-removed="12" data-added="1" data-changed="6" data-same="11"'
    assert head in part["html"] and "values compared on this session" in part["html"]


def test_the_entries_are_coloured_as_the_graph_and_name_the_sessions_equations(dbg):
    d = dbg.show_diff()
    markup = dbg._diff["html"]
    for kind in ("removed", "added", "changed"):
        _, frame, background, legend = LOOKS[kind]
        rows = markup.count(f'data-kind="{kind}" style="border-color:{frame};background:{background}"')
        assert rows == len(getattr(d, kind)), kind
        assert frame in dbg._diff["dot"] and legend in markup
    # each row of a's equations names it; an added one (only in b) names none
    removed = {d.a.eqns.index(e) for e in d.removed}
    changed = {c.at[0] for c in d.changed}
    assert sorted(Tags(markup).eqns) == sorted(removed | changed)
    assert markup.count("only in b: not an equation of this session") == len(d.added)
    # a change lists its reasons and its values' difference under its two lines
    c = next(c for c in d.changed if c.values)
    assert f'<div class="tv-diff-why">{html_text(c.values[0])}</div>' in markup
    # the graph's nodes: a's removed equations and b's aligned ones stand for the session's
    nodes = dbg._diff["nodes"]
    assert {nodes[f"a{i}"] for i in removed} == removed
    assert all(nodes[f"b{j}"] == i for i, j in d.pairs) and len(nodes) == len(removed) + len(d.pairs)


def test_a_large_diff_draws_what_differs_and_lists_it_by_call():
    dbg = tapeviz.debug(rnn_loss, *rnn_example(steps=8))
    d = dbg.show_diff()
    assert len(d.a.eqns) + len(d.b.eqns) >= CONTEXT_FROM
    assert dbg._diff["dot"] == d.to_graphviz(context=CONTEXT).source != d.to_graphviz().source
    assert "only what differs and 2 steps around it" in dbg._diff["html"]
    moved = next(c for c in d.changed if c.reasons[0].startswith("moved from cell#"))   # CSE: to the top level
    assert f"<div class=\"tv-diff-why\">{moved.reasons[0]}</div>" in dbg._diff["html"]
    assert "@@ cell#" in dbg._diff["html"]
    click(dbg, "diff_goto", eqn=moved.at[0])
    assert dbg.scope == moved[0].scope and dbg.selected == repr(moved[0].outputs[0])


# -- two versions of a rule --------------------------------------------------------------------------

@ad.primitive(name="debugger_diff_cube")
def cube(x):
    return x * x * x


@ad.rrule(cube)
def cube_rule(x):
    return cube(x), lambda dy: (3 * x * x * dy,)


def cube_wrong(x):
    return cube(x), lambda dy: (2 * x * x * dy,)


def cubic(x):
    return np.sum(np.sin(cube(x)) * 2.0)


def test_a_diff_of_two_rule_versions_names_the_edited_pullback():
    x = np.linspace(0.1, 1.0, 4)
    with ad.using_rule(cube, cube_wrong):
        wrong = tapeviz.debug(cubic, x)
    right = tapeviz.debug(cubic, x)
    d = right.show_diff(wrong)                     # another debugger
    assert right._diff["about"] == "another debugger's tape" and d.b is wrong.model.gt
    first = d.changed[0]
    assert first.reasons == ("operand 0: 3 -> 2",) and first[1].origin.rule == "debugger_diff_cube"
    assert first.values[0].max_abs == pytest.approx(1.0)          # 3x^2 - 2x^2 at x = 1
    assert d.removed == d.added == [] and {c.kind for c in d.changed[1:]} == {"values"}
    markup = right._diff["html"]
    assert markup.count('data-kind="values"') == len(d.changed) - 1
    assert "operand 0: 3 -&gt; 2" in markup and "max |diff| 1, max rel 0.333" in markup
    # a tape works as well: the same diff
    with ad.using_rule(cube, cube_wrong):
        tape = ad.grad_tape(cubic, x)
    again = right.show_diff(tape)
    assert str(again) == str(d) and right._diff["about"] == "the GradTape passed to show_diff"


def test_a_tape_with_other_inputs_is_compared_by_structure_alone(dbg):
    other = ad.grad_tape(lambda x: np.sum(np.sin(x)), np.ones(3))
    d = dbg.show_diff(other)
    assert not d.compared_values and "values not compared: b takes other inputs" in dbg._diff["html"]


def test_other_of_the_wrong_kind_is_refused_saying_what_to_pass(dbg):
    for other in (3, program, "%3"):
        with pytest.raises(TypeError, match="pass an ad.Tape or ad.GradTape .* another debugger .* nothing "
                                            "for the tape after ad.optimize"):
            dbg.show_diff(other)
    assert dbg.diff is None and dbg._diff == NO_DIFF


# -- the pane's state ----------------------------------------------------------------------------------

def test_show_and_hide_and_the_views_toggle(dbg):
    assert dbg.diff is None and dbg._diff == NO_DIFF              # the toggle offers ad.optimize
    click(dbg, "diff", on=True, seq=1, view="v")                  # the view's toggle: the default diff
    d = dbg.diff
    assert d is not None and dbg._diff["shown"] and dbg._frame["seq"] == 1
    dbg.hide_diff()
    assert dbg.diff is None and dbg._diff == {"shown": False, "about": OPTIMIZED}
    click(dbg, "diff", on=True)                                   # shown again, not computed again
    assert dbg.diff is d and dbg._diff["shown"]
    click(dbg, "diff", on=False)
    assert dbg.diff is None and not dbg._diff["shown"]
    other = ad.grad_tape(program, *ARGS, argnums=(0, 2))
    dbg.show_diff(other)
    dbg.hide_diff()                                               # the toggle says what it shows again
    assert dbg._diff == {"shown": False, "about": "the GradTape passed to show_diff"}
    assert dbg.step == 0 and dbg.selected is None                 # the diff never moved the cursor


def test_stepping_works_while_the_pane_is_open(dbg):
    dbg.show_diff()
    part = dbg._diff
    dbg.next()
    dbg.select("%6")
    assert dbg.step == 1 and dbg._diff is part and dbg.diff is not None


def test_a_click_on_an_entry_moves_the_cursor_to_its_equation(dbg):
    d = dbg.show_diff()
    m = dbg.model
    for i in Tags(dbg._diff["html"]).eqns:
        click(dbg, "diff_goto", eqn=i, seq=i + 1, view="v")
        assert dbg.step == m.step_of(i) and dbg.selected == repr(m.eqns[i].outputs[0])
        step = dbg._frame["step"]
        assert step["start"] <= i < step["stop"] and dbg._frame["seq"] == i + 1
    dead = d.a.eqns.index(d.removed[0])            # a graph node of a's: its number in the session
    click(dbg, "diff_goto", eqn=dbg._diff["nodes"][f"a{dead}"])
    assert dbg.current == repr(m.eqns[dead].outputs[0]) and dbg.message == ""
    click(dbg, "diff_goto", eqn=len(m.eqns))
    assert dbg.message == f"equation {len(m.eqns)} is not in this session's tape"


def test_forward_mode_diffs_the_linearization_with_its_optimised_version():
    jvp = tapeviz.debug_jvp(program, ARGS, (np.ones(4), None, None))
    d = jvp.show_diff()
    assert d.a is jvp.model.gt and d.compared_values        # run on its primal and tangent inputs
    # linearize drops the dead equation itself; the optimiser merges the repeated sine's pushforward
    assert [str(e) for e in d.removed] == ["%27:f64[4] = multiply %16 %17"] and not d.added
    (change,) = d.changed
    click(jvp, "diff_goto", eqn=change.at[0])
    assert jvp.current == "%28" and jvp.selected == "%28" and jvp.phase_line.startswith("tangent")


@needs("dot" in available(), "the system Graphviz (the kernel draws where the browser cannot)")
def test_the_kernel_draws_the_diff_for_a_view_without_graphviz(dbg, monkeypatch):
    sent = answers(dbg, monkeypatch)
    dbg.show_diff()
    click(dbg, "svg", dot=dbg._diff["dot"])
    click(dbg, "svg", dot=dbg._dot)
    diff_svg, pane_svg = sent[0]["svg"], sent[1]["svg"]
    assert diff_svg.startswith("<svg") and "tape diff: 12 removed" in diff_svg
    assert pane_svg.startswith("<svg") and "tape diff" not in pane_svg


# -- escaping --------------------------------------------------------------------------------------

def hostile():
    """A debugger whose scope, argument key and primitive names are markup, diffed with another
    version of its program."""
    evil = ad.primitive(name="dbg_diff_<i>&\"'\\N")(lambda x: x * 1.0)
    ad.rrule(evil)(lambda x: (evil(x), lambda dy: (dy * 1.0,)))

    def version(extra):
        def f(params):
            with ad.scope('<script>alert("x")</script>&amp;\\G'):
                y = evil(np.tanh(params["<b>k'</b>"]))
                y = y * 2.0 if extra else y
            return np.sum(y)
        return f
    p = {"<b>k'</b>": np.ones(2)}
    return tapeviz.debug(version(False), p), ad.grad_tape(version(True), p)


def test_hostile_names_are_escaped_in_the_pane():
    dbg, other = hostile()
    d = dbg.show_diff(other)
    assert d.added and d.changed
    markup = dbg._diff["html"]
    assert not any(raw in markup for raw in ("<script", "<b>k", "<i>", 'alert("x")', "k'"))
    assert "@@ &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;amp;\\G @@" in markup
    assert "dbg_diff_&lt;i&gt;&amp;&quot;&#x27;\\N" in markup
    tags = Tags(markup)                             # nothing opened an element or attribute of its own
    assert tags.tags == {"div", "b", "span", "button"}
    assert tags.attrs == {"class", "style", "title", "type", "data-kind", "data-diff-eqn", "data-state", "data-removed",
                          "data-added", "data-changed", "data-same"}
    assert "<script" not in dbg._diff["dot"] and "&lt;script&gt;" in dbg._diff["dot"]


# -- static pages --------------------------------------------------------------------------------------

def test_a_static_page_embeds_the_diff_shown_once(dbg, tmp_path):
    assert page.session(dbg)["diff"] == {"offline": NOT_ON_PAGE}     # the page's toggle is disabled
    dbg.show_diff()
    data = page.session(dbg)
    assert data["diff"] == dbg._diff and data["diff"]["shown"]
    path = dbg.to_html(tmp_path / "diff.html")
    embedded = page.unpack(path.read_text().split('class="tv-session">')[1].split("</script>")[0])
    assert embedded["diff"]["dot"] == dbg._diff["dot"] and embedded["diff"]["html"] == dbg._diff["html"]
    dbg.hide_diff()
    assert page.session(dbg)["diff"] == {"offline": NOT_ON_PAGE}
