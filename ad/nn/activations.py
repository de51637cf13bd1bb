"""Activation functions, elementwise. All are compositions of primitives that have rules
(``where``, ``clip``, ``expm1``, ``logaddexp``, ``tanh``) except ``relu``, ``sigmoid`` and
``erf`` (``ad.nn.special``). Piecewise functions select with ``np.where`` on a mask computed once: the
mask is a forward residual, so each pullback is a single ``where``; and the branch not taken
is fed a harmless value (``expm1`` of a clamped input) so that neither its value nor its
gradient can overflow into the result."""
from __future__ import annotations

import math

import numpy as np

from .special import erf, relu, sigmoid

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_HALF = math.sqrt(0.5)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

__all__ = ["relu", "leaky_relu", "elu", "selu", "celu", "gelu", "sigmoid", "hard_sigmoid",
           "softplus", "swish", "silu", "hardtanh", "relu6"]


def leaky_relu(x, a=0.01):
    """``x`` for ``x > 0``, else ``a * x``."""
    return np.where(x > 0, x, a * x)


def elu(x, alpha=1.0):
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    positive = x > 0
    return np.where(positive, x, alpha * np.expm1(np.where(positive, 0, x)))


def celu(x, alpha=1.0):
    """``x`` for ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``."""
    positive = x > 0
    return np.where(positive, x, alpha * np.expm1(np.where(positive, 0, x) / alpha))


def selu(x):
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    return SELU_SCALE * elu(x, SELU_ALPHA)


def gelu(x, approximate="none"):
    """``x * Phi(x)`` with the normal CDF ``Phi``; ``approximate="tanh"`` uses
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (both as ``torch.nn.functional.gelu``)."""
    if approximate == "none":
        return 0.5 * x * (1 + erf(x * _SQRT_HALF))
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    raise ValueError(f"gelu(approximate={approximate!r}); choose 'none' or 'tanh'")


def hard_sigmoid(x):
    """``clip((x + 3) / 6, 0, 1)`` (NNlib's ``hardsigmoid``, ``torch.nn.functional.hardsigmoid``)."""
    return np.clip((x + 3) / 6, 0, 1)


def softplus(x):
    """``log(1 + exp(x))``, stable."""
    return np.logaddexp(0, x)


def swish(x):
    """``x * sigmoid(x)`` (also called SiLU)."""
    return x * sigmoid(x)


silu = swish


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """``clip(x, min_val, max_val)``."""
    return np.clip(x, min_val, max_val)


def relu6(x):
    """``clip(x, 0, 6)``."""
    return np.clip(x, 0, 6)
