"""The ad.nn spec table: one line per function and keyword setting, with its PyTorch
counterpart and its inputs in the vocabulary of ``ad.samples`` (kinks to avoid, values kept
apart so that no max-pool window ties). ``test_nn_rules.py`` runs every line through finite
differences, the three gradient forms, float32 and PyTorch (forward and gradient, float64).
The ad.nn primitives themselves declare their samples in ad/nn (tests/lib/test_rules.py and the
library check run them).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

import ad.nn as nn
from ad.samples import GAP, In


@dataclass(frozen=True)
class Case:
    of: str                        # the ad.nn function
    setting: str                   # shape / keyword setting, for the test id
    fn: Callable                   # numpy arrays -> array (the function under test)
    ref: Callable | None           # the same on float64 torch tensors; None: no counterpart
    args: tuple
    rtol: float = 1e-10            # against PyTorch
    prims: tuple = ()              # ad.nn primitives the case must exercise

    @property
    def id(self) -> str:
        return f"{self.of}[{self.setting}]"


def distinct(shape) -> In:
    """Values GAP apart (no window ties), in a range that holds them all."""
    half = GAP * 0.6 * int(np.prod(shape))
    return In(shape, -half, half, apart=True)


def _t(x):
    return torch.as_tensor(x)


def _torch_pad(pairs):
    """((lo, hi) per spatial axis) -> F.pad's flat tuple, last axis first."""
    return tuple(v for lo_hi in reversed(pairs) for v in lo_hi)


# -- convolution ------------------------------------------------------------------------------

def conv(x, w, **kw):
    torch_kw = dict(kw)
    pairs = kw.get("padding")
    nd = len(w) - 2

    def ref(tx, tw):
        f = getattr(F, f"conv{nd}d")
        if isinstance(pairs, tuple) and isinstance(pairs[0], tuple):
            return f(F.pad(tx, _torch_pad(pairs)), tw, **{k: v for k, v in torch_kw.items() if k != "padding"})
        return f(tx, tw, **torch_kw)
    setting = f"{nd}d " + ",".join(f"{k}={v}" for k, v in kw.items())
    return Case("conv", setting, lambda a, b: nn.conv(a, b, **kw), ref, (In(x), In(w)),
                prims=("im2col",))


def conv_transpose(x, w, **kw):
    nd = len(w) - 2
    return Case("conv_transpose", f"{nd}d " + ",".join(f"{k}={v}" for k, v in kw.items()),
                lambda a, b: nn.conv_transpose(a, b, **kw),
                lambda a, b: getattr(F, f"conv_transpose{nd}d")(a, b, **kw), (In(x), In(w)),
                prims=("col2im",))


CONV = [
    conv((2, 4, 9), (6, 4, 3)),
    conv((2, 4, 9), (6, 4, 3), stride=2, padding=1, dilation=2),
    conv((2, 4, 9), (6, 2, 3), padding="same", groups=2),
    conv((2, 3, 6, 5), (4, 3, 3, 3), padding=1),
    conv((2, 3, 6, 5), (4, 3, 3, 3), stride=(2, 1), padding=(1, 0)),
    conv((2, 3, 6, 5), (4, 3, 2, 2), padding="same", dilation=2),
    conv((2, 3, 6, 5), (6, 1, 3, 3), padding=1, groups=3),
    conv((2, 3, 6, 5), (4, 3, 3, 2), padding=((1, 2), (0, 1)), stride=2),
    conv((1, 2, 5, 4, 4), (3, 2, 2, 3, 2), padding=1),
    conv((1, 4, 5, 4, 4), (4, 2, 3, 2, 2), stride=(2, 1, 2), dilation=(1, 2, 1), groups=2),
    conv_transpose((2, 4, 5), (4, 3, 3), stride=2, padding=1, output_padding=1),
    conv_transpose((2, 4, 5), (4, 3, 3), dilation=2),
    conv_transpose((2, 4, 3, 4), (4, 2, 3, 3), stride=2, groups=2),
    conv_transpose((2, 3, 4, 3), (3, 2, 2, 3), stride=(1, 2), padding=(1, 0)),
    conv_transpose((1, 2, 3, 3, 2), (2, 3, 2, 2, 2), stride=2, padding=1),
]

