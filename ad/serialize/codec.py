"""The value codec: static values, dtypes, avals, arrays and literals as JSON, and the checks on
decoded JSON that every layer above uses. The bottom of ``ad.serialize``: it knows no tape.

Naming legend: ``obj`` decoded JSON, ``where`` the path of a value inside the file
(``eqns[3].params.axis``), ``enc``/``dec`` encode/decode.
"""
from __future__ import annotations

import base64
import binascii
import json
import math

import numpy as np

from ..tape import Aval, Lit

INLINE_MAX = 16          # arrays with at most this many elements are written as JSON lists

DTYPES = {np.dtype(t).name: np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128, np.clongdouble)}
_EXACT_ITEM = frozenset("bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 "
                        "float64 complex64 complex128".split())   # .item() round-trips exactly


class TapeFormatError(ValueError):
    """A file that is not a valid saved tape; the message names where (and the fix)."""


class NotSerializableError(TypeError):
    """A tape holding something that is not data (an opaque rule's closure, an object param)."""


# -- checks on decoded JSON ------------------------------------------------------------------------

def short(obj) -> str:
    """A bounded excerpt of a JSON value for error messages (files may hold huge values)."""
    text = json.dumps(obj, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def expect_list(obj, where: str, n: int | None = None) -> list:
    if not isinstance(obj, list) or (n is not None and len(obj) != n):
        raise TapeFormatError(f"{where}: expected a list" + (f" of {n} items" if n else "")
                              + f", got {short(obj)}")
    return obj


def expect_int(obj, where: str, lo: int | None = None, hi: int | None = None) -> int:
    if type(obj) is not int or (lo is not None and obj < lo) or (hi is not None and obj > hi):
        bounds = f" in [{lo}, {hi}]" if hi is not None else (f" >= {lo}" if lo is not None else "")
        raise TapeFormatError(f"{where}: expected an integer{bounds}, got {short(obj)}")
    return obj


def expect_keys(obj, where: str, required: set, optional: set = frozenset()) -> None:
    """An object with exactly the required keys and perhaps some optional ones."""
    if not isinstance(obj, dict):
        raise TapeFormatError(f"{where}: expected an object, got {short(obj)}")
    missing = sorted(required - set(obj))
    extra = sorted(set(obj) - required - set(optional))
    if missing or extra:
        raise TapeFormatError(f"{where}: " + "; ".join(
            ([f"missing {missing}"] if missing else []) + ([f"unexpected keys {extra}"] if extra else [])))


def tagged(obj, where: str) -> tuple:
    """``(tag, payload)`` of a one-key object such as ``{"tuple": [...]}``."""
    if not isinstance(obj, dict) or len(obj) != 1:
        raise TapeFormatError(f"{where}: expected a value, got {short(obj)}")
    return next(iter(obj.items()))


# -- static values (params, static arguments, dict keys, scalar literals) -------------------------

def enc(v, where: str):
    """A static value as JSON: JSON's own types stand for themselves, the rest are tagged."""
    if v is None or isinstance(v, (bool, str)) or (type(v) is int):
        return v
    if type(v) is float:
        return v if np.isfinite(v) else {"float": repr(v)}
    if type(v) is complex:
        return {"complex": [enc(v.real, where), enc(v.imag, where)]}
    if type(v) is tuple:
        return {"tuple": [enc(x, f"{where}[{i}]") for i, x in enumerate(v)]}
    if isinstance(v, np.dtype):
        return {"dtype": enc_dtype(v, where)}
    if isinstance(v, type) and issubclass(v, np.generic):
        return {"scalar_type": enc_dtype(np.dtype(v), where)}
    if isinstance(v, np.generic) and v.dtype.name in _EXACT_ITEM:
        return {"scalar": [v.dtype.name, enc(v.item(), where)]}
    raise NotSerializableError(f"{where}: a {type(v).__name__} ({v!r:.60}) is not data that can be "
                               "saved (None, bool, int, float, complex, str, tuples, dtypes and "
                               "numpy scalars are)")


def dec(obj, where: str):
    """The static value ``enc`` wrote; only the tags listed in the schema are known."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    tag, payload = tagged(obj, where)
    if tag == "float":
        if payload not in ("inf", "-inf", "nan"):
            raise TapeFormatError(f"{where}: float {payload!r} is not 'inf', '-inf' or 'nan'")
        return float(payload)
    if tag == "complex":
        re_, im = expect_list(payload, where, 2)
        return _complex(_number(dec(re_, where), where), _number(dec(im, where), where), where)
    if tag == "tuple":
        return tuple(dec(x, f"{where}[{i}]") for i, x in enumerate(expect_list(payload, where)))
    if tag == "dtype":
        return dec_dtype(payload, where)
    if tag == "scalar_type":
        return dec_dtype(payload, where).type
    if tag == "scalar":
        name, value = expect_list(payload, where, 2)
        dt = dec_dtype(name, where)
        if dt.name not in _EXACT_ITEM:
            raise TapeFormatError(f"{where}: scalars of dtype {dt.name} are stored as literals")
        return _scalar(dt, dec(value, where), where)
    raise TapeFormatError(f"{where}: unknown value tag {tag!r} (expected float, complex, tuple, "
                          "dtype, scalar_type or scalar)")


def _number(x, where: str):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TapeFormatError(f"{where}: expected a number, got {x!r:.40}")
    return x


def _complex(re_, im, where: str) -> complex:
    try:
        return complex(re_, im)
    except OverflowError:        # an integer part beyond any float
        raise TapeFormatError(f"{where}: complex parts {short([re_, im])} are too large for a "
                              "float") from None


_SCALAR_KINDS = {"b": (bool,), "i": (int,), "u": (int,), "f": (int, float), "c": (int, float, complex)}


def _same_number(a, b) -> bool:
    """Equal, NaN counting as equal to NaN (part by part for complex numbers)."""
    return a == b or all(x == y or (x != x and y != y) for x, y in
                         ((complex(a).real, complex(b).real), (complex(a).imag, complex(b).imag)))


def _scalar(dt: np.dtype, value, where: str) -> np.generic:
    """A numpy scalar holding exactly ``value``, a number of its dtype's kind (no strings,
    which numpy would parse; no rounding or wrapping, which ``enc`` never writes)."""
    kinds = _SCALAR_KINDS[dt.kind]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise TapeFormatError(f"{where}: expected a number of dtype {dt.name}, got {value!r:.40}")
    try:
        with np.errstate(all="ignore"):
            x = dt.type(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise TapeFormatError(f"{where}: {value!r:.40} is not a {dt.name}: {exc}") from None
    if not _same_number(x.item(), value):
        raise TapeFormatError(f"{where}: {value!r:.40} is not exactly a {dt.name} (it would be "
                              f"{x.item()!r:.40})")
    return x


# -- dtypes and avals ---------------------------------------------------------------------------

def enc_dtype(dt: np.dtype, where: str) -> str:
    if dt.name not in DTYPES:
        raise NotSerializableError(f"{where}: dtype {dt} cannot be saved (choose one of "
                                   f"{', '.join(DTYPES)})")
    return dt.name


def dec_dtype(name, where: str) -> np.dtype:
    """A dtype from the fixed list only (``object`` and structured dtypes are not data)."""
    if not isinstance(name, str) or name not in DTYPES:
        raise TapeFormatError(f"{where}: unknown dtype {name!r:.40}; expected one of {', '.join(DTYPES)}")
    return DTYPES[name]


def dec_shape(obj, where: str, max_elements: int) -> tuple:
    """A shape whose element count is bounded, so that no stand-in or literal is too big."""
    shape = tuple(expect_int(s, f"{where}[{i}]", 0) for i, s in enumerate(expect_list(obj, where)))
    if math.prod(shape) > max_elements:
        raise TapeFormatError(f"{where}: shape {shape} has more than max_elements={max_elements} elements")
    return shape


def enc_aval(a: Aval, where: str) -> list:
    return [enc_dtype(a.dtype, where), list(a.shape)]


def dec_aval(obj, where: str, max_elements: int) -> Aval:
    name, shape = expect_list(obj, where, 2)
    return Aval(dec_shape(shape, f"{where}[1]", max_elements), dec_dtype(name, f"{where}[0]"))


# -- arrays and literals ----------------------------------------------------------------------------

def enc_array(a: np.ndarray, where: str) -> dict:
    """Small arrays of exact finite numbers as a JSON list (complex numbers as [re, im]
    pairs), the rest as little-endian base64."""
    out = {"dtype": enc_dtype(a.dtype, where), "shape": list(a.shape)}
    if a.size <= INLINE_MAX and a.dtype.name in _EXACT_ITEM \
            and (a.dtype.kind not in "fc" or np.isfinite(a).all()):
        items = a.ravel().tolist()
        out["data"] = [[z.real, z.imag] for z in items] if a.dtype.kind == "c" else items
    else:
        little = a.astype(a.dtype.newbyteorder("<"), copy=False)
        out["base64"] = base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii")
    return out


def dec_array(obj, where: str, max_elements: int) -> np.ndarray:
    """A read-only array; its data must have exactly the length dtype and shape call for."""
    expect_keys(obj, where, {"dtype", "shape"}, {"data", "base64", "scalar", "aval"})
    dt = dec_dtype(obj["dtype"], f"{where}.dtype")
    shape = dec_shape(obj["shape"], f"{where}.shape", max_elements)
    n = math.prod(shape)
    if ("data" in obj) == ("base64" in obj):
        raise TapeFormatError(f"{where}: a literal has exactly one of 'data' or 'base64'")
    if "data" in obj:
        data = expect_list(obj["data"], f"{where}.data")
        if dt.kind == "c":
            data = _complex_items(data, f"{where}.data", n, shape)
        elif len(data) != n or not all(isinstance(x, (bool, int, float)) for x in data):
            raise TapeFormatError(f"{where}.data: expected {n} numbers for shape {shape}")
        try:
            a = np.array(data, dtype=dt).reshape(shape)
        except (OverflowError, ValueError) as exc:
            raise TapeFormatError(f"{where}.data: not {dt.name} values: {exc}") from None
    else:
        text = obj["base64"]
        size = n * dt.itemsize
        if not isinstance(text, str) or len(text) > 4 * ((size + 2) // 3):
            got = f"{len(text)} characters" if isinstance(text, str) else short(text)
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
    a.flags.writeable = False
    return a


def _complex_items(data: list, where: str, n: int, shape: tuple) -> list[complex]:
    """The [re, im] pairs of a complex array's ``data``."""
    if len(data) != n or not all(type(z) is list and len(z) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in z) for z in data):
        raise TapeFormatError(f"{where}: expected {n} [re, im] pairs of numbers for shape {shape}")
    return [_complex(re_, im, where) for re_, im in data]


