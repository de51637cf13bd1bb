"""Pytrees: nested tuples, lists, dicts and namedtuples of leaves.

A structure is a hashable description; ``flatten`` and ``unflatten`` are inverse. Leaves are
everything else (arrays, scalars, None, strings...).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

LEAF = "*"


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(tree) -> tuple[list, Any]:
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(x, leaves):
    kind = type(x)
    if kind is np.ndarray or kind is float:              # the usual leaves first: once per call
        leaves.append(x)
        return LEAF
    if kind is tuple:                                    # (ad.grad's arguments)
        return ("tuple", tuple([_flatten(c, leaves) for c in x]))
    if _is_namedtuple(x):
        return ("namedtuple", type(x), tuple(_flatten(c, leaves) for c in x))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple([_flatten(c, leaves) for c in x]))
    if isinstance(x, dict):
        keys = tuple(x)
        return ("dict", keys, tuple([_flatten(x[k], leaves) for k in keys]))
    leaves.append(x)
    return LEAF


def unflatten(structure, leaves):
    return _builder(structure)(iter(leaves))


@functools.lru_cache(maxsize=1024)
def _builder(s) -> Callable[[Iterator], Any]:
    """A function taking a structure's leaves from an iterator and building it; made once per
    structure (``ad.grad`` unflattens its gradients on every call)."""
    if s == LEAF:
        return next
    kind, parts = s[0], tuple(map(_builder, s[-1]))
    if kind == "namedtuple":
        cls = s[1]
        return lambda it: cls(*[b(it) for b in parts])
    if kind == "dict":
        keys = s[1]
        return lambda it: {k: b(it) for k, b in zip(keys, parts)}
    if kind == "tuple":
        return lambda it: tuple([b(it) for b in parts])
    return lambda it: [b(it) for b in parts]


def leaf_paths(structure, prefix: str = "") -> list[str]:
    """Readable paths of the leaves, e.g. ``params['W']`` or ``args[1][0]``."""
    if structure == LEAF:
        return [prefix]
    kind = structure[0]
    if kind == "namedtuple":
        return [p for name, c in zip(structure[1]._fields, structure[2])
                for p in leaf_paths(c, f"{prefix}.{name}")]
    if kind == "dict":
        return [p for k, c in zip(structure[1], structure[2]) for p in leaf_paths(c, f"{prefix}[{k!r}]")]
    return [p for i, c in enumerate(structure[1]) for p in leaf_paths(c, f"{prefix}[{i}]")]


def is_traceable_leaf(x) -> bool:
    """Arrays, floats and numpy scalars are traced; Python ints/bools, None and strings are static."""
    if isinstance(x, (bool, int)) and not isinstance(x, np.generic):
        return False
    return isinstance(x, (float, complex, np.ndarray, np.generic)) or hasattr(x, "__array_function__")


@dataclass(frozen=True)
class InTree:
    """The structure of traced arguments: which leaves were traced and the static ones' values."""
    structure: Any
    traced: tuple[bool, ...]
    static: tuple  # values of the static leaves, in order
    paths: tuple[str, ...]

    @staticmethod
    def build(args: tuple, names: list[str]) -> tuple["InTree", list]:
        leaves, structure = flatten(args)
        paths = []
        for name, c in zip(names, structure[1]):
            paths += leaf_paths(c, name)
        traced = tuple(is_traceable_leaf(x) for x in leaves)
        static = tuple(x for x, t in zip(leaves, traced) if not t)
        return InTree(structure, traced, static, tuple(paths)), leaves

    @property
    def traced_paths(self) -> tuple[str, ...]:
        return tuple(p for p, t in zip(self.paths, self.traced) if t)

    def select_traced(self, leaves: list) -> list:
        if not self.static:
            return leaves
        static = [x for x, t in zip(leaves, self.traced) if not t]
        for path, old, new in zip([p for p, t in zip(self.paths, self.traced) if not t], self.static, static):
            if not _same_static(old, new):
                raise ValueError(f"static argument {path} was {old!r} when traced and is {new!r} now; "
                                 "Python ints/bools are baked into the tape: trace again, or pass a "
                                 "numpy array to make it a traced input")
        return [x for x, t in zip(leaves, self.traced) if t]


def _same_static(a, b) -> bool:
    return type(a) is type(b) and a == b
