"""ad.scipy: scipy's functions for ad, at scipy's module paths (``ad.scipy.special``, ...).

Importing this package imports no scipy module: each submodule loads scipy's own module
itself (``ad.scipy.special`` is also loaded by ``ad.dispatch`` the first time a scipy.special
ufunc reaches a tracer; ``ad.scipy.fft``, scipy.fft's backend for traced arrays, by the first
trace once scipy is imported: ``ad.primitives.plug_in``).
"""
