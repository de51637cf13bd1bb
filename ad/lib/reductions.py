"""Reductions and scans: sum, mean, prod, max/min, cumsum/cumprod; var/std/average as
compositions of those. Axis arguments are normalised to sorted tuples (or None) so that equal
calls have equal params (for the cache and CSE).

Complex operands: sum, mean, prod, cumsum and cumprod are holomorphic (polynomials), so their
rules hold as written (``complex_rule``); max/min order complex numbers lexicographically, as
numpy does, an order with no analytic meaning: their gradients stay refused."""
from __future__ import annotations

import numpy as np

from ..dispatch import UFUNC_METHODS, implements, unsupported
from ..primitives import Primitive
from ..batching.derived import shifted_axes
from ..rules import batch_rule, linear_rule, non_differentiable, rrule, to_front
from ..samples import ARRAYS, DISTINCT, MATRIX, NONZERO, POSITIVE, UNARY, F, In, Sample, tie_gap


def normalize_axis(axis, ndim: int):
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < max(ndim, 1):
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % max(ndim, 1))
    return tuple(sorted(out))


def axes_to_front(a, axis):
    """(``a`` with the reduced axes moved to the front and flattened into axis 0, the keepdims
    shape): reductions numpy has no primitive for (median, quantiles, p-norms) work on axis 0."""
    shape = np.shape(a)
    axes = tuple(range(len(shape))) if axis is None else normalize_axis(axis, len(shape))
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    data = np.reshape(np.transpose(a, axes + rest),
                      (int(np.prod([shape[i] for i in axes])),) + tuple(shape[i] for i in rest))
    return data, tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_to(dy, shape, axis, keepdims):
    """Broadcast a reduction's cotangent back to the reduced operand's shape."""
    if not keepdims:
        axes = tuple(range(len(shape))) if axis is None else axis
        dy = np.reshape(dy, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return np.broadcast_to(dy, shape)


def _reduction(name, fn, linear_in=(), samples=(), kink=None, complex_rule=False):
    impl = lambda x, axis, keepdims: fn(x, axis=axis, keepdims=keepdims)  # noqa: E731
    return Primitive(name, impl, params=("axis", "keepdims"), function=fn, linear_in=linear_in,
                     samples=samples, kink=kink, complex_rule=complex_rule)


WHOLE = {"axis": None, "keepdims": False}


def _reduced(inp=F, kinks=()) -> tuple:
    """Samples of a reduction: over everything, and over axis 0 keeping it."""
    return (Sample((inp,), WHOLE, ARRAYS if inp.apart else UNARY, kinks=kinks),
            Sample((inp,), {"axis": (0,), "keepdims": True}, MATRIX))


sum_p = _reduction("sum", np.sum, linear_in=(0,), samples=_reduced(), complex_rule=True)
mean_p = _reduction("mean", np.mean, linear_in=(0,), samples=_reduced(), complex_rule=True)
prod_p = _reduction("prod", np.prod, complex_rule=True,
                    samples=_reduced(In(lo=-1.5, hi=1.5), kinks=((np.array([0.0, 1.5, -0.5, 2.0]),),)))
max_p = _reduction("max", np.max, samples=_reduced(DISTINCT, kinks=((np.array([1.0, 1.0, 0.3, -2.0]),),)),
                   kink=lambda x, axis, keepdims: tie_gap(x, axis, True))
min_p = _reduction("min", np.min, samples=_reduced(DISTINCT, kinks=((np.array([-1.0, 0.5, -1.0, 2.0]),),)),
                   kink=lambda x, axis, keepdims: tie_gap(x, axis, False))
argmax_p = Primitive("argmax", lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims),
                     params=("axis", "keepdims"), function=np.argmax, samples=(Sample((DISTINCT,), WHOLE, ARRAYS),))
