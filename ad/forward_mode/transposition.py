"""Transposing linear tapes: ``transpose(tape, linear)``.

A tape that is linear in some of its inputs (every lifted pullback is, in its cotangents) has a
transpose: the tape mapping a cotangent of each output to a cotangent of each linear input, with
``Re(sum(ct * tape(x))) == Re(sum(transpose(ct) * x))`` (the pairing of docs/complex.md). The
inputs that are not linear are its constants, computed as they are.

An equation reading a linear variable must be declared linear in those operands, with the
primitive (``Primitive(linear_in=...)``, jointly, or ``multilinear_in=...``, each alone). Its
transpose is the primitive's own pullback, lifted (``ad.reverse_mode.lift``) with gradients for the linear
operands only: the pullback of a map linear in an operand *is* its transpose there, at any
point (under that pairing conj transposes to conj, real to ``g + 0j``, imag to ``-1j * g``). So
the transpose rules are the rules, declared once; an equation that is not linear in its linear
operands (no declaration, ``x * x``, ``x + c``, a pullback that reads the linear operand) is a
``NotLinearError`` naming the equation and its line.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..core_prims import add_p, full_p
from ..errors import TraceError
from ..reverse_mode.lift import LiftedRule, lift
from ..passes import dce
from ..origins import Origin, OriginKind
from ..tape import Eqn, Lit, Tape, Var, eval_eqns, format_eqn, freeze_params


class NotLinearError(TraceError, ValueError):
    """A tape was transposed through an equation that is not linear in its linear operands."""


def default_values(tape: Tape) -> list:
    """Ones for float inputs, zeros for the others (valid indices): a linear equation's transpose
    does not depend on the point it is lifted at."""
    return [np.ones(v.aval.shape, v.aval.dtype) if v.aval.is_float else np.zeros(v.aval.shape, v.aval.dtype)
            for v in tape.inputs]


def transpose(tape: Tape, linear, values=None, *, origin=None) -> Tape:
    """The transpose of ``tape`` in its inputs ``linear`` (indices).

    The result takes the other inputs (the same variables, in order) and then one cotangent per
    output, and returns one cotangent per linear input (zeros where none reaches it). ``values``
    (one per input of ``tape``) is where the rules are lifted: any point works (the default is
    ``default_values``); a rule that branches on a constant's value leaves a guard.
    ``origin(eqn)`` stamps the transposed equations (default: "transpose of %n (prim)").

    >>> tape = ad.trace(lambda x, c: np.sum(x * c), np.ones(3), np.arange(3.0))
    >>> print(ad.transpose(tape, [0]))
    { lambda %1:f64[3] %4:f64[] ; let
        %5:f64[1] = reshape shape=(1,) %4    # transpose of %3 (sum)
        %6:f64[3] = broadcast_to shape=(3,) %5    # transpose of %3 (sum)
        %7:f64[3] = multiply %6 %1    # transpose of %2 (multiply)
      in (%7) }
    """
    linear = sorted(set(linear))
    for i in linear:
        if not tape.inputs[i].aval.is_float:
            raise TypeError(f"input {i} ({tape.input_names[i]}: {tape.inputs[i].aval}) is not a float "
                            "array, so a map cannot be linear in it")
    origin = origin or (lambda e: Origin(OriginKind.TRANSPOSE, of=e.outputs[0], rule=e.prim.name))
    env = dict(zip(tape.inputs, default_values(tape) if values is None else values))
    eval_eqns(tape.eqns, env)
    lin = {tape.inputs[i] for i in linear}
    consts, linear_eqns = [], []
    for e in tape.eqns:
        if any(type(x) is Var and x in lin for x in e.inputs):
            if e.prim.kind != "pure":
                raise NotLinearError(f"{format_eqn(e)}: a {e.prim.kind} equation reads a linear "
                                     "variable", e.source)
            lin.update(e.outputs)
            linear_eqns.append(e)
        else:
            consts.append(e)
    t = _Transposer(itertools.count(1 + max([v.n for v in tape.inputs] +
                                            [v.n for e in tape.eqns for v in e.outputs])), consts,
                    {v: e.scope for e in linear_eqns for v in e.outputs})
    ct: dict = {}
    cts = []
    for k, out in enumerate(tape.outputs):
        c = t.new(out.aval)
        cts.append(c)
        if type(out) is Var and out in lin:
            ct[out] = c if out not in ct else t.add(ct[out], c, out, None)
        elif not _is_zero(out, consts):
            raise NotLinearError(f"output {k} ({out!r}) does not depend on the linear inputs and is "
                                 "not zero: the tape is affine, not linear", None)
    for e in reversed(linear_eqns):
        outs = [ct.get(v) for v in e.outputs]
        if all(c is None for c in outs):
            continue
        outs = [t.zeros(v, e) if c is None else c for c, v in zip(outs, e.outputs)]
        for x, g in _transpose_eqn(t, e, lin, env, outs, consts, origin(e)):
            ct[x] = g if x not in ct else t.add(ct[x], g, x, e.source)
    results = []
    for i in linear:
        v = tape.inputs[i]
        results.append(ct[v] if v in ct else t.zeros(v, None))
    names = [n for i, n in enumerate(tape.input_names) if i not in linear]
    return dce(Tape(tuple(v for i, v in enumerate(tape.inputs) if i not in linear) + tuple(cts),
                    tuple(t.eqns), tuple(results),
                    input_names=tuple(names) + tuple(f"ct{k}" for k in range(len(cts)))))


class _Transposer:
    """Fresh variables and the equations of the transposed tape (the constants first)."""

    def __init__(self, counter, consts, scopes: dict):
        self.counter = counter
        self.eqns = list(consts)
        self.scopes = scopes      # variable -> its equation's scope (a fan-in sum's is its variable's)

    def new(self, aval) -> Var:
        return Var(next(self.counter), aval)

    def add(self, a, b, of: Var, source):
        out = self.new(of.aval)
        self.eqns.append(Eqn(add_p, (a, b), (), (out,), source, Origin(OriginKind.ACCUMULATE, of=of, rule="add"),
                             self.scopes.get(of, ())))
        return out

    def zeros(self, v: Var, e: Eqn | None):
        out = self.new(v.aval)
        self.eqns.append(Eqn(full_p, (), freeze_params({"shape": v.aval.shape, "dtype": v.aval.dtype,
                                                        "fill_value": 0}), (out,),
                             None if e is None else e.source, Origin(OriginKind.ZEROS, of=v),
                             () if e is None else e.scope))
        return out


def _is_zero(x, consts) -> bool:
    """A literal of zeros, or the output of ``full`` with fill 0 (a structural zero)."""
    if type(x) is Lit:
        return bool(np.all(np.asarray(x.value) == 0))
    return any(x in e.outputs and e.prim is full_p and e.kwargs["fill_value"] == 0 for e in consts)


def _transpose_eqn(t: _Transposer, e: Eqn, lin: set, env: dict, cts: list, consts, origin: Origin):
    """Emit the transpose of ``e`` for the output cotangents ``cts``; yields (operand, cotangent)."""
    needs = tuple(type(x) is Var and x in lin for x in e.inputs)
    _check_declared(e, needs, consts)
    values = [env[x] if type(x) is Var else x.value for x in e.inputs]
    lifted = lift(e.prim, e.params, values, needs, e.source)
    bwd = _slice(lifted, needs)
    tainted = _tainted(lifted, needs)
    reads = list(dict.fromkeys(x for te in bwd for x in te.inputs if type(x) is Var and x in tainted))
    if lifted.fallback or reads:
        why = (f"its rule could not be lifted ({lifted.fallback})" if lifted.fallback else
               f"its pullback reads {', '.join(map(repr, reads))}, a value of its linear operands")
        raise NotLinearError(f"{format_eqn(e)}: cannot transpose {e.prim.name}: {why}", e.source)
    sub = {a: x for a, x in zip(lifted.args, e.inputs) if type(a) is Var}
    sub.update(zip(lifted.cts, cts))
    for te in lifted.fwd:                 # what the pullback reads of the primal body (constants)
        if not any(v in tainted for v in te.outputs):
            _emit(t, te, sub, e, origin)
    for te in bwd:
        _emit(t, te, sub, e, origin)
    for x, g, needed in zip(e.inputs, lifted.grads, needs):
        if needed and g is not None:
            yield x, sub[g] if type(g) is Var else g


def _emit(t: _Transposer, te: Eqn, sub: dict, e: Eqn, origin: Origin):
    """A template equation of ``e``'s transpose, in ``e``'s source line and scope."""
    outs = [t.new(v.aval) for v in te.outputs]
    sub.update(zip(te.outputs, outs))
    t.eqns.append(Eqn(te.prim, tuple(sub[x] if type(x) is Var else x for x in te.inputs), te.params,
                      tuple(outs), e.source or te.source, origin, e.scope))


def _check_declared(e: Eqn, needs, consts) -> None:
    """The linear operands of ``e`` are ones its primitive declares, in the way it declares."""
    where = format_eqn(e)
    decl = e.prim.linear
    varying = [k for k, n in enumerate(needs) if n]
    if decl is None:
        raise NotLinearError(f"{where}: {e.prim.name} is not declared linear in any operand, and it "
                             f"reads the linear {', '.join(repr(e.inputs[k]) for k in varying)}", e.source)
    declared = decl.of(len(e.inputs))
    wrong = [k for k in varying if k not in declared]
    if wrong:
        raise NotLinearError(f"{where}: {e.prim.name} is linear in operands {declared} only, and "
                             f"operand {wrong[0]} ({e.inputs[wrong[0]]!r}) is linear", e.source)
    if not decl.jointly and len(varying) > 1:
        raise NotLinearError(f"{where}: {e.prim.name} is linear in each of operands {declared} "
                             f"alone, and {len(varying)} of them are linear (x * x is not linear)", e.source)
    if decl.jointly:
        fixed = [k for k in declared if not needs[k] and not _is_zero(e.inputs[k], consts)]
        if fixed:
            raise NotLinearError(f"{where}: {e.prim.name} is linear in operands {declared} jointly, "
                                 f"and operand {fixed[0]} ({e.inputs[fixed[0]]!r}) is a constant "
                                 "that is not zero: the equation is affine, not linear", e.source)


def _tainted(lifted: LiftedRule, needs) -> set:
    """The template variables that depend on the linear operands."""
    tainted = {a for a, n in zip(lifted.args, needs) if n and type(a) is Var}
    for te in lifted.fwd:
        if any(type(x) is Var and x in tainted for x in te.inputs):
            tainted.update(te.outputs)
    return tainted


def _slice(lifted: LiftedRule, needs) -> list[Eqn]:
    """The pullback's equations that the linear operands' cotangents need (a rule may compute
    the others' too, and read the linear operands there)."""
    live = {g for g, n in zip(lifted.grads, needs) if n and type(g) is Var}
    kept = []
    for te in reversed(lifted.bwd):
        if any(v in live for v in te.outputs):
            kept.append(te)
            live.update(x for x in te.inputs if type(x) is Var)
    return kept[::-1]