# -- pooling ----------------------------------------------------------------------------------

TORCH_POOL = {"max_pool": "max_pool{}d", "mean_pool": "avg_pool{}d",
              "adaptive_max_pool": "adaptive_max_pool{}d", "adaptive_mean_pool": "adaptive_avg_pool{}d"}


def pool(name, shape, *args, **kw):
    nd = len(shape) - 2
    torch_fn = getattr(F, TORCH_POOL[name].format(nd))
    prim = {"max_pool": "max_pool", "mean_pool": "mean_pool"}.get(name)
    return Case(name, f"{nd}d {args} " + ",".join(f"{k}={v}" for k, v in kw.items()),
                lambda x: getattr(nn, name)(x, *args, **kw), lambda t: torch_fn(t, *args, **kw),
                (distinct(shape),), prims=(prim,) if prim else ())


POOL = [
    pool("max_pool", (2, 3, 8), 2),
    pool("max_pool", (2, 3, 5, 6), 2),
    pool("max_pool", (2, 3, 5, 6), 3, stride=1, padding=1),
    pool("max_pool", (2, 2, 7, 7), 2, stride=2, dilation=2),
    pool("max_pool", (1, 2, 4, 4, 6), (2, 2, 3)),
    pool("mean_pool", (2, 3, 9), 3),
    pool("mean_pool", (2, 3, 6, 4), 2),
    pool("mean_pool", (2, 3, 5, 6), 3, stride=2, padding=1),
    pool("mean_pool", (1, 2, 4, 3, 4), (2, 1, 2)),
    pool("adaptive_max_pool", (2, 3, 7), 3),
    pool("adaptive_max_pool", (2, 3, 5, 7), (3, 4)),
    pool("adaptive_max_pool", (2, 3, 6, 4), (3, 2)),
    pool("adaptive_mean_pool", (2, 3, 7), 3),
    pool("adaptive_mean_pool", (2, 3, 5, 7), (2, 3)),
    pool("adaptive_mean_pool", (1, 2, 5, 3, 4), (2, 2, 3)),
    Case("global_max_pool", "2d", nn.global_max_pool, lambda t: F.adaptive_max_pool2d(t, 1),
         (distinct((2, 3, 4, 5)),)),
    Case("global_mean_pool", "3d", nn.global_mean_pool, lambda t: F.adaptive_avg_pool3d(t, 1),
         (In((2, 3, 2, 3, 2)),)),
]

# -- softmax, activations ---------------------------------------------------------------------

X = In((3, 5), -3.0, 3.0)
X3 = In((2, 3, 4), -3.0, 3.0)
SOFTMAX = [
    Case("softmax", "axis=-1", nn.softmax, lambda t: F.softmax(t, -1), (X,), prims=("softmax",)),
    Case("softmax", "3d axis=1", lambda x: nn.softmax(x, axis=1), lambda t: F.softmax(t, 1), (X3,),
         prims=("softmax",)),
    Case("softmax", "axis=(1,2)", lambda x: nn.softmax(x, axis=(1, 2)),
         lambda t: torch.exp(t - torch.logsumexp(t, (1, 2), keepdim=True)), (X3,), prims=("softmax",)),
    Case("log_softmax", "axis=-1", nn.log_softmax, lambda t: F.log_softmax(t, -1), (X,),
         prims=("log_softmax",)),
    Case("log_softmax", "3d axis=0", lambda x: nn.log_softmax(x, axis=0), lambda t: F.log_softmax(t, 0),
         (X3,), prims=("log_softmax",)),
    Case("logsumexp", "axis=-1", nn.logsumexp, lambda t: torch.logsumexp(t, -1), (X,), prims=("logsumexp",)),
    Case("logsumexp", "axis=None", lambda x: nn.logsumexp(x, axis=None),
         lambda t: torch.logsumexp(t.flatten(), 0), (X3,), prims=("logsumexp",)),
    Case("logsumexp", "axis=1 keepdims", lambda x: nn.logsumexp(x, axis=1, keepdims=True),
         lambda t: torch.logsumexp(t, 1, keepdim=True), (X3,), prims=("logsumexp",)),
    Case("logsigmoid", "", nn.logsigmoid, F.logsigmoid, (In((3, 5), -8.0, 8.0),)),
]


