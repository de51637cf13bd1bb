"""The graph pane's long-lived ``dot``: drawings come back whole, one after another, and a graph
Graphviz rejects closes the process instead of hanging the kernel (the next drawing restarts it)."""
import shutil


from tapeviz.debugger.dot import DotProcess
from tests.support.needs import needs

pytestmark = needs(shutil.which("dot") is not None, "Graphviz's dot on PATH")


def test_drawings_one_after_another_and_recovery():
    d = DotProcess()
    try:
        first = d.svg('digraph { "%1" -> "%2" }')
        second = d.svg('digraph { x [label="second"] }')
        assert first.count("<svg") == 1 and first.endswith("</svg>\n")
        assert "second" in second and "second" not in first
        assert d.svg("digraph { a -> }") is None          # rejected: closed, not stuck
        assert "<svg" in d.svg("digraph { c }")          # and started again
    finally:
        d.close()
