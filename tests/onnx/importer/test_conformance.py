"""ONNX's own node conformance cases (``onnx.backend.test.case``: one model per case, with inputs
and expected outputs) for every op the importer declares, all opsets the cases use.

Each case is traced (every input traced: the float ones as differentiated, the integer and bool
ones read while tracing where an op needs them, a shape, axes, a condition, recorded as guards)
and its tape re-run: the values must equal the expected outputs. A case may
instead be refused with an ``OnnxImportError`` (an unsupported dtype, attribute or mode); it may
never give a wrong value. ``conformance_report()`` prints the pass rate per op
(docs/onnx_import.md). Cost: ~15 s of CPU, most of it onnx generating the cases.
"""
from __future__ import annotations

import collections
import functools
import warnings

import numpy as np

from tests.support.needs import module as optional_module  # in CI, a missing module fails
onnx = optional_module("onnx")
from onnx import TensorProto, numpy_helper  # noqa: E402

import ad  # noqa: E402
from ad.onnx.importer import DTYPES, OPS, OnnxImportError, OnnxProgram  # noqa: E402


def _array(x):
    return numpy_helper.to_array(x) if isinstance(x, TensorProto) else np.asarray(x)


@functools.cache
def cases():
    """(op, case) for every single-node case of a declared op, and every expanded function case
    (``*_expanded``: a function op's body, several nodes) whose nodes are all declared."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        all_cases = collect_testcases()
    out = []
    for c in all_cases:
        nodes = c.model.graph.node
        if not all(((n.domain or ""), n.op_type) in OPS for n in nodes):
            continue
        expanded = "_expanded" in c.name
        if not expanded and len(nodes) != 1:
            continue
        op = "(function bodies, expanded)" if expanded else nodes[0].op_type
        out.append((op, c))
    return out


def run_case(case, traced=True):
    """The tape's outputs on the case's inputs, and the expected outputs. ``traced``: every input
    is traced (``ad.trace`` marks the float ones differentiated), else all are constants."""
    inputs, expected = case.data_sets[0]
    inputs = [_array(x) for x in inputs]
    prog = OnnxProgram(case.model, inputs=inputs)
    traced = inputs if traced else []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        tape = ad.trace(lambda *xs: tuple(prog.run(xs or inputs)), *traced)
        got = tape(*traced)
    return [np.asarray(g) for g in got], [_array(e) for e in expected]


def agrees(got, expected, case) -> bool:
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        if g.shape != e.shape or g.dtype != e.dtype:
            return False
        if e.dtype.kind in "fc":
            if not np.allclose(g, e, rtol=case.rtol, atol=case.atol, equal_nan=True):
                return False
        elif not np.array_equal(g, e):
            return False
    return True


def outcome(case) -> str:
    """"pass", "static" (refused traced because an op reads a value while tracing that it cannot
    take from a differentiated float, such as Resize's scales or a OneHot depth, or because its
    output's shape depends on the values, as NonZero's does; passes once the inputs are
    constants, as those operands are in exported models), "refused: <why>" or "wrong: <what>"."""
    try:
        got, expected = run_case(case)
    except OnnxImportError as exc:
        if "is read while tracing" not in str(exc) and "depends on the model's inputs" not in str(exc):
            return f"refused: {exc}"
        try:
            got, expected = run_case(case, traced=False)
        except OnnxImportError as exc:
            return f"refused: {exc}"
        return "static" if agrees(got, expected, case) else "wrong: with constant inputs"
    if agrees(got, expected, case):
        return "pass"
    return (f"wrong: got {[(g.shape, g.dtype.name) for g in got]}, expected "
            f"{[(e.shape, e.dtype.name) for e in expected]}")


@functools.cache
def outcomes() -> dict[str, str]:
    """Every case's outcome by name, computed once for the tests that read them."""
    return {case.name: outcome(case) for _, case in cases()}


def unsupported_values(case) -> str | None:
    """Why a case's values are outside what the importer's tensors hold (an element type such as
    bfloat16, float8, int4 or string; a sequence or an optional), or None: such cases are counted
    apart from an op's pass rate."""
    graph = case.model.graph
    for info in list(graph.input) + list(graph.output):
        kind = info.type.WhichOneof("value")
        if kind != "tensor_type":
            return f"{info.name} is a {kind}"
        if info.type.tensor_type.elem_type not in DTYPES:
            return f"{info.name} is {TensorProto.DataType.Name(info.type.tensor_type.elem_type)}"
    nodes = list(graph.node)
    while nodes:
        node = nodes.pop()
        if node.op_type.startswith(("Sequence", "Optional")):
            return f"{node.op_type} (sequences and optionals)"
        nodes += [n for a in node.attribute if a.type == onnx.AttributeProto.GRAPH for n in a.g.node]
    return None


def conformance_report() -> str:
    per_op = collections.defaultdict(collections.Counter)
    refusals = []
    for op, case in cases():
        result = outcomes()[case.name]
        per_op[op][result.split(":")[0]] += 1
        if result not in ("pass", "static"):
            refusals.append(f"- `{case.name}`: {result}")
    lines = ["| op | cases | pass | pass (operands constant) | refused | wrong |", "| --- | --- | --- | --- | --- | --- |"]
    for op, c in sorted(per_op.items()):
        lines.append(f"| {op} | {sum(c.values())} | {c['pass']} | {c['static']} | {c['refused']} | {c['wrong']} |")
    total = sum((c for c in per_op.values()), collections.Counter())
    n = sum(total.values())
    passed = total["pass"] + total["static"]
    lines.append(f"| **all** | {n} | {total['pass']} | {total['static']} | {total['refused']} | {total['wrong']} |")
    lines.append(f"\npass rate: {passed}/{n} = {100 * passed / n:.1f}% (refusals name their cause)")
    return "\n".join(lines + ["", *refusals])


def test_every_case_passes_or_is_refused_by_name():
    wrong = {}
    results = collections.Counter()
    for op, case in cases():
        result = outcomes()[case.name]
        results[result.split(":")[0]] += 1
        if result.startswith("wrong"):
            wrong[case.name] = result
    assert not wrong, wrong
    assert results["pass"] >= 1170, results      # a regression that refuses more shows here


def test_every_op_passes_97_percent_of_its_cases():
    """Of each op's cases whose values are tensors of supported element types, at least 97 %
    pass (traced, or with the operands read while tracing given as constants)."""
    per_op = collections.defaultdict(collections.Counter)
    for op, case in cases():
        if unsupported_values(case) is None:
            per_op[op][outcomes()[case.name].split(":")[0] in ("pass", "static")] += 1
    low = {op: f"{c[True]}/{c[True] + c[False]}" for op, c in per_op.items() if c[True] < 0.97 * (c[True] + c[False])}
    assert not low, low


#: declared ops that ONNX ships no conformance case for, and the test that checks them instead
CHECKED_ELSEWHERE = {"MaxRoiPool": "tests/onnx/importer/test_ops_onnxruntime.py"}


def test_declared_ops_have_cases():
    """Every declared op is exercised by at least one conformance case (or, if ONNX has none,
    checked against onnxruntime)."""
    covered = {op for op, _ in cases()}
    missing = sorted(name for domain, name in OPS if name not in covered and name not in CHECKED_ELSEWHERE)
    assert not missing, missing
    assert not set(CHECKED_ELSEWHERE) & covered      # a case appeared: drop the exception


if __name__ == "__main__":
    print(conformance_report())
