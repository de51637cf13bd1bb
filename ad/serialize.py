"""Saving and loading tapes as JSON (schema in docs/serialization.md).

A tape is a list of named primitives, so it can be written down; loading a file never runs
anything from it. Primitive names are looked up in ``ad.primitives.REGISTRY`` (never imported),
params are checked against the primitive's declared params and signature, every size is bounded,
and by default each equation is evaluated once on stand-in values of its declared inputs to
check that the shapes the file claims are the shapes the equation computes.

Naming legend: ``obj`` decoded JSON, ``where`` the path of a value inside the file
(``eqns[3].params.axis``), ``enc``/``dec`` encode/decode a static value.
"""
from __future__ import annotations

import base64
import binascii
import collections
import difflib
import functools
import inspect
import json
import math
import os
import re
import numpy as np

from . import pytree
from .backward import GradTape
from .errors import source_line
from .primitives import REGISTRY
from .tape import Aval, Eqn, InvalidTapeError, Lit, Origin, Tape, Var, freeze_params, validate

FORMAT = "tapeviz.tape"
VERSION = 1
INLINE_MAX = 16          # arrays with at most this many elements are written as JSON lists

LIMITS = {               # defaults of ``load``'s size limits (each a keyword of ``load``)
    "max_bytes": 64 << 20,
    "max_eqns": 1_000_000,
    "max_depth": 100,
    "max_literal_bytes": 64 << 20,
    "max_elements": 100_000_000,   # per variable, literal or ``shape`` param
}

DTYPES = {np.dtype(t).name: np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.clongdouble)}
_EXACT_ITEM = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 "
                        "float64 complex64 complex128".split())   # .item() round-trips exactly
_VALUE_DEPENDENT_SHAPES = frozenset({"nonzero"})   # output shapes follow the data, not the avals
_KINDS = ("primal", "pullback", "project", "accumulate", "seed", "zeros")


class TapeFormatError(ValueError):
    """A file that is not a valid saved tape; the message names where (and the fix)."""


class NotSerializableError(TypeError):
    """A tape holding something that is not data (an opaque rule's closure, an object param)."""


# -- refusing opaque tapes (shared with the ONNX exporter) ----------------------------------------

def opaque_rules(tape: Tape) -> list[str]:
    """One line per rule that runs as an opaque closure: rule, source line, reason."""
    fallbacks = getattr(tape, "fallbacks", ())
    found = [(str(f), f.source) for f in fallbacks] or [
        (f"{e.kwargs['prim'].name} at {e.source or '?'} (equation {i}: {e.prim.name})", e.source)
        for i, e in enumerate(tape.eqns) if e.prim.kind == "opaque"]
    lines = []
    for text, source in found:
        src = source_line(source)
        lines.append(f"  - {text}" + (f"\n      {src}" if src else ""))
    return lines


def check_serializable(tape: Tape, what: str = "saved") -> None:
    """Refuse tapes that run Python closures: their handles cannot be written down."""
    lines = opaque_rules(tape)
    if lines:
        raise NotSerializableError(
            f"this tape cannot be {what}: {len(lines)} rule(s) could not be lifted and run as "
            "opaque Python closures:\n" + "\n".join(lines) + "\nFix: write each pullback with "
            "numpy operations on its arguments (no float(), np.asarray or value-dependent "
            "branches on the cotangent) so that it traces into equations.")


# -- static values ---------------------------------------------------------------------------

def enc(v, where: str):
    """A static value (param, static argument, dict key, scalar literal) as JSON."""
    if v is None or isinstance(v, (bool, str)) or (type(v) is int):
        return v
    if type(v) is float:
        return v if np.isfinite(v) else {"float": repr(v)}
    if type(v) is complex:
        return {"complex": [enc(v.real, where), enc(v.imag, where)]}
    if type(v) is tuple:
        return {"tuple": [enc(x, f"{where}[{i}]") for i, x in enumerate(v)]}
    if isinstance(v, np.dtype):
        return {"dtype": _dtype_name(v, where)}
    if isinstance(v, type) and issubclass(v, np.generic):
        return {"scalar_type": _dtype_name(np.dtype(v), where)}
    if isinstance(v, np.generic) and v.dtype.name in _EXACT_ITEM:
        return {"scalar": [v.dtype.name, enc(v.item(), where)]}
    raise NotSerializableError(f"{where}: a {type(v).__name__} ({v!r:.60}) is not data that can be "
                               "saved (None, bool, int, float, complex, str, tuples, dtypes and "
                               "numpy scalars are)")


