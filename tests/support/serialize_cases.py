"""Shared cases for the serialization tests: the MLP, random programs (hypothesis), a rule that
cannot be lifted, ad.nn compositions, an exact tape comparison and an onnxruntime runner."""
from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import strategies as st

import ad
from ad import nn
from ad.primitives import BY_FUNCTION, REGISTRY
from ad.samples import F, In
from ad.tape import Lit, Var
from tests.support.cases import Case
from tests.support.specs import spec

# -- the MLP: batch 16, 8-16-4, tanh, softmax cross-entropy -------------------------------------


def mlp_loss(W1, b1, W2, b2, X, Y):
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    z = z - np.max(z, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * logp, axis=1))


def mlp_args(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    shapes = [(8, 16), (16,), (16, 4), (4,)]
    params = [rng.standard_normal(s) * 0.5 for s in shapes]
    X = rng.standard_normal((16, 8))
    Y = np.eye(4)[rng.integers(0, 4, 16)]
    return tuple(np.asarray(a, dtype) for a in (*params, X, Y))


# -- random programs ------------------------------------------------------------------------------
# Each op maps a pool of (3, 4) arrays to a new (3, 4) array; every op has an ONNX lowering with
# float64 kernels in onnxruntime. Values stay bounded (tanh, divisions by 1 + x^2).

def _setitem(a, b):
    z = a * 1.0
    z[1, ::2] = b[0, :2]
    return z


def _add_at(a, b):
    z = a * 1.0
    np.add.at(z, (np.array([0, 2, 0]),), b[:3] * 2.0)
    return z


def _softmax(a):
    e = np.exp(a - np.max(a, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


UNARY = {
    "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "square": lambda a: np.tanh(a * a),
    "negative": np.negative, "exp": lambda a: np.exp(np.tanh(a)), "sqrt": lambda a: np.sqrt(a * a + 1.0),
    "log": lambda a: np.log(a * a + 1.0), "center": lambda a: a - np.mean(a, axis=0, keepdims=True),
    "flip": lambda a: a[::-1, ::-1], "cumsum": lambda a: np.tanh(np.cumsum(a, axis=1)),
    "softmax": _softmax, "gram": lambda a: np.tanh(a @ a.T) @ a * 0.1,
    "roll": lambda a: np.roll(a, 1, axis=1), "gather": lambda a: a[np.array([2, 0, 1])],
    "clip": lambda a: np.clip(a, -0.5, 0.7), "abs": lambda a: np.abs(a) + 0.1,
    "sumbcast": lambda a: a * np.sum(a, axis=1, keepdims=True) * 0.1, "T@": lambda a: (a.T @ a)[:3] * 0.2,
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": lambda a, b: a / (1.0 + b * b), "maximum": np.maximum,
    "where": lambda a, b: np.where(a > b, a, b * 0.5), "setitem": _setitem, "add_at": _add_at,
    "concat": lambda a, b: np.concatenate([a[:, :2], b[:, 2:]], axis=1),
    "einsum": lambda a, b: np.einsum("ij,kj->ik", a, b) @ b * 0.1,
}
OPS = [(name, 1, f) for name, f in UNARY.items()] + [(name, 2, f) for name, f in BINARY.items()]


@st.composite
def programs(draw, max_steps=6):
    """(n_inputs, steps); a step is (op index, operand pool indices)."""
    n_inputs = draw(st.integers(1, 3))
    steps = []
    for k in range(draw(st.integers(1, max_steps))):
        op = draw(st.integers(0, len(OPS) - 1))
        pool = n_inputs + k
        steps.append((op, tuple(draw(st.integers(0, pool - 1)) for _ in range(OPS[op][1]))))
    return n_inputs, tuple(steps)


def program_function(program):
    n_inputs, steps = program

    def f(*xs):
        pool = list(xs)
        for op, operands in steps:
            pool.append(OPS[op][2](*(pool[i] for i in operands)))
        return np.sum(pool[-1] * np.linspace(-1.0, 1.0, 12).reshape(3, 4))
    return f


def program_inputs(program, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-1.5, 1.5, (3, 4)) for _ in range(program[0]))


# -- a rule that cannot be lifted -------------------------------------------------------------------

@contextlib.contextmanager
def closure_only_rule():
    """``doubled(x) = 2 x`` with a rule whose pullback calls np.asarray on its cotangent, so only
    a closure can run it; registered for the duration of the block only."""
    @ad.primitive(name="serialize_tests.doubled")
    def doubled(x):
        return x * 2.0

    @ad.rrule(doubled)
    def _doubled_rule(x):
        def pullback(dy):
            return (np.asarray(dy) * 2.0,)
        return doubled(x), pullback
    try:
        yield doubled
    finally:
        del REGISTRY[doubled.primitive.name]
        BY_FUNCTION.pop(doubled.__wrapped__, None)


# -- ad.nn functions, whose primitives the rule cases bind directly ---------------------------

IMAGES = In((2, 3, 5, 5))
EXTRA = [Case(name, s.call, s) for name, s in {
    "nn.softmax": spec(lambda x: nn.softmax(x), F),
    "nn.log_softmax": spec(lambda x: nn.log_softmax(x, axis=0), F),
    "nn.logsumexp": spec(lambda x: nn.logsumexp(x, axis=1), F),
    "nn.layer_norm of nn.batch_norm": spec(lambda x: nn.layer_norm(nn.batch_norm(x), axis=(1, 2)), IMAGES),
    "nn.conv": spec(lambda x, w: nn.conv(x, w, stride=2, padding=1), IMAGES, In((4, 3, 3, 3))),
    "nn.conv_transpose": spec(lambda x: nn.conv_transpose(x, np.ones((3, 2, 2, 2)), stride=2), IMAGES),
    "nn.max_pool": spec(lambda x: nn.max_pool(x, 2, stride=1, padding=1), IMAGES),
    "nn.mean_pool": spec(lambda x: nn.mean_pool(x, (2, 3), padding=1), IMAGES),
    "nn.max_pool gradient": spec(lambda x: ad.grad(lambda z: np.sum(nn.max_pool(z, 2) ** 2))(x), IMAGES),
}.items()]


# -- comparing tapes ------------------------------------------------------------------------------

def _same_operand(x, y) -> bool:
    if type(x) is Var:
        return type(y) is Var and x.n == y.n and x.aval == y.aval
    if type(y) is not Lit or x.aval != y.aval or type(x.value) is not type(y.value):
        return False
    a, b = np.asarray(x.value), np.asarray(y.value)
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def assert_same_tape(a, b):
    """Equal listing, structure, variable numbers, literals, params, provenance, scopes, trees."""
    assert type(a) is type(b)
    assert str(a) == str(b)
    assert [(v.n, v.aval) for v in a.inputs] == [(v.n, v.aval) for v in b.inputs]
    assert a.input_names == b.input_names
    assert len(a.eqns) == len(b.eqns)
    for e, f in zip(a.eqns, b.eqns):
        assert e.prim is f.prim and e.params == f.params and e.source == f.source and e.scope == f.scope
        assert all(map(_same_operand, e.inputs, f.inputs)) and len(e.inputs) == len(f.inputs)
        assert [(v.n, v.aval) for v in e.outputs] == [(v.n, v.aval) for v in f.outputs]
        assert (e.origin.kind, e.origin.rule) == (f.origin.kind, f.origin.rule)
        assert (e.origin.of is None) == (f.origin.of is None)
        if e.origin.of is not None:
            assert (e.origin.of.n, e.origin.of.aval) == (f.origin.of.n, f.origin.of.aval)
    assert len(a.outputs) == len(b.outputs) and all(map(_same_operand, a.outputs, b.outputs))
    assert a.in_tree == b.in_tree and a.out_tree == b.out_tree
    if isinstance(a, ad.GradTape):
        assert (a.n_forward, a.n_values, a.n_seeds, a.grad_tree, a.grad_slots, a.fallbacks) == \
               (b.n_forward, b.n_values, b.n_seeds, b.grad_tree, b.grad_slots, b.fallbacks)


# -- onnxruntime ---------------------------------------------------------------------------------

def run_onnx(model, *feeds):
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    assert len(names) == len(feeds)
    return sess.run(None, {n: np.asarray(x) for n, x in zip(names, feeds)})
