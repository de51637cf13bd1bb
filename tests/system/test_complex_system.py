"""Complex values through the rest of the system: generated code, the passes, saved files, ONNX
export, the graph model and the debugger. Gradients follow the convention of docs/complex.md
(g = dL/dx - i dL/dy) and are checked against central differences."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ad
import tapeviz
from ad.compiler.emit import value_source as _value_src
from ad.serialize import TapeFormatError, dumps, loads
from tests.support.needs import module
import ad.onnx
from tapeviz.debugger.inspector import heatmap_html, stats_html

NAN, INF = float("nan"), float("inf")
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")   # NaN parts, on purpose
Z = np.array([1 + 1j, -2j, 0.5 - 0.25j])


def same_bits(a, b) -> bool:
    """Equal to the bit: dtype, shape, signed zeros and NaNs."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def fd_grad(f, z, h=1e-6):
    """dL/dx - i dL/dy by central differences."""
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[k] = h
        dx = (f(z + e) - f(z - e)) / (2 * h)
        dy = (f(z + 1j * e) - f(z - 1j * e)) / (2 * h)
        g[k] = dx - 1j * dy
    return g


# -- codegen --------------------------------------------------------------------------------------

@pytest.mark.parametrize("v", [
    2 + 1j, 1j, -1j, complex(-0.0, -1.0), complex(0.0, -1.0), complex(-0.0, 0.0), complex(0.0, -0.0),
    0j, complex(NAN, INF), complex(1, -INF), 1e300 - 1e-300j, np.complex64(1.5 - 2j),
    np.complex64(0.1 + 0.2j), np.complex128(complex(NAN, 1)), np.complex128(-1j),
    np.complex64(complex(-0.0, INF)), np.float64(NAN), np.float32(-0.0)], ids=repr)
def test_a_literal_is_written_as_the_same_number(v):
    text = _value_src(v, None)
    back = eval(text, {"np": np})          # what the compiled function evaluates
    assert type(back) is type(v) and same_bits(back, v), text


def test_complex_literals_read_like_python():
    assert _value_src(2 + 1j, None) == "(2+1j)"
    assert _value_src(-1j, None) == "-1j"                  # (-0-1j), as Python reads -1j
    assert _value_src(np.complex64(1.5 - 2j), None) == "np.complex64(1.5-2j)"
    assert _value_src(complex(NAN, INF), None) == "complex(float('nan'), float('inf'))"
    assert _value_src(complex(0.0, -1.0), None) == "(0-1j)"          # -1j would make the 0 negative
    assert _value_src(complex(1.5, -0.0), None) == "complex(1.5, -0.0)"


def program(z):
    c = np.array([1j, 2.0, complex(NAN, INF)])
    return np.sum(np.real(z * z * (2 + 1j) + z * -1j + np.complex64(1.5 - 2j) + c[:2].sum()
                          + z * complex(-0.0, 1.0) + c))


def test_compiled_complex_programs_are_readable_and_run():
    tape = ad.trace(program, Z)
    source = ad.compile(tape).source
    for text in ("* (2+1j)", "v0 * -1j", "+ np.complex64(1.5-2j)", "+ np.complex128(2+1j)",
                 "complex(-0.0, 1.0)"):
        assert text in source, source
    assert not re.search(r"\bk\d", source), source        # no scalar bound as an opaque constant
    with np.errstate(invalid="ignore"):
        assert same_bits(ad.compile(tape)(Z), tape(Z))


def loss(z):
    w = z * (2 - 1j) + np.exp(z) * np.conj(z)
    return np.sum(np.abs(w) ** 2) + np.real(w[0] * 1j) - np.imag(np.sum(z @ np.ones((3, 2))))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_closure_lifted_and_compiled_agree_on_complex_gradients(dtype):
    z = Z.astype(dtype)
    grads = {form: ad.grad(loss, form=form)(z) for form in ("closure", "lifted", "compiled")}
    for form, g in grads.items():
        assert g.dtype == dtype, form
        np.testing.assert_allclose(g, grads["closure"], rtol=1e-5 if dtype == np.complex64 else 1e-12)
    np.testing.assert_allclose(grads["closure"], fd_grad(loss, Z), rtol=1e-6)


