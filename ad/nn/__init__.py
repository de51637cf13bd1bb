"""ad.nn: neural-network functions (NNlib's list, PyTorch's conventions) whose rules all lift.

Arrays are channels first, ``(N, C, *spatial)``, like PyTorch; class axes (losses, softmax's
default) are last. Every function is either a composition of primitives that have rules (it
lifts for free) or a primitive of its own with a dedicated rule written with primitives (so its
pullback lifts too, and differentiates again). The choice, function by function (timings:
``bench/bench_cnn.py`` and the measurements quoted in each module's docstring):

===============================  =================================================================
function                         form, and why
===============================  =================================================================
conv, conv_transpose             composition: ``im2col``/``col2im`` + ``matmul``. The weight
                                 gradient reuses the forward's windows (a residual, not
                                 recomputed); the tape reads "weights @ windows".
im2col, col2im                   primitives, linear, each other's transpose: numpy has no window
                                 gather with a rule. Batch-innermost layout: 4-7x faster.
max_pool, mean_pool              primitives (their pullbacks: max_unpool/max_select, mean_unpool):
                                 10-30x faster than reshape + np.max/np.mean (numpy reduces short
                                 strided axes slowly). Max-pool gradients go to the first
                                 maximum, as PyTorch's (ties are common after relu).
adaptive_*_pool, global_*_pool   compositions (a gather + max_pool, einsum with averaging
                                 matrices, max/mean over axes): lift for free, rarely hot.
softmax, log_softmax, logsumexp  primitives: 1.2-1.8x faster than the composition, which
                                 differentiates through the stabilising max; the log-domain rules
                                 reuse the forward's exp; exact on all -inf slices.
relu                             primitive, pullback ``dy * (y > 0)``: 1.7x faster (np.where with
                                 a random mask is 10x slower than a multiply; x*(x>0) maps -inf
                                 to nan).
sigmoid                          primitive, pullback ``dy * (y - y*y)``: as fast, and stable (the
                                 composition's gradient is nan below x = -709: 0 * inf).
erf (for gelu)                   primitive: numpy has none (ours: ~1e-15 relative).
logsigmoid, softplus, the other  compositions (logaddexp, where, clip, expm1, tanh): stable as
activations                      written, not hot; the tape shows the formula.
batched_mul/transpose/adjoint    compositions (matmul, swapaxes): that is what they are.
dropout                          composition ``x * mask``, the mask from the ``dropout_mask``
                                 primitive (kind "random", an integer key operand): the mask is a
                                 forward residual and re-runs are reproducible (ad.nn.dropout).
layer_norm, batch_norm,          compositions around the ``standardize`` primitive, whose
group_norm                       pullback reuses y and 1/std: 1.3x a hand-written layer-norm
                                 gradient, against 1.7x for the plain composition.
embedding, one_hot, pad,         compositions (take with a scatter-add gradient, equal,
upsample_*, pixel_shuffle,       concatenate/gather, broadcast_to, einsum with interpolation
flatten                          matrices, reshape/transpose): gathers transpose to scatters,
                                 broadcasts to sums.
losses                           compositions (log_softmax inside the logit losses).
===============================  =================================================================

``ad.nn.PRIMITIVES`` lists the primitives (each declares its samples next to its rule; the spec
table of the functions is tests/support/nn_specs.py); ``ad.examples.networks`` (imported on its own: it
uses ``ad.grad``, a layer above the rules) holds a small CNN on
scikit-learn's digits.
"""
from .activations import (celu, elu, gelu, hard_sigmoid, hardtanh, leaky_relu, relu, relu6, selu, silu,
                          softplus, swish)
from .convolution import conv, conv_transpose
from .stochastic import dropout, dropout_mask_p
from .layout import (batched_adjoint, batched_mul, batched_transpose, embedding, flatten, one_hot, pad,
                     pixel_shuffle, upsample_bilinear, upsample_nearest)
from .losses import (binary_crossentropy, crossentropy, huber, kldivergence, logitbinarycrossentropy,
                     logitcrossentropy, mae, mse, nll)
from .normalization import batch_norm, batch_norm_update, group_norm, layer_norm, standardize_p
from .pool import (adaptive_max_pool, adaptive_mean_pool, global_max_pool, global_mean_pool, max_pool,
                   max_pool_p, max_select_p, max_unpool_p, mean_pool, mean_pool_p, mean_unpool_p)
from .softmax_family import log_softmax, log_softmax_p, logsigmoid, logsumexp, logsumexp_p, softmax, softmax_p
from .special import erf, erf_p, relu_p, sigmoid, sigmoid_p
from .windows import col2im_p, im2col_p

#: The primitives ad.nn adds (everything else here is a composition).
PRIMITIVES = (im2col_p, col2im_p, max_pool_p, max_unpool_p, max_select_p, mean_pool_p, mean_unpool_p,
              softmax_p, log_softmax_p, logsumexp_p, relu_p, sigmoid_p, erf_p, standardize_p, dropout_mask_p)

__all__ = [
    "conv", "conv_transpose",
    "max_pool", "mean_pool", "adaptive_max_pool", "adaptive_mean_pool", "global_max_pool",
    "global_mean_pool",
    "softmax", "log_softmax", "logsumexp", "logsigmoid",
    "relu", "leaky_relu", "elu", "selu", "celu", "gelu", "sigmoid", "hard_sigmoid", "softplus",
    "swish", "silu", "hardtanh", "relu6", "erf",
    "batched_mul", "batched_transpose", "batched_adjoint",
    "dropout",
    "layer_norm", "batch_norm", "batch_norm_update", "group_norm",
    "embedding", "one_hot", "pad", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "flatten",
    "mse", "mae", "huber", "crossentropy", "logitcrossentropy", "binary_crossentropy",
    "logitbinarycrossentropy", "kldivergence", "nll",
    "PRIMITIVES",
]
