"""RNN, GRU and LSTM, unrolled over time (the input projection of all time steps is one matmul)."""
from __future__ import annotations

import numpy as np

from ... import nn
from .nodes import const, op
from .ops_elementwise import softsign

_ACTIVATIONS = {"Sigmoid": nn.sigmoid, "Tanh": np.tanh, "Relu": nn.relu, "Softsign": softsign,
                "Softplus": nn.softplus}


class _Recurrence:
    """What RNN, GRU and LSTM share: layout, directions, activations, clip, the input projection
    of every time step at once (one matmul), and the outputs Y and Y_h."""

    def __init__(self, n, x, w, r, b, seq_lens, h0, gates: int, default_acts: tuple[str, ...]):
        self.n = n
        self.layout = n.attr("layout", 0)
        if self.layout:
            x = np.transpose(x, (1, 0, 2))
            h0 = None if h0 is None else np.transpose(h0, (1, 0, 2))
        self.hidden = n.attr("hidden_size")
        direction = n.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise n.error(f"direction={direction!r}")
        self.reverse = [False, True] if direction == "bidirectional" else [direction == "reverse"]
        names = n.attr("activations", None) or default_acts * len(self.reverse)
        if n.attr("activation_alpha", None) is not None or n.attr("activation_beta", None) is not None:
            raise n.error("activation_alpha/activation_beta are not supported")
        unknown = [a for a in names if a not in _ACTIVATIONS]
        if unknown:
            raise n.error(f"activations {unknown} are not supported ({', '.join(_ACTIVATIONS)})")
        k = len(default_acts)
        self.acts = [[_ACTIVATIONS[a] for a in names[d * k:(d + 1) * k]] for d in range(len(self.reverse))]
        self.clip = n.attr("clip", None)
        seq, batch = np.shape(x)[:2]
        if seq_lens is not None and any(v != seq for v in n.ints(seq_lens, "sequence_lens")):
            raise n.error("sequence_lens shorter than the sequence are not supported (pad-free batches only)")
        self.x, self.w, self.r, self.b, self.gates = x, w, r, b, gates
        self.h0 = h0 if h0 is not None else np.zeros((len(self.reverse), batch, self.hidden), np.result_type(x))

    def pre(self, v):
        return v if self.clip is None else np.clip(v, const(-self.clip, v), const(self.clip, v))

    def projected(self, d):
        """(the input projection per time step (+ the W bias), R transposed, the R bias)."""
        gh = self.gates * self.hidden
        xw = np.matmul(self.x, np.transpose(self.w[d]))          # (seq, batch, G*H)
        rb = None
        if self.b is not None:
            xw = xw + self.b[d][:gh]
            rb = self.b[d][gh:]
        return xw, np.transpose(self.r[d]), rb

    def steps(self, d):
        seq = np.shape(self.x)[0]
        return range(seq - 1, -1, -1) if self.reverse[d] else range(seq)

    def outputs(self, per_dir: list[tuple[list, object]], *extra):
        """Y (seq, dirs, batch, H) and Y_h (dirs, batch, H), in the node's layout; then ``extra``."""
        ys = [np.stack(hs[::-1] if rev else hs, axis=0) for (hs, _), rev in zip(per_dir, self.reverse)]
        y = np.stack(ys, axis=1)
        last = np.stack([h for _, h in per_dir], axis=0)
        if self.layout:
            y = np.transpose(y, (2, 0, 1, 3))
            last = np.transpose(last, (1, 0, 2))
            extra = tuple(np.transpose(e, (1, 0, 2)) for e in extra)
        return (y, last, *extra)


def _split_gates(v, k):
    return np.split(v, k, axis=-1)


@op("RNN")
def _rnn(n, x, w, r, b=None, seq_lens=None, h0=None):
    rec = _Recurrence(n, x, w, r, b, seq_lens, h0, 1, ("Tanh",))
    per_dir = []
    for d in range(len(rec.reverse)):
        xw, rt, rb = rec.projected(d)
        (f,) = rec.acts[d]
        h, hs = rec.h0[d], []
        for t in rec.steps(d):
            v = xw[t] + h @ rt
            h = f(rec.pre(v if rb is None else v + rb))
            hs.append(h)
        per_dir.append((hs, h))
    return rec.outputs(per_dir)


@op("GRU")
def _gru(n, x, w, r, b=None, seq_lens=None, h0=None):
    rec = _Recurrence(n, x, w, r, b, seq_lens, h0, 3, ("Sigmoid", "Tanh"))
    linear_before_reset = n.attr("linear_before_reset", 0)
    H = rec.hidden
    per_dir = []
    for d in range(len(rec.reverse)):
        xw, rt, rb = rec.projected(d)
        f, g = rec.acts[d]
        rb = np.zeros(3 * H, np.result_type(x)) if rb is None else rb
        h, hs = rec.h0[d], []
        for t in rec.steps(d):
            xz, xr, xh = _split_gates(xw[t], 3)
            hz, hr = _split_gates(h @ rt[:, :2 * H] + rb[:2 * H], 2)
            z, rgate = f(rec.pre(xz + hz)), f(rec.pre(xr + hr))
            if linear_before_reset:
                cand = g(rec.pre(xh + rgate * (h @ rt[:, 2 * H:] + rb[2 * H:])))
            else:
                cand = g(rec.pre(xh + (rgate * h) @ rt[:, 2 * H:] + rb[2 * H:]))
            h = (1 - z) * cand + z * h
            hs.append(h)
        per_dir.append((hs, h))
    return rec.outputs(per_dir)


@op("LSTM")
def _lstm(n, x, w, r, b=None, seq_lens=None, h0=None, c0=None, p=None):
    if n.attr("input_forget", 0):
        raise n.error("input_forget=1 is not supported")
    rec = _Recurrence(n, x, w, r, b, seq_lens, h0, 4, ("Sigmoid", "Tanh", "Tanh"))
    if c0 is not None and rec.layout:
        c0 = np.transpose(c0, (1, 0, 2))
    c0 = np.zeros_like(rec.h0) if c0 is None else c0
    per_dir, cells = [], []
    for d in range(len(rec.reverse)):
        xw, rt, rb = rec.projected(d)
        f, g, hact = rec.acts[d]
        pi, po, pf = (None, None, None) if p is None else _split_gates(p[d], 3)
        h, c, hs = rec.h0[d], c0[d], []
        for t in rec.steps(d):
            v = xw[t] + h @ rt
            i, o, fg, cand = _split_gates(v if rb is None else v + rb, 4)
            if p is not None:
                i, fg = i + pi * c, fg + pf * c
            i, fg, cand = f(rec.pre(i)), f(rec.pre(fg)), g(rec.pre(cand))
            c = fg * c + i * cand
            o = f(rec.pre(o if p is None else o + po * c))
            h = o * hact(c)
            hs.append(h)
        per_dir.append((hs, h))
        cells.append(c)
    return rec.outputs(per_dir, np.stack(cells, axis=0))