def test_complex_zeros_from_zero_propagation_compile():
    def f(z, w):
        return np.real(z[0] * (2 + 1j))       # w unreached, z only at [0]
    gt = ad.optimize(ad.grad_tape(f, Z, Z, argnums=(0, 1)))
    source = ad.compile(gt).source
    assert re.search(r"np\.full\(\(3,\), 0, np\.complex128\)", source), source
    _, (gz, gw) = ad.compile(gt)(Z, Z)
    assert gw.dtype == np.complex128 and not gw.any()
    np.testing.assert_array_equal(gz, [2 + 1j, 0, 0])          # L = 2x - y: dL/dx - i dL/dy


def test_folded_complex_scalars_are_written_inline():
    f = lambda z: np.imag(z[2] * (1 + 2j))      # noqa: E731  L = 2x + y: g = 2 - 1j
    gt = ad.optimize(ad.grad_tape(f, Z))
    assert "setitem(v7, np.complex128(2-1j), index=(2,))" in ad.compile(gt).source
    np.testing.assert_array_equal(ad.compile(gt)(Z)[1], [0, 0, 2 - 1j])


# -- passes ----------------------------------------------------------------------------------------

def optimized(f, *args):
    return ad.optimize(ad.trace(f, *args))


def test_x_times_one_keeps_numpys_complex_semantics():
    z = np.array([complex(INF, 0), complex(1, INF), complex(NAN, 1), 2 - 1j])
    for f in (lambda z: z * 1, lambda z: 1.0 * z, lambda z: z / 1, lambda z: z * (1 + 0j)):
        tape = optimized(f, z)
        with np.errstate(invalid="ignore"):
            assert same_bits(tape(z), f(z)) and same_bits(ad.compile(tape)(z), f(z))
    x = np.array([INF, 1.0])
    assert len(optimized(lambda x: x * 1, x).eqns) == 0       # real x * 1 is still x


def test_a_rewrite_never_makes_a_complex_value_real():
    x = np.array([1.0, -2.0])
    for f in (lambda x: x * (1 + 0j), lambda x: x + 0j, lambda x: x - 0j, lambda x: (x + 0j) * 1):
        tape = optimized(f, x)
        assert tape(x).dtype == np.complex128 and same_bits(tape(x), f(x))


def test_a_conjugate_is_never_dropped():
    tape = optimized(lambda z: np.conj(np.conj(z) * 1) + 0, Z)
    assert sum(e.prim.name == "conjugate" for e in tape.eqns) == 2
    np.testing.assert_array_equal(tape(Z), Z)      # (x + 0 -> x: -0.0 + 0 would be +0.0)


def test_cse_keeps_literals_that_differ_only_in_a_signed_zero():
    z = np.array([complex(1, -0.0)])
    f = lambda z: (z * complex(2, 0.0), z * complex(2, -0.0))   # noqa: E731
    tape = optimized(f, z)
    assert len(tape.eqns) == 2
    a, b = tape(z)
    assert same_bits(a, f(z)[0]) and same_bits(b, f(z)[1]) and not same_bits(a, b)


def test_cse_merges_equal_complex_literals():
    tape = optimized(lambda z: z * (2 + 1j) + z * (2 + 1j), Z)
    assert [e.prim.name for e in tape.eqns] == ["multiply", "add"]


def test_full_with_a_complex_fill_value():
    f = lambda z: np.full_like(z, 2 - 1j) * z + np.zeros_like(z)   # noqa: E731
    tape = optimized(f, Z)
    assert same_bits(tape(Z), f(Z)) and same_bits(ad.compile(tape)(Z), f(Z))
    assert "2-1j" in ad.compile(tape).source
    assert same_bits(loads(dumps(tape))(Z), f(Z))


# -- random complex programs through every form, the passes and a saved file ----------------------