def act(name, ref, *args, x=X, setting="", rtol=1e-10, prims=()):
    fn = getattr(nn, name)
    return Case(name, setting, lambda a: fn(a, *args), lambda t: ref(t, *args), (x,), rtol, prims)


ACTIVATIONS = [
    act("relu", F.relu, x=In((3, 5), avoid=(0,)), prims=("relu",)),
    act("leaky_relu", F.leaky_relu, 0.2, x=In((3, 5), avoid=(0,)), setting="a=0.2"),
    act("elu", F.elu, x=In((3, 5), avoid=(0,))),
    act("elu", F.elu, 0.5, x=In((3, 5), avoid=(0,)), setting="alpha=0.5"),
    act("selu", F.selu, x=In((3, 5), avoid=(0,))),
    # PyTorch's celu rounds 1/alpha to float32 in its backward: a 1e-8 relative gap
    act("celu", F.celu, 0.7, x=In((3, 5), avoid=(0,)), setting="alpha=0.7", rtol=1e-7),
    act("gelu", F.gelu, prims=("erf",)),
    act("gelu", lambda t, a: F.gelu(t, approximate=a), "tanh", setting="tanh"),
    act("sigmoid", torch.sigmoid, x=In((3, 5), -10.0, 10.0), prims=("sigmoid",)),
    # PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32
    act("hard_sigmoid", F.hardsigmoid, x=In((3, 5), -5.0, 5.0, avoid=(-3, 3)), rtol=1e-7),
    act("softplus", F.softplus, x=In((3, 5), -10.0, 10.0)),
    act("swish", F.silu),
    act("silu", F.silu),
    act("hardtanh", F.hardtanh, -0.5, 1.5, x=In((3, 5), avoid=(-0.5, 1.5)), setting="-0.5,1.5"),
    act("relu6", F.relu6, x=In((3, 5), -3.0, 8.0, avoid=(0, 6))),
    act("erf", torch.erf, x=In((3, 5), -4.0, 4.0), prims=("erf",)),
]

# -- batched matrices, layout -----------------------------------------------------------------

