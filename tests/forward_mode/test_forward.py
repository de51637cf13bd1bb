"""Forward mode (ad.forward_mode.pushforward): jvp against finite differences on every primitive's samples and
every composition (tests/support/cases.py), real and complex; the three forms agree; against torch.func.jvp
and jax.jvp; linearize's tangent tape printed, optimised, compiled, saved and loaded; hand-written
frules; the MLP and CNN tangent tapes made of derived pushforwards with no fallback; generated
programs (hypothesis)."""
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ad
import ad.examples.networks as nnx
from ad.checks.fd import directional_derivative, random_like
from ad.checks.settings import fd_rtol
from ad.examples import mlp_example, mlp_loss, mlp_loss_for
from ad.forward_mode.pushforward import clear_cache, derive, pushforward
from ad.reverse_mode.lift import lift
from ad.samples import C128
from ad.tape import Var, eval_tape
from tests.support.cases import CASES, PRIMITIVE_CASES, leaves
from tests.support.generated_programs import GENERATED, SETTINGS, build, program_inputs, scalar
from tests.support.needs import module


def _params(cases, dtype=None):
    return [pytest.param(c, c.sample.shapes[0], id=f"{c.name}-{c.sample.shapes[0]}") for c in cases
            if any(i.kind == "float" for i in c.sample.inputs)
            and (dtype is None or c.primitive is not None and c.primitive.complex_rule)]


def _rng(*parts):
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def _float_positions(xs):
    return [k for k, x in enumerate(xs) if np.issubdtype(np.result_type(x), np.inexact)]


def _jvp_or_refusal(case, xs, tangents, form="lifted"):
    """``ad.jvp``'s answer, or its refusal (None) where a rule has no pushforward: it runs as a
    closure (an opaque fallback), or its pullback can be neither transposed nor differentiated
    (odeint's); the refusal names the rule."""
    try:
        return ad.jvp(case.fn, tuple(xs), tuple(tangents), form=form)
    except ad.NonDifferentiableError as exc:
        assert "no pushforward for" in str(exc) or "not supported" in str(exc) or "closures" in str(exc), exc
        return None


def _check_jvp(case, shape, dtype):
    rng = _rng(case.name, shape, dtype)
    xs = case.inputs(shape, rng, dtype or case.sample.dtypes[0])
    pos = _float_positions(xs)
    us = [random_like(xs[k], rng).astype(np.result_type(xs[k])) for k in pos]
    tangents = [None] * len(xs)
    for k, u in zip(pos, us):
        tangents[k] = u
    answer = _jvp_or_refusal(case, xs, tangents)
    if answer is None:
        return
    y, ty = answer
    floats_out = [k for k, leaf in enumerate(leaves(y)) if np.issubdtype(np.result_type(leaf), np.inexact)]

    def f(*fx):
        args = list(xs)
        for k, v in zip(pos, fx):
            args[k] = v
        out = leaves(case.fn(*args))
        return [out[k] for k in floats_out]
    est = directional_derivative(f, [xs[k] for k in pos], us, domains=[case.domains[k] for k in pos]
                                 if len(case.domains) == len(xs) else None)
    assert est.converged, f"finite differences did not converge (error {est.error:.2e})"
    got = np.concatenate([np.concatenate([np.ravel(np.real(t)), np.ravel(np.imag(t))])
                          if np.iscomplexobj(leaves(y)[k]) else np.ravel(t)
                          for k, t in ((k, leaves(ty)[k]) for k in floats_out)] or [np.zeros(0)])
    rtol = fd_rtol([np.result_type(v) for v in (*xs, *leaves(y))])
    scale = max(1.0, float(np.max(np.abs(est.value), initial=0.0)))
    np.testing.assert_allclose(got, est.value, rtol=0, atol=rtol * scale + 10 * est.error)


@pytest.mark.parametrize("case,shape", _params(CASES))
def test_jvp_matches_finite_differences(case, shape):
    _check_jvp(case, shape, None)


@pytest.mark.parametrize("case,shape", _params(PRIMITIVE_CASES, C128))
def test_complex_jvp_matches_finite_differences(case, shape):
    """Complex tangents t = dx + i dy of complex operands, per the convention of docs/complex.md."""
    _check_jvp(case, shape, C128)


