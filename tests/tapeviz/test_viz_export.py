"""Files by suffix, the text listing, the size guard, the docs' example figures and the CLI."""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tapeviz import export, listing, to_graphviz
from tapeviz.commands.cli import ArgumentError, main, parse_arg
from tapeviz.examples import mlp_figures
from tests.support.needs import needs
from tests.support import ROOT

has_dot = needs(shutil.which("dot") is not None, "Graphviz's dot program")


def test_dot_and_text_need_no_renderer(mlp, mlp_graph, tmp_path):
    tape, _ = mlp
    assert export(mlp_graph, tmp_path / "g.dot").read_text() == to_graphviz(mlp_graph).source
    assert export(mlp_graph, tmp_path / "g.gv", view="forward").read_text() == \
        to_graphviz(mlp_graph, "forward").source
    assert export(tape, tmp_path / "g.txt").read_text() == str(tape) + "\n"
    assert export(tape, tmp_path / "f.txt", view="forward").read_text() == str(tape.forward) + "\n"
    with pytest.raises(ValueError, match=r"\.svg"):
        export(tape, tmp_path / "g.jpeg")


@has_dot
def test_rendered_formats_by_suffix(mlp_graph, tmp_path):
    assert export(mlp_graph, tmp_path / "g.svg", renderer="dot").read_bytes().lstrip().startswith(b"<?xml")
    assert export(mlp_graph, tmp_path / "g.png", renderer="dot").read_bytes().startswith(b"\x89PNG")
    assert export(mlp_graph, tmp_path / "g.pdf", renderer="dot").read_bytes().startswith(b"%PDF")


def test_window_listing_shows_the_equations_around_a_node(mlp):
    tape, _ = mlp
    text = listing(tape, window="%9:1")
    lines = text.splitlines()
    assert lines[0] == "-- equations within 1 step of %9"
    assert any(line.strip().startswith("%9:f64[8,3] = matmul") for line in lines)
    assert "..." in text and len(lines) < len(tape.eqns)
    with pytest.raises(ValueError, match="collapsed"):
        export(tape, "x.txt", collapse=True)


def test_big_whole_diagrams_are_refused_with_the_way_out(big, tmp_path):
    tape, g = big
    with pytest.raises(ValueError, match="window=.*collapse=True"):
        export(g, tmp_path / "all.svg")
    assert export(g, tmp_path / "all.dot").stat().st_size > 1_000_000     # DOT is always written
    window = export(g, tmp_path / "w.dot", window=(repr(tape.eqns[5000].outputs[0]), 2))
    assert window.stat().st_size < 30_000


