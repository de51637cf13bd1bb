"""Registry-wide: every primitive that declares samples, batched by ``ad.vmap`` (its batching
rule, or the loop over the batch when it has none), equals the loop of the primitive over the
examples, at its samples, with a batch of 3: every operand batched along axis 0, along axis 1
(where each example has an axis), one operand batched and the others shared, float64 and
float32, and complex where the primitive declares a complex rule."""
from __future__ import annotations

import numpy as np
import pytest

import ad
from ad.batching import fallback_loop_p, how_batched
from ad.checktools import coverage
from ad.primitives import REGISTRY
from ad.samples import C128, F64
from tests.batching.support import SIZE, assert_batched_equal, batch_of, looped
from tests.support import ROOT
from tests.support.cases import PRIMITIVE_CASES, leaves

# random draws differ from one call to the next (a loop and a batch draw different masks), and a
# guard refuses a batched value (tested below)
CASES = [c for c in PRIMITIVE_CASES if c.primitive.kind not in ("random", "guard")]


def _layouts(case, shape_set: str) -> list[tuple]:
    """The in_axes to try: all 0; all 1 where every operand has an axis; each operand alone batched."""
    ranks = [np.ndim(x) for x in case.inputs(shape_set, np.random.default_rng(0))]
    n = len(ranks)
    out = [(0,) * n]
    if all(r >= 1 for r in ranks):
        out.append((1,) * n)
    if n > 1:
        out += [tuple(0 if k == j else None for k in range(n)) for j in range(n)]
    return out


def _params():
    for case in CASES:
        for shape_set in case.sample.shapes:
            yield pytest.param(case, shape_set, F64, id=f"{case.name}-{shape_set}")
        last = case.sample.shapes[-1]
        for dtype in case.sample.dtypes[1:] + ((C128,) if case.primitive.complex_rule else ()):
            yield pytest.param(case, last, dtype, id=f"{case.name}-{last}-{np.dtype(dtype).name}")


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")   # astype's complex-to-real sample, as numpy
@pytest.mark.parametrize("case,shape_set,dtype", list(_params()))
def test_batched_primitive_equals_the_loop(case, shape_set, dtype):
    rng = np.random.default_rng(0)
    for axes in _layouts(case, shape_set):
        operands, examples = batch_of(case, shape_set, dtype, rng, axes)
        want = looped(case.fn, examples)
        got = ad.vmap(case.fn, in_axes=axes, optimize=False)(*operands)
        assert_batched_equal(got, want, dtype, f"{case.name} at in_axes={axes}")
        tape = ad.validate(ad.vmap_tape(case.fn, *operands, in_axes=axes))
        if how_batched(case.primitive) == "derived" and case.sample.call is None:
            assert "fallback_loop" not in ad.op_counts(tape), f"{case.name}'s derived rule fell back at {axes}"
    # the last layout's tape, optimised and compiled, computes what the compiled example does
    # (the same values as the loop, and the compiled form's dtypes: scipy's functions
    # compute float32 operands in float64)
    compiled = ad.compile(ad.optimize(tape))(*operands)
    example = ad.compile(ad.trace(case.fn, *examples[0]))(*examples[0])
    want = tuple(w.astype(np.result_type(e)) for w, e in zip(want, leaves(example)))
    assert_batched_equal(compiled, want, dtype, f"{case.name} compiled at in_axes={axes}")


@pytest.mark.parametrize("case", [c for c in CASES if c.sample.call is None and c.sample.derive is None],
                         ids=lambda c: c.name)
def test_the_loop_fallback_equals_the_loop(case):
    """The fallback alone (bound directly), for every primitive: what runs for those without a rule."""
    rng = np.random.default_rng(1)
    shape_set = case.sample.shapes[-1]
    axes = _layouts(case, shape_set)[-1]
    operands, examples = batch_of(case, shape_set, F64, rng, axes)
    values = iter(operands)
    full = [i.value if i.kind == "literal" else next(values) for i in case.sample.inputs]
    dims = [None if i.kind == "literal" else a for i, a in zip(case.sample.inputs, _all(axes, case))]
    got = fallback_loop_p.bind(*full, primitive=case.primitive.name, params=tuple(sorted(case.sample.params.items())),
                               dims=tuple(dims), size=SIZE)
    assert_batched_equal(got if case.primitive.multiple_results else got[0], looped(case.fn, examples), F64,
                         f"the loop of {case.name}")


def _all(axes, case):
    """``axes`` (one per traced operand) spread over every input, literals included."""
    it = iter(axes)
    return [None if i.kind == "literal" else next(it) for i in case.sample.inputs]


def test_a_guard_on_a_batched_value_refuses_naming_the_line():
    def f(x):
        if np.sum(x) > 0:       # the branch the message names
            return x
        return -x
    with pytest.raises(ad.BatchedBranchError, match="differs across the batch") as info:
        ad.vmap(f)(np.array([[1.0], [-1.0]]))
    assert "test_batching_registry.py" in info.value.location and "np.sum(x) > 0" in str(info.value)


def test_a_guard_on_a_shared_value_stays_a_guard_and_retraces():
    def f(x, s):
        return x * 2.0 if np.sum(s) > 0 else x * 3.0
    g = ad.vmap(f, in_axes=(0, None))
    x = np.arange(3.0)
    np.testing.assert_array_equal(g(x, np.ones(2)), x * 2.0)
    np.testing.assert_array_equal(g(x, -np.ones(2)), x * 3.0)
    info = g.cache_info()
    assert info.traces == 2 and info.guard_failures == 1


def test_coverage_counts():
    """Every registered primitive is batched one of three ways; the elementwise ones by the rule
    their trait gives, the linear-algebra ones by their stacks."""
    kinds = {p.name: how_batched(p) for p in REGISTRY.values()}
    assert set(kinds.values()) <= {"derived", "hand", "loop"}
    assert kinds["sin"] == kinds["inv"] == kinds["sum"] == "derived"
    assert kinds["matmul"] == kinds["getitem"] == kinds["einsum"] == "hand"
    assert kinds["max_pool"] == "derived" and kinds["scipy.linalg.expm"] == "loop"


def test_the_coverage_page_shows_how_each_primitive_is_batched():
    page = (ROOT / "docs" / "coverage.md").read_text()
    assert coverage.batching_markdown() in page, "regenerate docs/coverage.md: python -m ad.checktools.coverage"