@pytest.mark.parametrize("case,shape", _params(PRIMITIVE_CASES))
def test_forms_agree(case, shape):
    """closure (the vjp of each pullback closure, eagerly), lifted (transposed templates) and
    compiled give the same tangent (an opaque rule's closure can be pushed forward eagerly
    only: the lifted forms refuse it, naming it)."""
    rng = _rng(case.name, "forms")
    xs = case.inputs(shape, rng, case.sample.dtypes[0])
    tangents = tuple(random_like(x, rng).astype(np.result_type(x))
                     if np.issubdtype(np.result_type(x), np.inexact) else None for x in xs)
    answer = _jvp_or_refusal(case, xs, tangents, "closure")
    for form in ("lifted", "compiled"):
        got = _jvp_or_refusal(case, xs, tangents, form)
        if got is None:         # the closure form may answer more: it runs the rules' closures
            continue
        assert answer is not None, f"the closure form refuses what {form} answers"
        ref, got = answer[1], got[1]
        for r, g in zip(leaves(ref), leaves(got)):
            if r is None:
                assert g is None
                continue
            tol = 1e-5 if np.result_type(r) in (np.float32, np.complex64) else 1e-10
            np.testing.assert_allclose(g, r, rtol=tol, atol=tol, err_msg=form)
            assert np.result_type(g) == np.result_type(r)


def test_pushforwards_of_the_registry_are_transposed_pullbacks():
    """Every rule's pullback transposes, but for the primitives listed here with their reason;
    their pushforward is the vjp of the pullback, flagged."""
    vjp_of_pullback = {
        "scipy.linalg.expm": "the pullback is an expm of a block matrix: linear in the cotangent, "
                             "but no transpose rule says so",
        "scipy.signal.convolve": "convolve is bilinear but ad/scipy/signal.py does not declare "
                                 "multilinear_in=(0, 1) yet",
        "eig": "phase_free (ad/lib/linalg.py) returns its operand but is not declared linear_in=(0,) yet",
    }
    transposed, flagged = set(), {}
    for case in PRIMITIVE_CASES:
        p = case.primitive
        if p.rule is None or not p.differentiable:
            continue
        rng = _rng(case.name, "templates")
        xs = case.inputs(case.sample.shapes[0], rng, case.sample.dtypes[0])
        tape = ad.trace(case.fn, *xs)
        env = {}
        eval_tape(tape, tape.flatten_args(tuple(xs)), env)
        for e in tape.eqns:
            needs = tuple(type(x) is Var and x.aval.is_float for x in e.inputs)
            if e.prim is not p or not any(needs):
                continue
            values = [env[x] if type(x) is Var else x.value for x in e.inputs]
            if lift(p, e.params, values, needs, e.source).fallback:
                continue
            try:
                pf = pushforward(p, e.params, values, needs, e.source)
            except ad.NonDifferentiableError as exc:
                flagged[p.name] = str(exc)
                continue
            if pf.fallback:
                flagged[p.name] = pf.fallback
            else:
                transposed.add(p.name)
    unexpected = {k: v for k, v in flagged.items() if k not in vjp_of_pullback and k != "scipy.integrate.odeint"}
    assert not unexpected, unexpected
    assert len(transposed) > 120


def test_linearize_tape_prints_optimises_compiles_and_runs():
    W, x = np.random.default_rng(0).standard_normal((3, 4)), np.ones(4)
    f = lambda W, x: np.tanh(W @ x)            # noqa: E731
    y, f_jvp = ad.linearize(f, W, x)
    np.testing.assert_allclose(y, f(W, x))
    tW, tx = np.ones((3, 4)), np.arange(4.0)
    want = (1 - np.tanh(W @ x) ** 2) * (tW @ x + W @ tx)
    np.testing.assert_allclose(f_jvp(tW, tx), want)
    text = str(f_jvp.tape)
    assert "pushforward of" in text and "(tanh), from its pullback" in text and "(matmul)" in text
    ad.validate(f_jvp.tape)
    compiled = ad.compile(f_jvp.tape)
    (got,) = compiled.call_flat(list(f_jvp.residuals) + [tW, tx])
    np.testing.assert_allclose(got, want)
    _, f_c = ad.linearize(f, W, x, form="compiled")
    np.testing.assert_allclose(f_c(tW, tx), want)
    assert f_jvp.fallbacks == ()
    (w_only,) = [ad.linearize(f, W, x, argnums=0)[1]]
    np.testing.assert_allclose(w_only(tW), (1 - np.tanh(W @ x) ** 2) * (tW @ x))


