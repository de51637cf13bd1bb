"""Rolling the generated code of an unrolled loop back into a loop.

Tracing unrolls the user's Python loops: 10,000 steps of ``x = 0.5 * np.tanh(x)`` are 10,000
lines of forward code and 10,000 of backward, and Python compiles a line in about 11 us, half
the first call of a long chain's gradient. A run of lines that repeats (a period of up to
``MAX_PERIOD`` lines, at least ``MIN_STEPS`` times, ``MIN_LINES`` lines in all) with the same
text but for the numbers of its holes (``ad.compiler.emit``: the registers, ``r12``, and the
tape's ``%12`` in the comments), each number stepping by a constant from one repeat to the
next, is written as one loop over those lines::

    for i in range(1, 10000):  # 9,999 steps of 1 line
        r[i] = np.tanh(r[i - 1] * c_0_5)  # %{2 * i + 1}

A register whose number steps (``r5``, ``r6``, ...) is the slot of a list, ``r[5]``, everywhere
in the function; the others keep their names. Each line of the run is the loop's line at its
step, character for character, so the loop computes what the lines did, in the same order.

Only the holes are read: the code and the comments around them are text that must repeat
exactly, whatever it says. Notes (the scope comments ``codegen`` writes where the user's calls
change, ``# in cell#3``) are not lines of the text at all: they are given apart, one per line
(the note in effect there), and written in as they are before a line whose note is not the one
written last; a loop is headed by the note of its first step (if that is not the one written
last), the notes of its other steps are not written, and a line after the loop is headed by its
own note when that is not the first step's. A line that holds a string (a guard's message, an einsum's
subscripts) is left as written: rolling it would be correct (a string is such text), but would
change the code generated for the programs that have one. A step costs the loop about 0.06 us more than the lines did
(a list slot, the loop variable; measured on steps of ``np.tanh`` of 16 values: 2.72 -> 2.78
us): nothing beside a numpy call, so scalar code (Python floats, 50 ns an operation) is never
rolled.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from .emit import PREFIX, REGISTER, holes, numbers, unnumbered, with_numbers, written

MAX_PERIOD = 12       # the longest loop body looked for, in lines
MIN_STEPS = 16        # the fewest repeats worth a loop
MIN_LINES = 400       # the fewest lines worth a loop (about 4 ms of Python's compile time)

_INDENT = "    "
_LIST = PREFIX[REGISTER]      # the list whose slots are the stepping registers, r[5]


def reroll(lines: list[str], taken, notes: list | None = None, shown: str | None = None) -> str:
    """The body of a generated function (its lines after the ``def`` line, registers and marks
    written as holes) as it reads, with the runs of repeated lines written as loops.
    ``taken``: the function's global names (a loop needs ``r`` and ``i`` free, and no global
    named like a register). ``notes``: per line, the comment line in effect there (its scope's,
    as it reads; None for a line of no scope), written before a line whose note is not the last
    one written (``shown`` at first); never read (the module docstring says where they go).
    Lines that repeat but for their holes' numbers are found on the whole text at once; only the
    lines of a run are then read, against the text its loop writes."""
    text = "\n".join(lines)
    notes = _Notes(notes, shown)
    if len(lines) < MIN_LINES or _LIST in taken or "i" in taken or any(map(_register_like, taken)):
        return _unrolled(text, notes)
    keys = unnumbered(text).split("\n")
    runs = list(_runs(lines, keys)) if len(keys) == len(lines) else []    # (no line holds a newline)
    if not runs:
        return _unrolled(text, notes)
    listed: set[int] = set()              # the registers that are slots of the list ``r``
    for run in runs:
        for kind, x, d in run.holes:
            if kind == REGISTER and d:
                listed.update(range(x, x + run.steps * d, d))
    out = [f"{_INDENT}{_LIST} = [None] * {max(listed) + 1}  # the registers of the loops below"] if listed else []
    at = 0
    for run in runs:
        out += notes.around(_plain(lines[at:run.start], listed), at)
        out += notes.before_loop(run.start, run.period)
        out += _loop(run, listed)
        at = run.start + run.period * run.steps
    out += notes.around(_plain(lines[at:], listed), at)
    return "\n".join(out)


def _unrolled(text: str, notes: "_Notes") -> str:
    if notes.notes is None:
        return written(text)
    return "\n".join(notes.around([[line] for line in written(text).split("\n")], 0))


class _Notes:
    """The notes of the lines (``reroll``), and the one written last (``shown``)."""

    def __init__(self, notes: list | None, shown: str | None):
        self.notes, self.shown = notes, shown

    def around(self, written_lines: list[list[str]], start: int) -> list[str]:
        """The output lines of input lines ``start``... (for each, the lines it is written as),
        a line headed by its note when that is not the one shown."""
        notes = self.notes
        if notes is None:
            return [out for outs in written_lines for out in outs]
        out = []
        for note, outs in zip(notes[start:start + len(written_lines)], written_lines):
            if note is not None and note != self.shown:
                out.append(note)
                self.shown = note
            out += outs
        return out

    def before_loop(self, start: int, period: int) -> list[str]:
        """The note heading a loop: its first step's (the first of its lines that has one), when
        that is not the one shown; its other steps' are not written."""
        if self.notes is None:
            return []
        note = next((n for n in self.notes[start:start + period] if n is not None), None)
        if note is None or note == self.shown:
            return []
        self.shown = note
        return [note]


