"""The generated programs of the forward-mode and Jacobian tests (hypothesis): a vocabulary of ops
spelled alike in numpy, jax.numpy, torch and autograd.numpy, so that one program runs over any of
those modules (``build(program, m)``); the strategy that draws programs (``GENERATED``), its
settings, and the inputs of a program from a seed. tests/forward_mode/test_forward_oracles.py runs
them against jax, torch and autograd; tests/forward_mode/test_forward.py and
tests/transforms/test_jacobians.py against finite differences."""
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

N = 4
REVERSE = np.arange(N)[::-1].copy()      # an index array: torch has no negative steps, autograd no flip
GATHER = np.array([3, 0, 0, 2])

# name: (arity, op over a module m): spelled alike in numpy, jax.numpy, torch and autograd.numpy
OPS = {
    "sin": (1, lambda m, x: m.sin(x)), "cos": (1, lambda m, x: m.cos(x)), "tanh": (1, lambda m, x: m.tanh(x)),
    "exp_tanh": (1, lambda m, x: m.exp(m.tanh(x))), "log1p_sq": (1, lambda m, x: m.log1p(x * x)),
    "sqrt1": (1, lambda m, x: m.sqrt(1.0 + x * x)), "arctan": (1, lambda m, x: m.arctan(x)),
    "scale": (1, lambda m, x: 0.5 * x - 1.0), "cumsum": (1, lambda m, x: m.cumsum(x, 0)),
    "reverse": (1, lambda m, x: x[REVERSE]), "centre": (1, lambda m, x: x - m.mean(x)),
    "softmax": (1, lambda m, x: m.exp(x - m.max(x)) / m.sum(m.exp(x - m.max(x)))),
    "add": (2, lambda m, x, y: x + y), "sub": (2, lambda m, x, y: x - y), "mul": (2, lambda m, x, y: x * y),
    "div": (2, lambda m, x, y: x / (1.0 + y * y)), "hypot": (2, lambda m, x, y: m.hypot(x, 1.0 + y * y)),
    "logaddexp": (2, lambda m, x, y: m.logaddexp(x, y)),
    "outer_sum": (2, lambda m, x, y: m.sum(x[:, None] * y[None, :], 0)),
    "concat_split": (2, lambda m, x, y: m.concatenate([x, y])[2:2 + N]),
    "square": (1, lambda m, x: x * x), "neg": (1, lambda m, x: -x), "sum": (1, lambda m, x: m.sum(x) + 0 * x),
    "gather": (1, lambda m, x: x[GATHER]), "roll": (1, lambda m, x: m.roll(x, 1)),
    "arctan2": (2, lambda m, x, y: m.arctan2(x, 2.0 + y * y)),
    "einsum": (2, lambda m, x, y: m.einsum("i,j->j", x, y)), "stack_mean": (2, lambda m, x, y: m.stack([x, y]).mean(0)),
    "prod_pairs": (1, lambda m, x: m.concatenate([m.prod(x.reshape(2, 2), 1)] * 2)),
}

GENERATED = st.lists(st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 100), st.integers(0, 100)),
                    min_size=1, max_size=10)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(program, m):
    """(x0, x1) -> a vector, the program run over module ``m``."""
    def f(x0, x1):
        pool = [x0, x1]
        for name, i, j in program:
            arity, op = OPS[name]
            pool.append(op(m, *(pool[i % len(pool)], pool[j % len(pool)])[:arity]))
        return pool[-1] + 0.1 * pool[-2] * pool[-2]
    return f


def scalar(f, m):
    """The program ``f`` (over module ``m``) made a scalar: the sum of its squared output."""
    return lambda x0, x1: m.sum(f(x0, x1) * f(x0, x1))


def program_data(seed):
    """(x0, x1, t0, t1) of a generated program: its inputs and a tangent for each."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(N) for _ in range(4))


def program_inputs(seed):
    """(x0, x1) of a generated program."""
    return program_data(seed)[:2]
