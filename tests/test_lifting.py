"""Every rule in the registry lifts: no opaque fallback anywhere in the rule library or ad.nn.

One test walks the whole registry and lists every primitive that falls back (or that no spec
ever lifts), so a regression names all the culprits at once. Rules that only appear inside
pullbacks (sum_to, max_unpool, ...) are lifted by taking second derivatives."""
import numpy as np

import ad
from ad.lib import PRIMITIVES as LIB
from ad.lift import _CACHE, clear_cache
from ad.nn import PRIMITIVES as NN
from specs import COMPOSITIONS, SPECS, make_inputs


def _cases():
    from nn.nn_specs import CASES, draw
    rng = np.random.default_rng(0)
    for spec in SPECS + COMPOSITIONS:
        yield spec.fn, make_inputs(spec, spec.shapes[-1], rng), False
    for case in CASES:
        yield case.fn, draw(case, rng), True


def test_every_registered_rule_lifts_without_fallback():
    clear_cache()
    for fn, xs, second_order in _cases():
        w = np.random.default_rng(1).standard_normal(np.shape(fn(*xs)))
        argnums = tuple(range(len(xs)))

        def loss(*a):
            return np.sum(fn(*a) * w)
        ad.grad_tape(loss, *xs, argnums=argnums)
        if second_order or np.ndim(xs[0]) == 2:
            # a squared loss, so the cotangent reaching each pullback depends on the inputs
            v = [np.ones_like(x) for x in xs]
            g = ad.grad(lambda *a: np.sum(fn(*a) ** 2 * w), argnums)
            ad.grad_tape(lambda *a: sum(np.sum(gi * vi) for gi, vi in zip(g(*a), v)), *xs, argnums=argnums)
    _third_order_max_pool()
    lifted = {key[1].name for key, rule in _CACHE.items() if rule.fallback is None}
    fallbacks = sorted({f"{key[1].name}: {rule.fallback}" for key, rule in _CACHE.items() if rule.fallback})
    assert not fallbacks, "rules that fell back to closures:\n" + "\n".join(fallbacks)
    names = set(LIB) | {p if isinstance(p, str) else p.name for p in NN}
    never = sorted(names - lifted - {"full", "array", "dropout_mask"} - _NON_DIFFERENTIABLE)
    assert not never, f"registered primitives no spec lifts (add a spec line): {never}"


_NON_DIFFERENTIABLE = {name for name, p in ad.REGISTRY.items() if not p.differentiable}


def _third_order_max_pool():
    """max_select is the pullback of max_unpool, itself the pullback of max_pool: it is lifted
    only when differentiating three times."""
    x = np.random.default_rng(2).permutation(16).reshape(1, 1, 4, 4) / 7.0

    def f(x):
        return np.sum(ad.nn.max_pool(x, (2, 2)) ** 3)
    g1 = ad.grad(f)
    g2 = ad.grad(lambda x: np.sum(g1(x) ** 2))
    ad.grad_tape(lambda x: np.sum(g2(x) ** 2), x)