def _register_like(name: str) -> bool:
    return name[:1] == _LIST and name[1:].isdecimal()


@dataclass(slots=True)
class _Run:
    """Lines ``start`` on: a body of ``period`` lines (``body``, their holes without numbers),
    ``steps`` times; ``holes``: the body's holes in order, each (kind, number at the first
    step, step)."""
    start: int
    period: int
    steps: int
    body: list[str]
    holes: list[tuple[str, int, int]]


def _runs(lines: list[str], keys: list[str]):
    """The runs worth a loop, in order, none overlapping. The stretches where the keys (the
    lines without their holes' numbers) repeat with a period p are found for each p at once (a
    byte per line, a regular expression over them); a stretch is then read from its start, and
    on from where a run or a failed one ends; the shortest period first (a longer one that
    repeats is made of it, or repeats fewer times)."""
    stretches = []
    for period in range(1, MAX_PERIOD + 1):
        same = bytes(map(operator.eq, keys, keys[period:]))     # line x's key is line x + p's
        least = max(MIN_STEPS * period, MIN_LINES) - period
        if least <= len(same):
            stretches += [(m.start(), m.end() + period, period)
                          for m in re.finditer(b"\x01{%d,}" % least, same)]
    at = 0                                  # the lines before ``at`` are written
    for start, end, period in sorted(stretches, key=lambda s: (s[0], s[2])):
        start = max(start, at)
        while (end - start) // period >= MIN_STEPS and end - start >= MIN_LINES:
            if not all(_rollable(k) for k in keys[start:start + period]):
                start += 1
                continue
            run, reach = _stepping(lines, keys, start, period, (end - start) // period)
            if run is not None:
                yield run
                at = reach
            start = reach


def _rollable(key: str) -> bool:
    """Is a line of this key one a loop may hold: a statement of the function's body (not a
    comment, not a block of its own), with no string (the module docstring)."""
    return key.startswith(_INDENT) and key[4:5] not in ("", " ", "#") and not key.endswith(":") \
        and "'" not in key and '"' not in key


def _stepping(lines: list[str], keys: list[str], start: int, period: int, steps: int) -> tuple[_Run | None, int]:
    """The run of ``period`` lines from ``start``, whose keys repeat ``steps`` times, as long as
    each hole's number steps by the same amount each time (None if that is not worth a loop),
    and the line where that stops. The first two steps give the steps; every step is then
    checked against the text the loop's body writes at it."""
    first, second = (numbers("\n".join(lines[k:k + period])) for k in (start, start + period))
    deltas = list(map(operator.sub, second, first))
    if steps >= 3 and numbers("\n".join(lines[start + 2 * period:start + 3 * period])) != \
            list(map(operator.add, second, deltas)):        # the third step: a cheap test first
        return None, start + 3 * period
    body = keys[start:start + period]
    write = with_numbers("\n".join(body))
    columns = [range(x, x + steps * d, d) if d else [x] * steps for x, d in zip(first, deltas)]
    done, chunk = 0, 4                      # steps checked; the next ones in chunks that double
    while done < steps:
        upto = min(steps, done + chunk)
        wanted = list(map(write, *(c[done:upto] for c in columns))) if columns else [write()] * (upto - done)
        have = lines[start + done * period:start + upto * period]
        if "\n".join(wanted) != "\n".join(have):
            done += next(k for k, text in enumerate(wanted)
                         if text != "\n".join(have[k * period:(k + 1) * period]))
            break
        done, chunk = upto, 2 * chunk
    if done < MIN_STEPS or done * period < MIN_LINES:
        return None, start + (done + 1) * period
    kinds = holes("\n".join(body))[1]
    return _Run(start, period, done, body, list(zip(kinds, first, deltas))), start + done * period


def _plain(lines: list[str], listed: set[int]) -> list[list[str]]:
    """Lines outside the loops as they read, the listed registers as slots (``r[7]``): for each
    line, the lines it is written as (a ``del`` of a slot is two)."""
    if not lines:
        return []
    text = "\n".join(lines)
    if not listed:
        return [[line] for line in written(text).split("\n")]
    pieces, kinds = holes(unnumbered(text))
    texts = [_hole(kind, x, 0, None, listed) for kind, x in zip(kinds, numbers(text))]
    return [_deleting(line) for line in _filled(pieces, texts).split("\n")]


def _deleting(line: str) -> list[str]:
    """``del r3, r[7]`` as Python can write it: a list's slot is emptied, ``r[7] = None``."""
    body = line.lstrip()
    if not (body.startswith("del ") and "[" in body):
        return [line]
    indent = line[:len(line) - len(body)]
    names = body[4:].split(", ")
    slots = [x for x in names if "[" in x]
    plain = [x for x in names if "[" not in x]
    return [indent + " = ".join(slots) + " = None"] + ([indent + "del " + ", ".join(plain)] if plain else [])


def _loop(run: _Run, listed: set[int]) -> list[str]:
    """The loop over a run's body: ``i`` runs over the first stepping register (else the
    first stepping ``%N``) and every other number is a linear function of it."""
    stepping = [(kind, x, d) for kind, x, d in run.holes if d]
    driver = next(((x, d) for kind, x, d in stepping if kind == REGISTER), None) or \
        next(((x, d) for _, x, d in stepping), None)
    count = f"{run.steps:,} steps of {run.period} line{'s' if run.period > 1 else ''}"
    if driver is None:
        out, at = [f"{_INDENT}for _ in range({run.steps}):  # {count}"], None
    else:
        a, s = driver
        bounds = f"{a}, {a + run.steps * s}" if s == 1 else f"{a}, {a + run.steps * s}, {s}"
        out, at = [f"{_INDENT}for i in range({bounds}):  # {count}"], (a, s)
    pieces, _ = holes("\n".join(run.body))
    body = _filled(pieces, [_hole(kind, x, d, at, listed) for kind, x, d in run.holes])
    return out + [_INDENT + text for line in body.split("\n") for text in _deleting(line)]


def _filled(pieces: list[str], texts: list[str]) -> str:
    return "".join(p + t for p, t in zip(pieces, texts)) + pieces[-1]


def _hole(kind: str, x: int, d: int, at, listed: set[int]) -> str:
    """A hole as a loop (``at``: where ``i`` starts and its step) or a line outside one writes
    it: a listed register as its slot, ``r[i - 1]``, a stepping ``%N`` as ``%{2 * i + 1}``."""
    if kind == REGISTER and (d or x in listed):
        return f"{_LIST}[{_expression(x, d, at)}]"
    return f"{PREFIX[kind]}{{{_expression(x, d, at)}}}" if d else f"{PREFIX[kind]}{x}"


def _expression(x: int, d: int, at) -> str:
    """The number ``x`` of the first step, stepping by ``d``, as a function of ``i`` (which
    starts at ``a`` and steps by ``s``)."""
    if not d:
        return str(x)
    a, s = at
    if d % s:
        return f"{x} + {d} * ((i - {a}) // {s})"
    m = d // s
    c = x - m * a
    term = "i" if m == 1 else "-i" if m == -1 else f"{m} * i"
    if c == 0:
        return term
    if m < 0 and c > 0:
        return f"{c} - i" if m == -1 else f"{c} - {-m} * i"
    return f"{term} + {c}" if c > 0 else f"{term} - {-c}"
