"""A differential fuzzer: random numpy programs, every form of their gradient compared.

A program is data (``Program``: a family, a shape, a dtype, steps, an input seed) that is turned
into the *source code* of a numpy function (``Program.source``), so a failure prints as a
ready-to-paste pytest test (``Program.as_test``) and hypothesis shrinks it step by step. Families:

- ``real``: elementwise functions, broadcasting between values of different shapes, reductions
  over axes, indexing, in-place writes through views, linalg, ``ad.nn`` functions, kinks, and
  *registry steps*: a call of any registered primitive (``ad.lib``, ``ad.nn``, ``ad.scipy``) on
  operands drawn from one of its declared ``samples`` (so domains and kinks are respected),
  complex128 for primitives that declare ``complex_rule``; its result is folded into the chain.
- ``complex``: chains of complex steps (holomorphic functions, conj, abs, angle, the FFT...)
  kept off branch cuts and poles.
- ``control``: Python ``if``/``while``/``int()`` on traced values (guards); run at three points
  that take other branches.

``compare(f, xs)`` runs every form that applies and raises ``FuzzFailure`` naming the forms that
disagree: closure, lifted, lifted+passes, compiled (numpy; the fused C backend on a quarter of
the programs, ``oracles_for``), finite differences (the dot-product test),
forward mode (``ad.jvp``: ``<J u, 1> == <u, grad>``), the second derivative (grad of grad against
finite differences of grad), HIPS autograd (programs written with numpy functions only), the
JSON save/load round trip and the ONNX export run in onnxruntime (tapes that export).

Use it on your own rules with hypothesis::

    @hypothesis.given(ad.checks.fuzz.programs(extra_steps=...))
    def test_my_rules(program):
        ad.checks.fuzz.run(program)

or from the shell: ``python -m ad.checks.fuzz --programs 1000 --seed 7 --workers 2 --out findings``.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
import types
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, Phase, assume, given, seed as hypothesis_seed, settings
from hypothesis import strategies as st

from .. import fused, nn, serialize, to_onnx
from ..api import grad, grad_tape, trace
from ..codegen import compile_tape
from ..errors import GuardError, NonDifferentiableError, TraceError
from ..forward import jvp
from ..passes import optimize
from ..primitives import REGISTRY
from ..samples import C64, C128, caller, draw, traced
from ..scipy import integrate, linalg, signal, special, stats  # noqa: F401  (they register primitives)
from .fd import directional_derivative, dot_product_test, pair, random_like

N = 4
# constants the programs read (the printed tests import them from here)
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
EXACT = {np.dtype(np.float64): 1e-9, np.dtype(np.float32): 2e-3}


class FuzzFailure(AssertionError):
    """Forms of one program's gradient disagree (or one raised); the message is a pytest test."""


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


_CASES: list = []


def cases() -> list:
    """``registry_cases()``, computed once (the registry is read when first asked)."""
    if not _CASES:
        _CASES.extend(registry_cases())
    return _CASES


def registry_case(primitive: int, case: int) -> tuple:
    """One case of one primitive: primitives are drawn evenly, whatever their case counts."""
    names = list(dict.fromkeys(name for name, *_ in cases()))
    name = names[primitive % len(names)]
    mine = [c for c in cases() if c[0] == name]
    return mine[case % len(mine)]


