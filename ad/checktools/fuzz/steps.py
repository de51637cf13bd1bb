"""The fuzzer's vocabulary: the constants programs read, the steps of each family (source
templates, so a program prints as code), and the registry steps that call any registered
primitive on one of its declared samples (so domains and kinks are respected)."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ...primitives import REGISTRY
from ...samples import C64, C128, caller, draw
from ...scipy import integrate, linalg, signal, special, stats  # noqa: F401  (they register primitives)

N = 4
# constants the programs read (printed tests import them from ad.checktools.fuzz)
W = np.cos(np.arange(N * N) * 1.7).reshape(N, N) / 2
WC = W + 1j * np.sin(np.arange(N * N) * 0.9).reshape(N, N) / 2
WELL = W + 3 * np.eye(N)
EYE = np.eye(N)
IDX = np.array([3, 0, 0, 2])
MASK = np.array([True, False, True, True])
WEIGHTS = np.linspace(0.5, 1.5, N)
C = np.cos(np.arange(N) * 1.3) + 1j * np.sin(np.arange(N) * 0.7)
TABLE = 1.0 + np.cos(np.arange(5 * N) * 0.7).reshape(5, N) / 2
LOOKUP = np.sin(np.arange(6) * 1.9)
LOWPASS = np.array([1.0, 0.6, 0.2])
SHAPES = ((N,), (3, N), (2, 3, N))


# -- steps -----------------------------------------------------------------------------------------
# A step is a function (a, b, shape of a, shape of b) -> (lines, shape of the result); each line
# may use ``{out}`` (the new value's name). Shapes are suffixes of the program's shape, ending in N.

def _broadcast(sa, sb):
    return tuple(np.broadcast_shapes(sa, sb))


def unary(template):
    return lambda a, b, sa, sb: ([f"{{out}} = {template.format(a=a)}"], sa)


def binary(template):
    return lambda a, b, sa, sb: ([f"{{out}} = {template.format(a=a, b=b)}"], _broadcast(sa, sb))


def block(*lines):
    """A multi-line step whose result has the broadcast shape of a and b."""
    return lambda a, b, sa, sb: ([line.format(a=a, b=b, out="{out}") for line in lines], _broadcast(sa, sb))


def _drop_axis(a, b, sa, sb):
    """A reduction over the first axis (over all but the last when it is 3-d)."""
    if len(sa) == 3:
        return [f"{{out}} = np.mean({a}, axis=(0, 1))"], sa[2:]
    if len(sa) == 2:
        return [f"{{out}} = np.sum({a}, axis=0)"], sa[1:]
    return [f"{{out}} = np.sum({a}, axis=0, keepdims=True) * {a}"], sa


def _prod_pairs(a, b, sa, sb):
    """Products of neighbours, each repeated (a positive axis: autograd's repeat gets the
    gradient of a negative one wrong)."""
    pairs = sa[:-1] + (2, 2)
    return [f"{{out}} = np.repeat(np.prod({a}.reshape({pairs}), axis=-1), 2, axis={len(sa) - 1})"], sa


# name -> step; smooth everywhere (safe domains built in), written with numpy functions only
SMOOTH = {
    "sin": unary("np.sin({a})"), "cos": unary("np.cos({a})"), "tanh": unary("np.tanh({a})"),
    "exp_tanh": unary("np.exp(np.tanh({a}))"), "log1p_sq": unary("np.log1p({a} * {a})"),
    "sqrt1": unary("np.sqrt(1.0 + {a} * {a})"), "square": unary("np.square({a})"), "neg": unary("-{a}"),
    "arctan": unary("np.arctan({a})"), "scale": unary("0.5 * {a} - 1.0"),
    "add": binary("{a} + {b}"), "sub": binary("{a} - {b}"), "mul": binary("{a} * {b}"),
    "div": binary("{a} / (1.0 + {b} * {b})"), "hypot1": binary("np.hypot({a}, 1.0 + {b} * {b})"),
    "logaddexp": binary("np.logaddexp({a}, {b})"), "arctan2": binary("np.arctan2({a}, 2.0 + {b} * {b})"),
    "sum": unary("np.sum({a}) + 0 * {a}"), "mean_keep": unary("{a} - np.mean({a}, axis=-1, keepdims=True)"),
    "var_keep": unary("{a} + np.var({a}, axis=-1, keepdims=True)"),
    "reduce_axis": _drop_axis,
    "softmax": unary("np.exp({a} - np.max({a}, axis=-1, keepdims=True)) / "
                     "np.sum(np.exp({a} - np.max({a}, axis=-1, keepdims=True)), axis=-1, keepdims=True)"),
    "cumsum": unary("np.cumsum({a}, axis=-1)"), "reverse": unary("{a}[..., ::-1]"),
    "gather": unary("{a}[..., IDX]"), "matvec": unary("{a} @ W"), "roll": unary("np.roll({a}, 1, axis=-1)"),
    "outer_sum": binary("np.einsum('...i,...j->...j', {a}, {b})"),
    "concat_split": binary("np.concatenate([{a} + 0 * {b}, {b} + 0 * {a}], axis=-1)[..., 2:6]"),
    "prod_pairs": _prod_pairs,
    "where": binary("np.where(IDX > 1, {a}, {b})"),
    "stack_mean": binary("np.stack([{a} + 0 * {b}, {b} + 0 * {a}]).mean(0)"),
    "setitem": block("{out} = {a} + 0.0 * {b}", "{out}[..., 1:3] = {b}[..., :2] * 2.0"),
    "view_write": block("{out} = {a} + 0.0 * {b}", "view = {out}[..., ::2]", "view *= np.tanh({b}[..., 1::2])"),
    "iadd": block("{out} = {a} + 0.0 * {b}", "{out} += np.sin({b})"),
    "solve": unary("np.linalg.solve(WELL, {a}[..., None])[..., 0]"),
    "solve_dep": binary("np.linalg.solve(WELL + 0.1 * np.tanh({b})[..., None, :] * EYE, "
                        "({a} + 0 * {b})[..., None])[..., 0]"),
    "det": binary("{b} * np.linalg.det(WELL + 0.2 * np.tanh({a})[..., :, None] * np.tanh({a})[..., None, :])"
                  "[..., None]"),
    "inv": binary("(np.linalg.inv(WELL + 0.1 * np.tanh({a})[..., None, :] * EYE) @ {b}[..., None])[..., 0]"),
}
# smooth, through ad.nn (no autograd oracle for these)
NN = {
    "nn_softmax": unary("nn.softmax({a}, axis=-1)"), "nn_log_softmax": unary("nn.log_softmax({a})"),
    "nn_logsumexp": unary("{a} - nn.logsumexp({a}, axis=-1, keepdims=True)"),
    "nn_sigmoid": unary("nn.sigmoid({a})"), "nn_softplus": unary("nn.softplus({a})"),
    "nn_gelu": unary("nn.gelu({a})"), "nn_swish": unary("nn.swish({a})"),
}
KINKED = {
    "abs": unary("np.abs({a})"), "maximum": binary("np.maximum({a}, {b})"),
    "clip": unary("np.clip({a}, -0.5, 0.5)"), "relu": unary("np.maximum({a}, 0.0)"),
    "sort": unary("np.sort({a}, axis=-1)"), "max_axis": binary("np.max({a}, axis=-1, keepdims=True) + {b}"),
    "nn_relu": unary("nn.relu({a})"),
}

# steps HIPS autograd cannot differentiate: writes into arrays (its values are immutable boxes: a
# write through a view is lost), and sort beyond one dimension ("not implemented")
NOT_AUTOGRAD, NOT_AUTOGRAD_ND = {"setitem", "view_write"}, {"sort"}

# complex steps on length-N vectors: template, and the distance of the arguments to a cut, pole or
# kink (None: none). Written with numpy functions only (autograd checks them all).


def _off_negative_axis(a):
    """Distance to numpy's cut of log and sqrt: the real axis at and below 0."""
    return np.where(np.real(a) > 0, np.abs(a), np.abs(np.imag(a)))