UNARY = {
    "tanh": np.tanh, "sin": lambda a: np.sin(a * 0.5), "exp": lambda a: np.exp(np.tanh(a)),
    "negative": np.negative, "conj": np.conj, "square": lambda a: np.tanh(a * a),
    "abs": lambda a: np.abs(a) + 0.1, "real": lambda a: np.real(a) * (1 - 0.5j), "imag": np.imag,
    "flip": lambda a: a[::-1, ::-1], "cumsum": lambda a: np.tanh(np.cumsum(a, axis=1)),
    "center": lambda a: a - np.mean(a, axis=0, keepdims=True), "roll": lambda a: np.roll(a, 1, axis=1),
    "gram": lambda a: np.tanh(a @ a.T) @ a * 0.1, "rotate": lambda a: a * (0.6 + 0.8j),
}
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": lambda a, b: a / (1.0 + b * np.conj(b)),
    "where": lambda a, b: np.where(np.real(a) > np.imag(b), a, b * 0.5j),
    "concat": lambda a, b: np.concatenate([a[:, :2], b[:, 2:]], axis=1),
    "einsum": lambda a, b: np.einsum("ij,kj->ik", a, b) @ b * 0.1,
}
OPS = [(f, 1) for f in UNARY.values()] + [(f, 2) for f in BINARY.values()]
W = np.linspace(-1, 1, 12).reshape(3, 4) * (1 + 0.5j)


@st.composite
def complex_programs(draw):
    n_inputs = draw(st.integers(1, 2))
    steps = [(op := draw(st.integers(0, len(OPS) - 1)),
              tuple(draw(st.integers(0, n_inputs + k - 1)) for _ in range(OPS[op][1])))
             for k in range(draw(st.integers(1, 5)))]
    return n_inputs, steps


def run_program(program):
    def f(*xs):
        pool = list(xs)
        for op, operands in program[1]:
            pool.append(OPS[op][0](*(pool[i] for i in operands)))
        return np.sum(np.real(pool[-1] * W))
    return f


@settings(max_examples=100, deadline=None)
@given(complex_programs(), st.integers(0, 2 ** 16))
def test_random_complex_programs_agree_everywhere(program, seed):
    """closure = lifted = optimized = compiled = loaded from a file, and the first-order change
    matches finite differences."""
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(-1, 1, (3, 4)) + 1j * rng.uniform(-1, 1, (3, 4)) for _ in range(program[0])]
    f, argnums = run_program(program), tuple(range(program[0]))
    gt = ad.grad_tape(f, *xs, argnums=argnums)
    want = ad.grad(f, argnums, form="closure")(*xs)
    for tape in (gt, ad.optimize(gt)):
        for back in (tape, loads(dumps(tape))):
            for got in (back(*xs)[1], ad.compile(back)(*xs)[1]):
                for g, w in zip(got, want):
                    assert g.dtype == np.complex128
                    np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        assert same_bits(loads(dumps(tape))(*xs)[1][0], tape(*xs)[1][0])
    dz = [rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)) for _ in xs]
    h = 1e-6
    fd = (f(*(x + h * d for x, d in zip(xs, dz))) - f(*(x - h * d for x, d in zip(xs, dz)))) / (2 * h)
    first_order = sum(np.sum(np.real(g * d)) for g, d in zip(want, dz))     # Re(sum(g dz))
    np.testing.assert_allclose(first_order, fd, rtol=1e-5, atol=1e-7)


@settings(max_examples=50, deadline=None)
@given(complex_programs(), st.integers(0, 2 ** 16))
def test_random_complex_programs_run_in_onnxruntime_as_real_pairs(program, seed):
    rng = np.random.default_rng(seed)
    xs = [rng.uniform(-1, 1, (3, 4)) + 1j * rng.uniform(-1, 1, (3, 4)) for _ in range(program[0])]
    gt = ad.optimize(ad.grad_tape(run_program(program), *xs, argnums=tuple(range(program[0]))))
    for g, w in zip(run_parts(ad.to_onnx(gt, complex_parts=True), *xs), flat_outputs(gt, *xs)):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


# -- serialization ----------------------------------------------------------------------------------

LITERALS = [2 + 1j, -1j, complex(-0.0, 0.0), complex(NAN, INF), complex(-INF, NAN), np.complex64(1.5 - 2j),
            np.complex128(complex(NAN, -0.0)), np.complex64(complex(INF, -INF)),
            np.array([1 + 2j, -0.5j, complex(-0.0, -0.0)]), np.array([1 + 2j, complex(NAN, 1)], np.complex64),
            np.arange(20) * (1 - 1j), np.array([complex(np.float64(NAN).view(np.uint64) + 1, 0)])]


def literal_tape(c):
    return ad.trace(lambda z: z * c, np.full(np.shape(c), 1 + 1j))


