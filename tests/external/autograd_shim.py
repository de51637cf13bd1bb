"""A stand-in for the ``autograd`` package that runs autograd's own tests on ``ad``.

autograd's tests import ``autograd.numpy as np`` and differentiate with ``autograd.grad`` and
``autograd.test_util.check_grads``. ``installed()`` puts modules in ``sys.modules`` under those
names: ``autograd.numpy`` *is* plain numpy (the code under test is then plain numpy code, which is
what ``ad`` traces), ``autograd.scipy.*`` is plain scipy, and the differential operators are
written here on ``ad.grad``, ``ad.value_and_grad``, ``ad.vjp`` and, for forward mode
(``make_jvp``, ``deriv``, ``jacobian``, ``hessian``, ``make_hvp``, ``defjvp``), ``ad.jvp``,
``ad.jacobian``, ``ad.hessian``, ``ad.hvp`` and ``ad.frule``. autograd's internals (``vspace``,
boxes, ``const_graph``) are not mapped, so importing them fails with ImportError, and its VJP
table is an empty dict.

``check_grads`` follows autograd's algorithm and messages: for mode ``"fwd"`` a JVP against a
numerical JVP, for ``"rev"`` a VJP against it along random directions, then for ``order=2`` the
same checks on the JVP and the VJP themselves.
"""
from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.util
import itertools
import sys
import types

import numpy as np

import ad
from ad import pytree
from ad.tracer import Tracer

TOL = RTOL = EPS = 1e-6       # autograd.test_util's tolerances and step


# -- differential operators -------------------------------------------------------------------

def _name(f) -> str:
    return getattr(f, "__name__", "[unknown name]")


def unary_to_nary(unary):
    """autograd's calling convention: ``op(fun, argnum=0, ...)(*args, **kwargs)`` applies the
    unary operator to ``fun`` as a function of the argument(s) ``argnum``, the others fixed."""
    def nary(fun, argnum=0, *op_args, **op_kwargs):
        def apply(*args, **kwargs):
            nums = (argnum,) if isinstance(argnum, int) else tuple(argnum)

            def unary_f(x):
                new = list(args)
                for k, v in zip(nums, (x,) if isinstance(argnum, int) else x):
                    new[k] = v
                return fun(*new, **kwargs)
            unary_f.__name__ = _name(fun)
            x = args[argnum] if isinstance(argnum, int) else tuple(args[k] for k in nums)
            return unary(unary_f, x, *op_args, **op_kwargs)
        apply.__name__ = f"{unary.__name__}_of_{_name(fun)}_wrt_argnum_{argnum}"
        return apply
    nary.__name__ = unary.__name__
    return nary


def core_make_vjp(fun, x):
    """``autograd.core.make_vjp(fun, x) -> (vjp, fun(x))``, by ``ad.vjp``."""
    y, pullback = ad.vjp(fun, x)
    return (lambda g: _zeros_for_none(pullback(g)[0], x)), y


def _zeros_for_none(ct, x):
    """ad answers None for leaves without a gradient (integers); autograd answers zeros."""
    leaves, tree = pytree.flatten(ct)
    xs = pytree.flatten(x)[0]
    return pytree.unflatten(tree, [np.zeros(np.shape(v)) if c is None else c for c, v in zip(leaves, xs)])


make_vjp = unary_to_nary(core_make_vjp)


def core_make_jvp(fun, x):
    """``autograd.core.make_jvp(fun, x) -> jvp``, ``jvp(v) -> (fun(x), J v)``, by ``ad.jvp``."""
    def jvp(v):
        y, ty = ad.jvp(fun, (x,), (v,))
        return y, _zeros_for_none(ty, y)
    return jvp


make_jvp = unary_to_nary(core_make_jvp)


@unary_to_nary
def deriv(fun, x):
    return core_make_jvp(fun, x)(np.ones_like(x))[1]


@unary_to_nary
def holomorphic_grad(fun, x):
    return ad.grad(fun, holomorphic=True)(x)


@unary_to_nary
def grad(fun, x):
    return ad.grad(fun)(x)


@unary_to_nary
def value_and_grad(fun, x):
    return ad.value_and_grad(fun)(x)


@unary_to_nary
def elementwise_grad(fun, x):
    vjp, y = core_make_vjp(fun, x)
    return vjp(np.ones(np.shape(y)))


@unary_to_nary
def jacobian(fun, x):
    """``ad.jacobian``: forward or reverse mode, whichever is cheaper."""
    return _zeros_for_none(ad.jacobian(fun)(x), x)


