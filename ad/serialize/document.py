"""The JSON document of a tape (schema in docs/serialization.md): ``to_json`` and ``from_json``
for tapes and gradient tapes, with their variables, provenance and argument pytrees.

Decoding reads every variable definition first (a primal origin names its rule's output, which
is defined later), then the equations in order, checking each against its primitive
(``schema``); the finished tape goes through ``ad.validate`` and, by default, the shape check.

Scopes (``Eqn.scope``, version 2 on) are a table of the distinct scopes in the document, each
equation naming its entry by index (``"scope": 3``; none for ``()``): a loop's 10,000 equations
in 40 scopes write each scope once. Files of version 1 (no scopes) load with every scope ``()``.
"""
from __future__ import annotations

import collections

from .. import pytree
from ..gradtape import GradTape
from ..errors import source_line
from ..origins import ORIGIN_KINDS, Origin, OriginKind
from ..tape import Aval, Eqn, InvalidTapeError, Tape, Var, freeze_params, validate
from .codec import (NotSerializableError, TapeFormatError, dec, dec_aval, dec_lit_entry,
                    dec_lit_operand, enc, enc_aval, enc_lit, expect_int, expect_keys, expect_list,
                    short, tagged)
from .schema import check_avals, check_params, primitive

FORMAT = "tapeviz.tape"
VERSION = 2                 # the version ``save`` writes
READS = (1, 2)              # the versions ``load`` reads (1: no scopes)

LIMITS = {               # defaults of ``load``'s size limits (each a keyword of ``load``)
    "max_bytes": 64 << 20,
    "max_eqns": 1_000_000,
    "max_depth": 100,
    "max_literal_bytes": 64 << 20,
    "max_elements": 100_000_000,   # per variable, literal or ``shape`` param
}

_TOP = {"format", "version", "type", "inputs", "input_names", "literals", "eqns", "outputs",
        "free_vars", "in_tree", "out_tree"}
_TOP_SINCE = {2: {"scopes"}}                    # version -> the top-level keys it added
_EQN_OPTIONAL = {1: {"params", "source", "origin"}, 2: {"params", "source", "origin", "scope"}}
_GRAD = {"n_forward", "n_values", "n_seeds", "grad_tree", "grad_slots"}


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


# -- pytree structures ---------------------------------------------------------------------------

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
    tag, payload = tagged(obj, where)
    if tag in ("tuple", "list"):
        return (tag, tuple(dec_structure(c, f"{where}[{i}]", namedtuples)
                           for i, c in enumerate(expect_list(payload, where))))
    if tag == "dict":
        pairs = [expect_list(p, f"{where}[{i}]", 2) for i, p in enumerate(expect_list(payload, where))]
        keys = tuple(dec(k, f"{where}[{i}] key") for i, (k, _) in enumerate(pairs))
        return ("dict", keys, tuple(dec_structure(c, f"{where}[{i}]", namedtuples)
                                    for i, (_, c) in enumerate(pairs)))
    if tag == "namedtuple":
        name, fields, children = expect_list(payload, where, 3)
        cls = _namedtuple(name, expect_list(fields, where), where, namedtuples)
        kids = tuple(dec_structure(c, f"{where}[{i}]", namedtuples)
                     for i, c in enumerate(expect_list(children, where)))
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


def _enc_in_tree(t: pytree.InTree) -> dict:
    paths = [p for p, traced in zip(t.paths, t.traced) if not traced]
    return {"structure": enc_structure(t.structure, "in_tree"), "traced": list(t.traced),
            "static": [enc(v, f"static argument {p}") for v, p in zip(t.static, paths)],
            "paths": list(t.paths)}