# -- programs --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Program:
    """A random program: ``steps`` are (step name, i, j, *extra) with i, j indices into the pool
    of values so far (taken modulo its size); a registry step is ("@", i, primitive, case): the
    ``case``-th case of the ``primitive``-th primitive of ``cases()`` (both modulo their counts).

    >>> program = ad.checks.fuzz.Program("real", (("sin", 0, 1), ("view_write", 2, 1)))
    >>> print(program.source())
    def f(x0, x1):
        v2 = np.sin(x0)
        v3 = v2 + 0.0 * x1
        view = v3[..., ::2]
        view *= np.tanh(x1[..., 1::2])
        return np.sum(v3 * WEIGHTS) + 0.1 * np.sum(v2 * v2)
    <BLANKLINE>
    >>> ad.checks.fuzz.run(program)      # the forms compared, all agreeing
    ['closure', 'lifted', 'lifted+passes', 'compiled', 'finite differences', 'jvp', ..., 'json', 'onnx']
    """
    family: str
    steps: tuple
    shape: tuple = (N,)
    dtype: str = "float64"
    loss: str = "re"
    seed: int = 0
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def smooth(self) -> bool:
        """No kinks: finite differences apply (complex programs keep MARGIN away from theirs)."""
        return self.family != "real" or all(s[0] not in KINKED for s in self.steps)

    @property
    def numpy_only(self) -> bool:
        """Written with numpy functions only, that HIPS autograd differentiates too."""
        lacks = NOT_AUTOGRAD | (NOT_AUTOGRAD_ND if len(self.shape) > 1 else set())
        return all(s[0] != "@" and not s[0].startswith("nn_") and s[0] not in self.extra and s[0] not in lacks
                   for s in self.steps)

    def registry_steps(self) -> list:
        return [registry_case(s[2], s[3]) for s in self.steps if s[0] == "@"]

    # the function's source
    def source(self) -> str:
        n_in = 2 + sum(len(traced(REGISTRY[c[0]].samples[c[1]].inputs)) for c in self.registry_steps())
        lines, pool, shapes = [], ["x0", "x1"], [self.shape, self.shape]
        next_input = 2
        for k, step in enumerate(self.steps):
            out = f"v{k + 2}"
            name, i, j = step[0], step[1] % len(pool), step[2] % len(pool) if step[0] != "@" else 0
            a, b, sa, sb = pool[i], pool[j], shapes[i], shapes[j]
            if name == "@":
                prim, sample, _, _ = registry_case(step[2], step[3])
                n = len(traced(REGISTRY[prim].samples[sample].inputs))
                args = ", ".join(f"x{next_input + m}" for m in range(n))
                next_input += n
                body, shape = [f"{{out}} = {a} + 0.1 * fold(R({prim!r}, {sample})({args}))"], sa
            elif self.family == "complex":
                body, shape = [f"{{out}} = {COMPLEX[name][0].format(a=a, b=b)}"], sa
            elif name in CONTROL:
                body, shape = self._control(name, a, b, step[3:]), sa
            else:
                body, shape = self.steps_table()[name](a, b, sa, sb)
            lines += [line.format(out=out) for line in body]
            pool.append(out)
            shapes.append(shape)
        if self.family == "complex":
            last = COMPLEX_LOSSES[self.loss].format(v=pool[-1])
            lines.append(f"return {last} + 0.1 * np.sum(np.real({pool[-2]} * np.conj({pool[-2]})))")
        else:
            lines.append(f"return np.sum({pool[-1]} * WEIGHTS) + 0.1 * np.sum({pool[-2]} * {pool[-2]})")
        args = ", ".join(f"x{m}" for m in range(n_in))
        return f"def f({args}):\n" + "".join(f"    {line}\n" for line in lines)

    def steps_table(self) -> dict:
        return {**SMOOTH, **NN, **KINKED, **self.extra}

    def _control(self, name, a, b, control) -> list:
        then, other, t = control

        def arm(step):
            return SMOOTH[step](a, b, (N,), (N,))[0][0].split(" = ", 1)[1]
        then_out = SMOOTH[then]("{out}", b, (N,), (N,))[0][0].split(" = ", 1)[1]
        return [line.format(a=a, b=b, t=repr(t), then=arm(then), other=arm(other), out="{out}",
                            then_out=then_out.replace("{", "{{").replace("}", "}}").format(out="{out}"))
                for line in CONTROL[name]]

    def function(self):
        """The program as a function (its globals: ``NAMESPACE``)."""
        namespace = {**NAMESPACE, "np": np}
        exec(compile(self.source(), f"<fuzzed program {self.family}>", "exec"), namespace)
        return namespace["f"]

    def inputs(self) -> list:
        """x0 and x1 (complex x0 in the complex family), then each registry step's operands."""
        rng = np.random.default_rng(self.seed)
        if self.family == "complex":
            xs = [rng.uniform(-1, 1, N) + 1j * rng.uniform(-1, 1, N), rng.uniform(-1, 1, N)]
        else:
            xs = [rng.standard_normal(self.shape).astype(self.dtype) for _ in range(2)]
        for prim, k, shape_set, dtype in self.registry_steps():
            xs += draw(REGISTRY[prim].samples[k].inputs, rng, shape_set, np.dtype(dtype))
        return xs

    def domains(self) -> list:
        doms = [None, None]
        for prim, k, _, _ in self.registry_steps():
            doms += [i.domain for i in traced(REGISTRY[prim].samples[k].inputs)]
        return doms

    def as_test(self, name: str = "test_found_by_fuzzer") -> str:
        """A ready-to-paste pytest test that replays this program through ``compare``."""
        xs = ",\n        ".join(_literal(x) for x in self.inputs())
        body = self.source().replace("\n    ", "\n        ").replace("def f(", "    def f(", 1)
        options = f"smooth={self.smooth}, numpy_only={self.numpy_only}, family={self.family!r}"
        return (f"import numpy as np\nfrom ad import nn\n"
                f"from ad.checks.fuzz import C, EYE, IDX, LOOKUP, LOWPASS, MASK, N, TABLE, W, WC, WEIGHTS, WELL\n"
                f"from ad.checks.fuzz import compare, fold, registry_call as R\n\n\n"
                f"def {name}():\n{body}"
                f"    xs = [\n        {xs}]\n"
                f"    compare(f, xs, {options})\n")