@unary_to_nary
def hessian(fun, x):
    return ad.hessian(fun)(x)


@unary_to_nary
def make_hvp(fun, x):
    """``(hvp, gradient)``, the product by ``ad.hvp`` (forward over reverse)."""
    return (lambda v: ad.hvp(fun, (x,), (v,))[1]), ad.grad(fun)(x)


@unary_to_nary
def grad_and_aux(fun, x):
    vjp, (value, aux) = core_make_vjp(lambda x: tuple(fun(x)), x)
    return vjp((np.ones(np.shape(value)), _zeros_like(aux))), aux


def hessian_tensor_product(fun, argnum=0):
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(fun_grad(*args, **kwargs), vector, np.ndim(vector))
    return grad(vector_dot_grad, argnum)


def tensor_jacobian_product(fun, argnum=0):
    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return np.tensordot(vector, fun(*args, **kwargs), axes=np.ndim(vector))
    return jacobian(vector_dot_fun, argnum)


def make_ggnvp(f, g=lambda x: 0.5 * np.sum(x ** 2, axis=-1), f_argnum=0):
    """Gauss-Newton products, all in reverse mode (a VJP of a VJP is a JVP)."""
    @unary_to_nary
    def _make_ggnvp(f, x):
        f_vjp, f_x = core_make_vjp(f, x)
        g_hvp, grad_g_x = core_make_vjp(grad(g), f_x)
        f_jvp, _ = core_make_vjp(f_vjp, _zeros_like(grad_g_x))
        return lambda v: f_vjp(g_hvp(f_jvp(v)))
    return _make_ggnvp(f, f_argnum)


def checkpoint(fun):
    """Checkpointing trades memory for time; the values and gradients are those of ``fun``."""
    return fun


def flatten(value):
    """``autograd.misc.flatten``: one flat vector of every leaf, and the function undoing it."""
    leaves, tree = pytree.flatten(value)
    sizes = [int(np.size(v)) for v in leaves]
    shapes = [np.shape(v) for v in leaves]
    flat = np.concatenate([np.ravel(v) for v in leaves]) if leaves else np.zeros(0)

    def unflatten(vector):
        parts = np.split(vector, np.cumsum(sizes)[:-1]) if leaves else []
        return pytree.unflatten(tree, [np.reshape(p, s) for p, s in zip(parts, shapes)])
    return flat, unflatten


# -- user-defined primitives --------------------------------------------------------------------

def primitive(f):
    """``autograd.extend.primitive``: ``ad.primitive``; its VJPs come from ``defvjp``."""
    return ad.primitive(f)


def defvjp(fun, *vjpmakers, argnums=None):
    """``autograd.extend.defvjp(fun, vjp0, vjp1, ...)``: each maker is ``(ans, *args) -> (g ->
    cotangent)``; None means no gradient. Registered as one ``ad.rrule``."""
    nums = list(argnums) if argnums is not None else list(range(len(vjpmakers)))
    makers = dict(zip(nums, vjpmakers))

    @ad.rrule(fun)
    def rule(*xs, **params):
        ans = fun(*xs, **params)

        def pullback(g):
            return tuple(ad.NoTangent() if makers.get(i) is None else makers[i](ans, *xs, **params)(g)
                         for i in range(len(xs)))
        return ans, pullback
    return rule


def defjvp(fun, *jvpmakers, argnums=None):
    """``autograd.extend.defjvp(fun, jvp0, jvp1, ...)``: each maker is ``(g, ans, *args) ->
    tangent`` for its argument; None means none. Registered as one ``ad.frule``, the sum of the
    makers' terms."""
    nums = list(argnums) if argnums is not None else list(range(len(jvpmakers)))
    makers = {i: m for i, m in zip(nums, jvpmakers) if m is not None}

    @ad.frule(fun)
    def rule(*xs, **params):
        ans = fun(*xs, **params)

        def pushforward(*ts):
            terms = [makers[i](t, ans, *xs, **params) for i, t in enumerate(ts)
                     if i in makers and not isinstance(t, ad.NoTangent)]
            return sum(terms[1:], terms[0]) if terms else ad.ZeroTangent()
        return ans, pushforward
    return rule


def isbox(x) -> bool:
    return isinstance(x, Tracer)


# -- gradient checks (autograd.test_util) -------------------------------------------------------

def scalar_close(a, b):
    return abs(a - b) < TOL or abs(a - b) / abs(a + b) < RTOL


