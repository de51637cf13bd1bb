"""The architecture as tests (docs/architecture.md describes what they hold): the folder tree draws
the layers, one entry per folder, and imports point down them; no import cycle, counting every
import, top-level and function-local; no function-local import of the project's own modules but
the optional ones named below; no module imports another's private names; no module over 600
lines; a small flat core; and ``ad`` loads without the drawing or widget stack."""
from __future__ import annotations

import ast
import importlib
import types
import subprocess
import sys

import networkx as nx

from ad import tape
from tests.support import ROOT

PACKAGES = ("ad", "tapeviz")
MAX_LINES = 600            # a module longer than this is a package in disguise
MAX_CORE_MODULES = 16      # Python modules directly in ad/

# The layers, bottom first, one entry per folder (a package and its subpackages are separate
# entries), read from docs/architecture.md's table: a module imports modules of its own folder,
# of folders listed before its own, and (a package's ``__init__``, its facade) of its own subfolders.
def _layers() -> dict[str, str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("## The layers, bottom first"):].split("\n\n")[1]
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| `")]
    return {folder.strip("| `").rstrip("/"): what.rstrip(" |") for folder, what in rows}


LAYERS = _layers()


# Project modules that may be imported inside a function, and why: each needs an optional
# dependency that importing its parent must not require.
OPTIONAL = {
    "ad.onnx": "needs the onnx package (the `onnx` extra)",
    "tapeviz.debugger": "needs ipywidgets (the widget is imported when first used)",
    "tapeviz.debugger.widget": "needs ipywidgets (the widget is imported when first used)",
}


def _modules() -> dict:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return name in MODULES and MODULES[name].name == "__init__.py"


def _folder(name: str) -> str:
    """The folder a module's file lies in (a package's ``__init__`` lies in its own)."""
    return str(MODULES[name].parent.relative_to(ROOT))


def _resolve(importer: str, node: ast.ImportFrom | ast.Import) -> list[tuple[str, list[str]]]:
    """The project modules an import statement loads, each with the names it takes from it
    (a package's ``__init__`` counts; a submodule taken by name is loaded, not read from)."""
    if isinstance(node, ast.Import):
        found = [(a.name, []) for a in node.names]
    else:
        if node.level:
            base = importer.split(".")
            base = base if _is_package(importer) else base[:-1]
            base = base[:len(base) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES]
        names = [a.name for a in node.names if f"{module}.{a.name}" not in MODULES]
        found = [(s, []) for s in subs] + ([(module, names)] if names else [])
    ancestors = {".".join(importer.split(".")[:k]) for k in range(1, importer.count(".") + 2)}
    out = []
    for target, names in found:
        if target.split(".")[0] not in PACKAGES:
            continue
        parts = target.split(".")
        chain = [p for p in (".".join(parts[:k]) for k in range(1, len(parts) + 1)) if p in MODULES and p not in ancestors]
        out += [(p, names if p == target else []) for p in chain]
    return out


def _imports(name: str):
    """(line, target, names, local) for every import of one module; ``local``: inside a function."""
    tree = ast.parse(MODULES[name].read_text())
    local = {id(sub) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
             for sub in ast.walk(fn) if isinstance(sub, (ast.Import, ast.ImportFrom))}
    return [(node.lineno, target, names, id(node) in local)
            for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
            for target, names in _resolve(name, node)]


def _where(name: str, line: int) -> str:
    return f"{MODULES[name].relative_to(ROOT)}:{line}"


def test_no_function_local_imports_of_project_modules():
    found = [f"{_where(name, line)} imports {target}" for name in sorted(MODULES)
             for line, target, _, local in _imports(name) if local and target not in OPTIONAL]
    assert not found, ("function-local imports of the project's own modules (each one hides a dependency "
                       "that should point down; an optional one is listed in OPTIONAL):\n" + "\n".join(found))


def test_no_import_cycles_over_every_import():
    graph = nx.DiGraph()
    for name in MODULES:
        graph.add_node(name)
        graph.add_edges_from((name, target) for _, target, _, _ in _imports(name))
    cycles = sorted(nx.simple_cycles(graph), key=len)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + c[:1]) for c in cycles[:5])


def test_no_module_imports_another_modules_private_names():
    found = [f"{_where(name, line)} takes {n} from {target}" for name in sorted(MODULES)
             for line, target, names, _ in _imports(name) for n in names
             if n.startswith("_") and not n.startswith("__")]
    assert not found, "private names taken across modules (make them public where they are defined):\n" + "\n".join(found)