NAMESPACE = {"nn": nn, "R": registry_call, "fold": fold, "N": N, "W": W, "WC": WC, "WELL": WELL, "EYE": EYE,
             "IDX": IDX, "MASK": MASK, "WEIGHTS": WEIGHTS, "C": C, "TABLE": TABLE, "LOOKUP": LOOKUP,
             "LOWPASS": LOWPASS}


def _literal(x) -> str:
    """An input as exact Python source (repr of floats round-trips)."""
    x = np.asarray(x)
    return f"np.array({x.tolist()!r}, dtype=np.{x.dtype.name})"


# -- strategies ------------------------------------------------------------------------------------

def _pool_index():
    return st.integers(0, 99)


def programs(family: str | None = None, *, max_steps: int = 8, registry: float = 0.25, kinks: bool = True,
             extra_steps: dict | None = None):
    """A hypothesis strategy of ``Program``s (of one ``family``, or of all three). ``registry``:
    the share of steps that call a registered primitive on its samples; ``kinks=False`` draws
    smooth steps only; ``extra_steps``: your own steps (name -> ``unary(...)``/``binary(...)``/
    ``block(...)``) mixed into the real family."""
    extra = dict(extra_steps or {})
    families = [family] if family else ["real", "real", "real", "complex", "control"]

    @st.composite
    def draw(draw_):
        fam = draw_(st.sampled_from(families))
        seed = draw_(st.integers(0, 2**16))
        if fam == "complex":
            steps = draw_(st.lists(st.tuples(st.sampled_from(complex_steps()), _pool_index(), _pool_index()),
                                   min_size=1, max_size=max_steps))
            return Program(fam, tuple(steps), loss=draw_(st.sampled_from(sorted(COMPLEX_LOSSES))), seed=seed)
        if fam == "control":
            arms = st.sampled_from(CONTROL_ARMS)
            step = st.one_of(st.tuples(st.sampled_from(CONTROL_ARMS), _pool_index(), _pool_index()),
                             st.tuples(st.sampled_from(sorted(CONTROL)), _pool_index(), _pool_index(), arms, arms,
                                       st.floats(-1.0, 1.0).map(lambda t: round(t, 3))))
            steps = draw_(st.lists(step, min_size=1, max_size=max_steps))
            steps.append(("if_sum", 0, 1, "sin", "tanh", 0.0)) if not any(s[0] in CONTROL for s in steps) else None
            return Program(fam, tuple(steps), seed=seed)
        names = sorted({**SMOOTH, **NN, **(KINKED if kinks else {}), **extra})
        plain = st.tuples(st.sampled_from(names), _pool_index(), _pool_index())
        prim = st.tuples(st.just("@"), _pool_index(), st.integers(0, 10**6), st.integers(0, 99))
        step = st.one_of(plain, prim) if registry else plain
        if 0 < registry < 0.5:
            step = st.one_of(*([plain] * round((1 - registry) / registry)), prim)
        steps = draw_(st.lists(step, min_size=1, max_size=max_steps))
        shape = draw_(st.sampled_from(SHAPES))
        dtype = draw_(st.sampled_from(["float64", "float64", "float64", "float32"]))
        return Program("real", tuple(steps), shape=shape, dtype=dtype, seed=seed, extra=extra)
    return draw()


