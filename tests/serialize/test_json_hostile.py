"""The loader against malformed and hostile files: every one is refused with a TapeFormatError
(a ValueError) naming what is wrong, before anything from the file could run."""
import base64
import copy
import json
import sys

import numpy as np
import pytest

import ad
from ad.serialize import TapeFormatError, dumps, from_json, loads


@pytest.fixture(scope="module")
def good():
    """A small gradient tape with params, literals, provenance and a slice."""
    def f(W, x):
        h = np.tanh(x @ W)
        return np.sum(h[1:, ::2] ** 2) + np.mean(h * np.arange(3.0))
    return json.loads(dumps(ad.grad_tape(f, np.ones((4, 3)) / 3, np.ones((5, 4)))))


def refused(obj, *fragments, **kw):
    text = obj if isinstance(obj, str) else json.dumps(obj)
    with pytest.raises(TapeFormatError) as info:
        loads(text, **kw)
    for frag in fragments:
        assert frag in str(info.value), str(info.value)
    return str(info.value)


def edit(good, fn):
    obj = copy.deepcopy(good)
    fn(obj)
    return obj


def eqn(obj, prim):
    return next(e for e in obj["eqns"] if e["prim"] == prim)


def test_the_fixture_loads(good):
    loads(json.dumps(good))


def test_unknown_primitive(good):
    msg = refused(edit(good, lambda o: eqn(o, "tanh").update(prim="tanhh")),
                  "eqns[1].prim", "unknown primitive 'tanhh'", "did you mean tanh")
    assert "REGISTRY" in msg and "@ad.primitive" in msg


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "subprocess:Popen",
                                  "serialize_hostile_sentinel.boom", "__import__", "a/b"])
def test_python_path_is_never_imported(good, name):
    msg = refused(edit(good, lambda o: eqn(o, "tanh").update(prim=name)), "looks like a Python path",
                  "nothing named in a file is imported")
    assert repr(name) in msg
    assert "serialize_hostile_sentinel" not in sys.modules


def test_opaque_primitive_refused(good):
    refused(edit(good, lambda o: eqn(o, "tanh").update(prim="opaque_pullback")), "Python closure")


@pytest.mark.parametrize("prim,operands", [("tanh", [0, 1]), ("matmul", [1]), ("reshape", [0, 1]),
                                           ("getitem", [])])
def test_wrong_arity(good, prim, operands):
    def change(o):
        e = next(e for e in o["eqns"] if e["prim"] in ("tanh", "matmul", "getitem"))
        e["prim"] = prim
        e["in"] = operands
        e["params"] = {"shape": {"tuple": [12]}} if prim == "reshape" else \
            {"index": {"tuple": []}} if prim == "getitem" else {}
    refused(edit(good, change), "eqns[", prim, "operand")


@pytest.mark.parametrize("params,fragment", [
    ({"axis": "0", "keepdims": False}, "params.axis"),
    ({"axis": None, "keepdims": 1}, "params.keepdims"),
    ({"axis": None}, "keepdims"),                                   # a missing param
    ({"axis": None, "keepdims": False, "out": None}, "has no params ['out']"),
    ({"axis": {"tuple": [{"float": "nan"}]}, "keepdims": False}, "params.axis"),
    ({"axis": {"lambda": "x"}, "keepdims": False}, "unknown value tag 'lambda'"),
    ({"axis": {"dtype": "object"}, "keepdims": False}, "unknown dtype 'object'"),
    ({"axis": [0], "keepdims": False}, "expected a value"),
])
def test_wrong_param_types(good, params, fragment):
    refused(edit(good, lambda o: eqn(o, "sum").update(params=params)), "eqns[", fragment)


@pytest.mark.parametrize("index", [
    {"tuple": [{"tuple": ["slice", 1, None, 0]}]},                    # step 0
    {"tuple": [{"tuple": ["slices", 1, None, 1]}]},
    {"tuple": ["...", "..."]},
    {"tuple": [{"tuple": ["array", -1]}]},
    "0:3",
])
def test_malformed_index_spec(good, index):
    refused(edit(good, lambda o: eqn(o, "getitem").update(params={"index": index})), "params.index")


def test_ufunc_takes_no_params(good):
    refused(edit(good, lambda o: eqn(o, "tanh").update(params={"where": False})), "has no params")


@pytest.mark.parametrize("change,fragment", [
    (lambda o: eqn(o, "tanh")["out"][0][1].__setitem__(1, [5, 4]), "declares %3:f64[5,4]"),
    (lambda o: eqn(o, "tanh")["out"][0][1].__setitem__(0, "float32"), "but computes f64[5,3]"),
    (lambda o: o["inputs"][0][1].__setitem__(1, [3, 3]), "matmul"),          # (5,4) @ (3,3)
    (lambda o: eqn(o, "reshape")["params"].update(shape={"tuple": [7]}), "reshape"),
    (lambda o: eqn(o, "multiply")["out"][0][1].__setitem__(1, [2, 2]), "broadcast to shape (5, 3)"),
])
def test_shapes_that_do_not_match(good, change, fragment):
    refused(edit(good, change), "eqns[", fragment)