def dec(obj, where: str):
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        return obj
    tag, payload = _tagged(obj, where)
    if tag == "float":
        if payload not in ("inf", "-inf", "nan"):
            raise TapeFormatError(f"{where}: float {payload!r} is not 'inf', '-inf' or 'nan'")
        return float(payload)
    if tag == "complex":
        re_, im = _list(payload, where, 2)
        return complex(_number(dec(re_, where), where), _number(dec(im, where), where))
    if tag == "tuple":
        return tuple(dec(x, f"{where}[{i}]") for i, x in enumerate(_list(payload, where)))
    if tag == "dtype":
        return dtype(payload, where)
    if tag == "scalar_type":
        return dtype(payload, where).type
    if tag == "scalar":
        name, value = _list(payload, where, 2)
        dt = dtype(name, where)
        if dt.name not in _EXACT_ITEM:
            raise TapeFormatError(f"{where}: scalars of dtype {dt.name} are stored as literals")
        try:
            return dt.type(dec(value, where))
        except (TypeError, ValueError, OverflowError) as exc:
            raise TapeFormatError(f"{where}: {value!r} is not a {dt.name}: {exc}") from None
    raise TapeFormatError(f"{where}: unknown value tag {tag!r} (expected float, complex, tuple, "
                          "dtype, scalar_type or scalar)")


def _number(x, where):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TapeFormatError(f"{where}: expected a number, got {x!r:.40}")
    return x


def _dtype_name(dt: np.dtype, where: str) -> str:
    if dt.name not in DTYPES:
        raise NotSerializableError(f"{where}: dtype {dt} cannot be saved (choose one of "
                                   f"{', '.join(DTYPES)})")
    return dt.name


def dtype(name, where: str) -> np.dtype:
    if not isinstance(name, str) or name not in DTYPES:
        raise TapeFormatError(f"{where}: unknown dtype {name!r:.40}; expected one of {', '.join(DTYPES)}")
    return DTYPES[name]


def _tagged(obj, where):
    if not isinstance(obj, dict) or len(obj) != 1:
        raise TapeFormatError(f"{where}: expected a value, got {_short(obj)}")
    return next(iter(obj.items()))


def _list(obj, where, n: int | None = None) -> list:
    if not isinstance(obj, list) or (n is not None and len(obj) != n):
        raise TapeFormatError(f"{where}: expected a list" + (f" of {n} items" if n else "")
                              + f", got {_short(obj)}")
    return obj


def _int(obj, where, lo: int | None = None, hi: int | None = None) -> int:
    if type(obj) is not int or (lo is not None and obj < lo) or (hi is not None and obj > hi):
        bounds = f" in [{lo}, {hi}]" if hi is not None else (f" >= {lo}" if lo is not None else "")
        raise TapeFormatError(f"{where}: expected an integer{bounds}, got {_short(obj)}")
    return obj


