"""Processes that keep the CPU busy beside a benchmark (``--busy N``) or a test: a loaded laptop.
The one helper for both (``tests/unit/busy.py`` takes it from here)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

# spins until its parent is gone, should the parent die before killing it
SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


@contextlib.contextmanager
def busy(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` processes that spin the CPU for as long as the block runs, killed on exit (each
    stops by itself should this process die first); none for ``n`` 0 or less."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(max(0, n))]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