def lit_values(tape):
    return [x.value for e in tape.eqns for x in e.inputs if type(x) is ad.Lit]


@pytest.mark.parametrize("c", LITERALS, ids=lambda c: repr(c)[:40])
def test_complex_literals_round_trip_to_the_bit(c):
    tape = literal_tape(c)
    back = loads(dumps(tape))
    (a,), (b,) = lit_values(tape), lit_values(back)
    assert type(a) is type(b) and same_bits(a, b)
    z = np.full(np.shape(c), 1 + 1j)
    with np.errstate(invalid="ignore"):
        assert same_bits(back(z), tape(z))


def test_nan_payloads_survive_in_arrays():
    bits = np.array([0x7FF8000000000123, 0x7FF0000000000001], np.uint64)
    c = bits.view(np.complex128)          # one complex number, both parts NaNs with payloads
    (b,) = lit_values(loads(dumps(literal_tape(c))))
    assert same_bits(b, c)


def test_small_complex_arrays_are_written_as_pairs():
    doc = json.loads(dumps(literal_tape(np.array([1 + 2j, -0.5j], np.complex64))))
    assert doc["literals"][0]["data"] == [[1.0, 2.0], [-0.0, -0.5]]
    doc = json.loads(dumps(literal_tape(np.array([1 + 2j, complex(NAN, 0)]))))
    assert "base64" in doc["literals"][0]                     # non-finite parts: the raw bytes


def test_complex_gradient_tapes_round_trip():
    for gt in (ad.grad_tape(loss, Z), ad.optimize(ad.grad_tape(loss, Z)), ad.grad_tape(loss, Z.astype(np.complex64))):
        back = loads(dumps(gt))
        assert str(back) == str(gt)
        z = Z.astype(gt.inputs[0].aval.dtype)
        for x, y in zip(back(z)[1], gt(z)[1]):
            assert same_bits(x, y)


def doc_with(value):
    """A saved tape whose one inline literal is ``value`` (JSON)."""
    text = dumps(ad.trace(lambda z: z * (2 + 1j), Z))
    assert '{"value": {"complex": [2.0, 1.0]}}' in text
    return text.replace('{"complex": [2.0, 1.0]}', value)


def table_entry(entry: dict):
    text = dumps(literal_tape(np.array([1 + 2j, 3j, 1])))
    doc = json.loads(text)
    doc["literals"][0] = entry
    return json.dumps(doc)


@pytest.mark.parametrize("value, message", [
    ('{"complex": [1, 2, 3]}', "expected a list of 2 items"),
    ('{"complex": "1+2j"}', "expected a list of 2 items"),
    ('{"complex": [true, 0]}', "expected a number"),
    ('{"complex": [{"complex": [1, 2]}, 0]}', "expected a number"),
    ('{"complex": ["1", 0]}', "expected a number"),
    ('{"complex": [[1], 0]}', "expected a value"),
    ('{"complex": [' + "9" * 400 + ', 0]}', "too large for a float"),
    ('{"complex": [{"float": "1e3"}, 0]}', "is not 'inf', '-inf' or 'nan'"),
    ('{"scalar": ["complex128", "1+2j"]}', "expected a number of dtype complex128"),
    ('{"scalar": ["complex64", {"complex": [1e300, 2]}]}', "is not exactly a complex64"),
    ('{"scalar": ["float64", {"complex": [1, 2]}]}', "expected a number of dtype float64"),
    ('{"scalar": ["float64", "nan"]}', "expected a number of dtype float64"),
    ('{"scalar": ["int64", 1.5]}', "expected a number of dtype int64"),
    ('{"scalar": ["complex256", {"complex": [1, 2]}]}', "stored as literals"),
])
def test_malformed_complex_values_are_refused(value, message):
    with pytest.raises(TapeFormatError, match=re.escape(message)):
        loads(doc_with(value))


