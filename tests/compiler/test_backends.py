"""``ad.compile``, the switch between the backends (ad/compiler/backends.py): each backend's
options are checked by name, an option a backend does not take is refused naming the option,
the backend and what it takes (never dropped), and an unknown backend names the choices."""
import numpy as np
import pytest

import ad
from ad.compiler import backends, fused


def _tape():
    return ad.trace(lambda x: np.sin(x) * 2.0 + x, np.ones(4))


def test_an_option_the_backend_does_not_take_is_refused_by_name():
    with pytest.raises(TypeError, match=r"backend 'numpy' takes no option 'optimise'; it takes: scalar"):
        ad.compile(_tape(), backend="numpy", optimise=False)
    with pytest.raises(TypeError, match=r"backend 'fused' takes no option 'scalar'; it takes: optimise"):
        ad.compile(_tape(), backend="fused", scalar=False)
    with pytest.raises(TypeError, match=r"backend 'fused' takes no option 'link'"):
        ad.compile(_tape(), backend="fused", link=False)           # Fused's own argument, not an option


def test_an_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match=r"backend='numba'; choose one of \('numpy', 'fused'\)"):
        ad.compile(_tape(), backend="numba")


def test_each_backend_takes_its_options(monkeypatch, tmp_path):
    scalar = ad.trace(lambda x: np.sin(x) * 2.0, 0.5)
    assert ad.compile(scalar).scalar and not ad.compile(scalar, backend="numpy", scalar=False).scalar
    monkeypatch.setenv("TAPEVIZ_FUSED_CACHE", str(tmp_path))
    built, build = [], fused.build
    monkeypatch.setattr(fused, "build", lambda source, n, optimise=True: built.append(optimise) or build(source, n, optimise))
    at_o0, at_o2 = ad.compile(_tape(), backend="fused", optimise=False), ad.compile(_tape(), backend="fused")
    assert built == [False, True]
    np.testing.assert_array_equal(at_o0(np.full(4, 0.5)), at_o2(np.full(4, 0.5)))


def test_the_switch_is_the_compiler_packages_not_a_backends():
    assert ad.compile is backends.compile and not hasattr(fused, "compile")
    assert set(backends.BACKENDS) == {"numpy", "fused"}
