"""Rolling the generated code of an unrolled loop back into a loop.

Tracing unrolls the user's Python loops: 10,000 steps of ``x = 0.5 * np.tanh(x)`` are 10,000
lines of forward code and 10,000 of backward, and Python compiles a line in about 11 us, half
the first call of a long chain's gradient. A run of lines that repeats (a period of up to
``MAX_PERIOD`` lines, at least ``MIN_STEPS`` times, ``MIN_LINES`` lines in all) with the same
text but for register numbers and the tape's ``%N`` in the comments, each number stepping by a
constant from one repeat to the next, is written as one loop over those lines::

    for i in range(1, 10000):  # 9,999 steps of 1 line
        r[i] = np.tanh(r[i - 1] * c_0_5)  # %{2 * i + 1}

A register whose number steps (``r5``, ``r6``, ...) is the slot of a list, ``r[5]``, everywhere
in the function; the others keep their names. Each line of the run is the loop's line at its
step, character for character, so the loop computes what the lines did, in the same order.

The text is read, not parsed: the code generator writes registers as ``r<n>``, comments after
``  # ``, and no register inside a string; a line that holds a string (a guard's message) is
never rolled and keeps its strings as they are. A step costs the loop about 0.06 us more than
the lines did (a list slot, the loop variable; measured on steps of ``np.tanh`` of 16 values:
2.72 -> 2.78 us): nothing beside a numpy call, so scalar code (Python floats, 50 ns an
operation) is never rolled.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass

MAX_PERIOD = 12       # the longest loop body looked for, in lines
MIN_STEPS = 16        # the fewest repeats worth a loop
MIN_LINES = 400       # the fewest lines worth a loop (about 4 ms of Python's compile time)

_REGISTER = re.compile(r"\br(\d+)\b")
_DIGITS = re.compile(r"\d+")
_STRING = re.compile(r"""('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")
_REGISTER_NUMBERS = re.compile(r"r\d+")     # (and a name's digits after an r: _tokens tells them apart)
_TAPE_NUMBERS = re.compile(r"%\d+")
_COMMENT = "  # "
_INDENT = "    "
_REG, _MARK, _TEXT = "register", "mark", "text"      # what a line's digits are


def reroll(lines: list[str], taken) -> list[str]:
    """The body lines of a generated function (after its ``def`` line), with the runs of
    repeated lines written as loops. ``taken``: the function's global names (a loop needs
    ``r`` and ``i`` free, and no global named like a register). Lines that repeat but for
    their register and tape numbers are found on the whole text at once (two regular
    expressions); only the lines of a run are then read, against the text its loop writes."""
    if len(lines) < MIN_LINES or "r" in taken or "i" in taken or any(map(_REGISTER.fullmatch, taken)):
        return lines
    keys = _TAPE_NUMBERS.sub("%", _REGISTER_NUMBERS.sub("r", "\n".join(lines))).split("\n")
    if len(keys) != len(lines):
        return lines
    runs = list(_runs(lines, keys))
    if not runs:
        return lines
    listed: set[int] = set()              # the registers that are slots of the list ``r``
    for run in runs:
        for (kind, _, x), d in zip(run.tokens, run.deltas):
            if kind is _REG and d:
                listed.update(range(x, x + run.steps * d, d))
    out = [f"{_INDENT}r = [None] * {max(listed) + 1}  # the registers of the loops below"] if listed else []
    at = 0
    for run in runs:
        out += [text for k in range(at, run.start) for text in _plain(lines[k], listed)]
        out += _loop(run, listed)
        at = run.start + run.period * run.steps
    out += [text for k in range(at, len(lines)) for text in _plain(lines[k], listed)]
    return out


@dataclass(slots=True)
class _Run:
    """Lines ``start`` on: a body of ``period`` lines, ``steps`` times; ``tokens``: the body's
    digit runs at the first step, in order (kind, text, number), ``deltas``: their steps."""
    start: int
    period: int
    steps: int
    lines: list[str]
    tokens: list[tuple[str, str, int]]
    deltas: list[int]


def _runs(lines: list[str], keys: list[str]):
    """The runs worth a loop, in order, none overlapping. The stretches where the patterns
    repeat with a period p are found for each p at once (a byte per line, a regular
    expression over them); a stretch is then read from its start, and on from where a run or
    a failed one ends; the shortest period first (a longer one that repeats is made of it, or
    repeats fewer times)."""
    stretches = []
    for period in range(1, MAX_PERIOD + 1):
        same = bytes(map(operator.eq, keys, keys[period:]))     # line x's pattern is line x + p's
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
            run, reach = _stepping(lines, start, period, (end - start) // period)
            if run is not None:
                yield run
                at = reach
            start = reach


def _rollable(key: str) -> bool:
    """Is a line of this pattern one a loop may hold: a statement of the function's body (not
    a comment, not a block of its own), with no string."""
    return key.startswith(_INDENT) and key[4:5] not in ("", " ", "#") and not key.endswith(":") \
        and "'" not in key and '"' not in key


def _tokens(line: str) -> list[tuple[str, str, int]]:
    """The digit runs of a line: a register's number (``r12``), a tape variable's in the
    comment (``%12``), or other text (a constant's name, a literal: it must not change)."""
    comment = line.find(_COMMENT)
    comment = len(line) if comment < 0 else comment
    out = []
    for m in _DIGITS.finditer(line):
        a = m.start()
        before = line[a - 1] if a else ""
        if before == "r" and (a < 2 or not (line[a - 2].isalnum() or line[a - 2] == "_")) and a < comment:
            kind = _REG
        elif before == "%" and a > comment:
            kind = _MARK
        else:
            kind = _TEXT
        out.append((kind, m[0], int(m[0])))
    return out


def _stepping(lines: list[str], start: int, period: int, steps: int) -> tuple[_Run | None, int]:
    """The run of ``period`` lines from ``start``, at most ``steps`` times, as long as each
    register and ``%N`` steps by the same amount each time and all other digits stay (None if
    that is not worth a loop), and the line where that stops. The first two steps give the
    steps; every step is then checked against the text the loop's body writes at it."""
    body = lines[start:start + period]
    if steps >= 3:                          # the first three steps' digits, as text: a cheap test first
        first, second, third = (list(map(int, _DIGITS.findall("\n".join(lines[k:k + period]))))
                                for k in range(start, start + 3 * period, period))
        if len(first) != len(third) or list(map(operator.sub, second, first)) != \
                list(map(operator.sub, third, second)):
            return None, start + 3 * period
    tokens, then = [], []
    for j in range(start, start + period):
        now, nxt = _tokens(lines[j]), _tokens(lines[j + period])
        if len(now) != len(nxt) or any(k != k2 or (k is _TEXT and t != t2)
                                       for (k, t, _), (k2, t2, _) in zip(now, nxt)):
            return None, j + 1          # no run of this period holds both lines j and j + period
        tokens += now
        then += nxt
    deltas = [x2 - x for (_, _, x), (_, _, x2) in zip(tokens, then)]
    pieces, columns = [], []
    parts = _DIGITS.split("\n".join(body))
    for part, (kind, text, x), d in zip(parts, tokens, deltas):
        pieces.append(part.replace("{", "{{").replace("}", "}}"))
        if d:
            pieces.append("{}")
            columns.append(range(x, x + steps * d, d))
        else:
            pieces.append(text)
    pieces.append(parts[-1].replace("{", "{{").replace("}", "}}"))
    template = "".join(pieces).format
    done, chunk = 0, 4                      # steps checked; the next ones in chunks that double
    while done < steps:
        upto = min(steps, done + chunk)
        written = list(map(template, *(c[done:upto] for c in columns))) if columns else [template()] * (upto - done)
        have = lines[start + done * period:start + upto * period]
        if "\n".join(written) != "\n".join(have):
            done += next(k for k, text in enumerate(written)
                         if text != "\n".join(have[k * period:(k + 1) * period]))
            break
        done, chunk = upto, 2 * chunk
    if done < MIN_STEPS or done * period < MIN_LINES:
        return None, start + (done + 1) * period
    return _Run(start, period, done, body, tokens, deltas), start + done * period


def _named(n: int, listed: set[int]) -> str:
    return f"r[{n}]" if n in listed else f"r{n}"


def _plain(line: str, listed: set[int]) -> list[str]:
    """A line outside the loops, its listed registers written as slots (strings kept as they
    are)."""
    if not listed:
        return [line]
    if "'" in line or '"' in line:
        parts = _STRING.split(line)
        return _deleting("".join(p if k % 2 else _REGISTER.sub(lambda m: _named(int(m[1]), listed), p)
                                 for k, p in enumerate(parts)), "")
    code, _, comment = line.partition(_COMMENT)
    return _deleting(_REGISTER.sub(lambda m: _named(int(m[1]), listed), code), comment)


def _deleting(code: str, comment: str) -> list[str]:
    """The line(s) of ``code`` and its comment; ``del r3, r[7]`` as Python can write it: a
    list's slot is emptied, ``r[7] = None``."""
    body = code.lstrip()
    if body.startswith("del ") and "[" in body:
        indent = code[:len(code) - len(body)]
        names = body[4:].split(", ")
        slots = [x for x in names if "[" in x]
        plain = [x for x in names if "[" not in x]
        lines = [indent + " = ".join(slots) + " = None"] + ([indent + "del " + ", ".join(plain)] if plain else [])
    else:
        lines = [code]
    if comment:
        lines[0] += _COMMENT + comment
    return lines


def _loop(run: _Run, listed: set[int]) -> list[str]:
    """The loop over a run's body: ``i`` runs over the first stepping register (else the
    first stepping ``%N``) and every other number is a linear function of it."""
    stepping = [(kind, x, d) for (kind, _, x), d in zip(run.tokens, run.deltas) if d]
    driver = next(((x, d) for kind, x, d in stepping if kind is _REG), None) or \
        next(((x, d) for _, x, d in stepping), None)
    count = f"{run.steps:,} steps of {run.period} line{'s' if run.period > 1 else ''}"
    if driver is None:
        out, at = [f"{_INDENT}for _ in range({run.steps}):  # {count}"], None
    else:
        a, s = driver
        bounds = f"{a}, {a + run.steps * s}" if s == 1 else f"{a}, {a + run.steps * s}, {s}"
        out, at = [f"{_INDENT}for i in range({bounds}):  # {count}"], (a, s)
    written = iter(zip(run.tokens, run.deltas))

    def write(m):
        (kind, text, x), d = next(written)
        if kind is _REG and (d or x in listed):
            return f"[{_expression(x, d, at)}]"
        return f"{{{_expression(x, d, at)}}}" if d else text

    for line in run.lines:
        code, _, comment = _DIGITS.sub(write, line).partition(_COMMENT)
        out += [_INDENT + text for text in _deleting(code, comment)]
    return out


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