def test_linearize_tape_saves_and_loads(tmp_path):
    _, f_jvp = ad.linearize(lambda x: np.sin(x) * np.exp(x), np.ones(3))
    path = tmp_path / "tangent.json"
    ad.save(f_jvp.tape, path)
    loaded = ad.load(path)
    t = np.arange(3.0)
    np.testing.assert_allclose(loaded(*f_jvp.residuals, t)[0], f_jvp(t))
    assert [e.origin.describe() for e in loaded.eqns] == [e.origin.describe() for e in f_jvp.tape.eqns]


def test_pytrees_none_tangents_and_integer_outputs():
    params = {"a": np.ones(2), "b": 3.0}

    def f(p, x, n):
        return {"y": p["a"] * x ** n + p["b"], "k": np.argmax(x)}
    x = np.array([1.0, 2.0])
    y, ty = ad.jvp(f, (params, x, 2), ({"a": np.ones(2), "b": None}, None, None))
    np.testing.assert_allclose(ty["y"], x ** 2)
    assert ty["k"] is None and y["k"] == 1
    with pytest.raises(TypeError, match="structure"):
        ad.jvp(f, (params, x, 2), ([np.ones(2)], None, None))
    with pytest.raises(ValueError, match="shape"):
        ad.jvp(f, (params, x, 2), (None, np.ones(3), None))
    with pytest.raises(TypeError, match="complex tangent"):
        ad.jvp(f, (params, x, 2), (None, np.ones(2) * 1j, None))


def test_complex_holomorphic_and_not():
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    t = np.array([0.3 - 1.0j, 1.0 + 0.5j])
    _, tz = ad.jvp(lambda z: z ** 3, (z,), (t,))
    np.testing.assert_allclose(tz, 3 * z ** 2 * t)                    # f'(z) t
    _, tr = ad.jvp(lambda z: np.abs(z) ** 2, (z,), (t,))
    np.testing.assert_allclose(tr, 2 * np.real(np.conj(z) * t))       # a real tangent
    _, tc = ad.jvp(lambda z: np.conj(z) * 2.0, (z,), (t,), form="closure")
    np.testing.assert_allclose(tc, 2 * np.conj(t))


def test_frule_by_hand_agrees_with_the_derived_pushforward():
    cube = ad.primitive(lambda x: x * x * x, name="test_forward_cube")
    ad.rrule(cube)(lambda x: (cube(x), lambda dy: (3 * x * x * dy,)))
    x, t = np.array([1.0, -2.0]), np.array([0.5, 1.0])
    _, derived = ad.jvp(cube, (x,), (t,))
    _, f_jvp = ad.linearize(cube, x)
    assert "from its pullback" in str(f_jvp.tape)

    @ad.frule(cube)
    def cube_frule(x):
        return cube(x), lambda dx: 3 * x * x * dx
    for form in ("lifted", "closure", "compiled"):
        _, by_hand = ad.jvp(cube, (x,), (t,), form=form)
        np.testing.assert_allclose(by_hand, derived)
    _, f_jvp = ad.linearize(cube, x)
    assert "(test_forward_cube), its frule" in str(f_jvp.tape)