_COMPLEX_STEPS: list = []


def complex_steps() -> list:
    """The complex steps whose primitives all declare complex_rule (read off a trace)."""
    if not _COMPLEX_STEPS:
        probe = [C * 0.7, np.linspace(-0.8, 0.9, N)]
        for name, (template, _) in sorted(COMPLEX.items()):
            f = Program("complex", ((name, 0, 1),), loss="re").function()
            try:
                tape = trace(f, *probe)
            except TraceError:
                continue
            if all(e.prim.complex_rule for e in tape.eqns
                   if any(v.aval.dtype.kind == "c" for v in (*e.inputs, *e.outputs))):
                _COMPLEX_STEPS.append(name)
    return _COMPLEX_STEPS


def well_posed(program: Program, xs) -> bool:
    """Complex programs: no step within MARGIN of a cut, pole or kink, nothing past LARGEST.
    Other programs: the value is finite."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)     # astype's complex -> real
        value = program.function()(*xs)
    if not np.isfinite(value) or abs(value) > LARGEST ** 2:
        return False
    if program.family != "complex":
        return True
    worst = np.inf
    pool = list(xs[:2])
    for name, i, j in program.steps:
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        if not (np.all(np.isfinite(a)) and np.max(np.abs(a)) < LARGEST and np.max(np.abs(b)) < LARGEST):
            return False
        near = COMPLEX[name][1]
        if near is not None:
            worst = min(worst, float(np.min(near(a, b))))
        with np.errstate(all="ignore"):
            pool.append(eval(COMPLEX[name][0].format(a="a", b="b"), {**NAMESPACE, "np": np, "a": a, "b": b}))
    return worst > MARGIN


# -- comparing the forms ---------------------------------------------------------------------------

@dataclass
class Oracles:
    """Which of the expensive comparisons run (the cheap ones always do)."""
    onnx: bool = True
    autograd: bool = True
    second_order: bool = True
    json: bool = True
    fused: bool = False         # the fused backend: C loops, a compiler run per new kernel


COUNTS: dict = {}       # form -> programs it compared (what a run covered)
TIMES: dict = {}        # form -> seconds of CPU spent in it
SKIPPED: Counter = Counter()    # why a form did not apply -> how often


def cpu_time() -> float:
    """CPU seconds of this process and its finished children (the fused backend's compiler)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(form):
    class _Clock:
        def __enter__(self):
            self.t = cpu_time()

        def __exit__(self, *exc):
            TIMES[form] = TIMES.get(form, 0.0) + cpu_time() - self.t
            if exc[0] is None:
                COUNTS[form] = COUNTS.get(form, 0) + 1
    return _Clock()


def _close(got, want, rtol, what):
    for k, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        if np.shape(a) != np.shape(b) or not np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True):
            worst = float(np.max(np.abs(a - b), initial=0.0)) if np.shape(a) == np.shape(b) else np.nan
            raise FuzzFailure(f"{what}: gradient {k} differs (max abs diff {worst:.3g})\n  got  {a!r}\n  want {b!r}")