@pytest.mark.parametrize("data, message", [
    ([1.0, 3.0], "[re, im] pairs"),
    ([[1.0, 2.0], [3.0]], "[re, im] pairs"),
    ([[1.0, 2.0], [True, 3.0]], "[re, im] pairs"),
    ([[1.0, 2.0], ["3", 0]], "[re, im] pairs"),
    ([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "[re, im] pairs"),      # one too many
    ([[1.0, 2.0], [10 ** 400, 0]], "too large for a float"),
])
def test_malformed_complex_arrays_are_refused(data, message):
    with pytest.raises(TapeFormatError, match=re.escape(message)):
        loads(table_entry({"dtype": "complex128", "shape": [3], "data": data + [[0, 1]]}))


def test_a_complex_literal_declared_real_is_refused():
    with pytest.raises(TapeFormatError, match=r"a complex literal declared f64\[\]"):
        loads(doc_with('{"complex": [2.0, 1.0]}, "aval": ["float64", []]'))
    entry = json.loads(dumps(literal_tape(np.array([1 + 2j, 3j, 1]))))["literals"][0]
    with pytest.raises(TapeFormatError, match=r"literals\[0\].aval: a complex literal declared f64\[3\]"):
        loads(table_entry({**entry, "aval": ["float64", [3]]}))


def test_a_complex_payload_is_data_never_code():
    text = doc_with('{"complex": ["__import__(\'os\').system(\'false\')", 0]}')
    with pytest.raises(TapeFormatError, match="expected a number"):
        loads(text)


# -- ONNX ----------------------------------------------------------------------------------------------

def test_onnx_refuses_a_complex_tape_naming_its_first_complex_equation():
    module("onnx")
    x = np.array([1.0, 2.0])

    def f(x):
        y = np.exp(x)
        return np.real(y * (1 + 2j))      # the complex equation
    with pytest.raises(ad.onnx.LoweringError) as info:
        ad.to_onnx(ad.trace(f, x))
    text = str(info.value)
    assert "first complex equation is multiply making %2:c128[2] (equation 1" in text
    assert "test_complex_system.py:" in text and "in f" in text
    assert "ONNX standard operators carry no complex tensors" in text


def test_onnx_refuses_complex_inputs_and_gradient_tapes():
    module("onnx")
    with pytest.raises(ad.onnx.LoweringError, match=r"input z \(%0\) is c128\[3\]"):
        ad.to_onnx(ad.grad_tape(loss, Z))
    with pytest.raises(ad.onnx.LoweringError, match="c64"):
        ad.onnx.export_partition(ad.grad_tape(loss, Z.astype(np.complex64)))


def run_parts(model, *args):
    """Run a complex_parts model in onnxruntime: complex arguments fed as (re, im), outputs
    named ``*_re``/``*_im`` joined again."""
    ort = module("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = [np.asarray(p) for x in args for p in ((x.real, x.imag) if np.iscomplexobj(x) else (x,))]
    outs = session.run(None, dict(zip([i.name for i in session.get_inputs()], feeds)))
    names, joined, k = [o.name for o in session.get_outputs()], [], 0
    while k < len(outs):
        pair = names[k].endswith("_re")
        joined.append(outs[k] + 1j * outs[k + 1] if pair else outs[k])
        k += 2 if pair else 1
    return joined


RNG = np.random.default_rng(0)
ZA = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
XA = RNG.standard_normal((3, 4))
PARTS_PROGRAMS = {
    "loss": lambda z, x: loss(z[:, :3] @ np.ones(3) * 0.3) + np.sum(x),
    "divide": lambda z, x: np.sum(np.real(z / (1 + x * 1j + z * np.conj(z)))),
    "square, where": lambda z, x: np.sum(np.abs(np.where(x > 0, np.square(z), z * 0.5j))),
    "concatenate, roll, cumsum": lambda z, x: np.sum(np.real(np.cumsum(np.roll(np.concatenate(
        [z[:, :2], x[:, 2:]], axis=1), 1, axis=1), axis=0) * (1 - 2j))),
    "einsum, mean, matmul": lambda z, x: np.real(np.mean(np.einsum("ij,kj->ik", z, z)) * 1j)
    + np.sum(np.imag(z.T @ x)),
    "indexing": lambda z, x: np.sum(np.abs(z[::-1, 1:]) ** 2) + np.real(np.sum(z[np.array([2, 0])] * x[:2])),
    "astype": lambda z, x: np.sum(np.real(x.astype(z.dtype) * z) + np.real(z).astype(x.dtype)),
    "full": lambda z, x: np.sum(np.real(np.full_like(z, 2 - 1j) * z + np.zeros_like(z))),
    "sin, cos": lambda z, x: np.sum(np.real(np.sin(z) * np.cos(z * x))),
}


def flat_outputs(tape, *args):
    out = tape(*args)
    out = list(out) if isinstance(out, tuple) else [out]
    return [y for x in out for y in (x if isinstance(x, (tuple, list)) else (x,))]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("name", list(PARTS_PROGRAMS))
def test_complex_tapes_export_as_real_pairs_and_run_in_onnxruntime(name, dtype):
    f = PARTS_PROGRAMS[name]
    z, x = ZA.astype(dtype), XA.astype(np.float32 if dtype == np.complex64 else np.float64)
    gt = ad.grad_tape(f, z, x, argnums=(0, 1))
    for tape in (ad.trace(f, z, x), gt, ad.optimize(gt)):
        got, want = run_parts(ad.to_onnx(tape, complex_parts=True), z, x), flat_outputs(tape, z, x)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == np.asarray(w).dtype
            scale = 1 + np.max(np.abs(w))
            assert np.max(np.abs(g - w)) <= (2e-6 if dtype == np.complex64 else 1e-13) * scale


def test_complex_parts_name_the_inputs_and_outputs():
    model = ad.to_onnx(ad.grad_tape(loss, Z), complex_parts=True)
    assert [i.name for i in model.graph.input] == ["z_re", "z_im"]
    assert [o.name for o in model.graph.output] == ["out0", "grad0_re", "grad0_im"]
    fwd, bwd = ad.onnx.export_partition(ad.grad_tape(loss, Z), complex_parts=True)
    _, want = ad.grad_tape(loss, Z)(Z)
    residuals = run_parts(fwd, Z)[1:]
    np.testing.assert_allclose(run_parts(bwd, *residuals, np.float64(1.0))[0], want, rtol=1e-12)


def test_complex_parts_refuse_what_they_cannot_lower_by_name():
    with pytest.raises(ad.onnx.LoweringError, match=r"no ONNX lowering for tan with complex values \(1x"):
        ad.to_onnx(ad.trace(lambda z: np.tan(z), Z), complex_parts=True)
    with pytest.raises(ad.onnx.LoweringError, match="einsum of 3 operands with complex values"):
        ad.to_onnx(ad.trace(lambda z: np.einsum("i,i,i->", z, z, z), Z), complex_parts=True)


def test_real_and_imag_of_real_arrays_lower_and_run():
    ort = module("onnxruntime")
    x = np.array([[1.0, -2.0], [NAN, INF]])
    f = lambda x: np.real(x) * 2 + np.imag(x) + np.conj(x)   # noqa: E731
    model = ad.to_onnx(ad.trace(f, x))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], f(x))