def _zeros_like(x):
    leaves, tree = pytree.flatten(x)
    return pytree.unflatten(tree, [np.zeros_like(np.asarray(v)) for v in leaves])


def _randn_like(x):
    """A random vector of ``x``'s space (complex leaves get complex directions, as in autograd)."""
    leaves, tree = pytree.flatten(x)

    def one(v):
        r = np.random.randn(*np.shape(v))
        return r + 1j * np.random.randn(*np.shape(v)) if np.iscomplexobj(v) else r
    return pytree.unflatten(tree, [one(v) for v in leaves])


def _lincomb(a, x, b, y):
    """``a * x + b * y`` leaf by leaf."""
    xs, tree = pytree.flatten(x)
    return pytree.unflatten(tree, [a * u + b * v for u, v in zip(xs, pytree.flatten(y)[0])])


def _inner(x, y):
    """The real inner product of two members of one space, as in autograd's vspaces (a numpy
    float, so that ``scalar_close`` divides by zero as autograd's does)."""
    return np.float64(sum(np.real(np.vdot(np.ravel(u), np.ravel(v)))
                          for u, v in zip(pytree.flatten(x)[0], pytree.flatten(y)[0])))


def _covector(x):
    """The covector of a vector: its conjugate (the identity on real spaces)."""
    leaves, tree = pytree.flatten(x)
    return pytree.unflatten(tree, [np.conj(v) if np.iscomplexobj(v) else v for v in leaves])


def _space(x):
    leaves, tree = pytree.flatten(x)
    return tree, [(np.shape(v), np.iscomplexobj(v)) for v in leaves]


def _numerical_jvp(f, x):
    def jvp(v):
        plus, minus = f(_lincomb(1.0, x, EPS / 2, v)), f(_lincomb(1.0, x, -EPS / 2, v))
        return _lincomb(1.0 / EPS, plus, -1.0 / EPS, minus)
    return jvp


def check_vjp(f, x):
    vjp, y = core_make_vjp(f, x)
    x_v, y_v = _randn_like(x), _randn_like(y)
    vjp_y = _covector(vjp(_covector(y_v)))
    assert _space(vjp_y) == _space(x), f"VSpace mismatch:\nx: {_space(x)}\nvjp: {_space(vjp_y)}"
    exact = _inner(x_v, vjp_y)
    numeric = _inner(y_v, _numerical_jvp(f, x)(x_v))
    assert scalar_close(numeric, exact), (
        f"Derivative (VJP) check of {_name(f)} failed with arg {x}:\nanalytic: {exact}\nnumeric:  {numeric}")


def _has_complex(x) -> bool:
    return builtins.any(np.iscomplexobj(v) for v in pytree.flatten(x)[0])


def check_jvp(f, x):
    x_v = _randn_like(x)
    check_equivalent(core_make_jvp(f, x)(x_v)[1], _numerical_jvp(f, x)(x_v))


@unary_to_nary
def check_grads(f, x, modes=None, order=2):
    modes = ["fwd", "rev"] if modes is None else modes
    assert builtins.all(m in ("fwd", "rev") for m in modes)
    try:
        if "fwd" in modes:
            check_jvp(f, x)
            if order > 1:
                def jvp_f(x, v):
                    return core_make_jvp(f, x)(v)[1]
                jvp_f.__name__ = f"jvp_{_name(f)}"
                check_grads(jvp_f, (0, 1), modes, order=order - 1)(x, _randn_like(x))
        if "rev" in modes:
            check_vjp(f, x)
            if order > 1:
                def vjp_f(x, v):
                    return core_make_vjp(f, x)[0](v)
                vjp_f.__name__ = f"vjp_{_name(f)}"
                check_grads(vjp_f, (0, 1), modes, order=order - 1)(x, _randn_like(f(x)))
    except Exception as exc:
        if _has_complex(x):
            exc.add_note("autograd shim: the checked inputs are complex")
        raise


def check_equivalent(x, y):
    assert _space(x) == _space(y), f"VSpace mismatch:\nx: {_space(x)}\ny: {_space(y)}"
    v = _randn_like(x)
    assert scalar_close(_inner(x, v), _inner(y, v)), f"Value mismatch:\nx: {x}\ny: {y}"


def combo_check(fun, *args, **kwargs):
    """Check ``fun`` on every combination of the given argument and keyword values."""
    def _combo_check(*arg_values, **kwarg_values):
        kwarg_items = [[(k, v) for v in vs] for k, vs in kwarg_values.items()]
        for xs in itertools.product(*arg_values):
            for kws in itertools.product(*kwarg_items):
                check_grads(fun, *args, **kwargs)(*xs, **dict(kws))
    return _combo_check