argmin_p = Primitive("argmin", lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims),
                     params=("axis", "keepdims"), function=np.argmin, samples=(Sample((DISTINCT,), WHOLE, ARRAYS),))
any_p = _reduction("any", np.any, samples=(Sample((NONZERO,), WHOLE),))
all_p = _reduction("all", np.all, samples=(Sample((NONZERO,), WHOLE),))
non_differentiable(argmax_p, argmin_p, any_p, all_p)
for _prim in (sum_p, mean_p, prod_p, max_p, min_p, any_p, all_p):
    batch_rule(_prim)(shifted_axes(_prim, "axis"))


def _arg_batched(prim):
    """argmax/argmin: axis None indexes the flattened example, so each example is flattened."""
    def rule(args, dims, axis, keepdims):
        x = to_front(args[0], dims[0])
        if axis is not None:
            return prim.bind(x, axis=axis + 1, keepdims=keepdims), 0
        y = prim.bind(np.reshape(x, np.shape(x)[:1] + (-1,)), axis=1, keepdims=False)
        return (np.reshape(y, np.shape(y) + (1,) * (np.ndim(x) - 1)) if keepdims else y), 0
    return rule


batch_rule(argmax_p)(_arg_batched(argmax_p))
batch_rule(argmin_p)(_arg_batched(argmin_p))


def scalar_axis(axis, ndim: int):
    """numpy's ufunc reductions (and argmax/argmin) accept an integer axis 0 or -1 on a 0-d
    array and reduce over nothing: None there; a tuple of axes, or any other axis, stays (and
    fails as numpy's does)."""
    if ndim == 0 and isinstance(axis, (int, np.integer)) and int(axis) in (0, -1):
        return None
    return axis


# where= and initial= of the ufunc reductions: (what fills the elements where= leaves out, the
# ufunc that joins initial= to the result); None: no identity, where= needs initial= (as numpy).
MASKED = {sum_p: (0, np.add), prod_p: (1, np.multiply), max_p: (None, np.maximum),
          min_p: (None, np.minimum), any_p: (False, np.logical_or), all_p: (True, np.logical_and)}


def _masked(prim, a, axis, keepdims, initial, where):
    """A reduction with where=/initial=, written with np.where and the reduction itself."""
    fill, join = MASKED[prim]
    if where is not np._NoValue:
        if fill is None and initial is np._NoValue:
            raise ValueError(f"reduction operation '{join.__name__}' does not have an identity, so to "
                             "use a where mask one has to specify 'initial'")
        a = np.where(where, a, initial if fill is None else fill)
    y = prim.bind(a, axis=axis, keepdims=keepdims)
    return y if initial is np._NoValue else join(y, initial)


def _masked_mean(a, axis, keepdims, where):
    kept = np.broadcast_to(where, np.shape(a))
    dtype = np.result_type(a) if np.issubdtype(np.result_type(a), np.inexact) else np.float64
    total = sum_p.bind(np.where(kept, a, 0), axis=axis, keepdims=keepdims)
    return total / np.sum(kept, axis=axis, keepdims=keepdims, dtype=dtype)


def _reduce_handler(prim, ufunc_like: bool = True):
    def handler(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
                where=np._NoValue):
        if out is not None:
            raise unsupported(f"np.{prim.name}(..., out=)", f"Assign the result instead: y = np.{prim.name}(a).")
        if dtype is not None:
            a = a.astype(dtype) if hasattr(a, "astype") else np.asarray(a, dtype)
        if ufunc_like:
            axis = scalar_axis(axis, np.ndim(a))
        axis, keepdims = normalize_axis(axis, np.ndim(a)), bool(keepdims)
        if initial is np._NoValue and where is np._NoValue:
            return prim.bind(a, axis=axis, keepdims=keepdims)
        if not ufunc_like:
            if initial is not np._NoValue:
                raise TypeError(f"{prim.name}() got an unexpected keyword argument 'initial'")
            return _masked_mean(a, axis, keepdims, where)
        return _masked(prim, a, axis, keepdims, initial, where)
    return handler