def _off_real_rays(a):
    """Distance to arcsin's cuts: the real axis beyond +-1."""
    re, im = np.abs(np.real(a)), np.abs(np.imag(a))
    return np.where(re >= 1, im, np.hypot(1 - re, im))


def _off_imaginary_rays(a):
    """Distance to arctan's cuts: the imaginary axis beyond +-i."""
    re, im = np.abs(np.real(a)), np.abs(np.imag(a))
    return np.where(im >= 1, re, np.hypot(re, 1 - im))


COMPLEX = {
    # holomorphic
    "exp": ("np.exp(0.5 * {a})", None), "sin": ("np.sin({a})", None), "cos": ("np.cos({a})", None),
    "tanh": ("np.tanh(0.5 * {a})", lambda a, b: np.abs(np.cosh(0.5 * a))),
    "log": ("np.log({a})", lambda a, b: _off_negative_axis(a)),
    "sqrt": ("np.sqrt({a})", lambda a, b: _off_negative_axis(a)),
    "arcsin": ("np.arcsin({a})", lambda a, b: _off_real_rays(a)),
    "arctan": ("np.arctan({a})", lambda a, b: _off_imaginary_rays(a)),
    "reciprocal": ("1.0 / {a}", lambda a, b: np.abs(a)),
    "cube": ("{a} ** 3", None), "square": ("np.square({a})", None),
    "affine": ("(0.6 - 0.8j) * {a} + 0.25", None),
    "add": ("{a} + {b}", None), "sub": ("{a} - {b}", None), "mul": ("{a} * {b}", None),
    "div": ("{a} / (2.0 + {b} * {b})", lambda a, b: np.abs(2.0 + b * b)),
    # not holomorphic
    "abs": ("np.abs({a})", lambda a, b: np.abs(a)), "conj": ("np.conj({a})", None),
    "real": ("np.real({a})", None), "imag": ("np.imag({a})", None),
    "angle": ("np.angle({a})", lambda a, b: _off_negative_axis(a) if np.iscomplexobj(a) else np.abs(a)),
    "abs2": ("{a} * np.conj({a})", None), "complex_of": ("{a} + 1j * {b}", None),
    # structure: broadcasting, reductions, contractions, the FFT
    "broadcast": ("np.sum({a}[:, None] * WC, axis=0) / N", None),
    "outer_mean": ("np.mean({a}[:, None] * {b}[None, :], axis=1)", None),
    "center": ("{a} - np.mean({a}, keepdims=True)", None),
    "scale_by_sum": ("np.sum({a}) * {b} / N", None),
    # kept off zeros: autograd's prod VJP divides by the elements (NaN at 0; ad's is right there)
    "prod_pairs": ("np.concatenate([np.prod(np.reshape({a}, (2, 2)), axis=1)] * 2)", lambda a, b: np.abs(a)),
    "cumsum": ("np.cumsum({a}) / 2", None), "roll": ("np.roll({a}, 1)", None), "reverse": ("{a}[::-1]", None),
    # both arms of one dtype: autograd's where gives a real arm a complex cotangent (and fails)
    "where": ("np.where(MASK, {a} + 0 * {b}, {b} + 0 * {a})", None),
    "matvec": ("WC @ {a}", None), "einsum": ("np.einsum('ij,j->i', WC, {a} * {b})", None),
    # a + 0j: autograd's solve gives a real right-hand side a complex cotangent (and fails)
    "solve": ("np.linalg.solve(WC + 3 * EYE, {a} + 0j)", None),
    "fft": ("np.fft.fft({a}) / 2", None), "ifft": ("np.fft.ifft({a}, norm='ortho')", None),
    "lowpass": ("np.fft.irfft(np.fft.rfft(np.real({a})) * LOWPASS, n=N)", None),
}
# real losses of the last complex value
COMPLEX_LOSSES = {
    "re": "np.sum(np.real({v} * C))",
    "abs2": "np.sum(np.abs({v}) ** 2 * np.real(C))",
    "conj_product": "np.sum(np.real({v} * np.conj({v} * C)))",
}
MARGIN, LARGEST = 0.1, 1e3     # complex programs keep this far from cuts, and this small

