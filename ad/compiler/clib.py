"""The fused backend's C side: the machine's C compiler, the flags it runs with, and the cache of
the libraries it builds (docs/fused.md).

Libraries are cached on disk by the hash of their source, the compiler and its flags
(``$TAPEVIZ_FUSED_CACHE``, else ``~/.cache/tapeviz/fused``): a kernel compiles once per machine;
the least recently used are deleted past ``$TAPEVIZ_FUSED_CACHE_MB`` (512 MB).
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile

# No fast-math and no fused multiply-adds (-march=native would contract a*b+c): numpy's rounding.
FLAGS = ("-fno-math-errno", "-ffp-contract=off", "-shared", "-fPIC")


class FusedUnavailable(RuntimeError):
    """The fused backend needs a C compiler, and none was found."""


_COMPILER: list = []   # (path, version line), found once per process


def compiler() -> tuple[str, str]:
    """The C compiler (``$CC``, else ``cc``) and its version, which keys the cache."""
    if not _COMPILER:
        cc = shutil.which(os.environ.get("CC", "cc"))
        if cc is None:
            raise FusedUnavailable(
                "ad.compile(backend='fused') compiles its loops with the machine's C compiler and found "
                f"none ({os.environ.get('CC', 'cc')!r} is not on PATH): install one (apt-get install gcc), "
                "point $CC at one, or use backend='numpy'")
        version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        _COMPILER.append((cc, version))
    return _COMPILER[0]


def _cpu_flags() -> set:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def vector_flags(machine: str | None = None, libc: tuple | None = None, cpu: set | None = None) -> tuple:
    """The flags that vectorise the loops, sin and exp included: glibc's libmvec (x86_64, glibc
    2.22 and later) has SIMD variants of the math functions, which its <math.h> declares under
    ``__FAST_MATH__`` (that macro only declares them: the arithmetic stays IEEE, no -ffast-math);
    ``#pragma omp simd`` on each loop (-fopenmp-simd) lets gcc call them, 8 lanes with AVX-512,
    4 with AVX2, 2 with SSE2, the widest the CPU has. Elsewhere, none: scalar loops, as the C
    library computes them. The arguments (default: this machine's) are for the tests."""
    machine = platform.machine() if machine is None else machine
    name, version = platform.libc_ver() if libc is None else libc
    cpu = _cpu_flags() if cpu is None else cpu
    numbers = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if machine != "x86_64" or name != "glibc" or numbers < (2, 22):
        return ()
    isa = (("-mavx512f", "-mprefer-vector-width=512") if "avx512f" in cpu
           else ("-mavx2",) if "avx2" in cpu else ())
    # sin and cos (sinf, cosf) not as builtins (kernels.PRELUDE declares them const): gcc would merge
    # sin(x) and cos(x) into one sincos call, which has no vector variant: the loop would not vectorise
    return ("-fopenmp-simd", "-D__FAST_MATH__", "-fno-builtin-sin", "-fno-builtin-cos", "-fno-builtin-sinf",
            "-fno-builtin-cosf", *isa, "-lmvec")


_VECTOR_FLAGS: list = []
# -O1 without bit-level constant propagation builds long vectorised kernels in ~60% of -O2's CPU
# time and runs them as fast (W5-2000's gradient, 6,500 equations: 1.4 s against 2.2 s, 4.7 ms
# a call either way): libraries of more fused equations than this build so.
O2_UP_TO = 2000


def flags(n_eqns: int = 0, optimise: bool = True) -> tuple:
    """Every flag of a build of ``n_eqns`` fused equations: the optimisation level (-O0 unless
    ``optimise``), numpy's rounding, this machine's vectors."""
    if not _VECTOR_FLAGS:
        _VECTOR_FLAGS.append(vector_flags())
    level = ("-O0",) if not optimise else ("-O2",) if n_eqns <= O2_UP_TO else ("-O1", "-fno-tree-bit-ccp")
    return (*level, *FLAGS, *_VECTOR_FLAGS[0])


def cache_dir() -> str:
    """Where compiled kernels are kept: ``$TAPEVIZ_FUSED_CACHE``, else the user's cache."""
    default = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tapeviz", "fused")
    return os.environ.get("TAPEVIZ_FUSED_CACHE") or default


def build(source: str, n_eqns: int = 0, optimise: bool = True) -> ctypes.CDLL:
    """Compile C source of ``n_eqns`` fused equations to a shared library (``flags``), or load it
    from the cache: the file is named by the hash of the source, the compiler's version and the
    flags, and written whole (renamed into place), so a stale or half-written library is never
    loaded."""
    cc, version = compiler()
    options = flags(n_eqns, optimise)
    key = hashlib.sha256("\0".join((version, *options, source)).encode()).hexdigest()[:32]
    folder = cache_dir()
    path = os.path.join(folder, f"{key}.so")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            c_file, so_file = os.path.join(tmp, "kernels.c"), os.path.join(tmp, "kernels.so")
            with open(c_file, "w") as f:
                f.write(source)
            libraries = [o for o in options if o.startswith("-l")]     # after the source: --as-needed
            command = [cc, *(o for o in options if not o.startswith("-l")), "-o", so_file, c_file, *libraries, "-lm"]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"ad.compile(backend='fused'): the C compiler refused the generated kernels "
                                   f"(a bug in ad.compiler.fused; use backend='numpy' meanwhile):\n{done.stderr[:2000]}")
            os.replace(so_file, path)
        prune(folder, keep=path)
    else:
        with contextlib.suppress(OSError):      # a read-only shared cache stays as it is
            os.utime(path)                      # recently used: pruned last
    return ctypes.CDLL(path)


def cache_limit() -> int:
    """The kernel cache's size bound in bytes: ``$TAPEVIZ_FUSED_CACHE_MB`` megabytes, else 512."""
    return int(float(os.environ.get("TAPEVIZ_FUSED_CACHE_MB", 512)) * 2**20)


def prune(folder: str, keep: str) -> None:
    """Delete the least recently used libraries until the cache fits ``cache_limit()``, so a
    long-lived cache does not grow without end; ``keep`` (the one just built) stays. A process
    that has a deleted library loaded keeps its mapping; the next one rebuilds it. Another
    process pruning at the same time may remove a file first: that is not an error."""
    entries = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".so") and entry.path != keep:
            with contextlib.suppress(FileNotFoundError):
                st = entry.stat()
                entries.append((st.st_mtime, st.st_size, entry.path))
    total = sum(size for _, size, _ in entries) + os.path.getsize(keep)
    for _, size, path in sorted(entries):
        if total <= cache_limit():
            break
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        total -= size