for _prim, _fns in ((sum_p, (np.sum,)), (prod_p, (np.prod,)), (max_p, (np.max, np.amax)),
                    (min_p, (np.min, np.amin)), (any_p, (np.any,)), (all_p, (np.all,))):
    implements(*_fns)(_reduce_handler(_prim))
implements(np.mean)(_reduce_handler(mean_p, ufunc_like=False))   # numpy's mean refuses axis=0 on 0-d


def _arg_axis(a, axis):
    axis = scalar_axis(axis, np.ndim(a))
    return None if axis is None else normalize_axis(int(axis), np.ndim(a))[0]


@implements(np.argmax)
def _argmax(a, axis=None, out=None, *, keepdims=False):
    return argmax_p.bind(a, axis=_arg_axis(a, axis), keepdims=keepdims)


@implements(np.argmin)
def _argmin(a, axis=None, out=None, *, keepdims=False):
    return argmin_p.bind(a, axis=_arg_axis(a, axis), keepdims=keepdims)


linear_rule(sum_p, lambda dy, x, axis, keepdims: expand_to(dy, x.shape, axis, keepdims))
# scaled before it is broadcast: the pooled-size product, not the full one (the same numbers)
linear_rule(mean_p, lambda dy, x, axis, keepdims: expand_to(dy * (np.size(dy) / np.size(x) if np.size(x) else 0.0),
                                                            x.shape, axis, keepdims))


@rrule(prod_p)
def _prod_rule(x, axis, keepdims):
    y = np.prod(x, axis=axis, keepdims=keepdims)

    def pullback(dy):
        # The product of all *other* elements, from exclusive cumulative products: exact where x
        # has zeros (y / x would give nan there).
        axes = tuple(range(x.ndim)) if axis is None else axis
        last = tuple(range(x.ndim - len(axes), x.ndim))
        moved = np.moveaxis(x, axes, last)
        flat = np.reshape(moved, moved.shape[:x.ndim - len(axes)] + (-1,))
        ones = np.ones_like(flat[..., :1])
        left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
        others = np.moveaxis(np.reshape(left * right, moved.shape), last, axes)
        return (expand_to(dy, x.shape, axis, keepdims) * others,)
    return y, pullback


def _extremum_rule(fn):
    def rule(x, axis, keepdims):
        y = fn(x, axis=axis, keepdims=keepdims)

        def pullback(dy):
            # split evenly between tied maxima (a valid subgradient, as autograd does)
            hit = x == expand_to(y, x.shape, axis, keepdims)
            count = np.sum(hit, axis=axis, keepdims=True, dtype=dy.dtype)   # no float32 upcast
            return (expand_to(dy, x.shape, axis, keepdims) * hit / count,)
        return y, pullback
    return rule


rrule(max_p)(_extremum_rule(np.max))
rrule(min_p)(_extremum_rule(np.min))


# -- scans -------------------------------------------------------------------------------------

def _scan(name, fn, inp, linear_in=()):
    return Primitive(name, lambda x, axis: fn(x, axis=axis), params=("axis",), function=fn,
                     linear_in=linear_in, samples=(Sample((inp,), {"axis": 0}, ARRAYS),),
                     complex_rule=True)


cumsum_p = _scan("cumsum", np.cumsum, F, linear_in=(0,))
cumprod_p = _scan("cumprod", np.cumprod, POSITIVE)


def _scan_handler(prim):
    def handler(a, axis=None, dtype=None, out=None):
        if out is not None:
            raise unsupported(f"np.{prim.name}(..., out=)")
        if dtype is not None:
            a = a.astype(dtype)
        if axis is None:
            a, axis = np.ravel(a), 0
        return prim.bind(a, axis=int(axis) % max(np.ndim(a), 1))
    return handler


