"""The docs' figures: ``mlp_figures(out_dir)`` draws the gradient tape of the built-in MLP loss
(``ad.examples``: batch 8, 4 -> 8 -> 3, tanh, softmax cross-entropy, plain numpy) in four views,
with every value summarised, plus its text listing.

The tape is the lifted gradient tape as built, before optimisation: one pullback block per
forward equation, seed included, which is what the figures explain.
"""
from __future__ import annotations

from pathlib import Path

import ad
from ad.examples import mlp_example, mlp_loss

from .figures import export
from .graph import to_networkx
from .values import values_of

VIEWS = {"joint": {}, "forward": {"view": "forward"}, "backward": {"view": "backward"},
         "collapsed": {"collapse": True}}


def mlp_figures(out_dir, *, format: str = "svg", renderer: str = "auto") -> list[Path]:
    """Write ``mlp_gradient.txt`` and ``mlp_{joint,forward,backward,collapsed}.svg`` into
    ``out_dir``; returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    args = mlp_example()
    tape = ad.grad_tape(mlp_loss, *args)
    graph = to_networkx(tape, values=values_of(tape, *args))
    paths = [export(tape, out / "mlp_gradient.txt")]
    for name, options in VIEWS.items():
        paths.append(export(graph, out / f"mlp_{name}.{format}", renderer=renderer,
                            title=f"gradient of the MLP loss: {name}", **options))
    return paths
