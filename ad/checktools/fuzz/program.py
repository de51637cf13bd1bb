"""A fuzzed program is data (``Program``) turned into the source of a numpy function, so a
failure prints as a ready-to-paste pytest test and hypothesis shrinks it step by step; the
hypothesis strategy that draws them (``programs``); and which programs are well-posed."""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from ... import nn
from ...errors import TraceError
from ...primitives import REGISTRY
from ...samples import draw, traced
from ...tracing import trace
from .steps import (C, COMPLEX, COMPLEX_LOSSES, CONTROL, CONTROL_ARMS, EYE, IDX, KINKED, LARGEST,
                    LOOKUP, LOWPASS, MARGIN, MASK, N, NN, NOT_AUTOGRAD, NOT_AUTOGRAD_ND, SHAPES, SMOOTH,
                    TABLE, W, WC, WEIGHTS, WELL, fold, registry_call, registry_case)


@dataclass(frozen=True)
class Program:
    """A random program: ``steps`` are (step name, i, j, *extra) with i, j indices into the pool
    of values so far (taken modulo its size); a registry step is ("@", i, primitive, case): the
    ``case``-th case of the ``primitive``-th primitive of ``cases()`` (both modulo their counts).

    >>> program = ad.checktools.fuzz.Program("real", (("sin", 0, 1), ("view_write", 2, 1)))
    >>> print(program.source())
    def f(x0, x1):
        v2 = np.sin(x0)
        v3 = v2 + 0.0 * x1
        view = v3[..., ::2]
        view *= np.tanh(x1[..., 1::2])
        return np.sum(v3 * WEIGHTS) + 0.1 * np.sum(v2 * v2)
    <BLANKLINE>
    >>> ad.checktools.fuzz.run(program)      # the forms compared, all agreeing
    ['closure', 'lifted', 'lifted+passes', 'compiled', 'vmap', 'finite differences', 'jvp', ..., 'json', 'onnx']
    """
    family: str
    steps: tuple
    shape: tuple = (N,)
    dtype: str = "float64"
    loss: str = "re"
    seed: int = 0
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def smooth(self) -> bool:
        """No kinks: finite differences apply (complex programs keep MARGIN away from theirs)."""
        return self.family != "real" or all(s[0] not in KINKED for s in self.steps)

    @property
    def numpy_only(self) -> bool:
        """Written with numpy functions only, that HIPS autograd differentiates too."""
        lacks = NOT_AUTOGRAD | (NOT_AUTOGRAD_ND if len(self.shape) > 1 else set())
        return all(s[0] != "@" and not s[0].startswith("nn_") and s[0] not in self.extra and s[0] not in lacks
                   for s in self.steps)

    def registry_steps(self) -> list:
        return [registry_case(s[2], s[3]) for s in self.steps if s[0] == "@"]

    # the function's source
    def source(self) -> str:
        n_in = 2 + sum(len(traced(REGISTRY[c[0]].samples[c[1]].inputs)) for c in self.registry_steps())
        lines, pool, shapes = [], ["x0", "x1"], [self.shape, self.shape]
        next_input = 2
        for k, step in enumerate(self.steps):
            out = f"v{k + 2}"
            name, i, j = step[0], step[1] % len(pool), step[2] % len(pool) if step[0] != "@" else 0
            a, b, sa, sb = pool[i], pool[j], shapes[i], shapes[j]
            if name == "@":
                prim, sample, _, _ = registry_case(step[2], step[3])
                n = len(traced(REGISTRY[prim].samples[sample].inputs))
                args = ", ".join(f"x{next_input + m}" for m in range(n))
                next_input += n
                body, shape = [f"{{out}} = {a} + 0.1 * fold(R({prim!r}, {sample})({args}))"], sa
            elif self.family == "complex":
                body, shape = [f"{{out}} = {COMPLEX[name][0].format(a=a, b=b)}"], sa
            elif name in CONTROL:
                body, shape = self._control(name, a, b, step[3:]), sa
            else:
                body, shape = self.steps_table()[name](a, b, sa, sb)
            lines += [line.format(out=out) for line in body]
            pool.append(out)
            shapes.append(shape)
        if self.family == "complex":
            last = COMPLEX_LOSSES[self.loss].format(v=pool[-1])
            lines.append(f"return {last} + 0.1 * np.sum(np.real({pool[-2]} * np.conj({pool[-2]})))")
        else:
            lines.append(f"return np.sum({pool[-1]} * WEIGHTS) + 0.1 * np.sum({pool[-2]} * {pool[-2]})")
        args = ", ".join(f"x{m}" for m in range(n_in))
        return f"def f({args}):\n" + "".join(f"    {line}\n" for line in lines)

    def steps_table(self) -> dict:
        return {**SMOOTH, **NN, **KINKED, **self.extra}

    def _control(self, name, a, b, control) -> list:
        then, other, t = control

        def arm(step):
            return SMOOTH[step](a, b, (N,), (N,))[0][0].split(" = ", 1)[1]
        then_out = SMOOTH[then]("{out}", b, (N,), (N,))[0][0].split(" = ", 1)[1]
        return [line.format(a=a, b=b, t=repr(t), then=arm(then), other=arm(other), out="{out}",
                            then_out=then_out.replace("{", "{{").replace("}", "}}").format(out="{out}"))
                for line in CONTROL[name]]

    def function(self):
        """The program as a function (its globals: ``NAMESPACE``)."""
        namespace = {**NAMESPACE, "np": np}
        exec(compile(self.source(), f"<fuzzed program {self.family}>", "exec"), namespace)
        return namespace["f"]

    def inputs(self) -> list:
        """x0 and x1 (complex x0 in the complex family), then each registry step's operands."""
        rng = np.random.default_rng(self.seed)
        if self.family == "complex":
            xs = [rng.uniform(-1, 1, N) + 1j * rng.uniform(-1, 1, N), rng.uniform(-1, 1, N)]
        else:
            xs = [rng.standard_normal(self.shape).astype(self.dtype) for _ in range(2)]
        for prim, k, shape_set, dtype in self.registry_steps():
            xs += draw(REGISTRY[prim].samples[k].inputs, rng, shape_set, np.dtype(dtype))
        return xs

    def domains(self) -> list:
        doms = [None, None]
        for prim, k, _, _ in self.registry_steps():
            doms += [i.domain for i in traced(REGISTRY[prim].samples[k].inputs)]
        return doms

    def as_test(self, name: str = "test_found_by_fuzzer") -> str:
        """A ready-to-paste pytest test that replays this program through ``compare``."""
        xs = ",\n        ".join(_literal(x) for x in self.inputs())
        body = self.source().replace("\n    ", "\n        ").replace("def f(", "    def f(", 1)
        options = f"smooth={self.smooth}, numpy_only={self.numpy_only}, family={self.family!r}"
        return (f"import numpy as np\nfrom ad import nn\n"
                f"from ad.checktools.fuzz import C, EYE, IDX, LOOKUP, LOWPASS, MASK, N, TABLE, W, WC, WEIGHTS, WELL\n"
                f"from ad.checktools.fuzz import compare, fold, registry_call as R\n\n\n"
                f"def {name}():\n{body}"
                f"    xs = [\n        {xs}]\n"
                f"    compare(f, xs, {options})\n")


