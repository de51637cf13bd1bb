"""Which numpy names ad differentiates, and why the others are not: the one place that classifies
every public callable of ``np``, ``np.linalg``, ``np.fft`` and every ufunc (issue 13's sweep).

Classes, read from the dispatch tables where they can be:

* ``rule``: a handler in ``FUNCTIONS`` / ``UFUNCS`` (a primitive with a rule, or a composition);
* ``numpy``: no handler, but numpy's own implementation runs on tracers (it calls only covered
  functions: ``np.fix``, ``np.rollaxis``...);
* ``not applicable``: nothing to differentiate (I/O, dtype introspection, integer results...),
  with the reason in ``NOT_APPLICABLE``;
* ``missing``: differentiable, no handler yet, with the reason in ``MISSING``.

``complex_markdown`` lists which differentiable primitives take complex operands (a rule declared
``complex_rule`` and checked by tests/lib/test_complex.py) and which refuse them, and why.

``linear_markdown`` lists how forward mode gets each registered primitive's pushforward
(docs/forward.md): the primitives declared linear (``linear_in`` / ``multilinear_in``, transposed
by their own pullbacks and checked by the dot-product test), and every other one as not linear,
with its pushforward derived by transposing its pullback, as the vjp of its pullback (a flagged
fallback), by hand (``@ad.frule``), or refused. It reads the registry after loading ``ad.nn``
and ``ad.scipy``, and runs forward mode, so this module is a consumer of the transformations
(docs/architecture.md), not a rule module.

``batching_markdown`` lists how ``ad.vmap`` batches each primitive: by a rule derived from its
traits, by a rule of its own, or by the loop over the batch (``ad.batching``).

``python -m ad.checktools.coverage`` prints the markdown of docs/coverage.md's generated sections;
tests/checktools/test_coverage.py fails when a name changes class without this file being updated.
"""
from __future__ import annotations

import numpy as np

from .. import nn  # noqa: F401  (ad.nn's and ad.scipy's primitives join the registry)
from ..batching import how_batched
from ..tracing import trace
from ..dispatch import FUNCTIONS, UFUNC_METHODS, UFUNCS, public_name
from ..errors import NonDifferentiableError
from ..forward_mode.pushforward import pushforward
from ..primitives import REGISTRY
from ..samples import C128, caller, draw, operands
from ..scipy import integrate, linalg, signal, special, stats  # noqa: F401
from ..tape import Var, eval_tape


def _by_reason(table: dict[str, str]) -> dict[str, str]:
    """{reason: "name name ..."} -> {name: reason}."""
    return {name: reason for reason, names in table.items() for name in names.split()}


NUMPY_IMPLEMENTED = set(
    "fix flatnonzero iscomplexobj isrealobj isneginf isposinf put_along_axis resize result_type "
    "rollaxis row_stack logspace tril_indices_from triu_indices_from diag_indices_from ix_ "
    "fft.fftfreq fft.rfftfreq".split())

NOT_APPLICABLE = _by_reason({
    "I/O and buffers": "load loadtxt save savetxt savez savez_compressed genfromtxt fromfile fromregex "
                       "frombuffer fromstring from_dlpack",
    "printing and string formatting": "array2string array_repr array_str base_repr binary_repr "
                                      "format_float_positional format_float_scientific typename info "
                                      "set_printoptions get_printoptions printoptions",
    "configuration of numpy itself": "get_include show_config show_runtime test getbufsize setbufsize geterr "
                                     "seterr geterrcall seterrcall linalg.test fft.test",
    "dtype and shape introspection (no array values)": "can_cast common_type isdtype issubdtype min_scalar_type "
                                                       "mintypecode promote_types broadcast_shapes isscalar iterable",
    "memory layout, identity, matrix subclass": "isfortran may_share_memory shares_memory require asmatrix bmat "
                                                "nested_iters",
    "dates and business days": "busday_count busday_offset datetime_as_string datetime_data is_busday isnat",
    "integer index generators (integer results)": "diag_indices indices mask_indices tril_indices triu_indices "
                                                  "ravel_multi_index unravel_index lexsort",
    "window functions of an integer length": "bartlett blackman hamming hanning kaiser",
    "integer operations (integer results)": "packbits unpackbits gcd lcm",
    "set operations, counting, histograms (integer or boolean results, data-dependent shapes)":
        "intersect1d setdiff1d setxor1d union1d isin unique unique_all unique_counts unique_inverse "
        "unique_values bincount digitize histogram histogram2d histogramdd histogram_bin_edges",
    "a contraction plan, not values": "einsum_path",
})