def _differentiable(xs) -> tuple:
    return tuple(k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.inexact))


def _exact(xs) -> float:
    return max(EXACT.get(np.dtype(np.result_type(x)).type(0).real.dtype, 1e-9) for x in xs
               if np.issubdtype(np.result_type(x), np.inexact))


def compare(f, xs, *, smooth: bool = True, numpy_only: bool = False, family: str = "real",
            domains=None, oracles: Oracles | None = None, rng=None) -> list[str]:
    """Every form of ``grad(f)`` at ``xs`` that applies, against the closure form (and finite
    differences, autograd...). Returns the forms compared; raises FuzzFailure at the first
    disagreement. ``numpy_only``: ``f`` reads numpy as the global ``np`` and calls nothing else
    that traces, so autograd differentiates it with ``np`` rebound to ``autograd.numpy``.
    ``family="control"``: see ``compare_control``."""
    oracles = oracles or Oracles()
    rng = rng or np.random.default_rng(0)
    anp = _module("autograd.numpy") if numpy_only and oracles.autograd else None
    f_autograd = None if anp is None else _with_numpy(f, anp)
    if family == "control":
        return compare_control(f, xs, f_autograd=f_autograd, rng=rng)
    argnums = _differentiable(xs)
    rtol = _exact(xs)
    done = ["closure"]
    with np.errstate(all="ignore"):
        with _timed("closure"):
            ref = grad(f, argnums, form="closure")(*xs)
        with _timed("lifted"):
            raw = grad_tape(f, *xs, argnums=argnums)
            _close(raw(*xs)[1], ref, rtol, "lifted")
        with _timed("lifted+passes"):
            gt = optimize(raw)
            _close(gt(*xs)[1], ref, rtol, "lifted+passes")
        with _timed("compiled"):
            _close(compile_tape(gt)(*xs)[1], ref, rtol, "compiled")
        done += ["lifted", "lifted+passes", "compiled"]
        if oracles.fused:
            with _timed("fused"):
                try:
                    run_fused = fused.compile(gt, backend="fused")
                except fused.FusedUnavailable:
                    SKIPPED["fused: no C compiler"] += 1
                else:
                    _close(run_fused(*xs)[1], ref, max(rtol, 1e-7), "compiled, fused backend")
                    done.append("fused")
        precise = rtol < 1e-6
        if smooth and precise:
            with _timed("finite differences"):
                _finite_differences(f, xs, argnums, ref, domains, rng)
            done.append("finite differences")
        us = [random_like(xs[k], rng) for k in argnums]
        tangents = [None] * len(xs)
        for k, u in zip(argnums, us):
            tangents[k] = u.astype(np.result_type(xs[k]))
        want = sum(pair(g, u) for g, u in zip(ref, us))
        for form in ("lifted", "closure", "compiled"):
            label = "jvp" if form == "lifted" else f"jvp {form}"
            with _timed(label):
                try:
                    _, ty = jvp(f, tuple(xs), tuple(tangents), form=form)
                except NonDifferentiableError as exc:      # a declared refusal (odeint), loud
                    SKIPPED[f"{label}: {_refusal(exc)}"] += 1
                    continue
                if not abs(float(np.real(ty)) - want) <= 100 * rtol * max(1.0, abs(want)):
                    raise FuzzFailure(f"{label}: <J u, 1> = {float(np.real(ty))!r} but <u, grad> = {want!r}")
            done.append(label)
        if oracles.second_order and smooth and precise and family == "real" and len(argnums) >= 1:
            with _timed("grad of grad"):
                try:
                    _second_order(f, xs, argnums[-1], rng, domains)    # a registry operand, if any
                    done.append("grad of grad")
                except NonDifferentiableError as exc:      # a declared refusal (odeint), loud
                    SKIPPED[f"grad of grad: {_refusal(exc)}"] += 1
        if oracles.json:
            with _timed("json"):
                if _json_round_trip(gt, xs, ref):
                    done.append("json")
        if oracles.onnx and family == "real" and not any(np.iscomplexobj(x) for x in xs):
            with _timed("onnx"):
                if _onnx(gt, xs, ref, rtol):
                    done.append("onnx")
        if f_autograd is not None:
            with _timed("autograd"):
                want = _autograd().grad(f_autograd, argnums)(*xs)
                _close(ref, want, max(rtol, 1e-8), "ad (closure) against HIPS autograd")
            done.append("autograd")
    return done


