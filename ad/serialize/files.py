"""Tapes as files: JSON text with one equation per line, and loading hardened against hostile
files. Before the document is decoded, the size is bounded, nesting is counted without parsing
(the parser recurses) and the JSON must be strict (no duplicate keys, no NaN constants, UTF-8).
"""
from __future__ import annotations

import json
import os
import re

import numpy as np

from ..tape import Tape
from .codec import TapeFormatError
from .document import LIMITS, from_json, to_json


def dumps(tape: Tape) -> str:
    """JSON text: the header fields, then one equation per line (diffs show equations).

    >>> ad.serialize.dumps(ad.trace(np.cos, np.ones(3))).splitlines()[:3]
    ['{', '"format": "tapeviz.tape",', '"version": 2,']
    """
    obj = to_json(tape)
    eqns = obj.pop("eqns")
    body = [f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in obj.items()]
    body.append('"eqns": [' + ",".join("\n  " + json.dumps(e, allow_nan=False) for e in eqns)
                + ("\n]" if eqns else "]"))
    return "{\n" + ",\n".join(body) + "\n}\n"


def save(tape: Tape, path) -> None:
    """Write ``tape`` (a Tape or GradTape) to ``path`` as JSON (schema: docs/serialization.md).

    Raises NotSerializableError for tapes whose rules fell back to closures.

    >>> def loss(W, x):
    ...     return np.sum(np.tanh(x @ W) ** 2)
    >>> W, x = np.ones((3, 2)) / 3, np.ones((4, 3))
    >>> ad.save(ad.grad_tape(loss, W, x), "loss.tape.json")
    """
    text = dumps(tape)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


_NOT_BRACKETS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+')   # strings, other text


def _depth_scan(text: str, max_depth: int) -> int:
    """Refuse deep nesting before parsing: strings are blanked out, then the running count of
    brackets is taken over the rest. Returns the depth at the end (> 0 for a truncated file)."""
    chars = np.frombuffer(_NOT_BRACKETS.sub("", text).encode(), np.uint8)
    if not chars.size:
        return 0
    opens = (chars == ord("[")) | (chars == ord("{"))
    depth = np.cumsum(opens.astype(np.int64) - ((chars == ord("]")) | (chars == ord("}"))))
    if depth.max() > max_depth:
        raise TapeFormatError(f"nesting deeper than max_depth={max_depth} (depth {depth.max()})")
    return int(depth[-1])


def _pairs(pairs):
    """An object from its key-value pairs, refusing duplicate keys (json.loads keeps the last)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        keys = [k for k, _ in pairs]
        raise TapeFormatError(f"duplicate keys {sorted({k for k in keys if keys.count(k) > 1})} "
                              "in one object")
    return obj


def _constant(name):
    raise TapeFormatError(f"{name} is not standard JSON (non-finite floats are written as "
                          '{"float": "inf"})')


def loads(text: str, *, max_bytes: int = LIMITS["max_bytes"], max_depth: int = LIMITS["max_depth"],
          **kwargs) -> Tape:
    """A tape from JSON text; keywords as for ``load``.

    >>> tape = ad.trace(np.cos, np.ones(3))
    >>> ad.serialize.loads(ad.serialize.dumps(tape)).eqns[0].prim
    cos
    """
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

    >>> W, x = np.ones((3, 2)) / 3, np.ones((4, 3))
    >>> ad.save(ad.grad_tape(lambda W, x: np.sum(np.tanh(x @ W) ** 2), W, x), "loss.tape.json")
    >>> value, dW = ad.load("loss.tape.json")(W, x)
    >>> dW.shape
    (3, 2)
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