@has_dot
def test_windowed_and_collapsed_views_of_ten_thousand_equations_render(big, tmp_path):
    tape, g = big
    middle = repr(tape.eqns[5000].outputs[0])
    for name, options in (("w", {"window": (middle, 2), "current": middle}), ("c", {"collapse": True})):
        svg = export(g, tmp_path / f"{name}.svg", renderer="dot", **options).read_bytes()
        texts = [t.text or "" for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
        assert any(middle in t for t in texts) if name == "w" else any("\u00d71430" in t for t in texts)


@has_dot
def test_mlp_figures_for_the_docs(tmp_path):
    paths = mlp_figures(tmp_path)
    assert [p.name for p in paths] == ["mlp_gradient.txt", "mlp_joint.svg", "mlp_forward.svg",
                                       "mlp_backward.svg", "mlp_collapsed.svg"]
    for p in paths[1:]:
        texts = [t.text or "" for t in ET.parse(p).iter("{http://www.w3.org/2000/svg}text")]
        assert texts[0] == f"gradient of the MLP loss: {p.stem.removeprefix('mlp_')}"
        assert "params['W1']" in texts             # a parameter, or a residual the backward pass reads
    joint = " ".join(t.text or "" for t in ET.parse(paths[1]).iter("{http://www.w3.org/2000/svg}text"))
    assert "pullback of %9 (matmul)" in joint and "\u2192 grad params['b1']" in joint


# -- the CLI -----------------------------------------------------------------------------------

def test_argument_grammar_builds_values_and_refuses_code():
    rng = np.random.default_rng(0)
    w = parse_arg("{'W': randn(3, 4), 'b': zeros(4), 'n': 2}", rng)
    assert w["W"].shape == (3, 4) and not w["b"].any() and w["n"] == 2
    assert parse_arg("(-1.5, [1, 2], full((2, 3), 0.5))", rng)[2].shape == (2, 3)
    again = parse_arg("randn(3, 4)", np.random.default_rng(0))
    np.testing.assert_array_equal(again, parse_arg("randn(3, 4)", np.random.default_rng(0)))
    for bad in ("__import__('os').system('true')", "np.ones(3)", "randn(3, seed=1)", "x",
                "lambda: 1", "[i for i in range(3)]", "randn(-1)", "1 +"):
        with pytest.raises(ArgumentError):
            parse_arg(bad, rng)


def write_module(tmp_path) -> Path:
    path = tmp_path / "model.py"
    path.write_text("import numpy as np\n\n"
                    "def f(W, b, x):\n    return np.sum(np.tanh(x @ W + b) ** 2)\n\n"
                    "def example():\n    return np.ones((3, 2)), np.zeros(2), np.ones((4, 3))\n")
    return path


def test_cli_writes_the_requested_view(tmp_path, capsys):
    module = write_module(tmp_path)
    out = tmp_path / "g.dot"
    assert main(["export", f"{module}:f", "--args", "randn(3, 2)", "zeros(2)", "randn(4, 3)",
                 "--view", "backward", "--out", str(out)]) == 0
    assert 'subgraph "cluster_backward"' in out.read_text() and "cluster_forward" not in out.read_text()
    same = tmp_path / "again.dot"
    main(["export", f"{module}:f", "--args", "randn(3, 2)", "zeros(2)", "randn(4, 3)", "--view", "backward",
          "--out", str(same)])
    assert same.read_text() == out.read_text()                   # seeded: the same figure every run
    assert main(["export", f"{module}:f", "--args", "randn(3, 2)", "zeros(2)", "randn(4, 3)",
                 "--collapse", "--format", "dot"]) == 0
    assert "pullback of" in capsys.readouterr().out
    assert main(["export", f"{module}:f", "--args", "randn(3, 2)", "zeros(2)", "randn(4, 3)",
                 "--format", "txt", "--window", "%5:1"]) == 0
    assert capsys.readouterr().out.startswith("-- equations within 1 step of %5")


def test_cli_examples_forms_and_errors(tmp_path, capsys, monkeypatch):
    module = write_module(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["export", "model:f", "--example", "model:example", "--form", "closure",
                 "--format", "dot"]) == 0
    closure = capsys.readouterr().out
    assert "cluster_forward" in closure and "cluster_backward" not in closure
    assert main(["export", "model:f", "--example", "model:example", "--form", "closure",
                 "--view", "backward"]) == 1
    assert "--form lifted" in capsys.readouterr().err
    assert main(["export", f"{module}:f", "--args", "os.system('x')"]) == 1
    assert "outside the argument grammar" in capsys.readouterr().err
    assert main(["export", "model:nope", "--example", "model:example"]) == 1
    assert "has no 'nope'" in capsys.readouterr().err
    assert main(["export", "model:f", "--example", "model:example", "--format", "png"]) == 1
    assert "--out" in capsys.readouterr().err


def test_cli_runs_as_a_program(tmp_path):
    out = tmp_path / "mlp.dot"
    proc = subprocess.run([sys.executable, "-m", "tapeviz.commands.cli", "export", "ad.examples:mlp_loss",
                           "--example", "ad.examples:mlp_example", "--optimize", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert "grad params[&#x27;W0&#x27;]" in out.read_text()