def _refusal(exc) -> str:
    """The primitive a NonDifferentiableError names (its message's first words otherwise)."""
    names = [name for name in REGISTRY if f" {name}:" in str(exc) or f" {name} " in str(exc)]
    return max(names, key=len) if names else " ".join(str(exc).split()[:6])


def _finite_differences(f, xs, argnums, ref, domains, rng):
    cts = [None] * len(xs)
    for k, g in zip(argnums, ref):
        cts[k] = g

    def pullback(v):
        return [None if c is None else c * v for c in cts]
    for lhs, rhs, est in dot_product_test(f, pullback, xs, rng=rng, directions=1, domains=domains,
                                          wrt=list(argnums)):
        if not abs(lhs - rhs) <= 1e-6 * max(1.0, abs(lhs)) + 10 * est.error:
            raise FuzzFailure(f"finite differences: <J u, v> = {lhs!r} but <u, J^T v> = {rhs!r} "
                              f"(estimate error {est.error:.2g})")


def _second_order(f, xs, k, rng, domains):
    """grad of (grad f . v) with respect to x_k against finite differences of grad f . v."""
    v = random_like(xs[k], rng)
    g = grad(f, k)

    def gv(x):
        return np.sum(np.real(g(*xs[:k], x, *xs[k + 1:]) * v))
    hvp = grad(gv)(xs[k])
    u = random_like(xs[k], rng)
    est = directional_derivative(gv, [xs[k]], [u], domains=None if domains is None else [domains[k]])
    want, got = float(est.value[0]), pair(hvp, u)
    if not abs(got - want) <= 1e-5 * max(1.0, abs(want)) + 10 * est.error:
        raise FuzzFailure(f"grad of grad: <H v, u> = {got!r} but finite differences of <grad, v> give {want!r}")


def _json_round_trip(gt, xs, ref) -> bool:
    try:
        text = serialize.dumps(gt)
    except serialize.NotSerializableError:
        SKIPPED["json: NotSerializableError"] += 1
        return False
    loaded = serialize.loads(text)
    _, grads = loaded(*xs)
    _close(grads, ref, _exact(xs), "the gradient tape saved as JSON and loaded")
    return True


def _onnx(gt, xs, ref, rtol) -> bool:
    ort = _module("onnxruntime")
    if ort is None:
        return False
    try:
        model = to_onnx(gt, guards="branch")          # run at the inputs that took the branch
    except (NotImplementedError, serialize.NotSerializableError) as exc:    # LoweringError: no lowering
        SKIPPED[f"onnx: {type(exc).__name__}"] += 1
        return False
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as exc:        # onnxruntime has no kernel for an operator at this dtype
        if "NOT_IMPLEMENTED" not in str(exc):
            raise
        SKIPPED["onnx: " + str(exc).split("implementation for ")[-1].split(" node")[0]] += 1
        return False
    feeds = {i.name: np.asarray(x) for i, x in zip(sess.get_inputs(), xs)}
    got = sess.run(None, feeds)[1:]
    _close(got, ref, max(rtol, 1e-7), "the ONNX export run in onnxruntime")
    return True


def _with_numpy(f, xp):
    """``f`` with the global ``np`` rebound to ``xp`` (autograd.numpy)."""
    return types.FunctionType(f.__code__, {**f.__globals__, "np": xp}, f.__name__, f.__defaults__, f.__closure__)


def _module(name):
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


