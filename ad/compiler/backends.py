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
    "numpy": (compile_tape, ("scalar",)),     # numpy source (codegen); scalar=False: numpy for Python floats too
    "fused": (Fused, ("optimise",)),          # elementwise chains as C loops; optimise=False: at -O0
}


def compile(tape: Tape, name: str = "f", backend: str = "numpy", **options) -> Compiled:  # noqa: A001
    """Compile a (gradient) tape to a callable with readable ``.source``: ``backend="numpy"``
    writes numpy source (``ad.compiler.codegen``; a tape of Python floats as ``math`` code unless
    ``scalar=False``); ``"fused"`` runs elementwise chains as C loops (``ad.compiler.fused``,
    docs/fused.md; ``optimise=False`` compiles them at -O0).

    >>> ad.compile(ad.trace(np.sin, np.ones(3)), optimise=False)
    Traceback (most recent call last):
    TypeError: ad.compile: backend 'numpy' takes no option 'optimise'; it takes: scalar
    """
    if backend not in BACKENDS:
        raise ValueError(f"ad.compile: backend={backend!r}; choose one of {tuple(BACKENDS)}")
    make, takes = BACKENDS[backend]
    for option in options:
        if option not in takes:
            raise TypeError(f"ad.compile: backend {backend!r} takes no option {option!r}; "
                            f"it takes: {', '.join(takes) or 'none'}")
    return make(tape, name, **options)
