"""Control flow, resolved at import: If runs its taken branch inline, Loop and Scan are unrolled
(a tape has one path and static shapes)."""
from __future__ import annotations

import numpy as np

from ...tracer import Tracer
from .nodes import op, resolve_axis

MAX_UNROLL = 1 << 14     # iterations of a Loop or Scan unrolled into the tape


@op("If", subgraphs=("then_branch", "else_branch"))
def _if(n, cond):
    """A condition known at import (a test on shapes, a flag): the taken branch runs inline, so
    the tape holds it alone. A condition on the model's values is refused (a tape has one path)."""
    then_branch, else_branch = n.attr("then_branch"), n.attr("else_branch")
    if isinstance(cond, Tracer):
        raise n.error("its condition depends on the model's inputs or parameters; If is supported only "
                      "when the condition folds to a constant at import (then the taken branch is inlined)")
    if np.size(cond) != 1:
        raise n.error(f"its condition has {np.size(cond)} elements, not one")
    return n.run_graph(then_branch if bool(np.asarray(cond).reshape(-1)[0]) else else_branch)


@op("Loop", subgraphs=("body",))
def _loop(n, trip=None, cond=None, *carried):
    """Unrolled at import: the trip count and every iteration's condition must be known then (a
    loop over a fixed range, as exporters emit for Python loops); a loop whose end depends on the
    model's values is refused. Scan outputs are stacked along a new first axis."""
    body = n.attr("body")
    names = [i.name for i in body.input]
    trip = None if trip is None else int(n.static(trip, "trip count M").reshape(-1)[0])
    scans = [[] for _ in range(len(body.output) - 1 - len(carried))]
    i = 0
    while trip is None or i < trip:
        if cond is not None:
            if isinstance(cond, Tracer):
                raise n.error(f"the condition of iteration {i} depends on the model's inputs or parameters; "
                              "Loop is supported only when its trip count and conditions fold to constants "
                              "at import (then it is unrolled)")
            if not bool(np.asarray(cond).reshape(-1)[0]):
                break
        if i == MAX_UNROLL:
            raise n.error(f"more than {MAX_UNROLL} iterations to unroll")
        flag = np.array(True) if cond is None else np.asarray(cond).reshape(())
        outs = n.run_graph(body, dict(zip(names, [np.array(i, np.int64), flag, *carried])))
        cond, carried = outs[0], outs[1:1 + len(carried)]
        for scan, value in zip(scans, outs[1 + len(carried):]):
            scan.append(value)
        i += 1
    if scans and i == 0:
        raise n.error("no iteration ran, so its scan outputs have no known shape")
    return (*carried, *(np.stack(s, axis=0) for s in scans))


@op("Scan", since=9, subgraphs=("body",))
def _scan(n, *args):
    """Unrolled over the scan axis (a static length): the body runs once per slice, states carried."""
    body = n.attr("body")
    m = n.attr("num_scan_inputs")
    states, xs = list(args[:len(args) - m]), args[len(args) - m:]
    n_out = len(body.output) - len(states)
    in_axes = [resolve_axis(a, np.ndim(x)) for a, x in zip(n.attr("scan_input_axes", (0,) * m), xs)]
    in_reverse = n.attr("scan_input_directions", (0,) * m)
    out_axes, out_reverse = n.attr("scan_output_axes", (0,) * n_out), n.attr("scan_output_directions", (0,) * n_out)
    lengths = {np.shape(x)[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise n.error(f"the scan inputs have different lengths {sorted(lengths)} along their scan axes")
    steps = lengths.pop()
    if steps == 0 or steps > MAX_UNROLL:
        raise n.error(f"{steps} steps to unroll (1 to {MAX_UNROLL} are supported)")
    names = [i.name for i in body.input]
    ys = [[] for _ in range(n_out)]
    for t in range(steps):
        slices = [np.take(x, steps - 1 - t if rev else t, axis=a) for x, a, rev in zip(xs, in_axes, in_reverse)]
        outs = n.run_graph(body, dict(zip(names, states + slices)))
        states = list(outs[:len(states)])
        for y, value in zip(ys, outs[len(states):]):
            y.append(value)
    return (*states, *(np.stack(y[::-1] if rev else y, axis=a) for y, a, rev in zip(ys, out_axes, out_reverse)))
