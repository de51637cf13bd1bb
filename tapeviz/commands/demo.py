"""The main job on the built-in example: trace and differentiate an MLP loss, print the tape,
the lifted gradient tape and the compiled gradient, run the checker, and write the figures.

    python -m tapeviz.commands.demo --out out
"""
from __future__ import annotations

import argparse
import pathlib

import numpy as np

import ad
from ad.examples import mlp_example, mlp_loss

from ..examples import mlp_figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out", help="folder for the figures (default: out)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    params, x, y = mlp_example()
    print("== the traced program (plain numpy, recorded as an SSA tape)")
    print(ad.trace(mlp_loss, params, x, y))

    gt = ad.grad_tape(mlp_loss, params, x, y)
    opt = ad.optimize(gt)
    print(f"\n== the gradient tape: forward + lifted pullbacks "
          f"({len(gt.eqns)} equations, {len(opt.eqns)} after optimisation)")
    print(opt)
    print("\n== compiled to numpy source")
    print(ad.compile(opt).source)

    value, grads = opt(params, x, y)
    closure = ad.grad(mlp_loss, form="closure")(params, x, y)
    worst = max(float(np.max(np.abs(grads[k] - closure[k]))) for k in grads)
    print(f"loss {float(value):.6f}; lifted vs closure gradients: max |difference| {worst:.1e}")

    print("\n== gradient check")
    report = ad.check(mlp_loss, params, x, y)
    print(report)

    paths = mlp_figures(out)
    print("\n== figures")
    for p in paths:
        print(f"  {p}")
    print("\nnext: the notebooks (.venv/bin/jupyter lab notebooks/, or `make notebooks` for HTML);\n"
          "      in a notebook, tapeviz.debug(mlp_loss, params, x, y) opens the debugger")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
