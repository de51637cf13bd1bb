"""``make demo`` (``python -m tapeviz.commands.demo``): the README's first command prints the traced program,
the lifted gradient tape, its compiled numpy source and the checker's report for a small MLP, and
writes the joint, forward, backward and collapsed figures."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from tapeviz.commands import demo

FIGURES = ("mlp_joint.svg", "mlp_forward.svg", "mlp_backward.svg", "mlp_collapsed.svg")


def test_the_demo_prints_the_tapes_the_code_and_a_passing_check(tmp_path, capsys):
    assert demo.main(["--out", str(tmp_path)]) == 0                 # the check passed
    printed = capsys.readouterr().out
    for heading in ("== the traced program", "== the gradient tape: forward + lifted pullbacks",
                    "== compiled to numpy source", "== gradient check", "== figures"):
        assert heading in printed, heading
    assert "def f(" in printed and "np." in printed                  # the compiled source
    assert "0 failed" in printed and "lifted vs closure gradients" in printed
    for name in FIGURES:
        root = ET.parse(tmp_path / name).getroot()                   # a whole SVG document
        assert root.tag.endswith("svg") and len(list(root.iter())) > 20, name
    assert "matmul" in (tmp_path / "mlp_gradient.txt").read_text()