MISSING = _by_reason({
    "no handler yet (roots: eigenvalues of the companion matrix; sort_complex: a lexicographic sort)": "roots sort_complex",
    "calls a Python function on concrete slices or elements": "apply_along_axis apply_over_axes piecewise "
                                                             "frompyfunc fromfunction fromiter",
    "no handler yet; a composition of covered functions is possible": "geomspace i0 unwrap polyfit "
                                                                      "poly polyadd polysub polymul polydiv "
                                                                      "polyder polyint",
    "data-dependent output shape": "trim_zeros",
    "in-place writer without a handler (rewrite: np.copyto(a, v, where=mask))": "putmask",
    "checks the values with a plain-array conversion (rewrite: np.asarray, then a guard on "
    "np.all(np.isfinite(a)))": "asarray_chkfinite",
})


def _public(module, prefix: str) -> dict[str, object]:
    return {prefix + n: getattr(module, n) for n in dir(module)
            if not n.startswith("_") and callable(getattr(module, n)) and not isinstance(getattr(module, n), type)}


def public() -> dict[str, object]:
    """Every public callable of ``np`` (ufuncs included), ``np.linalg`` and ``np.fft``, by name
    (``linalg.x``, ``fft.x``)."""
    return _public(np, "") | _public(np.linalg, "linalg.") | _public(np.fft, "fft.")


def classify(name: str, f) -> tuple[str, str]:
    """(class, reason) of one public numpy name."""
    if f in FUNCTIONS or (isinstance(f, np.ufunc) and f in UFUNCS):
        return "rule", ""
    if name in NUMPY_IMPLEMENTED:
        return "numpy", "numpy's own implementation runs on tracers"
    if name in NOT_APPLICABLE:
        return "not applicable", NOT_APPLICABLE[name]
    if name in MISSING:
        return "missing", MISSING[name]
    return "unclassified", "add it to ad/checktools/coverage.py"


def sweep() -> dict[str, tuple[str, str]]:
    return {name: classify(name, f) for name, f in sorted(public().items())}


def supported() -> dict[str, list[str]]:
    """{numpy namespace: sorted names}: ufuncs, ufunc methods and functions with a handler."""
    numpy_ufuncs = {public_name(u) for u in UFUNCS} - {n for n in map(public_name, UFUNCS) if not n.startswith("np.")}
    groups: dict[str, set[str]] = {"ufuncs": numpy_ufuncs,
                                   "ufunc methods": {f"np.{u.__name__}.{m}" for u, m in UFUNC_METHODS}}
    for f in FUNCTIONS:
        name = public_name(f)
        if name.startswith("np."):      # scipy's names: ad.scipy's own tables (loaded lazily)
            groups.setdefault(name.rpartition(".")[0] + " functions", set()).add(name)
    return {k: sorted(v) for k, v in sorted(groups.items())}


def _reasons(cls: str, classes) -> list[str]:
    by_reason: dict[str, list[str]] = {}
    for name, (c, reason) in classes.items():
        if c == cls:
            by_reason.setdefault(reason, []).append(f"`np.{name}`")
    return ["| reason | functions |", "| --- | --- |"] + [f"| {r} | {', '.join(ns)} |" for r, ns in by_reason.items()]


def sweep_markdown() -> str:
    """The sweep's section of docs/coverage.md: the count per class, the missing and the not
    applicable names with their reasons."""
    classes = sweep()
    counts = {c: sum(1 for k, _ in classes.values() if k == c) for c in
              ("rule", "numpy", "not applicable", "missing", "unclassified")}
    lines = [f"Public callables of `np`, `np.linalg` and `np.fft` (ufuncs included): {len(classes)}. "
             f"With a rule or a composition: {counts['rule']}; through numpy's own implementation: "
             f"{counts['numpy']}; not applicable: {counts['not applicable']}; missing: {counts['missing']}"
             + (f"; unclassified: {counts['unclassified']}" if counts["unclassified"] else "") + ".",
             "", "#### Missing (differentiable, no rule yet)", ""] + _reasons("missing", classes)
    lines += ["", "#### Not applicable (nothing to differentiate)", ""] + _reasons("not applicable", classes)
    return "\n".join(lines) + "\n"