# -- the graph model and the debugger ------------------------------------------------------------------

def test_summaries_give_magnitude_and_phase():
    s = tapeviz.summarize
    assert s(1 + 1j) == "|z|=1.41 \u222045\u00b0" and s(np.complex64(-2j)) == "|z|=2 \u2220-90\u00b0"
    assert s(0j) == "|z|=0" and s(complex(NAN, 1)) == "|z|=nan"
    assert s(np.array([1 + 1j, -2j, 0])) == "|z|\u2220 [1.41\u222045\u00b0, 2\u2220-90\u00b0, 0]"
    big = np.array([1 + 1j, -2j, 3, 4, complex(INF, 1), complex(NAN, 0)])
    assert s(big) == "|z| in [1.41, 4], \u2220 in [-90\u00b0, 45\u00b0]; 1 nan; 1 +inf"


def test_graph_nodes_and_labels_carry_complex_values():
    gt = ad.grad_tape(loss, Z)
    graph = tapeviz.to_networkx(gt, values=tapeviz.values_of(gt, Z))
    assert graph.nodes["%0"]["value"] == "|z|\u2220 [1.41\u222045\u00b0, 2\u2220-90\u00b0, 0.559\u2220-26.6\u00b0]"
    ct = graph.nodes[repr(gt.outputs[1])]["value"]
    assert ct.startswith("|z|\u2220 [")
    dot = tapeviz.to_graphviz(gt, values=tapeviz.values_of(gt, Z)).source
    assert "1.41\u222045\u00b0" in dot and "with (2-1j)" in dot


