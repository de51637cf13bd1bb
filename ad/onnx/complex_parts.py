"""Complex tapes in ONNX as pairs of real tensors (``to_onnx(tape, complex_parts=True)``).

ONNX has complex tensor types but no operator computes on them, so a complex value ``z`` is
carried as two real values, ``z_re`` and ``z_im`` (float64 for complex128, float32 for
complex64): a complex input ``z`` becomes the model inputs ``z_re`` and ``z_im``, a complex
output ``out0`` the outputs ``out0_re`` and ``out0_im``. Each equation that reads or makes a
complex value is lowered by ``COMPLEX_LOWERINGS``:

* operations that act on the two parts alike (sums, reshapes, indexing, ``add``, ...) run their
  real lowering twice, on the real parts and on the imaginary parts (a real float operand has
  imaginary part 0);
* products (``multiply``, ``matmul``, ``einsum``) are (a + ib)(c + id) = (ac - bd) + i(ad + bc),
  each of the four products by the real lowering;
* ``conjugate``, ``real``, ``imag``, ``absolute``, ``exp``, ``sin``, ``cos``, ``tanh``,
  ``divide``, ``square``, ``astype`` and ``full`` by their formulas on the parts.

Other complex equations are refused by name. Division and ``absolute`` use the textbook
formulas (numpy scales to avoid overflow), so they agree with numpy to rounding for moderate
values, not near the limits of the float range.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core_prims import (add_p, astype_p, broadcast_to_p, full_p, getitem_p, index_add_p, positive_p,
                          reshape_p, setitem_p, sum_to_p, transpose_p)
from ..lib.contraction import einsum_p, matmul_p
from ..lib.elementwise import where_p
from ..lib.reductions import cumsum_p, mean_p, sum_p
from ..lib.shape import concatenate_p, roll_p
from ..lib.values import imag_p, real_p
from ..primitives import lookup
from ..tape import Aval, Lit, Var
from .graph import LoweringError, is_complex, part_dtype, real_aval
from .lowering import LOWERINGS, filled

COMPLEX_LOWERINGS: dict = {}     # primitive -> lowering of its equations with complex values


def parts(g, x, dtype=None) -> tuple[str, str]:
    """(re, im) value names of an operand, in ``dtype`` (default: its own part dtype); a real
    operand's imaginary part is zeros."""
    dtype = np.dtype(dtype) if dtype is not None else part_dtype(x.aval.dtype)
    if type(x) is Lit:
        value = np.asarray(x.value)
        return g.const(value.real, dtype), g.const(value.imag, dtype)
    if is_complex(x):
        re, im = g.names[x]
        src = part_dtype(x.aval.dtype)
        return g.cast(re, src, dtype), g.cast(im, src, dtype)
    return g.x(x, dtype), filled(g, Aval(x.aval.shape, dtype), 0)


def _register(*prims):
    def register(fn):
        for p in prims:
            COMPLEX_LOWERINGS[lookup(p)] = fn
        return fn
    return register


INDEXING = {getitem_p: 1, setitem_p: 2, index_add_p: 2}    # operands before the index arrays


def _real_eqn(g, e, which: int):
    """``e`` on real stand-ins: each numeric operand replaced by a fresh real variable named
    after its part ``which`` (0 real, 1 imaginary), the outputs real; conditions and index
    arrays stay as they are."""
    inputs = []
    for k, x in enumerate(e.inputs):
        if x.aval.dtype.kind not in "iufc" or k >= INDEXING.get(e.prim, k + 1):
            inputs.append(x)
            continue
        stand_in = Var(-1, real_aval(x.aval))
        g.names[stand_in] = parts(g, x, part_dtype(e.outputs[0].aval.dtype))[which]
        inputs.append(stand_in)
    outputs = tuple(Var(-1, real_aval(v.aval)) for v in e.outputs)
    return replace(e, inputs=tuple(inputs), outputs=outputs)


def _lower_real(g, e):
    out = LOWERINGS[e.prim](g, e)
    return out if isinstance(out, str) else out[0]


@_register(add_p, np.subtract, np.negative, positive_p, sum_p, mean_p, cumsum_p, sum_to_p, reshape_p,
           transpose_p, broadcast_to_p, getitem_p, setitem_p, index_add_p, concatenate_p, roll_p, where_p)
def _part_by_part(g, e):
    return tuple(_lower_real(g, _real_eqn(g, e, k)) for k in (0, 1))