def markdown() -> str:
    lines = []
    for group, names in supported().items():
        lines += [f"#### {group} ({len(names)})", "", ", ".join(f"`{n}`" for n in names), ""]
    return "\n".join(lines)


def _numpy_takes_complex(prim) -> bool:
    """Whether numpy itself computes the primitive on complex operands (its first sample's)."""
    sample = prim.samples[0]
    try:
        caller(prim, sample)(*draw(sample.inputs, np.random.default_rng(0), sample.shapes[-1], C128))
    except (TypeError, ValueError, np.linalg.LinAlgError):
        return False
    return True


def complex_classes() -> dict[str, list[str]]:
    """{class: sorted primitive names} for every differentiable primitive of numpy and ad.nn with
    samples (ad.scipy's, loaded lazily, all refuse complex operands): ``rule``
    (its rule takes complex operands), ``numpy refuses`` (numpy has no complex version), ``refused``
    (numpy computes it; ad refuses its gradient with complex values until a rule is written)."""
    classes: dict[str, list[str]] = {"rule": [], "numpy refuses": [], "refused": []}
    for name, prim in sorted(REGISTRY.items()):
        if prim.differentiable and prim.kind == "pure" and prim.samples and not name.startswith("scipy."):
            cls = "rule" if prim.complex_rule else "refused" if _numpy_takes_complex(prim) else "numpy refuses"
            classes[cls].append(name)
    return classes


def complex_markdown() -> str:
    titles = {"rule": "With a complex rule (checked by tests/lib/test_complex.py)",
              "numpy refuses": "No complex version in numpy (ad refuses complex operands too)",
              "refused": "Refused: numpy computes them on complex operands, ad refuses their gradient "
                         "(no rule checked for complex numbers yet; or, for max, min, maximum, "
                         "minimum, clip and relu, numpy's lexicographic order of complex numbers)"}
    lines = []
    for cls, names in complex_classes().items():
        lines += [f"#### {titles[cls]} ({len(names)})", "", ", ".join(f"`{n}`" for n in names) or "(none)", ""]
    return "\n".join(lines)


# -- linearity and forward mode ---------------------------------------------------------------

LINEAR_TITLES = {
    "linear": "Declared linear (`linear_in`: jointly; `multilinear_in`: in each operand alone), transposed "
              "by their own pullbacks; each passes the dot-product test (`forward.transpose`)",
    "transposed": "Not linear; pushforward: the transpose of the lifted pullback",
    "vjp": "Not linear; pushforward: the vjp of the pullback (a fallback, listed in `f_jvp.fallbacks`), "
           "because the pullback has no transpose",
    "frule": "Not linear; pushforward: a hand-written `@ad.frule` (compared with the derived one by "
             "`forward.frule`)",
    "refused": "Not linear; forward mode refuses them (jvp, linearize and jacfwd raise, naming the rule)",
    "no tangent": "Not linear; no tangent flows through them (not differentiable: integer or boolean "
                  "results, guards, random draws)",
    "machinery": "Not linear; the machinery's own primitives (no samples: they run a rule or a pullback "
                 "as a closure)",
}


def _declaration(prim) -> str:
    decl = prim.linear
    ops = "all" if decl.operands == "all" else ", ".join(map(str, decl.operands))
    return f"{'linear_in' if decl.jointly else 'multilinear_in'}: {ops}"


