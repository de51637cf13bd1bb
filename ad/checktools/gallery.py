"""A gallery of deliberately wrong rules, one (at least) per check: what each bug looks like,
and the check that catches it. Used by the tests and the teaching notebooks.

Each ``WrongRule`` registers its rule temporarily (``ad.using_rule``) and runs ``check_rule``
(or ``check`` for a program-level bug):

>>> from ad.checktools.gallery import GALLERY
>>> report = GALLERY["wrong sign"].run()
>>> report["fd.dot_product"].status
'fail'
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..primitives import BY_FUNCTION, REGISTRY, lookup
from ..rules import primitive, to_front, using_rule
from ..tangents import NoTangent, ZeroTangent
from ..checks.program import check
from ..checks.rule import check_rule


@dataclass(frozen=True)
class WrongRule:
    """``rule`` is registered on ``target`` (and each (primitive, rule) of ``also``) while
    ``check_rule(target, *args())`` runs, or ``check(program, *args())`` when a program is
    given. ``register=False`` passes the rule instead (it cannot be registered: that is the
    bug). ``frule``: a pushforward registered on ``target`` too (``@ad.frule``); ``batch``: a
    batching rule likewise (``@ad.batch_rule``). ``check`` is the check designed to catch it;
    ``expect`` its status."""
    name: str
    bug: str
    check: str
    target: Callable
    rule: Callable
    args: Callable
    program: Callable | None = None
    also: tuple = ()
    register: bool = True
    expect: str = "fail"
    options: tuple = ()
    frule: Callable | None = None
    batch: Callable | None = None

    def run(self, **options):
        options = {**options, **dict(self.options)}     # what the entry needs to show its bug
        with contextlib.ExitStack() as stack:
            stack.enter_context(_registered())
            for target, rule in ((self.target, self.rule),) * self.register + self.also:
                stack.enter_context(using_rule(target, rule))
            if self.frule is not None:
                stack.enter_context(_using_frule(self.target, self.frule))
            if self.batch is not None:
                stack.enter_context(_using_batch(self.target, self.batch))
            if self.program is not None:
                return check(self.program, *self.args(), **options)
            if self.register:
                return check_rule(self.target, *self.args(), **options)
            return check_rule(self.target, *self.args(), rule=self.rule, **options)


@contextlib.contextmanager
def _using_frule(target, frule):
    prim = lookup(target)
    before, prim.frule = prim.frule, frule
    try:
        yield
    finally:
        prim.frule = before


@contextlib.contextmanager
def _using_batch(target, batch):
    prim = lookup(target)
    before, prim.batch = prim.batch, batch
    try:
        yield
    finally:
        prim.batch = before


def _x(shape=(4,), dtype=np.float64, seed=0):
    return lambda: (np.random.default_rng(seed).uniform(-1.5, 1.5, shape).astype(dtype),)


def _z(shape=(4,), dtype=np.complex128, seed=0):
    def draw():
        rng = np.random.default_rng(seed)
        return ((rng.uniform(-1.5, 1.5, shape) + 1j * rng.uniform(-1.5, 1.5, shape)).astype(dtype),)
    return draw


# -- the primitives the wrong rules are for --------------------------------------------------------
# They are in ad's registry only while an entry runs: tools that list registered primitives
# (coverage tables, ONNX lowerings) never see them.

_PRIMITIVES: list = []


def _primitive(name, complex_rule=False, linear_in=()):
    def make(f):
        wrapper = primitive(name=f"gallery.{name}", complex_rule=complex_rule, linear_in=linear_in)(f)
        _PRIMITIVES.append(wrapper.primitive)
        return wrapper
    return make


@contextlib.contextmanager
def _registered():
    for p in _PRIMITIVES:
        REGISTRY[p.name] = BY_FUNCTION[p.function] = p
    try:
        yield
    finally:
        _unregister()


def _unregister():
    for p in _PRIMITIVES:
        REGISTRY.pop(p.name, None)
        BY_FUNCTION.pop(p.function, None)


def softplus(x):                                   # not marked @ad.primitive
    return np.log1p(np.exp(x))


def _softplus_rule(x):
    y = softplus(x)
    return y, lambda dy: (dy / (1 + np.exp(-x)),)


@_primitive("scaled_add")
def scaled_add(x, y):
    return x + 2 * y


def _one_cotangent(x, y):
    return scaled_add(x, y), lambda dy: (dy,)          # forgets the second operand


@_primitive("cube")
def cube(x):
    return x * x * x


def _cube_rule(x):
    y = x * x                                          # the wrong primal: a square
    return y, lambda dy: (3 * x * x * dy,)


@_primitive("scale_rows")
def scale_rows(x, s):
    return x * s[:, None]


def _scale_rows_rule(x, s):
    y = scale_rows(x, s)
    return y, lambda dy: (dy * s[:, None], dy * x)     # ds must be summed over axis 1


def _transposed_matmul(a, b):
    y = a @ b
    return y, lambda dy: ((dy @ b.T).T, a.T @ dy)      # dA transposed


def _float32_upcast(x):
    y = np.sin(x)
    return y, lambda dy: (dy * np.cos(x.astype(np.float64)),)


def _zero_tangent_for_bool(c, x, y):
    out = np.where(c, x, y)
    return out, lambda dy: (ZeroTangent(), np.where(c, dy, 0), np.where(c, 0, dy))


@_primitive("scale")
def scale(x, s):
    return x * s


def _no_tangent_for_float(x, s):
    return scale(x, s), lambda dy: (dy * s, NoTangent())   # ds = sum(dy * x) is dropped


def _affine(x):
    y = np.sin(x)
    return y, lambda dy: (dy * np.cos(x) + 1e-3,)


def _non_linear(x):
    y = np.sin(x)
    return y, lambda dy: (dy * np.abs(dy) * np.cos(x),)


def _stateful(x):
    y = np.sin(x)
    calls = [0]

    def pullback(dy):
        calls[0] += 1
        return (dy * np.cos(x) * calls[0],)
    return y, pullback


def _mutates_cotangent(x):
    y = np.sin(x)

    def pullback(dy):
        np.multiply(dy, np.cos(x), out=dy)
        return (dy,)
    return y, pullback


def _cube_batched_first(args, dims):
    """Says the output's batch axis is first, wherever the operand's was."""
    return cube(args[0]), 0


@_primitive("double")
def double(x):
    return 2.0 * x


def _double_rule(x):
    return double(x), lambda dy: (double(dy),)


def _double_batched_reversed(args, dims):
    """The examples come out in reverse order."""
    return double(to_front(args[0], dims[0]))[::-1], 0


@_primitive("square")
def square(x):
    return x * x


def _writes_operand(x):
    y = square(x)

    def pullback(dy):
        return (np.multiply(x, 2 * dy, out=x),)        # overwrites the operand (another rule's residual)
    return y, pullback


def _mutates_buffer(x):
    y = np.exp(x)
    buf = np.empty_like(x)

    def pullback(dy):
        np.multiply(dy, y, out=buf)                    # one buffer reused by every call
        return (buf,)
    return y, pullback


@_primitive("half_sqnorm")
def half_sqnorm(x):
    return 0.5 * np.sum(x * x)


def _returns_operand(x):
    return half_sqnorm(x), lambda dy: (x,)             # assumes dy == 1 and returns x itself


def _unliftable(x):
    y = np.sin(x)
    return y, lambda dy: (np.asarray(dy) * np.cos(x),)  # np.asarray cannot be traced


def _type_dependent(x):
    y = np.sin(x)

    def pullback(dy):
        if type(dy) is np.ndarray:                     # a "fast path" the traced pullback never takes
            return (dy * np.cos(x),)
        return (dy * np.cos(x) * 2,)
    return y, pullback


ORDER = np.array([2, 0, 3, 1])                         # program state the rule reads


@_primitive("permute")
def permute(x):
    return x[ORDER]


def _reads_later_mutated(x):
    y = permute(x)

    def pullback(dy):
        dx = np.zeros_like(dy)
        dx[ORDER] = dy                                 # reads ORDER at backward time
        return (dx,)
    return y, pullback


W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)           # a weight the rule closes over


@_primitive("affine")
def affine(x):
    return W @ x


def _drops_weight_gradient(x):
    return affine(x), lambda dy: (W.T @ dy,)           # W is not an operand: dW is dropped


def _wrong_sign(x):
    y = np.sin(x)
    return y, lambda dy: (-dy * np.cos(x),)


@_primitive("relu")
def relu(x):
    return np.maximum(x, 0.0)


def _wrong_at_kink(x):
    y = relu(x)
    return y, lambda dy: (dy * np.where(x > 0, 1.0, np.where(x == 0, 3.0, 0.0)),)


@_primitive("sin")
def sin2(x):
    return np.sin(x)


@_primitive("cos")
def cos2(x):
    return np.cos(x)


def _sin_via_cos(x):
    return sin2(x), lambda dy: (dy * cos2(x),)         # right at first order...


def _wrong_cos(x):
    return cos2(x), lambda dy: (dy * np.sin(x),)       # ...but d cos = -sin: wrong second order


@_primitive("norm")
def norm(x):
    return np.sqrt(np.sum(x * x))


def _nan_at_zero(x):
    y = norm(x)
    return y, lambda dy: (dy * x / y,)                 # 0/0 at x = 0 (a finite input)


# -- forward mode: hand-written pushforwards and linearity declarations --------------------------

def _cube_rule_right(x):
    return cube(x), lambda dy: (3 * x * x * dy,)


def _cube_frule_sign(x):
    return cube(x), lambda dx: -3 * x * x * dx         # d(x^3) = 3 x^2 dx: the sign is wrong


def _scale_rule(x, s):
    return scale(x, s), lambda dy: (dy * s, np.sum(dy * x))


def _scale_frule_one_term(x, s):
    return scale(x, s), lambda dx, ds: dx * s          # d(x s) = dx s + x ds: x ds is forgotten


@_primitive("exp_declared_linear", linear_in=(0,))
def exp_declared_linear(x):                            # exp is not linear: the declaration is false
    return np.exp(x)


def _exp_declared_linear_rule(x):
    y = exp_declared_linear(x)
    return y, lambda dy: (dy * y,)


# -- complex numbers: the convention is g = dL/dx - i dL/dy, holomorphic f pulls back g * f'(z) --

@_primitive("abs", complex_rule=True)
def cabs(z):
    return np.abs(z)


def _abs_without_conj(z):
    y = cabs(z)
    return y, lambda dy: (dy * z / y,)                 # g * conj(z) / |z|: the conj is forgotten


@_primitive("conj", complex_rule=True)
def conj(z):
    return np.conj(z)


def _conj_without_conj(z):
    return conj(z), lambda dy: (dy,)                   # conj's pullback is conj(dy)


@_primitive("exp", complex_rule=True)
def cexp(z):
    return np.exp(z)


def _cexp_rule(z):
    y = cexp(z)
    return y, lambda dy: (dy * y,)                     # the right rule: g * f'(z)


def _pytorch_convention(z):
    y = cexp(z)
    return y, lambda dy: (dy * np.conj(y),)            # g * conj(f'(z)): PyTorch's formula


def _conjugated_cotangent(z):
    y = cexp(z)
    return y, lambda dy: (np.conj(dy) * y,)


def _drops_imaginary_part(z):
    y = cexp(z)
    return y, lambda dy: (np.real(dy) * y,)           # only the real part of the cotangent


def _real_cotangent(z):
    y = cexp(z)
    return y, lambda dy: (np.real(dy * y),)           # a real cotangent for a complex operand


def _complex64_upcast(z):
    y = cexp(z)
    return y, lambda dy: (dy * np.exp(z.astype(np.complex128)),)


@_primitive("sin_via_exp")
def rsin(x):
    return np.sin(x)


def _real_rule_in_complex(x):
    y = rsin(x)
    return y, lambda dy: (dy * (np.exp(1j * x) + np.exp(-1j * x)) / 2,)   # cos x, computed in complex


_ENTRIES = [
    WrongRule("not a primitive", "a rule written for a function that is not a primitive: the call "
              "records its parts, so the rule never fires", "registration.call", softplus, _softplus_rule,
              _x(), register=False),
    WrongRule("missing cotangent", "the pullback returns one cotangent for two operands", "structure.arity",
              scaled_add, _one_cotangent, lambda: (np.ones(3), np.arange(3.0))),
    WrongRule("wrong primal", "the rule computes x*x for a cube", "primal.value", cube, _cube_rule, _x()),
    WrongRule("missing unbroadcast", "the cotangent of a broadcast operand keeps the output's shape",
              "cotangent.shape", scale_rows, _scale_rows_rule,
              lambda: (np.arange(12.0).reshape(3, 4), np.array([1.0, 2.0, 3.0]))),
    WrongRule("transposed cotangent", "matmul's dA is transposed", "cotangent.shape", np.matmul,
              _transposed_matmul, lambda: (np.arange(12.0).reshape(3, 4), np.ones((4, 2)))),
    WrongRule("float32 upcast", "the pullback computes in float64 for float32 values", "cotangent.dtype",
              np.sin, _float32_upcast, _x(dtype=np.float32)),
    WrongRule("ZeroTangent for an int input", "a boolean operand gets ZeroTangent instead of NoTangent",
              "cotangent.integer", np.where, _zero_tangent_for_bool,
              lambda: (np.array([True, False, True]), np.ones(3), np.zeros(3))),
    WrongRule("dropped float gradient", "a float operand declared NoTangent", "cotangent.no_tangent",
              scale, _no_tangent_for_float, lambda: (np.arange(1.0, 4.0), np.float64(2.0))),
    WrongRule("affine pullback", "the pullback adds a constant", "algebra.zero", np.sin, _affine, _x()),
    WrongRule("non-linear pullback", "the pullback squares its cotangent", "algebra.linearity", np.sin,
              _non_linear, _x()),
    WrongRule("stateful pullback", "the pullback counts its calls", "algebra.twice", np.sin, _stateful, _x()),
    WrongRule("cotangent mutated in place", "the pullback writes into dy", "mutation.cotangent", np.sin,
              _mutates_cotangent, _x()),
    WrongRule("operand mutated", "the pullback writes into its operand", "mutation.inputs", square,
              _writes_operand, _x()),
    WrongRule("captured buffer mutated", "the pullback reuses a buffer it captured", "mutation.captures",
              np.exp, _mutates_buffer, _x()),
    WrongRule("operand returned as cotangent", "the pullback returns its operand itself (it assumes dy == 1)",
              "mutation.aliasing", half_sqnorm, _returns_operand, _x()),
    WrongRule("unliftable pullback", "the pullback calls np.asarray on its cotangent", "lifted.form", np.sin,
              _unliftable, _x(), expect="warn"),
    WrongRule("type-dependent pullback", "the pullback branches on the cotangent's type", "lifted.agree",
              np.sin, _type_dependent, _x()),
    WrongRule("closure reads a later-mutated array", "the pullback reads a global index array the program "
              "shuffles after the forward pass", "lifted.after_mutation", permute, _reads_later_mutated, _x()),
    WrongRule("gradient dropped through a closure capture", "the rule closes over a weight that is not an "
              "operand", "lifted.captures", affine, _drops_weight_gradient, _x()),
    WrongRule("wrong sign", "dsin = -cos", "fd.dot_product", np.sin, _wrong_sign, _x()),
    WrongRule("wrong derivative only at a kink", "relu's derivative at 0 is 3", "fd.dot_product", relu,
              _wrong_at_kink, lambda: (np.array([0.0, 1.0, -1.0, 0.0]),)),
    WrongRule("wrong second order", "the pullback is right but calls a rule with the wrong sign",
              "second_order.dot_product", sin2, _sin_via_cos, _x(), also=((cos2, _wrong_cos),),
              options=(("second_order", True),)),
    WrongRule("NaN at a finite input", "the norm's pullback divides 0 by 0 at x = 0", "program.nan", norm,
              _nan_at_zero, lambda: (np.zeros(3),), program=lambda x: norm(x) * 2.0),
    WrongRule("residual mutated", "a pullback writes into its operand, another rule's residual",
              "program.residuals", square, _writes_operand, _x(),
              program=lambda x: np.sum(square(np.exp(x)))),
    WrongRule("upcast in a program", "a pullback promotes float32 to float64", "program.dtype_flow", np.sin,
              _float32_upcast, _x(dtype=np.float32), program=lambda x: np.sum(np.sin(x))),
    WrongRule("culprit in a program", "one wrong rule among correct ones", "program.equations", np.sin,
              _wrong_sign, _x(), program=lambda x: np.sum(np.exp(np.sin(x)) * x)),
    WrongRule("opaque fallback", "a rule that cannot be lifted runs as a closure", "program.fallbacks", np.sin,
              _unliftable, _x(), program=lambda x: np.sum(np.sin(x)), expect="warn"),
    WrongRule("frule with a sign error", "a hand-written pushforward of the cube gives -3 x^2 dx",
              "forward.frule", cube, _cube_rule_right, _x(), frule=_cube_frule_sign),
    WrongRule("frule forgetting a term", "the pushforward of x * s gives dx * s, without x * ds",
              "forward.frule", scale, _scale_rule, lambda: (np.arange(1.0, 4.0), np.float64(2.0)),
              frule=_scale_frule_one_term),
    WrongRule("false linearity declaration", "exp declared linear_in=(0,): its transpose and derived "
              "pushforward would be wrong", "forward.linear", exp_declared_linear, _exp_declared_linear_rule, _x()),
    WrongRule("frule with a sign error in a program", "forward mode through a wrong frule, end to end",
              "program.jvp", cube, _cube_rule_right, _x(), program=lambda x: np.sum(cube(x) * x),
              frule=_cube_frule_sign),
    WrongRule("forgotten conj in abs", "abs's pullback written g * z / |z| (ad's is g * conj(z) / |z|)",
              "fd.dot_product", cabs, _abs_without_conj, _z()),
    WrongRule("forgotten conj in conj", "conj's pullback written g (it is conj(g)): complex-linear for a "
              "function that is not holomorphic", "complex.holomorphic", conj, _conj_without_conj, _z()),
    WrongRule("PyTorch's convention", "a holomorphic pullback conjugated: g * conj(f'(z)) for g * f'(z)",
              "fd.dot_product", cexp, _pytorch_convention, _z()),
    WrongRule("conjugated cotangent", "a holomorphic pullback that conjugates its cotangent: conj(g) * f'(z)",
              "complex.holomorphic", cexp, _conjugated_cotangent, _z()),
    WrongRule("dropped imaginary part", "a holomorphic pullback that keeps only the real part of its cotangent",
              "complex.holomorphic", cexp, _drops_imaginary_part, _z()),
    WrongRule("real cotangent for a complex input", "the pullback returns Re(g * f'(z)) for a complex operand",
              "fd.dot_product", cexp, _real_cotangent, _z()),
    WrongRule("complex64 upcast", "the pullback computes in complex128 for complex64 values", "cotangent.dtype",
              cexp, _complex64_upcast, _z(dtype=np.complex64)),
    WrongRule("complex cotangent from a real rule", "a rule for real numbers computes cos x as "
              "(e^{ix} + e^{-ix}) / 2: a complex cotangent for a real operand", "cotangent.dtype", rsin,
              _real_rule_in_complex, _x()),
    WrongRule("real to complex in a program", "a real rule's pullback computes in complex", "program.dtype_flow",
              rsin, _real_rule_in_complex, _x(), program=lambda x: np.sum(rsin(x))),
    WrongRule("complex64 upcast in a program", "a pullback promotes complex64 to complex128", "program.dtype_flow",
              cexp, _complex64_upcast, _z(dtype=np.complex64), program=lambda z: np.sum(np.real(cexp(z)))),
    WrongRule("complex-linear backward of a program that is not holomorphic", "conj's pullback written g, in "
              "conj(exp(z))", "program.holomorphic", conj, _conj_without_conj, _z(),
              program=lambda z: conj(cexp(z)), also=((cexp, _cexp_rule),)),
    WrongRule("batch axis assumed first", "cube's batching rule says its output's batch axis is first, "
              "wherever the operand's was (right at in_axes 0 only)", "batching.loop", cube, _cube_rule_right,
              _x(), batch=_cube_batched_first),
    WrongRule("examples reversed in a program's backward", "double's batching rule returns the examples in "
              "reverse order; its pullback calls double, so a batched gradient goes wrong",
              "program.batched_grad", double, _double_rule, _x(), program=lambda x: np.sum(double(x) * x),
              batch=_double_batched_reversed, options=(("batched", True),)),
]

GALLERY: dict[str, WrongRule] = {e.name: e for e in _ENTRIES}
_unregister()
