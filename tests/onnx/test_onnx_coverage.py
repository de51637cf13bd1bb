"""Every case of the rule tests (tests/support/cases.py) and every ad.nn composition, exported with its
gradient and run in onnxruntime, agrees with ad (float64, or float32 where onnxruntime has no
float64 kernel), or is refused with a named reason; the coverage table (tests/support/onnx_coverage.py) lists every library primitive."""
import re

import pytest

from tests.support.needs import module
module("onnxruntime")
import ad  # noqa: E402
from ad.onnx import LOWERINGS, NOT_LOWERED, not_lowered  # noqa: E402
from tests.support.onnx_coverage import check_spec, library_primitives, table  # noqa: E402
from tests.support.cases import CASES  # noqa: E402
from tests.support.serialize_cases import EXTRA  # noqa: E402


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES + EXTRA])
def test_spec_runs_in_onnxruntime(case):
    result = check_spec(case)
    if result.status == "refused":
        # refusals must name a primitive that is documented as not lowering, or a dtype
        listed = re.search(r"no ONNX lowering for (.*)", result.detail)
        named = listed and all(not_lowered(ad.REGISTRY[n]) for n in listed.group(1).split("; "))
        guarded = "guard(s)" in result.detail and "guards='branch'" in result.detail
        complex_ = result.detail.startswith("cannot export a complex tape")
        assert named or guarded or complex_ or "has no ONNX tensor type" in result.detail, result.detail
    else:
        assert result.status in ("float64", "float32"), result.detail


def test_table_covers_every_library_primitive():
    text = table()
    for name in library_primitives():
        assert f"| `{name}` |" in text
    assert "**mismatch**" not in text and "**error**" not in text
    assert all(prim not in LOWERINGS for prim in NOT_LOWERED)