def test_no_module_is_over_600_lines():
    long = {f"{path.relative_to(ROOT)}: {n}" for path in MODULES.values()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by concern into a package):\n" + "\n".join(sorted(long))


def test_the_core_is_small_and_flat():
    core = sorted(p.name for p in (ROOT / "ad").glob("*.py"))
    assert len(core) <= MAX_CORE_MODULES, core


def test_every_folder_is_a_layer():
    folders = {_folder(name) for name in MODULES}
    assert folders == set(LAYERS), (f"folders with no layer: {sorted(folders - set(LAYERS))}; "
                                    f"layers with no folder: {sorted(set(LAYERS) - folders)}")


def _rank(name: str) -> int:
    return list(LAYERS).index(_folder(name))


def test_imports_point_down_the_layers():
    wrong = []
    for name in sorted(MODULES):
        for line, target, _, _ in _imports(name):
            facade_of_its_own = _is_package(name) and target.startswith(name + ".")
            if _rank(target) > _rank(name) and not facade_of_its_own:
                wrong.append(f"{_where(name, line)} ({_folder(name)}) imports {target} ({_folder(target)})")
    assert not wrong, "imports pointing up the layers:\n" + "\n".join(wrong)


def test_ad_never_imports_tapeviz():
    found = [_where(name, line) for name in MODULES if name.startswith("ad")
             for line, target, _, _ in _imports(name) if target.startswith("tapeviz")]
    assert not found, found


def test_the_resolver_follows_relative_package_and_local_imports():
    """What the tests above rely on: relative imports resolve to modules, a package's
    ``__init__`` counts as imported, names taken are seen, and a function-local import is seen."""
    def resolve(importer, code):
        return _resolve(importer, ast.parse(code).body[0])
    assert resolve("ad.transforms.gradients", "from ..tape import Tape") == [("ad.tape", ["Tape"])]
    assert resolve("ad.lib.shape", "from ..core_prims import reshape_p") == [("ad.core_prims", ["reshape_p"])]
    assert resolve("ad.lib.shape", "from .reductions import _x") == [("ad.lib.reductions", ["_x"])]
    assert resolve("ad.lib.shape", "from .. import pytree") == [("ad.pytree", [])]
    assert resolve("ad.tape", "from .lib.indexing import getitem_p") == [("ad.lib", []), ("ad.lib.indexing", ["getitem_p"])]
    assert resolve("tapeviz.graph", "import numpy") == []
    assert any(t == "ad.onnx" and local for _, t, _, local in _imports("ad"))
    assert _rank("ad.tape") < _rank("ad.lib.shape") < _rank("ad.transforms.gradients") < _rank("ad.examples.networks")


def test_ad_imports_without_the_drawing_and_widget_stack():
    code = ("import sys, ad; heavy = {'networkx', 'graphviz', 'ipywidgets', 'onnx', 'torch'} & "
            "set(sys.modules); assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# The tape's objects are immutable by convention, not frozen dataclasses (ad/tape.py says why):
# no code assigns to their fields. A few other classes have fields of the same names; their
# receivers are named here (a Recorder's source, origin and scope stamp what it records next).
TAPE_CLASSES = ("Var", "Lit", "Eqn", "Origin")
OTHER_RECEIVERS = {("rec", "source"), ("rec", "origin"), ("rec", "scope"), ("prim", "rule"), ("v", "source")}


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
              if not (name in ("ad.tape", "ad.origins") and text.startswith("self."))]    # their __init__
    assert not writes, "assignments to a tape object's fields:\n" + "\n".join(writes)
    tree = ast.parse("e.inputs = ()\nx.source = 's'\nsetattr(v, 'aval', None)\nclass R:\n    def f(self):\n"
                     "        self.origin = None\n        e.origin = None\n")
    assert [line for line, _ in _field_writes(tree, fields)] == [1, 2, 3, 7]


def test_no_public_name_shadows_a_module_of_its_package():
    """``ad.transpose`` is a function, so no module of ``ad`` may be called ``transpose``: the
    package attribute would hide it (``import ad.transpose`` would give the function)."""
    found = []
    for name in MODULES:
        if _is_package(name):
            package = importlib.import_module(name)
            found += [f"{name}.{n}" for n in getattr(package, "__all__", ())
                      if f"{name}.{n}" in MODULES and not isinstance(getattr(package, n, None), types.ModuleType)]
    assert not found, f"public names that hide a module of their package: {found}"