LAYOUT = [
    Case("batched_mul", "", nn.batched_mul, torch.bmm, (In((3, 4, 5)), In((3, 5, 2)))),
    Case("batched_transpose", "", nn.batched_transpose, lambda t: t.transpose(-1, -2), (In((3, 4, 5)),)),
    Case("batched_adjoint", "", nn.batched_adjoint, lambda t: t.mH, (In((3, 4, 5)),)),
    Case("flatten", "", nn.flatten, lambda t: t.flatten(1), (In((2, 3, 2, 2)),)),
    Case("pixel_shuffle", "r=2", lambda x: nn.pixel_shuffle(x, 2), lambda t: F.pixel_shuffle(t, 2),
         (In((2, 8, 3, 2)),)),
    Case("pad", "constant 1.5", lambda x: nn.pad(x, ((1, 2), (0, 1)), value=1.5),
         lambda t: F.pad(t, (0, 1, 1, 2), value=1.5), (In((2, 3, 4, 5)),)),
    *(Case("pad", mode, lambda x, m=mode: nn.pad(x, (2, 1), mode=m),
           lambda t, m=mode: F.pad(t, (1, 1, 2, 2), mode=m), (In((2, 3, 4, 5)),))
      for mode in ("reflect", "replicate", "circular")),
    Case("pad", "1d reflect", lambda x: nn.pad(x, ((3, 1),), mode="reflect"),
         lambda t: F.pad(t, (3, 1), mode="reflect"), (In((2, 3, 6)),)),
    Case("upsample_nearest", "2d (2,3)", lambda x: nn.upsample_nearest(x, (2, 3)),
         lambda t: F.interpolate(t, scale_factor=(2, 3), mode="nearest"), (In((2, 3, 3, 2)),)),
    Case("upsample_nearest", "1d 3", lambda x: nn.upsample_nearest(x, 3),
         lambda t: F.interpolate(t, scale_factor=3, mode="nearest"), (In((2, 3, 4)),)),
    Case("upsample_bilinear", "2d scale 2", lambda x: nn.upsample_bilinear(x, 2),
         lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), (In((2, 3, 3, 4)),)),
    Case("upsample_bilinear", "2d scale 1.5", lambda x: nn.upsample_bilinear(x, 1.5),
         lambda t: F.interpolate(t, scale_factor=1.5, mode="bilinear"), (In((2, 3, 4, 5)),)),
    Case("upsample_bilinear", "2d size align_corners",
         lambda x: nn.upsample_bilinear(x, size=(7, 5), align_corners=True),
         lambda t: F.interpolate(t, size=(7, 5), mode="bilinear", align_corners=True), (In((2, 3, 3, 4)),)),
    Case("upsample_bilinear", "1d size", lambda x: nn.upsample_bilinear(x, size=9),
         lambda t: F.interpolate(t, size=9, mode="linear"), (In((2, 3, 4)),)),
    Case("upsample_bilinear", "3d scale 2", lambda x: nn.upsample_bilinear(x, 2),
         lambda t: F.interpolate(t, scale_factor=2, mode="trilinear"), (In((1, 2, 2, 3, 2)),)),
]

INDICES = np.array([[0, 4, 2], [4, 4, 1]])
LAYOUT.append(Case("embedding", "repeats", lambda w: nn.embedding(INDICES, w),
                   lambda w: F.embedding(torch.as_tensor(INDICES), w), (In((5, 3)),)))

# -- normalisation ----------------------------------------------------------------------------

X4 = In((3, 4, 3, 2))
MEAN4, VAR4 = np.array([0.5, -1.0, 0.0, 2.0]), np.linspace(0.5, 2.0, 4)
NORM = [
    Case("layer_norm", "axis=-1 affine", lambda x, s, b: nn.layer_norm(x, scale=s, bias=b),
         lambda x, s, b: F.layer_norm(x, (2,), s, b), (X4, In((2,)), In((2,))), prims=("standardize",)),
    Case("layer_norm", "axis=(-2,-1)", lambda x: nn.layer_norm(x, axis=(-2, -1), eps=1e-3),
         lambda x: F.layer_norm(x, (3, 2), eps=1e-3), (X4,)),
    Case("batch_norm", "training 4d", lambda x, s, b: nn.batch_norm(x, s, b),
         lambda x, s, b: F.batch_norm(x, None, None, s, b, training=True), (X4, In((4,)), In((4,))),
         prims=("standardize",)),
    Case("batch_norm", "training 2d", lambda x: nn.batch_norm(x, eps=1e-3),
         lambda x: F.batch_norm(x, None, None, training=True, eps=1e-3), (In((5, 3)),)),
    Case("batch_norm", "inference",
         lambda x, s, b: nn.batch_norm(x, s, b, running_mean=MEAN4, running_var=VAR4, training=False),
         lambda x, s, b: F.batch_norm(x, _t(MEAN4), _t(VAR4), s, b, training=False), (X4, In((4,)), In((4,)))),
    Case("group_norm", "groups=2 affine", lambda x, s, b: nn.group_norm(x, 2, s, b),
         lambda x, s, b: F.group_norm(x, 2, s, b), (X4, In((4,)), In((4,))), prims=("standardize",)),
    Case("group_norm", "groups=4 3d", lambda x: nn.group_norm(x, 4), lambda x: F.group_norm(x, 4),
         (In((2, 4, 2, 3, 2)),)),
]