@_register(np.multiply, matmul_p, einsum_p)
def _product(g, e):
    """(a + ib)(c + id) = (ac - bd) + i(ad + bc), with the real lowering of each product."""
    if len(e.inputs) != 2:
        raise LoweringError(f"{e.prim.name} of {len(e.inputs)} operands with complex values has no "
                            "lowering (two operands have)")
    x, y = e.inputs
    dt = part_dtype(e.outputs[0].aval.dtype)
    (a, b), (c, d) = parts(g, x, dt), parts(g, y, dt)

    def product(u, v):
        su, sv = Var(-1, Aval(x.aval.shape, dt)), Var(-1, Aval(y.aval.shape, dt))
        g.names[su], g.names[sv] = u, v
        return _lower_real(g, replace(e, inputs=(su, sv), outputs=(Var(-1, real_aval(e.outputs[0].aval)),)))
    return (g.op("Sub", product(a, c), product(b, d)), g.op("Add", product(a, d), product(b, c)))


@_register(np.conjugate)
def _conjugate(g, e):
    re, im = parts(g, e.inputs[0])
    return re, g.op("Neg", im)


@_register(real_p)
def _real(g, e):
    return parts(g, e.inputs[0])[0]


@_register(imag_p)
def _imag(g, e):
    return parts(g, e.inputs[0])[1]


@_register(np.absolute)
def _absolute(g, e):
    re, im = parts(g, e.inputs[0])
    return g.op("Sqrt", g.op("Add", g.op("Mul", re, re), g.op("Mul", im, im)))


@_register(np.exp)
def _exp(g, e):
    """e^(a + ib) = e^a (cos b + i sin b)."""
    re, im = parts(g, e.inputs[0])
    r = g.op("Exp", re)
    return g.op("Mul", r, g.op("Cos", im)), g.op("Mul", r, g.op("Sin", im))


def _cosh_sinh(g, b, dtype):
    """cosh b and sinh b from Exp (onnxruntime has no float64 Cosh or Sinh)."""
    half = g.const(0.5, dtype)
    up, down = g.op("Exp", b), g.op("Exp", g.op("Neg", b))
    return g.op("Mul", g.op("Add", up, down), half), g.op("Mul", g.op("Sub", up, down), half)


@_register(np.sin)
def _sin(g, e):
    """sin(a + ib) = sin a cosh b + i cos a sinh b."""
    re, im = parts(g, e.inputs[0])
    ch, sh = _cosh_sinh(g, im, part_dtype(e.outputs[0].aval.dtype))
    return g.op("Mul", g.op("Sin", re), ch), g.op("Mul", g.op("Cos", re), sh)


@_register(np.cos)
def _cos(g, e):
    """cos(a + ib) = cos a cosh b - i sin a sinh b."""
    re, im = parts(g, e.inputs[0])
    ch, sh = _cosh_sinh(g, im, part_dtype(e.outputs[0].aval.dtype))
    return g.op("Mul", g.op("Cos", re), ch), g.op("Neg", g.op("Mul", g.op("Sin", re), sh))


@_register(np.tanh)
def _tanh(g, e):
    """tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b) (overflows for |a| > ~350)."""
    dt = part_dtype(e.outputs[0].aval.dtype)
    re, im = (g.op("Mul", x, g.const(2.0, dt)) for x in parts(g, e.inputs[0]))
    ch, sh = _cosh_sinh(g, re, dt)
    den = g.op("Add", ch, g.op("Cos", im))
    return g.op("Div", sh, den), g.op("Div", g.op("Sin", im), den)


@_register(np.square)
def _square(g, e):
    """(a + ib)^2 = (a^2 - b^2) + i 2ab."""
    re, im = parts(g, e.inputs[0])
    two_ab = g.op("Mul", g.op("Mul", re, im), g.const(2.0, part_dtype(e.outputs[0].aval.dtype)))
    return g.op("Sub", g.op("Mul", re, re), g.op("Mul", im, im)), two_ab


@_register(np.divide)
def _divide(g, e):
    """(a + ib) / (c + id) = ((ac + bd) + i(bc - ad)) / (c^2 + d^2)."""
    dt = part_dtype(e.outputs[0].aval.dtype)
    (a, b), (c, d) = parts(g, e.inputs[0], dt), parts(g, e.inputs[1], dt)
    den = g.op("Add", g.op("Mul", c, c), g.op("Mul", d, d))
    re = g.op("Add", g.op("Mul", a, c), g.op("Mul", b, d))
    im = g.op("Sub", g.op("Mul", b, c), g.op("Mul", a, d))
    return g.op("Div", re, den), g.op("Div", im, den)


@_register(astype_p)
def _astype(g, e):
    """To complex: the parts cast; to real: the real part, as numpy does (it warns)."""
    out = e.outputs[0].aval.dtype
    re, im = parts(g, e.inputs[0], part_dtype(out))
    return (re, im) if out.kind == "c" else re


@_register(full_p)
def _full(g, e):
    out = e.outputs[0].aval
    fill = complex(e.kwargs["fill_value"])
    return filled(g, real_aval(out), fill.real), filled(g, real_aval(out), fill.imag)