def _autograd():
    return _module("autograd")


def compare_control(f, xs, *, f_autograd=None, rng=None) -> list[str]:
    """Control flow: ``grad(f)`` in every form, called at ``xs`` and at two points that tend to
    take other branches (it must re-trace), against autograd (when given) or the closure form; a
    tape traced at the first point, run at the others, gives the eager value or raises
    GuardError; finite differences where the branches do not change nearby; the compiled
    gradient tape of the first point refuses other branches (GuardError) or is right."""
    rng = rng or np.random.default_rng(0)
    x0, x1 = xs
    points = [(x0, x1), (-x0, -x1), (2.5 * x0, 0.5 * x1)]
    grads = {form: grad(f, (0, 1), form=form) for form in ("closure", "lifted", "compiled")}
    oracle = _autograd().grad(f_autograd, (0, 1)) if f_autograd is not None and _autograd() else None
    first_tape = trace(f, *points[0])
    compiled = compile_tape(optimize(grad_tape(f, *points[0], argnums=(0, 1))))
    with np.errstate(all="ignore"), _timed("control"):
        for p in points:
            want = oracle(*p) if oracle else grads["closure"](*p)
            for form, g in grads.items():
                _close(g(*p), want, 1e-8, f"{form} at a re-trace" + (" against autograd" if oracle else ""))
            if _same_branches(first_tape, p):
                if not np.allclose(first_tape(*p), f(*p), rtol=1e-12):
                    raise FuzzFailure("a tape run on inputs taking its branches gives another value")
            _control_fd(f, trace(f, *p), p, want, rng)
            try:
                value, got = compiled(*p)
            except GuardError:
                continue
            if not np.allclose(value, f(*p), rtol=1e-12):
                raise FuzzFailure("the compiled gradient tape ran another branch without GuardError")
            _close(got, want, 1e-8, "the compiled gradient tape of the first trace")
        for form, g in grads.items():                     # back to the first point: no re-trace
            before = g.cache_info().traces
            _close(g(*points[0]), grads["closure"](*points[0]), 1e-8, form)
            if g.cache_info().traces != before:
                raise FuzzFailure(f"{form}: the first inputs were traced again")
    return ["closure", "lifted", "compiled", "guards"] + (["autograd"] if oracle else [])


def _same_branches(tape, xs) -> bool:
    try:
        tape(*xs)
    except GuardError:
        return False
    return True


def _control_fd(f, tape, xs, grads, rng):
    us = [rng.standard_normal(np.shape(x)) for x in xs]
    h = 1e-4
    stencil = [[x + s * u for x, u in zip(xs, us)] for s in (h, -h, h / 2, -h / 2)]
    if not all(_same_branches(tape, p) for p in stencil):
        return
    plus, minus, plus2, minus2 = (f(*p) for p in stencil)
    fd = (4 * (plus2 - minus2) / h - (plus - minus) / (2 * h)) / 3
    got = sum(float(np.dot(np.ravel(g), np.ravel(u))) for g, u in zip(grads, us))
    if not abs(got - fd) <= 1e-6 * max(1.0, abs(fd)):
        raise FuzzFailure(f"finite differences: {fd!r}, the gradient says {got!r}")


# -- one program -----------------------------------------------------------------------------------

def run(program: Program, oracles: Oracles | None = None) -> list[str] | None:
    """Compare every form of ``program``'s gradient; None if the program is ill-posed (a value
    not finite, a complex step near a cut). On a disagreement, FuzzFailure whose message is the
    program as a ready-to-paste pytest test."""
    xs = program.inputs()
    if not well_posed(program, xs):
        return None
    f = program.function()
    COUNTS["programs"] = COUNTS.get("programs", 0) + 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)   # astype's complex -> real
            return compare(f, xs, smooth=program.smooth, numpy_only=program.numpy_only, family=program.family,
                           domains=program.domains(), oracles=oracles,
                           rng=np.random.default_rng(program.seed))
    except Exception as exc:       # every exception is a finding: programs are well-posed
        raise FuzzFailure(f"{type(exc).__name__}: {exc}\n\n# a ready-to-paste test:\n{program.as_test()}") from exc