def test_operands_that_do_not_broadcast(good):
    def change(o):
        e = eqn(o, "add")
        e["in"] = [e["in"][0], {"lit": 0}]
    obj = edit(good, change)
    obj["literals"][0] = {"dtype": "float64", "shape": [7], "data": [1.0] * 7}
    refused(obj, "do not broadcast")


def test_variables_read_before_defined_or_defined_twice(good):
    refused(edit(good, lambda o: eqn(o, "tanh").update({"in": [99]})), "reads %99")
    refused(edit(good, lambda o: eqn(o, "tanh")["out"][0].__setitem__(0, 0)), "%0 is defined twice")


def test_provenance_is_checked(good):
    refused(edit(good, lambda o: o["eqns"][-1].update(origin=["magic", None, None])), "origin kind")
    refused(edit(good, lambda o: o["eqns"][-1].update(origin=["pullback", 999, "x"])), "%999")


def test_gradient_fields_are_checked(good):
    refused(edit(good, lambda o: o["grad"].update(n_forward=10 ** 6)), "grad.n_forward")
    refused(edit(good, lambda o: o["grad"].update(grad_slots=[5])), "grad.grad_slots")
    refused(edit(good, lambda o: o["grad"].update(n_forward=1)), "backward")   # a section mix-up


def test_deeply_nested_payload(good):
    deep = "[" * 100_000 + "]" * 100_000
    refused(deep, "max_depth=100")
    text = json.dumps(edit(good, lambda o: eqn(o, "sum")["params"].update(axis="NESTED")))
    refused(text.replace('"NESTED"', '{"tuple": [' * 500 + "0" + "]}" * 500), "max_depth")
    refused(json.dumps(good), "max_depth=3", max_depth=3)


def test_huge_payloads(good, tmp_path):
    text = json.dumps(good)
    refused(text, "max_bytes=100", max_bytes=100)
    path = tmp_path / "big.json"
    path.write_text(text)
    with pytest.raises(TapeFormatError, match="big.json: .* bytes exceed max_bytes=100"):
        ad.load(path, max_bytes=100)
    refused(text, "max_eqns=3", max_eqns=3)
    refused(edit(good, lambda o: o["inputs"][0][1].__setitem__(1, [10 ** 6, 10 ** 6])), "max_elements")
    refused(edit(good, lambda o: eqn(o, "reshape")["params"].update(shape={"tuple": [10 ** 9, 10 ** 9]})),
            "max_elements")


def test_literal_limits_and_lengths(good):
    big = np.zeros(1000)
    entry = {"dtype": "float64", "shape": [1000], "base64": base64.b64encode(big.tobytes()).decode()}
    with_lit = edit(good, lambda o: o["literals"].__setitem__(0, entry))
    refused(with_lit, "max_literal_bytes", max_literal_bytes=1000)
    short = dict(entry, base64=entry["base64"][:-400])
    refused(edit(good, lambda o: o["literals"].__setitem__(0, short)), "truncated or wrong shape")
    refused(edit(good, lambda o: o["literals"].__setitem__(0, dict(entry, base64="!!" * 10))), "not base64")
    too_big = dict(entry, shape=[10 ** 7])
    refused(edit(good, lambda o: o["literals"].__setitem__(0, too_big)), "needs 80000000")
    inline = {"dtype": "float64", "shape": [3], "data": [1.0, 2.0]}
    refused(edit(good, lambda o: o["literals"].__setitem__(0, inline)), "expected 3 numbers")


def test_truncated_file(good):
    text = dumps(from_json(good))
    msg = refused(text[: len(text) // 2], "malformed JSON at line", "truncated")
    assert "column" in msg


def test_malformed_json_and_non_json():
    refused('{"format": "tapeviz.tape", "version": 1,,}', "line 1 column")
    refused("NaN", "not standard JSON")
    refused('{"a": 1, "a": 2}', "duplicate keys ['a']")
    refused("[1, 2]", "not a saved tape")


def test_not_utf8(tmp_path):
    path = tmp_path / "bin.json"
    path.write_bytes(b'{"format": "\xff\xfe"}')
    with pytest.raises(TapeFormatError, match="not UTF-8"):
        ad.load(path)


def test_wrong_version_and_format(good):
    refused(edit(good, lambda o: o.update(version=3)), "schema version 3", "reads versions 1, 2")
    refused(edit(good, lambda o: o.update(version="2")), 'schema version "2"')
    refused(edit(good, lambda o: o.update(format="pickle")), "not a saved tape")
    refused(edit(good, lambda o: o.update(type="Module")), "type:")
    refused(edit(good, lambda o: o.update(extra=1)), "unexpected keys ['extra']")
    refused(edit(good, lambda o: o.pop("eqns")), "missing ['eqns']")


def test_namedtuple_fields_must_be_identifiers(good):
    bad = {"namedtuple": ["P", ["x", "__import__('os').system('echo hi')"], ["*", "*"]]}
    refused(edit(good, lambda o: o.update(out_tree=bad)), "bad namedtuple 'P'")