# control flow on traced values (length-N vectors); ``then``/``other`` name SMOOTH steps
CONTROL = {
    "if_sum": ("if np.sum({a}) > {t}:", "    {out} = {then}", "else:", "    {out} = {other}"),
    "if_entries": ("if {a}[0] > {b}[1] + {t} and np.min({b}) < 1.0:", "    {out} = {then}", "else:",
                   "    {out} = {other}"),
    "while_loop": ("{out}, n = {a}, 0", "while np.sum({out} * {out}) > 0.5 + abs({t}) and n < 6:",
                   "    {out} = 0.6 * {out} + 0.1 * {then_out}", "    n += 1"),
    "int_row": ("k = int(np.floor(np.abs({a}[0]) * 3.0)) % len(TABLE)", "{out} = {then} * TABLE[k]"),
    "index_table": ("idx = np.floor(np.abs({a}) * 2.0).astype(int) % len(LOOKUP)",
                    "{out} = {b} * LOOKUP[idx] + {then}"),
}
CONTROL_ARMS = ("sin", "tanh", "exp_tanh", "add", "mul", "div", "matvec", "cumsum", "reverse", "sum")


# -- registry steps --------------------------------------------------------------------------------

def registry_call(name: str, k: int):
    """The call of primitive ``name`` that its ``k``-th declared sample describes, on the drawn
    operands (an operand the sample derives from the others is derived in the program, so
    finite differences move it with them: max_unpool's maxima follow from its input)."""
    prim = REGISTRY[name]
    sample = prim.samples[k]
    call = caller(prim, sample)
    if sample.derive is None:
        return call
    return lambda *drawn: call(*sample.derive(*drawn))


