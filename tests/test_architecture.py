"""The architecture as tests: imports point down the layers (no cycles, no function-local imports
of the project's own modules hiding one), and ``ad`` loads without the drawing or widget stack.
docs/architecture.md describes the layers these tests hold."""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import networkx as nx
import pytest

from ad import tape

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("ad", "tapeviz")

# Modules that may be imported inside a function, and why: each needs an optional dependency
# that importing its parent must not require, or a dependency too slow to import with it.
OPTIONAL = {
    "ad.onnx": "needs the onnx package (the `onnx` extra)",
    "ad.scipy.special": "imports scipy.special (~0.2 s, as much as `import ad`): ad.dispatch loads "
                        "it when the first scipy.special ufunc reaches a tracer",
    "ad.scipy": "the package of ad.scipy.special, loaded with it (it imports nothing itself)",
    **dict.fromkeys(("ad.scipy.integrate", "ad.scipy.linalg", "ad.scipy.signal"),
                    "import scipy's modules: ad.serialize loads them (and ad.scipy.special) when a "
                    "saved tape names a scipy primitive"),
    "tapeviz.debugger": "needs ipywidgets (the widget is imported when first used)",
    "tapeviz.debugger.widget": "needs ipywidgets (the widget is imported when first used)",
}


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES.get(name, pathlib.Path()).name == "__init__.py"


