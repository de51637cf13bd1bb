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
import re
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
def all_cases() -> tuple:
    """Every node case ONNX ships (``collect_testcases``: every op, domain and opset)."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(collect_testcases())


@functools.cache
def cases():
    """(op, case) for every single-node case of a declared op, and every expanded function case
    (``*_expanded``: a function op's body, several nodes) whose nodes are all declared."""
    out = []
    for c in all_cases():
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


def unsupported_values(case) -> tuple[str, str] | None:
    """Why a case's values are not float or integer tensors of the element types the importer
    holds, as (kind, what), or None: such cases are counted apart from the pass rates. The kind
    is an element type's family ("bfloat16", "float8", "float4", "int4", "int2", "string"; the
    unsigned ones with theirs) or "sequence or optional"."""
    graph = case.model.graph
    for info in list(graph.input) + list(graph.output):
        kind = info.type.WhichOneof("value")
        if kind != "tensor_type":
            return "sequence or optional", f"{info.name} is a {kind}"
        if info.type.tensor_type.elem_type not in DTYPES:
            name = TensorProto.DataType.Name(info.type.tensor_type.elem_type)
            return re.sub(r"^u?(int[24]|float[48]).*", r"\1", name.lower()), f"{info.name} is {name}"
    nodes = list(graph.node)
    while nodes:
        node = nodes.pop()
        if node.op_type.startswith(("Sequence", "Optional")):
            return "sequence or optional", f"{node.op_type} (sequences and optionals)"
        nodes += [n for a in node.attribute if a.type == onnx.AttributeProto.GRAPH for n in a.g.node]
    return None


#: what the issue counts apart from "cases with float or integer tensors" (float4 and int2: the
#: 4- and 2-bit siblings of float8 and int4 that later onnx releases added)
EXCLUDED = {"string", "float8", "int4", "bfloat16", "float4", "int2", "sequence or optional"}


def passes(result: str) -> bool:
    """An outcome that counts as passing: traced, or with the operands read while tracing given
    as constants."""
    return result.split(":")[0] in ("pass", "static")


UNRUN = "(not run, its ops declared)"


def all_cases_figures() -> dict:
    """Of every case ONNX ships: ``cases``, those with float or integer tensors; ``passed``, those
    of them that pass (a case of an op the importer does not declare does not); ``excluded``,
    the others by kind; ``undeclared``, the cases with float or integer tensors of ops the
    importer does not declare, by op (``UNRUN``: a case the run leaves out although it
    declares its ops)."""
    ran = {case.name for _, case in cases()}
    excluded, undeclared = collections.Counter(), collections.Counter()
    n = passed = 0
    for case in all_cases():
        why = unsupported_values(case)
        if why is not None:
            excluded[why[0]] += 1
            continue
        n += 1
        if case.name in ran:
            passed += passes(outcomes()[case.name])
            continue
        missing = [node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
                   for node in case.model.graph.node if ((node.domain or ""), node.op_type) not in OPS]
        undeclared[missing[0] if missing else UNRUN] += 1
    return {"cases": n, "passed": passed, "excluded": excluded, "undeclared": undeclared}


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
    figures = all_cases_figures()
    excluded, undeclared = figures["excluded"], figures["undeclared"]
    lines.append(
        f"\nOf all {len(all_cases())} cases ONNX ships (every op, domain and opset), {sum(excluded.values())} are "
        "counted apart, their values not float or integer tensors ("
        + ", ".join(f"{kind} {k}" for kind, k in excluded.most_common()) + f"); of the other {figures['cases']}, "
        f"{figures['passed']} pass = {100 * figures['passed'] / figures['cases']:.1f}%. "
        f"{sum(undeclared.values())} are cases of ops the importer does not declare: "
        + ", ".join(f"{op} {k}" for op, k in sorted(undeclared.items(), key=lambda item: (-item[1], item[0]))) + ".")
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
            per_op[op][passes(outcomes()[case.name])] += 1
    low = {op: f"{c[True]}/{c[True] + c[False]}" for op, c in per_op.items() if c[True] < 0.97 * (c[True] + c[False])}
    assert not low, low


def test_only_the_issues_exclusions_are_counted_apart():
    """A case is left out of the pass rates only for strings, low-precision floats and integers
    or sequences and optionals, and left out of the run only for an op the importer does not
    declare."""
    figures = all_cases_figures()
    assert set(figures["excluded"]) <= EXCLUDED, figures["excluded"]
    assert UNRUN not in figures["undeclared"], figures["undeclared"][UNRUN]


def test_92_percent_of_all_cases_with_float_or_integer_tensors_pass():
    """Of every case ONNX ships whose values are float or integer tensors (the others counted
    apart: ``EXCLUDED``), at least 92 % pass; a case of an op the importer does not declare
    fails."""
    figures = all_cases_figures()
    assert figures["passed"] >= 0.92 * figures["cases"], figures


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