def _dec_in_tree(obj, n_inputs: int, nt: dict) -> pytree.InTree:
    expect_keys(obj, "in_tree", {"structure", "traced", "static", "paths"})
    structure = dec_structure(obj["structure"], "in_tree.structure", nt)
    n = _leaves(structure)
    traced = expect_list(obj["traced"], "in_tree.traced", n)
    if not all(type(t) is bool for t in traced) or sum(traced) != n_inputs:
        raise TapeFormatError(f"in_tree.traced: expected {n} bools, {n_inputs} of them true")
    static = tuple(dec(v, f"in_tree.static[{i}]") for i, v in
                   enumerate(expect_list(obj["static"], "in_tree.static", n - n_inputs)))
    paths = expect_list(obj["paths"], "in_tree.paths", n)
    if structure[0] != "tuple" or not all(isinstance(p, str) for p in paths):
        raise TapeFormatError("in_tree: the structure is a tuple of arguments and paths are strings")
    return pytree.InTree(structure, tuple(traced), static, tuple(paths))


# -- tape -> JSON -----------------------------------------------------------------------------------

def to_json(tape: Tape) -> dict:
    """The JSON object of a tape (``save`` writes it); refuses tapes that run closures.

    >>> obj = ad.serialize.to_json(ad.trace(np.cos, np.ones(3)))
    >>> obj["type"], obj["inputs"], obj["eqns"][0]["prim"], obj["eqns"][0]["in"]
    ('Tape', [[0, ['float64', [3]]]], 'cos', [0])
    """
    check_serializable(tape)
    table: list = []
    index: dict = {}
    defined = set(tape.inputs) | {v for e in tape.eqns for v in e.outputs}
    free: dict = {}

    def operand(x, where):
        return x.n if type(x) is Var else enc_lit(x, where, table, index)

    def origin(o: Origin):
        if o.of is not None and o.of not in defined:
            free[o.of.n] = enc_aval(o.of.aval, "origin")
        return [o.kind, None if o.of is None else o.of.n, o.rule]

    scopes: dict = {}           # scope -> its index in the table
    eqns = []
    for i, e in enumerate(tape.eqns):
        where = f"equation {i} ({e.prim.name})"
        item = {"prim": e.prim.name, "in": [operand(x, where) for x in e.inputs],
                "out": [[v.n, enc_aval(v.aval, where)] for v in e.outputs]}
        if e.params:
            item["params"] = {k: enc(v, f"{where} param {k}") for k, v in e.params}
        if e.source is not None:
            item["source"] = e.source
        if e.origin != Origin(OriginKind.PRIMAL):
            item["origin"] = origin(e.origin)
        if e.scope:
            k = scopes.get(e.scope) if type(e.scope) is tuple else None
            if k is None:
                _check_scope(e.scope, where)
                k = scopes[e.scope] = len(scopes)
            item["scope"] = k
        eqns.append(item)
    out = {"format": FORMAT, "version": VERSION, "type": type(tape).__name__,
           "inputs": [[v.n, enc_aval(v.aval, "inputs")] for v in tape.inputs],
           "input_names": list(tape.input_names), "literals": table,
           "scopes": [list(sc) for sc in scopes], "eqns": eqns,
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


def _check_scope(scope, where: str) -> None:
    """A scope is saved if it is what loading accepts: a tuple of non-empty strings."""
    if type(scope) is not tuple or not all(type(s) is str and s for s in scope):
        raise NotSerializableError(f"{where}: its scope {scope!r:.80} is not a tuple of non-empty strings")


# -- JSON -> tape -----------------------------------------------------------------------------------

def _dec_scopes(obj, eqn_objs: list) -> list:
    """The scope table: each entry a non-empty list of non-empty strings, made a tuple (one tuple
    per entry, shared by its equations). A bad entry is named with the first equation using it."""
    table = expect_list(obj, "scopes")
    out = []
    for k, entry in enumerate(table):
        if type(entry) is list and entry and all(type(s) is str and s for s in entry):
            out.append(tuple(entry))
            continue
        user = next((f" (the scope of eqns[{i}])" for i, e in enumerate(eqn_objs)
                     if isinstance(e, dict) and type(e.get("scope")) is int and e["scope"] == k), "")
        raise TapeFormatError(f"scopes[{k}]{user}: a scope is a non-empty list of non-empty strings "
                              f"(the user's calls, outermost first), got {short(entry)}")
    return out


class _Decoder:
    """The state of one load: variables by number, literals, what is defined so far."""

    def __init__(self, obj: dict, max_literal_bytes: int, max_elements: int, scopes: list):
        self.max_elements = max_elements
        self.scopes = scopes
        self.variables: dict[int, Var] = {}
        self.defined: set = set()
        self.free: dict[int, Var] = {}
        for i, item in enumerate(expect_list(obj["free_vars"], "free_vars")):
            n, aval = expect_list(item, f"free_vars[{i}]", 2)
            n = expect_int(n, f"free_vars[{i}][0]", 0)
            self.free[n] = Var(n, self.aval(aval, f"free_vars[{i}][1]"))
        self.lits = []
        nbytes = 0
        for i, entry in enumerate(expect_list(obj["literals"], "literals")):
            self.lits.append(dec_lit_entry(entry, f"literals[{i}]", max_elements))
            nbytes += self.lits[-1].value.nbytes
            if nbytes > max_literal_bytes:
                raise TapeFormatError(f"literals[{i}]: literals exceed "
                                      f"max_literal_bytes={max_literal_bytes}")

    def aval(self, obj, where) -> Aval:
        return dec_aval(obj, where, self.max_elements)

    def var(self, item, where) -> Var:
        """A variable definition ``[n, aval]``."""
        n, aval = expect_list(item, where, 2)
        n = expect_int(n, f"{where}[0]", 0)
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
            return self.lits[expect_int(x["lit"], f"{where}.lit", 0, len(self.lits) - 1)]
        return dec_lit_operand(x, where, self.max_elements)

    def origin(self, o, where) -> Origin:
        kind, of, rule = expect_list(o, where, 3)
        if kind not in ORIGIN_KINDS:
            raise TapeFormatError(f"{where}[0]: origin kind {kind!r:.40} is not one of {ORIGIN_KINDS}")
        if of is not None:
            n = expect_int(of, f"{where}[1]", 0)
            of = self.variables.get(n) or self.free.get(n)
            if of is None:
                raise TapeFormatError(f"{where}[1]: %{n} is neither defined nor listed in free_vars")
        if rule is not None and not isinstance(rule, str):
            raise TapeFormatError(f"{where}[2]: expected a rule name, got {short(rule)}")
        return Origin(kind, of, rule)

    def eqn(self, e: dict, outs: tuple, where: str) -> Eqn:
        prim = primitive(e["prim"], where)
        ins = tuple(self.operand(x, f"{where}.in[{j}]")
                    for j, x in enumerate(expect_list(e["in"], f"{where}.in")))
        raw = e.get("params", {})
        if not isinstance(raw, dict):
            raise TapeFormatError(f"{where}.params: expected an object, got {short(raw)}")
        params = {k: dec(v, f"{where}.params.{k}") for k, v in raw.items()}
        check_params(prim, params, len(ins), where, self.max_elements)
        if not prim.multiple_results and len(outs) != 1:
            raise TapeFormatError(f"{where}.out: {prim.name} has one output, the file gives {len(outs)}")
        source = e.get("source")
        if source is not None and not isinstance(source, str):
            raise TapeFormatError(f"{where}.source: expected a string, got {short(source)}")
        origin = self.origin(e["origin"], f"{where}.origin") if "origin" in e else Origin(OriginKind.PRIMAL)
        scope = ()
        if "scope" in e:
            k = e["scope"]
            if type(k) is not int or not 0 <= k < len(self.scopes):
                span = f"0 to {len(self.scopes) - 1}" if self.scopes else "the table is empty"
                raise TapeFormatError(f"{where}.scope: expected the index of its entry in \"scopes\" "
                                      f"({span}), got {short(k)}")
            scope = self.scopes[k]
        self.defined.update(outs)
        return Eqn(prim, ins, freeze_params(params), outs, source, origin, scope)


def from_json(obj, *, namedtuples: dict | None = None, check_shapes: bool = True,
              max_eqns: int = LIMITS["max_eqns"], max_literal_bytes: int = LIMITS["max_literal_bytes"],
              max_elements: int = LIMITS["max_elements"]) -> Tape:
    """A tape from its JSON object, validated (keywords as for ``load``).

    >>> obj = ad.serialize.to_json(ad.trace(np.cos, np.ones(3)))
    >>> print(ad.serialize.from_json(obj))
    { lambda %0:f64[3] ; let
        %1:f64[3] = cos %0
      in (%1) }
    """
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise TapeFormatError(f"not a saved tape: the top-level object has no \"format\": \"{FORMAT}\"")
    version = obj.get("version")
    if type(version) is not int or version not in READS:
        raise TapeFormatError(f"schema version {short(version)}: this version of ad reads versions "
                              f"{', '.join(map(str, READS))}; save the tape again with this version, or "
                              "load it with the version of ad that wrote it")
    kind = obj.get("type")
    if kind not in ("Tape", "GradTape"):
        raise TapeFormatError(f"type: expected 'Tape' or 'GradTape', got {short(kind)}")
    added = {k for v, keys in _TOP_SINCE.items() if v <= version for k in keys}
    expect_keys(obj, "file", _TOP | added | ({"grad"} if kind == "GradTape" else set()))
    eqn_objs = expect_list(obj["eqns"], "eqns")
    if len(eqn_objs) > max_eqns:
        raise TapeFormatError(f"eqns: {len(eqn_objs)} equations exceed max_eqns={max_eqns}")
    nt = namedtuples or {}
    scopes = _dec_scopes(obj["scopes"], eqn_objs) if version >= 2 else []
    d = _Decoder(obj, max_literal_bytes, max_elements, scopes)
    inputs = tuple(d.var(x, f"inputs[{i}]") for i, x in enumerate(expect_list(obj["inputs"], "inputs")))
    d.defined.update(inputs)
    outs_of = []
    for i, e in enumerate(eqn_objs):
        expect_keys(e, f"eqns[{i}]", {"prim", "in", "out"}, _EQN_OPTIONAL[version])
        outs_of.append(tuple(d.var(x, f"eqns[{i}].out[{j}]")
                             for j, x in enumerate(expect_list(e["out"], f"eqns[{i}].out"))))
    eqns = tuple(d.eqn(e, outs, f"eqns[{i}]") for i, (e, outs) in enumerate(zip(eqn_objs, outs_of)))
    outputs = tuple(d.operand(x, f"outputs[{i}]")
                    for i, x in enumerate(expect_list(obj["outputs"], "outputs")))
    names = expect_list(obj["input_names"], "input_names", len(inputs))
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


def _dec_grad(obj, n_inputs: int, n_outputs: int, n_eqns: int, nt: dict) -> dict:
    expect_keys(obj, "grad", _GRAD)
    tree = obj["grad_tree"]
    out = {"n_forward": expect_int(obj["n_forward"], "grad.n_forward", 0, n_eqns),
           "n_values": expect_int(obj["n_values"], "grad.n_values", 0, n_outputs),
           "n_seeds": expect_int(obj["n_seeds"], "grad.n_seeds", 0, n_inputs),
           "grad_tree": None if tree is None else dec_structure(tree, "grad.grad_tree", nt)}
    n_grads = n_outputs - out["n_values"]
    slots = tuple(expect_int(s, f"grad.grad_slots[{i}]", -1, n_grads - 1)
                  for i, s in enumerate(expect_list(obj["grad_slots"], "grad.grad_slots")))
    if out["grad_tree"] is not None and _leaves(out["grad_tree"]) != len(slots):
        raise TapeFormatError("grad.grad_slots: one slot per leaf of grad_tree")
    out["grad_slots"] = slots
    return out