def _resolve(importer: str, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The project modules an import statement loads (a package's ``__init__`` counts)."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        if node.level:
            base = importer.split(".")
            base = base if _is_package(importer) else base[:-1]
            base = base[:len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES]
        targets = subs if len(subs) == len(node.names) else subs + [module]
    out = []
    ancestors = {".".join(importer.split(".")[:k]) for k in range(1, importer.count(".") + 2)}
    for t in targets:
        if t.split(".")[0] not in PACKAGES:
            continue
        parts = t.split(".")
        out += [p for p in (".".join(parts[:k]) for k in range(1, len(parts) + 1))
                if p in MODULES and p not in ancestors]
    return out


def _outside_functions(node):
    """Import statements that run when the module loads (if/try/class blocks included)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _outside_functions(child)


def _imports(name: str):
    """(module-level imports, function-local imports) of one module, as (lineno, target)."""
    tree = ast.parse(MODULES[name].read_text())
    top = [(node.lineno, t) for node in _outside_functions(tree) for t in _resolve(name, node)]
    local = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(fn):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    local += [(sub.lineno, t) for t in _resolve(name, sub)]
    return top, local


def test_no_function_local_imports_of_project_modules():
    found = []
    for name in sorted(MODULES):
        for line, target in _imports(name)[1]:
            if target not in OPTIONAL:
                found.append(f"{MODULES[name].relative_to(ROOT)}:{line} imports {target}")
    assert not found, ("function-local imports of the project's own modules (each one hides an "
                       "import cycle; let the dependency point down instead):\n" + "\n".join(sorted(set(found))))


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    graph = nx.DiGraph()
    for name in MODULES:
        if name.split(".")[0] == package:
            graph.add_node(name)
            top, local = _imports(name)
            graph.add_edges_from((name, t) for _, t in top + local
                                 if t.split(".")[0] == package and t not in OPTIONAL)
    cycles = sorted(nx.simple_cycles(graph), key=len)
    assert not cycles, f"import cycles in {package}: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:5])


# The layers of ``ad`` (docs/architecture.md), bottom first: a module imports only modules of
# its own layer or below. Package ``__init__`` modules are facades and are not listed.
LAYERS = {
    "foundations": ("ad.errors", "ad.pytree", "ad.tangents", "ad.samples"),
    "trace state": ("ad.trace_state",),
    "primitives": ("ad.primitives",),
    "data model": ("ad.tape",),
    "rule writing": ("ad.rrule",),
    "machinery primitives": ("ad.core_prims",),
    "tracing": ("ad.dispatch", "ad.tracer"),
    "rule library": ("ad.lib.", "ad.nn.", "ad.scipy."),
    "transformations": ("ad.lift", "ad.backward", "ad.closure", "ad.passes", "ad.codegen", "ad.reroll",
                        "ad.cache", "ad.api", "ad.transpose", "ad.forward", "ad.jacobians",
                        "ad.scipy.integrate", "ad.fused"),
    "consumers": ("ad.serialize", "ad.onnx", "ad.checks", "ad.examples", "ad.nn.examples", "ad.lib.coverage"),
}


def _layer(name: str) -> int:
    """The layer of a module: the most specific prefix in LAYERS wins."""
    best = max(((len(p), i) for i, prefixes in enumerate(LAYERS.values()) for p in prefixes
                if name == p or name.startswith(p if p.endswith(".") else p + ".")), default=None)
    assert best is not None, f"{name} is in no layer of LAYERS (docs/architecture.md): add it"
    return best[1]


def test_imports_point_down_the_layers():
    names = list(LAYERS)
    wrong = []
    for name in sorted(MODULES):
        if name.split(".")[0] != "ad" or _is_package(name):
            continue
        for line, target in _imports(name)[0]:
            if _is_package(target) and target != "ad":
                continue
            if _layer(target) > _layer(name):
                wrong.append(f"{MODULES[name].relative_to(ROOT)}:{line} ({names[_layer(name)]}) "
                             f"imports {target} ({names[_layer(target)]})")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_ad_never_imports_tapeviz():
    found = [f"{name}:{line}" for name in MODULES if name.startswith("ad")
             for line, target in sum(_imports(name), []) if target.startswith("tapeviz")]
    assert not found, found


def test_the_resolver_follows_relative_and_package_imports():
    """What the two tests above rely on: relative imports resolve to modules, a package's
    ``__init__`` counts as imported, and a function-local import is seen."""
    def resolve(importer, code):
        return _resolve(importer, ast.parse(code).body[0])
    assert resolve("ad.api", "from .tape import Tape") == ["ad.tape"]
    assert resolve("ad.lib.shape", "from ..core_prims import reshape_p") == ["ad.core_prims"]
    assert resolve("ad.lib.shape", "from .reductions import normalize_axis") == ["ad.lib.reductions"]
    assert resolve("ad.lib.shape", "from .. import pytree") == ["ad.pytree"]
    assert resolve("ad.tape", "from .lib.indexing import getitem_p") == ["ad.lib", "ad.lib.indexing"]
    assert resolve("ad", "from . import lib") == ["ad.lib"]
    assert resolve("tapeviz.graph", "import numpy") == []
    assert ("ad.tape" in {t for _, t in _imports("ad.backward")[0]})
    assert _layer("ad.tape") < _layer("ad.lib.shape") < _layer("ad.api") < _layer("ad.nn.examples")


def test_ad_imports_without_the_drawing_and_widget_stack():
    code = ("import sys, ad; heavy = {'networkx', 'graphviz', 'ipywidgets', 'onnx', 'torch'} & "
            "set(sys.modules); assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# The tape's objects are immutable by convention, not frozen dataclasses (ad/tape.py says why):
# no code assigns to their fields. A few other classes have fields of the same names; their
# receivers are named here (a Recorder's source and origin stamp what it records next).
TAPE_CLASSES = ("Var", "Lit", "Eqn", "Origin")
OTHER_RECEIVERS = {("rec", "source"), ("rec", "origin"), ("prim", "rule"), ("v", "source")}


def _field_writes(tree: ast.Module, fields: set) -> list[tuple[int, str]]:
    """(line, text) of assignments to ``x.field`` and of ``setattr(x, "field", ...)``, but a
    class's own ``self.field`` outside the tape's classes."""
    found = []
    for cls in [None, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        body = tree.body if cls is None else cls.body
        own = cls is not None and cls.name not in TAPE_CLASSES
        for node in (n for stmt in body if not isinstance(stmt, ast.ClassDef) for n in ast.walk(stmt)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for t in (t for target in targets for t in ([target] + getattr(target, "elts", []))):
                if isinstance(t, ast.Attribute) and t.attr in fields:
                    receiver = ast.unparse(t.value)
                    if not (own and receiver == "self") and (receiver, t.attr) not in OTHER_RECEIVERS:
                        found.append((node.lineno, ast.unparse(t)))
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("setattr", "object.__setattr__") \
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value in fields:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_nothing_assigns_to_the_fields_of_the_tapes_objects():
    fields = {f for name in TAPE_CLASSES for f in getattr(tape, name).__slots__}
    writes = [f"{name}:{line}: {text}" for name, path in MODULES.items()
              for line, text in _field_writes(ast.parse(path.read_text()), fields)
              if not (name == "ad.tape" and text.startswith("self."))]    # their __init__
    assert not writes, "assignments to a tape object's fields:\n" + "\n".join(writes)
    tree = ast.parse("e.inputs = ()\nx.source = 's'\nsetattr(v, 'aval', None)\nclass R:\n    def f(self):\n"
                     "        self.origin = None\n        e.origin = None\n")
    assert [line for line, _ in _field_writes(tree, fields)] == [1, 2, 3, 7]
