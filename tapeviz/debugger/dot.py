"""SVG from a long-lived ``dot -Tsvg`` process: the graph pane redraws at every step, and
starting Graphviz costs about 25 ms of the 35 ms a one-shot ``tapeviz.render`` takes for a small
window; a process that stays up answers in a few milliseconds.

``dot`` reads one graph after another from its input and writes each SVG as soon as the graph is
read, so a graph is written and its SVG read up to the closing ``</svg>``. Anything unusual (no
``dot`` on PATH, a graph it rejects, a slow answer) closes the process and returns None: the
caller then renders once with ``tapeviz.render``, which reports errors properly.
"""
from __future__ import annotations

import atexit
import os
import select
import shutil
import subprocess
import threading
import time

END = b"</svg>\n"
TIMEOUT = 10.0          # seconds for one drawing


class DotProcess:
    """One ``dot -Tsvg`` kept running; ``svg(source)`` is thread-safe."""

    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def svg(self, source: str) -> str | None:
        with self._lock:
            proc = self._start()
            if proc is None:
                return None
            try:
                proc.stdin.write(source.encode() + b"\n")
                proc.stdin.flush()
                return self._read(proc)
            except OSError:
                self.close()
                return None

    def _start(self) -> subprocess.Popen | None:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        exe = shutil.which("dot")
        if exe is None:
            return None
        # stderr: Graphviz's routing complaints would fill the pipe; failures re-render one-shot
        self._proc = subprocess.Popen([exe, "-Tsvg"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL)
        return self._proc

    def _read(self, proc) -> str | None:
        fd = proc.stdout.fileno()
        buf = bytearray()
        deadline = time.monotonic() + TIMEOUT
        while not buf.endswith(END):
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
            chunk = os.read(fd, 1 << 16) if ready else b""
            if not chunk:                 # timed out, or dot exited (a graph it rejected)
                self.close()
                return None
            buf += chunk
        return buf.decode()

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            stream.close()


DOT = DotProcess()
atexit.register(DOT.close)
