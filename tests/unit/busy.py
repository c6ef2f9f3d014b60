"""Processes that keep the CPU busy while a test runs, as a loaded laptop's do."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator

# spins until its parent (the test process) is gone, should the test die before killing it
SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


@contextlib.contextmanager
def busy_cpus(n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``n`` processes that spin the CPU while the block runs, killed on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