def cards(dbg, name):
    dbg.select(name)
    return dbg._inspector.split('<div class="tv-card"')[1:]


def test_debugger_cards_show_complex_values():
    dbg = tapeviz.debug(loss, Z)
    scalar = next(repr(e.outputs[0]) for e in dbg.model.eqns if e.prim.name == "getitem")   # w[0]
    value, cotangent = cards(dbg, scalar)
    w0 = complex(dbg.model.values[scalar])
    assert f'data-value="{w0!r}"' in value
    assert f'<div class="tv-polar">|z| {abs(w0):.4g} \u2220{math.degrees(np.angle(w0)):.4g}\u00b0' in value
    assert f"re {w0.real:.6g}" in value and f"im {w0.imag:.6g}" in value
    assert "<b>\u2220</b>" in value and 'data-role="cotangent"' in cotangent and "tv-polar" in cotangent
    value, _ = cards(dbg, "%0")
    assert value.count("<td") == 3 and "hue: phase" in value and "<b>|z|</b> 0.559 \u2026 2" in value
    assert 'title="[1] = 0-2j (|z| 2 \u2220-90\u00b0)"' in value


def test_complex_statistics_and_heatmap_colours():
    a = np.array([1, 1j, -1, 0, complex(NAN, 1), complex(INF, 0)])
    stats = stats_html(a)
    for cell in ("<b>|z|</b> 0 \u2026 1", "<b>\u2220</b> 0\u00b0 \u2026 180\u00b0", "<b>re</b> -1 \u2026 1",
                 "<b>im</b> 0 \u2026 1", 'class="tv-bad"><b>NaN</b> 1', 'class="tv-bad"><b>Inf</b> 1'):
        assert cell in stats, cell
    heat = heatmap_html(a)
    colours = re.findall(r'background:(#[0-9a-f]{6})', heat)
    # phase 0 red, 90 degrees chartreuse, 180 degrees cyan, 0 white; NaN magenta, Inf black
    assert colours == ["#ff0000", "#80ff00", "#00ffff", "#ffffff", "#d946ef", "#111827"]
    assert heat.count('class="tv-nan"') == 1 and heat.count('class="tv-inf"') == 1


def test_complex_cards_escape_names():
    hostile = '<b>&"x{|}'
    dbg = tapeviz.debug(lambda p: np.real(p[hostile] * (1 - 2j)), {hostile: np.complex128(1 + 1j)})
    dbg.select("%0")
    page = dbg._inspector
    assert hostile not in page and "&lt;b&gt;&amp;&quot;x{|}" in page
    assert '<div class="tv-polar">|z| 1.414 \u222045\u00b0' in page


def test_a_static_page_carries_the_complex_cards():
    from tapeviz.debugger.page import session
    dbg = tapeviz.debug(loss, Z)
    data = session(dbg)
    polar = [h for h in data["html"] if "tv-polar" in h]
    assert polar and all("\u2220" in h for h in polar)
    assert any("|z|\u2220 [" in d for d in data["dots"])


@pytest.mark.browser
def test_the_static_page_shows_a_complex_card_in_the_browser(tmp_path, browser):
    from playwright.sync_api import expect
    dbg = tapeviz.debug(loss, Z)
    scalar = next(repr(e.outputs[0]) for e in dbg.model.eqns if e.prim.name == "getitem")
    eq = dbg.model.producer_index[scalar]
    path = dbg.to_html(tmp_path / "complex.html")
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    root = page.locator(".tv-root")
    root.locator(f'.tv-listing td.tv-forward .tv-eq[data-eq="{eq}"] .tv-n').click()
    expect(root.locator(".tv-value")).to_have_attribute("data-var", scalar)
    w0 = complex(dbg.model.values[scalar])
    card = root.locator('.tv-value .tv-card[data-role="value"]')
    expect(card.locator(".tv-polar")).to_contain_text(f"|z| {abs(w0):.4g} \u2220")
    expect(card.locator(".tv-scalar")).to_have_text(f"{w0.real:.6g}{w0.imag:+.6g}j")
    root.locator('.tv-listing td.tv-forward .tv-eq[data-eq="0"] .tv-n').click()
    expect(root.locator(".tv-value .tv-heat").first.locator("td").first).to_have_attribute(
        "title", re.compile("\u2220"))
    assert not errors
    page.close()
