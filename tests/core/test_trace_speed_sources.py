"""What the fast recording path (issue 19) must keep exactly: every equation's source is the
user's innermost line whatever path numpy took to reach the tracer, and a literal's aval is
numpy's type for it."""
import inspect

import numpy as np

import ad
from ad.examples import mlp_example, mlp_loss


def marked_lines(fn) -> dict[str, int]:
    """``{marker: line}`` for the lines of ``fn`` that end with ``# <marker>``."""
    lines, start = inspect.getsourcelines(fn)
    return {text.rsplit("# ", 1)[1].strip(): start + i for i, text in enumerate(lines) if "# " in text}


def helper(x):
    return np.cos(x)  # helper


def program(x):
    y = x * 2.0  # operator
    y = 3.0 - y  # reflected operator
    y = -y  # unary operator
    y += x  # in-place operator
    y = np.sin(y)  # ufunc
    y = np.add(y, x, out=y)  # ufunc with out=
    y = y[1:]  # getitem
    y = helper(y)  # call
    return np.sum(y)  # function


def test_every_equation_names_the_users_innermost_line():
    tape = ad.trace(program, np.linspace(0.0, 1.0, 4))
    where = {**{m: ("program", n) for m, n in marked_lines(program).items()},
             "helper": ("helper", marked_lines(helper)["helper"])}
    expected = {"multiply": "operator", "subtract": "reflected operator", "negative": "unary operator",
                "add": "in-place operator", "sin": "ufunc", "getitem": "getitem", "cos": "helper",
                "sum": "function"}
    seen = {}
    for e in tape.eqns:
        seen.setdefault(e.prim.name, set()).add(e.source)
    for prim, marker in expected.items():
        fn, line = where[marker]
        assert f"{__file__}:{line} in {fn}" in seen[prim], (prim, seen[prim])
    # out= records an add at its own line (the two adds are on two lines)
    fn, line = where["ufunc with out="]
    assert f"{__file__}:{line} in {fn}" in seen["add"]
    assert all(s.startswith(__file__) for sources in seen.values() for s in sources)


def test_the_shipped_examples_are_user_code():
    params, x, y = mlp_example(4, (3, 5, 2), 0)
    tape = ad.trace(mlp_loss, params, x, y)
    assert {e.source.split(":")[0] for e in tape.eqns} == {inspect.getsourcefile(mlp_loss)}


def test_error_notes_name_the_users_line():
    def f(x):
        return np.reshape(x, (5,))  # bad reshape
    try:
        ad.trace(f, np.ones(4))
    except ValueError as exc:
        note = " ".join(getattr(exc, "__notes__", []))
    assert f"{__file__}:{marked_lines(f)['bad reshape']} in f" in note, note


def test_literal_avals_are_numpys():
    values = (2.0, True, 1j, 3, np.float32(2.0), np.int8(3), np.ones(2, np.float32))
    for v in values:
        tape = ad.trace(lambda x: x * v, np.ones(2))
        lit = tape.eqns[0].inputs[1]
        assert lit.aval.shape == np.shape(v) and lit.aval.dtype == np.result_type(v), (v, lit.aval)


class _OwnUfuncs:
    """An operand with its own ``__array_ufunc__`` (numpy asks it first when it is leftmost)."""
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("own", ufunc.__name__)


def test_operators_keep_numpys_order_of_overrides():
    seen = {}

    def f(x):
        seen["reflected"] = _OwnUfuncs() * x       # numpy asks _OwnUfuncs first
        return x * 2.0
    ad.trace(f, np.ones(2))
    assert seen["reflected"] == ("own", "multiply")


def looping(x):
    for _ in range(3):
        x = helper(x) * 0.5  # loop
        x = -x  # next line
    return x


def test_sources_follow_every_line_of_a_loop():
    """The last line's text is kept for the next equation: it must change with the line and the
    function (here a helper called from the loop, then the loop's own lines)."""
    tape = ad.trace(looping, np.linspace(0.0, 1.0, 4))
    lines = marked_lines(looping)
    loop, nxt, inner = (f"{__file__}:{lines['loop']} in looping", f"{__file__}:{lines['next line']} in looping",
                        f"{__file__}:{marked_lines(helper)['helper']} in helper")
    assert [e.source for e in tape.eqns] == [inner, loop, nxt] * 3
