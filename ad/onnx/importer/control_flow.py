"""Control flow, resolved while tracing: If runs its taken branch inline, Loop and Scan are
unrolled (a tape has one path and static shapes). A condition or trip count computed from the
model's values is read in this call and recorded as a guard (``guard %7 True``), so a call that
takes another branch or count traces again (``ad.grad`` does; a tape raises GuardError)."""
from __future__ import annotations

import numpy as np

from .nodes import op, resolve_axis

MAX_UNROLL = 1 << 14     # iterations of a Loop or Scan unrolled into the tape


def _scalar(n, x, what: str):
    """A one-element operand as a scalar (a traced one stays traced: ``bool`` and ``int`` of it
    record the guard)."""
    if np.size(x) != 1:
        raise n.error(f"its {what} has {np.size(x)} elements, not one")
    return np.reshape(x, ())


@op("If", subgraphs=("then_branch", "else_branch"))
def _if(n, cond):
    """The taken branch runs inline, so the tape holds it alone (and the guard on the condition
    when it depends on the model's values)."""
    then_branch, else_branch = n.attr("then_branch"), n.attr("else_branch")
    return n.run_graph(then_branch if bool(_scalar(n, cond, "condition")) else else_branch)


@op("Loop", subgraphs=("body",))
def _loop(n, trip=None, cond=None, *carried):
    """Unrolled: the trip count and each iteration's condition are read in this call (guarded when
    computed from the model's values), at most ``MAX_UNROLL`` iterations. Scan outputs are
    stacked along a new first axis."""
    body = n.attr("body")
    names = [i.name for i in body.input]
    trip = None if trip is None else int(_scalar(n, trip, "trip count M"))
    if cond is None and trip is not None and trip > MAX_UNROLL:      # refused before tracing any
        raise n.error(f"a trip count of {trip}: more than {MAX_UNROLL} iterations to unroll")
    scans = [[] for _ in range(len(body.output) - 1 - len(carried))]
    i = 0
    while (trip is None or i < trip) and (cond is None or bool(_scalar(n, cond, f"condition of iteration {i}"))):
        if i == MAX_UNROLL:
            raise n.error(f"more than {MAX_UNROLL} iterations to unroll")
        outs = n.run_graph(body, dict(zip(names, [np.array(i, np.int64), np.array(True), *carried])))
        cond, carried = outs[0], outs[1:1 + len(carried)]
        for scan, value in zip(scans, outs[1 + len(carried):]):
            scan.append(value)
        i += 1
    if scans and i == 0:
        raise n.error("no iteration ran, so its scan outputs have no known shape")
    return (*carried, *(np.stack(s, axis=0) for s in scans))


@op("Scan", since=8, subgraphs=("body",))
def _scan(n, *args):
    """Unrolled over the scan axis (its length is the inputs' shape, which the tape is specialised
    to): the body runs once per slice, states carried. Before opset 9, axis 0 of the states and
    scan inputs is a batch, each entry scanned on its own (``_scan_batches``)."""
    body = n.attr("body")
    m = n.attr("num_scan_inputs")
    if n.opset < 9:
        return _scan_batches(n, body, m, *args)
    states, xs = list(args[:len(args) - m]), args[len(args) - m:]
    n_out = len(body.output) - len(states)
    in_axes = [resolve_axis(a, np.ndim(x)) for a, x in zip(n.attr("scan_input_axes", (0,) * m), xs)]
    in_reverse = n.attr("scan_input_directions", (0,) * m)
    out_axes, out_reverse = n.attr("scan_output_axes", (0,) * n_out), n.attr("scan_output_directions", (0,) * n_out)
    return _unroll(n, body, states, xs, in_axes, in_reverse, out_axes, out_reverse)


def _unroll(n, body, states, xs, in_axes, in_reverse, out_axes, out_reverse) -> tuple:
    """The final states and the stacked scan outputs of running ``body`` once per slice of ``xs``."""
    lengths = {np.shape(x)[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise n.error(f"the scan inputs have different lengths {sorted(lengths)} along their scan axes")
    steps = lengths.pop()
    if steps == 0 or steps > MAX_UNROLL:
        raise n.error(f"{steps} steps to unroll (1 to {MAX_UNROLL} are supported)")
    names = [i.name for i in body.input]
    ys = [[] for _ in range(len(body.output) - len(states))]
    for t in range(steps):
        slices = [np.take(x, steps - 1 - t if rev else t, axis=a) for x, a, rev in zip(xs, in_axes, in_reverse)]
        outs = n.run_graph(body, dict(zip(names, list(states) + slices)))
        states = list(outs[:len(states)])
        for y, value in zip(ys, outs[len(states):]):
            y.append(value)
    return (*states, *(np.stack(y[::-1] if rev else y, axis=a) for y, a, rev in zip(ys, out_axes, out_reverse)))


def _scan_batches(n, body, m, lengths, *args) -> tuple:
    """Scan of opset 8: each entry of axis 0 (a batch) of the states and scan inputs is scanned
    on its own along its first axis (``directions`` per scan input) and the results stacked;
    ``sequence_lens`` shorter than the sequence is refused."""
    states, xs = list(args[:len(args) - m]), args[len(args) - m:]
    if lengths is not None and any(k != np.shape(xs[0])[1] for k in n.ints(lengths, "sequence_lens")):
        raise n.error("sequence_lens shorter than the sequence is not supported")
    reverse, n_out = n.attr("directions", (0,) * m), len(body.output) - len(states)
    batches = [_unroll(n, body, [s[b] for s in states], [x[b] for x in xs], (0,) * m, reverse, (0,) * n_out,
                       (0,) * n_out) for b in range(np.shape(xs[0])[0])]
    return tuple(np.stack(outs) for outs in zip(*batches))