def fold(out):
    """A registry step's result (any shapes, dtypes, tuples) as one real scalar: each float
    leaf paired with fixed uneven weights (complex ones for a complex leaf, so its imaginary
    part counts too), divided by its size; integer and boolean results carry no gradient. Uneven
    weights give the rule an uneven cotangent: a uniform one hides transposed or permuted terms."""
    leaves = out if isinstance(out, (tuple, list)) else (out,)
    total = 0.0
    for y in leaves:
        dtype = np.dtype(getattr(y, "dtype", None) or np.result_type(y))
        if dtype.kind in "fc":
            angle = 1.3 * np.arange(np.size(y)).reshape(np.shape(y)) + 0.4
            w = np.cos(angle) + 1j * np.sin(angle) if dtype.kind == "c" else np.cos(angle)
            total = total + np.sum(np.real(y * w)) / max(np.size(y), 1)
    return total


# primitives a registry step never draws, and why
NOT_DRAWN = {
    "full": "no operand: nothing to differentiate",
    "dropout_mask": "random: draws a new mask each call (ad.nn.dropout's tests check it)",
    "guard": "the machinery's record of a branch: programs with control flow draw it",
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
                     "bitwise_count"), "integer operands only: nothing to differentiate (the registry's "
                                       "value tests and tests/core/test_trace.py check them)"),
}


def _numpy_accepts(call, xs) -> bool:
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")        # astype's complex -> real sample warns
            call(*xs)
    except (TypeError, ValueError):
        return False
    return True


def registry_cases() -> list[tuple[str, int, str, str]]:
    """Every (primitive, sample, shape set, dtype) a registry step draws from: each sample at each
    of its shape sets and dtypes, and at complex128 and complex64 for primitives that declare
    complex_rule."""
    cases, rng = [], np.random.default_rng(0)
    for prim in REGISTRY.values():
        if prim.name in NOT_DRAWN:
            continue
        for k, sample in enumerate(prim.samples):
            dtypes = list(dict.fromkeys(sample.dtypes + ((C128, C64) if prim.complex_rule else ())))
            for shape_set in sample.shapes:
                for dtype in dtypes:
                    xs = draw(sample.inputs, rng, shape_set, dtype)
                    if not any(np.issubdtype(np.result_type(x), np.inexact) for x in xs):
                        continue
                    if _numpy_accepts(registry_call(prim.name, k), xs):
                        cases.append((prim.name, k, shape_set, dtype.name))
    return cases


@functools.cache
def cases() -> tuple:
    """``registry_cases()``, computed once (the registry is read when first asked)."""
    return tuple(registry_cases())


def registry_case(primitive: int, case: int) -> tuple:
    """One case of one primitive: primitives are drawn evenly, whatever their case counts."""
    names = list(dict.fromkeys(name for name, *_ in cases()))
    name = names[primitive % len(names)]
    mine = [c for c in cases() if c[0] == name]
    return mine[case % len(mine)]