# -- losses -------------------------------------------------------------------------------------

LABELS = np.array([2, 0, 3, 3, 1])
ONEHOT = np.eye(4)[LABELS]
SEQ_LABELS = np.array([[0, 2, 1], [3, 3, 0]])
EPS64 = float(np.finfo(np.float64).eps)
LOGITS = In((5, 4), -3.0, 3.0)
PROBS, TARGET = In((5, 4), 0.05, 1.0, domain=(0.0, None)), In((5, 4), 0.05, 0.95, domain=(0.0, 1.0))
TL = torch.as_tensor(LABELS)


def _ce_ref(p, y):
    return -(y * torch.log(p + EPS64)).sum(-1).mean()


LOSSES = [
    Case("mse", "", nn.mse, F.mse_loss, (LOGITS, TARGET)),
    Case("mae", "", nn.mae, F.l1_loss, (In((5, 4), 0.1, 2.0), In((5, 4), -2.0, -0.1))),
    Case("huber", "delta=0.5", lambda a, b: nn.huber(a, b, 0.5), lambda a, b: F.huber_loss(a, b, delta=0.5),
         (In((5, 4), -1.0, 1.0), In((5, 4), -1.0, 1.0))),
    Case("crossentropy", "onehot", lambda p: nn.crossentropy(p, ONEHOT),
         lambda p: _ce_ref(p, _t(ONEHOT)), (PROBS,)),
    Case("crossentropy", "probabilities", nn.crossentropy, _ce_ref, (PROBS, TARGET)),
    Case("crossentropy", "label_smoothing=0.2", lambda p: nn.crossentropy(p, LABELS, label_smoothing=0.2),
         lambda p: _ce_ref(p, _t(ONEHOT * 0.8 + 0.05)), (PROBS,)),
    Case("logitcrossentropy", "onehot", lambda z: nn.logitcrossentropy(z, ONEHOT),
         lambda z: F.cross_entropy(z, TL), (LOGITS,), prims=("log_softmax",)),
    Case("logitcrossentropy", "labels label_smoothing=0.1",
         lambda z: nn.logitcrossentropy(z, LABELS, label_smoothing=0.1),
         lambda z: F.cross_entropy(z, TL, label_smoothing=0.1), (LOGITS,)),
    Case("logitcrossentropy", "probabilities", nn.logitcrossentropy, F.cross_entropy, (LOGITS, TARGET)),
    Case("logitcrossentropy", "3d class last", lambda z: nn.logitcrossentropy(z, SEQ_LABELS),
         lambda z: F.cross_entropy(z.permute(0, 2, 1), torch.as_tensor(SEQ_LABELS)), (In((2, 3, 4)),)),
    Case("nll", "onehot", lambda lp: nn.nll(lp, ONEHOT), lambda lp: F.nll_loss(lp, TL), (LOGITS,)),
    Case("binary_crossentropy", "", nn.binary_crossentropy, F.binary_cross_entropy,
         (TARGET, TARGET)),
    Case("logitbinarycrossentropy", "", nn.logitbinarycrossentropy, F.binary_cross_entropy_with_logits,
         (LOGITS, TARGET)),
    Case("kldivergence", "", nn.kldivergence,
         lambda p, y: F.kl_div(torch.log(p + EPS64), y, reduction="batchmean"), (PROBS, TARGET)),
]

CASES = CONV + POOL + SOFTMAX + ACTIVATIONS + LAYOUT + NORM + LOSSES

# Public names tested elsewhere, not through this table.
ELSEWHERE = {"dropout": "test_nn_dropout.py", "one_hot": "test_nn_functions.py",
             "batch_norm_update": "test_nn_functions.py", "PRIMITIVES": "test_nn_rules.py (check_rule)"}