def test_a_rule_without_a_transposable_pullback_falls_back_flagged():
    """The pullback calls a primitive not declared linear: the vjp of the pullback, flagged;
    declared, the same pullback transposes."""
    scale = ad.primitive(lambda x: 2.0 * x, name="test_forward_scale")
    twice = ad.primitive(lambda g: 2.0 * g, name="test_forward_twice")   # linear, undeclared
    ad.rrule(twice)(lambda g: (twice(g), lambda dy: (twice(dy),)))
    ad.rrule(scale)(lambda x: (scale(x), lambda dy: (twice(dy),)))
    _, f_jvp = ad.linearize(lambda x: np.sin(scale(x)), np.ones(2))
    np.testing.assert_allclose(f_jvp(np.ones(2)), 2 * np.cos(2.0))
    assert [f.rule for f in f_jvp.fallbacks] == ["test_forward_scale"]
    assert "test_forward_twice is not declared linear" in f_jvp.fallbacks[0].reason
    assert "(test_forward_scale), by the vjp of its pullback" in str(f_jvp.tape)
    declared = ad.primitive(lambda g: 2.0 * g, name="test_forward_twice_declared", linear_in=(0,))
    ad.rrule(declared)(lambda g: (declared(g), lambda dy: (declared(dy),)))
    ad.rrule(scale)(lambda x: (scale(x), lambda dy: (declared(dy),)))
    _, f_jvp = ad.linearize(lambda x: np.sin(scale(x)), np.ones(2))
    np.testing.assert_allclose(f_jvp(np.ones(2)), 2 * np.cos(2.0))
    assert f_jvp.fallbacks == () and "(test_forward_scale), from its pullback" in str(f_jvp.tape)


def test_mlp_and_cnn_tangent_tapes_are_derived_pushforwards():
    params, x, y = mlp_example()
    _, f_jvp = ad.linearize(mlp_loss, params, x, y, argnums=0)
    kinds = {e.origin.kind for e in f_jvp.tape.eqns}
    assert f_jvp.fallbacks == () and "pushforward" in kinds and not kinds & {"pushforward_vjp"}
    assert "(tanh), from its pullback" in str(f_jvp.tape) and "(matmul), from its pullback" in str(f_jvp.tape)
    t = {k: np.ones_like(v) for k, v in params.items()}
    g = ad.grad(mlp_loss)(params, x, y)
    np.testing.assert_allclose(f_jvp(t), sum(np.sum(g[k]) for k in g), rtol=1e-10)

    rng = np.random.default_rng(0)
    cnn = nnx.init_params(rng, channels=(2, 3))
    images = rng.uniform(size=(4, 1, 8, 8))
    labels = np.eye(10)[rng.integers(0, 10, 4)]
    _, c_jvp = ad.linearize(nnx.loss, cnn, images, labels, argnums=0)
    kinds = {e.origin.kind for e in c_jvp.tape.eqns}
    assert c_jvp.fallbacks == () and "pushforward" in kinds and not kinds & {"pushforward_vjp"}
    derived = {e.origin.rule for e in c_jvp.tape.eqns if e.origin.kind == "pushforward"}
    assert {"im2col", "max_pool", "relu", "log_softmax", "matmul"} <= derived, derived
    t = {k: rng.standard_normal(v.shape) for k, v in cnn.items()}
    g = ad.grad(nnx.loss)(cnn, images, labels)
    np.testing.assert_allclose(c_jvp(t), sum(np.sum(g[k] * t[k]) for k in g), rtol=1e-9)


def test_jvp_of_a_gradient_is_a_hessian_vector_product():
    f = lambda x: np.sum(np.sin(x) * x ** 2)          # noqa: E731
    x, v = np.array([0.3, -1.2, 2.0]), np.array([1.0, 0.5, -0.25])
    _, hv = ad.jvp(ad.grad(f), (x,), (v,))
    diag = 2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x)
    np.testing.assert_allclose(hv, diag * v, rtol=1e-10)


# -- other systems ---------------------------------------------------------------------------

