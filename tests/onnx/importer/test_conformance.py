"""ONNX's own node conformance cases (``onnx.backend.test.case``: one model per case, with inputs
and expected outputs) for every op the importer declares, all opsets the cases use.

Each case is traced (float inputs traced, the other inputs constants, as shapes and indices are
in exported models) and its tape re-run: the values must equal the expected outputs. A case may
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
from ad.onnx.importer import OPS, OnnxImportError, OnnxProgram  # noqa: E402


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
    """The tape's outputs on the case's inputs, and the expected outputs."""
    inputs, expected = case.data_sets[0]
    inputs = [_array(x) for x in inputs]
    prog = OnnxProgram(case.model, inputs=inputs)
    traced = [i for i, x in enumerate(inputs) if traced and np.issubdtype(x.dtype, np.floating)]

    def f(*floats):
        args = list(inputs)
        for i, x in zip(traced, floats):
            args[i] = x
        return tuple(prog.run(args))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        tape = ad.trace(f, *[inputs[i] for i in traced])
        got = tape(*[inputs[i] for i in traced])
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
    """"pass", "static" (passes once the float inputs the op needs at import, such as a Pad
    value or a Range start, are constants, as they are in exported models), "refused: <why>"
    or "wrong: <what>"."""
    try:
        got, expected = run_case(case)
    except OnnxImportError as exc:
        if "depends on the model's inputs" not in str(exc):
            return f"refused: {exc}"
        try:
            got, expected = run_case(case, traced=False)
        except OnnxImportError as exc:
            return f"refused: {exc}"
        return "static" if agrees(got, expected, case) else "wrong: with static inputs"
    if agrees(got, expected, case):
        return "pass"
    return (f"wrong: got {[(g.shape, g.dtype.name) for g in got]}, expected "
            f"{[(e.shape, e.dtype.name) for e in expected]}")


def conformance_report() -> str:
    per_op = collections.defaultdict(collections.Counter)
    refusals = []
    for op, case in cases():
        result = outcome(case)
        per_op[op][result.split(":")[0]] += 1
        if result not in ("pass", "static"):
            refusals.append(f"- `{case.name}`: {result}")
    lines = ["| op | cases | pass | pass (static operands) | refused | wrong |", "| --- | --- | --- | --- | --- | --- |"]
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
        result = outcome(case)
        results[result.split(":")[0]] += 1
        if result.startswith("wrong"):
            wrong[case.name] = result
    assert not wrong, wrong
    assert results["pass"] >= 1150, results      # a regression that refuses more shows here


def test_declared_ops_have_cases():
    """Every declared op is exercised by at least one conformance case."""
    covered = {op for op, _ in cases()}
    missing = sorted(name for domain, name in OPS if name not in covered)
    assert not missing, missing


if __name__ == "__main__":
    print(conformance_report())
