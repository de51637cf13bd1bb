"""Every line the rule tests run: each sample of each registered primitive that declares samples
(``ad.lib``, ``ad.nn``, anything else loaded), then each composition of the spec tables
(tests/support/specs.py, specs_linalg.py, specs_numeric.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import ad.nn  # noqa: F401  (its primitives join the registry)
import ad.scipy.special  # noqa: F401  (scipy.special's, loaded lazily by ad itself)
import ad.scipy.integrate, ad.scipy.linalg, ad.scipy.signal, ad.scipy.stats  # noqa: E401, F401  (ad.scipy's primitives)
from ad.primitives import REGISTRY, Primitive
from ad.samples import F64, Sample, caller, draw, traced
from tests.support.specs import COMPOSITIONS as BASIC
from tests.support.specs_linalg import LINALG
from tests.support.specs_numeric import NUMERIC

COMPOSITIONS = BASIC | LINALG | NUMERIC


@dataclass(frozen=True)
class Case:
    """A sample of a primitive (``fn`` binds it) or a composition (``fn`` is its numpy code).
    ``fn`` takes the drawn values: a sample's ``derive`` runs inside it, so that finite
    differences keep derived operands consistent (max_unpool's maxima move with its input)."""
    name: str
    fn: Callable
    sample: Sample
    primitive: Primitive | None = None

    def inputs(self, shape_set: str, rng: np.random.Generator, dtype=F64) -> list:
        return draw(self.sample.inputs, rng, shape_set, dtype)

    @property
    def domains(self) -> list:
        """Per operand, where finite differences may step."""
        return [i.domain for i in traced(self.sample.inputs)]


def sample_call(prim, sample: Sample) -> Callable:
    """A function of a sample's drawn values that binds ``prim`` as the sample does (its ``derive`` inside)."""
    call = caller(prim, sample)
    return call if sample.derive is None else lambda *xs: call(*sample.derive(*xs))


PRIMITIVE_CASES = [Case(p.name if len(p.samples) == 1 else f"{p.name}#{k}", sample_call(p, s), s, p)
                   for p in REGISTRY.values() for k, s in enumerate(p.samples)]
CASES = PRIMITIVE_CASES + [Case(name, s.call, s) for name, s in COMPOSITIONS.items()]


def leaves(y) -> tuple:
    """A call's outputs: the tuple of a multiple-results primitive, else the one array."""
    return tuple(y) if isinstance(y, (tuple, list)) else (y,)


def floats(xs) -> tuple[int, ...]:
    """The positions of the float operands: the ones to differentiate."""
    return tuple(i for i, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.floating))


def weights(y, rng: np.random.Generator, dtype=np.float64) -> list:
    return [rng.standard_normal(np.shape(leaf)).astype(dtype) for leaf in leaves(y)]


def weighted(fn, ws):
    """A real scalar function of a case's inputs: the sum of Re <output, w> over its outputs
    (complex outputs of real inputs: fft's)."""
    def loss(*xs):
        return sum(np.sum(np.real(leaf * w)) for leaf, w in zip(leaves(fn(*xs)), ws))
    return loss
