"""Codegen, the passes and the ONNX exporter read what they know of a primitive from the
primitive object (its ``spelling``, its traits, tables keyed by the object), never by switching
on its name."""
from __future__ import annotations

import ast

import numpy as np
import pytest

import ad
from ad import passes
from ad.core_prims import full_p
from ad.lib.contraction import matmul_p
from tests.support import ROOT

# (the ONNX importer reads no primitive: it compares the names of ONNX values and functions)
READERS = [*sorted((ROOT / "ad" / "compiler").glob("*.py")), *sorted((ROOT / "ad" / "passes").glob("*.py")),
           *sorted((ROOT / "ad" / "onnx").glob("*.py"))]


def name_switches(source: str) -> list[int]:
    """Lines comparing a ``.name`` (or a variable assigned from one) with ``==``, ``!=``, ``in``."""
    tree = ast.parse(source)
    from_names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                  and isinstance(node.value, ast.Attribute) and node.value.attr == "name"
                  for t in node.targets if isinstance(t, ast.Name)}

    def is_name(x) -> bool:
        return (isinstance(x, ast.Attribute) and x.attr == "name") or (isinstance(x, ast.Name) and x.id in from_names)
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Compare)
            and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops)
            and any(is_name(x) for x in [node.left, *node.comparators])]


def test_the_detector_sees_name_switches():
    assert name_switches("if e.prim.name == 'add': pass") == [1]
    assert name_switches("x = e.prim.name\nif x in ('reshape', 'transpose'): pass") == [2]
    assert name_switches("if p.prim is add_p: pass\nlabel = e.prim.name") == []


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_name_switches(path):
    assert not name_switches(path.read_text()), f"{path.name} switches on primitive names"


# -- codegen: the spelling declared on the primitive ------------------------------------------------

def source(f, *args) -> str:
    return ad.compile(ad.trace(f, *args)).source


def test_spellings_from_the_declaration():
    x = np.arange(6.0).reshape(2, 3)
    src = source(lambda a: -(a[1:, None] @ a.T) + np.linalg.inv(a @ a.T), x)
    assert "v1 = v0[1:, None]" in src              # a function of the operands and the index
    assert "@ v2" in src and "= -v" in src         # operators, declared next to the ufuncs
    assert "np.linalg.inv(" in src                 # default: the numpy function's own path
    gt = ad.grad_tape(np.sum, x)
    assert "np.full((), 1, np.float64)" in ad.compile(gt).source      # a format string over params


def test_a_negative_literal_base_keeps_its_parentheses():
    x = np.array([2.0, 3.0])
    f = ad.compile(ad.trace(lambda a: (-2.0) ** a, x))
    assert "(-2.0) ** v0" in f.source
    np.testing.assert_array_equal(f(x), (-2.0) ** x)


def test_a_user_primitive_declares_its_spelling_or_is_called_by_name():
    scaled = ad.Primitive("test_by_object_scaled", lambda x, k: x * k, params=("k",), spelling="{0} * {k}")
    plain = ad.primitive(lambda x: x + 1, name="test_by_object_plain")
    src = source(lambda a: plain(scaled.bind(a, k=3.0)), np.ones(2))
    assert "v1 = v0 * 3.0" in src and "v2 = test_by_object_plain(v1)" in src


# -- passes: rules keyed by the primitive objects, and traits ------------------------------------------

def test_rewrite_rules_are_keyed_by_primitive_objects():
    assert all(isinstance(p, ad.Primitive) for p, _ in passes.RULES)


@pytest.mark.parametrize("fn", [np.negative, np.reshape, np.transpose, np.broadcast_to, np.sum, np.mean,
                                np.cumsum, np.positive, np.conjugate, np.matmul])
def test_linear_primitives_declare_it(fn):
    assert 0 in ad.primitives.lookup(fn).linear_in


def test_products_and_linear_maps_of_structural_zeros_are_zero():
    """eigh's pullback multiplies the cotangent of the unused eigenvectors (a structural zero)."""
    def f(a):
        return np.sum(np.linalg.eigh(a)[0])
    a = np.diag([1.0, 2.0, 3.0]) + 0.1
    unoptimised = ad.grad_tape(f, a)
    gt = ad.optimize(unoptimised)
    zeros = {v for e in unoptimised.eqns if e.prim is full_p and e.kwargs["fill_value"] == 0 for v in e.outputs}
    assert any(e.prim is matmul_p and zeros & set(e.inputs) for e in unoptimised.eqns)
    assert not any(e.prim is full_p for e in gt.eqns), gt
    np.testing.assert_allclose(gt(a)[1], unoptimised(a)[1], rtol=1e-13)
