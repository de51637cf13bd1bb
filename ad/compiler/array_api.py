"""Compiled code over another array library: ``ad.compile(tape, xp=...)`` writes the source
``codegen`` writes for numpy, in the array API standard's names (``xp.asin``, ``xp.concat``,
``xp.permute_dims``), so that the gradient runs where its inputs are: PyTorch tensors, JAX
arrays, CuPy arrays on a GPU (docs/arrays.md).

- ``namespace``: the namespace an ``xp=`` names (a module, or a shortcut such as ``"torch"``).
- ``STANDARD_NAMES``: numpy's names the standard renamed, the one table of them.
- ``ArrayNamespace``: the emitter's ``Namespace`` for such code. A primitive is written with its
  ``array_api_spelling``, else its ``array_api_impl`` (a function over ``xp``, called by the
  primitive's name), else what its numpy spelling says in the standard's words: Python
  operators as they are, numpy's function under its standard name. Before a line is written,
  ``check`` refuses the tape if the namespace lacks anything it needs (``ArrayAPIError``: the
  primitive, the equation, the user's line, what to do), so code that compiles does not fail
  for want of a function.
- Indexing: the standard gathers (``xp.take``) and has no scatter. An index known when
  compiling (basic indexing, constant index arrays) is written as the positions it selects
  (``ad.core_prims.POSITIONS``), a constant, and the primitive's helper takes with them
  (``index_add(v11, v10, c4)``). An index array the program computes: the helper computes the
  positions on the device from it (``ad.core_prims.rest_positions``, the rest of the index, a
  constant; ``axes=``, ``at=`` in the call) and gathers; a write at such positions calls the
  library's own scatter (``ad.core_prims.SCATTERS``), refused where there is none.
- Where numpy promotes across kinds (a float times a bool, an int divided by an int) and the
  standard does not, an operand is cast to the dtype of the loop numpy runs (``promote``).
- Device: the code reads the device of its first input; creation functions write
  ``device=device``, and the numpy arrays the code binds (constants of the tape) are moved there
  by ``DeviceConstants``, once per device. The inputs never leave their device.
- ``ad.grad(f, form="compiled", xp=...)``: its tape cache keys another library's arrays by
  shape and dtype (``keyed_arguments``) and traces ``f``, numpy code, on a host copy of them
  (``host_arguments``): once per trace, never per call.
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import string
import warnings

import numpy as np

from .. import pytree
from ..core_prims import POSITIONS, SCATTERS, getitem_p, rest_positions
from ..dispatch import public_name
from ..errors import TraceError
from ..tape import Tape, Var, format_eqn
from .emit import Namespace, value_source
from .examples import is_polymorphic

# The array API standard's functions (2024.12) that take an array and return arrays, by their
# path in its namespace: what compiled code calls for a numpy function of the same (or renamed) name.
STANDARD = frozenset("""
    abs acos acosh add all any argmax argmin argsort asin asinh atan atan2 atanh broadcast_to ceil
    clip concat conj copysign cos cosh cumulative_prod cumulative_sum diff divide equal exp expm1
    flip floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal
    log log10 log1p log2 logaddexp logical_and logical_not logical_or logical_xor matmul max maximum
    mean min minimum moveaxis multiply negative nextafter nonzero not_equal permute_dims positive pow
    prod real reciprocal remainder repeat reshape roll round searchsorted sign signbit sin sinh sort
    sqrt square squeeze stack std subtract sum take take_along_axis tan tanh tensordot tile tril triu
    trunc var vecdot where
    linalg.cholesky linalg.cross linalg.det linalg.diagonal linalg.eigh linalg.eigvalsh linalg.inv
    linalg.matrix_norm linalg.matrix_power linalg.matrix_rank linalg.outer linalg.pinv linalg.qr
    linalg.slogdet linalg.solve linalg.svd linalg.svdvals linalg.trace linalg.vector_norm
    fft.fft fft.fftn fft.hfft fft.ifft fft.ifftn fft.ihfft fft.irfft fft.irfftn fft.rfft fft.rfftn
