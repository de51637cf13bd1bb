"""Scopes in saved files (schema version 2): each equation's scope comes back; a scope is written
once, in the table ``scopes``, however many equations it holds; files of version 1 (no scopes)
load with every scope ``()``; a bad scope is refused naming where it is."""
import copy
import json
import pathlib

import numpy as np
import pytest

import ad
from ad.examples.programs import mlp_example, mlp_loss, rnn_example, rnn_loss
from ad.serialize import NotSerializableError, TapeFormatError, dumps, loads
from ad.tape import Tape
from tests.support.serialize_cases import assert_same_tape

BEFORE_THE_MOVE = pathlib.Path(__file__).parent / "written_before_the_move"


def round_trip(tape):
    back = loads(dumps(tape))
    assert_same_tape(tape, back)            # (compares every equation's scope)
    return back


@pytest.mark.parametrize("program", ["mlp", "rnn"])
def test_gradient_tapes_keep_their_scopes(program):
    loss, example = {"mlp": (mlp_loss, mlp_example), "rnn": (rnn_loss, rnn_example)}[program]
    gt = ad.grad_tape(loss, *example())
    assert len({e.scope for e in gt.eqns}) > 2
    back = round_trip(gt)
    assert [e.scope for e in back.eqns] == [e.scope for e in gt.eqns]
    assert [s.path for s in back.scopes().walk()] == [s.path for s in gt.scopes().walk()]
    for t in (ad.optimize(gt), gt.forward, gt.backward, *ad.partition(gt)):
        round_trip(t)


def test_each_scope_is_written_once_and_loaded_as_one_tuple():
    gt = ad.grad_tape(rnn_loss, *rnn_example())
    obj = json.loads(dumps(gt))
    distinct = {e.scope for e in gt.eqns} - {()}
    assert sorted(map(tuple, obj["scopes"])) == sorted(distinct)
    assert all(("scope" in item) == bool(e.scope) for item, e in zip(obj["eqns"], gt.eqns))
    back = loads(json.dumps(obj))
    first = {}
    for e in back.eqns:
        assert first.setdefault(e.scope, e.scope) is e.scope     # shared, not one tuple per equation


