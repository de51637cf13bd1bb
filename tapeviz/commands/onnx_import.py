"""``tapeviz import MODEL.onnx``: an ONNX model's tape, or its gradient's, drawn and exported.

The model is imported with ``ad.from_onnx`` (nothing in the file is executed). ``--grad`` takes
the gradient of a scalar made of the first output (``--loss``: its sum, i.e. a cotangent of ones,
or half its sum of squares) with respect to the float inputs and every float initializer
(``--wrt``). ``--svg`` draws the tape with one node per ONNX node (and one per node's pullback
beside it: ``tapeviz.collapse(graph, by="source")``; ``--expand`` draws every equation),
``--onnx`` writes it back as an ONNX model (with ``--grad`` the gradient graph: inputs the graph
inputs then the initializers, outputs ``out0`` then the gradients), ``--listing`` writes the text
listing, a ``-- Conv (/conv/Conv)`` line heading each node's equations (``-``: standard output).

    tapeviz import model.onnx --grad --svg grad.svg --onnx grad.onnx
    tapeviz import model.onnx --shape x=1,3,32,32 --listing -
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import ad
from ad.tape import format_tape

from ..figures import export_bytes
from ..graph import to_networkx
from ..grouping import collapse

LOSSES = {"sum": lambda y: np.sum(y), "sumsq": lambda y: 0.5 * np.sum(y * y)}
WRT = ("all", "inputs", "params")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("import", help="import an ONNX model; draw or export its tape or gradient",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL.onnx")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D,D,...",
                   help="fix a graph input's shape (needed for dynamic dimensions); repeatable")
    p.add_argument("--grad", action="store_true", help="the gradient tape rather than the forward tape")
    p.add_argument("--loss", choices=LOSSES, default="sum", help="the scalar of the first output")
    p.add_argument("--wrt", choices=WRT, default="all", help="differentiate the inputs, the weights or both")
    p.add_argument("--svg", metavar="FILE", help="write the drawing")
    p.add_argument("--onnx", metavar="FILE", help="write the tape (the gradient graph with --grad) as ONNX")
    p.add_argument("--listing", metavar="FILE", help="write the text listing ('-': standard output)")
    p.add_argument("--expand", action="store_true",
                   help="draw every equation (default: one node per ONNX node, and one per its pullback)")
    return p


def run(args) -> int:
    try:
        tape, summary = build(args)
        if args.svg:
            graph = to_networkx(tape)
            _write(args.svg, export_bytes(graph if args.expand else collapse(graph, by="source"), "svg"))
        if args.onnx:
            _write(args.onnx, ad.to_onnx(tape, name="gradient" if args.grad else "forward").SerializeToString())
        if args.listing:
            text = listing(tape)
            if args.listing == "-":
                sys.stdout.write(text)
            else:
                _write(args.listing, text.encode())
    except (ValueError, TypeError, KeyError, OSError) as exc:   # OnnxImportError is a ValueError
        print(f"tapeviz import: error: {exc}", file=sys.stderr)
        return 1
    print(summary, file=sys.stderr if args.listing == "-" else sys.stdout)
    return 0


def build(args):
    """(the tape asked for, a one-line summary)."""
    prog = ad.from_onnx(args.model, inputs=_shapes(args.shape) or None)
    summary = f"{args.model}: {prog!r}, forward tape of {len(prog.tape.eqns)} equations"
    if not args.grad:
        return prog.tape, summary
    n = len(prog.input_names)
    floats = tuple(i for i, x in enumerate(prog.inputs) if np.issubdtype(x.dtype, np.floating))
    weights = (n,) if prog.params else ()
    argnums = {"all": floats + weights, "inputs": floats, "params": weights}[args.wrt]
    if not argnums:
        raise ValueError(f"--wrt {args.wrt}: the model has no float {'inputs or ' * (args.wrt == 'all')}"
                         f"{'inputs' if args.wrt == 'inputs' else 'initializers'} to differentiate")
    loss = LOSSES[args.loss]

    def f(*args_):
        out = prog.function(*args_)
        return loss(out[0] if isinstance(out, tuple) else out)
    gt = ad.grad_tape(f, *prog.inputs, prog.params, argnums=argnums if len(argnums) > 1 else argnums[0])
    return gt, f"{summary}; gradient tape of {len(gt.eqns)} equations"


def listing(tape) -> str:
    """The tape's text listing, a ``-- <node>`` line heading each run of equations of one ONNX
    node (their ``source``), after the forward/backward headings of a gradient tape."""
    marks = dict(getattr(tape, "sections", ()))
    last = None
    for i, e in enumerate(tape.eqns):
        if (e.source is not None and e.source != last) or i in marks:
            marks[i] = " -- ".join(filter(None, [marks.get(i), e.source]))
        last = e.source
    return format_tape(tape, sections=tuple(marks.items())) + "\n"


def _shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    out = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        try:
            out[name] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            sep = ""
        if not sep or not name:
            raise ValueError(f"--shape {spec!r}: write NAME=D,D,... (e.g. x=1,3,32,32)")
    return out


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
