"""Registry-wide and on the spec table (tests/support/cases.py): compiled for an array namespace,
a tape either runs there and equals numpy's compiled tape (to rounding, in numpy's float dtypes)
or is refused when it is compiled, with the error that names the primitive and the equation,
never at run time. Every primitive's samples (its trace and its gradient) on array_api_strict,
the strictest namespace; the gradients of the composition spec table on array_api_strict,
PyTorch, JAX (and CuPy on a GPU). docs/arrays.md states the coverage this measures."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ad
from ad.compiler.array_api import ArrayAPIError, namespace
from tests.compiler.xp_support import (LIBRARIES, assert_same_as_numpy, case_tape, jax_float64, marks, on,  # noqa: F401
                                       run_quietly)
from tests.support import ROOT
from tests.support.cases import CASES, COMPOSITIONS, PRIMITIVE_CASES

SPEC_CASES = [c for c in CASES if c.name in COMPOSITIONS]


def _compiled_or_refused(tape, library: str):
    """The compiled tape, or None after checking the refusal names what it should."""
    try:
        return ad.compile(tape, xp=library)
    except ArrayAPIError as exc:
        message = str(exc)
        prim = re.search(r"cannot write (\S+) over the array namespace", message).group(1)
        equation = re.search(r"Equation (\d+)", message)
        assert equation and prim == tape.eqns[int(equation.group(1))].prim.name, message
        assert "array_api_spelling=" in message, message
        return None


def _check(case, gradient: bool, library: str):
    tape, xs = case_tape(case, gradient)
    if tape is None:
        return
    compiled = _compiled_or_refused(tape, library)
    if compiled is None:
        return
    flat = tape.flatten_args(tuple(xs))
    want = run_quietly(ad.compile(tape, scalar=False).run, flat)
    got = run_quietly(compiled.run, on(compiled.xp, flat))
    assert_same_as_numpy(got, want, f"{case.name} on {library}:\n{compiled.source}")


@pytest.mark.parametrize("gradient", [False, True], ids=["trace", "gradient"])
@pytest.mark.parametrize("case", PRIMITIVE_CASES, ids=lambda c: c.name)
def test_every_primitive_runs_on_array_api_strict_or_is_refused_when_compiled(case, gradient):
    _check(case, gradient, "array_api_strict")


@pytest.mark.parametrize("library", [pytest.param(lib, marks=marks(lib)) for lib in LIBRARIES])
@pytest.mark.parametrize("case", SPEC_CASES, ids=lambda c: c.name)
def test_the_spec_tables_gradients_run_on_each_library_or_are_refused_when_compiled(case, library):
    _check(case, True, library)


def _expressible(library: str) -> set:
    """The primitives whose every sample's trace compiles for the library."""
    xp, refused, seen = namespace(library), set(), set()
    for case in PRIMITIVE_CASES:
        seen.add(case.primitive.name)
        try:
            ad.compile(case_tape(case, False)[0], xp=xp)
        except ArrayAPIError:
            refused.add(case.primitive.name)
    return seen - refused


def test_docs_arrays_states_the_coverage():
    """docs/arrays.md's figure is this count, on array_api_strict, PyTorch and JAX."""
    text = (ROOT / "docs" / "arrays.md").read_text()
    total = len({c.primitive.name for c in PRIMITIVE_CASES})
    for library, label in (("array_api_strict", "array_api_strict"), ("torch", "PyTorch"), ("jax", "JAX")):
        stated = f"{len(_expressible(library))} of {total} primitives"
        assert f"{label}: {stated}" in text, f"docs/arrays.md should say '{label}: {stated}'"
