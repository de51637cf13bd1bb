"""Saving and loading tapes as JSON (schema in docs/serialization.md).

A tape is a list of named primitives, so it can be written down; loading a file never runs
anything from it. Primitive names are looked up in ``ad.primitives.REGISTRY`` (never imported),
params are checked against the primitive's declared params and signature, every size is bounded,
and by default each equation is evaluated once on stand-in values of its declared inputs to
check that the shapes the file claims are the shapes the equation computes.

Modules, each importing only the ones before it:
    codec     static values, dtypes, avals, arrays and literals; the errors
    schema    primitives by name, their params and arity, the shape check
    document  to_json / from_json: tapes, gradient tapes, provenance, scopes, pytrees
    files     dumps / loads / save / load: size limits, nesting scan, strict JSON
"""
from .codec import NotSerializableError, TapeFormatError
from .document import FORMAT, LIMITS, READS, VERSION, check_serializable, from_json, to_json
from .files import dumps, load, loads, save
from .schema import PARAM_TYPES, check_avals

__all__ = ["save", "load", "dumps", "loads", "to_json", "from_json", "check_serializable",
           "check_avals", "NotSerializableError", "TapeFormatError", "LIMITS", "PARAM_TYPES",
           "FORMAT", "VERSION", "READS"]