def _short(obj) -> str:
    text = json.dumps(obj, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# -- params: what each declared name may hold ------------------------------------------------------

def _ints(v, nonneg=False):
    return type(v) is tuple and all(type(x) is int and (x >= 0 or not nonneg) for x in v)


def _index_item(x) -> bool:
    if x is None or x == "..." or type(x) is int:
        return True
    if type(x) is tuple and len(x) == 4 and x[0] == "slice":
        return all(y is None or type(y) is int for y in x[1:]) and x[3] != 0
    return type(x) is tuple and len(x) == 2 and x[0] == "array" and type(x[1]) is int and x[1] >= 0


PARAM_TYPES = {   # param name -> (check, description); other names get the generic decoding only
    "shape": (lambda v: _ints(v, nonneg=True), "a tuple of non-negative ints"),
    "axes": (_ints, "a tuple of ints"),
    "axis": (lambda v: v is None or type(v) is int or _ints(v), "None, an int or a tuple of ints"),
    "shift": (_ints, "a tuple of ints"),
    "keepdims": (lambda v: type(v) is bool, "a bool"),
    "dtype": (lambda v: isinstance(v, np.dtype), "a dtype"),
    "subscripts": (lambda v: type(v) is str and re.fullmatch(r"[A-Za-z,]*->[A-Za-z]*", v) is not None,
                   "an explicit einsum string like 'ij,jk->ik'"),
    "fill_value": (lambda v: isinstance(v, (bool, int, float, complex, np.generic)), "a number"),
    "index": (lambda v: type(v) is tuple and all(map(_index_item, v)) and list(v).count("...") <= 1,
              "an index spec: a tuple of ints, None, '...', ('slice', start, stop, step) and "
              "('array', k)"),
}


def _check_params(prim, params: dict, n_in: int, where: str, max_elements: int):
    declared = prim.params
    unknown = sorted(set(params) - set(declared)) if declared or isinstance(prim.impl, np.ufunc) else []
    if unknown:
        raise TapeFormatError(f"{where}.params: {prim.name} has no params {unknown} (its params are "
                              f"{list(declared) or 'none'})")
    for k, v in params.items():
        check, what = PARAM_TYPES.get(k, (None, None))
        if check is not None and not check(v):
            raise TapeFormatError(f"{where}.params.{k}: {prim.name} expects {what}, got {v!r:.60}")
        if k == "shape" and math.prod(v) > max_elements:
            raise TapeFormatError(f"{where}.params.shape: {v} has more than max_elements="
                                  f"{max_elements} elements")
    _check_arity(prim, n_in, params, where)


@functools.lru_cache(maxsize=None)
def _signature(impl):
    try:
        return inspect.signature(impl)
    except (TypeError, ValueError):
        return None


def _check_arity(prim, n_in: int, params: dict, where: str):
    if isinstance(prim.impl, np.ufunc):
        if n_in != prim.impl.nin:
            raise TapeFormatError(f"{where}: {prim.name} takes {prim.impl.nin} operand(s), the file "
                                  f"gives {n_in}")
        return
    sig = _signature(prim.impl)
    if sig is None:
        return
    try:
        sig.bind(*range(n_in), **params)
    except TypeError as exc:
        raise TapeFormatError(f"{where}: {prim.name} cannot take {n_in} operand(s) and params "
                              f"{sorted(params)}: {exc}") from None


def _primitive(name, where: str):
    if not isinstance(name, str):
        raise TapeFormatError(f"{where}.prim: expected a primitive name, got {_short(name)}")
    prim = REGISTRY.get(name)
    how = ("Primitives are looked up by name in ad.primitives.REGISTRY; nothing named in a file is "
           "imported. If the tape uses your own primitive, import the module that defines it "
           "(@ad.primitive / ad.Primitive(...)) before loading.")
    if prim is None:
        if re.search(r"[./:\\]|^_|\s", name):
            raise TapeFormatError(f"{where}.prim: {name!r} looks like a Python path, not a registered "
                                  f"primitive. {how}")
        close = difflib.get_close_matches(name, list(REGISTRY), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise TapeFormatError(f"{where}.prim: unknown primitive {name!r}{hint}. {how}")
    if prim.kind == "opaque":
        raise TapeFormatError(f"{where}.prim: {name!r} runs a Python closure and cannot be loaded")
    return prim


# -- literals ---------------------------------------------------------------------------------

def _encode_array(a: np.ndarray, where: str) -> dict:
    out = {"dtype": _dtype_name(a.dtype, where), "shape": list(a.shape)}
    if a.size <= INLINE_MAX and a.dtype.kind in "biuf" and a.dtype.name in _EXACT_ITEM \
            and (a.dtype.kind != "f" or np.isfinite(a).all()):
        out["data"] = a.ravel().tolist()
    else:
        little = a.astype(a.dtype.newbyteorder("<"), copy=False)
        out["base64"] = base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii")
    return out


def _decode_array(obj, where: str, budget: list, max_elements: int) -> np.ndarray:
    _keys(obj, where, {"dtype", "shape"}, {"data", "base64", "scalar", "aval"})
    dt = dtype(obj["dtype"], f"{where}.dtype")
    shape = _shape(obj["shape"], f"{where}.shape", max_elements)
    n = math.prod(shape)
    if ("data" in obj) == ("base64" in obj):
        raise TapeFormatError(f"{where}: a literal has exactly one of 'data' or 'base64'")
    if "data" in obj:
        data = _list(obj["data"], f"{where}.data")
        if len(data) != n or not all(isinstance(x, (bool, int, float)) for x in data):
            raise TapeFormatError(f"{where}.data: expected {n} numbers for shape {shape}")
        try:
            a = np.array(data, dtype=dt).reshape(shape)
        except (OverflowError, ValueError) as exc:
            raise TapeFormatError(f"{where}.data: not {dt.name} values: {exc}") from None
    else:
        text = obj["base64"]
        size = n * dt.itemsize
        if not isinstance(text, str) or len(text) > 4 * ((size + 2) // 3):
            got = f"{len(text)} characters" if isinstance(text, str) else _short(text)
            raise TapeFormatError(f"{where}.base64: expected {size} bytes of {dt.name} data for shape "
                                  f"{shape}, got {got}")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise TapeFormatError(f"{where}.base64: not base64: {exc}") from None
        if len(raw) != size:
            raise TapeFormatError(f"{where}.base64: holds {len(raw)} bytes; shape {shape} of {dt.name} "
                                  f"needs {size} (truncated or wrong shape)")
        a = np.frombuffer(raw, dt.newbyteorder("<")).astype(dt).reshape(shape)
    if "scalar" in obj and (obj["scalar"] is not True or shape != ()):
        raise TapeFormatError(f"{where}.scalar: true, for a literal of shape []")
    budget[0] -= a.nbytes
    if budget[0] < 0:
        raise TapeFormatError(f"{where}: literals exceed max_literal_bytes")
    a.flags.writeable = False
    return a


def _encode_lit(x: Lit, where: str, table: list, index: dict):
    v = x.value
    if isinstance(v, (np.ndarray, np.generic)):
        k = index.get(id(x))
        if k is None:
            entry = _encode_array(np.asarray(v), where)
            if isinstance(v, np.generic):
                entry["scalar"] = True
            if x.aval != Aval.of(v):
                entry["aval"] = _enc_aval(x.aval, where)
            k = index[id(x)] = len(table)
            table.append(entry)
        return {"lit": k}
    out = {"value": enc(v, where)}
    if x.aval != Aval.of(v):
        out["aval"] = _enc_aval(x.aval, where)
    return out


# -- avals, variables, structures ------------------------------------------------------------------

def _enc_aval(a: Aval, where: str) -> list:
    return [_dtype_name(a.dtype, where), list(a.shape)]


def _shape(obj, where, max_elements: int) -> tuple:
    shape = tuple(_int(s, f"{where}[{i}]", 0) for i, s in enumerate(_list(obj, where)))
    if math.prod(shape) > max_elements:
        raise TapeFormatError(f"{where}: shape {shape} has more than max_elements={max_elements} elements")
    return shape


def _dec_aval(obj, where, max_elements) -> Aval:
    name, shape = _list(obj, where, 2)
    return Aval(_shape(shape, f"{where}[1]", max_elements), dtype(name, f"{where}[0]"))


def enc_structure(s, where: str):
    """A pytree structure as JSON; namedtuples by their name and field names only."""
    if s == pytree.LEAF:
        return s
    kind = s[0]
    if kind == "namedtuple":
        return {"namedtuple": [s[1].__name__, list(s[1]._fields), [enc_structure(c, where) for c in s[2]]]}
    if kind == "dict":
        return {"dict": [[enc(k, f"{where} key"), enc_structure(c, where)] for k, c in zip(s[1], s[2])]}
    return {kind: [enc_structure(c, where) for c in s[1]]}


def dec_structure(obj, where: str, namedtuples: dict):
    if obj == pytree.LEAF:
        return obj
    tag, payload = _tagged(obj, where)
    if tag in ("tuple", "list"):
        return (tag, tuple(dec_structure(c, f"{where}[{i}]", namedtuples)
                           for i, c in enumerate(_list(payload, where))))
    if tag == "dict":
        pairs = [_list(p, f"{where}[{i}]", 2) for i, p in enumerate(_list(payload, where))]
        keys = tuple(dec(k, f"{where}[{i}] key") for i, (k, _) in enumerate(pairs))
        return ("dict", keys, tuple(dec_structure(c, f"{where}[{i}]", namedtuples)
                                    for i, (_, c) in enumerate(pairs)))
    if tag == "namedtuple":
        name, fields, children = _list(payload, where, 3)
        cls = _namedtuple(name, _list(fields, where), where, namedtuples)
        kids = tuple(dec_structure(c, f"{where}[{i}]", namedtuples)
                     for i, c in enumerate(_list(children, where)))
        if len(kids) != len(cls._fields):
            raise TapeFormatError(f"{where}: namedtuple {name} has {len(cls._fields)} fields and "
                                  f"{len(kids)} children")
        return ("namedtuple", cls, kids)
    raise TapeFormatError(f"{where}: unknown structure kind {tag!r} (tuple, list, dict, namedtuple)")


def _namedtuple(name, fields, where, namedtuples: dict):
    """The user's class if given in ``namedtuples``, else a namedtuple made here from the stored
    (validated identifier) names: classes are never imported from a file."""
    if not isinstance(name, str) or not all(isinstance(f, str) for f in fields):
        raise TapeFormatError(f"{where}: a namedtuple needs a name and field names")
    given = namedtuples.get(name)
    if given is not None:
        if tuple(getattr(given, "_fields", ())) != tuple(fields):
            raise TapeFormatError(f"{where}: namedtuples[{name!r}] has fields "
                                  f"{getattr(given, '_fields', None)}, the file {fields}")
        return given
    try:
        return collections.namedtuple(name, fields)
    except (TypeError, ValueError) as exc:
        raise TapeFormatError(f"{where}: bad namedtuple {name!r}: {exc}") from None


def _leaves(s) -> int:
    return len(pytree.leaf_paths(s))


# -- tape <-> JSON object ----------------------------------------------------------------------------

def to_json(tape: Tape) -> dict:
    """The JSON object of a tape (``save`` writes it)."""
    check_serializable(tape)
    table: list = []
    index: dict = {}
    defined = set(tape.inputs) | {v for e in tape.eqns for v in e.outputs}
    free: dict = {}

    def operand(x, where):
        return x.n if type(x) is Var else _encode_lit(x, where, table, index)

    def origin(o: Origin):
        if o.of is not None and o.of not in defined:
            free[o.of.n] = _enc_aval(o.of.aval, "origin")
        return [o.kind, None if o.of is None else o.of.n, o.rule]

    eqns = []
    for i, e in enumerate(tape.eqns):
        where = f"equation {i} ({e.prim.name})"
        item = {"prim": e.prim.name, "in": [operand(x, where) for x in e.inputs],
                "out": [[v.n, _enc_aval(v.aval, where)] for v in e.outputs]}
        if e.params:
            item["params"] = {k: enc(v, f"{where} param {k}") for k, v in e.params}
        if e.source is not None:
            item["source"] = e.source
        if e.origin != Origin("primal"):
            item["origin"] = origin(e.origin)
        eqns.append(item)
    out = {"format": FORMAT, "version": VERSION, "type": type(tape).__name__,
           "inputs": [[v.n, _enc_aval(v.aval, "inputs")] for v in tape.inputs],
           "input_names": list(tape.input_names), "literals": table, "eqns": eqns,
           "outputs": [operand(x, "outputs") for x in tape.outputs],
           "free_vars": [[n, a] for n, a in sorted(free.items())],
           "in_tree": None if tape.in_tree is None else _enc_in_tree(tape.in_tree),
           "out_tree": None if tape.out_tree is None else enc_structure(tape.out_tree, "out_tree")}
    if type(tape) is GradTape:
        tree = None if tape.grad_tree is None else enc_structure(tape.grad_tree, "grad_tree")
        out["grad"] = {"n_forward": tape.n_forward, "n_values": tape.n_values, "n_seeds": tape.n_seeds,
                       "grad_tree": tree, "grad_slots": list(tape.grad_slots)}
    elif type(tape) is not Tape:
        raise NotSerializableError(f"a {type(tape).__name__} cannot be saved (Tape and GradTape can)")
    return out


def _enc_in_tree(t: pytree.InTree) -> dict:
    paths = [p for p, traced in zip(t.paths, t.traced) if not traced]
    return {"structure": enc_structure(t.structure, "in_tree"), "traced": list(t.traced),
            "static": [enc(v, f"static argument {p}") for v, p in zip(t.static, paths)],
            "paths": list(t.paths)}


_TOP = {"format", "version", "type", "inputs", "input_names", "literals", "eqns", "outputs",
        "free_vars", "in_tree", "out_tree"}


def _keys(obj, where, required: set, optional: set = frozenset()):
    if not isinstance(obj, dict):
        raise TapeFormatError(f"{where}: expected an object, got {_short(obj)}")
    missing = sorted(required - set(obj))
    extra = sorted(set(obj) - required - set(optional))
    if missing or extra:
        raise TapeFormatError(f"{where}: " + "; ".join(
            ([f"missing {missing}"] if missing else []) + ([f"unexpected keys {extra}"] if extra else [])))


class _Decoder:
    """The state of one load: variables by number, literals, what is defined so far."""

    def __init__(self, obj: dict, max_literal_bytes: int, max_elements: int):
        self.max_elements = max_elements
        self.variables: dict[int, Var] = {}
        self.defined: set = set()
        self.free = {}
        for i, item in enumerate(_list(obj["free_vars"], "free_vars")):
            n, aval = _list(item, f"free_vars[{i}]", 2)
            self.free[_int(n, f"free_vars[{i}][0]", 0)] = Var(n, self.aval(aval, f"free_vars[{i}][1]"))
        budget = [max_literal_bytes]
        self.lits = []
        for i, entry in enumerate(_list(obj["literals"], "literals")):
            a = _decode_array(entry, f"literals[{i}]", budget, max_elements)
            value = a[()] if entry.get("scalar") is True else a
            aval = self.aval(entry["aval"], f"literals[{i}].aval") if "aval" in entry else Aval.of(value)
            self.lits.append(Lit(value, aval))

    def aval(self, obj, where) -> Aval:
        return _dec_aval(obj, where, self.max_elements)

    def var(self, item, where) -> Var:
        """A variable definition ``[n, aval]``."""
        n, aval = _list(item, where, 2)
        n = _int(n, f"{where}[0]", 0)
        if n in self.variables or n in self.free:
            raise TapeFormatError(f"{where}: %{n} is defined twice")
        v = self.variables[n] = Var(n, self.aval(aval, f"{where}[1]"))
        return v

    def operand(self, x, where):
        if type(x) is int:
            v = self.variables.get(x)
            if v is None or v not in self.defined:
                raise TapeFormatError(f"{where}: reads %{x}, which is not defined before it")
            return v
        if isinstance(x, dict) and set(x) == {"lit"}:
            return self.lits[_int(x["lit"], f"{where}.lit", 0, len(self.lits) - 1)]
        _keys(x, where, {"value"}, {"aval"})
        value = dec(x["value"], f"{where}.value")
        if not isinstance(value, (bool, int, float, complex, np.generic)):
            raise TapeFormatError(f"{where}: a literal operand must be a number, got {value!r:.40}")
        return Lit(value, self.aval(x["aval"], f"{where}.aval") if "aval" in x else Aval.of(value))

    def origin(self, o, where) -> Origin:
        kind, of, rule = _list(o, where, 3)
        if kind not in _KINDS:
            raise TapeFormatError(f"{where}[0]: origin kind {kind!r:.40} is not one of {_KINDS}")
        if of is not None:
            n = _int(of, f"{where}[1]", 0)
            of = self.variables.get(n) or self.free.get(n)
            if of is None:
                raise TapeFormatError(f"{where}[1]: %{n} is neither defined nor listed in free_vars")
        if rule is not None and not isinstance(rule, str):
            raise TapeFormatError(f"{where}[2]: expected a rule name, got {_short(rule)}")
        return Origin(kind, of, rule)

    def eqn(self, e: dict, outs: tuple, where: str) -> Eqn:
        prim = _primitive(e["prim"], where)
        ins = tuple(self.operand(x, f"{where}.in[{j}]") for j, x in enumerate(_list(e["in"], f"{where}.in")))
        raw = e.get("params", {})
        if not isinstance(raw, dict):
            raise TapeFormatError(f"{where}.params: expected an object, got {_short(raw)}")
        params = {k: dec(v, f"{where}.params.{k}") for k, v in raw.items()}
        _check_params(prim, params, len(ins), where, self.max_elements)
        if not prim.multiple_results and len(outs) != 1:
            raise TapeFormatError(f"{where}.out: {prim.name} has one output, the file gives {len(outs)}")
        source = e.get("source")
        if source is not None and not isinstance(source, str):
            raise TapeFormatError(f"{where}.source: expected a string, got {_short(source)}")
        origin = self.origin(e["origin"], f"{where}.origin") if "origin" in e else Origin("primal")
        self.defined.update(outs)
        return Eqn(prim, ins, freeze_params(params), outs, source, origin)


def from_json(obj, *, namedtuples: dict | None = None, check_shapes: bool = True,
              max_eqns: int = LIMITS["max_eqns"], max_literal_bytes: int = LIMITS["max_literal_bytes"],
              max_elements: int = LIMITS["max_elements"]) -> Tape:
    """A tape from its JSON object, validated (see ``load``)."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise TapeFormatError(f"not a saved tape: the top-level object has no \"format\": \"{FORMAT}\"")
    if obj.get("version") != VERSION:
        raise TapeFormatError(f"schema version {obj.get('version')!r}: this version of ad reads version "
                              f"{VERSION} only; save the tape again with this version, or load it "
                              "with the version of ad that wrote it")
    kind = obj.get("type")
    if kind not in ("Tape", "GradTape"):
        raise TapeFormatError(f"type: expected 'Tape' or 'GradTape', got {_short(kind)}")
    _keys(obj, "file", _TOP | ({"grad"} if kind == "GradTape" else set()))
    eqn_objs = _list(obj["eqns"], "eqns")
    if len(eqn_objs) > max_eqns:
        raise TapeFormatError(f"eqns: {len(eqn_objs)} equations exceed max_eqns={max_eqns}")
    nt = namedtuples or {}
    d = _Decoder(obj, max_literal_bytes, max_elements)
    # every variable first (a primal origin names its rule's output, defined later)
    inputs = tuple(d.var(x, f"inputs[{i}]") for i, x in enumerate(_list(obj["inputs"], "inputs")))
    d.defined.update(inputs)
    outs_of = []
    for i, e in enumerate(eqn_objs):
        _keys(e, f"eqns[{i}]", {"prim", "in", "out"}, {"params", "source", "origin"})
        outs_of.append(tuple(d.var(x, f"eqns[{i}].out[{j}]")
                             for j, x in enumerate(_list(e["out"], f"eqns[{i}].out"))))
    eqns = tuple(d.eqn(e, outs, f"eqns[{i}]") for i, (e, outs) in enumerate(zip(eqn_objs, outs_of)))
    outputs = tuple(d.operand(x, f"outputs[{i}]") for i, x in enumerate(_list(obj["outputs"], "outputs")))
    names = _list(obj["input_names"], "input_names", len(inputs))
    if not all(isinstance(s, str) for s in names):
        raise TapeFormatError("input_names: expected strings")
    fields = _dec_grad(obj["grad"], len(inputs), len(outputs), len(eqns), nt) if kind == "GradTape" else {}
    fields["in_tree"] = None if obj["in_tree"] is None else _dec_in_tree(
        obj["in_tree"], len(inputs) - fields.get("n_seeds", 0), nt)
    fields["out_tree"] = None if obj["out_tree"] is None else dec_structure(obj["out_tree"], "out_tree", nt)
    n_values = fields.get("n_values", len(outputs))
    if fields["out_tree"] is not None and _leaves(fields["out_tree"]) != n_values:
        raise TapeFormatError(f"out_tree: {_leaves(fields['out_tree'])} leaves for {n_values} outputs")
    cls = GradTape if kind == "GradTape" else Tape
    tape = cls(inputs, eqns, outputs, input_names=tuple(names), **fields)
    try:
        validate(tape)
    except InvalidTapeError as exc:
        raise TapeFormatError(f"invalid tape: {exc}") from None
    return check_avals(tape) if check_shapes else tape


def _dec_in_tree(obj, n_inputs: int, nt) -> pytree.InTree:
    _keys(obj, "in_tree", {"structure", "traced", "static", "paths"})
    structure = dec_structure(obj["structure"], "in_tree.structure", nt)
    n = _leaves(structure)
    traced = _list(obj["traced"], "in_tree.traced", n)
    if not all(type(t) is bool for t in traced) or sum(traced) != n_inputs:
        raise TapeFormatError(f"in_tree.traced: expected {n} bools, {n_inputs} of them true")
    static = tuple(dec(v, f"in_tree.static[{i}]") for i, v in
                   enumerate(_list(obj["static"], "in_tree.static", n - n_inputs)))
    paths = _list(obj["paths"], "in_tree.paths", n)
    if structure[0] != "tuple" or not all(isinstance(p, str) for p in paths):
        raise TapeFormatError("in_tree: the structure is a tuple of arguments and paths are strings")
    return pytree.InTree(structure, tuple(traced), static, tuple(paths))


def _dec_grad(obj, n_inputs, n_outputs, n_eqns, nt) -> dict:
    _keys(obj, "grad", {"n_forward", "n_values", "n_seeds", "grad_tree", "grad_slots"})
    tree = obj["grad_tree"]
    out = {"n_forward": _int(obj["n_forward"], "grad.n_forward", 0, n_eqns),
           "n_values": _int(obj["n_values"], "grad.n_values", 0, n_outputs),
           "n_seeds": _int(obj["n_seeds"], "grad.n_seeds", 0, n_inputs),
           "grad_tree": None if tree is None else dec_structure(tree, "grad.grad_tree", nt)}
    n_grads = n_outputs - out["n_values"]
    slots = tuple(_int(s, f"grad.grad_slots[{i}]", -1, n_grads - 1)
                  for i, s in enumerate(_list(obj["grad_slots"], "grad.grad_slots")))
    if out["grad_tree"] is not None and _leaves(out["grad_tree"]) != len(slots):
        raise TapeFormatError("grad.grad_slots: one slot per leaf of grad_tree")
    out["grad_slots"] = slots
    return out


# -- the shape check ----------------------------------------------------------------------------------

def _stand_in(aval: Aval, eye: bool):
    """Zeros (valid indices, cheap), or on a retry identity matrices / ones (for operations that
    refuse singular or zero inputs, like a Cholesky factorisation)."""
    if not eye or not aval.is_float:
        return np.zeros(aval.shape, aval.dtype)
    if aval.ndim >= 2 and aval.shape[-1] == aval.shape[-2]:
        return np.broadcast_to(np.eye(aval.shape[-1], dtype=aval.dtype), aval.shape).copy()
    return np.ones(aval.shape, aval.dtype)


def check_avals(tape: Tape) -> Tape:
    """Evaluate each equation once on stand-ins of its declared operands and compare what it
    computes with the avals it declares; raises TapeFormatError naming the equation."""
    for i, e in enumerate(tape.eqns):
        problem = _eqn_problem(e)
        if problem:
            raise TapeFormatError(f"eqns[{i}] ({e}): {problem}")
    return tape


def _eqn_problem(e: Eqn) -> str | None:
    if isinstance(e.prim.impl, np.ufunc) and e.prim.impl.signature is None:
        try:    # elementwise: the result's shape is known before computing it
            shape = np.broadcast_shapes(*(x.aval.shape for x in e.inputs))
        except ValueError:
            return f"operand shapes {[x.aval.shape for x in e.inputs]} do not broadcast"
        for v in e.outputs:
            if v.aval.shape != shape:
                return f"declares {v!r}:{v.aval} but its operands broadcast to shape {shape}"
    for eye in (False, True):
        args = [x.value if type(x) is Lit else _stand_in(x.aval, eye) for x in e.inputs]
        try:
            with np.errstate(all="ignore"):
                out = e.prim.impl(*args, **e.kwargs)
            break
        except (ValueError, TypeError, IndexError, ArithmeticError, MemoryError) as exc:
            error = exc     # (np.linalg.LinAlgError is a ValueError)
    else:
        return f"fails on operands of the declared shapes: {type(error).__name__}: {error}"
    outs = tuple(out) if e.prim.multiple_results else (out,)
    if len(outs) != len(e.outputs):
        return f"declares {len(e.outputs)} outputs, computes {len(outs)}"
    for v, o in zip(e.outputs, outs):
        got = Aval.of(o)
        if got.dtype != v.aval.dtype or got.ndim != v.aval.ndim or (
                got.shape != v.aval.shape and e.prim.name not in _VALUE_DEPENDENT_SHAPES):
            return f"declares {v!r}:{v.aval} but computes {got}"
    return None


# -- files ------------------------------------------------------------------------------------

def dumps(tape: Tape) -> str:
    """JSON text: the header fields, then one equation per line."""
    obj = to_json(tape)
    eqns = obj.pop("eqns")
    body = [f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in obj.items()]
    body.append('"eqns": [' + ",".join("\n  " + json.dumps(e, allow_nan=False) for e in eqns)
                + ("\n]" if eqns else "]"))
    return "{\n" + ",\n".join(body) + "\n}\n"


def save(tape: Tape, path) -> None:
    """Write ``tape`` (a Tape or GradTape) to ``path`` as JSON (schema: docs/serialization.md).

    Raises NotSerializableError for tapes whose rules fell back to closures.

    >>> ad.save(ad.grad_tape(loss, W, x), "loss.tape.json")
    """
    text = dumps(tape)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


_NOT_BRACKETS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+')   # strings, other text


def _depth_scan(text: str, max_depth: int) -> int:
    """Refuse deep nesting before parsing (the parser recurses): strings are blanked out, then
    the running count of brackets is taken over the rest. Returns the depth at the end (> 0
    for a truncated file)."""
    chars = np.frombuffer(_NOT_BRACKETS.sub("", text).encode(), np.uint8)
    if not chars.size:
        return 0
    opens = (chars == ord("[")) | (chars == ord("{"))
    depth = np.cumsum(opens.astype(np.int64) - ((chars == ord("]")) | (chars == ord("}"))))
    if depth.max() > max_depth:
        raise TapeFormatError(f"nesting deeper than max_depth={max_depth} (depth {depth.max()})")
    return int(depth[-1])


def _pairs(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise TapeFormatError(f"duplicate keys {dup} in one object")
    return dict(pairs)


def _constant(name):
    raise TapeFormatError(f"{name} is not standard JSON (non-finite floats are written as "
                          '{"float": "inf"})')


def loads(text: str, *, max_bytes: int = LIMITS["max_bytes"], max_depth: int = LIMITS["max_depth"],
          **kwargs) -> Tape:
    """A tape from JSON text; keywords as for ``load``."""
    if len(text) > max_bytes:
        raise TapeFormatError(f"{len(text)} characters exceed max_bytes={max_bytes}")
    open_at_end = _depth_scan(text, max_depth)
    try:
        obj = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        end = " (the file ends inside an unclosed object or list: truncated?)" \
            if open_at_end > 0 or exc.pos >= len(text.rstrip()) else ""
        raise TapeFormatError(f"malformed JSON at line {exc.lineno} column {exc.colno} "
                              f"(character {exc.pos}): {exc.msg}{end}") from None
    except RecursionError:
        raise TapeFormatError(f"nesting too deep to parse (max_depth={max_depth})") from None
    except ValueError as exc:       # e.g. an integer with too many digits
        raise TapeFormatError(f"malformed JSON: {exc}") from None
    return from_json(obj, **kwargs)


def load(path, *, namedtuples: dict | None = None, check_shapes: bool = True,
         max_bytes: int = LIMITS["max_bytes"], max_eqns: int = LIMITS["max_eqns"],
         max_depth: int = LIMITS["max_depth"], max_literal_bytes: int = LIMITS["max_literal_bytes"],
         max_elements: int = LIMITS["max_elements"]) -> Tape:
    """Read a tape saved by ``save``, validating everything; nothing in the file is executed.

    namedtuples: ``{name: class}`` for namedtuple arguments (else a namedtuple with the stored
        field names is made, and calling the tape needs arguments of that class).
    check_shapes: evaluate every equation once on stand-in operands of the declared shapes and
        compare the result with the declared avals (costs about one run of the tape).
    max_*: size limits (bytes of the file, equations, nesting depth, bytes of literal data,
        elements of any one variable); exceeding one raises TapeFormatError naming it.
    Raises TapeFormatError (a ValueError) naming what is wrong and where.

    >>> gt = ad.load("loss.tape.json"); value, grads = gt(W, x)
    """
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TapeFormatError(f"{path}: {size} bytes exceed max_bytes={max_bytes} (pass a larger "
                              "max_bytes to load it)")
    with open(path, "rb") as f:
        raw = f.read(max_bytes + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TapeFormatError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return loads(text, max_bytes=max_bytes, max_depth=max_depth, namedtuples=namedtuples,
                     check_shapes=check_shapes, max_eqns=max_eqns,
                     max_literal_bytes=max_literal_bytes, max_elements=max_elements)
    except TapeFormatError as exc:
        raise TapeFormatError(f"{path}: {exc}") from None