NAMESPACE = {"nn": nn, "R": registry_call, "fold": fold, "N": N, "W": W, "WC": WC, "WELL": WELL, "EYE": EYE,
             "IDX": IDX, "MASK": MASK, "WEIGHTS": WEIGHTS, "C": C, "TABLE": TABLE, "LOOKUP": LOOKUP,
             "LOWPASS": LOWPASS}


def _literal(x) -> str:
    """An input as exact Python source (repr of floats round-trips)."""
    x = np.asarray(x)
    return f"np.array({x.tolist()!r}, dtype=np.{x.dtype.name})"


# -- strategies ------------------------------------------------------------------------------------

def _pool_index():
    return st.integers(0, 99)


def programs(family: str | None = None, *, max_steps: int = 8, registry: float = 0.25, kinks: bool = True,
             extra_steps: dict | None = None):
    """A hypothesis strategy of ``Program``s (of one ``family``, or of all three). ``registry``:
    the share of steps that call a registered primitive on its samples; ``kinks=False`` draws
    smooth steps only; ``extra_steps``: your own steps (name -> ``unary(...)``/``binary(...)``/
    ``block(...)``) mixed into the real family."""
    extra = dict(extra_steps or {})
    families = [family] if family else ["real", "real", "real", "complex", "control"]

    @st.composite
    def draw(draw_):
        fam = draw_(st.sampled_from(families))
        seed = draw_(st.integers(0, 2**16))
        if fam == "complex":
            steps = draw_(st.lists(st.tuples(st.sampled_from(complex_steps()), _pool_index(), _pool_index()),
                                   min_size=1, max_size=max_steps))
            return Program(fam, tuple(steps), loss=draw_(st.sampled_from(sorted(COMPLEX_LOSSES))), seed=seed)
        if fam == "control":
            arms = st.sampled_from(CONTROL_ARMS)
            step = st.one_of(st.tuples(st.sampled_from(CONTROL_ARMS), _pool_index(), _pool_index()),
                             st.tuples(st.sampled_from(sorted(CONTROL)), _pool_index(), _pool_index(), arms, arms,
                                       st.floats(-1.0, 1.0).map(lambda t: round(t, 3))))
            steps = draw_(st.lists(step, min_size=1, max_size=max_steps))
            steps.append(("if_sum", 0, 1, "sin", "tanh", 0.0)) if not any(s[0] in CONTROL for s in steps) else None
            return Program(fam, tuple(steps), seed=seed)
        names = sorted({**SMOOTH, **NN, **(KINKED if kinks else {}), **extra})
        plain = st.tuples(st.sampled_from(names), _pool_index(), _pool_index())
        prim = st.tuples(st.just("@"), _pool_index(), st.integers(0, 10**6), st.integers(0, 99))
        step = st.one_of(plain, prim) if registry else plain
        if 0 < registry < 0.5:
            step = st.one_of(*([plain] * round((1 - registry) / registry)), prim)
        steps = draw_(st.lists(step, min_size=1, max_size=max_steps))
        shape = draw_(st.sampled_from(SHAPES))
        dtype = draw_(st.sampled_from(["float64", "float64", "float64", "float32"]))
        return Program("real", tuple(steps), shape=shape, dtype=dtype, seed=seed, extra=extra)
    return draw()