""".split())
# the standard's functions that take numbers, where numpy counts booleans (and means integers)
# in the result's dtype: their operand is cast to it
NUMERIC = frozenset({"xp.sum", "xp.prod", "xp.mean", "xp.cumulative_sum", "xp.cumulative_prod"})
# numpy's name -> the standard's, where they differ (the others keep numpy's name)
STANDARD_NAMES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh", "concatenate": "concat",
    "conjugate": "conj", "cumprod": "cumulative_prod", "cumsum": "cumulative_sum", "power": "pow",
    "transpose": "permute_dims", "true_divide": "divide",
}

# xp="torch"...: the module that is the namespace
SHORTCUTS = {"numpy": "numpy", "array_api_strict": "array_api_strict", "torch": "array_api_compat.torch",
             "jax": "jax.numpy", "cupy": "array_api_compat.cupy", "dask": "array_api_compat.dask.array"}
# libraries whose own module is not an array API namespace: their array_api_compat wrapper is
WRAPPED = {"torch": "array_api_compat.torch", "cupy": "array_api_compat.cupy",
           "dask.array": "array_api_compat.dask.array"}


def namespace(xp):
    """The array namespace ``xp`` names: a namespace module (``array_api_strict``,
    ``array_api_compat.torch``, ``jax.numpy``, numpy), torch, cupy or dask.array (their
    array_api_compat wrappers), or one of ``SHORTCUTS``."""
    if isinstance(xp, str):
        if xp not in SHORTCUTS:
            raise ValueError(f"xp={xp!r}; give an array namespace module or one of {tuple(SHORTCUTS)}")
        module = SHORTCUTS[xp]
    else:
        module = WRAPPED.get(getattr(xp, "__name__", None))
        if module is None:
            return xp
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"xp={xp!r} needs {module}, which does not import ({exc}); install "
                          "tapeviz's extra for it (pip install 'tapeviz[array-api]', '[torch]', '[jax]', "
                          "'[cupy]', '[dask]')") from exc


class ArrayAPIError(TraceError, NotImplementedError):
    """A tape the array namespace cannot run, refused when it is compiled: the first equation it
    cannot write (primitive, listing, origin, the user's line), the others, and what to do."""


def device_of(x):
    """The device an array is on (None, the default device, for a library without devices)."""
    return getattr(x, "device", None)


class DeviceConstants:
    """The numpy arrays compiled code binds (the tape's constants), as arrays of its namespace
    on the device it is called on: moved once per device, then a dict lookup per call. Each is
    held C-contiguous: PyTorch takes no array of negative strides (a reversed view)."""

    def __init__(self, xp, values: list):
        self.xp, self.values, self.moved = xp, tuple(np.array(v, order="C", copy=None) for v in values), {}

    def __call__(self, device) -> tuple:
        moved = self.moved.get(device)
        if moved is None:
            moved = self.moved[device] = tuple(self.xp.asarray(v, copy=True, device=device) for v in self.values)
        return moved


class Keyed:
    """An argument of another array library as ``ad.grad``'s tape cache keys it: by shape and
    dtype, as it keys numpy's arrays (its values are the tape's inputs, not part of the key)."""

    __slots__ = ("array", "key")

    def __init__(self, array):
        self.array, self.key = array, (tuple(array.shape), str(array.dtype))

    def __eq__(self, other) -> bool:
        return type(other) is Keyed and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def _is_foreign(x) -> bool:
    """An array of a library other than numpy (it has a shape and a dtype)."""
    return not isinstance(x, (np.ndarray, np.generic)) and hasattr(x, "shape") and hasattr(x, "dtype")


def keyed_arguments(args: tuple) -> tuple:
    """The arguments with each array of another library ``Keyed``."""
    leaves, structure = pytree.flatten(args)
    if not any(map(_is_foreign, leaves)):
        return args
    return pytree.unflatten(structure, [Keyed(x) if _is_foreign(x) else x for x in leaves])


def unkeyed(leaves: list) -> list:
    return [x.array if type(x) is Keyed else x for x in leaves]


def host_arguments(args: tuple) -> tuple:
    """The arguments with each ``Keyed`` array copied to the host as numpy's (to trace on)."""
    leaves, structure = pytree.flatten(args)
    return pytree.unflatten(structure, [to_host(x.array) if type(x) is Keyed else x for x in leaves])


def to_host(x) -> np.ndarray:
    """A numpy copy of an array of any library on any device (DLPack; else numpy's conversion)."""
    try:
        return np.from_dlpack(x, device="cpu", copy=True)
    except (AttributeError, TypeError, ValueError, BufferError, RuntimeError):
        return np.asarray(x)


class ArrayNamespace(Namespace):
    """The emitter's names for code over the array namespace ``xp``, bound as ``xp``."""

    def __init__(self, xp, compact: bool = False):
        super().__init__(False, compact)
        self.xp = xp
        self.globals = {"xp": xp}
        self.on_device: dict[str, np.ndarray] = {}    # name -> a numpy array the code reads
        self.uses_device = False                      # does a spelling create an array
        self.dtypes: dict[np.dtype, str | None] = {}  # dtype -> why the namespace has none (None: it has)
        self.index_only: set[int] = set()             # ids of constant index arrays: positions replace them
        self.sizes: dict = {}                         # the symbolic shapes of a polymorphic tape

    def define(self, name: str, value) -> None:
        if isinstance(value, np.ndarray) and id(value) not in self.index_only:
            self.on_device[name] = value
        else:
            self.globals[name] = value

    def constant(self, x: float) -> str:
        """A float among arrays: written as the number (the standard takes Python scalars)."""
        return value_source(x, self)

    def spelling_of(self, prim):
        if prim in POSITIONS:
            return functools.partial(self._indexing, prim)
        return spelling_of(prim)

    def _indexing(self, prim, args: list, params: dict) -> str:
        """An indexing primitive's line: its declared spelling (``x[1:, None, ...]``), else its
        helper called with the positions (``promote`` put them in place of the index operands,
        and a declared spelling writes no index operand)."""
        declared = spelling_of(prim)
        written = declared(args, params) if declared is not None else None
        if written is None:
            fn = self.calls.get(prim)
            if fn is None:
                fn = self.calls[prim] = self.function(prim)
            written = f"{fn}({', '.join(args)})"
        return written

    def _by_positions(self, e) -> bool:
        """Is ``e`` an indexing equation its declared spelling cannot write (then its helper
        takes the positions)?"""
        if e.prim not in POSITIONS:
            return False
        declared = spelling_of(e.prim)
        return declared is None or declared([f"_{k}_" for k in range(len(e.inputs))], e.kwargs) is None

    def function(self, prim) -> str:
        if prim.array_api_impl is not None:
            return self.helper(functools.partial(prim.array_api_impl, xp=self.xp), prim)
        return standard_function(prim)

    def promote(self, e, args: list) -> None:
        """The operands of ``e`` as array code passes them. A static index's operands: the
        positions it selects (``POSITIONS``), computed now with numpy, one constant. A ufunc's:
        cast to the dtypes of the loop numpy runs where they differ: the standard does not
        promote across kinds (a float times a bool, ints divided, a where choosing between a
        float and a bool), and a 0-d float64 array does
        not make PyTorch's float32 operand float64 as numpy's does. The operand of a
        ``NUMERIC`` reduction: to its result's dtype where the kinds differ."""
        if self._by_positions(e):
            operands = [np.broadcast_to(0, x.aval.shape) if type(x) is Var else x.value for x in e.inputs]
            first = len(e.inputs) - len(_index_operands(e))
            if _computed(e):
                positions, axes, at = rest_positions(operands[0], *operands[first:], index=e.kwargs["index"])
                args[first:first] = [self.bind(positions, "c")]
                args.extend([f"axes={axes}", f"at={at}"])
                return
            positions = POSITIONS[e.prim](*operands, index=e.kwargs["index"])
            args[first:] = [self.bind(positions, "c")]
            return
        uf = e.prim.function
        if isinstance(uf, np.ufunc):
            given = tuple(x.aval.dtype if type(x) is Var else _dtype_of_literal(x.value) for x in e.inputs)
            loop = uf.resolve_dtypes(given + (None,) * uf.nout)
        elif uf is np.where:      # its branches promote to the result (numpy's; the standard's mixes no kinds)
            loop = (np.dtype(np.bool_),) + (e.outputs[0].aval.dtype,) * 2
        elif standard_function(e.prim) in NUMERIC and type(e.inputs[0]) is Var \
                and e.inputs[0].aval.dtype.kind != e.outputs[0].aval.dtype.kind:
            loop = (e.outputs[0].aval.dtype,)
        else:
            return
        for k, (x, dtype) in enumerate(zip(e.inputs, loop)):
            if type(x) is Var and x.aval.dtype != dtype or type(x) is not Var and _is_strong(x.value, dtype):
                args[k] = f"xp.astype({args[k]}, {value_source(dtype, self)})"

    def check(self, tape: Tape) -> None:
        """Refuse the tape, before a line is written, if the namespace cannot run an equation
        of it; note whether the code creates arrays (then it reads its inputs' device)."""
        refused: dict[str, list] = {}
        self.sizes = tape.meta["examples"].shapes if is_polymorphic(tape) else {}
        indices, read = set(), set()
        for i, e in enumerate(tape.eqns):
            why = self._refusal(e)
            if why is not None:
                refused.setdefault(e.prim.name, []).append((i, e, why))
            arrays = _index_operands(e) if self._by_positions(e) and not _computed(e) else ()
            indices.update(id(x.value) for x in arrays if type(x) is not Var)
            read.update(id(x.value) for x in e.inputs if type(x) is not Var and all(x is not a for a in arrays))
        if refused:
            raise _refusal_error(refused, self.xp)
        self.index_only = indices - read

    def _refusal(self, e) -> str | None:
        """Why the namespace cannot run equation ``e`` (None: it can)."""
        xp, prim = self.xp, e.prim
        if prim.kind == "opaque":
            return "it runs a Python closure over numpy arrays"
        for dtype in [v.aval.dtype for v in e.outputs] + [v for _, v in e.params if isinstance(v, np.dtype)]:
            if dtype not in self.dtypes:
                self.dtypes[dtype] = _lacks(xp, dtype.name)
            if self.dtypes[dtype] is not None:
                return self.dtypes[dtype]
        if prim.kind == "guard":
            return None
        if self._by_positions(e):
            return _positions_refusal(e, self.sizes, xp)
        spelling = self.spelling_of(prim)
        if callable(spelling):                  # written for placeholder operands and the params
            code = spelling([f"_{k}_" for k in range(len(e.inputs))], e.kwargs)
            if code is None:
                return f"its array_api_spelling cannot write params {dict(e.params)}"
        elif spelling is not None:
            code = _placeheld(spelling)
        elif prim.array_api_impl is not None:
            return None
        else:
            path = standard_function(prim)
            if path is None:
                return "it declares no array_api_spelling or array_api_impl, and its numpy spelling is not the standard's"
            return _missing_call(xp, path, [k for k, _ in e.params])
        paths, names = _references(code)
        missing = [f"xp.{p}" for p in sorted(paths) if _lookup(xp, p) is None]
        if missing:
            return f"the namespace has no {', '.join(missing)}"
        strangers = sorted(n for n in names - {"xp", "device"} if not _placeholder(n))
        if strangers:
            return f"its array-API spelling reads {', '.join(strangers)}, which array code does not bind"
        self.uses_device |= "device" in names
        return None

    def preamble(self, tape: Tape) -> list[str]:
        """The lines that read the inputs' device and move the constants there."""
        lines = []
        if self.uses_device or self.on_device:
            first = f"v{tape.inputs[0].n}" if tape.inputs else "None"
            self.globals["device_of"] = device_of
            lines.append(f"    device = device_of({first})  # where the inputs are: new arrays go there")
        if self.on_device:
            self.globals["on_device"] = DeviceConstants(self.xp, list(self.on_device.values()))
            names = ", ".join(self.on_device) + ("," if len(self.on_device) == 1 else "")
            lines.append(f"    {names} = on_device(device)  # the tape's numpy constants, moved once per device")
        return lines


def _index_operands(e) -> tuple:
    """The index arrays of an indexing equation, its last operands (``("array", k)`` in its index)."""
    n = sum(type(s) is tuple and s[0] == "array" for s in e.kwargs["index"])
    return e.inputs[len(e.inputs) - n:] if n else ()


def _computed(e) -> bool:
    """Has an indexing equation index arrays the program computes (positions known when it runs)?"""
    return any(type(x) is Var for x in _index_operands(e))


def _positions_refusal(e, sizes: dict, xp) -> str | None:
    """Why array code cannot index as equation ``e`` does (None: it can): a write at positions
    the program computes needs a scatter, which the standard lacks (``SCATTERS``: the libraries
    that have one); positions that follow the number of examples."""
    name = getattr(xp, "__name__", repr(xp))
    if _computed(e) and e.prim is not getitem_p and name not in SCATTERS:
        computed = ", ".join(f"%{x.n}" for x in _index_operands(e) if type(x) is Var)
        return (f"its index arrays ({computed}) are values the program computes, so it writes at "
                f"positions known only when it runs: that needs a scatter, and {name} has no scatter "
                "(the array API standard has none; numpy, PyTorch, JAX and CuPy have one; an index of "
                "constants compiles everywhere)")
    if any(type(x) is Var and x in sizes for x in e.inputs + e.outputs):
        return "the positions it selects follow the number of examples"
    return None


def spelling_of(prim):
    """A primitive's declared array-API spelling; else its numpy spelling if that is Python
    operators on the operands alone (``"{0} @ {1}"``); None: a default call."""
    if prim.array_api_spelling is not None:
        return prim.array_api_spelling
    text = prim.spelling
    if type(text) is str and _operators_only(text):
        return text
    return None


def standard_function(prim) -> str | None:
    """``xp.<name>`` of the standard's function for the primitive's numpy function, by its
    public name (``np.linalg.inv`` -> ``xp.linalg.inv``, ``np.arcsin`` -> ``xp.asin``), if
    numpy's code calls that function with the operands and params as they are (no spelling)."""
    if prim.function is None or prim.spelling is not None:
        return None
    root, *parts = public_name(prim.function).split(".")
    found = np if root == "np" else None
    for part in parts:
        found = getattr(found, part, None)
    path = ".".join([*parts[:-1], STANDARD_NAMES.get(parts[-1], parts[-1])])
    return f"xp.{path}" if found is prim.function and path in STANDARD else None


def _missing_call(xp, path: str, keywords: list[str]) -> str | None:
    """Why the namespace cannot call ``path`` with these keywords (None: it can; a function
    whose signature Python cannot read, or that takes any keyword, is trusted)."""
    fn = _lookup(xp, path[3:])
    if fn is None:
        return f"the namespace has no {path}"
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return None
    unknown = [k for k in keywords if k not in params]
    return f"{path} takes no {', '.join(unknown)}" if unknown else None


def _lookup(xp, path: str):
    found = xp
    for part in path.split("."):
        found = getattr(found, part, None)
    return found


def _lacks(xp, name: str) -> str | None:
    """Why the namespace makes no arrays of a dtype (None: it does). JAX makes float32 arrays
    when float64 ones are asked for, unless its x64 mode is on: a silent change of precision."""
    dtype = getattr(xp, name, None)
    if dtype is None:
        return f"the namespace has no dtype {name}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = xp.zeros((), dtype=dtype).dtype
    if made != dtype:
        return (f"its arrays of dtype {name} come out {made}: turn the library's {name} on "
                "(JAX: jax.config.update('jax_enable_x64', True))")
    return None


def _dtype_of_literal(value):
    """A literal operand as ``resolve_dtypes`` takes it: a Python number by its type (weak)."""
    return type(value) if type(value) in (int, float, complex) else np.result_type(value)


def _is_strong(value, dtype) -> bool:
    """Is a literal a numpy array or scalar (not a Python number) of another dtype than ``dtype``?"""
    return type(value) not in (bool, int, float, complex) and np.result_type(value) != dtype


@functools.cache
def _placeheld(spelling: str) -> str:
    """A format-string spelling as an expression, each field a placeholder name (``_0_``)."""
    return "".join(text + ("" if field is None else f"_{field}_")
                   for text, field, _, _ in string.Formatter().parse(spelling))


@functools.cache
def _operators_only(spelling: str) -> bool:
    """Is a format-string spelling Python operators on its fields alone (no call, no name)?"""
    for node in ast.walk(ast.parse(_placeheld(spelling), mode="eval")):
        if isinstance(node, (ast.Call, ast.Attribute)) or isinstance(node, ast.Name) and not _placeholder(node.id):
            return False
    return True


def _placeholder(name: str) -> bool:
    return name.startswith("_") and name.endswith("_")


def _references(code: str) -> tuple[set[str], set[str]]:
    """The ``xp.`` paths an expression reads (``linalg.inv``) and the global names it reads."""
    paths, names = set(), set()
    for node in ast.walk(ast.parse(code, mode="eval")):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "xp":
                paths.add(".".join(reversed(chain)))
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return paths, names


def _refusal_error(refused: dict, xp) -> ArrayAPIError:
    i, e, why = next(iter(refused.values()))[0]
    name = getattr(xp, "__name__", repr(xp))
    others = "".join(f"; {prim} ({len(found)}x, first equation {found[0][0]}: {found[0][2]})"
                     for prim, found in list(refused.items())[1:])
    more = f" ({len(refused[e.prim.name]) - 1} more like it)" if len(refused[e.prim.name]) > 1 else ""
    return ArrayAPIError(
        f"ad.compile(xp={name}): cannot write {e.prim.name} over the array namespace: {why}. "
        f"Equation {i}{more}: {format_eqn(e, with_origin=True)}{others}. To run it there, declare "
        f"array_api_spelling= (or array_api_impl=) on the primitive next to its rule; or call a "
        f"function the namespace has; or compile without xp= (numpy)", e.source)