def enc_lit(x: Lit, where: str, table: list, index: dict) -> dict:
    """An operand literal: arrays go to the literal ``table`` once per Lit (so a shared constant
    stays shared), numbers are written inline."""
    v = x.value
    if isinstance(v, (np.ndarray, np.generic)):
        k = index.get(id(x))
        if k is None:
            entry = enc_array(np.asarray(v), where)
            if isinstance(v, np.generic):
                entry["scalar"] = True
            if x.aval != Aval.of(v):
                entry["aval"] = enc_aval(x.aval, where)
            k = index[id(x)] = len(table)
            table.append(entry)
        return {"lit": k}
    out = {"value": enc(v, where)}
    if x.aval != Aval.of(v):
        out["aval"] = enc_aval(x.aval, where)
    return out


def dec_lit_entry(obj, where: str, max_elements: int) -> Lit:
    """One entry of the literal table."""
    a = dec_array(obj, where, max_elements)
    if "scalar" in obj and (obj["scalar"] is not True or a.shape != ()):
        raise TapeFormatError(f"{where}.scalar: true, for a literal of shape []")
    value = a[()] if "scalar" in obj else a
    aval = dec_aval(obj["aval"], f"{where}.aval", max_elements) if "aval" in obj else Aval.of(value)
    return _lit(value, aval, where)


def dec_lit_operand(obj, where: str, max_elements: int) -> Lit:
    """An inline literal operand ``{"value": v}``: a number, never a container."""
    expect_keys(obj, where, {"value"}, {"aval"})
    value = dec(obj["value"], f"{where}.value")
    if not isinstance(value, (bool, int, float, complex, np.generic)):
        raise TapeFormatError(f"{where}: a literal operand must be a number, got {value!r:.40}")
    aval = dec_aval(obj["aval"], f"{where}.aval", max_elements) if "aval" in obj else Aval.of(value)
    return _lit(value, aval, where)


def _lit(value, aval: Aval, where: str) -> Lit:
    """A literal whose declared aval can hold its value's kind (a complex number declared real
    would lose its imaginary part wherever the aval is believed)."""
    if Aval.of(value).dtype.kind == "c" and aval.dtype.kind != "c":
        raise TapeFormatError(f"{where}.aval: a complex literal declared {aval}")
    return Lit(value, aval)