def oracles_for(program: Program, fraction: float) -> Oracles:
    """The expensive oracles (ONNX, autograd, grad of grad) on about ``fraction`` of the
    programs (chosen by the program's seed), the cheap forms on all; the fused backend on a
    quarter of that (each new kernel is a C compiler run, ~0.1 s)."""
    on = (program.seed % 1000) < fraction * 1000
    return Oracles(onnx=on, autograd=on, second_order=on, json=True, fused=on and program.seed % 4 == 0)


FUZZ_SETTINGS = dict(deadline=None, database=None, derandomize=False, report_multiple_bugs=False,
                     phases=[Phase.explicit, Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def fuzz(n: int, seed: int, *, fraction: float = 1.0, family: str | None = None, **strategy) -> int:
    """Run ``n`` well-posed programs under hypothesis, seeded (``strategy``: options of
    ``programs``); returns how many were compared, raises the shrunk FuzzFailure, which names
    the seed that replays it."""
    compared = [0]

    @hypothesis_seed(seed)
    @settings(max_examples=n, **FUZZ_SETTINGS)
    @given(programs(family, **strategy))
    def one(program):
        assume(run(program, oracles_for(program, fraction)) is not None)
        compared[0] += 1
    try:
        one()
    except FuzzFailure as exc:
        raise FuzzFailure(f"seed {seed}: replay with AD_FUZZ_SEED={seed} (tests/test_fuzz.py) or "
                          f"python -m ad.checks.fuzz --seed {seed} --programs {n}\n{exc}") from None
    return compared[0]


# -- the long run: python -m ad.checks.fuzz ----------------------------------------------------

def _worker(args):
    worker, seeds, n, out, fraction, deadline = args
    found = []
    for s in seeds:
        if time.time() > deadline:
            break
        start = time.time()
        try:
            fuzz(n, s, fraction=fraction)
            status = "ok"
        except FuzzFailure as exc:
            status = "failed"
            path = Path(out) / f"seed{s}.txt"
            path.write_text(f"# python -m ad.checks.fuzz --seed {s} --programs {n}\n{exc}\n")
            found.append(str(path))
        line = {"worker": worker, "seed": s, "programs": n, "status": status, "seconds": round(time.time() - start, 1)}
        with open(Path(out) / "log.jsonl", "a") as log:
            log.write(json.dumps(line) + "\n")
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ad.checks.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=int(os.environ.get("AD_FUZZ_SEED", "0")),
                   help="first seed (env AD_FUZZ_SEED); each chunk of --programs uses the next one")
    p.add_argument("--programs", type=int, default=200, help="programs per seed (per hypothesis run)")
    p.add_argument("--seeds", type=int, default=1, help="how many seeds (chunks) in all")
    p.add_argument("--hours", type=float, default=None, help="stop starting chunks after this long")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--fraction", type=float, default=1.0, help="share of programs the expensive oracles see")
    p.add_argument("--out", default="fuzz-findings")
    a = p.parse_args(argv)
    Path(a.out).mkdir(parents=True, exist_ok=True)
    deadline = time.time() + (a.hours * 3600 if a.hours else 10**9)
    seeds = list(range(a.seed, a.seed + (a.seeds if not a.hours else 10**6)))
    jobs = [(w, seeds[w::a.workers], a.programs, a.out, a.fraction, deadline) for w in range(a.workers)]
    print(f"fuzzing: seeds from {a.seed}, {a.programs} programs each, {a.workers} worker(s), findings in {a.out}")
    if a.workers == 1:
        found = _worker(jobs[0])
    else:
        with multiprocessing.Pool(a.workers) as pool:
            found = [f for fs in pool.map(_worker, jobs) for f in fs]
    print(f"{len(found)} finding(s)" + "".join(f"\n  {f}" for f in found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
