"""``ad.compile``: the switch between the compilation backends, and the options each takes.

It lives above the backends, not in one of them, so that every backend's options are checked
the same way: an option the chosen backend does not take is a TypeError naming it, the backend
and what the backend takes (an ``optimise=False`` dropped without a word compiles something
other than what was asked for), and an unknown backend names the choices.
"""
from __future__ import annotations

from ..tape import Tape
from .codegen import Compiled, compile_tape
from .fused import Fused

# backend -> (what compiles a tape, given it, its name and the options; the options it takes)
BACKENDS = {
    "numpy": (compile_tape, ("scalar", "xp")),   # numpy source (codegen); scalar=False: numpy for Python
                                                 # floats too; xp: over that array namespace (array_api)
    "fused": (Fused, ("optimise",)),          # elementwise chains as C loops; optimise=False: at -O0
}


def compile(tape: Tape, name: str = "f", backend: str = "numpy", **options) -> Compiled:  # noqa: A001
    """Compile a (gradient) tape to a callable with readable ``.source``: ``backend="numpy"``
    writes numpy source (``ad.compiler.codegen``; a tape of Python floats as ``math`` code unless
    ``scalar=False``; ``xp=`` an array namespace or a shortcut, ``"torch"``, ``"jax"``: the same
    code in the array API standard's names, run on that library's arrays where they are,
    docs/arrays.md); ``"fused"`` runs elementwise chains as C loops (``ad.compiler.fused``,
    docs/fused.md; ``optimise=False`` compiles them at -O0).

    >>> import array_api_strict as xps
    >>> gt = ad.grad_tape(lambda x: np.sum(np.arcsin(x) ** 2), np.full(3, 0.5))
    >>> compiled = ad.compile(gt, xp=xps)
    >>> "xp.asin(v0)" in compiled.source
    True
    >>> value, dx = compiled(xps.asarray([0.5, 0.5, 0.5], device=xps.Device("device1")))
    >>> dx.device == xps.Device("device1"), float(dx[0]) == float(gt(np.full(3, 0.5))[1][0])
    (True, True)

    >>> ad.compile(ad.trace(np.sin, np.ones(3)), optimise=False)
    Traceback (most recent call last):
    TypeError: ad.compile: backend 'numpy' takes no option 'optimise'; it takes: scalar, xp
    """
    if backend not in BACKENDS:
        raise ValueError(f"ad.compile: backend={backend!r}; choose one of {tuple(BACKENDS)}")
    make, takes = BACKENDS[backend]
    for option in options:
        if option not in takes:
            raise TypeError(f"ad.compile: backend {backend!r} takes no option {option!r}; "
                            f"it takes: {', '.join(takes) or 'none'}")
    return make(tape, name, **options)
