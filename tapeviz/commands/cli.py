"""``tapeviz export MODULE:FUNCTION --args ... --out FILE``: diagrams for docs builds.

Arguments are written in a tiny expression language, parsed (never evaluated) from Python
syntax: numbers, strings, True/False/None, tuples, lists, dicts with string keys, and calls of
the array makers randn(3, 4), rand(3), zeros(3, 4), ones(3), full((2, 3), 0.5), arange(6),
eye(3) and array([1.0, 2.0]). Random arrays come from one generator seeded by ``--seed``, so
every run draws the same figure. Python ints stay static (baked into the tape), as in ad.trace.

    tapeviz export mymodel:loss --args "{'W': randn(3,4), 'b': zeros(4)}" "randn(8,3)" --out g.svg
    tapeviz export mymodel:loss --example mymodel:example_args --view backward --out g.png
    tapeviz export path/to/file.py:f --args "randn(5)" --window %7:2 --format dot
    tapeviz export mymodel:loss --example mymodel:example_args --collapse-by scope --depth 2 --out g.svg

The user's calls (``ad.scope``, functions called by the traced one) are drawn as nested clusters
whenever the tape has any (``--no-scopes`` leaves them out); ``--collapse-by scope`` draws each
call as one node beside its pullback, a loop's calls folded into one.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import sys

import numpy as np

import ad

from ..draw import VIEWS
from ..figures import FORMATS, SUFFIXES, export_bytes
from ..grouping import BY
from ..renderer import RENDERERS, RenderError
from ..values import values_of
from . import onnx_import

MAKERS = {   # name -> (function of (rng, *args), what it takes)
    "randn": (lambda rng, *shape: rng.standard_normal(_shape(shape)), "randn(3, 4): standard normal"),
    "rand": (lambda rng, *shape: rng.random(_shape(shape)), "rand(3): uniform in [0, 1)"),
    "zeros": (lambda rng, *shape: np.zeros(_shape(shape)), "zeros(3, 4)"),
    "ones": (lambda rng, *shape: np.ones(_shape(shape)), "ones(3)"),
    "full": (lambda rng, shape, value: np.full(_shape(shape if isinstance(shape, tuple) else (shape,)),
                                               float(value)), "full((2, 3), 0.5)"),
    "arange": (lambda rng, n: np.arange(float(_int(n))), "arange(6): 0.0 ... 5.0"),
    "eye": (lambda rng, n: np.eye(_int(n)), "eye(3)"),
    "array": (lambda rng, data: np.array(data, dtype=float), "array([1.0, 2.0])"),
}


class ArgumentError(ValueError):
    """An --args expression outside the grammar."""


def _int(x) -> int:
    if type(x) is not int or x < 0:
        raise ArgumentError(f"expected a non-negative int, got {x!r}")
    return x


def _shape(dims) -> tuple[int, ...]:
    return tuple(_int(d) for d in dims)


def parse_arg(text: str, rng: np.random.Generator):
    """The value of one --args expression (see the module docstring for the grammar)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ArgumentError(f"--args {text!r} is not an expression: {exc.msg}") from None
    return _value(tree.body, text, rng)


def _value(node, text: str, rng):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex, str, bool, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        x = _value(node.operand, text, rng)
        if isinstance(x, (int, float, complex)) and not isinstance(x, bool):
            return -x if isinstance(node.op, ast.USub) else x
    elif isinstance(node, ast.Tuple):
        return tuple(_value(e, text, rng) for e in node.elts)
    elif isinstance(node, ast.List):
        return [_value(e, text, rng) for e in node.elts]
    elif isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                            for k in node.keys):
        return {k.value: _value(v, text, rng) for k, v in zip(node.keys, node.values)}
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in MAKERS
          and not node.keywords):
        args = [_value(a, text, rng) for a in node.args]
        try:
            return MAKERS[node.func.id][0](rng, *args)
        except TypeError as exc:
            raise ArgumentError(f"in --args {text!r}: {node.func.id}: {exc}; write "
                                f"{MAKERS[node.func.id][1]}") from None
    raise ArgumentError(
        f"--args {text!r}: {ast.unparse(node)!r} is outside the argument grammar. Write numbers, "
        f"strings, tuples, lists, dicts with string keys and calls of "
        f"{', '.join(m[1] for m in MAKERS.values())}; or pass --example MODULE:FACTORY, a "
        f"function returning the arguments tuple.")