batch_rule(cumsum_p)(shifted_axes(cumsum_p, "axis", none_is_all=False))
batch_rule(cumprod_p)(shifted_axes(cumprod_p, "axis", none_is_all=False))
implements(np.cumsum)(_scan_handler(cumsum_p))
implements(np.cumprod)(_scan_handler(cumprod_p))


def _reverse_cumsum(dy, axis):
    flip = (slice(None),) * axis + (slice(None, None, -1),)
    return np.cumsum(dy[flip], axis=axis)[flip]


linear_rule(cumsum_p, lambda dy, x, axis: _reverse_cumsum(dy, axis))


@rrule(cumprod_p)
def _cumprod_rule(x, axis):
    y = np.cumprod(x, axis=axis)

    def pullback(dy):
        # d y_j / d x_i = prod_{k <= j, k != i} x_k (j >= i) = E_i * T[i, j], with E the exclusive
        # cumulative product and T[i, j] = prod_{i < k <= j} x_k: exact at zeros, where y / x is
        # nan. T costs n^2 per slice along the axis.
        xt = np.moveaxis(x, axis, -1)
        dyt = np.moveaxis(dy, axis, -1)
        n = xt.shape[-1]
        after = np.arange(n)[None, :] > np.arange(n)[:, None]          # k > i
        t = np.cumprod(np.where(after, xt[..., None, :], 1.0), axis=-1)  # (..., i, j)
        t = np.where(after | np.eye(n, dtype=bool), t, 0.0)             # keep j >= i
        ones = np.ones_like(xt[..., :1])
        exclusive = np.cumprod(np.concatenate([ones, xt[..., :-1]], axis=-1), axis=-1)
        dxt = exclusive * np.sum(t * dyt[..., None, :], axis=-1)
        return (np.moveaxis(dxt, -1, axis),)
    return y, pullback


# -- ufunc methods and compositions ---------------------------------------------------------------