@functools.cache
def complex_steps() -> tuple:
    """The complex steps whose primitives all declare complex_rule (read off a trace)."""
    probe = [C * 0.7, np.linspace(-0.8, 0.9, N)]
    drawn = []
    for name, (template, _) in sorted(COMPLEX.items()):
        f = Program("complex", ((name, 0, 1),), loss="re").function()
        try:
            tape = trace(f, *probe)
        except TraceError:
            continue
        if all(e.prim.complex_rule for e in tape.eqns
               if any(v.aval.dtype.kind == "c" for v in (*e.inputs, *e.outputs))):
            drawn.append(name)
    return tuple(drawn)


def well_posed(program: Program, xs) -> bool:
    """Complex programs: no step within MARGIN of a cut, pole or kink, nothing past LARGEST.
    Other programs: the value is finite."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)     # astype's complex -> real
        value = program.function()(*xs)
    if not np.isfinite(value) or abs(value) > LARGEST ** 2:
        return False
    if program.family != "complex":
        return True
    worst = np.inf
    pool = list(xs[:2])
    for name, i, j in program.steps:
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        if not (np.all(np.isfinite(a)) and np.max(np.abs(a)) < LARGEST and np.max(np.abs(b)) < LARGEST):
            return False
        near = COMPLEX[name][1]
        if near is not None:
            worst = min(worst, float(np.min(near(a, b))))
        with np.errstate(all="ignore"):
            pool.append(eval(COMPLEX[name][0].format(a="a", b="b"), {**NAMESPACE, "np": np, "a": a, "b": b}))
    return worst > MARGIN
