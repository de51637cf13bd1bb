"""Neural-network ops: convolutions, pooling, normalizations, attention, softmax, and the
layout ops of vision models."""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from ... import nn
from ...nn.pool import max_pool_p, mean_pool_p
from ...tracer import Tracer
from .files import dtype_of
from .nodes import const, op, resolve_axis


def _pads(n, spatial, kernel, stride, dilation) -> tuple[tuple[int, int], ...]:
    """(low, high) per spatial axis from ``pads`` or ``auto_pad``."""
    auto = n.attr("auto_pad", "NOTSET")
    nd = len(kernel)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for size, k, s, d in zip(spatial, kernel, stride, dilation):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
            small = total // 2
            out.append((small, total - small) if auto == "SAME_UPPER" else (total - small, small))
        return tuple(out)
    if auto == "VALID":
        return ((0, 0),) * nd
    if auto != "NOTSET":
        raise n.error(f"auto_pad={auto!r} is not supported")
    pads = n.attr("pads", (0,) * (2 * nd))
    return tuple((pads[i], pads[i + nd]) for i in range(nd))


def _window(n, x, w=None):
    nd = np.ndim(x) - 2
    kernel = n.attr("kernel_shape", None) or (np.shape(w)[2:] if w is not None else None)
    if kernel is None:
        raise n.error("attribute 'kernel_shape' is required")
    kernel = tuple(kernel)
    stride = tuple(n.attr("strides", (1,) * nd))
    dilation = tuple(n.attr("dilations", (1,) * nd))
    return kernel, stride, dilation


def _check_padded(n, x, pads, extra=None):
    """Refuse, before anything is allocated, an input padded beyond the size limit (huge
    ``pads`` on a small image)."""
    extra = extra or (0,) * len(pads)
    n.check_size(np.shape(x)[:2] + tuple(s + lo + hi + e for s, (lo, hi), e in zip(np.shape(x)[2:], pads, extra)),
                 "padded input", np.result_type(x))


def _channel(v, ndim):
    return np.reshape(v, (-1,) + (1,) * (ndim - 2))


@op("Conv")
def _conv(n, x, w, b=None):
    kernel, stride, dilation = _window(n, x, w)
    pads = _pads(n, np.shape(x)[2:], kernel, stride, dilation)
    _check_padded(n, x, pads)
    y = nn.conv(x, w, stride=stride, padding=pads, dilation=dilation, groups=n.attr("group", 1))
    return y if b is None else y + _channel(b, np.ndim(y))