def _deep(n_scopes=40, per_scope=250):
    """10,000 equations in 40 scopes three calls deep, with long names."""
    def f(x):
        for k in range(n_scopes):
            with ad.scope("encoder_stack_of_transformer_blocks"):
                with ad.scope(f"residual_block_number_{k:02d}_with_a_long_name"):
                    with ad.scope("feed_forward_sublayer"):
                        for _ in range(per_scope // 2):
                            x = np.tanh(x) * 0.5
        return x
    return ad.trace(f, np.ones(3))


def test_a_long_tape_does_not_repeat_its_scopes():
    tape = _deep()
    assert len(tape.eqns) == 10_000 and len({e.scope for e in tape.eqns}) == 40
    with_scopes = dumps(tape)
    without = dumps(Tape(tape.inputs, tuple(e.with_scope(()) for e in tape.eqns), tape.outputs,
                         input_names=tape.input_names, in_tree=tape.in_tree, out_tree=tape.out_tree))
    assert with_scopes.count("encoder_stack_of_transformer_blocks") == 40
    assert with_scopes.count("feed_forward_sublayer") == 40
    per_equation = (len(with_scopes) - len(without)) / len(tape.eqns)
    assert per_equation < 16, per_equation          # ', "scope": 17' per equation, the table once
    back = loads(with_scopes, check_shapes=False)
    assert [e.scope for e in back.eqns] == [e.scope for e in tape.eqns]


# -- version 1 --------------------------------------------------------------------------------

def test_files_of_version_1_load_with_empty_scopes():
    """The files saved before the move (issue 28) are version 1: they load, every scope ()."""
    names = sorted(BEFORE_THE_MOVE.glob("*.tape.json"))
    assert len(names) >= 5
    for path in names:
        assert json.loads(path.read_text())["version"] == 1
        tape = ad.load(path)
        assert tape.eqns and all(e.scope == () for e in tape.eqns), path.name
        assert [s.path for s in tape.scopes().walk()] == [()]


def _as_version_1(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj["version"] = 1
    del obj["scopes"]
    for item in obj["eqns"]:
        item.pop("scope", None)
    return obj


def test_a_version_1_document_of_a_scoped_tape_loads_unscoped_and_runs():
    args = mlp_example()
    gt = ad.grad_tape(mlp_loss, *args)
    back = loads(json.dumps(_as_version_1(json.loads(dumps(gt)))))
    assert all(e.scope == () for e in back.eqns)
    assert str(back) == str(gt)
    value, grads = back(*args)
    want_value, want_grads = gt(*args)
    assert value == want_value
    for k in want_grads:
        np.testing.assert_array_equal(grads[k], want_grads[k])


# -- refused ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good():
    return json.loads(dumps(ad.grad_tape(mlp_loss, *mlp_example())))


def refused(obj, *fragments):
    with pytest.raises(TapeFormatError) as info:
        loads(json.dumps(obj))
    for frag in fragments:
        assert frag in str(info.value), str(info.value)
    return str(info.value)


def edited(good, fn):
    obj = copy.deepcopy(good)
    fn(obj)
    return obj


def _first_scoped(obj) -> int:
    return next(i for i, item in enumerate(obj["eqns"]) if "scope" in item)


@pytest.mark.parametrize("entry, what", [
    (["layer#1", 3], "[\"layer#1\", 3]"), ("layer#1", '"layer#1"'), ([], "[]"), ([""], '[""]'),
    ([["a"]], '[["a"]]'), ({"scope": ["a"]}, '{"scope"'), (None, "null")])
def test_a_bad_scope_entry_is_refused_naming_its_equation(good, entry, what):
    i = _first_scoped(good)
    k = good["eqns"][i]["scope"]
    msg = refused(edited(good, lambda o: o["scopes"].__setitem__(k, entry)),
                  f"scopes[{k}] (the scope of eqns[{i}])", "non-empty list of non-empty strings")
    assert what in msg


@pytest.mark.parametrize("index", [-1, 99, 1.0, True, "0", [0], None])
def test_a_bad_scope_index_is_refused_naming_the_equation(good, index):
    i = _first_scoped(good)
    refused(edited(good, lambda o: o["eqns"][i].update(scope=index)), f"eqns[{i}].scope",
            "index of its entry in \"scopes\"")


def test_the_scope_table_is_checked_by_version(good):
    refused(edited(good, lambda o: o["scopes"].clear()), "eqns[", ".scope", "the table is empty")
    refused(edited(good, lambda o: o.update(scopes={"0": ["a"]})), "scopes: expected a list")
    refused(edited(good, lambda o: o.pop("scopes")), "missing ['scopes']")
    v1 = _as_version_1(good)
    loads(json.dumps(v1))
    refused(edited(v1, lambda o: o.update(scopes=[])), "unexpected keys ['scopes']")
    refused(edited(v1, lambda o: o["eqns"][0].update(scope=0)), "eqns[0]", "unexpected keys ['scope']")


def test_an_unused_bad_entry_is_refused_too(good):
    refused(edited(good, lambda o: o["scopes"].append([1])), f"scopes[{len(good['scopes'])}]:")


def test_scope_names_are_data(good):
    """Any string is a scope name (quotes, slashes, code): it is stored and read back as text."""
    names = ["__import__('os').system('echo hi')", "a/b", "é\n\"", "{\"lit\": 0}"]
    back = loads(json.dumps(edited(good, lambda o: o["scopes"].__setitem__(0, names))))
    assert ("scope" in good["eqns"][0]) and back.eqns[0].scope == tuple(names)


def test_a_scope_that_is_not_a_tuple_of_strings_is_not_saved():
    tape = ad.trace(np.sin, np.ones(2))
    for scope in (("a", 1), ["a"], ("",)):
        bad = Tape(tape.inputs, (tape.eqns[0].with_scope(scope),), tape.outputs)
        with pytest.raises(NotSerializableError, match="equation 0 .sin.: its scope"):
            dumps(bad)