def _pushforward_kinds(prim) -> list[tuple[str, str | None]]:
    """(kind, why) of the pushforward forward mode derives for ``prim``'s equation at each of its
    samples (first shape set and dtype): "pushforward" (the transposed pullback), "pushforward_vjp"
    (why it fell back), "pushforward_frule", "refused" (the error), or "no tangent" (no float
    operand to differentiate there)."""
    kinds = []
    for sample in prim.samples:
        ops = operands(sample, np.random.default_rng(0), sample.shapes[0], sample.dtypes[0])
        with np.errstate(all="ignore"):
            tape = trace(caller(prim, sample), *ops)
            env: dict = {}
            eval_tape(tape, tape.flatten_args(tuple(ops)), env)
        for e in tape.eqns:
            if e.prim is not prim:
                continue
            needs = tuple(type(x) is Var and x.aval.is_float for x in e.inputs)
            if not any(needs):
                kinds.append(("no tangent", None))
                continue
            values = [env[x] if type(x) is Var else x.value for x in e.inputs]
            try:
                pf = pushforward(prim, e.params, values, needs, e.source)
            except NonDifferentiableError as exc:
                kinds.append(("refused", exc.reason.split(" (")[0]))     # without the inner error's line
                continue
            kinds.append((pf.kind, pf.fallback))
    return kinds


def library() -> dict[str, object]:
    """The library's primitives, by name: the registered ones with samples (as the library check
    reads them), and the machinery's opaque ones. Users' own primitives (and tests') declare no
    samples; neither do two that only pullbacks record, odeint_adjoint and elliprd."""
    return {name: p for name, p in sorted(REGISTRY.items()) if p.samples or p.kind == "opaque"}


def linear_classes() -> dict[str, dict[str, str]]:
    """{class: {primitive name: detail}}, every primitive of ``library()`` in exactly one class
    of ``LINEAR_TITLES``; the detail is the declaration, or why a pushforward fell back or was
    refused."""
    classes: dict[str, dict[str, str]] = {cls: {} for cls in LINEAR_TITLES}
    for name, prim in library().items():
        if not prim.samples:
            cls, detail = "machinery", (prim.__doc__ or "").strip()
        elif prim.linear is not None:
            cls, detail = "linear", _declaration(prim)
        elif prim.frule is not None:
            cls, detail = "frule", ""
        elif not prim.differentiable or prim.kind != "pure":
            cls, detail = "no tangent", ""
        else:
            kinds = dict(_pushforward_kinds(prim))
            cls = next((c for k, c in (("refused", "refused"), ("pushforward_vjp", "vjp"),
                                       ("pushforward", "transposed")) if k in kinds), "no tangent")
            detail = kinds.get("refused") or kinds.get("pushforward_vjp") or ""
        classes[cls][name] = detail
    return classes


def linear_markdown() -> str:
    """docs/coverage.md's section on linearity and forward mode."""
    lines = []
    for cls, members in linear_classes().items():
        lines += [f"#### {LINEAR_TITLES[cls]} ({len(members)})", ""]
        if cls == "linear":
            lines.append(", ".join(f"`{n}` ({d})" for n, d in members.items()) or "(none)")
        elif cls in ("vjp", "refused", "machinery") and members:
            lines += ["| primitive | why |", "| --- | --- |"]
            lines += [f"| `{n}` | {_cell(d)} |" for n, d in members.items()]
        else:
            lines.append(", ".join(f"`{n}`" for n in members) or "(none)")
        lines.append("")
    return "\n".join(lines)


BATCHING_TITLES = {
    "derived": "Batched by a rule derived from their traits (elementwise, axis params, stacked operands, images)",
    "hand": "Batched by a rule of their own (`@ad.batch_rule`)",
    "loop": "Looped over the batch in one `fallback_loop` equation (no batching rule yet)",
    "refuses": "Refusing a batched operand",
}


def batching_classes() -> dict[str, list[str]]:
    """{class: [primitive names]}: how ``ad.vmap`` batches each primitive of ``library()``."""
    classes: dict[str, list[str]] = {cls: [] for cls in BATCHING_TITLES}
    for name, prim in library().items():
        classes["refuses" if prim.kind == "guard" else how_batched(prim)].append(name)
    return classes


def batching_markdown() -> str:
    """docs/coverage.md's section on batching (``ad.vmap``)."""
    lines = []
    for cls, members in batching_classes().items():
        lines += [f"#### {BATCHING_TITLES[cls]} ({len(members)})", "",
                  ", ".join(f"`{n}`" for n in members) or "(none)", ""]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


if __name__ == "__main__":
    print(markdown())
    print("### Complex operands\n")
    print(complex_markdown())
    print("### Linearity and forward mode\n")
    print(linear_markdown())
    print("### Batching (ad.vmap)\n")
    print(batching_markdown())
    print("### The sweep of numpy's namespace\n")
    print(sweep_markdown())