def load(ref: str):
    """The object named by ``module:attr`` or ``path/to/file.py:attr`` (the current directory is
    importable, as with ``python -m``)."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not attr:
        raise ValueError(f"{ref!r}: write MODULE:NAME, e.g. mypackage.model:loss")
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(os.path.basename(module_name)[:-3], module_name)
        if spec is None or not os.path.exists(module_name):
            raise FileNotFoundError(f"no such file: {module_name}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AttributeError(f"{module_name} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tapeviz", description="Draw the tapes of numpy functions.")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write a diagram or listing of a function's tape",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("function", metavar="MODULE:FUNCTION")
    given = ex.add_mutually_exclusive_group(required=True)
    given.add_argument("--args", nargs="+", metavar="EXPR", help="the arguments, one expression each")
    given.add_argument("--example", metavar="MODULE:FACTORY", help="a function returning the arguments")
    ex.add_argument("--argnums", type=int, nargs="+", default=[0], help="arguments to differentiate")
    ex.add_argument("--form", choices=("lifted", "closure"), default="lifted",
                    help="lifted: the gradient tape; closure: the primal tape (its pullbacks are "
                         "Python closures, so it has no backward section to draw)")
    ex.add_argument("--optimize", action="store_true", help="run ad.passes.optimize first")
    ex.add_argument("--view", choices=VIEWS, default="joint")
    ex.add_argument("--format", choices=FORMATS, help="default: from --out's suffix, else svg")
    ex.add_argument("--out", metavar="FILE", help="default: standard output (text formats)")
    ex.add_argument("--window", metavar="NODE:K", help="only the nodes within K steps of NODE")
    ex.add_argument("--collapse", action="store_true", help="one node per rule instance (--collapse-by rule)")
    ex.add_argument("--collapse-by", choices=BY, metavar="{" + ",".join(BY) + "}",
                    help="collapse: one node per rule instance, per run of one source line or ONNX node, "
                         "or per call of the user's functions (scope), each beside its pullback")
    ex.add_argument("--depth", type=int, default=1, metavar="K",
                    help="--collapse-by scope: the depth of the calls drawn as nodes (default 1: the "
                         "calls the traced function makes)")
    ex.add_argument("--scopes", action=argparse.BooleanOptionalAction, default=None,
                    help="draw the user's calls as nested clusters (default: when the tape has any)")
    ex.add_argument("--values", action=argparse.BooleanOptionalAction, default=True,
                    help="summarise every value (runs the tape on the arguments)")
    ex.add_argument("--seed", type=int, default=0, help="seed of randn/rand")
    ex.add_argument("--title")
    ex.add_argument("--renderer", choices=RENDERERS, default="auto")
    onnx_import.add_parser(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "import":
        return onnx_import.run(args)
    try:
        data = _export(args)
    except (ValueError, TypeError, KeyError, AttributeError, ImportError, OSError, RenderError) as exc:
        print(f"tapeviz: error: {exc}", file=sys.stderr)
        return 1
    if args.out:
        with open(args.out, "wb") as f:
            f.write(data)
    else:
        sys.stdout.buffer.write(data)
    return 0


def _export(args) -> bytes:
    fmt = args.format or (SUFFIXES.get(os.path.splitext(args.out)[1].lower()) if args.out else None) or "svg"
    if args.out is None and fmt in ("png", "pdf"):
        raise ValueError(f"{fmt} is binary: name a file with --out")
    if args.form == "closure" and args.view == "backward":
        raise ValueError("--form closure draws the primal tape, which has no backward section; "
                         "use --form lifted to see the backward pass")
    if args.collapse and args.collapse_by not in (None, "rule"):
        raise ValueError(f"--collapse is --collapse-by rule; pass one of them, not --collapse-by {args.collapse_by}")
    if args.depth < 1:
        raise ValueError(f"--depth {args.depth}: the depth of the calls drawn, 1 or more")
    if args.depth != 1 and args.collapse_by != "scope":
        raise ValueError("--depth is the depth of --collapse-by scope; pass --collapse-by scope too")
    collapse = args.collapse_by or args.collapse
    f = load(args.function)
    if args.example:
        call_args = load(args.example)()
        call_args = call_args if isinstance(call_args, tuple) else (call_args,)
    else:
        rng = np.random.default_rng(args.seed)
        call_args = tuple(parse_arg(text, rng) for text in args.args)
    if args.form == "closure":
        tape = ad.trace(f, *call_args)
    else:
        argnums = args.argnums[0] if len(args.argnums) == 1 else tuple(args.argnums)
        tape = ad.grad_tape(f, *call_args, argnums=argnums)
        if args.optimize:
            tape = ad.optimize(tape)
    values = values_of(tape, *call_args) if args.values and fmt != "txt" else None
    return export_bytes(tape, fmt, view=args.view, window=args.window, collapse=collapse, depth=args.depth,
                        values=values, title=args.title, scopes=args.scopes, renderer=args.renderer)


if __name__ == "__main__":
    sys.exit(main())