def _method_reduce(prim):
    def reduce(a, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
        return _reduce_handler(prim)(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)
    return reduce


UFUNC_METHODS[(np.add, "reduce")] = _method_reduce(sum_p)
UFUNC_METHODS[(np.multiply, "reduce")] = _method_reduce(prod_p)
UFUNC_METHODS[(np.maximum, "reduce")] = _method_reduce(max_p)
UFUNC_METHODS[(np.minimum, "reduce")] = _method_reduce(min_p)
def _running_extremum(x, axis, largest):
    """Where each running max (min) along ``axis`` was attained: the last position so far that
    equals it (a tie sends the gradient to the latest, a valid subgradient)."""
    y = (np.maximum if largest else np.minimum).accumulate(x, axis=axis)
    at = np.arange(np.shape(x)[axis]).reshape((-1,) + (1,) * (np.ndim(x) - axis - 1))
    return np.maximum.accumulate(np.where(x == y, at, 0), axis=axis)


def _running_arg_spelling(args, params) -> str:
    x, axis = args[0], params["axis"]
    running = f"np.{'maximum' if params['largest'] else 'minimum'}.accumulate({x}, axis={axis})"
    at = f"np.arange(np.shape({x})[{axis}]).reshape((-1,) + (1,) * (np.ndim({x}) - {axis} - 1))"
    return f"np.maximum.accumulate(np.where({x} == {running}, {at}, 0), axis={axis})"


running_arg_p = Primitive("running_arg", _running_extremum, params=("axis", "largest"),
                          doc="The positions of np.maximum.accumulate (largest) / np.minimum.accumulate",
                          spelling=_running_arg_spelling,
                          samples=(Sample((DISTINCT,), {"axis": 0, "largest": True}, ARRAYS),
                                   Sample((DISTINCT,), {"axis": 0, "largest": False}, ARRAYS)))
non_differentiable(running_arg_p)
batch_rule(running_arg_p)(shifted_axes(running_arg_p, "axis", none_is_all=False))


def _accumulate_extremum(largest: bool):
    def accumulate(a, axis=0, dtype=None, out=None):
        name = f"np.{'maximum' if largest else 'minimum'}.accumulate"
        if out is not None:
            raise unsupported(f"{name}(..., out=)", f"Assign the result instead: y = {name}(a).")
        if dtype is not None:
            a = a.astype(dtype)
        if np.iscomplexobj(a):      # as max/min: their gradients refuse complex values
            raise unsupported(f"{name} of complex values", "numpy orders complex numbers "
                              "lexicographically (real part first), an order with no derivative.")
        if np.ndim(a) == 0:
            raise TypeError("cannot accumulate on a scalar")
        axis = normalize_axis(axis, np.ndim(a))[0]
        return np.take_along_axis(a, running_arg_p.bind(a, axis=axis, largest=largest), axis=axis)
    return accumulate


UFUNC_METHODS[(np.maximum, "accumulate")] = _accumulate_extremum(True)
UFUNC_METHODS[(np.minimum, "accumulate")] = _accumulate_extremum(False)
UFUNC_METHODS[(np.add, "accumulate")] = lambda a, axis=0, dtype=None, out=None: np.cumsum(a, axis, dtype, out)
UFUNC_METHODS[(np.multiply, "accumulate")] = lambda a, axis=0, dtype=None, out=None: np.cumprod(a, axis, dtype, out)


@implements(np.var)
def _var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue, mean=np._NoValue,
         correction=np._NoValue):
    if out is not None or where is not np._NoValue or mean is not np._NoValue:
        raise unsupported("np.var(..., out=/where=/mean=)")
    if correction is not np._NoValue:
        ddof = correction
    d = a - np.mean(a, axis=axis, dtype=dtype, keepdims=True)
    axes = normalize_axis(axis, np.ndim(a))
    n = np.size(a) if axes is None else int(np.prod([np.shape(a)[i] for i in axes]))
    squares = np.real(np.conjugate(d) * d) if np.iscomplexobj(d) else d * d   # |d|^2: a real var
    return np.sum(squares, axis=axis, keepdims=keepdims) / (n - ddof)


@implements(np.std)
def _std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kwargs):
    var = _var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kwargs)
    axes = normalize_axis(axis, np.ndim(a))
    if (np.size(a) if axes is None else int(np.prod([np.shape(a)[i] for i in axes]))) == 1 and ddof == 0:
        return var      # one element per reduction: std is identically 0 (sqrt's slope at 0 is not)
    return np.sqrt(var)


@implements(np.average)
def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    if weights is None:
        avg, total = np.mean(a, axis=axis, keepdims=keepdims), None
    else:
        w = np.broadcast_to(weights, np.shape(a)) if np.ndim(weights) == np.ndim(a) else \
            np.reshape(weights, tuple(-1 if i == axis % np.ndim(a) else 1 for i in range(np.ndim(a))))
        total = np.sum(w * np.ones_like(a), axis=axis, keepdims=keepdims)
        avg = np.sum(a * w, axis=axis, keepdims=keepdims) / total
    return (avg, total if total is not None else np.zeros_like(avg) + np.size(a) / np.size(avg)) if returned else avg


@implements(np.ptp)
def _ptp(a, axis=None, out=None, keepdims=False):
    return np.max(a, axis=axis, keepdims=keepdims) - np.min(a, axis=axis, keepdims=keepdims)


@implements(np.nansum)
def _nansum(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    return np.sum(np.where(np.isnan(a), 0, a), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nanmean)
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    ok = ~np.isnan(a)
    return np.sum(np.where(ok, a, 0), axis=axis, keepdims=keepdims) / np.sum(ok, axis=axis, keepdims=keepdims)


@implements(np.count_nonzero)
def _count_nonzero(a, axis=None, *, keepdims=False):
    return np.sum(a != 0, axis=axis, keepdims=keepdims)