PROGRAMS = {
    "tanh_matmul": (lambda m, W, x: m.tanh(x @ W) ** 2, ((3, 4), (5, 3))),
    "exp_sin_cos": (lambda m, a, b: m.exp(m.sin(a)) * m.cos(b), ((4,), (4,))),
    "softmax": (lambda m, a, b: m.exp(a * b) / m.sum(m.exp(a * b)), ((2, 3), (2, 3))),
    "log_mean": (lambda m, a, b: m.log(1 + a ** 2) + m.mean(b * a), ((3, 3), (3, 3))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_torch_func_jvp(name):
    torch = module("torch")
    fn, shapes = PROGRAMS[name]
    rng = _rng(name, "torch")
    xs = [rng.standard_normal(s) for s in shapes]
    ts = [rng.standard_normal(s) for s in shapes]
    y, ty = ad.jvp(lambda *a: fn(np, *a), tuple(xs), tuple(ts))
    ry, rty = torch.func.jvp(lambda *a: fn(torch, *a), tuple(map(torch.tensor, xs)), tuple(map(torch.tensor, ts)))
    np.testing.assert_allclose(y, ry.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ty, rty.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_jax_jvp(name):
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    fn, shapes = PROGRAMS[name]
    rng = _rng(name, "jax")
    xs = [rng.standard_normal(s) for s in shapes]
    ts = [rng.standard_normal(s) for s in shapes]
    _, ty = ad.jvp(lambda *a: fn(np, *a), tuple(xs), tuple(ts), form="compiled")
    _, rty = jax.jvp(lambda *a: fn(jnp, *a), tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, ts)))
    np.testing.assert_allclose(ty, np.asarray(rty), rtol=1e-10, atol=1e-12)


def test_mlp_against_jax():
    jax = module("jax")
    jax.config.update("jax_enable_x64", True)
    params, x, y = mlp_example()
    t = {k: np.full_like(v, 0.1) for k, v in params.items()}
    _, ty = ad.jvp(mlp_loss, (params, x, y), (t, None, None))
    jloss = mlp_loss_for(jax.numpy)
    _, rty = jax.jvp(lambda p: jloss(p, x, y), (params,), (t,))
    np.testing.assert_allclose(ty, float(rty), rtol=1e-10)


# -- generated programs ----------------------------------------------------------------------

@SETTINGS
@given(GENERATED, st.integers(0, 2**16))
def test_random_programs_forms_gradients_and_finite_differences(program, seed):
    """jvp in three forms, against <grad, u> and finite differences."""
    f = scalar(build(program, np), np)
    xs = program_inputs(seed)
    rng = np.random.default_rng(seed)
    us = (rng.standard_normal(xs[0].shape), rng.standard_normal(xs[1].shape))
    _, ref = ad.jvp(f, xs, us, form="closure")
    for form in ("lifted", "compiled"):
        _, got = ad.jvp(f, xs, us, form=form)
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    grads = ad.grad(f, (0, 1))(*xs)
    want = sum(float(np.dot(g, u)) for g, u in zip(grads, us))
    assert abs(float(ref) - want) <= 1e-10 * max(1.0, abs(want))
    est = directional_derivative(f, xs, us)
    assert abs(float(ref) - float(est.value[0])) <= 1e-6 * max(1.0, abs(want)) + 10 * est.error
    _, f_jvp = ad.linearize(f, *xs)
    ad.validate(f_jvp.tape)
    assert f_jvp.fallbacks == ()


def test_a_rule_running_as_a_closure_is_pushed_forward_by_the_vjp_of_its_closure():
    """A pullback that looks at its cotangent cannot be lifted (an opaque pair): its pushforward
    is the vjp of the closure, taken at run time, and flagged."""
    double = ad.primitive(lambda x: 2.0 * x, name="test_forward_opaque_double")

    @ad.rrule(double)
    def double_rule(x):
        def pullback(dy):
            if np.any(np.isnan(dy)):          # a branch on the cotangent's value
                raise ValueError("a nan cotangent")
            return (2.0 * dy,)
        return double(x), pullback
    x, t = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    _, f_jvp = ad.linearize(lambda x: np.sin(double(x)), x)
    want = np.cos(2 * x) * 2 * t
    np.testing.assert_allclose(f_jvp(t), want)
    assert [f.rule for f in f_jvp.fallbacks] == ["test_forward_opaque_double"]
    assert "runs as a closure" in f_jvp.fallbacks[0].reason
    assert "by the vjp of its pullback" in str(f_jvp.tape)
    for form in ("closure", "compiled"):
        np.testing.assert_allclose(ad.jvp(lambda x: np.sin(double(x)), (x,), (t,), form=form)[1], want)


def test_pushforward_templates_evaluate_and_agree_with_a_frule():
    """The checker's view: a hand-written frule's template and the derived one, at the same point."""
    square = ad.primitive(lambda x: x * x, name="test_forward_square")
    ad.rrule(square)(lambda x: (square(x), lambda dy: (2 * x * dy,)))
    ad.frule(square)(lambda x: (square(x), lambda dx: 2 * x * dx))
    x, t = np.array([1.0, -3.0]), np.array([2.0, 0.5])
    by_hand = pushforward(square.primitive, (), [x], (True,))
    derived = derive(lift(square.primitive, (), [x], (True,)), [x])
    assert (by_hand.kind, derived.kind) == ("pushforward_frule", "pushforward")
    (y1,), (t1,) = by_hand.evaluate([x], [t])
    (y2,), (t2,) = derived.evaluate([x], [t])
    np.testing.assert_allclose(y1, x * x)
    np.testing.assert_allclose(t1, 2 * x * t)
    np.testing.assert_allclose(t2, t1)


def test_pushforward_templates_are_cached_per_rule_and_avals():
    clear_cache()
    tanh = ad.primitives.lookup(np.tanh)
    x = np.ones(3)
    first = pushforward(tanh, (), [x], (True,))
    assert pushforward(tanh, (), [np.zeros(3)], (True,)) is first          # same avals: a hit
    assert pushforward(tanh, (), [np.ones(4)], (True,)) is not first       # other avals
    with ad.using_rule(np.tanh, lambda x: (np.tanh(x), lambda dy: (dy * (1 - np.tanh(x) ** 2),))):
        assert pushforward(tanh, (), [x], (True,)) is not first            # a new rule re-derives
    assert first.kind == "pushforward" and first.fallback is None


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_single_precision_stays_single(dtype):
    x = np.array([0.5, -1.0, 2.0], dtype)
    for form in ("lifted", "closure", "compiled"):
        y, t = ad.jvp(lambda x: np.exp(x) * np.sum(x * x), (x,), (np.ones(3, dtype),), form=form)
        assert y.dtype == dtype and t.dtype == dtype, form
        np.testing.assert_allclose(t, np.exp(x) * (np.sum(x * x) + 2 * np.sum(x)), rtol=1e-5)


def test_a_tangent_tape_exports_to_onnx_and_runs_in_onnxruntime():
    """Tangent tapes are ordinary tapes: ad.to_onnx exports them like gradient tapes."""
    ort = module("onnxruntime")
    x, w = np.ones(3), np.arange(6.0).reshape(2, 3) / 6
    _, f_jvp = ad.linearize(lambda x, w: np.sum(np.tanh(w @ x)), x, w)
    session = ort.InferenceSession(ad.to_onnx(f_jvp.tape).SerializeToString())
    tangents = [np.array([1.0, -2.0, 0.5]), np.ones((2, 3))]
    feed = dict(zip([i.name for i in session.get_inputs()], [*f_jvp.residuals, *tangents]))
    np.testing.assert_allclose(session.run(None, feed)[0], f_jvp(*tangents), rtol=1e-13)


def test_a_one_shot_jvp_computes_the_primal_once():
    """While tracing: building the tangent tape takes the traced values (the point the rules are
    lifted at, and the residuals) instead of running the forward section again."""
    calls = []

    def impl(x):
        calls.append(1)
        return np.sin(x)
    counted = ad.primitive(impl, name="test_forward_counted_sin")
    ad.rrule(counted)(lambda x: (counted(x), lambda dy: (dy * np.cos(x),)))
    x, t = np.array([0.1, 0.2]), np.array([1.0, -1.0])
    ad.jvp(lambda x: counted(x) * 2.0, (x,), (t,))        # lifts the rule (once: templates are cached)
    calls.clear()
    y, ty = ad.jvp(lambda x: counted(x) * 2.0, (x,), (t,))
    np.testing.assert_allclose(ty, 2.0 * np.cos(x) * t)
    np.testing.assert_allclose(y, 2.0 * np.sin(x))
    assert len(calls) == 1
    jac = ad.jacfwd(lambda x: counted(x) * 2.0)
    jac(x)
    calls.clear()
    jac(x)                                                # a cached tape runs its forward tape once
    assert len(calls) == 1