@op("ConvTranspose")
def _conv_transpose(n, x, w, b=None):
    kernel, stride, dilation = _window(n, x, w)
    nd = len(kernel)
    extra = n.attr("output_padding", (0,) * nd)
    out_shape = n.attr("output_shape", None)
    if out_shape is not None:
        out_shape = tuple(out_shape)[-nd:]
        totals = [s * (i - 1) + e + (k - 1) * d + 1 - o for i, s, e, k, d, o in
                  zip(np.shape(x)[2:], stride, extra, kernel, dilation, out_shape)]
        extra = tuple(e + max(-t, 0) for e, t in zip(extra, totals))     # a larger output: zeros at the end
        totals = [max(t, 0) for t in totals]
        upper = n.attr("auto_pad", "NOTSET") == "SAME_UPPER"
        pads = tuple((t // 2, t - t // 2) if upper else (t - t // 2, t // 2) for t in totals)
        n.attr("pads", None)
    elif n.attr("auto_pad", "NOTSET") in ("SAME_UPPER", "SAME_LOWER"):
        upper = n.attr("auto_pad") == "SAME_UPPER"
        totals = [s * (i - 1) + e + (k - 1) * d + 1 - i * s for i, s, e, k, d in
                  zip(np.shape(x)[2:], stride, extra, kernel, dilation)]
        pads = tuple((t // 2, t - t // 2) if upper else (t - t // 2, t // 2) for t in totals)
    else:
        pads = _pads(n, np.shape(x)[2:], kernel, stride, dilation)
    n.check_size((np.shape(x)[0], np.shape(w)[1] * n.attr("group", 1)) + tuple(
        s * (i - 1) + e + (k - 1) * d + 1 for i, s, e, k, d in zip(np.shape(x)[2:], stride, extra, kernel, dilation)),
        "output (before cropping the pads)", np.result_type(x))
    y = nn.conv_transpose(x, w, stride=stride, padding=pads, output_padding=tuple(extra), dilation=dilation,
                          groups=n.attr("group", 1))
    return y if b is None else y + _channel(b, np.ndim(y))


def _pool_geometry(n, x):
    kernel, stride, dilation = _window(n, x)
    spatial = np.shape(x)[2:]
    pads = _pads(n, spatial, kernel, stride, dilation)
    ceil = n.attr("ceil_mode", 0)
    extra = []
    for size, k, s, d, (lo, hi) in zip(spatial, kernel, stride, dilation, pads):
        span = size + lo + hi - (k - 1) * d - 1
        out = (-(-span // s) if ceil else span // s) + 1
        if ceil and (out - 1) * s >= size + lo:
            out -= 1
        extra.append(max(0, (out - 1) * s + (k - 1) * d + 1 - (size + lo + hi)))
    _check_padded(n, x, pads, extra)
    return kernel, stride, dilation, pads, tuple(extra)


@op("MaxPool")
def _max_pool(n, x):
    """The maximum of each window; with a second output, where it is: its index in the
    flattened input (spatial axes row-major, or column-major with ``storage_order=1``), the
    first maximum of the window as ONNX scans it."""
    kernel, stride, dilation, pads, extra = _pool_geometry(n, x)
    padding = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    y = max_pool_p.bind(x, window=kernel, stride=stride, padding=padding, dilation=dilation)
    column_major = n.attr("storage_order", 0)
    if len(n.proto.output) < 2 or not n.proto.output[1]:
        return y
    dt = np.result_type(x)
    low = -np.inf if dt.kind == "f" else np.iinfo(dt).min
    padded = np.pad(x, ((0, 0), (0, 0)) + padding, constant_values=low)
    out = np.shape(y)[2:]
    offsets = list(itertools.product(*map(range, kernel)))
    windows = np.stack([padded[(..., *(slice(k * d, k * d + s * (o - 1) + 1, s)
                                       for k, d, s, o in zip(offset, dilation, stride, out)))]
                        for offset in offsets])
    best = np.argmax(windows, axis=0)                     # the first maximum, in the window's row-major order
    spatial = np.shape(x)[2:]
    index = np.reshape(np.arange(math.prod(np.shape(x)[:2])) * math.prod(spatial), np.shape(x)[:2] + (1,) * len(out))
    for a, (k, d, s, (lo, _)) in enumerate(zip(kernel, dilation, stride, padding)):
        tap = (best // math.prod(kernel[a + 1:])) % k
        coord = tap * d + np.reshape(np.arange(out[a]) * s - lo, (-1,) + (1,) * (len(out) - 1 - a))
        step = math.prod(spatial[:a]) if column_major else math.prod(spatial[a + 1:])
        index = index + coord * step
    return y, index.astype(np.int64)


@op("MaxUnpool")
def _max_unpool(n, x, indices, output_shape=None):
    """MaxPool's values written back where its indices say (into the shape the pooling came
    from), zeros elsewhere; ``output_shape`` pads that shape with zeros at the end."""
    kernel, stride = n.attr("kernel_shape"), n.attr("strides", (1,) * len(n.attr("kernel_shape")))
    nd = len(kernel)
    pads = n.attr("pads", (0,) * (2 * nd))
    shape = np.shape(x)[:2] + tuple((i - 1) * s + k - pads[a] - pads[a + nd]
                                    for a, (i, s, k) in enumerate(zip(np.shape(x)[2:], stride, kernel)))
    padded = shape if output_shape is None else n.ints(output_shape, "output_shape")
    n.check_size(np.maximum(shape, padded), "output", np.result_type(x))
    out = np.zeros_like(x, shape=(math.prod(shape),))
    out[np.reshape(indices, -1)] = np.reshape(x, -1)
    out = np.reshape(out, shape)
    return np.pad(out, [(0, max(p - s, 0)) for s, p in zip(shape, padded)]) if padded != shape else out


@op("LpPool")
def _lp_pool(n, x):
    """``(sum over the window of |x|^p)^(1/p)``: the padding counts as zeros."""
    p = n.attr("p", 2)
    kernel, stride, dilation, pads, extra = _pool_geometry(n, x)
    padding = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    powered = np.abs(x) ** const(p, x) if p != 2 else x * x
    total = mean_pool_p.bind(powered, window=kernel, stride=stride, padding=padding, dilation=dilation)
    total = total * const(math.prod(kernel), total)
    return np.sqrt(total) if p == 2 else total ** const(1 / p, total)


@op("AveragePool")
def _average_pool(n, x):
    """The mean over each window, divided by the count ONNX asks for: ``mean_pool`` of the values
    over ``mean_pool`` of a mask of the counted positions (a constant, computed at import)."""
    kernel, stride, dilation, pads, extra = _pool_geometry(n, x)
    if n.attr("count_include_pad", 0):
        x = np.pad(x, ((0, 0), (0, 0)) + pads) if any(map(any, pads)) else x
        padding = tuple((0, e) for e in extra)
    else:
        padding = tuple((lo, hi + e) for (lo, hi), e in zip(pads, extra))
    geometry = dict(window=kernel, stride=stride, padding=padding, dilation=dilation)
    y = mean_pool_p.bind(x, **geometry)
    count = mean_pool_p.bind(np.ones((1, 1) + np.shape(x)[2:], np.result_type(x)), **geometry)
    return y if np.all(count == 1) else y / count


@op("GlobalAveragePool")
def _global_average_pool(n, x):
    return np.mean(x, axis=tuple(range(2, np.ndim(x))), keepdims=True)


@op("GlobalMaxPool")
def _global_max_pool(n, x):
    return np.max(x, axis=tuple(range(2, np.ndim(x))), keepdims=True)


@op("BatchNormalization")
def _batch_norm(n, x, scale, bias, mean, var):
    eps, momentum = n.attr("epsilon", 1e-5), n.attr("momentum", 0.9)
    if n.opset < 9:
        n.attr("spatial", 1)
    if n.opset < 7:
        n.attr("is_test", 0)
    training = n.opset >= 14 and n.attr("training_mode", 0)
    ndim = np.ndim(x)
    dt = np.result_type(x)
    if not training:
        inv = _channel(scale / np.sqrt(var + const(eps, var)), ndim)
        return (x - _channel(mean, ndim)) * inv.astype(dt) + _channel(bias, ndim)
    axes = (0,) + tuple(range(2, ndim))
    batch_mean = np.mean(x, axis=axes)
    batch_var = np.var(x, axis=axes)
    y = nn.layer_norm(x, axis=axes, eps=eps) * _channel(scale, ndim) + _channel(bias, ndim)
    m = const(momentum, batch_mean)
    return y, mean * m + batch_mean * (1 - m), var * m + batch_var * (1 - m)


@op("LayerNormalization")
def _layer_norm(n, x, scale, bias=None):
    axis = resolve_axis(n.attr("axis", -1), np.ndim(x))
    eps = n.attr("epsilon", 1e-5)
    n.attr("stash_type", 1)
    axes = tuple(range(axis, np.ndim(x)))
    y = nn.layer_norm(x, axis=axes, eps=eps) * scale
    y = y if bias is None else y + bias
    if len(n.proto.output) == 1:
        return y
    mean = np.mean(x, axis=axes, keepdims=True)
    inv = 1 / np.sqrt(np.var(x, axis=axes, keepdims=True) + const(eps, x))
    return y, mean, inv


@op("InstanceNormalization")
def _instance_norm(n, x, scale, bias):
    ndim = np.ndim(x)
    y = nn.layer_norm(x, axis=tuple(range(2, ndim)), eps=n.attr("epsilon", 1e-5))
    return y * _channel(scale, ndim) + _channel(bias, ndim)


@op("GroupNormalization")
def _group_norm(n, x, scale, bias):
    groups, eps = n.attr("num_groups"), n.attr("epsilon", 1e-5)
    n.attr("stash_type", 1)
    shape = np.shape(x)
    grouped = np.reshape(x, (shape[0], groups, -1))
    y = np.reshape(nn.layer_norm(grouped, axis=-1, eps=eps), shape)
    if n.opset < 21:        # scale and bias per group, before opset 21
        scale, bias = np.repeat(scale, shape[1] // groups), np.repeat(bias, shape[1] // groups)
    return y * _channel(scale, len(shape)) + _channel(bias, len(shape))


@op("LRN")
def _lrn(n, x):
    """Local response normalization across channels: ``x / (bias + alpha / size * sum of x**2
    over the ``size`` neighbouring channels) ** beta``."""
    size = n.attr("size")
    alpha, beta, bias = n.attr("alpha", 1e-4), n.attr("beta", 0.75), n.attr("bias", 1.0)
    channels = np.shape(x)[1]
    lo = (size - 1) // 2
    square = np.pad(x * x, ((0, 0), (lo, size - 1 - lo)) + ((0, 0),) * (np.ndim(x) - 2))
    total = functools.reduce(np.add, [square[:, k:k + channels] for k in range(size)])
    return x / (const(bias, x) + const(alpha / size, x) * total) ** const(beta, x)


@op("MeanVarianceNormalization")
def _mean_variance_norm(n, x):
    """``(x - mean) / (std + 1e-9)`` over ``axes``, as ONNX's function body computes it."""
    axes = tuple(resolve_axis(a, np.ndim(x)) for a in n.attr("axes", (0, 2, 3)))
    mean = np.mean(x, axis=axes, keepdims=True)
    std = np.sqrt(np.mean(x * x, axis=axes, keepdims=True) - mean * mean)
    return (x - mean) / (std + const(1e-9, x))


@op("RMSNormalization", since=23)
def _rms_norm(n, x, scale):
    """``x / sqrt(mean(x**2) + epsilon) * scale`` over the axes from ``axis`` on."""
    axes = tuple(range(resolve_axis(n.attr("axis", -1), np.ndim(x)), np.ndim(x)))
    n.attr("stash_type", 1)
    eps = const(n.attr("epsilon", 1e-5), x)
    return x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps) * scale


@op("LpNormalization")
def _lp_norm(n, x):
    axis, p = n.attr("axis", -1), n.attr("p", 2)
    if p == 1:
        norm = np.sum(np.abs(x), axis=axis, keepdims=True)
    elif p == 2:
        norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=True))
    else:
        raise n.error(f"p={p} (1 or 2)")
    return x / np.where(norm == 0, const(1, norm), norm)      # a zero slice stays zero


@op("DepthToSpace")
def _depth_to_space(n, x):
    b, mode = n.attr("blocksize"), n.attr("mode", "DCR")
    N, C, H, W = np.shape(x)
    if mode == "DCR":
        y = np.transpose(np.reshape(x, (N, b, b, C // b // b, H, W)), (0, 3, 4, 1, 5, 2))
    elif mode == "CRD":
        y = np.transpose(np.reshape(x, (N, C // b // b, b, b, H, W)), (0, 1, 4, 2, 5, 3))
    else:
        raise n.error(f"mode={mode!r} (DCR or CRD)")
    return np.reshape(y, (N, C // b // b, H * b, W * b))


@op("SpaceToDepth")
def _space_to_depth(n, x):
    b, mode = n.attr("blocksize"), n.attr("mode", "DCR")
    N, C, H, W = np.shape(x)
    if mode not in ("DCR", "CRD"):
        raise n.error(f"mode={mode!r} (DCR or CRD)")
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    y = np.transpose(np.reshape(x, (N, C, H // b, b, W // b, b)), perm)
    return np.reshape(y, (N, C * b * b, H // b, W // b))


@op("Shrink")
def _shrink(n, x):
    lam, bias = const(n.attr("lambd", 0.5), x), const(n.attr("bias", 0.0), x)
    return np.where(x < -lam, x + bias, np.where(x > lam, x - bias, const(0, x)))


@op("OneHot", static=(1,))
def _one_hot(n, indices, depth, values):
    depth = int(n.static(depth, "depth").reshape(-1)[0])
    axis = n.attr("axis", -1)
    idx = n.static(indices, "indices").astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    n.check_size(idx.shape + (depth,), "output", np.result_type(values))
    hot = np.expand_dims(idx, -1) == np.arange(depth)
    hot = np.moveaxis(hot, -1, resolve_axis(axis, np.ndim(idx) + 1))
    return np.where(hot, values[1], values[0])


@op("GatherND")
def _gather_nd(n, x, indices):
    batch = n.attr("batch_dims", 0)
    idx = n.static(indices, "indices").astype(np.int64)
    shape = np.shape(x)
    idx = np.where(idx < 0, idx + np.array(shape[batch:batch + idx.shape[-1]]), idx)
    lead = idx.shape[:-1]
    grids = [np.arange(shape[i]).reshape((-1,) + (1,) * (len(lead) - 1 - i)) for i in range(batch)]
    where = tuple(np.broadcast_to(g, lead) for g in grids) + tuple(idx[..., k] for k in range(idx.shape[-1]))
    return x[where]


def _heads(x, heads, n, what):
    """(B, S, H*D) -> (B, H, S, D); 4-D inputs are already in that layout."""
    if np.ndim(x) == 4:
        return x
    if heads is None:
        raise n.error(f"3-D {what} needs the attribute {'q_num_heads' if what == 'Q' else 'kv_num_heads'}")
    b, s, hd = np.shape(x)
    return np.transpose(np.reshape(x, (b, s, heads, hd // heads)), (0, 2, 1, 3))


@op("Attention")
def _attention(n, q, k, v, mask=None, past_k=None, past_v=None, nonpad_kv_seqlen=None):
    """Scaled dot-product attention (opsets 23-25): 3-D or 4-D inputs, grouped key/value heads, a
    boolean or additive mask, ``is_causal`` and sliding windows (``left_window_size``,
    ``right_window_size``) aligned bottom-right after a past cache or an external one
    (``nonpad_kv_seqlen``: the valid keys per batch entry), ``softcap``, ``softmax_precision``.
    Fully masked rows give 0, as ONNX defines."""
    rank = np.ndim(q)
    q = _heads(q, n.attr("q_num_heads", None), n, "Q")
    kv_heads = n.attr("kv_num_heads", None)
    k, v = _heads(k, kv_heads, n, "K"), _heads(v, kv_heads, n, "V")
    mode = n.attr("qk_matmul_output_mode", 0)
    if mode not in (0, 1, 2, 3):
        raise n.error(f"qk_matmul_output_mode={mode}")
    dt = np.result_type(q)
    precision = n.attr("softmax_precision", None)
    precision = dt if precision is None else dtype_of(precision, f"node {n.name!r} softmax_precision")
    scale = n.attr("scale", None)
    scale = 1 / math.sqrt(np.shape(q)[-1]) if scale is None else scale
    if past_k is not None and nonpad_kv_seqlen is not None:
        raise n.error("nonpad_kv_seqlen (an external cache) and past_key (an internal one) cannot be combined")
    if past_k is not None:
        k, v = np.concatenate([past_k, k], axis=2), np.concatenate([past_v, v], axis=2)
    present_k, present_v = k, v
    n.check_size(np.shape(q)[:3] + np.shape(k)[2:3], "scores", dt)
    bias = _attention_bias(n, q, k, mask, past_k, nonpad_kv_seqlen)
    hq, hk = np.shape(q)[1], np.shape(k)[1]
    if hq != hk:
        if hq % hk:
            raise n.error(f"{hq} query heads are not a multiple of {hk} key/value heads")
        k, v = np.repeat(k, hq // hk, axis=1), np.repeat(v, hq // hk, axis=1)
    root = const(math.sqrt(scale), q)       # ONNX scales both sides: the same rounding in float16
    scores = (q * root) @ (np.swapaxes(k, -1, -2) * root)
    softcap = n.attr("softcap", 0.0)
    if softcap > 0:
        scores = np.tanh(scores / const(softcap, q)) * const(softcap, q)
    qk = scores                               # modes 0 and 1: the (soft-capped) scaled product
    if bias is not None:
        scores = scores + bias
    logits = scores.astype(precision) if precision != dt else scores
    dead = None if bias is None else np.isinf(np.max(bias, axis=-1, keepdims=True))
    if dead is not None and (isinstance(dead, Tracer) or np.any(dead)):
        # a fully masked row: its softmax input kept finite (no nan, forward or backward), its weights 0
        zero = const(0, logits)
        weights = np.where(dead, zero, nn.softmax(np.where(dead, zero, logits), axis=-1))
    else:
        weights = nn.softmax(logits, axis=-1)
    weights = weights.astype(dt) if precision != dt else weights
    qk = {2: scores, 3: weights}.get(mode, qk)
    y = weights @ v
    if rank == 3:
        b, h, s, d = np.shape(y)
        y = np.reshape(np.transpose(y, (0, 2, 1, 3)), (b, s, h * d))
    return y, present_k, present_v, qk


def _attention_bias(n, q, k, mask, past_k, nonpad):
    """The additive bias (0 or -inf where masked) of the mask, the causal and sliding-window
    masks (a query at position ``i + offset`` sees keys ``j <= i + offset``, and those within
    the windows; ``offset`` the past cache's length, or per batch entry the valid keys of an
    external cache less the queries) and the external cache's padding; None if none applies."""
    sq, skv = np.shape(q)[2], np.shape(k)[2]
    zero, low = const(0, q), const(-np.inf, q)
    bias = None
    if mask is not None:
        if np.shape(mask)[-1] < skv:
            fill = False if np.result_type(mask) == np.bool_ else -np.inf
            mask = np.pad(mask, [(0, 0)] * (np.ndim(mask) - 1) + [(0, skv - np.shape(mask)[-1])],
                          constant_values=fill)
        bias = np.where(mask, zero, low) if np.result_type(mask) == np.bool_ else mask
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    if nonpad is not None:
        valid = np.reshape(nonpad, (-1, 1, 1, 1))
        position = np.arange(sq)[:, None] + (valid - sq)         # (B, 1, q, 1)
    else:
        position = np.arange(sq)[:, None] + (0 if past_k is None else np.shape(past_k)[2])
    key = np.arange(skv)[None, :]
    allowed = [key <= position] if n.attr("is_causal", 0) else []
    if left >= 0:
        allowed.append(position - key <= left)
    if right >= 0:
        allowed.append(key - position <= right)
    if nonpad is not None:
        allowed.append(key < valid)
    if allowed:
        extra = np.where(functools.reduce(np.logical_and, allowed), zero, low)
        bias = extra if bias is None else bias + extra
    return bias


@op("RotaryEmbedding", since=23)
def _rotary_embedding(n, x, cos, sin, position_ids=None):
    """Rotary position embedding: pairs of features (the two halves, or neighbours with
    ``interleaved``) rotated by each position's cached angle; features past
    ``rotary_embedding_dim`` pass unchanged. 4-D inputs are (B, H, S, D), 3-D ones (B, S, H*D)."""
    interleaved, dim, heads = n.attr("interleaved", 0), n.attr("rotary_embedding_dim", 0), n.attr("num_heads", 0)
    shape = np.shape(x)
    if np.ndim(x) == 4:
        h = np.transpose(x, (0, 2, 1, 3))
    elif heads:
        h = np.reshape(x, shape[:2] + (heads, shape[2] // heads))
    else:
        raise n.error("a 3-D input needs the attribute num_heads")
    dim = dim or np.shape(h)[-1]
    if position_ids is not None:
        cos, sin = np.take(cos, position_ids, axis=0), np.take(sin, position_ids, axis=0)
    cos, sin = np.expand_dims(cos, 2), np.expand_dims(sin, 2)          # (B, S, 1, dim / 2)
    turned = h[..., :dim]
    a, b = (turned[..., 0::2], turned[..., 1::2]) if interleaved else (turned[..., :dim // 2], turned[..., dim // 2:])
    real, imag = cos * a - sin * b, sin * a + cos * b
    if interleaved:
        turned = np.reshape(np.stack([real, imag], -1), np.shape(turned))
    else:
        turned = np.concatenate([real, imag], -1)
    y = np.concatenate([turned, h[..., dim:]], axis=-1)
    return np.reshape(y, shape) if np.ndim(x) == 3 else np.transpose(y, (0, 2, 1, 3))


def _softmax(f):
    """Softmax over ``axis`` (opset >= 13); before, over the flattened axes from ``axis`` on."""
    def run(n, x):
        if n.opset >= 13:
            return f(x, axis=n.attr("axis", -1))
        axis = resolve_axis(n.attr("axis", 1), np.ndim(x))
        shape = np.shape(x)
        flat = np.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
        return np.reshape(f(flat, axis=-1), shape)
    return run


def _hardmax(x, axis):
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    shape = [1] * np.ndim(x)
    shape[axis] = -1
    hot = np.reshape(np.arange(np.shape(x)[axis]), shape) == np.argmax(x, axis=axis, keepdims=True)
    return hot.astype(np.result_type(x))


op("Softmax")(_softmax(nn.softmax))
op("LogSoftmax")(_softmax(nn.log_softmax))
op("Hardmax")(_softmax(_hardmax))
