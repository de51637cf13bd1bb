"""The batching checks: ``batching.loop`` (a rule's batched form against the loop of the primitive,
at in_axes 0, at the last axis and each operand alone), ``program.batched_grad`` (``ad.check(...,
batched=True)``: the backward batched over cotangents, as gradcheck's check_batched_grad), the
library check and the mutation tool over batching rules."""
import numpy as np
import pytest

import ad
from ad.checks.library import cases, sampled
from ad.checks.settings import GROUPS
from ad.checktools import cli
from ad.checktools.mutants import batching as batching_mutants
from ad.examples.programs import mlp_example, mlp_loss
from ad.primitives import REGISTRY

ONLY_BATCHING = {g: "off" for g in GROUPS if g not in ("batching", "registration")}


@pytest.mark.parametrize("call,args,kwargs,how", [
    (np.sin, (np.linspace(-1, 1, 6).reshape(2, 3),), {}, "the rule its traits give"),
    (np.sum, (np.arange(6.0).reshape(2, 3),), {"axis": 1}, "the rule its traits give"),
    (np.matmul, (np.ones((2, 3)), np.arange(12.0).reshape(3, 4)), {}, "its own batching rule"),
    (REGISTRY["scipy.linalg.expm"], (np.eye(2) * 0.1,), {}, "the fallback loop"),
])
def test_a_correct_batching_rule_passes_at_every_layout(call, args, kwargs, how):
    result = ad.check_rule(call, *args, kwargs=kwargs)["batching.loop"]
    assert result.status == "pass", result
    assert result.message.startswith(how)
    layouts = result.numbers["in_axes"]
    assert layouts[0] == (0,) * len(args) and any(a not in (0, None) for axes in layouts for a in axes)


def test_a_rule_that_assumes_the_batch_axis_first_fails_at_another_axis_naming_its_line():
    def assumes_first(args, dims):
        return np.sin(args[0]), 0
    report = ad.check_rule(np.sin, np.linspace(-1, 1, 4), batch_rule=assumes_first)
    result = report["batching.loop"]
    assert not report.ok and result.status == "fail"
    assert "in_axes=(1,)" in result.message and "shape (4, 3)" in result.message and "(3, 4)" in result.message
    assert result.equation == "%1:f64[4] = sin %0"
    assert "test_check_batching.py" in result.source and "assumes_first" in result.source
    assert REGISTRY["sin"].batch is None       # the candidate was never registered


def test_examples_out_of_order_fail_naming_them():
    def reversed_examples(args, dims):
        x = np.moveaxis(args[0], dims[0], 0)
        return np.tanh(x)[::-1], 0
    result = ad.check_rule(np.tanh, np.linspace(-1, 1, 4), batch_rule=reversed_examples)["batching.loop"]
    assert result.status == "fail" and "example(s) [0, 2]" in result.message


def test_a_raising_batching_rule_is_a_finding():
    def raises(args, dims):
        raise RuntimeError("forgot the batch")
    result = ad.check_rule(np.exp, np.ones(3), batch_rule=raises)["batching.loop"]
    assert result.status == "fail" and "RuntimeError: forgot the batch" in result.message
    assert "test_check_batching.py" in result.source


def test_random_primitives_are_skipped_with_the_reason():
    random = [p for p in sampled() if p.kind == "random"]
    assert random, "no random primitive with samples to check"
    label, call, ops = next(cases(random[0], random[0].samples[0], np.random.default_rng(0)))
    result = ad.check_rule(call, *ops)["batching.loop"]
    assert result.status == "skipped" and "shares its draw" in result.message


def test_the_equations_of_a_program_get_the_batching_check(monkeypatch):
    matmul = REGISTRY["matmul"]
    right = matmul.batch

    def reversed_matmul(args, dims, **params):
        out, d = right(args, dims, **params)
        return out[::-1], d
    monkeypatch.setattr(matmul, "batch", reversed_matmul)
    x, W = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(-1, 1, 12).reshape(3, 4)
    report = ad.check(lambda x, W: np.sum(np.tanh(x @ W)), x, W)
    assert report["program.equations"].status == "fail"
    assert "batching.loop" in report["program.equations"].message
    assert report["program.batched_grad"].status == "skipped"      # not requested


def test_batched_grad_passes_on_the_mlp():
    report = ad.check(mlp_loss, *mlp_example(), argnums=(0,), batched=True)
    result = report["program.batched_grad"]
    assert report.ok and result.status == "pass", result
    assert "3 cotangents" in result.message


def test_batched_grad_names_the_backward_equation_whose_batched_form_is_wrong(monkeypatch):
    matmul = REGISTRY["matmul"]
    right = matmul.batch

    def reversed_matmul(args, dims, **params):
        out, d = right(args, dims, **params)
        return out[::-1], d
    monkeypatch.setattr(matmul, "batch", reversed_matmul)
    x, W = np.linspace(-1, 1, 6).reshape(2, 3), np.linspace(-1, 1, 12).reshape(3, 4)
    result = ad.check(lambda x, W: np.sum(np.tanh(x @ W)), x, W, batched=True)["program.batched_grad"]
    assert result.status == "fail"
    assert "culprit" in result.message and "matmul" in result.equation and "pullback of %2 (matmul)" in result.equation
    assert "test_check_batching.py" in result.source                  # the program's line
    assert "reversed_matmul" in result.numbers["batching_rule"]         # and the rule to fix


def test_the_library_check_covers_batching_rules():
    reports = ad.checks.library.check_library(["sin", "matmul", "sum", "scipy.linalg.expm"], severity=ONLY_BATCHING)
    assert reports and all(r.ok for r in reports)
    assert all(r["batching.loop"].status == "pass" for r in reports if r.primitive is not None)


def test_mutants_of_batching_rules_are_caught():
    report = batching_mutants.run(["sin", "add", "sum", "matmul", "einsum", "getitem", "reshape", "transpose"])
    statuses = {(o.primitive, o.operator): o.status for o in report.outcomes}
    assert report.score == 1.0 and not report.survivors, report.summary()
    assert statuses[("matmul", "axes_assumed_first")] == "caught"
    assert statuses[("sum", "reversed")] == "caught"
    assert all(o.checks == ("batching.loop",) for o in report.counted())
    assert len(report.counted()) >= 20


def test_the_cli_runs_batching_mutants_and_batched_programs(capsys, tmp_path):
    assert cli.main(["--mutants", "--batching", "--only", "matmul", "sin"]) == 0
    assert "mutation score: " in capsys.readouterr().out
    assert cli.main(["--mutants", "--batching", "--record", str(tmp_path / "x.md")]) == 2
    assert cli.main(["ad.examples.programs:mlp_loss", "--example", "ad.examples.programs:mlp_example",
                     "--batched", "--json", str(tmp_path / "r.json")]) == 0
    assert '"program.batched_grad"' in (tmp_path / "r.json").read_text()
    assert '"pass"' in (tmp_path / "r.json").read_text()