# -- the modules --------------------------------------------------------------------------------

def _module(name: str, **attrs) -> types.ModuleType:
    m = types.ModuleType(name, "ad's stand-in for " + name)
    m.__dict__.update(attrs)
    return m


def modules() -> dict[str, types.ModuleType]:
    """Every ``autograd`` module this shim maps, by name."""
    ops = dict(grad=grad, value_and_grad=value_and_grad, elementwise_grad=elementwise_grad,
               jacobian=jacobian, hessian=hessian, make_vjp=make_vjp, make_hvp=make_hvp,
               grad_and_aux=grad_and_aux, hessian_tensor_product=hessian_tensor_product,
               hessian_vector_product=hessian_tensor_product,
               tensor_jacobian_product=tensor_jacobian_product,
               vector_jacobian_product=tensor_jacobian_product, make_ggnvp=make_ggnvp,
               checkpoint=checkpoint, primitive=primitive,
               make_jvp=make_jvp, deriv=deriv, holomorphic_grad=holomorphic_grad)
    containers = dict(tuple=builtins.tuple, list=builtins.list, dict=builtins.dict,
                      isinstance=builtins.isinstance, type=builtins.type)
    test_util = _module("autograd.test_util", check_grads=check_grads, check_vjp=check_vjp, check_jvp=check_jvp,
                        check_equivalent=check_equivalent, combo_check=combo_check,
                        scalar_close=scalar_close)
    mods = {
        "autograd": _module("autograd", __path__=[], **ops, **containers),
        "autograd.numpy": np, "autograd.numpy.random": np.random,
        "autograd.numpy.linalg": np.linalg, "autograd.numpy.fft": np.fft,
        "autograd.test_util": test_util,
        "autograd.extend": _module("autograd.extend", primitive=primitive, defvjp=defvjp,
                                   defjvp=defjvp),
        "autograd.tracer": _module("autograd.tracer", primitive=primitive, isbox=isbox),
        # autograd's VJP table: ad keeps rules on its primitives, so a test removing an entry
        # (to run a function without its VJP) removes nothing
        "autograd.core": _module("autograd.core", make_vjp=core_make_vjp, make_jvp=core_make_jvp,
                                 primitive=primitive, primitive_vjps={}),
        "autograd.wrap_util": _module("autograd.wrap_util", unary_to_nary=unary_to_nary),
        "autograd.builtins": _module("autograd.builtins", **containers),
        "autograd.misc": _module("autograd.misc", flatten=flatten),
    }
    for name, m in mods.items():     # `import autograd.numpy as np` reads the parent's attribute
        parent, _, child = name.rpartition(".")
        if parent in mods and isinstance(mods[parent], types.ModuleType) and mods[parent] is not np:
            setattr(mods[parent], child, m)
    return mods


class _ScipyAliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``autograd.scipy.X`` forwards to plain ``scipy.X`` (a module, or an object such as
    ``scipy.stats.multivariate_normal`` where autograd has a module)."""

    def find_spec(self, name, path=None, target=None):
        if name == "autograd.scipy" or name.startswith("autograd.scipy."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        target = "scipy" + spec.name[len("autograd.scipy"):]
        try:
            obj = importlib.import_module(target)
        except ModuleNotFoundError:
            parent, _, attr = target.rpartition(".")
            if not hasattr(importlib.import_module(parent), attr):
                raise ModuleNotFoundError(f"{spec.name}: scipy has no {target}") from None
            obj = getattr(importlib.import_module(parent), attr)
        m = _module(spec.name, __path__=[])
        m.__getattr__ = lambda name: getattr(obj, name)
        return m

    def exec_module(self, module):
        pass


def _is_autograd(name: str) -> bool:
    return name == "autograd" or name.startswith("autograd.")


@contextlib.contextmanager
def installed():
    """The shim in ``sys.modules`` (and the scipy aliases on the import path) for the block; any
    real autograd modules already imported are set aside and put back afterwards."""
    real = {n: sys.modules.pop(n) for n in [n for n in sys.modules if _is_autograd(n)]}
    mods = modules()
    sys.modules.update(mods)
    finder = _ScipyAliases()
    sys.meta_path.insert(0, finder)
    try:
        yield mods
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if _is_autograd(n)]:
            del sys.modules[name]
        sys.modules.update(real)
